#!/usr/bin/env bash
# Runs hvd's GPU suite and benchmarks from a folder made by
# scripts/gpu_bundle.sh, on a GPU machine that has neither Open MPI nor Gloo
# installed: Gloo comes as a library, Open MPI (mpirun, its plugins and
# PMIx) under ompi/, found through OPAL_PREFIX and PMIX_PREFIX.
#   tests      NCCL at np=1; host staging at np=2 (both ranks on GPU 0), fused
#              and unfused; auto at np=2 (must fall back to staging); nccl at
#              np=2 on one GPU (must be a clear error); all under hvdrun (Gloo)
#   bench      hvd_gpu_bench at np=1 (NCCL) and np=2 (staging), then hvd_bench
#              on Gloo at np=2..16 for the CPU scaling figures
#   all        tests, then bench
#   mpi-smoke  mpirun works from the bundle: hvd_bench W3 at np=2 (seconds)
#   mpi-tests  the GPU test under mpirun: NCCL at np=1, staging over MPI at
#              np=2 fused and unfused, then hvd_gpu_bench at np=2 (staging
#              over MPI)
#   mpi-bench  hvd_bench under mpirun (MPI backend, raw MPI_Allreduce patterns
#              in the same launch) at np=2,4,8,16, np alternating: W1,W2,W5
#              in one launch (W125), W4 in another, and W1,W2,W5 again with
#              every buffer from hvd_alloc_shared (W125shm), 3 launches each;
#              CSVs and logs in OUTDIR (about 5 minutes on 16 cores)
#   mpi        mpi-smoke, mpi-tests, mpi-bench
#   gpu_bundle_run.sh [MODE] [OUTDIR]   (default all; OUTDIR default ./gpu_results)
# Knobs for mpi-bench: MPI_NPS ("2 4 8 16"), MPI_REPS (3), MPI_ROUNDS (1),
# MPI_ITERS (5), MPI_WARMUP (2) for W1,W2,W5 (W4: 50 + 5), MPI_SETS ("W125 W4
# W125shm"), MPI_BUDGET_S (300: no launch starts after that); MPI_SINGLE_COPY
# (cma or none; default: cma when a probe run at np=2 works, else none).
# bench/launches/summarize_bundle.py OUTDIR/cpu_mpi_all.csv: min / median /
# max over the launches.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
WHAT=${1:-all}
OUTDIR=$(mkdir -p "${2:-gpu_results}" && cd "${2:-gpu_results}" && pwd)
exec > >(tee -a "$OUTDIR/gpu_bundle_run.log") 2>&1
case $WHAT in tests | bench | all | mpi-smoke | mpi-tests | mpi-bench | mpi) ;;
  *) echo "gpu_bundle_run.sh: unknown mode '$WHAT' (tests, bench, all, mpi-smoke, mpi-tests, mpi-bench, mpi)" >&2
     exit 2 ;;
esac
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
if [[ $WHAT == tests || $WHAT == all ]]; then
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
if [[ $WHAT == bench || $WHAT == all ]]; then
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

# Open MPI from the bundle, relocated: the paths it was built with
# (/usr/..., /etc/openmpi) are replaced by the same layout under ompi/.
O=$HERE/ompi
PM=$O/lib/x86_64-linux-gnu/pmix2
export PATH="$O/bin:$PATH"
export OPAL_PREFIX=$O OPAL_EXEC_PREFIX=$O OPAL_BINDIR=$O/bin OPAL_DATAROOTDIR=$O/share \
  OPAL_DATADIR=$O/share OPAL_PKGDATADIR=$O/share/openmpi OPAL_SYSCONFDIR=$O/etc \
  OPAL_LIBDIR=$O/lib/x86_64-linux-gnu/openmpi/lib \
  OPAL_PKGLIBDIR=$O/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
export PMIX_PREFIX=$PM PMIX_EXEC_PREFIX=$PM PMIX_LIBDIR=$PM/lib PMIX_DATADIR=$PM/share \
  PMIX_PKGDATADIR=$PM/share/pmix PMIX_SYSCONFDIR=$PM/share \
  PMIX_MCA_mca_base_component_path=$PM/lib/pmix
# hwloc's own plugins (PCI, ...) are not needed; keep it off the machine's.
export HWLOC_PLUGINS_PATH=$O/lib/hwloc
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# One host: shared memory only, no network transports.
export OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader OMPI_MCA_btl_base_warn_component_unused=0 \
  OMPI_MCA_oob_tcp_if_include=lo
# vader puts its segments in /dev/shm; a container's is often 64 MiB.
shm_kb=$(df -Pk /dev/shm 2>/dev/null | awk 'NR == 2 {print $4}')
if ((${shm_kb:-0} < 1048576)); then
  export OMPI_MCA_btl_vader_backing_directory=/tmp
