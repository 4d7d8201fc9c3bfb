#!/usr/bin/env bash
# The layering, asked of `bazel query`: no library or binary of a layer depends on a target
# of a higher layer. Layers, lowest first (see the root BUILD's package groups):
#   base ir codegen runtime search storage engine {cli daemon}
# Test targets are left out (a layer's test may use tests/ helpers). Prints one line per
# layer and exits 1 at the first violation, naming the path of the dependency.
set -uo pipefail
cd "$(dirname "$0")/.."
layers=(base ir codegen runtime search storage engine cli daemon)
status=0
for ((i = 0; i < ${#layers[@]}; i++)); do
  layer=${layers[$i]}
  higher=()
  for ((j = i + 1; j < ${#layers[@]}; j++)); do
    # cli and daemon are one level: the meshtune binary may carry meshtuned as data.
    if [[ $layer == cli && ${layers[$j]} == daemon ]]; then continue; fi
    higher+=("//${layers[$j]}/...")
  done
  # ... but meshtuned never uses the CLI.
  if [[ $layer == daemon ]]; then higher=("//cli/..."); fi
  if ((${#higher[@]} == 0)); then echo "layers: $layer ok"; continue; fi
  upper=$(IFS=+; echo "${higher[*]}")
  own="kind('cc_library|cc_binary', //$layer/...)"
  bad=$(bazel query --noshow_progress "deps($own) intersect ($upper)" 2>/dev/null)
  if [[ $? -ne 0 ]]; then echo "layers: bazel query failed for $layer"; exit 1; fi
  if [[ -n $bad ]]; then
    first=$(echo "$bad" | head -1)
    echo "layers: $layer depends on a higher layer: $first"
    bazel query --noshow_progress "somepath($own, $first)" 2>/dev/null | sed 's/^/  /'
    status=1
  else
    echo "layers: $layer ok"
  fi
done
exit $status
