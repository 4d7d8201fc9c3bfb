#!/usr/bin/env bash
# clang-format over the tree's C++ (.clang-format at the root: Google style, 100 columns).
#   bash tools/format.sh           rewrites the files in place
#   bash tools/format.sh --check   changes nothing; lists each file that is not formatted
#                                  and exits 1 when there is one (CI runs this)
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-fix}
mapfile -t files < <(git ls-files '*.cc' '*.h' | grep -v '^third_party/')
if [[ $mode == --check ]]; then
  bad=0
  for f in "${files[@]}"; do
    if ! clang-format --style=file "$f" | cmp -s - "$f"; then
      echo "format: $f is not clang-formatted (run: bash tools/format.sh)"
      bad=1
    fi
  done
  [[ $bad == 0 ]] && echo "format: ${#files[@]} files ok"
  exit $bad
fi
clang-format --style=file -i "${files[@]}"