fi
MPIRUN=(mpirun --bind-to none --oversubscribe)
S="--shapes-dir $HERE/shapes"
if [[ $WHAT == mpi-* || $WHAT == mpi ]]; then
  mpirun --version | head -1
  if [[ -z ${MPI_SINGLE_COPY:-} ]]; then
    # Single-copy (process_vm_readv) needs ptrace rights a container may lack.
    if timeout 40 "${MPIRUN[@]}" -np 2 --mca btl_vader_single_copy_mechanism cma "$B/hvd_bench" \
      --workloads W1 --rounds 1 --iters 2 --warmup 1 $S >"$OUTDIR/cma_probe.log" 2>&1; then
      MPI_SINGLE_COPY=cma
    else
      MPI_SINGLE_COPY=none
    fi
  fi
  export OMPI_MCA_btl_vader_single_copy_mechanism=$MPI_SINGLE_COPY
  echo "vader single copy: $MPI_SINGLE_COPY, backing: ${OMPI_MCA_btl_vader_backing_directory:-/dev/shm}"
fi
if [[ $WHAT == mpi-smoke || $WHAT == mpi ]]; then
  run mpi.smoke.np2 timeout 60 "${MPIRUN[@]}" -np 2 "$B/hvd_bench" --workloads W3 --rounds 1 \
    --iters 100 --warmup 10 $S
fi
if [[ $WHAT == mpi-tests || $WHAT == mpi ]]; then
  T=$B/hvd_gpu_collectives_test
  M="HVD_CONTROLLER=mpi HVD_CPU_OPERATIONS=mpi"
  run gpu.collectives.np1.nccl.mpirun $M timeout 300 "${MPIRUN[@]}" -np 1 "$T"
  for fusion in fused unfused; do
    f=HVD_FUSION_THRESHOLD=67108864; [[ $fusion == unfused ]] && f=HVD_FUSION_THRESHOLD=0
    run gpu.collectives.np2.staging.mpi.$fusion $M HVD_GPU_OPERATIONS=mpi $f \
      timeout 300 "${MPIRUN[@]}" -np 2 "$T"
  done
  run bench.gpu.np2.staging.mpi $M HVD_GPU_OPERATIONS=mpi timeout 120 "${MPIRUN[@]}" -np 2 \
    "$B/hvd_gpu_bench" --workloads W1,W2,W5 --rounds 3 $S
fi
if [[ $WHAT == mpi-bench || $WHAT == mpi ]]; then
  # One round per launch (the launches give the spread); iteration counts
  # sized for about 5 minutes in all at np=2..16 on 16 cores. Launches that
  # would start after MPI_BUDGET_S seconds are skipped (np alternates, so
  # the first repetitions cover every np).
  ROUNDS=${MPI_ROUNDS:-1} ITERS=${MPI_ITERS:-5} WARMUP=${MPI_WARMUP:-2}
  end=$((SECONDS + ${MPI_BUDGET_S:-300}))
  all=$OUTDIR/cpu_mpi_all.csv
  echo "np,rep,set,workload,impl,median_ms,min_ms,max_ms,busbw_gbs,ratio_to_best_raw" >"$all"
  for rep in $(seq 1 "${MPI_REPS:-3}"); do
    for np in ${MPI_NPS:-2 4 8 16}; do
      for set in ${MPI_SETS:-W125 W4 W125shm}; do
        if ((SECONDS >= end)); then echo "=== bench.cpu.mpi.np$np.$set.rep$rep: SKIPPED (budget)"; continue; fi
        case $set in
          W125) w=(--workloads W1,W2,W5 --iters "$ITERS" --warmup "$WARMUP"); limit=120 ;;
          W125shm) w=(--workloads W1,W2,W5 --iters "$ITERS" --warmup "$WARMUP" --shared-buffers)
            limit=120 ;;
          W4) w=(--workloads W4 --iters 50 --warmup 5); limit=60 ;;
          *) echo "gpu_bundle_run.sh: unknown set '$set' in MPI_SETS (W125, W4, W125shm)" >&2; exit 2 ;;
        esac
        csv=$OUTDIR/cpu_mpi_np${np}_${set}_rep$rep.csv
        run bench.cpu.mpi.np$np.$set.rep$rep timeout $limit "${MPIRUN[@]}" -np "$np" \
          "$B/hvd_bench" "${w[@]}" --rounds "$ROUNDS" $S --csv "$csv"
        [[ -f $csv ]] && tail -n +2 "$csv" | sed "s/^/$np,$rep,$set,/" >>"$all"
      done
    done
  done
  echo "all rows: $all"
fi
echo "GPU suite: $fails failed"
exit $((fails > 0))
