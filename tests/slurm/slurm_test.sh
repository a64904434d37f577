#!/bin/bash
# Real Slurm on this machine: starts munge, slurmctld and slurmd (Debian's
# slurm-wlm; one node, 2 CPUs, oversubscription allowed) from a slurm.conf of
# its own in a temporary directory, runs hvd jobs under srun and sbatch, checks
# every rank's result, and always stops the daemons.
#
#   slurm_test.sh HVDRUN PROBE [PYTHON_DIR]
#
# PROBE is slurm_probe.c. Jobs:
#   pmix     srun -n 2 --mpi=pmix          MPI backend
#   nopmi    srun -n 2                     Gloo from Slurm's variables, task 0's store
#   insecure srun -n 2, store dir mode 755 refused with hvd's message
#   single   srun -n 1                     Gloo, a world of one
#   mpi_err  HVD_CONTROLLER=mpi srun -n 2  hvd's one-line error naming --mpi=pmix
#   batch    sbatch -n 2: hvdrun PROBE     hosts and -np from the allocation
#   elastic  sbatch -n 2: hvdrun --min-np 1 --max-np 2 PROBE elastic-recover
#            (a worker killed, a new one started in its slot, a round of 2)
# With PYTHON_DIR (the built Python package), also the issue's own lines:
#   py_pmix  srun -n 2 --mpi=pmix python3 slurm_train.py
#   py_nopmi srun -n 2 python3 slurm_train.py
# Exit 77 (skip) only when the daemons cannot run here: not root, Slurm or
# munge not installed, or a daemon exits at start (its log is printed).
# KEEP_SLURM_TEST_DIR=1 keeps the temporary directory.
set -u
HVDRUN=$1
PROBE=$2
PYTHON_DIR=${3:-}
HERE=$(cd "$(dirname "$0")" && pwd)
# Each job's bound; with 9 jobs and start-up, well under ctest's 600 s.
JOB_TIMEOUT=60
# The daemons end by themselves after this long even if this script is
# killed (SIGKILL cannot be trapped).
DAEMON_LIFETIME=900

skip() {
  echo "SKIP: $*"
  exit 77
}

[ "$(id -u)" = 0 ] || skip "slurmd must run as root to start tasks (run the test as root)"
for b in munged mungekey slurmctld slurmd srun sbatch sinfo squeue scancel; do
  command -v "$b" >/dev/null 2>&1 || PATH=$PATH:/usr/sbin
  command -v "$b" >/dev/null 2>&1 || skip "$b not found (scripts/setup.sh installs slurm-wlm and munge)"
