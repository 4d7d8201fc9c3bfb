#!/usr/bin/env bash
# Faults across the nodes of a test cluster (tools/cluster/cluster.sh: two network
# namespaces, their link shaped to 1 Gbit/s) while `meshtune tune` measures. Checks, in order:
# 0. a first tune stores record 1 (the record a fault must not lose);
# 1. a rank killed mid-measurement (kill -9 of meshtune_worker inside node 1): the job of the
#    candidates side by side fails, then candidate #1 alone is killed too; #1 fails with
#    Open MPI's account of the rank, #2 verifies and wins, stored as record 2;
# 2. a link taken down mid-run (node 1's veth, down for the rest of the tune): the job hangs
#    (TCP does not notice), the candidate fails at its timeout (what is left of --budget-s),
#    the tune exits 1 within the budget, and nothing is left on the node it lost.
# After each: the exit status, the failed candidate's reason, the time, no process left on
# any node (meshtune_worker, orted), `cluster.sh left` as before, records 1 and 2 in the db.
# (A node that never starts: cluster_test step 3.) Root only: as another user it fails and
# says so.
set -euo pipefail

cluster=tools/cluster/cluster.sh
meshtune=cli/meshtune
fail() { echo "cluster_fault_test: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || fail "needs root to make network namespaces, a bridge and tc links (uid $(id -u))"

tmp="${TEST_TMPDIR:-$(mktemp -d)}"
export HOME="$tmp/home" MESHTUNE_HOME="$tmp/meshtune" XDG_CACHE_HOME="$tmp/cache" TMPDIR="$tmp"
export OPENBLAS_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$HOME"

before=$("$cluster" left || true)
dir="$tmp/c"
tune_pid=""
cleanup() {
  [ -z "$tune_pid" ] || kill -9 "$tune_pid" 2>/dev/null || true
  "$cluster" down "$dir"
}
trap cleanup EXIT
"$cluster" up "$dir" --nodes 2 --ranks-per-node 1 --rate 1gbit >/dev/null
launch=(--hostfile "$dir/hostfile")
while read -r arg; do launch+=("--launcher-arg=$arg"); done <"$dir/mpirun.args"
node1=$(sed -n 2p "$dir/nodes" | cut -d" " -f1)
link1=$(grep -E '^link mtc[0-9]{4}-v1$' "$dir/made" | cut -d" " -f2)
id=${link1%-v1}  # mtcNNNN: the names of this cluster
[ -n "$link1" ] || fail "no host-side link of node 1 in $dir/made: $(cat "$dir/made")"
db="$tmp/tune.db"
# No ScaLAPACK runs beside (not of matmul form): the candidates alone are measured.
expr='y[m] += A[m,k] * x[k]'

# The processes of this test's jobs still alive (zombies aside), one "PID ARGS" a line: any
# inside a node, an orted of this cluster's agent, a rank of a job file under $tmp.
job_processes() {
  local pids p
  pids=$( (for ns in $(cut -d" " -f1 "$dir/nodes"); do ip netns pids "$ns"; done
    pgrep -f -- "$dir/agent" || true
    pgrep -f -- "$tmp/meshtune-run-" || true) | sort -u)
  for p in $pids; do
    [ "$(ps -o stat= -p "$p" 2>/dev/null | cut -c1)" = Z ] && continue
    ps -o pid=,args= -p "$p" 2>/dev/null | cut -c1-200 || true
  done
}
# Fails unless the jobs' processes are gone within 3 s (a killed process takes a moment).
check_clean() {
  local left=""
  for _ in $(seq 30); do
    left=$(job_processes)
    [ -z "$left" ] && break
    sleep 0.1
  done
  [ -z "$left" ] || fail "$1 left processes: $left"
}
# Fails when `cluster.sh left` lists anything new of this test's cluster (another engineer's
# cluster may come and go meanwhile: its lines are not this test's).
check_left() {
  local new
  new=$(comm -13 <(echo "$before" | sort) <(("$cluster" left || true) | sort) | grep -F "$id-" || true)
  [ -z "$new" ] || fail "$1 left: $new"
}
check_records() {  # N: the db holds records 1..N
  python3 - "$db" "$1" <<'PY' || fail "$2: the db lost a record"
import sqlite3, sys
ids = [r[0] for r in sqlite3.connect(sys.argv[1]).execute("select id from records order by id")]
assert ids == list(range(1, int(sys.argv[2]) + 1)), ids
PY
}
# The pid of a meshtune_worker inside node 1 whose job file is not in $1 (a space-separated
# list of job files), and its job file; "" when there is none.
new_worker() {
  local p job
  for p in $(ip netns pids "$node1"); do
    [ "$(cat "/proc/$p/comm" 2>/dev/null)" = meshtune_worker ] || continue
    job=$(tr '\0' '\n' <"/proc/$p/cmdline" 2>/dev/null | grep -m1 'job.pb$' || true)
    [ -n "$job" ] && [[ " $1 " != *" $job "* ]] && { echo "$p $job"; return; }
  done
  true
}

# --- 0. a record before the faults --------------------------------------------------------
"$meshtune" tune --expr "$expr" --extents m=64,k=128 --ranks 2 "${launch[@]}" --no-calibrate \
  --top-k 1 --reps 3 --warmup 1 --db "$db" --json >"$tmp/first.json" 2>"$tmp/first.err" ||
  fail "the first tune failed: $(cat "$tmp/first.err")"
check_records 1 "the first tune"

# --- 1. a rank killed mid-measurement -----------------------------------------------------
# Rounds of at least 1 ms a candidate: a job of a few seconds, long enough to be killed in.
start=$(date +%s.%N)
"$meshtune" tune --expr "$expr" --extents m=64,k=256 --ranks 2 "${launch[@]}" --no-calibrate \
  --top-k 2 --reps 1500 --max-rounds 1500 --warmup 1 --budget-s 60 --db "$db" --json \
  >"$tmp/kill.json" 2>"$tmp/kill.err" &
tune_pid=$!
killed=""  # the job files whose rank was killed: the side-by-side job's, then #1's alone
for _ in $(seq 300); do
  read -r victim job <<<"$(new_worker "$killed")" || true
  if [ -n "${victim:-}" ]; then
    sleep 0.5  # mid-measurement: past MPI_Init and the warm-up
    kill -9 "$victim" 2>/dev/null || true
    killed="$killed $job"
    [ "$(wc -w <<<"$killed")" -ge 2 ] && break
  fi
  kill -0 "$tune_pid" 2>/dev/null || break
  sleep 0.05
done
status=0
wait "$tune_pid" || status=$?
tune_pid=""
took=$(echo "$(date +%s.%N) - $start" | bc)
[ "$(wc -w <<<"$killed")" = 2 ] || fail "killed ranks of ${killed:-no} job (2 wanted): $(cat "$tmp/kill.err")"
[ "$status" = 0 ] || fail "the tune with a rank killed gave $status: $(cat "$tmp/kill.err")"
python3 - "$tmp/kill.json" "$node1" <<'PY' || fail "the tune with a rank killed (above)"
import json, re, sys
r = json.load(open(sys.argv[1]))
m = r["measurements"]
assert len(m) == 2, [x.get("error") for x in m]
want = (r"the job failed \(exit status 137\) without a result: mpirun noticed that process "
        r"rank 1 with PID [0-9]+ on node " + re.escape(sys.argv[2]) +
        r" exited on signal 9 \(Killed\)\.")
assert re.fullmatch(want, m[0].get("error", "")), m[0].get("error")
assert m[1].get("verified") and m[1].get("measured_s", 0) > 0, m[1].get("error")
assert r["stored"] and int(r["record"]["id"]) == 2, (r["stored"], r["record"].get("id"))
PY
awk -v t="$took" 'BEGIN { exit !(t < 45) }' || fail "the tune with a rank killed took $took s"
check_clean "a rank killed"
check_records 2 "a rank killed"

# --- 2. a link taken down mid-run ---------------------------------------------------------
budget=12
start=$(date +%s.%N)
"$meshtune" tune --expr "$expr" --extents m=64,k=512 --ranks 2 "${launch[@]}" --no-calibrate \
  --top-k 1 --reps 100000 --max-rounds 100000 --warmup 1 --budget-s "$budget" --db "$db" --json \
  >"$tmp/link.json" 2>"$tmp/link.err" &
tune_pid=$!
down=""
for _ in $(seq 200); do
  read -r victim job <<<"$(new_worker "")" || true
  if [ -n "${victim:-}" ]; then
    sleep 0.5
    ip link set "$link1" down
    down=1
    break
  fi
  kill -0 "$tune_pid" 2>/dev/null || break
  sleep 0.05
done
status=0
wait "$tune_pid" || status=$?
tune_pid=""
took=$(echo "$(date +%s.%N) - $start" | bc)
[ -n "$down" ] || fail "no rank ran on $node1 to take its link down under: $(cat "$tmp/link.err")"
[ "$status" = 1 ] || fail "the tune with a link down gave $status: $(cat "$tmp/link.err")"
grep -qF "meshtune: no measured candidate verified" "$tmp/link.err" ||
  fail "the tune with a link down does not say that nothing verified: $(cat "$tmp/link.err")"
python3 - "$tmp/link.json" <<'PY' || fail "the tune with a link down (above)"
import json, re, sys
r = json.load(open(sys.argv[1]))
m = r["measurements"]
assert len(m) == 1 and not m[0].get("verified"), [x.get("error") for x in m]
assert re.fullmatch(r"timed out after [0-9.]+ s; the job was killed", m[0].get("error", "")), \
    m[0].get("error")
PY
awk -v t="$took" -v b="$budget" 'BEGIN { exit !(t < b + 8) }' ||
  fail "the tune with a link down took $took s (budget $budget s)"
# While the link is still down: nothing of the job is left on the node it lost.
check_clean "a link down"
ip link set "$link1" up
check_records 2 "a link down"

"$cluster" down "$dir"
trap - EXIT
check_clean "the cluster"
check_left "the cluster"
echo "cluster_fault_test: ok"
