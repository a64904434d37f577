#!/usr/bin/env bash
# Build Horovod 0.28.1 (PyTorch, CPU, MPI + Gloo) from source, outside any repo,
# into a --target directory, for side-by-side benchmarks against hvd.
#
#   bench/horovod/build_horovod.sh [SRC_DIR] [INSTALL_DIR]
#     SRC_DIR      default /work/horovod-0.28.1   (recreated from the mirror)
#     INSTALL_DIR  default /work/horovod-install  (use with PYTHONPATH=INSTALL_DIR)
#
# Needs (Debian 12): cmake g++ libopenmpi-dev openmpi-bin python3-torch
#   libtorch-dev pybind11-dev libboost-dev libeigen3-dev, and the mirrors of
#   horovod/horovod and google/flatbuffers (the session tool `fetch`); gloo,
#   HTTPRequest and LBFGSpp mirrors are optional (see below).
# Never installs into the system site-packages: that would shadow the project's
# `horovod` compatibility package.
set -euo pipefail

SRC=${1:-/work/horovod-0.28.1}
DEST=${2:-/work/horovod-install}
PY=/usr/bin/python3
MIRRORS=${MIRRORS:-/work/.mirror}
HVD_MIRROR=$MIRRORS/horovod+horovod/repo
TAG=v0.28.1

say() { printf '[build_horovod] %s\n' "$*"; }

# 1. Source: Horovod's tag from the bare mirror (submodules come out empty).
rm -rf "$SRC"
mkdir -p "$SRC"
git -C "$HVD_MIRROR" archive "$TAG" | tar -x -C "$SRC"

# 2. Submodules at the commits the tag pins (git ls-tree gives them), taken from
#    the mirrors when present.  Eigen's upstream (gitlab) is not mirrored: use
#    Debian's Eigen 3.4 headers.  Boost comes from the tag's own tree plus
#    Debian's libboost-dev.
fill_submodule() {  # path mirror-name
  local path=$1 mirror=$MIRRORS/$2/repo commit
  commit=$(git -C "$HVD_MIRROR" ls-tree "$TAG" "$path" | awk '{print $3}')
  if [ -d "$mirror" ] && git -C "$mirror" cat-file -e "$commit^{commit}" 2>/dev/null; then
    rm -rf "${SRC:?}/$path"; mkdir -p "$SRC/$path"
    git -C "$mirror" archive "$commit" | tar -x -C "$SRC/$path"
    say "$path <- $2 @ ${commit:0:12}"
    return 0
  fi
  say "$path: mirror $2 @ ${commit:0:12} not available"
  return 1
}
fill_submodule third_party/HTTPRequest elnormous+HTTPRequest || HTTP_MISSING=1
fill_submodule third_party/lbfgs yixuan+LBFGSpp || {
  # Debian's liblbfgspp-dev has the same header-only library.
  mkdir -p "$SRC/third_party/lbfgs/include"
  ln -sfn /usr/include/LBFGS.h "$SRC/third_party/lbfgs/include/LBFGS.h"
  ln -sfn /usr/include/LBFGSpp "$SRC/third_party/lbfgs/include/LBFGSpp"
}
# Debian's libflatbuffers-dev (2.0.8) does not compile the tag's generated
# message code (VerifyField's signature changed): the mirror is needed.
fill_submodule third_party/flatbuffers google+flatbuffers || {
  say "fetch github:google/flatbuffers first (Debian's headers do not fit)"; exit 1; }
rmdir "$SRC/third_party/eigen" 2>/dev/null || rm -rf "$SRC/third_party/eigen"
ln -sfn /usr/include/eigen3 "$SRC/third_party/eigen"
GLOO_FLAG=HOROVOD_WITH_GLOO
if ! fill_submodule third_party/gloo facebookincubator+gloo || [ -n "${HTTP_MISSING:-}" ]; then
  say "Gloo source (or HTTPRequest) missing: building with MPI only"
  GLOO_FLAG=HOROVOD_WITHOUT_GLOO
fi

# 3. Build: PyTorch only, CPU, MPI (+ Gloo); ccache through CMake's env launchers.
export HOROVOD_WITH_PYTORCH=1 HOROVOD_WITHOUT_TENSORFLOW=1 HOROVOD_WITHOUT_MXNET=1
export HOROVOD_WITH_MPI=1 "$GLOO_FLAG=1"
export HOROVOD_CPU_OPERATIONS=MPI
export MAKEFLAGS=-j${JOBS:-2}
if command -v ccache >/dev/null; then
  export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
fi
rm -rf "$DEST"
cd "$SRC"
say "building (this takes a while on 2 cores)"
"$PY" -m pip install --no-deps --no-build-isolation --no-cache-dir -v --target "$DEST" . \
  > "$SRC/build.log" 2>&1 || { tail -40 "$SRC/build.log"; say "FAILED (log: $SRC/build.log)"; exit 1; }

# 4. Check (outside $SRC, whose horovod/ source folder would shadow the install):
#    what was built in, and one allreduce at np=2 under mpirun and under horovodrun --gloo.
say "installed into $DEST"
cd /
CHECK='import horovod.torch as hvd, torch; hvd.init(); t = hvd.allreduce(torch.full((3,), hvd.rank() + 1.0), op=hvd.Sum); assert t.tolist() == [3.0] * 3, t; print("rank", hvd.rank(), "of", hvd.size(), "mpi" if hvd.mpi_enabled() else "gloo", "ok")'
PYTHONPATH=$DEST "$PY" -c 'import horovod, horovod.torch as hvd; print("horovod", horovod.__version__, "mpi_built", hvd.mpi_built(), "gloo_built", hvd.gloo_built())'
PYTHONPATH=$DEST mpirun --allow-run-as-root --oversubscribe -np 2 -x PYTHONPATH "$PY" -c "$CHECK"
if [ "$GLOO_FLAG" = HOROVOD_WITH_GLOO ]; then
  PYTHONPATH=$DEST "$PY" "$DEST/bin/horovodrun" --gloo -np 2 -H localhost:2 "$PY" -c "$CHECK"
fi
say "done: use PYTHONPATH=$DEST (never on the system path: it would shadow hvd's horovod compat package)"