done
[ -e /usr/lib/x86_64-linux-gnu/slurm-wlm/mpi_pmix.so ] || ls /usr/lib/*/slurm-wlm/mpi_pmix.so \
  >/dev/null 2>&1 || skip "Slurm's PMIx plugin (mpi_pmix.so, package slurm-wlm-basic-plugins) is missing"

NODE=$(hostname -s)
getent hosts "$NODE" >/dev/null || skip "this host's name $NODE does not resolve (tasks meet on it)"

T=$(mktemp -d /tmp/hvd-slurm.XXXXXX)
chmod 700 "$T"
PIDS=()

print_logs() {
  for f in "$T"/munged.log "$T"/slurmctld.log "$T"/slurmd.log; do
    [ -f "$f" ] || continue
    echo "---- last lines of $f"
    tail -n 40 "$f"
  done
}

cleanup() {
  export SLURM_CONF=$T/slurm.conf
  # Jobs first, so that no step outlives the daemons.
  if [ -f "$T/slurm.conf" ] && [ ${#PIDS[@]} -ge 3 ]; then
    timeout 10 scancel --quiet --user=root >/dev/null 2>&1
    for _ in $(seq 50); do
      [ -z "$(timeout 5 squeue -h 2>/dev/null)" ] && break
      sleep 0.2
    done
  fi
  local pid
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null; done
  for pid in "${PIDS[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null
  done
  if [ "${KEEP_SLURM_TEST_DIR:-0}" = 1 ]; then echo "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Two free TCP ports (slurmctld, slurmd); srun and the tasks use ephemeral ones.
read -r CTLD_PORT SLURMD_PORT < <(/usr/bin/python3 -c '
import socket
socks = [socket.socket() for _ in range(2)]
for s in socks:
    s.bind(("", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))')

mkdir -p "$T/state" "$T/spool" "$T/home"
LIBDIR=$(dirname "$(ls /usr/lib/*/slurm-wlm/mpi_pmix.so | head -n 1)")
cat >"$T/slurm.conf" <<EOF
ClusterName=hvdtest
SlurmctldHost=$NODE(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$T/munge.sock
PluginDir=$LIBDIR
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/slurmctld.log
SlurmdLogFile=$T/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
SlurmdParameters=config_overrides
ReturnToService=2
InactiveLimit=0
KillWait=5
MinJobAge=30
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN
PartitionName=test Nodes=$NODE Default=YES MaxTime=10 State=UP OverSubscribe=FORCE:4
EOF
export SLURM_CONF=$T/slurm.conf

# munge with a key of its own.
mungekey --create --keyfile="$T/munge.key" >/dev/null 2>&1 ||
  { dd if=/dev/urandom of="$T/munge.key" bs=1024 count=1 2>/dev/null; }
chmod 400 "$T/munge.key"
timeout $DAEMON_LIFETIME munged --force --foreground --socket="$T/munge.sock" --key-file="$T/munge.key" \
  --pid-file="$T/munged.pid" --log-file="$T/munged.log" --seed-file="$T/munged.seed" \
  >>"$T/munged.log" 2>&1 &
PIDS+=($!)
timeout $DAEMON_LIFETIME slurmctld -D -i -f "$T/slurm.conf" >>"$T/slurmctld.out" 2>&1 &
PIDS+=($!)
timeout $DAEMON_LIFETIME slurmd -D -N "$NODE" -f "$T/slurm.conf" >>"$T/slurmd.out" 2>&1 &
PIDS+=($!)

NAMES=(munged slurmctld slurmd)
up=0 dead=
for _ in $(seq 60); do
  state=$(timeout 5 sinfo -h -n "$NODE" -o %T 2>/dev/null)
  case "$state" in idle*|mixed*|alloc*) up=1; break ;; esac
  for i in 0 1 2; do kill -0 "${PIDS[$i]}" 2>/dev/null || dead=${NAMES[$i]}; done
  [ -n "$dead" ] && break
  sleep 0.5
