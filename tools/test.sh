#!/usr/bin/env bash
# The whole test suite: installs missing packages, checks the formatting
# (tools/format.sh --check), the layering (tools/check_layers.sh) and that no function
# runs over 100 lines (tools/long_functions.sh), then runs every
# Bazel test and ends with a "N passed, N failed" line counted from Bazel's per-target
# results. Extra arguments go to `bazel test` (tools/unit.sh passes filters).
set -uo pipefail
cd "$(dirname "$0")/.."
bash tools/deps.sh || exit 1
bash tools/format.sh --check || exit 1
bash tools/check_layers.sh || exit 1
bash tools/long_functions.sh || exit 1
log=$(mktemp)
trap 'rm -f "$log"' EXIT
bazel test //... "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
passed=$(grep -cE '^//[^ ]+ +(\(cached\) )?PASSED' "$log")
failed=$(grep -cE '^//[^ ]+ +(FAILED|TIMEOUT|NO STATUS|FAILED TO BUILD)' "$log")
echo "${passed} passed, ${failed} failed"
exit "$status"
