#!/usr/bin/env bash
# Runs hvd's GPU suite and benchmarks from a folder made by
# scripts/gpu_bundle.sh, on a GPU machine that has neither Open MPI nor Gloo
# installed (hence Gloo under hvdrun for every multi-rank run):
#   tests  NCCL at np=1; host staging at np=2 (both ranks on GPU 0), fused
#          and unfused; auto at np=2 (must fall back to staging); nccl at
#          np=2 on one GPU (must be a clear error);
#   bench  hvd_gpu_bench at np=1 (NCCL) and np=2 (staging), then hvd_bench
#          on Gloo at np=2..16 for the CPU scaling figures.
#   gpu_bundle_run.sh [tests|bench|all]     (default all)
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
WHAT=${1:-all}
# CUDA's runtime and NCCL: the machine's own (toolkit, system or pip).
extra=""
for name in libcudart.so.13 libnccl.so.2; do
  f=$(find /usr/local/cuda*/ /usr/lib /opt -name "$name" 2>/dev/null | head -1)
  [[ -n $f ]] && extra="$extra:$(dirname "$f")"
done
export LD_LIBRARY_PATH="$HERE/lib$extra${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
nvidia-smi -L || true
echo "cores: $(nproc)"
B=$HERE/bin
fails=0
run() {  # run NAME [VAR=VALUE...] CMD...
  local name=$1; shift
  echo "=== $name"
  local start=$SECONDS
  if env "$@"; then echo "=== $name: PASS ($((SECONDS - start)) s)"
  else echo "=== $name: FAIL rc=$? ($((SECONDS - start)) s)"; fails=$((fails + 1)); fi
}
if [[ $WHAT != bench ]]; then
  T=$B/hvd_gpu_collectives_test
  run gpu.collectives.np1.nccl HVD_CONTROLLER=gloo HVD_CPU_OPERATIONS=gloo timeout 300 "$T"
  for fusion in fused unfused; do
    f=HVD_FUSION_THRESHOLD=67108864; [[ $fusion == unfused ]] && f=HVD_FUSION_THRESHOLD=0
    run gpu.collectives.np2.staging.gloo.$fusion $f HVD_GPU_OPERATIONS=gloo \
      timeout 300 "$B/hvdrun" -np 2 "$T"
  done
  run gpu.collectives.np2.auto_falls_back_to_staging timeout 300 "$B/hvdrun" -np 2 "$T" \
    --gtest_filter='Gpu.Allreduce*:Gpu.Allgather*'
  run gpu.nccl_two_ranks_one_gpu HVD_GPU_OPERATIONS=nccl timeout 120 "$B/hvdrun" -np 2 "$T" \
    --gtest_filter='GpuNccl.*'
fi
if [[ $WHAT != tests ]]; then
  S="--shapes-dir $HERE/shapes"
  W="--workloads W1,W2,W5 --rounds 5 $S"
  run bench.gpu.np1.nccl HVD_CONTROLLER=gloo HVD_CPU_OPERATIONS=gloo timeout 120 "$B/hvd_gpu_bench" $W
  run bench.gpu.np2.staging HVD_GPU_OPERATIONS=gloo timeout 120 "$B/hvdrun" -np 2 "$B/hvd_gpu_bench" \
    --workloads W1,W2,W5 --rounds 3 $S
  for np in 2 4 8 16; do
    run bench.cpu.gloo.np$np timeout 100 "$B/hvdrun" -np $np "$B/hvd_bench" --workloads W2,W5 \
      --rounds 2 --iters 4 --warmup 1 --idle 1 $S
  done
fi
echo "GPU suite: $fails failed"
exit $((fails > 0))
