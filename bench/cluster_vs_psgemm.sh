#!/usr/bin/env bash
# The tuner on a test cluster (tools/cluster/cluster.sh: NODES network namespaces, one rank
# each, every node's link shaped to RATE) against ScaLAPACK PSGEMM and the machine's limits.
# It brings the cluster up, calibrates a profile on it (`meshtune calibrate --quick --ranks
# NODES --hostfile ...`: the node and the link between nodes), then for each shape tunes
# C[m,n] += A[m,k] * B[k,n] (f32) on it and times the pick against PSGEMM at its best grid
# and block size and one process of OpenBLAS on every core (//bench:tuned_vs_psgemm, one
# mpirun job across the nodes) RUNS times, and takes the cluster down however it ends.
#
#   bash bench/cluster_vs_psgemm.sh [M,N,K ...]
#       default shapes: 1024,1024,1024 256,256,32768 8192,256,256
#   NODES=4 RATE=1gbit RUNS=3 REPS=3 bash bench/cluster_vs_psgemm.sh ...
#
# The table per shape, medians over the runs of each job's medians: the tune's answer (its
# fastest schedule, or PSGEMM at a grid and block size when that measured faster beyond the
# noise) over the best PSGEMM of the same jobs; the fastest schedule (its family, mesh and
# time), the best PSGEMM, OpenBLAS on every core (the compute limit), the communication
# lower bound (TuneResult.lower_bound_words, search/lower_bound.h, sent at the link's shaped
# rate) and the calibrated model's prediction of the schedule against its time. The first
# lines compare the calibrated link with the shaping. Root only.
set -euo pipefail
cd "$(dirname "$0")/.."

