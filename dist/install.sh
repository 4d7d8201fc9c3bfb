#!/usr/bin/env bash
# Installs meshtune into PREFIX, from what Bazel built (this script's runfiles):
#   bin/meshtune, bin/meshtune_worker, bin/meshtune_calibrate, bin/meshtuned
#   lib/libmeshtune_runtime.so        what a generated kernel links
#   lib/libmeshtune.so                the plan API (meshtune/plan.h, meshtune/meshtune.h)
#   include/runtime/..., ...          the headers it needs (dist/BUILD: runtime_headers)
#   lib/cmake/meshtune/               meshtuneConfig.cmake and meshtuneConfigVersion.cmake
#   share/meshtune/bazel/             a Bazel repository: meshtune_kernel, the prebuilt
#                                     library, and the offline stand-ins Bazel 4 needs
#   lib/pythonX.Y/dist-packages/meshtune/   the Python package (python/), for Debian's python3
# Usage: bazel run -c opt //dist:install -- PREFIX   (a relative PREFIX is taken from the
# directory bazel was started in). Overwrites what an earlier install put there.
set -euo pipefail

if [[ $# -ne 1 || -z $1 || $1 == -* ]]; then
  echo "usage: bazel run -c opt //dist:install -- PREFIX" >&2
  exit 2
fi
prefix=$1
if [[ $prefix != /* ]]; then prefix=${BUILD_WORKING_DIRECTORY:-$PWD}/$prefix; fi
mkdir -p "$prefix"
prefix=$(cd "$prefix" && pwd)

# The runfiles root: NAME.runfiles beside this script (bazel run), $RUNFILES_DIR, or the
# tree this script sits in (as a test's data: ROOT/meshtune/dist/install).
if [[ -d "$0.runfiles/meshtune" ]]; then
  root="$0.runfiles"
elif [[ -n ${RUNFILES_DIR:-} && -d "$RUNFILES_DIR/meshtune" ]]; then
  root=$RUNFILES_DIR
else
  root=$(cd "$(dirname "$0")/../.." && pwd)
fi
src=$root/meshtune
[[ -f $src/dist/runtime_headers.txt ]] || { echo "install: cannot find the runfiles of //dist:install under $root" >&2; exit 1; }

# put FILE DEST MODE: a copy (runfiles are read-only links), replacing an older one.
put() {
  mkdir -p "$(dirname "$2")"
  rm -f "$2"
  cp -L "$1" "$2"
  chmod "$3" "$2"
}

for p in cli/meshtune runtime/meshtune_worker runtime/meshtune_calibrate daemon/meshtuned; do
  put "$src/$p" "$prefix/bin/$(basename "$p")" 755
done
put "$src/dist/libmeshtune_runtime.so" "$prefix/lib/libmeshtune_runtime.so" 755
put "$src/dist/libmeshtune.so" "$prefix/lib/libmeshtune.so" 755
for h in meshtune/plan.h meshtune/meshtune.h; do put "$src/$h" "$prefix/include/$h" 644; done
while IFS= read -r h; do
  put "$src/$h" "$prefix/include/$h" 644
done < "$src/dist/runtime_headers.txt"

version=$(cat "$src/dist/version.txt")
cmake_dir=$prefix/lib/cmake/meshtune
put "$src/dist/cmake/meshtuneConfig.cmake" "$cmake_dir/meshtuneConfig.cmake" 644
mkdir -p "$cmake_dir"
sed "s|@VERSION@|$version|" "$src/dist/cmake/meshtuneConfigVersion.cmake.in" \
  > "$cmake_dir/meshtuneConfigVersion.cmake"

bz=$prefix/share/meshtune/bazel
rm -rf "$bz"
mkdir -p "$bz/build_defs" "$bz/third_party"
echo 'workspace(name = "meshtune")' > "$bz/WORKSPACE"
put "$src/dist/bazel/BUILD.installed" "$bz/BUILD" 644
put "$src/third_party/openmpi.BUILD" "$bz/openmpi.BUILD" 644
put "$src/dist/bazel/build_defs.BUILD.installed" "$bz/build_defs/BUILD" 644
put "$src/build_defs/meshtune_kernel.bzl" "$bz/build_defs/meshtune_kernel.bzl" 644
sed "s|@BAZEL_DIR@|$bz|" "$src/dist/bazel/deps.bzl.in" > "$bz/build_defs/deps.bzl"
for d in bin lib include; do ln -s "../../../$d" "$bz/$d"; done
for repo in rules_cc rules_java remote_coverage_tools; do
  mkdir -p "$bz/third_party/$repo"
  echo "workspace(name = \"$repo\")" > "$bz/third_party/$repo/WORKSPACE"
  (cd "$root/$repo" && find . -type f -o -type l) | while IFS= read -r f; do
    put "$root/$repo/$f" "$bz/third_party/$repo/$f" 644
  done
done
# The Python package, where Debian's python3 looks under /usr/local (another prefix: add the
# directory to PYTHONPATH).
pyversion=$(cat "$root/system_python/version.txt")
pydir=$prefix/lib/python$pyversion/dist-packages/meshtune
rm -rf "$pydir"
for f in "$src"/python/meshtune/*; do
  mode=644
  [[ $f == *.so ]] && mode=755
  put "$f" "$pydir/$(basename "$f")" $mode
done
echo "meshtune $version installed in $prefix (Python: $(dirname "$pydir"))"
