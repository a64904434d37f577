#!/usr/bin/env bash
# pip builds a wheel from bindings/python offline (--no-build-isolation, as
# docs/install.md says), reusing this build tree (HVD_BUILD_DIR); the wheel
# goes into a venv made with --system-site-packages (numpy from Debian),
# where 2 ranks import hvd from the wheel and check exact results.
#   check_wheel.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/hvd-wheel.XXXXXX")
trap 'rm -rf "$work"' EXIT

HVD_BUILD_DIR=$build /usr/bin/python3 -m pip wheel --no-build-isolation --no-deps --no-index -q \
  -w "$work/wheels" "$src/bindings/python"
ls "$work"/wheels
/usr/bin/python3 -m venv --system-site-packages --without-pip "$work/venv"
"$work/venv/bin/python" -m pip install --no-index --no-deps -q "$work"/wheels/hvd-*.whl

cat > "$work/check.py" <<'PY'
import importlib.metadata, os, sys
import numpy as np
import hvd
venv = os.path.realpath(sys.prefix) + os.sep
assert os.path.realpath(hvd.__file__).startswith(venv), hvd.__file__
assert os.path.realpath(hvd.library_path()).startswith(venv), hvd.library_path()  # the wheel's own copy
assert importlib.metadata.version("hvd") == hvd.__version__, importlib.metadata.version("hvd")
assert "hvd_allreduce_async" in hvd.ffi.cdef()
hvd.init()
r, n = hvd.rank(), hvd.size()
got = hvd.allreduce(np.full(3, r + 1, dtype=np.int32), op=hvd.Sum)
assert got.tolist() == [n * (n + 1) // 2] * 3, got
hvd.shutdown()
print("rank %d: hvd %s from the wheel in %s" % (r, hvd.__version__, os.path.dirname(hvd.__file__)))
PY
cd "$work"
env -i "HOME=$work" "PATH=/usr/bin:/bin" "$build/bin/hvdrun" -np 2 "$work/venv/bin/python" check.py
