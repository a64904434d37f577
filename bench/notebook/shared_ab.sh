#!/bin/bash
# hvd_bench --paired on private buffers and with --shared-buffers, in turn,
# 6 launches each (docs/benchmarks.md, "Shared buffers"): bench/notebook/shared_ab.sh [OUT_DIR],
# then /usr/bin/python3 bench/notebook/shared_ab_summary.py OUT_DIR.
cd "$(dirname "$0")/../.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
OUT=${1:-/tmp/shared-ab}; mkdir -p $OUT
S=tools/hvd_bench/shapes
for i in 0 1 2 3 4 5; do
  for mode in private shared; do
    flag=""; [ $mode = shared ] && flag="--shared-buffers"
    st0=$(awk '/^cpu /{print $9+0, $2+$3+$4+$5+$6+$7+$8+$9}' /proc/stat)
    echo "$(date +%T) $mode $i load=$(cut -d' ' -f1 /proc/loadavg)" >> $OUT/log
    nice -n -10 mpirun --allow-run-as-root --oversubscribe -np 2 build/bin/hvd_bench --workloads W1,W2,W2b,W5,W6,$S/mobilenet_v3_large_grads.txt,$S/efficientnet_b0_grads.txt,$S/convnext_tiny_grads.txt --iters 5 --warmup 1 --rounds 1 --paired $flag --csv $OUT/${mode}_$i.csv > $OUT/${mode}_$i.out 2>&1
    st1=$(awk '/^cpu /{print $9+0, $2+$3+$4+$5+$6+$7+$8+$9}' /proc/stat)
    echo "$st0 $st1" | awk '{printf "steal %.1f%%\n", 100*($3-$1)/($4-$2)}' >> $OUT/log
  done
done
echo done >> $OUT/log
