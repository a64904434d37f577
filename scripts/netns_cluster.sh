#!/bin/sh
# A bandwidth-shaped cluster of N "hosts" on this machine, for benchmarks
# (not tests): each host is a network namespace attached to a switch (a
# bridge in its own namespace) by a veth pair whose two ends are rate-limited
# with tc tbf, i.e. a full-duplex NIC of RATE per host and a non-blocking
# switch. The kernel has no netem, so links model bandwidth, not delay.
# Ranks on the same host talk over loopback / shared memory, unshaped.
#
#   root ns   hvdsc-r  10.213.0.1 ───────────── p0 ┐  (unshaped: launcher,
#   hvdsc-h1  hvdsc0   10.213.0.11 ══RATE══════ p1 ┼─ br0   rendezvous store)
#   hvdsc-h2  hvdsc0   10.213.0.12 ══RATE══════ p2 ┤  (in namespace hvdsc-br)
#   ...                                            ┘
#
# Only namespaces and links named hvdsc* and the addresses 10.213.0.0/24
# are created or removed; nothing else on the machine is touched.
# HVDSC_PREFIX (at most 12 characters) and HVDSC_NET (three octets) choose
# other names and another /24, for a second cluster beside this one.
#
# Usage (as root):
#   netns_cluster.sh up N [RATE]   N hosts (1..32), RATE per host link in tc
#                                  units (default 1gbit; "none": unshaped).
#                                  Fails if already up.
#                                  A watchdog tears the cluster down after
#                                  HVDSC_TTL seconds (default 7200) in any case.
#   netns_cluster.sh down          Kill every process in the namespaces, remove
#                                  them and the root link. Idempotent; also
#                                  cleans what a failed 'up' left behind.
#   netns_cluster.sh run [-t S] CMD [ARGS...]
#                                  Run CMD in the root namespace under a time
#                                  limit (default 600 s), with the variables
#                                  below set; afterwards kill whatever CMD left
#                                  running in the namespaces.
#   netns_cluster.sh status        Hosts, addresses, qdiscs.
#   netns_cluster.sh check         Goodput of one TCP stream, host 1 to host 2.
#   netns_cluster.sh exec HOST CMD [ARGS...]
#                                  Run CMD (argv) on HOST, whose host name is
#                                  then HOST (own UTS namespace). Usable as
#                                  hvdrun --ssh-command "netns_cluster.sh exec".
#   netns_cluster.sh rsh HOST CMDLINE...
#                                  The same, but the words are one shell
#                                  command line (how Open MPI's plm_rsh_agent,
#                                  i.e. hvdrun --mpi --ssh-command, calls ssh).
#
# Variables 'run' exports to CMD:
#   HVDSC_HOSTS    hvdsc-h1,hvdsc-h2,...       HVDSC_N     number of hosts
#   HVDSC_EXEC     "<this script> exec"        HVDSC_RSH   "<this script> rsh"
#   HVDSC_ROOT_IF  hvdsc-r (launcher's link)   HVDSC_IFACE hvdsc0 (hosts' link)
#   HVDSC_SUBNET   10.213.0.0/24               HVDSC_RATE  the link rate
# e.g.
#   netns_cluster.sh up 2 1gbit
#   netns_cluster.sh run -t 300 sh -c 'hvdrun -np 4 -H hvdsc-h1:2,hvdsc-h2:2 \
#       --ssh-command "$HVDSC_EXEC" --network-interface $HVDSC_ROOT_IF \
#       build/bin/hvd_bench --workloads W2'
#   netns_cluster.sh down
set -u

# Tests run their own cluster beside a benchmark's with other names/addresses.
PREFIX=${HVDSC_PREFIX:-hvdsc}
NET=${HVDSC_NET:-10.213.0}
BR_NS=$PREFIX-br
ROOT_IF=$PREFIX-r
HOST_IF=${PREFIX}0
SUBNET=$NET.0/24
STATE=/run/$PREFIX
SELF=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")

die() {
  echo "netns_cluster.sh: $*" >&2
  exit 1
}

hosts() {  # the host namespaces that exist now, one per line, in order
  ip netns list 2> /dev/null | awk '{print $1}' | sed -n "s/^$PREFIX-h\([0-9]*\)\$/\1/p" |
    sort -n | sed "s/^/$PREFIX-h/"
}

kill_in_namespaces() {  # SIGKILL every process inside our namespaces
  for ns in $(hosts) $BR_NS; do
    pids=$(ip netns pids "$ns" 2> /dev/null)
    [ -n "$pids" ] && kill -9 $pids > /dev/null 2>&1
  done
  return 0
}

