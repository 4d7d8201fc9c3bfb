#!/usr/bin/env bash
# meshtune's Python package (//python) end to end, with Debian's /usr/bin/python3 (the one
# python3-mpi4py, python3-numpy and python3-grpcio are installed for).
#   python_test.sh plan WISDOM   examples/python/gemm.py under mpirun, verified against
#                                numpy.einsum: estimate, measure and wisdom (WISDOM) modes on
#                                4 ranks, estimate and wisdom on 3; then
#                                tests/python/plan_checks.py on 2 and 3 ranks.
#   python_test.sh client        tests/python/client_checks.py against a meshtuned it starts.
# Runs from the runfiles root (the package is python/meshtune there).
set -uo pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
export PYTHONPATH=$PWD/python MESHTUNE_CALIBRATE=0
export MESHTUNE_HOME=${TEST_TMPDIR:-$(mktemp -d)}/home
python=/usr/bin/python3
failures=0

# expect PATTERN COMMAND...: runs COMMAND, which must exit 0 and print a line that PATTERN (an
# extended regular expression) matches whole.
expect() {
  local want=$1 out
  shift
  out=$("$@" 2>&1)
  local status=$?
  if [[ $status -eq 0 ]] && grep -qxE "$want" <<<"$out"; then
    echo "ok    $(grep -xE "$want" <<<"$out" | head -1)"
  else
    echo "FAIL  $* (exit $status), wanted a line: $want"
    echo "$out" | tail -30
    failures=$((failures + 1))
  fi
}

case ${1:-} in
  plan)
    wisdom=$2
    run() { mpirun -n "$1" --oversubscribe "$python" examples/python/gemm.py "${@:2}"; }
    for ranks in 4 3; do
      modes="estimate wisdom"
      [[ $ranks == 4 ]] && modes="estimate measure wisdom"
      for mode in $modes; do
        args=(--mode "$mode")
        [[ $mode == wisdom ]] && args+=(--wisdom "$wisdom")
        expect "gemm: verified on $ranks ranks \($mode, mesh [a-z0-9=,]+\)" run "$ranks" "${args[@]}"
      done
    done
    for ranks in 2 3; do
      expect "plan_checks: 8 checks passed on $ranks ranks" \
        mpirun -n "$ranks" --oversubscribe "$python" -m mpi4py tests/python/plan_checks.py
    done
    ;;
  client)
    expect "client_checks: 5 checks passed" "$python" tests/python/client_checks.py daemon/meshtuned
    ;;
  *)
    echo "usage: python_test.sh plan WISDOM | python_test.sh client" >&2
    exit 2
    ;;
esac
[[ $failures -eq 0 ]] && echo "python_test: passed" || echo "python_test: $failures failed"
exit $((failures > 0))
