#!/bin/bash
# Alternating launches of hvd_bench with an environment variable set two
# ways, as run_launches.py --what c --paired runs them (the large sets, 1
# warm-up and 5 timed iterations, then W4 alone), the first of each pair
# alternating. Each way's CSVs go to OUT/a and OUT/b, named as
# run_launches.py names them, so that `run_launches.py --summarize OUT/a`
# prints its distribution. Usage:
#   bench/launches/ab_env.sh N VAR VALUE_A VALUE_B OUT
# e.g. bench/launches/ab_env.sh 4 HVD_SHARED_MEMORY_MPI_ALLREDUCE 1 0 /tmp/ab
set -euo pipefail
[ $# -eq 5 ] || { sed -n 2,10p "$0"; exit 2; }
N=$1 VAR=$2 A=$3 B=$4 OUT=$5
cd "$(dirname "$0")/../.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
S=tools/hvd_bench/shapes
SETS=W1,W2,W2b,W5,W6,$S/mobilenet_v3_large_grads.txt,$S/efficientnet_b0_grads.txt,$S/convnext_tiny_grads.txt
mkdir -p "$OUT/a" "$OUT/b"
for i in $(seq 0 $((N - 1))); do
  order="a b"
  [ $((i % 2)) = 1 ] && order="b a"
  for way in $order; do
    value=$A
    [ "$way" = b ] && value=$B
    d=$OUT/$way ii=$(printf %02d "$i")
    echo "$(date +%T) launch $i: $VAR=$value"
    for run in "--workloads $SETS --iters 5 --warmup 1 --paired --csv $d/c_$ii.csv" \
               "--workloads W4 --csv $d/c_w4_$ii.csv"; do
      # shellcheck disable=SC2086  # $run is a list of arguments
      env "$VAR=$value" nice -n -10 mpirun --oversubscribe -np 2 -x "$VAR" build/bin/hvd_bench \
        --rounds 1 $run >> "$d/log_$ii.txt" 2>&1
    done
  done
done