down() {
  if [ -f "$STATE/watchdog.pid" ]; then
    wd=$(cat "$STATE/watchdog.pid")
    # Only our watchdog: its command line names this script's watchdog mode.
    if [ -n "$wd" ] && tr '\0' ' ' < "/proc/$wd/cmdline" 2> /dev/null | grep -q "netns_cluster.sh watchdog"; then
      kill -- "-$wd" > /dev/null 2>&1  # its group: the shell and its sleep
    fi
  fi
  kill_in_namespaces
  ip link del "$ROOT_IF" > /dev/null 2>&1
  for ns in $(hosts) $BR_NS; do ip netns del "$ns" > /dev/null 2>&1; done
  rm -rf "$STATE"
  left=$(ip netns list 2> /dev/null | awk '{print $1}' | grep "^$PREFIX-")
  [ -z "$left" ] || die "could not remove: $left"
  ! ip link show "$ROOT_IF" > /dev/null 2>&1 || die "could not remove link $ROOT_IF"
  return 0
}

# tbf on one interface: RATE, a bucket of 1 ms at RATE (at least 64 KiB, so a
# full GSO segment passes unsplit) and a queue of 20 ms at RATE. TCP on a
# zero-delay link keeps its window small, so the queue rarely fills.
shape() {  # NS IF RATE
  tc -n "$1" qdisc add dev "$2" root tbf rate "$3" burst "$BURST" latency 20ms
}

# Bytes per second of a tc rate such as 1gbit, 500mbit, 100kbit, 10mbps.
rate_bytes_per_s() {
  echo "$1" | awk '{
    r = tolower($0); n = r + 0; u = r; sub(/^[0-9.]+/, "", u);
    m["bit"]=1/8; m["kbit"]=1e3/8; m["mbit"]=1e6/8; m["gbit"]=1e9/8; m["tbit"]=1e12/8;
    m["bps"]=1; m["kbps"]=1e3; m["mbps"]=1e6; m["gbps"]=1e9;
    if (!(u in m) || n <= 0) { print 0; exit }
    printf "%.0f\n", n * m[u] }'
}

up() {
  n=${1:-}
  RATE=${2:-1gbit}
  case "$n" in '' | *[!0-9]*) die "up: N must be a number of hosts (1..32), got '$n'" ;; esac
  [ "$n" -ge 1 ] && [ "$n" -le 32 ] || die "up: N must be 1..32, got $n"
  if [ "$RATE" != none ]; then
    bps=$(rate_bytes_per_s "$RATE")
    [ "$bps" != 0 ] || die "up: bad rate '$RATE' (e.g. 1gbit, 500mbit, none)"
    BURST=$((bps / 1000))
    [ "$BURST" -ge 65536 ] || BURST=65536
  fi
  [ ${#PREFIX} -le 12 ] || die "up: HVDSC_PREFIX '$PREFIX' is longer than 12 characters"
  ip netns list 2> /dev/null | awk '{print $1}' | grep -q "^$BR_NS\$" &&
    die "up: a cluster is already up (run: $0 down)"
  if ip -o addr show 2> /dev/null | grep -q " $NET\."; then
    die "up: $SUBNET is already in use on this machine"
  fi
  # A failure half way removes everything created so far.
  trap 'echo "netns_cluster.sh: up failed; tearing down" >&2; down; exit 1' EXIT
  set -e
  mkdir -p "$STATE"
  echo "$RATE" > "$STATE/rate"
  ip netns add "$BR_NS"
  ip -n "$BR_NS" link set lo up
  ip -n "$BR_NS" link add br0 type bridge
  ip -n "$BR_NS" link set br0 up
  ip link add "$ROOT_IF" type veth peer name p0 netns "$BR_NS"
  ip addr add "$NET.1/24" dev "$ROOT_IF"
  ip link set "$ROOT_IF" up
  ip -n "$BR_NS" link set p0 master br0 up
  i=1
  while [ "$i" -le "$n" ]; do
    ns=$PREFIX-h$i
    ip netns add "$ns"
    ip -n "$BR_NS" link add "p$i" type veth peer name "$HOST_IF" netns "$ns"
    ip -n "$BR_NS" link set "p$i" master br0 up
    ip -n "$ns" link set lo up
    ip -n "$ns" addr add "$NET.$((10 + i))/24" dev "$HOST_IF"
    ip -n "$ns" link set "$HOST_IF" up
    if [ "$RATE" != none ]; then
      shape "$ns" "$HOST_IF" "$RATE"  # host -> switch
      shape "$BR_NS" "p$i" "$RATE"    # switch -> host
    fi
    i=$((i + 1))
  done
  set +e
  # Every host reaches the launcher (a TCP connect to a closed port there is
  # refused at once when the path works, and times out when it does not).
  if command -v bash > /dev/null 2>&1; then
    for ns in $(hosts); do
      out=$(ip netns exec "$ns" timeout 3 bash -c "exec 3<>/dev/tcp/$NET.1/9" 2>&1)
      case "$out" in *refused*) ;; *) die "up: $ns cannot reach $NET.1 ($out)" ;; esac
    done
  fi
  setsid sh "$SELF" watchdog "${HVDSC_TTL:-7200}" < /dev/null > /dev/null 2>&1 &
  echo $! > "$STATE/watchdog.pid"
  trap - EXIT
  echo "netns_cluster.sh: $n hosts up ($(hosts | tr '\n' ' ')), $RATE per host link," \
    "subnet $SUBNET, launcher on $ROOT_IF ($NET.1); down in ${HVDSC_TTL:-7200} s at the latest"
}

