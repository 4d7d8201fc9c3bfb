#!/bin/bash
# A test cluster on this machine: N "nodes", each a network namespace with one veth on a
# Linux bridge, its link shaped by tc tbf at a rate on both ends; a hostfile naming the
# nodes and an Open MPI launch agent that runs a command inside the named node. Root only.
#
#   cluster.sh up   DIR [--nodes N] [--ranks-per-node R] [--rate RATE] [--burst B]
#   cluster.sh down DIR          remove everything DIR's cluster made (idempotent)
#   cluster.sh run  [--nodes N] [--ranks-per-node R] [--rate RATE] [--burst B] -- CMD...
#                                up in a fresh directory, CMD with $MESHTUNE_CLUSTER set to
#                                it, then down, however CMD ends (its exit status is run's)
#   cluster.sh left              what any cluster of this script left behind; exit 1 if any
#
# `up` writes into DIR:
#   hostfile   one line a node: "NODE slots=R"
#   agent      the launch agent: `agent NODE CMD...` runs CMD in NODE's network namespace
#   mpirun.args  Open MPI arguments, one a line, that run a job across the nodes:
#              the agent, TCP between the nodes' addresses, no tree spawn, direct
#              routing, idle ranks yielding (see tools/cluster/README.md)
#   nodes      one line a node: "NODE ADDRESS"
#   made       what was made, one a line (netns, link, dir), read by `down`
# Names: namespaces and links start with "mtc<ID>" (ID: 4 digits, free on this machine), so
# clusters of several tests side by side do not meet; subnet 10.213.ID%250.0/24 holds the
# nodes at .1, .2, ... and this machine's root namespace (where mpirun runs) at .254, on
# the bridge alone: a job's traffic stays on the links this script made. RATE as tc writes it (1gbit, 200mbit;
# "none": not shaped). A failure of `up` removes what it made before it exits.
set -euo pipefail

die() { echo "cluster.sh: $*" >&2; exit 2; }

usage() { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

need_root() {
  if [ "$(id -u)" != 0 ]; then
    die "a test cluster needs root (network namespaces, a bridge and tc); this is uid $(id -u)"
  fi
  for tool in ip tc nsenter; do
    command -v "$tool" >/dev/null || die "$tool is not installed (Debian: iproute2, util-linux)"
  done
}

NODES=2
RANKS=1
RATE=1gbit
BURST=128kb

parse_shape() {
  while [ $# -gt 0 ]; do
    case "$1" in
      --nodes) NODES="${2:?--nodes takes a count}"; shift 2 ;;
      --ranks-per-node) RANKS="${2:?--ranks-per-node takes a count}"; shift 2 ;;
      --rate) RATE="${2:?--rate takes a rate such as 1gbit}"; shift 2 ;;
      --burst) BURST="${2:?--burst takes a size such as 128kb}"; shift 2 ;;
      --) shift; REST=("$@"); return ;;
      *) die "unknown argument '$1'" ;;
    esac
  done
  REST=()
}

check_shape() {
  [[ "$NODES" =~ ^[0-9]+$ ]] && [ "$NODES" -ge 1 ] && [ "$NODES" -le 16 ] ||
    die "--nodes must be 1 to 16 (got '$NODES')"
  [[ "$RANKS" =~ ^[0-9]+$ ]] && [ "$RANKS" -ge 1 ] && [ "$RANKS" -le 64 ] ||
    die "--ranks-per-node must be 1 to 64 (got '$RANKS')"
  [ "$RATE" = none ] || [[ "$RATE" =~ ^[0-9]+(\.[0-9]+)?[kmg]?(bit|bps)$ ]] ||
    die "--rate must be a tc rate such as 1gbit or 200mbit, or none (got '$RATE')"
}

# A free cluster id: no namespace or link named mtc<ID>- yet.
free_id() {
  local id
  for _ in $(seq 1 200); do
    id=$(printf '%04d' $(( (RANDOM % 9000) + 1000 )))
    if ! ip netns list | grep -q "^mtc$id-" && ! ip -o link show | grep -q "mtc$id"; then
      echo "$id"; return
    fi
  done
  die "no free cluster id after 200 tries"
}

down() {
  local dir="$1"
  [ -f "$dir/made" ] || return 0
  # Processes inside the nodes first (orted, ranks, anything a test left), then the
  # namespaces, the links and the files, newest first.
  local what name
  tac "$dir/made" | while read -r what name; do
    case "$what" in
      netns)
        if [ -e "/run/netns/$name" ]; then
          local pids
          pids=$(ip netns pids "$name" 2>/dev/null || true)
          [ -z "$pids" ] || kill -9 $pids 2>/dev/null || true
          ip netns del "$name" 2>/dev/null || true
        fi ;;
      link) ip link del "$name" 2>/dev/null || true ;;
    esac
  done
  rm -f "$dir/made" "$dir/hostfile" "$dir/agent" "$dir/mpirun.args" "$dir/nodes"
  rmdir "$dir" 2>/dev/null || true
}