done
if [ $up != 1 ]; then
  cat "$T"/*.out 2>/dev/null
  print_logs
  # A daemon that exits at start cannot run on this machine; daemons that run
  # but never bring the node up are a failure of this test's setup.
  [ -n "$dead" ] && skip "$dead exited at start: it cannot run here (its log is above)"
  echo "FAIL: the daemons run but node $NODE is not up after 30 s (state '${state:-none}')"
  exit 1
fi
echo "slurm up: node $NODE, slurmctld port $CTLD_PORT, slurmd port $SLURMD_PORT"

FAILED=0
fail() {
  echo "FAIL [$CASE]: $*"
  [ -f "$T/out.$CASE" ] && { echo "---- output"; cat "$T/out.$CASE"; }
  FAILED=1
}

# Every rank 0..N-1 printed one line with this backend and the right sums
# (under hvdrun prefixed with "[rank or worker id]<stdout>:").
check_ranks() { # backend size elastic
  local file=$T/out.$CASE r t=$(($2 * ($2 + 1) / 2))
  local sums="$t,$((2 * t)),$((3 * t)),$((4 * t))"
  for r in $(seq 0 $(($2 - 1))); do
    grep -q "^\(\[[0-9]*\]<stdout>:\)\?rank=$r size=$2 local_rank=$r backend=$1 elastic=$3 sum=$sums ok\$" "$file" ||
      { fail "rank $r: no line 'rank=$r size=$2 ... backend=$1 elastic=$3 sum=$sums ok'"; return; }
  done
  [ "$(grep -c ' ok$' "$file")" = "$2" ] || fail "expected exactly $2 rank lines"
  echo "PASS [$CASE]"
}

run_srun() { # case, then srun arguments
  CASE=$1
  shift
  timeout $JOB_TIMEOUT srun --time=3 "$@" >"$T/out.$CASE" 2>&1
}

# srun --mpi=pmix: MPI from PMIx. (Shared-memory single copy needs ptrace, which
# containers often forbid; the other tests pass the same to mpirun.)
export OMPI_MCA_btl_vader_single_copy_mechanism=none
if run_srun pmix -n 2 --mpi=pmix "$PROBE"; then check_ranks mpi 2 0; else fail "srun exited $?"; fi

# srun without PMI: Gloo, task 0 hosts the store; its file is gone afterwards.
export HOME=$T/home
if run_srun nopmi -n 2 "$PROBE"; then check_ranks gloo 2 0; else fail "srun exited $?"; fi
[ -z "$(ls -A "$HOME/.hvd/slurm" 2>/dev/null)" ] || fail "store file left in $HOME/.hvd/slurm"
# A store directory that others could read is refused, naming it.
chmod 755 "$HOME/.hvd/slurm"
run_srun insecure -n 2 --export=ALL,HVD_GLOO_TIMEOUT_SECONDS=5 "$PROBE" expect-init-error
if ! grep -q "^init_error: .*$HOME/.hvd/slurm must be a directory that only this user owns" \
  "$T/out.insecure"; then
  fail "task 0 did not refuse a store directory of mode 755"
elif ! grep -q "^init_error: .*task 1 found no store of task 0 within" "$T/out.insecure"; then
  fail "task 1 did not fail naming the missing store"
else
  echo "PASS [$CASE]"
fi
chmod 700 "$HOME/.hvd/slurm"

# One task: Gloo alone (AUTO must not pick MPI, which cannot start here).
if run_srun single -n 1 "$PROBE"; then check_ranks gloo 1 0; else fail "srun exited $?"; fi
[ "$(stat -c %a "$HOME/.hvd/slurm" 2>/dev/null)" = 700 ] || fail "$HOME/.hvd/slurm is not mode 700"

# MPI asked for without PMI: hvd's own line, not Open MPI's text.
run_srun mpi_err -n 2 --export=ALL,HVD_CONTROLLER=mpi "$PROBE" expect-init-error
code=$?
if [ $code = 0 ]; then
  fail "srun succeeded"
elif [ "$(grep -c '^init_error: .*MPI: srun started this task without PMI.*srun --mpi=pmix' \
  "$T/out.mpi_err")" != 2 ]; then
  fail "expected hvd's PMI message from both tasks"
elif grep -qi 'rebuild\|PMI support' "$T/out.mpi_err"; then
  fail "Open MPI's own text was printed: MPI_Init was reached"
else
  echo "PASS [$CASE]"
fi

# Python: srun -n 2 [--mpi=pmix] python3 train.py.
if [ -n "$PYTHON_DIR" ] && PYTHONPATH=$PYTHON_DIR /usr/bin/python3 -c 'import hvd, numpy' 2>/dev/null
then
  export PYTHONPATH=$PYTHON_DIR OMP_NUM_THREADS=1 PYTHONDONTWRITEBYTECODE=1
  if run_srun py_pmix -n 2 --mpi=pmix /usr/bin/python3 "$HERE/slurm_train.py"; then
    check_ranks mpi 2 0
  else
    fail "srun exited $?"
  fi
  if run_srun py_nopmi -n 2 /usr/bin/python3 "$HERE/slurm_train.py"; then
    check_ranks gloo 2 0
  else
    fail "srun exited $?"
  fi
  unset PYTHONPATH
else
  echo "(Python jobs not run: no built Python package given)"
fi

# sbatch: hvdrun takes its hosts and -np from the allocation.
run_sbatch() { # case, script body
  CASE=$1
  printf '#!/bin/bash\n%s\n' "$2" >"$T/job.$CASE.sh"
  timeout $JOB_TIMEOUT sbatch --wait -n 2 --time=3 -o "$T/out.$CASE" "$T/job.$CASE.sh" \
    >"$T/sbatch.$CASE" 2>&1
}
if run_sbatch batch "'$HVDRUN' -v '$PROBE'"; then
  grep -q "hosts from the Slurm allocation: $NODE:2" "$T/out.batch" ||
    fail "hvdrun did not take its hosts from Slurm"
  check_ranks gloo 2 0
else
  fail "sbatch exited $?: $(cat "$T/sbatch.batch")"
fi

# An elastic job inside the allocation: worker 1 is killed in the first round,
# hvdrun starts a new worker on the allocation's free slot, and the survivor
# and the new worker finish a round of 2 together.
if run_sbatch elastic "'$HVDRUN' --min-np 1 --max-np 2 --elastic-timeout 60 '$PROBE' elastic-recover"
then
  check_ranks gloo 2 1
  grep -q "worker=0 round=[0-9]* recovered" "$T/out.elastic" || fail "worker 0 did not recover"
  grep -q "worker=[2-9] round=[0-9]* recovered" "$T/out.elastic" ||
    fail "no replacement worker joined"
  grep -q "worker=1 .*recovered" "$T/out.elastic" && fail "worker 1 should have been killed"
else
  fail "sbatch exited $?: $(cat "$T/sbatch.elastic")"
fi

if [ $FAILED != 0 ]; then
  print_logs
  exit 1
fi
echo "all Slurm jobs passed"