status() {
  if ! ip netns list 2> /dev/null | awk '{print $1}' | grep -q "^$BR_NS\$"; then
    echo "down"
    return 1
  fi
  echo "up: rate $(cat "$STATE/rate" 2> /dev/null), launcher $ROOT_IF $NET.1"
  for ns in $(hosts); do
    addr=$(ip -n "$ns" -o -4 addr show "$HOST_IF" | awk '{print $4}')
    q=$(tc -n "$ns" qdisc show dev "$HOST_IF" | head -1)
    echo "$ns $HOST_IF $addr  [$q]  processes: $(ip netns pids "$ns" | wc -l)"
  done
}

host_exists() {
  hosts | grep -qx "$1" || die "no such host '$1' (hosts: $(hosts | tr '\n' ' '))"
}

cmd=${1:-}
[ -n "$cmd" ] && shift
case "$cmd" in
up)
  [ "$(id -u)" = 0 ] || die "needs root"
  up "$@"
  ;;
down)
  [ "$(id -u)" = 0 ] || die "needs root"
  down
  ;;
status) status ;;
check)
  # Goodput of one TCP stream from the first host to the second, 3 s.
  status > /dev/null || die "check: the cluster is not up"
  set -- $(hosts)
  [ $# -ge 2 ] || die "check: needs two hosts"
  py=/usr/bin/python3
  ip netns exec "$2" timeout 10 "$py" -c '
import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 5201)); s.listen(1); c, _ = s.accept(); n = 0; t0 = time.time()
while True:
    b = c.recv(1 << 20)
    if not b: break
    n += len(b)
dt = time.time() - t0
print("%.1f MB/s (%.0f MB in %.2f s)" % (n / 1e6 / dt, n / 1e6, dt))' &
  sleep 0.5
  ip netns exec "$1" timeout 10 "$py" -c '
import socket, time
c = socket.create_connection(("'"$NET"'.12", 5201)); buf = b"x" * (1 << 20); t0 = time.time()
while time.time() - t0 < 3: c.sendall(buf)
c.close()'
  wait
  ;;
exec)
  [ $# -ge 2 ] || die "usage: exec HOST CMD [ARGS...]"
  host=$1
  shift
  host_exists "$host"
  exec ip netns exec "$host" unshare --uts sh -c 'hostname "$0" && exec "$@"' "$host" "$@"
  ;;
rsh)
  [ $# -ge 2 ] || die "usage: rsh HOST CMDLINE..."
  host=$1
  shift
  host_exists "$host"
  exec ip netns exec "$host" unshare --uts sh -c 'hostname "$0" && exec sh -c "$1"' "$host" "$*"
  ;;
run)
  limit=600
  if [ "${1:-}" = -t ]; then
    limit=${2:-}
    shift 2 || die "run: -t needs seconds"
  fi
  case "$limit" in '' | *[!0-9]*) die "run: bad time limit '$limit'" ;; esac
  [ $# -ge 1 ] || die "usage: run [-t SECONDS] CMD [ARGS...]"
  status > /dev/null || die "run: the cluster is not up (run: $0 up N [RATE])"
  HVDSC_HOSTS=$(hosts | paste -sd, -)
  HVDSC_N=$(hosts | wc -l)
  HVDSC_EXEC="$SELF exec"
  HVDSC_RSH="$SELF rsh"
  HVDSC_ROOT_IF=$ROOT_IF
  HVDSC_IFACE=$HOST_IF
  HVDSC_SUBNET=$SUBNET
  HVDSC_RATE=$(cat "$STATE/rate")
  export HVDSC_HOSTS HVDSC_N HVDSC_EXEC HVDSC_RSH HVDSC_ROOT_IF HVDSC_IFACE HVDSC_SUBNET HVDSC_RATE
  timeout -k 10 "$limit" "$@"
  rc=$?
  [ "$rc" = 124 ] && echo "netns_cluster.sh: '$*' ran past $limit s and was stopped" >&2
  kill_in_namespaces
  exit "$rc"
  ;;
watchdog)
  # Internal: started by 'up'; tears the cluster down after $1 seconds.
  sleep "${1:-7200}"
  rm -f "$STATE/watchdog.pid"
  down
  ;;
*)
  sed -n '2,/^set -u/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
  exit 2
  ;;
esac