shape() {  # shape NETNS_OR_EMPTY DEV
  [ "$RATE" = none ] && return 0
  local ns="$1" dev="$2"
  if [ -n "$ns" ]; then
    ip netns exec "$ns" tc qdisc add dev "$dev" root tbf rate "$RATE" burst "$BURST" latency 50ms
  else
    tc qdisc add dev "$dev" root tbf rate "$RATE" burst "$BURST" latency 50ms
  fi
}

up() {
  local dir="$1"
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  [ ! -f "$dir/made" ] || die "$dir already holds a cluster (cluster.sh down $dir first)"
  : > "$dir/made"
  trap 'status=$?; if [ $status -ne 0 ]; then down "'"$dir"'"; fi; exit $status' EXIT
  trap 'exit 130' INT TERM
  local id; id=$(free_id)
  local subnet="10.213.$((10#$id % 250)).0"
  local br="mtc$id-br"
  ip link add "$br" type bridge
  echo "link $br" >> "$dir/made"
  ip addr add "${subnet%.0}.254/24" dev "$br"
  ip link set "$br" up
  : > "$dir/hostfile"; : > "$dir/nodes"
  local i
  for i in $(seq 0 $((NODES - 1))); do
    local ns="mtc$id-n$i" host="mtc$id-v$i" addr="${subnet%.0}.$((i + 1))"
    ip netns add "$ns"
    echo "netns $ns" >> "$dir/made"
    ip link add "$host" type veth peer name eth0 netns "$ns"
    echo "link $host" >> "$dir/made"
    ip link set "$host" master "$br" up
    ip netns exec "$ns" ip link set lo up
    ip netns exec "$ns" ip addr add "$addr/24" dev eth0
    ip netns exec "$ns" ip link set eth0 up
    shape "$ns" eth0
    shape "" "$host"
    echo "$ns slots=$RANKS" >> "$dir/hostfile"
    echo "$ns $addr" >> "$dir/nodes"
  done
  # The agent: Open MPI calls it as `agent [options] NODE CMD...` (like ssh). The
  # command runs in the node's network namespace only (nsenter --net keeps this machine's
  # /sys and cgroups, which `ip netns exec` would remount).
  cat > "$dir/agent" <<'EOF'
#!/bin/sh
# Launch agent of a meshtune test cluster: agent [-x] [-o OPT]... NODE CMD...
while [ $# -gt 0 ]; do
  case "$1" in
    -o|-l|-p) shift 2 ;;
    -*) shift ;;
    *) break ;;
  esac
done
node="$1"; shift
[ -e "/run/netns/$node" ] || { echo "agent: no node $node" >&2; exit 255; }
exec nsenter --net="/run/netns/$node" /bin/sh -c "$*"
EOF
  chmod +x "$dir/agent"
  cat > "$dir/mpirun.args" <<EOF
--mca
plm_rsh_agent
$dir/agent
--mca
plm_rsh_no_tree_spawn
1
--mca
routed
direct
--mca
oob_tcp_if_include
$subnet/24
--mca
btl_tcp_if_include
$subnet/24
--mca
btl
self,vader,tcp
EOF
  # The nodes share this machine's cores, and a message between two namespaces is
  # delivered by the kernel's softirq work, which runs in ksoftirqd when ranks hold every
  # core. A rank that busy-polls for a message keeps it from running until a scheduler tick:
  # each message then took 4 ms (a barrier of 2 ranks on 2 cores: 7.9 ms, unshaped) against
  # 56 us when idle ranks yield. Open MPI yields only where it sees a node oversubscribed.
  printf -- '--mca\nmpi_yield_when_idle\n1\n' >> "$dir/mpirun.args"
  trap - EXIT INT TERM
  echo "$dir"
}

left() {
  local found=0
  if ip netns list | grep -E '^mtc[0-9]{4}-' ; then found=1; fi
  if ip -o link show | awk -F': ' '{print $2}' | cut -d@ -f1 | grep -E '^mtc[0-9]{4}-'; then
    found=1
  fi
  return $found
}

cmd="${1:-}"
[ -n "$cmd" ] || usage
shift
case "$cmd" in
  up)
    need_root
    dir="${1:?cluster.sh up DIR}"; shift
    parse_shape "$@"; check_shape
    up "$dir" ;;
  down)
    need_root
    down "${1:?cluster.sh down DIR}" ;;
  run)
    need_root
    parse_shape "$@"; check_shape
    [ ${#REST[@]} -gt 0 ] || die "run needs a command after --"
    dir=$(mktemp -d /tmp/meshtune-cluster-XXXXXX)
    rmdir "$dir"
    child=""
    trap 'down "'"$dir"'"' EXIT
    # A signal stops CMD, then the EXIT trap takes the cluster down. CMD runs in the
    # background so that the signal is taken at once, not when CMD ends.
    trap '[ -z "$child" ] || kill -TERM "$child" 2>/dev/null || true; exit 130' INT TERM
    ( up "$dir" >/dev/null )
    status=0
    MESHTUNE_CLUSTER="$dir" "${REST[@]}" <&0 &
    child=$!
    wait "$child" || status=$?
    child=""
    exit $status ;;
  left) left ;;
  *) usage ;;
esac
