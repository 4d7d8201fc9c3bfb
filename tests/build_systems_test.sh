#!/usr/bin/env bash
# meshtune consumed as a user's project consumes it: installs meshtune (//dist:install) into
# a fresh prefix, runs examples/python/gemm.py on the installed Python package, then copies
# examples/cmake_app, examples/api_app (the plan API, CMake only)
# and examples/bazel_app into fresh
# directories and, for each, configures and builds it against the prefix (CMake's
# find_package(meshtune); a nested Bazel with its own output root, offline, in batch mode),
# runs the application on 4 ranks under mpirun, and checks that
#   - a workload missing from the wisdom file fails the build with the exact commands to run;
#   - ESTIMATE / estimate = True builds it anyway (a model-only estimate in the build).
# Everything lives under $TEST_TMPDIR and is removed at the end.
set -euo pipefail

runfiles=${TEST_SRCDIR:?}/${TEST_WORKSPACE:-meshtune}
tmp=$(mktemp -d "${TEST_TMPDIR:?}/build_systems.XXXXXX")
cleanup() { chmod -R u+w "$tmp" 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
export HOME=$tmp/home
mkdir -p "$HOME"

fail() { echo "FAIL: $*"; exit 1; }
step() { echo "== $* ($SECONDS s)"; }

# run_app PROGRAM: on 4 ranks, with the examples' success line.
run_app() {
  local out
  out=$(mpirun -n 4 --oversubscribe "$1" 2>&1) || { echo "$out"; fail "$1 exited non-zero"; }
  grep -qx "gemm: verified on 4 ranks" <<<"$out" || { echo "$out"; fail "$1: no success line"; }
}

# expect_miss LOG WISDOM: the log has meshtune's message for the k=16 workload, naming WISDOM.
expect_miss() {
  local expected="meshtune: no tuning record for C[m,n] += A[m,k] * B[k,n] (m=64,n=48,k=16, f32) on x=2,y=2 with profile default in wisdom file $2; run: meshtune records import $2 && meshtune tune --expr 'C[m,n] += A[m,k] * B[k,n]' --extents m=64,n=48,k=16 --mesh x=2,y=2 && meshtune records export > $2"
  grep -qxF "$expected" "$1" || { cat "$1"; echo "expected the line: $expected"; fail "no exact tune command"; }
}

step "install into a fresh prefix"
prefix=$tmp/prefix
"$runfiles/dist/install" "$prefix"
for f in bin/meshtune bin/meshtune_worker lib/libmeshtune_runtime.so lib/libmeshtune.so \
  include/meshtune/plan.h include/meshtune/meshtune.h include/runtime/mpi_comm.h \
  include/runtime/rank/rank.h lib/cmake/meshtune/meshtuneConfig.cmake \
  lib/cmake/meshtune/meshtuneConfigVersion.cmake share/meshtune/bazel/build_defs/meshtune_kernel.bzl; do
  [[ -e $prefix/$f ]] || fail "the install has no $f"
done
if ldd "$prefix/bin/meshtune" "$prefix/lib/libmeshtune_runtime.so" "$prefix/lib/libmeshtune.so" |
  grep -q "not found"; then
  fail "the installed program or library misses a shared library"
fi

step "Python: the installed package runs examples/python/gemm.py on 4 ranks"
pydir=$(echo "$prefix"/lib/python3.*/dist-packages)
[[ -f $pydir/meshtune/__init__.py && -f $pydir/meshtune/_meshtune.so && -f $pydir/meshtune/meshtune_pb2_grpc.py ]] ||
  fail "the install has no Python package under $prefix/lib/python3.*/dist-packages"
if ldd "$pydir/meshtune/_meshtune.so" | grep -q "not found"; then fail "_meshtune.so misses a shared library"; fi
out=$(cd "$tmp" && PYTHONPATH=$pydir MESHTUNE_HOME=$tmp/pyhome MESHTUNE_CALIBRATE=0 \
  mpirun -n 4 --oversubscribe /usr/bin/python3 "$runfiles/examples/python/gemm.py" 2>&1) ||
  { echo "$out"; fail "gemm.py on the installed package exited non-zero"; }
grep -qE "^gemm: verified on 4 ranks \(estimate, mesh " <<<"$out" || { echo "$out"; fail "gemm.py did not verify"; }

step "CMake: examples/cmake_app"
app=$tmp/cmake_app
mkdir -p "$app"
cp -L "$runfiles"/examples/cmake_app/* "$app/"
chmod -R u+w "$app"
cmake -S "$app" -B "$app/build" -DCMAKE_PREFIX_PATH="$prefix" >"$tmp/cmake.log" 2>&1 ||
  { cat "$tmp/cmake.log"; fail "cmake could not configure cmake_app"; }
cmake --build "$app/build" >"$tmp/cmake.log" 2>&1 || { cat "$tmp/cmake.log"; fail "cmake_app did not build"; }
run_app "$app/build/app"

step "CMake: a workload missing from the wisdom file"
cat >>"$app/CMakeLists.txt" <<'CMAKE'
meshtune_kernel(other EXPR "C[m,n] += A[m,k] * B[k,n]" EXTENTS m=64,n=48,k=16 MESH x=2,y=2
  WISDOM wisdom.jsonl)
CMAKE
cmake -S "$app" -B "$app/build" >/dev/null 2>&1 || fail "cmake could not reconfigure"
if cmake --build "$app/build" --target other >"$tmp/miss.log" 2>&1; then
  fail "a kernel missing from the wisdom file built"
fi
expect_miss "$tmp/miss.log" "$app/wisdom.jsonl"
sed -i 's|  WISDOM wisdom.jsonl)|  WISDOM wisdom.jsonl ESTIMATE)|' "$app/CMakeLists.txt"
cmake -S "$app" -B "$app/build" >/dev/null 2>&1 || fail "cmake could not reconfigure"
cmake --build "$app/build" --target other >"$tmp/estimate.log" 2>&1 ||
  { cat "$tmp/estimate.log"; fail "ESTIMATE did not build the missing kernel"; }

step "CMake: a kernel whose blocks do not divide its extents (ESTIMATE, 3 ranks)"
app=$tmp/ragged_kernel_app
mkdir -p "$app"
cp -L "$runfiles"/tests/ragged_kernel_app/CMakeLists.txt "$runfiles"/tests/ragged_kernel_app/main.cc "$app/"
chmod -R u+w "$app"
echo "# no records" >"$app/wisdom.jsonl"
cmake -S "$app" -B "$app/build" -DCMAKE_PREFIX_PATH="$prefix" >"$tmp/cmake.log" 2>&1 ||
  { cat "$tmp/cmake.log"; fail "cmake could not configure ragged_kernel_app"; }
MESHTUNE_HOME=$tmp/mthome cmake --build "$app/build" >"$tmp/cmake.log" 2>&1 ||
  { cat "$tmp/cmake.log"; fail "ragged_kernel_app did not build"; }
out=$(mpirun -n 3 --oversubscribe "$app/build/ragged_app" 2>&1) ||
  { echo "$out"; fail "ragged_app exited non-zero"; }
grep -q "^ragged: verified on 3 ranks (C held: " <<<"$out" || { echo "$out"; fail "ragged_app did not verify"; }
echo "$out"

step "CMake: examples/api_app (the plan API from the install)"
app=$tmp/api_app
mkdir -p "$app"
cp -L "$runfiles"/examples/api_app/CMakeLists.txt "$runfiles"/examples/api_app/main.cc "$app/"
chmod -R u+w "$app"
cmake -S "$app" -B "$app/build" -DCMAKE_PREFIX_PATH="$prefix" >"$tmp/cmake.log" 2>&1 ||
  { cat "$tmp/cmake.log"; fail "cmake could not configure api_app"; }
cmake --build "$app/build" >"$tmp/cmake.log" 2>&1 || { cat "$tmp/cmake.log"; fail "api_app did not build"; }
out=$(MESHTUNE_HOME=$tmp/mthome mpirun -n 2 --oversubscribe "$app/build/api_app" 2>&1) ||
  { echo "$out"; fail "api_app exited non-zero"; }
grep -q "^gemm: .*, verified$" <<<"$out" && grep -q "^contraction: .*, verified$" <<<"$out" ||
  { echo "$out"; fail "api_app did not verify"; }

step "Bazel: examples/bazel_app"
app=$tmp/bazel_app
mkdir -p "$app"
for f in .bazelrc BUILD WORKSPACE main.cc wisdom.jsonl; do cp -L "$runfiles/examples/bazel_app/$f" "$app/"; done
chmod -R u+w "$app"
# The lines for meshtune's own tests name a package the copy does not have.
sed -i '/^# meshtune.s own tests/,$d' "$app/BUILD"
# The system rc stays (Debian's Bazel finds its install base there); no home rc, no disk cache.
nested_bazel() {
  (cd "$app" && bazel --nohome_rc --output_user_root="$tmp/bazel_root" --batch \
    build --disk_cache= --override_repository=meshtune="$prefix/share/meshtune/bazel" "$@")
}
nested_bazel //:app >"$tmp/bazel.log" 2>&1 || { cat "$tmp/bazel.log"; fail "bazel_app did not build"; }
run_app "$app/bazel-bin/app"

step "Bazel: a workload missing from the wisdom file"
cat >>"$app/BUILD" <<'BZL'

meshtune_kernel(
    name = "other",
    expr = "C[m,n] += A[m,k] * B[k,n]",
    extents = "m=64,n=48,k=16",
    mesh = "x=2,y=2",
    wisdom = "wisdom.jsonl",
)
BZL
if nested_bazel //:other >"$tmp/miss.log" 2>&1; then
  fail "a kernel missing from the wisdom file built"
fi
expect_miss "$tmp/miss.log" "wisdom.jsonl"
grep -qF "meshtune_kernel //:other: meshtune codegen failed (its message is above); a workload missing from the wisdom file also builds with estimate = True (the cost model's choice)" \
  "$tmp/miss.log" || { cat "$tmp/miss.log"; fail "no hint naming the macro"; }
sed -i '$ d' "$app/BUILD"  # the closing parenthesis
printf '    estimate = True,\n)\n' >>"$app/BUILD"
nested_bazel //:other >"$tmp/estimate.log" 2>&1 ||
  { cat "$tmp/estimate.log"; fail "estimate = True did not build the missing kernel"; }
step "passed"
