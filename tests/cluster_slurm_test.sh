#!/usr/bin/env bash
# meshtune under Slurm on a test cluster (tools/cluster/cluster.sh up --slurm): two nodes,
# each a network namespace, their links shaped to 1 Gbit/s, a munged and slurmctld of the
# cluster's own and one slurmd a node. Checks, in order:
# 1. `tune --launcher srun` inside `salloc -N 2` gives a measured, verified winner, stored
#    in the user's database, and its ranks' messages crossed the shaped links;
# 2. `meshtune batch` in a job submitted with `sbatch --wait` (the request names a profile
#    whose cluster is srun) writes its winner into the user's database;
# 3. `down` leaves no namespace, link or file of the cluster and no munged, slurmctld,
#    slurmd or slurmstepd of it.
# Root only (network namespaces). Without Slurm or munge it fails with what
# `cluster.sh up --slurm` says is missing (the Debian packages; tools/deps.sh installs them).
set -euo pipefail

cluster=tools/cluster/cluster.sh
meshtune="$PWD/cli/meshtune"  # absolute: the batch job runs it from the node
fail() { echo "cluster_slurm_test: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || fail "needs root to make network namespaces, a bridge and tc links (uid $(id -u))"

tmp="${TEST_TMPDIR:-$(mktemp -d)}"
export HOME="$tmp/home" MESHTUNE_HOME="$tmp/meshtune" XDG_CACHE_HOME="$tmp/cache"
export OPENBLAS_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$HOME"

# What clusters of others hold now: what this test's cluster leaves is what is new and
# names it (its id or its directory), so a cluster someone else makes meanwhile is not.
before=$("$cluster" left || true)

# A short directory of its own: Unix sockets of munged, slurmd and PMIx go below it, and
# $TEST_TMPDIR is too long for their 108 bytes.
dir=$(mktemp -d /tmp/mtc-slurm-XXXXXX)
rmdir "$dir"
trap '"$cluster" down "$dir"' EXIT
"$cluster" up "$dir" --nodes 2 --ranks-per-node 1 --rate 1gbit --slurm >/dev/null \
  2>"$tmp/up.err" || fail "cluster.sh up --slurm failed: $(cat "$tmp/up.err")"
id=$(head -1 "$dir/nodes" | cut -d- -f1)  # mtcNNNN
# shellcheck disable=SC1091
. "$dir/slurm.env"
sinfo -h -N -o '%N %T' >"$tmp/sinfo" && [ "$(grep -c ' idle$' "$tmp/sinfo")" = 2 ] ||
  fail "the cluster's Slurm does not have two idle nodes: $(cat "$tmp/sinfo")"

# Bytes that left the second node through its shaped link.
sent() {
  nsenter --net="/run/netns/$id-n1" tc -s qdisc show dev eth0 |
    sed -n 's/^ *Sent \([0-9]*\) bytes.*/\1/p' | head -1
}

# --- 1. tune --launcher srun inside an allocation of both nodes ---------------------------
db="$tmp/tune.db"
problem=(--expr 'C[m,n] += A[m,k] * B[k,n]' --extents m=32,n=32,k=4096)
sent0=$(sent)
salloc -N 2 --ntasks-per-node=1 --time=5 "$meshtune" tune "${problem[@]}" --ranks 2 \
  --launcher srun --no-calibrate --top-k 2 --reps 3 --warmup 1 --db "$db" --json \
  >"$tmp/tune.json" 2>"$tmp/tune.err" ||
  fail "tune --launcher srun in salloc failed: $(cat "$tmp/tune.err")"
sent1=$(sent)
python3 - "$tmp/tune.json" <<'PY' || fail "tune's answer: $(cat "$tmp/tune.json")"
import json, sys
r = json.load(open(sys.argv[1]))
rec = r["record"]
assert r["stored"] and int(rec["id"]) == 1, "not stored as record 1"
assert rec.get("timing") == "measured", rec.get("timing")
assert rec.get("measured_s", 0) > 0, "no measured time"
ok = [m for m in r.get("measurements", []) + r.get("library", []) if m.get("verified")]
assert ok, "no verified measurement"
assert any(abs(m["measured_s"] - rec["measured_s"]) < 1e-12 for m in ok), (rec, ok)
PY
python3 - "$db" <<'PY' || fail "the tune's record is not in $db"
import sqlite3, sys
n = sqlite3.connect(sys.argv[1]).execute("select count(*) from records").fetchone()[0]
assert n == 1, n
PY
# A's and B's shards (32x4096 and 4096x32 f32, 512 KiB each) cross between the nodes: at
# least 256 KiB left the second node, through the tbf of its link.
[ $((sent1 - sent0)) -ge 262144 ] ||
  fail "the tune's ranks sent $((sent1 - sent0)) bytes across the link: not on two nodes?"

# --- 1b. a run that hangs past --timeout: its srun step ends, no rank is left ------------
# meshtune kills the launcher's process group with SIGTERM first, on which srun cancels
# its step; then the ranks by the job file on their command lines.
salloc -N 2 --ntasks-per-node=1 --time=5 sh -c '
  "$0" run --record 1 --db "$1" --launcher srun --inject-fault hang --timeout 4 --json \
    >"$2/hang.json" 2>"$2/hang.err"
  echo $? >"$2/hang.status"
  for _ in $(seq 50); do
    [ -z "$(squeue -h -s -j "$SLURM_JOB_ID" -o %i)" ] && break
    sleep 0.1
  done
  squeue -h -s -j "$SLURM_JOB_ID" -o %i >"$2/hang.steps"' "$meshtune" "$db" "$tmp" \
  2>"$tmp/hang.salloc" || fail "salloc of the hanging run failed: $(cat "$tmp/hang.salloc")"
[ "$(cat "$tmp/hang.status")" != 0 ] && grep -q "timed out after 4 s" "$tmp/hang.json" ||
  fail "a hanging run did not time out ($(cat "$tmp/hang.status")): $(cat "$tmp/hang.json" "$tmp/hang.err")"
[ ! -s "$tmp/hang.steps" ] || fail "the hanging run's srun step outlived it: $(cat "$tmp/hang.steps")"
for node in $(cut -d" " -f1 "$dir/nodes"); do
  # Only slurmd is left in a node.
  left_in_node=$(ip netns pids "$node" | xargs -r ps -o comm= -p | grep -vx slurmd || true)
  [ -z "$left_in_node" ] || fail "the hanging run left on $node: $left_in_node"
done

# --- 2. meshtune batch in a job of sbatch ----------------------------------------------
# The request names a profile whose cluster is srun: the batch job's runs go through srun
# inside the job's allocation. Numbers no machine beats (the physics guard refuses times
# below what they allow).
python3 - "$MESHTUNE_HOME/profiles/slurm.json" <<'PY'
import json, os, sys
os.makedirs(os.path.dirname(sys.argv[1]), exist_ok=True)
json.dump({"name": "slurm", "ranks": 2, "alpha_s": 1e-7, "beta_s_per_byte": 1e-11,
           "alpha_coll_s": 1e-7, "beta_coll_s_per_byte": 1e-11, "gamma_s_per_flop": 1e-13,
           "dtype": "f32", "cores": 2, "ranks_per_node": 1,
           "inter_node": {"node_ranks": 1, "alpha_s": 1e-7, "beta_s_per_byte": 1e-11,
                          "source": "given"},
           "cluster": {"launcher": "srun"}},
          open(sys.argv[1], "w"))
PY
printf '%s\n' '{"problem": {"expr": "C[m,n] += A[m,k] * B[k,n]", "extents": "m=32,n=32,k=4096"}, "ranks": 2, "profile": "slurm", "top_k": 1}' \
  >"$tmp/requests.jsonl"
bdb="$tmp/batch.db"
printf '#!/bin/sh\nexec "%s" batch --db "%s" "%s"\n' "$meshtune" "$bdb" "$tmp/requests.jsonl" \
  >"$tmp/job.sh"
sbatch --wait -N 2 --ntasks-per-node=1 --time=5 -D "$tmp" -o "$tmp/batch.out" "$tmp/job.sh" \
  >"$tmp/sbatch.out" 2>&1 ||
  fail "the batch job failed: $(cat "$tmp/sbatch.out") $(cat "$tmp/batch.out" 2>/dev/null)"
python3 - "$tmp/batch.out" "$bdb" <<'PY' || fail "the batch job's records: $(cat "$tmp/batch.out")"
import json, sqlite3, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
assert len(lines) == 1 and "result" in lines[0], lines
r = lines[0]["result"]
assert r["stored"] and r["record"].get("timing") == "measured", r["record"]
assert any(m.get("verified") for m in r.get("measurements", [])), "no verified measurement"
rows = sqlite3.connect(sys.argv[2]).execute("select id from records").fetchall()
assert [str(x[0]) for x in rows] == [r["record"]["id"]], rows
PY

# --- 3. down -----------------------------------------------------------------------------
"$cluster" down "$dir"
trap - EXIT
now=$("$cluster" left || true)
new=$(comm -13 <(sort <<<"$before") <(sort <<<"$now") | grep -F -e "$id-" -e "$dir" || true)
[ -z "$new" ] || fail "down left: $new"
# Not a zombie (a killed daemon's end is reaped by init a moment later): running.
for _ in $(seq 20); do
  alive=$(ps -eo stat=,pid=,args= | awk '$1 !~ /^Z/' | grep -F "$dir" | grep -v -e awk -e grep || true)
  [ -n "$alive" ] || break
  sleep 0.1
done
[ -z "$alive" ] || fail "processes of the cluster outlived it: $alive"
[ ! -e "$dir" ] || fail "down left $dir: $(ls -R "$dir")"
echo "cluster_slurm_test: ok"
