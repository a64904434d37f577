#!/usr/bin/env bash
# Runs fault_test under a launcher and checks what the job reports.
#
#   check_fault.sh gloo-kill      HVDRUN FAULT_TEST
#   check_fault.sh gloo-shutdown  HVDRUN FAULT_TEST
#   check_fault.sh mpi-kill       FAULT_TEST MPIRUN [MPIRUN_FLAGS...]
#   check_fault.sh mpi-shutdown   FAULT_TEST MPIRUN [MPIRUN_FLAGS...]
#   check_fault.sh gloo-stop V W  HVDRUN FAULT_TEST          (np 3)
#   check_fault.sh mpi-stop V W   FAULT_TEST MPIRUN [FLAGS]  (np 3)
#   check_fault.sh gloo-lost V    HVDRUN FAULT_TEST          (np 4)
#   check_fault.sh gloo-idle V    HVDRUN FAULT_TEST          (np 3)
#   check_fault.sh gloo-end A     HVDRUN FAULT_TEST          (np 3)
#   check_fault.sh mpi-end A      FAULT_TEST MPIRUN [FLAGS]  (np 3)
#   check_fault.sh gloo-agree VAR=VALUE  HVDRUN FAULT_TEST         (np 2)
#   check_fault.sh mpi-agree VAR=VALUE   FAULT_TEST MPIRUN [FLAGS] (np 2)
#   check_fault.sh mpi-late       FAULT_TEST MPIRUN [FLAGS]  (np 2)
#   check_fault.sh gloo-late      HVDRUN FAULT_TEST          (np 2)
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
  end_ms=$((t1 / 1000000))
  echo "== exit code $rc after ${secs}s: ${*:2}"
}

# Every survivor's line for op $1 must carry status $2 (an ERE) and name
# rank $victim and its host followed by $4 (an ERE: what it found); with $3
# set, it must come between 2500 ms (the 3 s deadline, not before) and $3 ms.
survivors_name_victim() {
  local op=$1 status=$2 within=${3:-} verdict=${4:-}
  for r in $(seq 0 $((np - 1))); do
    [ "$r" = "$victim" ] && continue
    local line
    line=$(grep -E "FT rank=$r op=$op status=" "$out" | head -1)
    expect "rank $r reported its $op op" test -n "$line"
    expect "rank $r: status $status" grep -Eq "status=($status) " <<<"$line"
    expect "rank $r: the message names rank $victim and its host${verdict:+ ($verdict)}" \
      grep -Eq "message=.*rank $victim \(host [^ ,)]+[,)]?[^;]*$verdict" <<<"$line"
    if [ -n "$within" ]; then
      local ms
      ms=$(sed -n 's/.* elapsed_ms=\([0-9]*\) .*/\1/p' <<<"$line")
      expect "rank $r: after the deadline and within $within ms (took ${ms:-?})" \
        test -n "$ms" -a "${ms:-0}" -ge 2500 -a "${ms:-0}" -le "$within"
    fi
  done
}

