#!/bin/sh
# Runs hvd_bench on the shaped namespace cluster (scripts/netns_cluster.sh)
# and appends one CSV row per (run, workload, implementation) to OUT.csv:
# the measurements bench/scale_model/scale_model.py is validated against.
#
#   measure_shaped.sh OUT.csv [options]
#     --np "4 8"              total ranks (default "4 8")
#     --per-host K            ranks per host (default 2); hosts = np / K
#     --rate R                tc rate of every host link (default 1gbit)
#     --backends "mpi gloo"   (default both)
#     --workloads "W2 inception_v3 W2b"   W1 = one 64 MiB tensor, W3 = one
#                             1 KiB tensor (latency), W2 =
#                             ResNet-50, W2b = VGG-16, any other name =
#                             tools/hvd_bench/shapes/NAME_grads.txt
#     --reps N                launches per configuration (default 1)
#     --label L               free text stored in the 'label' column;
#                             scale_model.py reads "hier..." as the
#                             hierarchy, "...+send" as MPI with
#                             btl_tcp_flags=send, a word "mpiring",
#                             "glooring" or "backend" as the backend's
#                             cross step (HVD_HIERARCHICAL_CROSS=backend;
#                             else hvd's TCP ring), and a last word
#                             "gap..." as rows with --gap
#     --env "K=V ..."         extra environment for the ranks (e.g.
#                             HVD_HIERARCHICAL_ALLREDUCE=1). hvdrun --mpi
#                             passes btl_tcp_flags=send across hosts;
#                             OMPI_MCA_btl_tcp_flags=send,put,inplace,need-ack,need-csum,hetero-rdma
#                             keeps Open MPI 4.1's default instead
#     --bench-args "..."      extra hvd_bench arguments (e.g. --no-raw)
#     --timeout S             per launch (default 300)
#
# Every launch runs under 'netns_cluster.sh run -t S'; the cluster is
# brought up per host count and always torn down on exit. Columns:
#   date,label,np,hosts,per_host,rate,backend,rep,load1_before,load1_after,
#   workload,tensors,bytes,impl,median_ms,min_ms,max_ms,busbw_gbs,ratio
# (median_ms, min_ms, max_ms: hvd_bench's median and range over --rounds)
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
CLUSTER=$ROOT/scripts/netns_cluster.sh
BENCH=${HVD_BENCH:-$ROOT/build/bin/hvd_bench}
HVDRUN=${HVDRUN:-$ROOT/build/bin/hvdrun}
SHAPES=$ROOT/tools/hvd_bench/shapes

[ $# -ge 1 ] || {
  sed -n '2,/^set -u/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
  exit 2
}
OUT=$1
shift
NPS="4 8"
PER_HOST=2
RATE=1gbit
BACKENDS="mpi gloo"
WORKLOADS="W2 inception_v3 W2b"
REPS=1
LABEL=""
EXTRA_ENV=""
BENCH_ARGS=""
LIMIT=300
while [ $# -gt 0 ]; do
  case "$1" in
  --np) NPS=$2 ;;
  --per-host) PER_HOST=$2 ;;
  --rate) RATE=$2 ;;
  --backends) BACKENDS=$2 ;;
  --workloads) WORKLOADS=$2 ;;
  --reps) REPS=$2 ;;
  --label) LABEL=$2 ;;
  --env) EXTRA_ENV=$2 ;;
  --bench-args) BENCH_ARGS=$2 ;;
  --timeout) LIMIT=$2 ;;
  *)
    echo "measure_shaped.sh: unknown option '$1'" >&2
    exit 2
    ;;
  esac
  shift 2 || {
    echo "measure_shaped.sh: $1 needs a value" >&2
    exit 2
  }
done
[ -x "$BENCH" ] && [ -x "$HVDRUN" ] || {
  echo "measure_shaped.sh: build hvd_bench and hvdrun first ($BENCH, $HVDRUN)" >&2
  exit 2
}

trap '"$CLUSTER" down' EXIT
trap 'exit 1' INT TERM
[ -s "$OUT" ] || echo "date,label,np,hosts,per_host,rate,backend,rep,load1_before,load1_after,workload,tensors,bytes,impl,median_ms,min_ms,max_ms,busbw_gbs,ratio" > "$OUT"
TMP=$(mktemp -d)

load1() { cut -d' ' -f1 /proc/loadavg; }

shape_file() {
  case "$1" in
  W2) echo "$SHAPES/resnet50_grads.txt" ;;
  W2b) echo "$SHAPES/vgg16_grads.txt" ;;
  *) echo "$SHAPES/${1}_grads.txt" ;;
  esac
}

