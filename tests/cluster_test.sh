#!/usr/bin/env bash
# meshtune on a test cluster (tools/cluster/cluster.sh): two nodes, each a network namespace,
# their link shaped to 1 Gbit/s. Checks, in order:
# 1. teardown: a command that fails, and one killed with a process still running inside a
#    node, leave no namespace, link, process or file; `down` twice is harmless;
# 2. `tune` across the nodes gives a measured, verified winner, stored, and `run --record`
#    of it verifies across them;
# 3. a fault: a node of the hostfile that never starts fails the candidate with a reason,
#    the tune stops within two minutes with exit status 1, and nothing is left on any node;
# 4. a profile that names the cluster is where `tune --profile` and the daemon's Tune
#    measure: verified on this cluster, failing on a hostfile with a node that never starts.
# Root only (network namespaces): as another user it fails and says so.
set -euo pipefail

cluster=tools/cluster/cluster.sh
meshtune=cli/meshtune
fail() { echo "cluster_test: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || fail "needs root to make network namespaces, a bridge and tc links (uid $(id -u))"

tmp="${TEST_TMPDIR:-$(mktemp -d)}"
export HOME="$tmp/home" MESHTUNE_HOME="$tmp/meshtune" XDG_CACHE_HOME="$tmp/cache"
export OPENBLAS_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$HOME"

# What clusters of others hold now (a cluster of this test's is gone when this is all).
before=$("$cluster" left || true)
check_left() {
  local now
  now=$("$cluster" left || true)
  [ "$now" = "$before" ] || fail "$1 left: $(comm -13 <(echo "$before") <(echo "$now"))"
}

# --- 1. teardown ------------------------------------------------------------------------
status=0
"$cluster" run --nodes 2 -- sh -c 'test -s "$MESHTUNE_CLUSTER/hostfile" && exit 3' || status=$?
[ "$status" = 3 ] || fail "run of a command that exits 3 gave $status"
check_left "a failed command"

# Killed while a process runs inside a node (an orted would be one).
"$cluster" run --nodes 2 -- sh -c '
  node=$(head -1 "$MESHTUNE_CLUSTER/nodes" | cut -d" " -f1)
  "$MESHTUNE_CLUSTER/agent" "$node" "exec sleep 301.5" &
  echo "$MESHTUNE_CLUSTER" > "'"$tmp"'/dir"
  wait' &
runner=$!
for _ in $(seq 100); do
  [ -s "$tmp/dir" ] && pgrep -f "^sleep 301.5" >/dev/null && break
  sleep 0.1
done
pgrep -f "^sleep 301.5" >/dev/null || fail "the process inside the node did not start"
dir=$(cat "$tmp/dir")
kill -TERM "$runner"
status=0
wait "$runner" || status=$?
[ "$status" = 130 ] || fail "run killed with TERM gave $status, not 130"
check_left "a killed run"
! pgrep -f "^sleep 301.5" >/dev/null || fail "a process inside a node outlived its cluster"
[ ! -e "$dir" ] || fail "a killed run left its directory $dir: $(ls "$dir")"

"$cluster" up "$tmp/twice" --nodes 1 --rate none >/dev/null
"$cluster" down "$tmp/twice"
"$cluster" down "$tmp/twice" || fail "a second down failed"
[ ! -e "$tmp/twice" ] || fail "down left $tmp/twice"

# --- 2. tune and run across two nodes at 1 Gbit/s ------------------------------------------
dir="$tmp/c"
trap '"$cluster" down "$dir"' EXIT
"$cluster" up "$dir" --nodes 2 --ranks-per-node 1 --rate 1gbit >/dev/null
# Each node has a hostname of its own (Open MPI names its session directories in the
# shared /tmp after it; two daemons of one job under one name took each other's).
while read -r node _; do
  [ "$("$dir/agent" "$node" hostname)" = "$node" ] || fail "node $node's hostname is not $node"
done <"$dir/nodes"
launch=(--hostfile "$dir/hostfile")
while read -r arg; do launch+=("--launcher-arg=$arg"); done <"$dir/mpirun.args"
db="$tmp/tune.db"
problem=(--expr 'C[m,n] += A[m,k] * B[k,n]' --extents m=32,n=32,k=4096)
"$meshtune" tune "${problem[@]}" --ranks 2 "${launch[@]}" --no-calibrate --top-k 2 --reps 3 \
  --warmup 1 --db "$db" --json >"$tmp/tune.json" 2>"$tmp/tune.err" ||
  fail "tune across the nodes failed: $(cat "$tmp/tune.err")"
python3 - "$tmp/tune.json" <<'PY' || fail "tune's answer: $(cat "$tmp/tune.json")"
import json, sys
r = json.load(open(sys.argv[1]))
rec = r["record"]
assert r["stored"] and int(rec["id"]) == 1, "not stored as record 1"
assert rec.get("timing") == "measured", rec.get("timing")
assert rec.get("measured_s", 0) > 0, "no measured time"
ok = [m for m in r.get("measurements", []) + r.get("library", []) if m.get("verified")]
assert ok, "no verified measurement"
# The answer's time is one of the verified runs' of the tune (a schedule's or ScaLAPACK's):
# a reported time is a measured time.
assert any(abs(m["measured_s"] - rec["measured_s"]) < 1e-12 for m in ok), (rec, ok)
PY
"$meshtune" run --record 1 --db "$db" "${launch[@]}" --reps 2 --timeout 120 --json \
  >"$tmp/run.json" 2>"$tmp/run.err" || fail "run --record 1 failed: $(cat "$tmp/run.err")"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["verified"] and r["checked"] == "measured" and r["median_s"] > 0, r' \
  "$tmp/run.json" || fail "run did not verify: $(cat "$tmp/run.json")"

# --- 3. a node that never starts ---------------------------------------------------------
node0=$(head -1 "$dir/hostfile" | cut -d" " -f1)
printf '%s slots=1\nmtc-gone slots=1\n' "$node0" >"$tmp/gone.hosts"
start=$(date +%s)
status=0
"$meshtune" tune "${problem[@]}" --ranks 2 --hostfile "$tmp/gone.hosts" \
  "${launch[@]:2}" --no-calibrate --top-k 1 --reps 1 --warmup 0 --db "$db" \
  >"$tmp/gone.out" 2>"$tmp/gone.err" || status=$?
took=$(($(date +%s) - start))
[ "$status" = 1 ] || fail "a tune with a node that never starts gave $status: $(cat "$tmp/gone.err")"
grep -qF "failed: the job failed (exit status 255) without a result: Open MPI could not start \
its daemon on every node (the launcher said: agent: no node mtc-gone)" "$tmp/gone.out" ||
  fail "the candidate's failure does not name the node: $(cat "$tmp/gone.out")"
grep -qF "meshtune: no measured candidate verified" "$tmp/gone.err" ||
  fail "the tune does not say that nothing verified: $(cat "$tmp/gone.err")"
[ "$took" -le 120 ] || fail "the failed tune took $took s"
for ns in $(cut -d" " -f1 "$dir/nodes"); do
  [ -z "$(ip netns pids "$ns")" ] || fail "processes left on $ns: $(ip netns pids "$ns" | xargs ps -o args= -p)"
done
! pgrep -x orted >/dev/null || fail "an orted outlived its job: $(pgrep -a -x orted)"
python3 - "$db" <<'PY' || fail "the failed tune changed record 1"
import sqlite3, sys
n = sqlite3.connect(sys.argv[1]).execute("select count(*) from records").fetchone()[0]
assert n == 1, n
PY

# --- 4. the cluster named once, in a profile: tune and the daemon launch there ------------
# Two profiles of the same numbers: "here" on this cluster, "gone" on the hostfile above.
profile() {  # NAME HOSTFILE
  python3 - "$MESHTUNE_HOME/profiles/$1.json" "$1" "$2" "$dir/mpirun.args" <<'PY'
import json, os, sys
path, name, hosts, args = sys.argv[1:]
os.makedirs(os.path.dirname(path), exist_ok=True)
# Numbers no machine beats (the physics guard refuses times below what they allow).
json.dump({"name": name, "ranks": 2, "alpha_s": 1e-7, "beta_s_per_byte": 1e-11,
           "alpha_coll_s": 1e-7, "beta_coll_s_per_byte": 1e-11, "gamma_s_per_flop": 1e-13,
           "dtype": "f32", "cores": 2, "ranks_per_node": 1,
           "inter_node": {"node_ranks": 1, "alpha_s": 1e-7, "beta_s_per_byte": 1e-11,
                          "source": "given"},
           "cluster": {"hostfile": hosts, "launcher_args": open(args).read().split()}},
          open(path, "w"))
PY
}
profile here "$dir/hostfile"
profile gone "$tmp/gone.hosts"
status=0
"$meshtune" tune "${problem[@]}" --ranks 2 --profile gone --top-k 1 --reps 1 --warmup 0 \
  --no-db >"$tmp/pgone.out" 2>"$tmp/pgone.err" || status=$?
[ "$status" = 1 ] && grep -qF "(the launcher said: agent: no node mtc-gone)" "$tmp/pgone.out" ||
  fail "a tune with --profile gone did not launch on its cluster ($status): $(cat "$tmp/pgone.out")"

daemon/meshtuned --listen 127.0.0.1:0 --db "$tmp/daemon.db" --no-calibrate \
  >"$tmp/daemon.out" 2>"$tmp/daemon.err" &
daemon=$!
trap 'kill "$daemon" 2>/dev/null; "$cluster" down "$dir"' EXIT
for _ in $(seq 300); do grep -q "^meshtuned listening on " "$tmp/daemon.out" && break; sleep 0.1; done
address=$(sed -n 's/^meshtuned listening on //p' "$tmp/daemon.out")
[ -n "$address" ] || fail "meshtuned did not start: $(cat "$tmp/daemon.err")"
"$meshtune" tune "${problem[@]}" --ranks 2 --profile here --top-k 1 --server "$address" --json \
  >"$tmp/dhere.json" 2>"$tmp/dhere.err" || fail "the daemon's tune failed: $(cat "$tmp/dhere.err")"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); ok=[m for m in r["measurements"] if m["verified"]]; assert ok and r["stored"], r' \
  "$tmp/dhere.json" || fail "the daemon's tune across the nodes: $(cat "$tmp/dhere.json")"
status=0
"$meshtune" tune "${problem[@]}" --ranks 2 --profile gone --top-k 1 --server "$address" --json \
  >"$tmp/dgone.json" 2>"$tmp/dgone.err" || status=$?
grep -qF "(the launcher said: agent: no node mtc-gone)" "$tmp/dgone.json" ||
  fail "the daemon's tune with --profile gone did not launch on its cluster ($status): $(cat "$tmp/dgone.json")"
kill -TERM "$daemon"
wait "$daemon" || true

"$cluster" down "$dir"
trap - EXIT
check_left "the cluster"
echo "cluster_test: ok"
