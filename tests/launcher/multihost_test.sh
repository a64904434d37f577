#!/bin/sh
# Multi-host hvdrun test on one machine: two network namespaces play the
# hosts, joined with the launcher (root namespace) through a bridge that
# lives in a third namespace. Only 10.77.0.0/24, created here, is used.
#
#   root ns  hvdNNNNNr 10.77.0.1 ──┐
#   HOST1    hvd0      10.77.0.11 ─┼─ br0 (in namespace BR)
#   HOST2    hvd0      10.77.0.12 ─┘
#
# hvdrun -np 4 -H HOST1:2,HOST2:2 --ssh-command 'ip netns exec' starts the
# ranks inside the namespaces; they must reach the rendezvous store on
# 10.77.0.1 and see the right local/cross ranks.
#
#   multihost_test.sh HVDRUN KV_RANK_PROBE
# Exit 77 (ctest SKIP) when namespaces cannot be created.
set -u
HVDRUN=$1
PROBE=$2

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

ID=$(($$ % 100000))
BR=hvdmh$ID-br
HOST1=hvdmh$ID-h1
HOST2=hvdmh$ID-h2
ROOT_IF=hvd${ID}r
TMP=$(mktemp -d)

cleanup() {
  ip link del "$ROOT_IF" > /dev/null 2>&1
  for ns in "$HOST1" "$HOST2" "$BR"; do ip netns del "$ns" > /dev/null 2>&1; done
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

ip netns add "$BR" 2> "$TMP/err" || skip "cannot create network namespaces: $(cat "$TMP/err")"
set -e
ip netns add "$HOST1"
ip netns add "$HOST2"
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
for ns in "$HOST1" "$HOST2"; do
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

# TODO(rendezvous owner): once tests/mp's collective program and the Gloo
# backend exist, run real collectives here with Gloo (HVD_GLOO_IFACE=hvd0)
# and with --mpi (plm_rsh_agent = ip netns exec).

echo "PASS: multihost"