# hvd_bench arguments that run one workload, named as hvd_bench names it.
workload_args() {
  case "$1" in
  W1 | W2 | W2b | W3) echo "--workloads $1" ;;
  *) echo "--workloads $(shape_file "$1")" ;;  # a shape-file path is a workload
  esac
}

iters_for() {  # large workloads take seconds per iteration at 1 Gbit/s
  bytes=$1
  if [ "$bytes" -gt 268435456 ]; then
    echo "--iters 2 --warmup 1"
  elif [ "$bytes" -lt 1048576 ]; then
    echo "--iters 50 --warmup 5"
  else
    echo "--iters 5 --warmup 1"
  fi
}

for np in $NPS; do
  hosts=$((np / PER_HOST))
  [ $((hosts * PER_HOST)) = "$np" ] || {
    echo "measure_shaped.sh: np=$np is not a multiple of --per-host $PER_HOST" >&2
    exit 2
  }
  "$CLUSTER" down
  "$CLUSTER" up "$hosts" "$RATE" || exit 1
  H=""
  i=1
  while [ $i -le "$hosts" ]; do
    H="$H${H:+,}hvdsc-h$i:$PER_HOST"
    i=$((i + 1))
  done
  for rep in $(seq 1 "$REPS"); do
    for backend in $BACKENDS; do
      for w in $WORKLOADS; do
        if [ "$w" = W1 ] || [ "$w" = W3 ]; then
          tensors=1
          bytes=$([ "$w" = W1 ] && echo 67108864 || echo 1024)
        else
          f=$(shape_file "$w")
          tensors=$(grep -vc '^#' "$f")
          bytes=$(awk '!/^#/ && NF { n = 1; for (i = 1; i <= NF; i++) n *= $i; s += n } END { printf "%.0f", s * 4 }' "$f")
        fi
        args="$(workload_args "$w") $(iters_for "$bytes") --csv $TMP/rows.csv $BENCH_ARGS"
        rm -f "$TMP/rows.csv"
        before=$(load1)
        if [ "$backend" = mpi ]; then
          # mpi_yield_when_idle: ranks that wait give the 2 shared cores away
          # instead of spinning (np=8 oversubscribes them 4x). The malloc
          # thresholds keep Open MPI's large temporary buffers off fresh mmaps
          # (docs/benchmarks.md: page faults cost ~10 us per page here).
          "$CLUSTER" run -t "$LIMIT" sh -c "env -u HVD_HOSTNAME OMPI_MCA_btl=self,vader,tcp \
              OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_mpi_yield_when_idle=1 \
              MALLOC_MMAP_THRESHOLD_=2000000000 MALLOC_TRIM_THRESHOLD_=4000000000 $EXTRA_ENV \
              '$HVDRUN' --mpi -np $np -H $H --ssh-command \"\$HVDSC_RSH\" \
              --network-interface \$HVDSC_SUBNET '$BENCH' --backend mpi $args" \
            > "$TMP/out" 2>&1
        else
          "$CLUSTER" run -t "$LIMIT" sh -c "env HVD_GLOO_IFACE=\$HVDSC_IFACE $EXTRA_ENV \
              '$HVDRUN' -np $np -H $H --ssh-command \"\$HVDSC_EXEC\" \
              --network-interface \$HVDSC_ROOT_IF '$BENCH' --backend gloo $args" \
            > "$TMP/out" 2>&1
        fi
        rc=$?
        after=$(load1)
        if [ $rc != 0 ] || [ ! -s "$TMP/rows.csv" ]; then
          echo "measure_shaped.sh: np=$np $backend $w rep $rep failed (rc $rc):" >&2
          tail -20 "$TMP/out" >&2
          continue
        fi
        d=$(date -u +%Y-%m-%dT%H:%M:%SZ)
        # The last five fields are numbers; an implementation name may hold a
        # comma ("raw MPI chunked, cache-sized"), so it is quoted.
        tail -n +2 "$TMP/rows.csv" | awk -F, -v pre="$d,$LABEL,$np,$hosts,$PER_HOST,$RATE,$backend,$rep,$before,$after,$w,$tensors,$bytes" '{
          impl = $2; for (i = 3; i <= NF - 5; i++) impl = impl "," $i
          # hvd_bench quotes a name with a comma itself (RFC 4180): unquote it first
          if (impl ~ /^".*"$/) { impl = substr(impl, 2, length(impl) - 2); gsub(/""/, "\"", impl) }
          printf "%s,\"%s\",%s,%s,%s,%s,%s\n", pre, impl, $(NF-4), $(NF-3), $(NF-2), $(NF-1), $NF
        }' | tee -a "$OUT"
      done
    done
  done
done
rm -rf "$TMP"
