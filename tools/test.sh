#!/usr/bin/env bash
# The whole test suite: installs missing packages, then runs every Bazel test and ends
# with a "N passed, N failed" line counted from Bazel's per-target results.
set -uo pipefail
cd "$(dirname "$0")/.."
bash tools/deps.sh || exit 1
log=$(mktemp)
trap 'rm -f "$log"' EXIT
bazel test //... "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
passed=$(grep -cE '^//[^ ]+ +(\(cached\) )?PASSED' "$log")
failed=$(grep -cE '^//[^ ]+ +(FAILED|TIMEOUT|NO STATUS|FAILED TO BUILD)' "$log")
echo "${passed} passed, ${failed} failed"
exit "$status"
