#!/bin/sh
# Hierarchical CPU allreduce across network-namespace hosts: the test
# program (tests/mp/hierarchical_test.cc, exact results per rank) runs with
# Gloo (hvdrun -H) and with --mpi on even and uneven placements:
#   np=4: 2+2 and 3+1 over 2 hosts;  np=6: 2+2+2 and 3+2+1 over 3 hosts;
#   np=3: one rank on each of 3 hosts (the allreduce is the TCP ring alone).
# Every rank must log that it uses the hierarchy (HVD_HIERARCHICAL_ALLREDUCE=1,
# with HVD_HIERARCHICAL_ALLREDUCE_MIN_BYTES=0 so that every size goes through
# it); unset, it is on for Gloo and for MPI (whose ranks get
# MPI_THREAD_MULTIPLE), from the backend's own minimum size (smaller
# allreduces stay flat); =0 turns it off. MPI's unset case runs with 2 MiB chunks, so that its
# cross-host ring (core/algorithms/mpi/mpi_ring_allreduce.cc) sends several
# pieces per block. The cross-host step runs on hvd's TCP ring by default
# (every rank that carries a share says so) and on the backend's allreduce
# with HVD_HIERARCHICAL_CROSS=backend. On MPI it also checks the negotiation
# channel and the ring's set-up when ranks cannot reach each other: TCP
# sockets, or MPI messages when a rank cannot reach the coordinator. The
# hosts come from scripts/netns_cluster.sh, unshaped,
# under their own names (hvdht-*) and addresses (10.214.0.0/24).
#
#   hierarchical_test.sh NETNS_CLUSTER HVDRUN TEST_PROGRAM WITH_GLOO WITH_MPI
# Exit 77 (ctest SKIP) where namespaces cannot be created.
set -u
CLUSTER=$1
HVDRUN=$2
PROG=$3
WITH_GLOO=$4
WITH_MPI=$5
export HVDSC_PREFIX=hvdht HVDSC_NET=10.214.0 HVDSC_TTL=900

skip() {
  echo "SKIP: $*"
  exit 77
}
[ "$(id -u)" = 0 ] || skip "needs root to create network namespaces"
command -v ip > /dev/null 2>&1 || skip "the 'ip' command (iproute2) is not installed"
command -v unshare > /dev/null 2>&1 || skip "unshare (per-host host names) is not installed"
if command -v flock > /dev/null 2>&1; then
  exec 9> /tmp/hvd-hierarchical-test.lock
  flock -w 300 9 || skip "another hierarchical test holds the lock"
fi
TMP=$(mktemp -d)
trap 'sh "$CLUSTER" down; rm -rf "$TMP"' EXIT
trap 'exit 1' INT TERM
sh "$CLUSTER" down
sh "$CLUSTER" up 3 none > "$TMP/up" 2>&1 || {
  grep -q "Operation not permitted\|cannot create" "$TMP/up" && skip "$(cat "$TMP/up")"
  cat "$TMP/up" >&2
  exit 1
}

fail() {
  echo "FAIL: $*" >&2
  for f in "$TMP"/out "$TMP"/err; do [ -f "$f" ] && { echo "--- $f" >&2; tail -40 "$f" >&2; }; done
  exit 1
}

# run BACKEND NP HOSTS [VAR=VALUE...]: the program under the cluster's time
# limit; the output is in $TMP/out and $TMP/err.
run() {
  backend=$1 np=$2 hosts=$3
  shift 3
  if [ "$backend" = gloo ]; then
    sh "$CLUSTER" run -t 240 sh -c 'exec env "$@"' sh HVD_GLOO_IFACE=hvdht0 \
      HVD_ALLREDUCE_CHUNK_BYTES=65536 HVD_LOG_LEVEL=info "$@" "$HVDRUN" -np "$np" -H "$hosts" \
      --ssh-command "sh $CLUSTER exec" --network-interface hvdht-r "$PROG" > "$TMP/out" 2> "$TMP/err"
  else
    sh "$CLUSTER" run -t 240 sh -c 'exec env "$@"' sh -u HVD_HOSTNAME \
      OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_btl=self,vader,tcp \
      OMPI_MCA_mpi_yield_when_idle=1 HVD_ALLREDUCE_CHUNK_BYTES=65536 HVD_LOG_LEVEL=info "$@" \
      "$HVDRUN" --mpi -np "$np" -H "$hosts" --ssh-command "sh $CLUSTER rsh" \
      --network-interface 10.214.0.0/24 "$PROG" > "$TMP/out" 2> "$TMP/err"
  fi
}

