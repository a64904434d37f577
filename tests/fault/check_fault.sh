#!/usr/bin/env bash
# Runs fault_test under a launcher and checks what the job reports.
#
#   check_fault.sh gloo-kill      HVDRUN FAULT_TEST
#   check_fault.sh gloo-shutdown  HVDRUN FAULT_TEST
#   check_fault.sh mpi-kill       FAULT_TEST MPIRUN [MPIRUN_FLAGS...]
#   check_fault.sh mpi-shutdown   FAULT_TEST MPIRUN [MPIRUN_FLAGS...]
#
# Exit 0 when every expectation holds; otherwise prints the job's output and
# what was missing.
set -u
mode=${1:?mode}
shift
out=$(mktemp)
trap 'rm -f "$out"' EXIT
fail=0
expect() {  # expect DESCRIPTION COMMAND...
  local what=$1
  shift
  if "$@"; then echo "ok: $what"; else echo "MISSING: $what"; fail=1; fi
}
has() { grep -Eq -- "$1" "$out"; }
run_job() {  # run_job LIMIT_S CMD... ; sets rc and secs
  local t0 t1
  t0=$(date +%s%N)
  timeout -k 5 "$1" "${@:2}" >"$out" 2>&1
  rc=$?
  t1=$(date +%s%N)
  secs=$(((t1 - t0) / 1000000000))
  echo "== exit code $rc after ${secs}s: ${*:2}"
}

case $mode in
  gloo-kill)
    hvdrun=$1 prog=$2
    # Usually the survivor's collective fails at once with PEER_LOST. In a
    # rare race Gloo leaves a send queued for the dead peer unfailed, and
    # the survivor only learns of it from HVD_GLOO_TIMEOUT_SECONDS
    # (docs/fault-tolerance.md, "Gloo's queued-send race"); 5 s here, with
    # a grace period long enough for that report to come out.
    HVD_GLOO_TIMEOUT_SECONDS=5 run_job 120 "$hvdrun" --grace-period 20 -np 2 "$prog" kill
    # Rank 0's first report (its waited op) must be PEER_LOST (or, in that
    # race, TIMEOUT) and come within 10 s of rank 1's death, measured by the
    # clocks both printed.
    killed_at=$(sed -n 's/.*FT rank=1 killing itself at_ms=\([0-9]*\).*/\1/p' "$out" | head -1)
    status=$(sed -n 's/^\[0\]<stdout>:FT rank=0 op=waited status=\(HVD_ERR_PEER_LOST\|HVD_ERR_TIMEOUT\) .*/\1/p' "$out" | head -1)
    seen_at=$(sed -n 's/^\[0\]<stdout>:FT rank=0 op=waited status=HVD_ERR_[A-Z_]* at_ms=\([0-9]*\).*/\1/p' "$out" | head -1)
    expect "rank 1 announced its death" test -n "$killed_at"
    expect "rank 0 saw HVD_ERR_PEER_LOST (or, in Gloo's race, HVD_ERR_TIMEOUT) on the op it waited for" \
      test -n "$status"
    if [ -n "$killed_at" ] && [ -n "$seen_at" ]; then
      echo "   detected after $((seen_at - killed_at)) ms (${status:-no status})"
      expect "within 10 s" test $((seen_at - killed_at)) -lt 10000
    fi
    expect "the pending op failed with the same status" \
      has "^\[0\]<stdout>:FT rank=0 op=pending status=${status:-none} "
    expect "a later op failed with the same status" \
      has "^\[0\]<stdout>:FT rank=0 op=later status=${status:-none} "
    if [ "$status" = HVD_ERR_PEER_LOST ]; then
      expect "the error names the lost rank and its host" \
        has '^\[0\]<stdout>:FT rank=0 op=waited .*message=.*connection to rank 1 \(host [^,]+, '
    fi
    expect "hvdrun names rank 1, its host and the signal" \
      has '^hvdrun: rank 1 on host [^ ]+ exited with code 137 \(killed by signal 9.*first failure'
    expect "hvdrun exits with rank 1's code (137)" test "$rc" -eq 137
    ;;
  gloo-shutdown)
    hvdrun=$1 prog=$2
    run_job 120 "$hvdrun" -np 2 "$prog" shutdown
    expect "rank 0 got HVD_ERR_SHUT_DOWN naming rank 1" \
      has '^\[0\]<stdout>:FT rank=0 op=waited status=HVD_ERR_SHUT_DOWN .*shut down by rank 1'
    expect "a later op got HVD_ERR_SHUT_DOWN" has '^\[0\]<stdout>:FT rank=0 op=later status=HVD_ERR_SHUT_DOWN'
    expect "rank 0's verdict" has 'verdict=shut-down-by-rank-1'
    expect "hvdrun exits 0" test "$rc" -eq 0
    ;;
  mpi-shutdown)
    prog=$1 mpirun=$2
    shift 2
    run_job 120 "$mpirun" "$@" -np 2 --tag-output "$prog" shutdown
    expect "rank 0 got HVD_ERR_SHUT_DOWN naming rank 1" \
      has '\[1,0\]<stdout>:FT rank=0 op=waited status=HVD_ERR_SHUT_DOWN .*shut down by rank 1'
    expect "a later op got HVD_ERR_SHUT_DOWN" has '\[1,0\]<stdout>:FT rank=0 op=later status=HVD_ERR_SHUT_DOWN'
    expect "mpirun exits 0" test "$rc" -eq 0
    ;;
  mpi-kill)
    prog=$1 mpirun=$2
    shift 2
    # Open MPI aborts the whole job when a rank dies; rank 0 is stuck in
    # MPI and never sees an hvd error, so only the launcher's report counts.
    run_job 120 "$mpirun" "$@" -np 2 --tag-output "$prog" kill
    expect "mpirun exits non-zero" test "$rc" -ne 0
    # mpirun's own code echoes the signal (137); only the time tells it
    # apart from the 120 s limit's kill.
    expect "mpirun stopped the job within 60 s" test "$rc" -ne 124 -a "$secs" -lt 60
    expect "mpirun names the failed process (rank 1) and signal 9" \
      has 'process rank 1 .*(signal 9|Killed)'
    ;;
  *)
    echo "unknown mode $mode"
    exit 2
    ;;
esac
if [ "$fail" -ne 0 ]; then
  echo "---- job output"
  cat "$out"
fi
exit $fail