nodes="${NODES:-4}"
rate="${RATE:-1gbit}"
runs="${RUNS:-3}"
reps="${REPS:-3}"
shapes=("$@")
[ ${#shapes[@]} -gt 0 ] || shapes=(1024,1024,1024 256,256,32768 8192,256,256)

export OPENBLAS_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
bazel build -c opt //cli:meshtune //runtime:meshtune_worker //bench:tuned_vs_psgemm
meshtune=bazel-bin/cli/meshtune

work="$(mktemp -d)"
export MESHTUNE_HOME="$work/home"
cluster="$work/cluster"
trap 'tools/cluster/cluster.sh down "$cluster"; rm -rf "$work"' EXIT
tools/cluster/cluster.sh up "$cluster" --nodes "$nodes" --ranks-per-node 1 --rate "$rate" \
  >/dev/null
mpirun_args=(--hostfile "$cluster/hostfile")
launcher_args=()
while read -r arg; do
  mpirun_args+=("$arg")
  launcher_args+=("--launcher-arg=$arg")
done <"$cluster/mpirun.args"

start=$(date +%s)
"$meshtune" calibrate --name cluster --quick --ranks "$nodes" --hostfile "$cluster/hostfile" \
  --node-ranks 1 "${launcher_args[@]}" >"$work/calibrate.txt"
echo "calibrated on the cluster in $(($(date +%s) - start)) s"
python3 - "$MESHTUNE_HOME/profiles/cluster.json" "$rate" <<'PY'
import json, re, sys
p = json.load(open(sys.argv[1]))
link = p["inter_node"]
m = re.fullmatch(r"(\d+(?:\.\d+)?)([kmg]?)bit", sys.argv[2])
rate = float(m.group(1)) * {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}[m.group(2)] / 8 if m else 0
fitted = 1 / link["beta_s_per_byte"]
print("link between nodes: alpha %.1f us, %.1f MB/s (shaped: %.1f MB/s, %+.1f%%)"
      % (link["alpha_s"] * 1e6, fitted / 1e6, rate / 1e6, 100 * (fitted / rate - 1) if rate else 0))
PY

for shape in "${shapes[@]}"; do
  IFS=, read -r m n k <<<"$shape"
  echo "=== m=$m n=$n k=$k on $nodes nodes at $rate"
  "$meshtune" tune --expr 'C[m,n] += A[m,k] * B[k,n]' --extents "m=$m,n=$n,k=$k" \
    --ranks "$nodes" --allow-idle-ranks --profile cluster --top-k 4 --reps 6 --no-db --json \
    >"$work/tune.json" || { cat "$work/tune.json"; exit 1; }
  python3 - "$work/tune.json" "$work/best" "$m $n $k" >>"$work/tunes" <<'PY'
import json, sys
# A meshtune.v1.TuneResult in protobuf's JSON mapping (64-bit integers are strings).
r = json.load(open(sys.argv[1]))
best = r["record"]  # the answer; its trace is the fastest schedule's when the answer is PSGEMM
open(sys.argv[2] + ".trace", "w").write(best["trace"]["text"])
open(sys.argv[2] + ".mesh", "w").write(best["mesh"])
lib = best.get("library")
answer = "PSGEMM:NB=%d,grid=%dx%d" % (lib["nb"], lib["prow"], lib["pcol"]) if lib else "schedule"
family = next((m["family"] for m in r["measurements"] if m["trace"]["text"] == best["trace"]["text"]
               and m["mesh"] == best["mesh"]), best["mesh"]).replace(" ", "_")
print(sys.argv[3], best["mesh"], best["predicted_s"], r.get("lower_bound_words", 0), answer, family)
sys.stderr.write("tuner: %.1f s, %d measured; answer %s; best schedule %s predicted %.4f s\n"
                 % (r["seconds"], len(r["measurements"]), answer, family, best["predicted_s"]))
PY
  for run in $(seq "$runs"); do
    mpirun -n "$nodes" "${mpirun_args[@]}" -x OPENBLAS_NUM_THREADS --bind-to none \
      bazel-bin/bench/tuned_vs_psgemm --m "$m" --n "$n" --k "$k" \
      --mesh "$(cat "$work/best.mesh")" --trace "$work/best.trace" --reps "$reps" >"$work/run.txt"
    # Every PSGEMM configuration's time, for the answer when it is the library.
    configs=$(sed -n 's/^PSGEMM NB=\([0-9]*\) grid \([0-9x]*\) *\([0-9.]*\) .*/PSGEMM:NB=\1,grid=\2 \3/p' \
      "$work/run.txt" | tr '\n' ' ')
    grep '^summary:' "$work/run.txt" | sed "s/^summary:/$m $n $k/; s/\$/ $configs/" |
      tee -a "$work/summaries"
  done
done

echo "=== medians over $runs runs per shape ($nodes nodes of 1 rank, $rate links, f32; each run a median of $reps)"
python3 - "$work/tunes" "$work/summaries" "$rate" <<'PY'
import re, statistics, sys
tunes = {}
for line in open(sys.argv[1]):
    m, n, k, mesh, predicted, words, answer, family = line.split()
    tunes[(m, n, k)] = (mesh, float(predicted), float(words), answer, family.replace("_", " "))
rows = {}
for line in open(sys.argv[2]):
    f = line.split()
    rows.setdefault(tuple(f[:3]), []).append(dict(zip(f[3::2], f[4::2])))
g = re.fullmatch(r"(\d+(?:\.\d+)?)([kmg]?)bit", sys.argv[3])
rate = float(g.group(1)) * {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}[g.group(2)] / 8
print("| shape | answer | answer / best PSGEMM | best schedule | its time (spread) | best PSGEMM "
      "| OpenBLAS every core | comm lower bound | predicted | predicted / measured |")
print("|---|---|---|---|---|---|---|---|---|---|")
for key, runs in rows.items():
    mesh, predicted, words, answer, family = tunes[key]
    med = lambda name: statistics.median(float(r[name]) for r in runs)
    t = [float(r["tuned"]) for r in runs]
    tuned, ps, ob = statistics.median(t), med("best_psgemm"), med("openblas2")
    configs = " / ".join(sorted(set(r["psgemm_config"] for r in runs)))
    # The answer's time: the schedule's, or PSGEMM's at the answer's configuration (in the
    # same jobs); "-" when the benchmark's sweep lacks that configuration.
    if answer == "schedule":
        label, mine = "schedule", tuned
    else:
        label = answer.replace("PSGEMM:", "PSGEMM ")
        mine = med(answer) if all(answer in r for r in runs) else None
    ratio = "%.2f" % (mine / ps) if mine else "-"
    print("| %s x %s x %s | %s | %s | %s | %.4f s (%.4f-%.4f) | %.4f s (%s) | %.4f s | %.4f s | "
          "%.4f s | %.2f |" % (*key, label, ratio, family, tuned, min(t), max(t), ps, configs, ob,
                               words * 4 / rate, predicted, predicted / tuned))
PY
