#!/usr/bin/env bash
# The fast unit subset: every small test that starts no MPI job (not tagged mpi, not manual),
# building only those tests. Ends with tools/test.sh's "N passed, N failed" line; extra
# arguments go to `bazel test` (e.g. --runs_per_test=3).
set -uo pipefail
cd "$(dirname "$0")/.."
exec bash tools/test.sh --test_tag_filters=-mpi,-manual --test_size_filters=small \
  --build_tests_only "$@"
