#!/usr/bin/env bash
# The main job: set up, build, and train a small PyTorch network on 2 ranks
# with hvd's DistributedOptimizer over the default backend (Gloo via hvdrun).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
BUILD_DIR=${HVD_BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)" --target hvd hvd_python hvdrun > /dev/null
export PYTHONPATH="$PWD/$BUILD_DIR/python${PYTHONPATH:+:$PYTHONPATH}"
exec "$BUILD_DIR/bin/hvdrun" -np "${NP:-2}" /usr/bin/python3 examples/python/torch_digits.py "$@"
