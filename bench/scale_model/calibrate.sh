#!/bin/sh
# Measures hvd's own costs for the scaling model (scale_model.py calibrate):
# hvd_bench at np=2 on this machine, MPI and Gloo, each against raw calls in
# the same launch:
#   W3 (one 1 KiB tensor)      -> per-cycle cost (negotiation + wake-up)
#   W4 (1000 tensors of 1 KiB) -> per-tensor cost
#   W2 with and without --gap  -> per-byte cost of the fusion-buffer copies
# Appends rows date,backend,variant,load1,workload,impl,median_ms to OUT.csv.
# Re-run it after hvd's core changes, then:
#   scale_model.py calibrate OUT.csv -o bench/scale_model/data/params.json
#
#   calibrate.sh OUT.csv [REPS]
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BENCH=${HVD_BENCH:-$ROOT/build/bin/hvd_bench}
HVDRUN=${HVDRUN:-$ROOT/build/bin/hvdrun}
[ $# -ge 1 ] || {
  sed -n '2,/^set -u/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
  exit 2
}
OUT=$1
REPS=${2:-1}
[ -x "$BENCH" ] && [ -x "$HVDRUN" ] || {
  echo "calibrate.sh: build hvd_bench and hvdrun first" >&2
  exit 2
}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
[ -s "$OUT" ] || echo "date,backend,variant,load1,workload,impl,median_ms" > "$OUT"

launch() {  # BACKEND ARGS...
  b=$1
  shift
  if [ "$b" = mpi ]; then
    timeout -k 10 300 mpirun --allow-run-as-root --oversubscribe \
      --mca btl_vader_single_copy_mechanism none -np 2 "$BENCH" --backend mpi "$@"
  else
    timeout -k 10 300 "$HVDRUN" -np 2 "$BENCH" --backend gloo "$@"
  fi
}

for rep in $(seq 1 "$REPS"); do
  for backend in mpi gloo; do
    for variant in default gap; do
      if [ "$variant" = gap ]; then
        args="--workloads W2 --gap 16"
      else
        args="--workloads W3,W4,W2"
      fi
      load=$(cut -d' ' -f1 /proc/loadavg)
      rm -f "$TMP/rows.csv"
      # shellcheck disable=SC2086
      if ! launch "$backend" $args --csv "$TMP/rows.csv" > "$TMP/out" 2>&1; then
        echo "calibrate.sh: $backend $variant failed:" >&2
        tail -20 "$TMP/out" >&2
        continue
      fi
      d=$(date -u +%Y-%m-%dT%H:%M:%SZ)
      tail -n +2 "$TMP/rows.csv" | while IFS=, read -r wl impl ms _bw _ratio; do
        echo "$d,$backend,$variant,$load,$wl,$impl,$ms"
      done | tee -a "$OUT"
    done
  done
done
