#!/usr/bin/env bash
# Builds hvd with CUDA/NCCL and runs the GPU tests (ctest -L gpu). Meant for
# a machine with a GPU (e.g. a session's `device` machine); on one without,
# every gpu test reports SKIP with its reason. A GPU machine without the
# Debian packages (Open MPI, Gloo, GoogleTest) runs a bundle built here
# instead: scripts/gpu_bundle.sh build .gpu, then .gpu/gpu_bundle_run.sh there.
#   scripts/gpu_test.sh [build-dir]     (default: build-gpu)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build-gpu}
JOBS=${JOBS:-$(nproc)}
cmake -S . -B "$BUILD" -DHVD_BUILD_PYTHON=OFF -DHVD_BUILD_JAVA=OFF \
  -DHVD_WITH_CUDA=ON -DHVD_WITH_NCCL=ON -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHS:-90-real;90-virtual}"
cmake --build "$BUILD" -j"$JOBS" --target hvd hvdrun hvd_gpu_collectives_test hvd_gpu_plan_test hvd_gpu_bench
command -v nvidia-smi >/dev/null && nvidia-smi -L || echo "nvidia-smi not found"
cd "$BUILD"
ctest -L gpu --output-on-failure
ctest -R unit.gpu_plan --output-on-failure
