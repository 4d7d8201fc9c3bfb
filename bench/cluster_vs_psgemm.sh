#!/usr/bin/env bash
# The tuner on a test cluster (tools/cluster/cluster.sh: NODES network namespaces of
# RANKS_PER_NODE ranks, every node's link shaped to RATE) against ScaLAPACK PSGEMM and the
# machine's limits.
# It brings the cluster up, calibrates a profile on it (`meshtune calibrate --quick --ranks
# NODES --hostfile ...`: the node and the link between nodes), then for each shape tunes
# C[m,n] += A[m,k] * B[k,n] (f32) on it and times the pick against PSGEMM at its best grid
# and block size and one process of OpenBLAS on every core (//bench:tuned_vs_psgemm, one
# mpirun job across the nodes) RUNS times. Then it tunes each of PROGRAMS (statements that
# are no GEMM, programs of several) on the cluster once, and takes the cluster down however
# it ends.
#
#   bash bench/cluster_vs_psgemm.sh [M,N,K ...]
#       default shapes: 1024,1024,1024 256,256,32768 8192,256,256
#   NODES=4 RATE=1gbit RUNS=3 REPS=3 bash bench/cluster_vs_psgemm.sh ...
#   NODES=2 RANKS_PER_NODE=2 MESH=node=2,core=2 bash bench/cluster_vs_psgemm.sh ...
#       R ranks a node (calibrate --node-ranks R: the link within a node and between
#       nodes); MESH: every tune on that mesh (default: --ranks NODES*R --allow-idle-ranks)
#   PROGRAMS='name|expr|extents' a line (default: an MTTKRP and the two-GEMM MLP; "" for none)
#
# The GEMM table per shape, medians over the runs of each job's medians: the tune's answer
# (its fastest schedule, or PSGEMM at a grid and block size when that measured faster beyond
# the noise) over the best PSGEMM of the same jobs (the sweep's fastest configuration
# measured again, alternating with the answer's when that is PSGEMM: the fastest of a sweep
# is biased low); the fastest schedule (its family, mesh and time), the best PSGEMM,
# OpenBLAS on every core (the compute limit), the communication lower bound
# (TuneResult.lower_bound_words, search/lower_bound.h, sent at the link's shaped rate) and
# the calibrated model's prediction of the schedule against its time. The programs' table
# is the tune's own: its answer, the fastest schedule's median and spread over its rounds,
# the library's chain where the program is of matmuls (the tune's vs_library, paired
# rounds), the compute limit (the program's multiply-adds at the GEMM rate OpenBLAS reached
# on every core in the jobs above), the lower bound and the prediction. The first lines
# compare the calibrated links with the shaping. Root only.
set -euo pipefail
cd "$(dirname "$0")/.."

