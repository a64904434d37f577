#!/bin/sh
# Multi-host hvdrun test on one machine: two network namespaces play the
# hosts, joined with the launcher (root namespace) through a bridge that
# lives in a third namespace. Only 10.77.0.0/24, created here, is used.
#
#   root ns  hvdNNNNNr 10.77.0.1 ──┐
#   HOST1    hvd0      10.77.0.11 ─┼─ br0 (in namespace BR)
#   HOST2    hvd0      10.77.0.12 ─┤
#   HOST3    hvd0      10.77.0.13 ─┘
#
# hvdrun -np 4 -H HOST1:2,HOST2:2 --ssh-command 'ip netns exec' starts the
# ranks inside the namespaces; they must reach the rendezvous store on
# 10.77.0.1 and see the right local/cross ranks.
#
# Then the real collective test program (tests/mp, exact values) runs
# across the namespaces with Gloo, and with --mpi (Open MPI started through
# an 'ip netns exec' remote-shell agent); hvd_topology_probe prints the
# local/cross ranks hvd computed, which must match the placement.
#
#   multihost_test.sh HVDRUN KV_RANK_PROBE [TOPOLOGY_PROBE COLLECTIVES_TEST WITH_GLOO WITH_MPI]
# WITH_GLOO / WITH_MPI: 1 or 0 (whether hvd was built with that backend).
# Exit 77 (ctest SKIP) when namespaces cannot be created. Parts that cannot
# run here (no mpirun, no unshare) print "SKIP part: reason" and the rest
# still counts.
set -u
HVDRUN=$1
PROBE=$2
TOPO=${3:-}
COLL=${4:-}
WITH_GLOO=${5:-0}
WITH_MPI=${6:-0}

skip() {
  echo "SKIP: $*"
  exit 77
}
[ "$(id -u)" = 0 ] || skip "needs root to create network namespaces"
command -v ip > /dev/null 2>&1 || skip "the 'ip' command (iproute2) is not installed"

# One instance at a time: the addresses are fixed.
if command -v flock > /dev/null 2>&1; then
  exec 9> /tmp/hvd-multihost-test.lock
  flock -w 120 9 || skip "another multihost test holds the lock"
fi

# Under the lock, namespaces and links of this test that still exist were
# left by a run that was killed before its cleanup: a stale interface holding
# 10.77.0.1 would take the launcher's traffic and every rank's connect would
# time out. Remove them first.
for ns in $(ip netns list 2> /dev/null | sed -n 's/^\(hvdmh[0-9]*-[a-z0-9]*\).*/\1/p'); do
  pids=$(ip netns pids "$ns" 2> /dev/null)
  [ -n "$pids" ] && kill -9 $pids > /dev/null 2>&1
  ip netns del "$ns" > /dev/null 2>&1
done
for link in $(ip -o link show 2> /dev/null | sed -n 's/^[0-9]*: \(hvd[0-9]*r\)[@:].*/\1/p'); do
  ip link del "$link" > /dev/null 2>&1
done

ID=$(($$ % 100000))
BR=hvdmh$ID-br
HOST1=hvdmh$ID-h1
HOST2=hvdmh$ID-h2
HOST3=hvdmh$ID-h3
ROOT_IF=hvd${ID}r
TMP=$(mktemp -d)

