#!/bin/bash
# A test cluster on this machine: N "nodes", each a network namespace with one veth on a
# Linux bridge, its link shaped by tc tbf at a rate on both ends; a hostfile naming the
# nodes and an Open MPI launch agent that runs a command inside the named node. Root only.
#
#   cluster.sh up   DIR [--nodes N] [--ranks-per-node R] [--rate RATE] [--burst B] [--slurm]
#   cluster.sh down DIR          remove everything DIR's cluster made (idempotent)
#   cluster.sh run  [--nodes N] [--ranks-per-node R] [--rate RATE] [--burst B] [--slurm] -- CMD...
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
#   made       what was made, one a line (netns, link, proc), read by `down`
# and with --slurm, Slurm on the nodes (tools/cluster/README.md):
#   slurm.conf the cluster's Slurm: slurmctld in this namespace at .254, one slurmd a node
#              (NodeName = the namespace), munge auth through DIR/munge/socket
#   slurm.env  `. DIR/slurm.env` before srun, salloc, sbatch or sinfo (SLURM_CONF, and
#              mpirun.args' Open MPI settings for the ranks that srun starts)
#   munge/ slurm/  the daemons' key, socket, state, spool, TmpFS, logs and pid files
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

# --slurm needs munge, the Slurm daemons, its commands and the PMIx plugin that srun starts
# Open MPI's ranks with: names what is missing and the Debian packages that hold it.
need_slurm() {
  local missing=() entry
  for entry in munged:munge mungekey:munge slurmctld:slurmctld slurmd:slurmd \
      srun:slurm-client salloc:slurm-client sbatch:slurm-client sinfo:slurm-client \
      scontrol:slurm-client unshare:util-linux hostname:hostname; do
    command -v "${entry%%:*}" >/dev/null || missing+=("${entry%%:*} (Debian: ${entry#*:})")
  done
  compgen -G '/usr/lib/*/slurm-wlm/mpi_pmix.so' >/dev/null ||
    missing+=("Slurm's PMIx plugin mpi_pmix.so (Debian: slurm-wlm-basic-plugins)")
  [ ${#missing[@]} -eq 0 ] ||
    die "--slurm needs what is not installed: $(printf '%s, ' "${missing[@]}" | sed 's/, $//');" \
    "install with: apt-get install -y --no-install-recommends slurmctld slurmd slurm-client munge"
}

NODES=2
RANKS=1
RATE=1gbit
BURST=128kb
SLURM=0

parse_shape() {
  while [ $# -gt 0 ]; do
    case "$1" in
      --nodes) NODES="${2:?--nodes takes a count}"; shift 2 ;;
      --ranks-per-node) RANKS="${2:?--ranks-per-node takes a count}"; shift 2 ;;
      --rate) RATE="${2:?--rate takes a rate such as 1gbit}"; shift 2 ;;
      --burst) BURST="${2:?--burst takes a size such as 128kb}"; shift 2 ;;
      --slurm) SLURM=1; shift ;;
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

# A free cluster id: no namespace or link named mtc<ID>- yet, its subnet unused.
free_id() {
  local id
  for _ in $(seq 1 200); do
    id=$(printf '%04d' $(( (RANDOM % 9000) + 1000 )))
    # Free: no namespace or link of that id, and no address on its subnet (two ids 250
    # apart share one: two bridges on one subnet would take each other's traffic).
    if ! ip netns list | grep -q "^mtc$id-" && ! ip -o link show | grep -q "mtc$id" &&
      ! ip -o -4 addr show | grep -q " 10\.213\.$((10#$id % 250))\."; then
      echo "$id"; return
    fi
  done
  die "no free cluster id after 200 tries"
}