case $mode in
  gloo-stop | mpi-stop)
    victim=$1 when=$2 np=3
    shift 2
    # A 3 s deadline: every survivor must fail within it + 5 s, naming the
    # stopped rank, and the job must end (the survivors exit 3).
    export HVD_OP_TIMEOUT_SECONDS=3
    if [ "$mode" = gloo-stop ]; then
      run_job 90 "$1" --grace-period 5 -np 3 "$2" stop "$victim" "$when"
    else
      prog=$1 mpirun=$2
      shift 2
      run_job 90 "$mpirun" "$@" -np 3 --tag-output "$prog" stop "$victim" "$when"
    fi
    expect "rank $victim stopped itself" grep -q "FT rank=$victim stopping itself" "$out"
    survivors_name_victim stalled HVD_ERR_TIMEOUT 8000 "(does not answer|has not submitted)"
    expect "the job ended (not killed by the 90 s limit)" test "$rc" -ne 124 -a "$secs" -lt 60
    ;;
  gloo-end | mpi-end)
    # Rank 1 stops itself (SIGSTOP) inside an allreduce; after the 3 s
    # deadline the survivors do $action (fault_test end). Whatever it is,
    # the whole job must end within the deadline + 5 s of the stop, and
    # fail (core/runtime/job_end.h).
    action=$1 victim=1 np=3
    shift
    export HVD_OP_TIMEOUT_SECONDS=3
    if [ "$mode" = gloo-end ]; then
      # mixed: a rank that ignores SIGTERM lives until hvdrun's SIGKILL,
      # --grace-period after the first exit.
      run_job 60 "$1" --grace-period 2 -np 3 "$2" end "$victim" "$action"
    else
      prog=$1 mpirun=$2
      shift 2
      run_job 60 "$mpirun" "$@" -np 3 --tag-output "$prog" end "$victim" "$action"
    fi
    stopped_at=$(sed -n 's/.*FT rank=1 stopping itself at_ms=\([0-9]*\).*/\1/p' "$out" | head -1)
    expect "rank 1 stopped itself" test -n "$stopped_at"
    # Once one survivor acts (exits, or MPI aborts) the launcher may kill
    # the other before it prints: one report of each kind is enough.
    expect "a survivor's allreduce failed with HVD_ERR_TIMEOUT naming rank 1" \
      has "FT rank=[02] op=stalled status=HVD_ERR_TIMEOUT .*message=.*rank 1 (\(host [^ ,)]+[,)]?[^;]*)?(does not answer|has not submitted)"
    expect "a survivor went on to '$action'" has "FT rank=[02] action=$action "
    expect "the job ended by itself (not the 60 s limit)" test "$rc" -ne 124 -a "$rc" -ne 137
    expect "the job failed (exit code $rc)" test "$rc" -ne 0
    if [ -n "$stopped_at" ]; then
      echo "   the job ended $((end_ms - stopped_at)) ms after rank 1 stopped"
      expect "the job ended within the deadline + 5 s of the stop" \
        test $((end_ms - stopped_at)) -le 8000
    fi
    if [ "$mode" = mpi-end ]; then
      expect "hvd says why it aborts the job" has "aborting the MPI job"
    fi
    if [ "$action" = mixed ]; then
      expect "rank 2 ignored the launcher's SIGTERM (so SIGKILL ended it)" has "FT got SIGTERM"
    fi
    if [ "$action" = exit0 ] && [ "$mode" = gloo-end ]; then
      expect "hvd says why exit code 0 became 1" has "exiting with 1 so that the launcher stops"
    fi
    ;;
  gloo-lost)
    victim=$1 np=4
    hvdrun=$2 prog=$3
    HVD_GLOO_TIMEOUT_SECONDS=5 run_job 120 "$hvdrun" --grace-period 20 -np 4 "$prog" kill "$victim"
    expect "rank $victim announced its death" grep -q "FT rank=$victim killing itself" "$out"
    # PEER_LOST, or TIMEOUT in Gloo's queued-send race; named either way.
    survivors_name_victim waited 'HVD_ERR_PEER_LOST|HVD_ERR_TIMEOUT' "" "(lost|gone)"
    ;;
  gloo-idle)
    # Rank $victim dies while the others compute; 1 s later their next
    # submissions must fail at once (at submit, in under 100 ms), with
    # PEER_LOST naming it: their loops learned of the loss meanwhile.
    victim=$1 np=3
    hvdrun=$2 prog=$3
    HVD_GLOO_TIMEOUT_SECONDS=5 run_job 120 "$hvdrun" --grace-period 20 -np 3 "$prog" idle "$victim"
    killed_at=$(sed -n "s/.*FT rank=$victim killing itself at_ms=\([0-9]*\).*/\1/p" "$out" | head -1)
    expect "rank $victim announced its death" test -n "$killed_at"
    for r in $(seq 0 $((np - 1))); do
      [ "$r" = "$victim" ] && continue
      for op in idle.grad.0 idle.grad.1; do
        line=$(grep -E "FT rank=$r op=$op status=" "$out" | head -1)
        expect "rank $r reported $op" test -n "$line"
        expect "rank $r: $op failed at submit with HVD_ERR_PEER_LOST" \
          grep -Eq "status=HVD_ERR_PEER_LOST at_submit=1 " <<<"$line"
        us=$(sed -n 's/.* submit_us=\([0-9]*\) .*/\1/p' <<<"$line")
        expect "rank $r: the failed submit of $op returned within 100 ms (${us:-?} us)" \
          test -n "$us" -a "${us:-999999}" -lt 100000
        expect "rank $r: the message names rank $victim and its host" \
          grep -Eq "message=.*rank $victim \(host [^ ,)]+" <<<"$line"
      done
      at=$(grep -E "FT rank=$r op=idle.grad.0 " "$out" | sed -n 's/.* at_ms=\([0-9]*\) .*/\1/p')
      if [ -n "$killed_at" ] && [ -n "$at" ]; then
        echo "   rank $r: failed submit $((at - killed_at)) ms after the kill (submitted at +1000 ms)"
      fi
    done
    ;;
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
  gloo-agree | mpi-agree)
    # Rank 1 alone runs with VAR=VALUE: hvd_init must fail on both ranks
    # within seconds, naming VAR, each value and its rank (it hung before).
    setting=$1
    var=${setting%%=*}
    if [ "$mode" = gloo-agree ]; then
      hvdrun=$2 prog=$3
      run_job 60 "$hvdrun" -np 2 sh -c \
        'if [ "$HVD_RANK" = 1 ]; then export "$1"; fi; exec "$2" agree' sh "$setting" "$prog"
      tag='^\[%d\]<stdout>:'
    else
      prog=$2 mpirun=$3
      shift 3
      run_job 60 "$mpirun" "$@" --tag-output -np 1 "$prog" agree : -np 1 -x "$setting" "$prog" agree
      tag='\[1,%d\]<stdout>:'
    fi
    for r in 0 1; do
      # shellcheck disable=SC2059
      expect "rank $r's hvd_init failed naming $var and both ranks' values" \
        has "$(printf "$tag" "$r")FT init status=HVD_ERR_INVALID_ARGUMENT .*ranks disagree on $var: [^ ]+.* on rank 0, ${setting#*=} on rank 1 \(this is rank $r\)"
    done
    expect "no rank got past hvd_init" sh -c "! grep -q 'op=agree' '$out'"
    expect "the job ended within 30 s, failed" test "$rc" -ne 0 -a "$secs" -lt 30
    ;;
  gloo-late)
    # Rank 1 reaches hvd_init 12 s late, past a 2 s HVD_GLOO_TIMEOUT_SECONDS:
    # rank 0's hvd_init fails naming rank 1 as the one that has not joined
    # (not only its rendezvous key), and hvdrun ends the job.
    hvdrun=$1 prog=$2
    HVD_GLOO_TIMEOUT_SECONDS=2 run_job 60 "$hvdrun" -np 2 "$prog" late 12
    expect "rank 0's hvd_init timed out naming rank 1 as not joined" \
      has "^\[0\]<stdout>:FT init status=HVD_ERR_TIMEOUT .*Gloo connect \(rank 0 of 2.*: rank 1 of 2 has not joined: not started, or not yet in hvd_init"
    expect "the job ended before rank 1 reached hvd_init, failed" test "$rc" -ne 0 -a "$secs" -lt 12
    ;;
  mpi-late)
    # Rank 1 reaches hvd_init 4 s late: rank 0 waits in MPI_Init_thread,
    # which has no deadline, and must say so every second, then both run.
    prog=$1 mpirun=$2
    shift 2
    HVD_STALL_CHECK_TIME_SECONDS=1 run_job 60 "$mpirun" "$@" -x HVD_STALL_CHECK_TIME_SECONDS \
      --tag-output -np 2 "$prog" late 4
    expect "rank 0 said it waits in MPI_Init_thread for every rank, naming itself" \
      has '\[1,0\]<stderr>:.*WARNING: hvd_init: MPI_Init_thread has waited [1-3] s for every rank of the job to call it \(this is rank 0 of the launcher.s 2\)'
    expect "rank 1 did not (it was not waiting)" sh -c "! grep -q '\[1,1\]<stderr>:.*has waited' '$out'"
    for r in 0 1; do
      expect "rank $r's hvd_init and allreduce succeeded" \
        has "\[1,$r\]<stdout>:FT rank=$r op=agree status=HVD_OK"
    done
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
