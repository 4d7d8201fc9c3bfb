#!/usr/bin/env bash
# Model-only tunes at scale: `meshtune tune --model-only --no-db --no-calibrate` of
# C[m,n] += A[m,k] * B[k,n] at 8192^3 on every mesh of P ranks (built-in machine numbers, no
# database), RUNS times per rank count, the rank counts interleaved (round 1 of every P, then
# round 2, ...) so that a busy spell of the machine falls on all of them. Prints, per P, the
# wall time's median with its min and max, the peak resident memory (the largest of the
# runs), the strategy with the work it did (points of the space, legal points, "~" when
# estimated; candidates costed, points bounded out), the chosen mesh, its predicted time and
# its words per rank against the lower bound; and the load average before and after, since the machine may be
# shared.
#
#   bash bench/model_only_scale.sh                       # RUNS=5, RANKS="1024 4096 65536"
#   RUNS=3 RANKS="16384 65536" bash bench/model_only_scale.sh
set -euo pipefail
cd "$(dirname "$0")/.."

runs="${RUNS:-5}"
read -r -a ranks <<<"${RANKS:-1024 4096 65536}"
bazel build -c opt //cli:meshtune >/dev/null 2>&1 || bazel build -c opt //cli:meshtune
meshtune="$PWD/bazel-out/k8-opt/bin/cli/meshtune"  # not bazel-bin: the last build's mode
home=$(mktemp -d)
trap 'rm -rf "$home"' EXIT
export MESHTUNE_HOME="$home"

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) cores)"
for ((r = 1; r <= runs; r++)); do
  for p in "${ranks[@]}"; do
    /usr/bin/time -f '%e %M' -o "$home/time-$p-$r" "$meshtune" tune \
      --expr 'C[m,n] += A[m,k] * B[k,n]' --extents m=8192,n=8192,k=8192 --ranks "$p" \
      --model-only --no-db --no-calibrate --json >"$home/out-$p-$r.json" 2>/dev/null ||
      echo "run $r on $p ranks failed" >&2
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
printf '| P | time: median (min to max) of %s | peak RSS | strategy | points | legal | costed | bounded | chosen | predicted | words / lower bound |\n' "$runs"
printf '|---|---|---|---|---|---|---|---|---|---|---|\n'
for p in "${ranks[@]}"; do
  python3 - "$home" "$p" "$runs" <<'PY'
import json, os, sys
home, p, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
times, peak, last = [], 0, None
for r in range(1, runs + 1):
    t = os.path.join(home, f"time-{p}-{r}")
    out = os.path.join(home, f"out-{p}-{r}.json")
    if not os.path.exists(t) or not os.path.getsize(out):
        continue
    fields = open(t).read().split()
    times.append(float(fields[-2]))
    peak = max(peak, int(fields[-1]))
    last = json.load(open(out))
if last is None:
    print(f"| {p} | failed | | | | | | | | | |")
    sys.exit(0)
times.sort()
median = times[len(times) // 2] if len(times) % 2 else sum(times[len(times) // 2 - 1:][:2]) / 2
legal = ("~" if last.get("legal_estimated") else "") + str(last.get("legal", 0))
ratio = last.get("lower_bound_ratio")
print(f"| {p} | {median:.2f} s ({times[0]:.2f} to {times[-1]:.2f}) | {peak // 1024} MiB "
      f"| {last.get('strategy', '-')} | {last.get('enumerated', 0)} | {legal} "
      f"| {last.get('costed', 0)} | {last.get('bounded', 0)} | {last['record']['mesh']} "
      f"| {last['record']['predicted_s']:.6g} s | {'-' if ratio is None else f'{ratio:.2f}'} |")
PY
done