cleanup() {
  # Ranks or Open MPI daemons a failed step left behind in the namespaces.
  for ns in "$HOST1" "$HOST2" "$HOST3"; do
    pids=$(ip netns pids "$ns" 2> /dev/null)
    [ -n "$pids" ] && kill -9 $pids > /dev/null 2>&1
  done
  ip link del "$ROOT_IF" > /dev/null 2>&1
  for ns in "$HOST1" "$HOST2" "$HOST3" "$BR"; do ip netns del "$ns" > /dev/null 2>&1; done
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

ip netns add "$BR" 2> "$TMP/err" || skip "cannot create network namespaces: $(cat "$TMP/err")"
set -e
ip netns add "$HOST1"
ip netns add "$HOST2"
ip netns add "$HOST3"
ip -n "$BR" link add br0 type bridge
ip -n "$BR" link set br0 up
ip -n "$BR" link set lo up
# Root namespace <-> bridge.
ip link add "$ROOT_IF" type veth peer name p0 netns "$BR"
ip addr add 10.77.0.1/24 dev "$ROOT_IF"
ip link set "$ROOT_IF" up
ip -n "$BR" link set p0 master br0 up
# Each "host" <-> bridge.
n=0
for ns in "$HOST1" "$HOST2" "$HOST3"; do
  n=$((n + 1))
  ip -n "$BR" link add "p$n" type veth peer name hvd0 netns "$ns"
  ip -n "$BR" link set "p$n" master br0 up
  ip -n "$ns" addr add "10.77.0.1$n/24" dev hvd0
  ip -n "$ns" link set hvd0 up
  ip -n "$ns" link set lo up
done
set +e

fail() {
  echo "FAIL: $*" >&2
  for f in "$TMP"/*; do [ -f "$f" ] && { echo "--- $f" >&2; cat "$f" >&2; }; done
  exit 1
}

# A bridge without STP forwards at once; where ping exists, make sure.
if command -v ping > /dev/null 2>&1; then
  i=0
  until ip netns exec "$HOST2" ping -c 1 -W 1 10.77.0.11 > /dev/null 2>&1; do
    i=$((i + 1))
    [ $i -lt 10 ] || fail "namespaces cannot reach each other"
  done
fi

SSH="ip netns exec"

# 1. Placement and environment, and a rendezvous round trip from every rank.
"$HVDRUN" -np 4 -H "$HOST1:2,$HOST2:2" --ssh-command "$SSH" --network-interface "$ROOT_IF" \
  "$PROBE" > "$TMP/out" 2> "$TMP/err"
rc=$?
[ "$rc" = 0 ] || fail "hvdrun exited with $rc"
sort "$TMP/out" > "$TMP/actual"
sort > "$TMP/expected" <<X
[0]<stdout>:rank=0 size=4 local_rank=0 local_size=2 cross_rank=0 cross_size=2 host=$HOST1
[1]<stdout>:rank=1 size=4 local_rank=1 local_size=2 cross_rank=0 cross_size=2 host=$HOST1
[2]<stdout>:rank=2 size=4 local_rank=0 local_size=2 cross_rank=1 cross_size=2 host=$HOST2
[3]<stdout>:rank=3 size=4 local_rank=1 local_size=2 cross_rank=1 cross_size=2 host=$HOST2
[0]<stdout>:gathered=$HOST1,$HOST1,$HOST2,$HOST2
[1]<stdout>:gathered=$HOST1,$HOST1,$HOST2,$HOST2
[2]<stdout>:gathered=$HOST1,$HOST1,$HOST2,$HOST2
[3]<stdout>:gathered=$HOST1,$HOST1,$HOST2,$HOST2
X
diff -u "$TMP/expected" "$TMP/actual" >&2 || fail "unexpected rank output"

# 2. The ranks were told the launcher's address on the namespaces' network,
# and run in the launcher's directory.
cd "$TMP"
"$HVDRUN" -np 2 -H "$HOST1:1,$HOST2:1" --ssh-command "$SSH" --network-interface "$ROOT_IF" \
  sh -c 'echo $HVD_RENDEZVOUS_ADDR $(pwd) $(ip -o -4 addr show hvd0 | awk "{print \$4}")' \
  > "$TMP/out" 2> "$TMP/err"
[ $? = 0 ] || fail "env run failed"
grep -qx "\[0\]<stdout>:10.77.0.1 $TMP 10.77.0.11/24" "$TMP/out" || fail "rank 0: wrong address or directory"
grep -qx "\[1\]<stdout>:10.77.0.1 $TMP 10.77.0.12/24" "$TMP/out" || fail "rank 1: wrong address or directory"

# 3. A failing rank on the second host stops the job and is named.
start=$(date +%s)
"$HVDRUN" -np 4 -H "$HOST1:2,$HOST2:2" --ssh-command "$SSH" --network-interface "$ROOT_IF" \
  sh -c 'if [ "$HVD_RANK" = 3 ]; then exit 3; fi; exec sleep 60' > "$TMP/out" 2> "$TMP/err"
rc=$?
[ "$rc" = 3 ] || fail "expected exit code 3, got $rc"
[ $(($(date +%s) - start)) -le 10 ] || fail "job not stopped in time"
grep -qx "hvdrun: rank 3 on host $HOST2 exited with code 3 (first failure); stopping the job" \
  "$TMP/err" || fail "failure message does not name rank 3 on $HOST2"

# 4. An unknown host fails the reachability check, naming it.
"$HVDRUN" -np 2 -H "$HOST1:1,hvdmh-no-such-ns:1" --ssh-command "$SSH" \
  --network-interface "$ROOT_IF" true > "$TMP/out" 2> "$TMP/err"
rc=$?
[ "$rc" != 0 ] || fail "a missing host was not detected"
grep -q "host 'hvdmh-no-such-ns' is not reachable" "$TMP/err" || fail "missing host not named"

# 5. Real collectives with Gloo across the namespaces. The namespaces share
# the machine's host name; hvd tells the hosts apart by HVD_HOSTNAME, which
# hvdrun sets to the -H label. Gloo listens on hvd0 (--network-interface
# names the launcher's interface, which the namespaces do not have).
gloo_env() {
  env HVD_CONTROLLER=gloo HVD_CPU_OPERATIONS=gloo HVD_GLOO_IFACE=hvd0 "$@"
}
# Strips the launcher's prefix ([R]<stdout>: from hvdrun, [J,R]<stdout>: from
# mpirun --tag-output) and keeps the probe's lines, sorted.
probe_lines() {
  sed -n 's/^\[[0-9,]*\]<stdout>://p' "$1" | grep '^rank=' | sort
}
expect_topology() {  # $1: backend, $2: homogeneous (0/1); lines "rank local local_size cross cross_size" on stdin
  while read -r r l ls c cs; do
    echo "rank=$r size=$N local_rank=$l local_size=$ls cross_rank=$c cross_size=$cs homogeneous=$2 backend=$1"
  done | sort > "$TMP/expected"
}
if [ "$WITH_GLOO" != 1 ] || [ -z "$COLL" ]; then
  echo "SKIP part: Gloo collectives (hvd built without Gloo, or no test program given)"
else
  N=4
  gloo_env "$HVDRUN" -np 4 -H "$HOST1:2,$HOST2:2" --ssh-command "$SSH" \
    --network-interface "$ROOT_IF" "$TOPO" > "$TMP/out" 2> "$TMP/err"
  rc=$?
  [ "$rc" = 0 ] || fail "gloo topology probe: hvdrun exited with $rc"
  expect_topology gloo 1 <<X
0 0 2 0 2
1 1 2 0 2
2 0 2 1 2
3 1 2 1 2
X
  probe_lines "$TMP/out" > "$TMP/actual"
  diff -u "$TMP/expected" "$TMP/actual" >&2 || fail "gloo: wrong local/cross ranks (-H h1:2,h2:2)"

  # Uneven placement over three hosts: local rank 1 exists only on HOST1.
  N=4
  gloo_env "$HVDRUN" -np 4 -H "$HOST1:2,$HOST2:1,$HOST3:1" --ssh-command "$SSH" \
    --network-interface "$ROOT_IF" "$TOPO" > "$TMP/out" 2> "$TMP/err"
  rc=$?
  [ "$rc" = 0 ] || fail "gloo topology probe (3 hosts): hvdrun exited with $rc"
  expect_topology gloo 0 <<X
0 0 2 0 3
1 1 2 0 1
2 0 1 1 3
3 0 1 2 3
X
  probe_lines "$TMP/out" > "$TMP/actual"
  diff -u "$TMP/expected" "$TMP/actual" >&2 || fail "gloo: wrong local/cross ranks (-H h1:2,h2:1,h3:1)"

  # The collective test program: exact results on every rank, fused and not.
  for fusion in default 0; do
    if [ "$fusion" = 0 ]; then set -- HVD_FUSION_THRESHOLD=0; else set --; fi
    gloo_env "$@" "$HVDRUN" -np 4 -H "$HOST1:2,$HOST2:2" --ssh-command "$SSH" \
      --network-interface "$ROOT_IF" "$COLL" > "$TMP/out" 2> "$TMP/err"
    rc=$?
    [ "$rc" = 0 ] || fail "gloo collectives (fusion $fusion): hvdrun exited with $rc"
    passed=$(grep -c '^\[[0-3]\]<stdout>:.*\[  PASSED  \]' "$TMP/out")
    [ "$passed" = 4 ] || fail "gloo collectives (fusion $fusion): $passed of 4 ranks reported PASSED"
  done
  echo "ok: gloo collectives across namespaces"
fi

# 6. The same with --mpi: hvdrun hands the job to mpirun with
# plm_rsh_agent = our remote shell. Open MPI's daemons are started as
# 'AGENT HOST orted ...' with a command line quoted for a shell (as ssh
# would run it), so the agent re-parses it with sh -c inside the namespace.
# mpirun does not set HVD_HOSTNAME, and hvd then tells hosts apart by
# gethostname(), which all namespaces share; the agent therefore also gives
# each "host" its own UTS namespace whose host name is the namespace's name,
# as real hosts would have.
if [ "$WITH_MPI" != 1 ] || [ -z "$COLL" ]; then
  echo "SKIP part: --mpi collectives (hvd built without MPI, or no test program given)"
elif ! command -v mpirun > /dev/null 2>&1; then
  echo "SKIP part: --mpi collectives (mpirun not found)"
elif ! command -v unshare > /dev/null 2>&1; then
  echo "SKIP part: --mpi collectives (unshare, for per-host host names, not found)"
else
  cat > "$TMP/netns_rsh" <<'X'
#!/bin/sh
# Remote-shell agent: netns_rsh HOST COMMAND... runs COMMAND (a shell command
# line) in network namespace HOST, with HOST as the host name.
ns=$1
shift
exec ip netns exec "$ns" unshare --uts sh -c 'hostname "$0" && exec sh -c "$1"' "$ns" "$*"
X
  chmod +x "$TMP/netns_rsh"
  mpi_env() {
    env -u HVD_HOSTNAME HVD_CONTROLLER=mpi HVD_CPU_OPERATIONS=mpi \
      OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_btl=self,vader,tcp "$@"
  }
  N=4
  mpi_env "$HVDRUN" --mpi -np 4 -H "$HOST1:2,$HOST2:2" --ssh-command "$TMP/netns_rsh" \
    --network-interface 10.77.0.0/24 "$TOPO" > "$TMP/out" 2> "$TMP/err"
  rc=$?
  [ "$rc" = 0 ] || fail "--mpi topology probe: hvdrun exited with $rc"
  expect_topology mpi 1 <<X
0 0 2 0 2
1 1 2 0 2
2 0 2 1 2
3 1 2 1 2
X
  probe_lines "$TMP/out" > "$TMP/actual"
  diff -u "$TMP/expected" "$TMP/actual" >&2 || fail "--mpi: wrong local/cross ranks"

  mpi_env "$HVDRUN" --mpi -np 4 -H "$HOST1:2,$HOST2:2" --ssh-command "$TMP/netns_rsh" \
    --network-interface 10.77.0.0/24 "$COLL" > "$TMP/out" 2> "$TMP/err"
  rc=$?
  [ "$rc" = 0 ] || fail "--mpi collectives: hvdrun exited with $rc"
  passed=$(grep -c '^\[[0-9]*,[0-3]\]<stdout>:.*\[  PASSED  \]' "$TMP/out")
  [ "$passed" = 4 ] || fail "--mpi collectives: $passed of 4 ranks reported PASSED"
  echo "ok: --mpi collectives across namespaces"
fi

echo "PASS: multihost"
