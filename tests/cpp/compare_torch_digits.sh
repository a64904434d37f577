#!/usr/bin/env bash
# The C++ LibTorch example trains to the same weights as the Python one:
# examples/python/torch_digits.py runs first on 2 ranks (digits.txt, its own
# seeded initial weights, saved with --save-init), then
# examples/cpp/torch_digits starts from those weights on the same data and
# shards; the final weights of both must agree within float tolerance (both
# run the same LibTorch kernels; the optimizers are separate code).
#
#   compare_torch_digits.sh LAUNCHER... -- TORCH_DIGITS PYTHON SOURCE_DIR EPOCHS
set -euo pipefail
launch=()
while [ "$1" != "--" ]; do launch+=("$1"); shift; done
shift
cpp=$1 python=$2 src=$3 epochs=$4

work=$(mktemp -d "${TMPDIR:-/tmp}/hvd-torch-digits.XXXXXX")
trap 'rm -rf "$work"' EXIT
data=$src/examples/data/digits.txt

echo "== examples/data/digits.txt is what export_digits.py writes from scikit-learn"
"$python" "$src/examples/data/export_digits.py" "$work/digits.txt"
cmp "$work/digits.txt" "$data"

echo "== Python: examples/python/torch_digits.py, $epochs epochs"
"${launch[@]}" "$python" "$src/examples/python/torch_digits.py" --data "$data" \
  --epochs "$epochs" --target 0 --save-init "$work/init.bin" --save "$work/python.bin"
echo "== C++: torch_digits from the same initial weights"
"${launch[@]}" "$cpp" --data "$data" --epochs "$epochs" --target 0 \
  --init "$work/init.bin" --save "$work/cpp.bin"

"$python" - "$work" <<'PY'
import sys
import numpy as np
w = sys.argv[1]
init, py, cpp = (np.fromfile("%s/%s.bin" % (w, n), dtype=np.float32) for n in ("init", "python", "cpp"))
assert init.size == py.size == cpp.size == 64 * 128 + 128 + 128 * 10 + 10, (init.size, py.size, cpp.size)
moved = np.abs(py - init).max()
diff = np.abs(py - cpp).max()
print("weights moved by up to %.4g in training; C++ and Python differ by up to %.3g" % (moved, diff))
assert moved > 1e-2, "training did not change the weights"
assert np.allclose(cpp, py, rtol=1e-4, atol=1e-5), "C++ and Python weights differ"
print("C++ and Python agree")
PY
