#!/bin/sh
# End-to-end checks of hvdrun, one case per ctest test:
#   launcher_test.sh CASE HVDRUN KV_RANK_PROBE [HVD_TOPOLOGY_PROBE]
set -u
CASE=$1
HVDRUN=$2
PROBE=$3
TOPO=${4:-}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

fail() {
  echo "FAIL [$CASE]: $*" >&2
  for f in "$TMP"/*; do [ -f "$f" ] && { echo "--- $f" >&2; cat "$f" >&2; }; done
  exit 1
}

# expect_file FILE: FILE's sorted lines must equal the sorted stdin.
expect_lines() {
  sort "$1" > "$TMP/actual.sorted"
  sort > "$TMP/expected.sorted"
  diff -u "$TMP/expected.sorted" "$TMP/actual.sorted" >&2 || fail "unexpected content of $1"
}

run() {  # run ARGS...: stdout/stderr to files, exit code to $rc, seconds to $elapsed
  start=$(date +%s)
  "$HVDRUN" "$@" > "$TMP/out" 2> "$TMP/err"
  rc=$?
  elapsed=$(( $(date +%s) - start ))
}

case "$CASE" in
prefix_output)
  run -np 2 sh -c 'echo out-$HVD_RANK; echo err-$HVD_RANK >&2; echo "two words"; printf tail-$HVD_RANK'
  [ "$rc" = 0 ] || fail "exit code $rc"
  expect_lines "$TMP/out" <<'X'
[0]<stdout>:out-0
[0]<stdout>:two words
[0]<stdout>:tail-0
[1]<stdout>:out-1
[1]<stdout>:two words
[1]<stdout>:tail-1
X
  expect_lines "$TMP/err" <<'X'
[0]<stderr>:err-0
[1]<stderr>:err-1
X
  ;;
env_np4)
  run -np 4 "$PROBE" --env-only
  [ "$rc" = 0 ] || fail "exit code $rc"
  expect_lines "$TMP/out" <<'X'
[0]<stdout>:rank=0 size=4 local_rank=0 local_size=4 cross_rank=0 cross_size=1 host=localhost
[1]<stdout>:rank=1 size=4 local_rank=1 local_size=4 cross_rank=0 cross_size=1 host=localhost
[2]<stdout>:rank=2 size=4 local_rank=2 local_size=4 cross_rank=0 cross_size=1 host=localhost
[3]<stdout>:rank=3 size=4 local_rank=3 local_size=4 cross_rank=0 cross_size=1 host=localhost
X
  # Two names for this machine: two "hosts" for placement, both started
  # locally. 3 + 2 slots, 4 ranks: local rank 2 exists on one host only.
  H=$(hostname)
  run -np 4 -H "localhost:3,$H:2" sh -c 'echo $HVD_RANK $HVD_SIZE $HVD_LOCAL_RANK $HVD_LOCAL_SIZE $HVD_CROSS_RANK $HVD_CROSS_SIZE $HVD_HOSTNAME $HVD_RENDEZVOUS_ADDR ${#HVD_RENDEZVOUS_SECRET} $HVD_CONTROLLER $HVD_CPU_OPERATIONS'
  [ "$rc" = 0 ] || fail "exit code $rc"
  expect_lines "$TMP/out" <<X
[0]<stdout>:0 4 0 3 0 2 localhost 127.0.0.1 64 gloo gloo
[1]<stdout>:1 4 1 3 0 1 localhost 127.0.0.1 64 gloo gloo
[2]<stdout>:2 4 2 3 0 1 localhost 127.0.0.1 64 gloo gloo
[3]<stdout>:3 4 0 1 1 2 $H 127.0.0.1 64 gloo gloo
X
  # A controller chosen by the user is left alone.
  HVD_CONTROLLER=mpi run -np 1 sh -c 'echo $HVD_CONTROLLER $HVD_CPU_OPERATIONS'
  echo '[0]<stdout>:mpi gloo' | expect_lines "$TMP/out"
  ;;
rank_exit_code)
  run -np 3 sh -c 'if [ "$HVD_RANK" = 2 ]; then sleep 0.2; exit 3; fi; exec sleep 60'
  [ "$rc" = 3 ] || fail "expected exit code 3, got $rc"
  [ "$elapsed" -le 8 ] || fail "took $elapsed s to stop the job"
  grep -qx 'hvdrun: rank 2 on host localhost exited with code 3 (first failure); stopping the job' \
    "$TMP/err" || fail "missing failure message"
  [ "$(grep -c 'first failure' "$TMP/err")" = 1 ] || fail "more than one failure reported"
  ;;
rank_killed)
  # Rank 1 dies by SIGKILL; the others ignore SIGTERM, so only the SIGKILL
  # after the grace period stops them.
  run -np 3 sh -c 'trap "" TERM; if [ "$HVD_RANK" = 1 ]; then sleep 0.2; kill -9 $$; fi; while :; do sleep 1; done'
  [ "$rc" = 137 ] || fail "expected exit code 137, got $rc"
  [ "$elapsed" -le 10 ] || fail "took $elapsed s to stop the job"
  grep -q '^hvdrun: rank 1 on host localhost exited with code 137 (killed by signal 9' "$TMP/err" ||
    fail "missing failure message"
  ;;
tuning_flags)
  # Each flag's variable reaches every rank and beats the inherited value.
  HVD_LOG_LEVEL=error HVD_CYCLE_TIME=9 run -np 2 --fusion-threshold-mb 32 --cycle-time-ms 2.5 \
    --cache-capacity 16 --timeline-filename "$TMP/tl.json" --timeline-mark-cycles --autotune \
    --autotune-log-file "$TMP/at.csv" --hierarchical-allreduce --log-level DEBUG \
    --disable-cache --no-stall-check --stall-check-warning-time-seconds 30 \
    --stall-check-shutdown-time-seconds 300 \
    sh -c 'env | grep -E "^(HVD|HOROVOD)_" | grep -vE "_(RANK|SIZE|HOSTNAME|RENDEZVOUS_.*|CONTROLLER|CPU_OPERATIONS|START_TIMEOUT)=" | sort | sed "s/^/$HVD_RANK /"'
  [ "$rc" = 0 ] || fail "exit code $rc"
  for r in 0 1; do
    cat <<X
[$r]<stdout>:$r HVD_AUTOTUNE=1
[$r]<stdout>:$r HVD_AUTOTUNE_LOG=$TMP/at.csv
[$r]<stdout>:$r HVD_CACHE_CAPACITY=16
[$r]<stdout>:$r HVD_CYCLE_TIME=2.5
[$r]<stdout>:$r HVD_FUSION_THRESHOLD=33554432
[$r]<stdout>:$r HVD_HIERARCHICAL_ALLREDUCE=1
[$r]<stdout>:$r HVD_LOG_LEVEL=debug
[$r]<stdout>:$r HVD_STALL_CHECK_DISABLE=1
[$r]<stdout>:$r HVD_STALL_CHECK_TIME_SECONDS=30
[$r]<stdout>:$r HVD_STALL_SHUTDOWN_TIME_SECONDS=300
[$r]<stdout>:$r HVD_TIMELINE=$TMP/tl.json
[$r]<stdout>:$r HVD_TIMELINE_MARK_CYCLES=1
X
  done | expect_lines "$TMP/out"
  ;;
output_files)
  # --output-filename DIR: DIR/rank.N/{stdout,stderr} hold what rank N wrote,
  # unprefixed; the terminal still gets the prefixed lines. N is padded to
  # the width of the last rank (rank.00 .. rank.10 for 11 ranks).
  run -np 11 --output-filename "$TMP/logs/job" sh -c 'echo "out $HVD_RANK"; echo "err $HVD_RANK" >&2; printf "tail $HVD_RANK"'
  [ "$rc" = 0 ] || fail "exit code $rc"
  [ "$(ls "$TMP/logs/job" | tr '\n' ' ')" = "rank.00 rank.01 rank.02 rank.03 rank.04 rank.05 rank.06 rank.07 rank.08 rank.09 rank.10 " ] ||
    fail "unexpected rank directories: $(ls "$TMP/logs/job")"
  for r in 0 1 2 3 4 5 6 7 8 9 10; do
    d=$TMP/logs/job/rank.$(printf %02d $r)
    [ "$(cat "$d/stdout")" = "$(printf 'out %s\ntail %s' $r $r)" ] || fail "rank $r stdout: $(cat "$d/stdout")"
    [ "$(cat "$d/stderr")" = "err $r" ] || fail "rank $r stderr: $(cat "$d/stderr")"
  done
  grep -qx '\[10\]<stdout>:out 10' "$TMP/out" || fail "terminal output lost its prefix"
  # A directory that cannot be created stops hvdrun before any rank starts.
  : > "$TMP/plainfile"
  run -np 1 --output-filename "$TMP/plainfile/sub" sh -c 'echo started'
  [ "$rc" = 1 ] || fail "expected exit code 1, got $rc"
  grep -qx "hvdrun: cannot create directory $TMP/plainfile: a file of that name exists" "$TMP/err" || fail "no clear error"
  [ ! -s "$TMP/out" ] || fail "a rank started"
  ;;
explain)
  # hvdrun --explain prints the plan that every rank then logs at
  # HVD_LOG_LEVEL=info: this machine under two names is two hosts (2 + 2).
  H=$(hostname)
  run --explain -np 4 -H "localhost:2,$H:2"
  [ "$rc" = 0 ] || fail "exit code $rc"
  grep -q '^ranks 0-3: process set 0 (gloo, 4 ranks on 2 hosts): allreduce <= 64 KiB: gloo; allreduce > 64 KiB: shm reduce-scatter -> tcp ring' "$TMP/out" ||
    fail "unexpected plan"
  sed 's/^ranks 0-3: //' "$TMP/out" > "$TMP/explained"
  HVD_LOG_LEVEL=info run -np 4 -H "localhost:2,$H:2" "$TOPO"
  [ "$rc" = 0 ] || fail "exit code $rc"
  sed -n 's/^.*\(process set 0 (gloo.*\)$/\1/p' "$TMP/err" | sort -u > "$TMP/logged"
  diff -u "$TMP/explained" "$TMP/logged" >&2 || fail "the ranks logged another plan"
  [ "$(grep -c 'process set 0 (gloo' "$TMP/err")" = 4 ] || fail "not every rank logged its plan"
  ;;
topology)
  # hvd's own topology through the C API, with this machine under two names
  # (hosts are told apart by HVD_HOSTNAME): 2 + 2 ranks is homogeneous,
  # 2 + 1 is not.
  H=$(hostname)
  run -np 4 -H "localhost:2,$H:2" "$TOPO"
  [ "$rc" = 0 ] || fail "exit code $rc"
  sed -n 's/^\[[0-9]*\]<stdout>://p' "$TMP/out" > "$TMP/probe"
  expect_lines "$TMP/probe" <<'X'
rank=0 size=4 local_rank=0 local_size=2 cross_rank=0 cross_size=2 homogeneous=1 backend=gloo
rank=1 size=4 local_rank=1 local_size=2 cross_rank=0 cross_size=2 homogeneous=1 backend=gloo
rank=2 size=4 local_rank=0 local_size=2 cross_rank=1 cross_size=2 homogeneous=1 backend=gloo
rank=3 size=4 local_rank=1 local_size=2 cross_rank=1 cross_size=2 homogeneous=1 backend=gloo
X
  run -np 3 -H "localhost:2,$H:1" "$TOPO"
  [ "$rc" = 0 ] || fail "exit code $rc"
  sed -n 's/^\[[0-9]*\]<stdout>://p' "$TMP/out" > "$TMP/probe"
  expect_lines "$TMP/probe" <<'X'
rank=0 size=3 local_rank=0 local_size=2 cross_rank=0 cross_size=2 homogeneous=0 backend=gloo
rank=1 size=3 local_rank=1 local_size=2 cross_rank=0 cross_size=1 homogeneous=0 backend=gloo
rank=2 size=3 local_rank=0 local_size=1 cross_rank=1 cross_size=2 homogeneous=0 backend=gloo
X
  ;;
check_build)
  run --check-build
  [ "$rc" = 0 ] || fail "exit code $rc"
  [ "$(head -n 1 "$TMP/out")" = "hvd v1.0.0:" ] || fail "bad first line"
  for section in "Available Controllers:" "Available Tensor Operations:" "Available Devices:"; do
    grep -qx "$section" "$TMP/out" || fail "missing '$section'"
  done
  grep -qx '    \[X\] CPU' "$TMP/out" || fail "CPU not listed as available"
  n=$(grep -cE '^    \[[X ]\] (MPI|Gloo|NCCL|CPU|CUDA)$' "$TMP/out")
  [ "$n" = 7 ] || fail "expected 7 feature lines, got $n"
  ;;
bad_arguments)
  check_error() {  # check_error EXPECTED-SUBSTRING ARGS...
    want=$1
    shift
    run "$@"
    [ "$rc" = 2 ] || fail "'$*': expected exit code 2, got $rc"
    [ "$(wc -l < "$TMP/err")" = 1 ] || fail "'$*': expected a one-line error"
    grep -q "^hvdrun: .*$want" "$TMP/err" || fail "'$*': error does not mention '$want'"
    [ ! -s "$TMP/out" ] || fail "'$*': printed to stdout"
  }
  check_error "got '0'" -np 0 true
  check_error "got 'x'" -np x true
  check_error "more slots than the hosts provide (4)" -np 5 -H a:2,b:2 true
  check_error "no program to run" -np 2
  check_error "-np N is required" true
  check_error "unknown option '--bogus'" --bogus -np 1 true
  check_error "invalid slot count '0'" -np 1 -H a:0 true
  check_error "cannot read hostfile" -np 1 --hostfile "$TMP/missing" true
  check_error "needs a value" -np
  check_error "mutually exclusive" -np 1 -H a --hostfile f true
  check_error "--log-level expects trace, debug" -np 1 --log-level loud true
  run --help
  [ "$rc" = 0 ] || fail "--help exit code $rc"
  for flag in -np -H --hostfile --gloo --mpi --ssh-command --ssh-port --network-interface \
              --start-timeout --verbose --check-build --help --output-filename \
              --fusion-threshold-mb --cycle-time-ms --cache-capacity --timeline-filename \
              --timeline-mark-cycles --autotune --autotune-log-file --hierarchical-allreduce \
              --log-level --disable-cache --no-stall-check --stall-check-warning-time-seconds \
              --stall-check-shutdown-time-seconds; do
    grep -q -- "$flag" "$TMP/out" || fail "--help does not document $flag"
  done
  ;;
signal_forwarding)
  "$HVDRUN" -np 2 sh -c 'trap "echo got-TERM-$HVD_RANK; exit 0" TERM; echo ready-$HVD_RANK; while :; do sleep 0.1; done' \
    > "$TMP/out" 2> "$TMP/err" &
  pid=$!
  i=0
  while [ "$(grep -c ready "$TMP/out")" != 2 ]; do
    i=$((i + 1))
    [ $i -lt 100 ] || fail "ranks did not start"
    sleep 0.1
  done
  kill -TERM $pid
  wait $pid
  rc=$?
  [ "$rc" = 143 ] || fail "expected exit code 143, got $rc"
  grep -qx '\[0\]<stdout>:got-TERM-0' "$TMP/out" || fail "rank 0 did not get SIGTERM"
  grep -qx '\[1\]<stdout>:got-TERM-1' "$TMP/out" || fail "rank 1 did not get SIGTERM"
  grep -q 'hvdrun: received signal 15' "$TMP/err" || fail "no message about the signal"
  ;;
rendezvous_exchange)
  run -np 4 "$PROBE"
  [ "$rc" = 0 ] || fail "exit code $rc"
  n=$(grep -cx '\[[0-3]\]<stdout>:gathered=localhost,localhost,localhost,localhost' "$TMP/out")
  [ "$n" = 4 ] || fail "expected 4 gathered lines, got $n"
  # Without the secret the probe must be refused by the store.
  run -np 1 sh -c 'HVD_RENDEZVOUS_SECRET=00 exec "$0"' "$PROBE"
  [ "$rc" = 2 ] || fail "probe with a wrong secret: exit code $rc"
  grep -q 'refused authentication' "$TMP/err" || fail "no refusal reported to the rank"
  grep -q '^hvd rendezvous: refused connection from 127.0.0.1:' "$TMP/err" ||
    fail "server did not log the refused peer"
  ;;
*)
  echo "unknown case $CASE" >&2
  exit 1
  ;;
esac
echo "PASS [$CASE]"