nodes="${NODES:-4}"
per_node="${RANKS_PER_NODE:-1}"
ranks=$((nodes * per_node))
mesh="${MESH:-}"
if [ -n "$mesh" ]; then where=(--mesh "$mesh"); else where=(--ranks "$ranks" --allow-idle-ranks); fi
rate="${RATE:-1gbit}"
runs="${RUNS:-3}"
reps="${REPS:-3}"
shapes=("$@")
[ ${#shapes[@]} -gt 0 ] || shapes=(1024,1024,1024 256,256,32768 8192,256,256)
default_programs='mttkrp|O[i,l] += B[i,j,k] * C[j,l] * D[k,l]|i=1024,j=32,k=32,l=32
mlp|H[b,f] = X[b,d] * W1[d,f]; Y[b,e] = H[b,f] * W2[f,e]|b=1024,d=512,f=2048,e=512'
programs="${PROGRAMS-$default_programs}"

export OPENBLAS_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
bazel build -c opt //cli:meshtune //runtime:meshtune_worker //bench:tuned_vs_psgemm
meshtune=bazel-bin/cli/meshtune

work="$(mktemp -d)"
export MESHTUNE_HOME="$work/home"
cluster="$work/cluster"
trap 'tools/cluster/cluster.sh down "$cluster"; [ -n "${KEEP:-}" ] && cp -r "$work" "$KEEP"; rm -rf "$work"' EXIT
# The shaped rate in bytes per second (0 for "none"), for the lower bound's time.
rate_bytes=$(python3 -c '
import re, sys
m = re.fullmatch(r"(\d+(?:\.\d+)?)([kmg]?)bit", sys.argv[1])
print(float(m.group(1)) * {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}[m.group(2)] / 8 if m else 0)' "$rate")
tools/cluster/cluster.sh up "$cluster" --nodes "$nodes" --ranks-per-node "$per_node" --rate "$rate" \
  >/dev/null
mpirun_args=(--hostfile "$cluster/hostfile")
launcher_args=()
while read -r arg; do
  mpirun_args+=("$arg")
  launcher_args+=("--launcher-arg=$arg")
done <"$cluster/mpirun.args"

start=$(date +%s)
"$meshtune" calibrate --name cluster --quick --ranks "$ranks" --hostfile "$cluster/hostfile" \
  --node-ranks "$per_node" "${launcher_args[@]}" >"$work/calibrate.txt"
echo "calibrated on the cluster in $(($(date +%s) - start)) s"
python3 - "$MESHTUNE_HOME/profiles/cluster.json" "$rate_bytes" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
link = p["inter_node"]
rate = float(sys.argv[2])
fitted = 1 / link["beta_s_per_byte"]
print("link between nodes: alpha %.1f us, %.1f MB/s (shaped: %.1f MB/s, %+.1f%%)"
      % (link["alpha_s"] * 1e6, fitted / 1e6, rate / 1e6, 100 * (fitted / rate - 1) if rate else 0))
print("within a node: alpha %.1f us, %.1f MB/s; GEMM %.1f GFLOP/s a rank (%d ranks on %d cores)"
      % (p["alpha_s"] * 1e6, 1 / p["beta_s_per_byte"] / 1e6, 1e-9 / p["gamma_s_per_flop"],
         p.get("ranks_per_node", 0), p.get("cores", 0)))
PY

for shape in "${shapes[@]}"; do
  IFS=, read -r m n k <<<"$shape"
  echo "=== m=$m n=$n k=$k on $nodes nodes at $rate"
  "$meshtune" tune --expr 'C[m,n] += A[m,k] * B[k,n]' --extents "m=$m,n=$n,k=$k" \
    "${where[@]}" --profile cluster --top-k 4 --reps 6 --no-db --json \
    >"$work/tune.json" || { cat "$work/tune.json"; exit 1; }
  python3 - "$work/tune.json" "$work/best" "$m $n $k" >>"$work/tunes" <<'PY'
import json, sys
# A meshtune.v1.TuneResult in protobuf's JSON mapping (64-bit integers are strings).
r = json.load(open(sys.argv[1]))
best = r["record"]  # the answer; its trace is the fastest schedule's when the answer is PSGEMM
open(sys.argv[2] + ".trace", "w").write(best["trace"]["text"])
open(sys.argv[2] + ".mesh", "w").write(best["mesh"])
lib = best.get("library")
answer = "NB=%d,%dx%d" % (lib["nb"], lib["prow"], lib["pcol"]) if lib else "schedule"
family = next((m["family"] for m in r["measurements"] if m["trace"]["text"] == best["trace"]["text"]
               and m["mesh"] == best["mesh"]), best["mesh"]).replace(" ", "_")
print(sys.argv[3], best["mesh"], best["predicted_s"], r.get("lower_bound_words", 0), answer, family)
sys.stderr.write("tuner: %.1f s, %d measured; answer %s; best schedule %s predicted %.4f s\n"
                 % (r["seconds"], len(r["measurements"]), answer, family, best["predicted_s"]))
PY
  answer=$(tail -1 "$work/tunes" | cut -d' ' -f7)
  answer_flag=()
  [ "$answer" = schedule ] || answer_flag=(--answer "$answer")
  for run in $(seq "$runs"); do
    mpirun -n "$ranks" "${mpirun_args[@]}" -x OPENBLAS_NUM_THREADS \
      bazel-bin/bench/tuned_vs_psgemm --m "$m" --n "$n" --k "$k" \
      --mesh "$(cat "$work/best.mesh")" --trace "$work/best.trace" --reps "$reps" \
      "${answer_flag[@]}" >"$work/run.txt"
    grep '^summary:' "$work/run.txt" | sed "s/^summary:/$m $n $k/" | tee -a "$work/summaries"
  done
done

echo "=== medians over $runs runs per shape ($nodes nodes of $per_node ranks, $rate links, f32; each run a median of $reps)"
python3 - "$work/tunes" "$work/summaries" "$rate_bytes" "$work/gemm_rate" <<'PY'
import re, statistics, sys
tunes = {}
for line in open(sys.argv[1]):
    m, n, k, mesh, predicted, words, answer, family = line.split()
    tunes[(m, n, k)] = (mesh, float(predicted), float(words), answer, family.replace("_", " "))
rows = {}
for line in open(sys.argv[2]):
    f = line.split()
    rows.setdefault(tuple(f[:3]), []).append(dict(zip(f[3::2], f[4::2])))
rate = float(sys.argv[3])
print("| shape | answer | answer / best PSGEMM | best schedule | its time (spread) | best PSGEMM "
      "| OpenBLAS every core | comm lower bound | predicted | predicted / measured |")
print("|---|---|---|---|---|---|---|---|---|---|")
rates = []  # OpenBLAS's GEMM rate on every core, flop/s, per job
for key, runs in rows.items():
    mesh, predicted, words, answer, family = tunes[key]
    med = lambda name: statistics.median(float(r[name]) for r in runs)
    t = [float(r["tuned"]) for r in runs]
    tuned, ps, ob = statistics.median(t), med("best_psgemm"), med("openblas2")
    rates += [2 * int(key[0]) * int(key[1]) * int(key[2]) / float(r["openblas2"]) for r in runs]
    configs = " / ".join(sorted(set(r["psgemm_config"] for r in runs)))
    # The answer's ratio: the schedule's time over the best PSGEMM's, or, for PSGEMM at a
    # configuration, the median of its rounds' ratios to the best in the same jobs.
    if answer == "schedule":
        label = "schedule"
        ratios = [float(r["tuned"]) / float(r["best_psgemm"]) for r in runs]
    else:
        label = "PSGEMM " + answer
        ratios = [float(r["answer_ratio"]) for r in runs]
    print("| %s x %s x %s | %s | %.2f (%.2f-%.2f) | %s | %.4f s (%.4f-%.4f) | %.4f s (%s) | "
          "%.4f s | %.4f s | %.4f s | %.2f |"
          % (*key, label, statistics.median(ratios), min(ratios), max(ratios), family, tuned,
             min(t), max(t), ps, configs, ob, words * 4 / rate if rate else 0, predicted, predicted / tuned))
open(sys.argv[4], "w").write("%g\n" % statistics.median(rates))
PY

[ -n "$programs" ] || exit 0
echo "=== programs, each tuned once on $nodes nodes at $rate (the tune's rounds)"
: >"$work/programs"
while IFS= read -r entry; do
  [ -n "$entry" ] || continue
  IFS='|' read -r name expr extents <<<"$entry"
  "$meshtune" tune --expr "$expr" --extents "$extents" "${where[@]}" \
    --profile cluster --top-k 3 --reps 6 --no-db --json </dev/null >"$work/$name.json" ||
    { cat "$work/$name.json"; exit 1; }
  echo "$name|$expr|$extents|$work/$name.json" >>"$work/programs"
done <<<"$programs"
python3 - "$work/programs" "$work/gemm_rate" "$rate_bytes" <<'PY'
import json, math, re, sys
gemm_rate = float(open(sys.argv[2]).read())
rate = float(sys.argv[3])
print("| program | answer | answer / library's chain (interval) | fastest schedule | its median "
      "(q1-q3) | best library | compute limit | comm lower bound | predicted | predicted / measured |")
print("|---|---|---|---|---|---|---|---|---|---|")
for line in open(sys.argv[1]):
    name, expr, extents, path = line.rstrip("\n").split("|")
    r = json.load(open(path))
    ext = {k: int(v) for k, v in (e.split("=") for e in extents.split(","))}
    # One multiply-add a point of each statement's iteration space (an MTTKRP as the GEMM it
    # is once the factors' Khatri-Rao product is formed), at OpenBLAS's rate on every core.
    flops = sum(2 * math.prod(ext[i] for i in set(re.findall(r"[a-z]\w*", re.sub(r"\b[A-Z]\w*", "", st))))
                for st in expr.split(";"))
    if "program" in r:  # several statements: the best joint schedule of the program
        best = r["program"]["best"]
        family, mesh = best["label"], best["mesh"]
    else:
        best = min((m for m in r["measurements"] if m.get("verified")), key=lambda m: m["measured_s"])
        family, mesh = best["family"], best["mesh"]
    sample, predicted = best["sample"], best["predicted_s"]
    lib = [l["measured_s"] for l in r.get("library", []) if l.get("verified")]
    vs = r.get("vs_library")
    vs_text = ("%.2f (%.2f-%.2f)" % (vs, r.get("vs_library_ci_low", vs), r.get("vs_library_ci_high", vs))
               if vs is not None else "- (no library form)")
    answer = r["record"].get("library")
    answer = ("PSGEMM %dx%d NB %d" % (answer["prow"], answer["pcol"], answer["nb"]) if answer
              else "schedule")
    print("| %s | %s | %s | %s on %s | %.4f s (%.4f-%.4f) | %s | %.4f s | %.4f s | %.4f s | %.2f |"
          % (name, answer, vs_text, family, mesh, sample["median_s"], sample["q1_s"], sample["q3_s"],
             "%.4f s" % min(lib) if lib else "-", flops / gemm_rate,
             r.get("lower_bound_words", 0) * 4 / rate if rate else 0, predicted, predicted / sample["median_s"]))
PY
