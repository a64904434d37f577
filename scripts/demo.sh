#!/usr/bin/env bash
# The main job: set up, build, and train a small PyTorch network on 2 ranks
# with hvd's DistributedOptimizer over the default backend (Gloo via hvdrun).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/progress.sh
bash scripts/setup.sh
BUILD_DIR=${HVD_BUILD_DIR:-build}
mkdir -p "$BUILD_DIR"
stage "configuring (cmake, $BUILD_DIR)"
run_logged "$BUILD_DIR/configure.log" cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo
stage "building hvd, its Python package and hvdrun ($(nproc) jobs)"
run_build building "$BUILD_DIR/build.log" \
  cmake --build "$BUILD_DIR" -j "$(nproc)" --target hvd hvd_python hvdrun
export PYTHONPATH="$PWD/$BUILD_DIR/python${PYTHONPATH:+:$PYTHONPATH}"
stage "running examples/python/torch_digits.py on ${NP:-2} ranks (hvdrun)"
exec "$BUILD_DIR/bin/hvdrun" -np "${NP:-2}" /usr/bin/python3 examples/python/torch_digits.py "$@"