# The processes of a cluster's Slurm: its daemons carry MESHTUNE_CLUSTER_DAEMON=DIR in
# their environment (slurmstepd inherits it from slurmd), the marker `down` and `left` know
# them by, which no process of anyone else has. marked_pids DIR: those of DIR's cluster;
# marked_pids "": those of any cluster of this script.
marked_pids() {
  local files f
  if [ -n "$1" ]; then
    files=$(grep -lzxF "MESHTUNE_CLUSTER_DAEMON=$1" /proc/[0-9]*/environ 2>/dev/null) || true
  else
    files=$(grep -lzE '^MESHTUNE_CLUSTER_DAEMON=' /proc/[0-9]*/environ 2>/dev/null) || true
  fi
  for f in $files; do f=${f#/proc/}; echo "${f%/environ}"; done
}

# Slurm's commands run against DIR's slurm.conf (the srun or salloc of a job on the
# cluster, started by its user with slurm.env sourced): the jobs' processes here.
client_pids() {
  local files f pid
  files=$(grep -lzxF "SLURM_CONF=$1/slurm.conf" /proc/[0-9]*/environ 2>/dev/null) || true
  for f in $files; do
    pid=${f#/proc/}; pid=${pid%/environ}
    case "$(cat "/proc/$pid/comm" 2>/dev/null)" in
      srun|salloc|sbatch|sattach) echo "$pid" ;;
    esac
  done
}

# Kills what DIR's Slurm runs: the jobs' srun and salloc here, then every daemon of it
# (munged, slurmctld, slurmd, slurmstepd; the last two and the jobs' ranks are inside the
# nodes too, where `down` kills everything anyway), and waits until they are gone, so that
# no daemon writes into the files `down` removes next.
slurm_kill() {
  local dir="$1" pids
  pids="$(client_pids "$dir") $(marked_pids "$dir")"
  [ -n "${pids//[[:space:]]/}" ] || return 0
  kill -9 $pids 2>/dev/null || true
  for _ in $(seq 50); do
    pids=$(marked_pids "$dir")
    [ -n "$pids" ] || break
    kill -9 $pids 2>/dev/null || true
    sleep 0.1
  done
}

down() {
  local dir="$1"
  [ -f "$dir/made" ] || return 0
  # Slurm's processes first (a cluster made with --slurm), then the processes inside the
  # nodes (orted, ranks, slurmstepd, anything a test left), then the namespaces, the links
  # and the files, newest first.
  if grep -q '^proc ' "$dir/made"; then slurm_kill "$dir"; fi
  local what name rest
  tac "$dir/made" | while read -r what name rest; do
    case "$what" in
      proc)  # NAME PID of a daemon (killed above): again, while it still carries DIR's marker
        if grep -qzxF "MESHTUNE_CLUSTER_DAEMON=$dir" "/proc/$rest/environ" 2>/dev/null; then
          kill -9 "$rest" 2>/dev/null || true
        fi ;;
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
  rm -rf "$dir/slurm.conf" "$dir/slurm.env" "$dir/munge" "$dir/slurm"
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

# start_daemon DIR NAME OUT CMD...: CMD in the background, in a session of its own (no
# terminal's signal reaches it, nothing of the caller's is held open), marked as DIR's
# (MESHTUNE_CLUSTER_DAEMON) and recorded in DIR/made as "proc NAME PID"; its stdout and
# stderr go to OUT. Sets DAEMON_PID.
start_daemon() {
  local dir="$1" name="$2" out="$3"; shift 3
  MESHTUNE_CLUSTER_DAEMON="$dir" setsid "$@" </dev/null >"$out" 2>&1 &
  DAEMON_PID=$!
  echo "proc $name $DAEMON_PID" >> "$dir/made"
}

# wait_until SECONDS PID WHAT LOG CMD...: waits until CMD succeeds; dies naming WHAT and the
# end of LOG when process PID ends first or SECONDS pass.
wait_until() {
  local seconds="$1" pid="$2" what="$3" log="$4"; shift 4
  for _ in $(seq $((seconds * 10))); do
    "$@" >/dev/null 2>&1 && return 0
    kill -0 "$pid" 2>/dev/null ||
      die "$what exited as it started: $(tail -n 5 "$log" 2>/dev/null | tr '\n' ' ')"
    sleep 0.1
  done
  die "$what did not come up in $seconds s: $(tail -n 5 "$log" 2>/dev/null | tr '\n' ' ')"
}

# Slurm on the nodes (--slurm): a munged of the cluster's own, slurmctld in this namespace
# (reached at the bridge's address .254, on port 20000 + ID so that clusters side by side
# do not meet; slurmctld binds every address), one slurmd in each node: in the node's
# network namespace (nsenter --net, which keeps this machine's /sys and cgroups: under
# `ip netns exec` slurmd stops on "No filesystem mounted on /sys/fs/cgroup") with a
# hostname of its own, the node's name. Then waits until sinfo shows every node idle.
# Everything the daemons write is under DIR: munge/ (key, socket, log, pid, seed),
# slurm/ctld/ (state, log, pid) and slurm/NODE/ (spool, TmpFS, log, pid).
slurm_up() {
  local dir="$1" id="$2" subnet="$3"
  local ctl="mtc$id-ctl" ctl_addr="${subnet%.0}.254" port=$((20000 + 10#$id))
  local m="$dir/munge" s="$dir/slurm" i node
  mkdir -p "$m" "$s/ctld"
  chmod 755 "$m"  # munged refuses a socket directory others may write to or cannot enter
  mungekey --create --keyfile="$m/key" 2>"$m/mungekey.err" ||
    die "mungekey failed: $(cat "$m/mungekey.err")"
  # In the foreground munged logs to stderr: munge/munged.out.
  start_daemon "$dir" munged "$m/munged.out" munged --foreground --force \
    --key-file="$m/key" --socket="$m/socket" --pid-file="$m/munged.pid" \
    --seed-file="$m/munged.seed"
  wait_until 10 "$DAEMON_PID" munged "$m/munged.out" test -S "$m/socket"

  : > "$s/plugstack.conf"  # no SPANK plugins (not /etc/slurm's)
  for i in $(seq 0 $((NODES - 1))); do
    mkdir -p "$s/mtc$id-n$i/spool" "$s/mtc$id-n$i/tmp"
  done
  # Slurm runs as root here (SlurmUser, SlurmdUser); no cgroups (proctrack/linuxproc,
  # task/none); a node's CPUs are --ranks-per-node, not what slurmd counts (the nodes share
  # this machine's cores); srun starts ranks with PMIx (MpiDefault), which keeps its files
  # in TmpFS, a directory of each node's own (the nodes share /tmp, and one step's files of
  # two nodes would meet there).
  {
    echo "# Slurm of the meshtune test cluster $dir (tools/cluster/cluster.sh up --slurm)."
    echo "ClusterName=mtc$id"
    echo "SlurmctldHost=$ctl($ctl_addr)"
    echo "SlurmctldPort=$port"
    echo "SlurmdPort=6818"
    echo "AuthType=auth/munge"
    echo "CredType=cred/munge"
    echo "AuthInfo=socket=$m/socket"
    echo "SlurmUser=root"
    echo "SlurmdUser=root"
    echo "StateSaveLocation=$s/ctld"
    echo "SlurmctldPidFile=$s/ctld/slurmctld.pid"
    echo "SlurmctldLogFile=$s/ctld/slurmctld.log"
    echo "SlurmdSpoolDir=$s/%n/spool"
    echo "SlurmdPidFile=$s/%n/slurmd.pid"
    echo "SlurmdLogFile=$s/%n/slurmd.log"
    echo "TmpFS=$s/%n/tmp"
    echo "PlugStackConfig=$s/plugstack.conf"
    echo "ProctrackType=proctrack/linuxproc"
    echo "TaskPlugin=task/none"
    echo "JobAcctGatherType=jobacct_gather/none"
    echo "AccountingStorageType=accounting_storage/none"
    echo "JobCompType=jobcomp/none"
    echo "SchedulerType=sched/builtin"
    echo "SelectType=select/cons_tres"
    echo "SelectTypeParameters=CR_CPU"
    echo "SlurmdParameters=config_overrides"
    echo "MpiDefault=pmix"
    echo "ReturnToService=2"
    echo "KillWait=2"
    echo "InactiveLimit=0"
    echo "MailProg=/bin/true"
    for i in $(seq 0 $((NODES - 1))); do
      echo "NodeName=mtc$id-n$i NodeAddr=${subnet%.0}.$((i + 1)) CPUs=$RANKS State=UNKNOWN"
    done
    echo "PartitionName=mtc Nodes=ALL Default=YES MaxTime=INFINITE State=UP"
  } > "$dir/slurm.conf"
  {
    echo "# Slurm of the meshtune test cluster $dir: source this file, then srun, salloc,"
    echo "# sbatch, sinfo. The Open MPI settings are mpirun.args' for the ranks that srun"
    echo "# starts: TCP on the cluster's subnet, idle ranks yielding (tools/cluster/README.md)."
    echo "export SLURM_CONF=$dir/slurm.conf"
    echo "export OMPI_MCA_btl=self,vader,tcp"
    echo "export OMPI_MCA_btl_tcp_if_include=$subnet/24"
    echo "export OMPI_MCA_oob_tcp_if_include=$subnet/24"
    echo "export OMPI_MCA_mpi_yield_when_idle=1"
  } > "$dir/slurm.env"

  export SLURM_CONF="$dir/slurm.conf"
  start_daemon "$dir" slurmctld "$s/ctld/slurmctld.out" \
    unshare --uts sh -c 'hostname "$0" && exec "$@"' "$ctl" slurmctld -D -f "$dir/slurm.conf"
  wait_until 20 "$DAEMON_PID" slurmctld "$s/ctld/slurmctld.log" scontrol ping
  for i in $(seq 0 $((NODES - 1))); do
    node="mtc$id-n$i"
    start_daemon "$dir" slurmd "$s/$node/slurmd.out" \
      nsenter --net="/run/netns/$node" unshare --uts sh -c 'hostname "$0" && exec "$@"' \
      "$node" slurmd -D -N "$node" -f "$dir/slurm.conf"
  done
  # Every node idle: each slurmd has registered with slurmctld.
  local states=""
  for _ in $(seq 300); do
    states=$(sinfo -h -N -o '%N %T' 2>&1) || true
    [ "$(grep -c ' idle$' <<<"$states")" = "$NODES" ] && return 0
    sleep 0.1
  done
  local why="" state
  for i in $(seq 0 $((NODES - 1))); do
    node="mtc$id-n$i"
    state=$(grep "^$node " <<<"$states" | cut -d' ' -f2) || state="not in sinfo"
    [ "$state" = idle ] ||
      why+=" $node $state (its log: $(tail -n 3 "$s/$node/slurmd.log" 2>/dev/null | tr '\n' ' '));"
  done
  die "Slurm's nodes were not all idle after 30 s:$why"
}

up() {
  local dir="$1"
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  # Unix sockets of munged, slurmd and PMIx go in DIR, up to about 65 characters below it,
  # and a socket's path has at most 108 bytes.
  if [ "$SLURM" = 1 ] && [ ${#dir} -gt 40 ]; then
    rmdir "$dir" 2>/dev/null || true
    die "--slurm needs a directory of at most 40 characters (sockets go below it): $dir"
  fi
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
  # command runs in the node's network namespace (nsenter --net keeps this machine's /sys
  # and cgroups, which `ip netns exec` would remount) and in a UTS namespace of its own
  # whose hostname is the node's. The nodes share /tmp, and Open MPI names a daemon's
  # session directory (its PMIx rendezvous, its shared topology) after the hostname: with
  # one hostname, the orteds of a job made and removed one another's directories, and 1 to
  # 3 of 25 jobs across 4 nodes lost a daemon (a segfault in hwloc_shmem_topology_write,
  # "unable to create the desired directory", or mpirun waiting on 3 of 4 daemons).
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
exec nsenter --net="/run/netns/$node" unshare --uts \
  /bin/sh -c 'hostname "$0" && exec /bin/sh -c "$1"' "$node" "$*"
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
  # No binding: each node's daemon sees all of this machine's cores as its own and binds its
  # first rank to core 0, so every node's rank 0 ran on core 0 (a 2-rank GEMM schedule's
  # kernels took 0.041 s where, unbound, they take 0.019 s).
  printf -- '--bind-to\nnone\n' >> "$dir/mpirun.args"
  [ "$SLURM" = 0 ] || slurm_up "$dir" "$id" "$subnet"
  trap - EXIT INT TERM
  echo "$dir"
}

left() {
  local found=0
  if ip netns list | grep -E '^mtc[0-9]{4}-' ; then found=1; fi
  if ip -o link show | awk -F': ' '{print $2}' | cut -d@ -f1 | grep -E '^mtc[0-9]{4}-'; then
    found=1
  fi
  # Daemons of a cluster's Slurm (munged, slurmctld, slurmd, slurmstepd), by their marker.
  local pid dir
  for pid in $(marked_pids ""); do
    dir=$(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | sed -n 's/^MESHTUNE_CLUSTER_DAEMON=//p')
    [ -n "$dir" ] || continue
    echo "process $pid $(cat "/proc/$pid/comm" 2>/dev/null) of $dir"
    found=1
  done
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
    [ "$SLURM" = 0 ] || need_slurm
    up "$dir" ;;
  down)
    need_root
    down "${1:?cluster.sh down DIR}" ;;
  run)
    need_root
    parse_shape "$@"; check_shape
    [ ${#REST[@]} -gt 0 ] || die "run needs a command after --"
    [ "$SLURM" = 0 ] || need_slurm
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