# check WHAT NP HIERARCHICAL(1|0) [MIN_BYTES [ACROSS]]: every rank passed;
# all or none used it; all with allreduces from MIN_BYTES bytes; every rank
# that carries a share crosses hosts on ACROSS (default "a TCP ring").
check() {
  passed=$(grep -c '<stdout>:.*\[  PASSED  \]' "$TMP/out")
  [ "$passed" = "$2" ] || fail "$1: $passed of $2 ranks reported PASSED"
  used=$(cat "$TMP/out" "$TMP/err" | grep -c 'hierarchical allreduce (world): ')
  if [ "$3" = 1 ]; then
    [ "$used" = "$2" ] || fail "$1: $used of $2 ranks use hierarchical allreduce"
    if [ $# -ge 4 ]; then
      from=$(cat "$TMP/out" "$TMP/err" | grep -c "hierarchical allreduce (world): .*, from $4 bytes")
      [ "$from" = "$2" ] || fail "$1: $from of $2 ranks run the hierarchy from $4 bytes"
    fi
    across=${5:-a TCP ring}
    n=$(cat "$TMP/out" "$TMP/err" | grep -c "hierarchical allreduce (world): .*, across on $across")
    idle=$(cat "$TMP/out" "$TMP/err" | grep -c "hierarchical allreduce (world): .*, carrying no share")
    [ "$n" -ge 2 ] && [ $((n + idle)) = "$2" ] ||
      fail "$1: $n ranks cross on $across and $idle carry no share, of $2"
  else
    [ "$used" = 0 ] || fail "$1: hierarchical allreduce used although turned off"
  fi
  echo "ok: $1"
}

# count PATTERN: lines of the last run's output and errors that match.
count() {
  cat "$TMP/out" "$TMP/err" | grep -c "$1"
}

# MPI negotiates over TCP sockets when every rank reaches the coordinator
# (the last run: on its address in the cluster's subnet), falls back to MPI
# messages together when some cannot (the coordinator announced on
# loopback: the ranks of the other host are refused), and fails init with
# the reason when TCP was demanded.
check_mpi_control_channel() {
  n=$(count 'control channel (world): TCP, coordinator at 10\.214\.0\.')
  [ "$n" = 4 ] || fail "mpi: $n of 4 ranks negotiate over TCP on the cluster's subnet"
  run mpi 4 "$H1:2,$H2:2" HVD_GLOO_IFACE=lo || fail "mpi np=4, coordinator on lo: exit code $?"
  check "mpi np=4 -H $H1:2,$H2:2, coordinator and rings on lo" 4 1 2097152 MPI
  n=$(count 'control channel (world): MPI messages, polled')
  [ "$n" = 4 ] || fail "mpi, coordinator on lo: $n of 4 ranks fell back to MPI messages"
  n=$(count 'rank(s) 2, 3 could not reach the coordinator (rank 0) at 127\.0\.0\.1:.*; negotiating over MPI')
  [ "$n" -ge 1 ] || fail "mpi, coordinator on lo: no warning naming ranks 2 and 3 and the address"
  echo "ok: mpi falls back to MPI messages when ranks cannot reach the coordinator"
  # The same run's cross-host rings announced loopback addresses too: their
  # set-up failed on every carrier together, which fell back to MPI.
  n=$(count 'hierarchical allreduce (world): .*across on MPI')
  [ "$n" = 4 ] || fail "mpi, rings on lo: $n of 4 ranks fell back to MPI for the cross-host step"
  n=$(count 'cross-host ring: .*cannot reach rank [0-3] at 127\.0\.0\.1:.*; the cross-host step runs on MPI instead')
  [ "$n" -ge 1 ] || fail "mpi, rings on lo: no warning naming the neighbour and its address"
  echo "ok: mpi's cross-host step falls back to MPI when the ring cannot connect"
  run mpi 4 "$H1:2,$H2:2" HVD_GLOO_IFACE=lo HVD_CONTROL_CHANNEL=tcp && fail "mpi: HVD_CONTROL_CHANNEL=tcp on lo succeeded"
  n=$(count 'hvd_init failed: .*control channel: rank(s) 2, 3 could not reach the coordinator (rank 0) at 127\.0\.0\.1:')
  [ "$n" = 1 ] || fail "mpi: HVD_CONTROL_CHANNEL=tcp on lo: rank 0's init did not fail naming ranks 2 and 3"
  echo "ok: mpi with HVD_CONTROL_CHANNEL=tcp fails init when ranks cannot reach the coordinator"
  run mpi 4 "$H1:2,$H2:2" HVD_GLOO_IFACE=lo HVD_HIERARCHICAL_CROSS=tcp &&
    fail "mpi: HVD_HIERARCHICAL_CROSS=tcp on lo succeeded"
  n=$(count 'hvd_init failed: .*hierarchical allreduce: cross-host ring: .*(HVD_HIERARCHICAL_CROSS=tcp')
  [ "$n" -ge 1 ] || fail "mpi: HVD_HIERARCHICAL_CROSS=tcp on lo: init did not fail naming the ring"
  echo "ok: mpi with HVD_HIERARCHICAL_CROSS=tcp fails init when the ring cannot connect"
  # Open MPI's default TCP flags (as under mpi4py): the MPI ring's pieces
  # fit the eager limit, and every result is still exact.
  run mpi 4 "$H1:2,$H2:2" HVD_HIERARCHICAL_ALLREDUCE=1 HVD_HIERARCHICAL_ALLREDUCE_MIN_BYTES=0 \
    HVD_HIERARCHICAL_CROSS=backend OMPI_MCA_btl_tcp_flags=send,put,inplace,need-ack,need-csum,hetero-rdma ||
    fail "mpi np=4 with Open MPI's default TCP flags: exit code $?"
  check "mpi np=4 -H $H1:2,$H2:2 with Open MPI's default TCP flags" 4 1 0 MPI
  n=$(count 'the cross-host ring sends pieces of 61440 bytes, within its eager limit')
  [ "$n" -ge 1 ] || fail "mpi with Open MPI's default TCP flags: the ring's pieces are not eager-sized"
}

H1=hvdht-h1 H2=hvdht-h2 H3=hvdht-h3
for backend in gloo mpi; do
  if [ "$backend" = gloo ] && [ "$WITH_GLOO" != 1 ]; then
    echo "SKIP part: Gloo (hvd built without Gloo)"
    continue
  fi
  if [ "$backend" = mpi ] && { [ "$WITH_MPI" != 1 ] || ! command -v mpirun > /dev/null 2>&1; }; then
    echo "SKIP part: MPI (hvd built without MPI, or no mpirun)"
    continue
  fi
  for placement in "4 $H1:2,$H2:2" "4 $H1:3,$H2:1" "6 $H1:2,$H2:2,$H3:2" "6 $H1:3,$H2:2,$H3:1"; do
    set -- $placement
    run "$backend" "$1" "$2" HVD_HIERARCHICAL_ALLREDUCE=1 HVD_HIERARCHICAL_ALLREDUCE_MIN_BYTES=0 ||
      fail "$backend np=$1 -H $2: exit code $?"
    check "$backend np=$1 -H $2" "$1" 1 0
  done
  # One rank on each host: the allreduce is the TCP ring alone (by default
  # on MPI; on Gloo, whose own ring measured as fast there, when asked).
  cross=HVD_HIERARCHICAL_CROSS=$([ "$backend" = gloo ] && echo tcp || echo auto)
  run "$backend" 3 "$H1:1,$H2:1,$H3:1" HVD_HIERARCHICAL_ALLREDUCE=1 \
    HVD_HIERARCHICAL_ALLREDUCE_MIN_BYTES=0 "$cross" || fail "$backend np=3, one rank per host: exit code $?"
  check "$backend np=3 -H $H1:1,$H2:1,$H3:1 with $cross" 3 1 0
  n=$(count 'hierarchical allreduce (world): 3 hosts, one rank on each')
  [ "$n" = 3 ] || fail "$backend np=3, one rank per host: $n of 3 ranks run the ring alone"
  # The default: automatic on both; and the switch turns it off.
  if [ "$backend" = gloo ]; then
    run gloo 4 "$H1:2,$H2:2" || fail "gloo np=4 default: exit code $?"
    check "gloo np=4 -H $H1:2,$H2:2 with HVD_HIERARCHICAL_ALLREDUCE unset" 4 1 65537
  else
    run mpi 4 "$H1:2,$H2:2" HVD_ALLREDUCE_CHUNK_BYTES=2097152 || fail "mpi np=4 default: exit code $?"
    check "mpi np=4 -H $H1:2,$H2:2 with HVD_HIERARCHICAL_ALLREDUCE unset, 2 MiB chunks" 4 1 2097152
  fi
  # The backend's own cross-host step (Gloo's ring, MpiRingAllreduce).
  name=$([ "$backend" = gloo ] && echo GLOO || echo MPI)
  run "$backend" 6 "$H1:3,$H2:2,$H3:1" HVD_HIERARCHICAL_ALLREDUCE=1 \
    HVD_HIERARCHICAL_ALLREDUCE_MIN_BYTES=0 HVD_HIERARCHICAL_CROSS=backend ||
    fail "$backend np=6 with HVD_HIERARCHICAL_CROSS=backend: exit code $?"
  check "$backend np=6 -H $H1:3,$H2:2,$H3:1 with HVD_HIERARCHICAL_CROSS=backend" 6 1 0 "$name"
  run "$backend" 4 "$H1:2,$H2:2" HVD_HIERARCHICAL_ALLREDUCE=0 || fail "$backend np=4 flat: exit code $?"
  check "$backend np=4 -H $H1:2,$H2:2 with HVD_HIERARCHICAL_ALLREDUCE=0" 4 0
  [ "$backend" = mpi ] && check_mpi_control_channel
done
echo "PASS: hierarchical"
