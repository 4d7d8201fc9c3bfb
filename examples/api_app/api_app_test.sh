#!/usr/bin/env bash
# Runs the example application on 1 to 5 ranks with model-estimated plans (3 and 5: blocks
# that do not divide, shards stored at the full block), then on 4
# ranks measuring (the winners go to a wisdom file) and again from that wisdom file; each
# run must verify both statements against the serial reference.
set -euo pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
export MESHTUNE_HOME="$TEST_TMPDIR/home"  # estimates from the built-in machine numbers
app=examples/api_app/api_app
wisdom="$TEST_TMPDIR/wisdom.jsonl"

check() {  # ranks, then the app's arguments
  local ranks=$1
  shift
  local out
  out=$(timeout 300 mpirun -n "$ranks" --oversubscribe "$app" "$@" 2>&1) || {
    echo "FAIL on $ranks ranks ($*):" && echo "$out" && exit 1
  }
  grep -q "^gemm: .*, verified$" <<<"$out" || { echo "gemm not verified: $out" && exit 1; }
  grep -q "^contraction: .*, verified$" <<<"$out" || {
    echo "contraction not verified: $out" && exit 1
  }
  echo "$ranks ranks $*: $out"
}

for ranks in 1 2 3 4 5; do check "$ranks" --mode estimate; done
check 4 --mode measure --wisdom "$wisdom"
test "$(grep -c . "$wisdom")" -ge 2 || { echo "the wisdom file lacks the two winners" && exit 1; }
check 4 --mode wisdom --wisdom "$wisdom"
