#!/usr/bin/env bash
# The layering, asked of `bazel query`: no library or binary of a layer depends on a target
# of a higher layer. Layers, lowest first (see the root BUILD's package groups):
#   base ir codegen runtime cost search storage engine {cli daemon meshtune} python
# cli, daemon and meshtune (the library) are one level, the edges: none uses another,
# except that the meshtune binary may carry meshtuned as data. python (the Python package)
# is over the library, and nothing uses it.
# Then the worker: meshtune_worker runs a Program it is given and must link no isl — none
# of //ir's legality, //codegen's lowering or //third_party:isl.
# Last, no two files include each other: when X.cc or X.h includes Y.h, neither Y.cc nor Y.h
# includes X.h (a concept that needs its user is two concepts, or one). Nor is there a longer
# include cycle, within a folder or across (tools/include_cycles.py: X.h and X.cc are one node).
# Test targets are left out (a layer's test may use tests/ helpers). Prints one line per
# check and exits 1 at the first violation, naming the path of the dependency.
set -uo pipefail
cd "$(dirname "$0")/.."
layers=(base ir codegen runtime cost search storage engine cli daemon meshtune python)
edges=(cli daemon meshtune)
status=0

# Whether `$1` is one of the edge packages.
is_edge() { [[ " ${edges[*]} " == *" $1 "* ]]; }

# Fails (status=1) when a cc_library or cc_binary of `$1` depends on a target of `$2`.
check() {
  local own="kind('cc_library|cc_binary', $1)" bad first
  bad=$(bazel query --noshow_progress "deps($own) intersect ($2)" 2>/dev/null)
  if [[ $? -ne 0 ]]; then echo "layers: bazel query failed for $1"; exit 1; fi
  [[ -z $bad ]] && return 0
  first=$(echo "$bad" | head -1)
  echo "layers: $1 depends on $first"
  bazel query --noshow_progress "somepath($own, $first)" 2>/dev/null | sed 's/^/  /'
  status=1
  return 1
}

for ((i = 0; i < ${#layers[@]}; i++)); do
  layer=${layers[$i]}
  higher=()
  for ((j = i + 1; j < ${#layers[@]}; j++)); do
    other=${layers[$j]}
    # The meshtune binary may carry meshtuned as data.
    if [[ $layer == cli && $other == daemon ]]; then continue; fi
    higher+=("//$other/...")
  done
  # An edge uses no other edge (cli aside, above), nor python.
  if is_edge "$layer"; then
    higher=()
    for other in "${edges[@]}" python; do
      [[ $other == "$layer" || ($layer == cli && $other == daemon) ]] && continue
      higher+=("//$other/...")
    done
  fi
  if ((${#higher[@]} == 0)); then echo "layers: $layer ok"; continue; fi
  upper=$(IFS=+; echo "${higher[*]}")
  check "//$layer/..." "$upper" && echo "layers: $layer ok"
done

# The worker runs the validated Program it is handed: no legality, lowering or isl.
if check "//runtime:meshtune_worker" "//ir:ir + //codegen:codegen + //codegen:validate + //third_party:isl"; then
  echo "layers: meshtune_worker links no isl"
fi
# No mutual includes, over every C++ file of the tree.
mutual=$(
  for f in $(git ls-files '*.cc' '*.h' | grep -v '^third_party/'); do
    [[ -f $f ]] || continue
    own=${f%.*}
    for h in $(grep -o '#include "[a-z_/0-9]*\.h"' "$f" | sed 's/#include "//;s/\.h"//'); do
      [[ $h == "$own" ]] && continue
      for g in "$h.cc" "$h.h"; do
        if [[ -f $g ]] && grep -q "#include \"$own.h\"" "$g"; then
          if [[ $own < $h ]]; then echo "$own <-> $h"; else echo "$h <-> $own"; fi
        fi
      done
    done
  done | sort -u
)
if [[ -n $mutual ]]; then
  echo "layers: files that include each other:"
  echo "$mutual" | sed 's/^/  /'
  status=1
else
  echo "layers: no mutual includes"
fi
# No include cycle of any length, within a folder or across.
python3 tools/include_cycles.py || status=1
exit $status
