#!/usr/bin/env bash
# Runs the commands of the ```console blocks of the README and of the pages of docs/, and
# checks their output, so that the documentation shows what meshtune prints.
#
# The rules (docs/testing.md, "Keeping the documentation true", says the same to its
# readers):
# - Only blocks opened by a line "```console" count. In them, a line starting with "$ " is
#   a command; a command line ending in "\" continues on the next line. The lines after a
#   command, up to the next "$ " line or the end of the block, are its expected output:
#   stdout and stderr together.
# - Each command must exit 0. Show another status with `; echo "exit status $?"`.
# - Expected lines match the output in order, line by line: "..." inside a line matches any
#   text, and a line that is exactly "..." matches any number of lines (zero too).
#   Trailing white space is ignored on both sides. Nothing may follow the last match
#   unless the expected output ends with a "..." line.
# - Each page's commands run in order with bash, in a scratch directory of that page's own
#   holding a link to examples/, with meshtune first on PATH and XDG_CACHE_HOME,
#   MESHTUNE_HOME and HOME in the page's own part of the test's temporary directory: later
#   commands of a page see what its earlier ones stored (the walkthrough's lookup finds its
#   tunes), and every page starts as a newcomer does, with no tuning database and no
#   hardware profile. No page relies on another; a page without ```console blocks passes.
#
# Under Bazel (//tests:readme_walkthrough_test) the files come from the runfiles and the
# pages are the target's arguments (README.md and every docs/*.md, //docs:pages); run by
# hand from the repository root (`bash tests/readme_walkthrough_test.sh [PAGE.md ...]`),
# it uses examples/ and bazel-bin/cli/meshtune of the work tree, and without arguments
# README.md and docs/*.md. A relative page path is taken from the repository root.
set -uo pipefail

if [[ -n "${TEST_SRCDIR:-}" ]]; then
  root="${TEST_SRCDIR}/${TEST_WORKSPACE:-meshtune}"
  bindir="${root}/cli"
  tmp="${TEST_TMPDIR}"
else
  root="$(cd "$(dirname "$0")/.." && pwd)"
  bindir="${root}/bazel-bin/cli"
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
fi

pages=("$@")
if [[ ${#pages[@]} -eq 0 ]]; then
  pages=(README.md)
  for f in "${root}"/docs/*.md; do pages+=("docs/${f##*/}"); done
fi

for f in "${bindir}/meshtune" "${root}/examples/summa.trace"; do
  if [[ ! -e "$f" ]]; then
    echo "readme_walkthrough_test: missing $f" >&2
    exit 1
  fi
done
for page in "${pages[@]}"; do
  [[ "$page" == /* ]] || page="${root}/${page}"
  if [[ ! -f "$page" ]]; then
    echo "readme_walkthrough_test: missing $page" >&2
    exit 1
  fi
done

# meshtune finds meshtune_worker beside its resolved path; PATH needs mpirun too.
export PATH="${bindir}:${PATH:-/usr/bin:/bin}:/usr/bin:/bin"
unset MESHTUNE_WORKER MESHTUNE_CALIBRATOR MESHTUNED

# split_page PAGE DIR: splits a page into numbered cases: case N has DIR/cmd_N (the command
# text, continuation lines kept) and DIR/exp_N (the expected output), plus DIR/line_N (the
# page's line of the "$"); DIR/count is the number of cases.
split_page() {
  local dir="$2"
  rm -rf "$dir"
  mkdir -p "$dir"
  awk -v dir="$dir" '
    function finish() { if (n > 0) { close(cmdf); close(expf) } }
    /^```console[ \t]*$/ { inblock = 1; cont = 0; havecmd = 0; next }
    inblock && /^```/ { inblock = 0; cont = 0; next }
    !inblock { next }
    cont {
      print > cmdf
      cont = ($0 ~ /\\$/)
      next
    }
    /^\$ / {
      finish()
      n++; havecmd = 1
      cmdf = dir "/cmd_" n; expf = dir "/exp_" n
      print substr($0, 3) > cmdf
      printf "" > expf
      print NR > (dir "/line_" n); close(dir "/line_" n)
      cont = ($0 ~ /\\$/)
      next
    }
    havecmd { print > expf }
    END { finish(); print n + 0 > (dir "/count") }
  ' "$1"
}

# match EXPECTED ACTUAL: exit 0 when ACTUAL fits EXPECTED by the rules above; otherwise
# prints the first expected line that could not be matched and the output near it.
match() {
  awk -v expfile="$1" '
    function rtrim(s) { sub(/[ \t\r]+$/, "", s); return s }
    # Whether line a fits pattern p, where "..." in p matches any text.
    function fits(p, a,    parts, k, i, pos, frag) {
      k = split(p, parts, /\.\.\./)
      if (k == 1) return p == a
      if (substr(a, 1, length(parts[1])) != parts[1]) return 0
      pos = length(parts[1]) + 1
      for (i = 2; i < k; i++) {
        frag = parts[i]
        if (frag == "") continue
        j = index(substr(a, pos), frag)
        if (j == 0) return 0
        pos += j - 1 + length(frag)
      }
      frag = parts[k]
      if (length(a) - pos + 1 < length(frag)) return 0
      return substr(a, length(a) - length(frag) + 1) == frag
    }
    # Whether expected lines e.. fit actual lines a.. (backtracking over "..." lines).
    function m(e, a,    k) {
      if (e > best_e || (e == best_e && a > best_a)) { best_e = e; best_a = a }
      if (e > ne) return a > na
      if (ex[e] == "...") {
        for (k = a; k <= na + 1; k++) if (m(e + 1, k)) return 1
        return 0
      }
      if (a <= na && fits(ex[e], ac[a])) return m(e + 1, a + 1)
      return 0
    }
    BEGIN {
      while ((getline line < expfile) > 0) ex[++ne] = rtrim(line)
      # Blank lines at the end of an expected block are the README'"'"'s spacing.
      while (ne > 0 && ex[ne] == "") ne--
    }
    { ac[++na] = rtrim($0) }
    END {
      while (na > 0 && ac[na] == "") na--
      best_e = 0; best_a = 0
      if (m(1, 1)) exit 0
      if (best_e > ne) {
        printf "  unexpected output after the last expected line, from output line %d:\n", best_a
        for (i = best_a; i <= na && i < best_a + 5; i++) printf "    | %s\n", ac[i]
      } else {
        printf "  expected line %d not matched:\n    > %s\n", best_e, ex[best_e]
        printf "  output from line %d:\n", best_a
        for (i = best_a; i <= na && i < best_a + 5; i++) printf "    | %s\n", ac[i]
        if (best_a > na) printf "    (end of output)\n"
      }
      exit 1
    }
  ' "$2"
}

passed=0
failed=0
covered=0  # pages with commands

# run_page NAME PATH SCRATCH: runs the page's commands in their own scratch directory.
run_page() {
  local name="$1" page="$2" scratch="$3"
  local cases="${scratch}/cases" work="${scratch}/walkthrough"
  local count i line cmd out started status took problem report page_started
  split_page "$page" "$cases"
  count=$(cat "${cases}/count")
  if [[ "$count" -eq 0 ]]; then
    echo "--    ${name}: no \`\`\`console blocks"
    if [[ "$name" == README.md ]]; then
      echo "FAIL  README.md: the walkthrough has no \`\`\`console commands"
      failed=$((failed + 1))
    fi
    return
  fi
  covered=$((covered + 1))
  rm -rf "$work"
  mkdir -p "$work" "${scratch}/cache" "${scratch}/meshtune_home" "${scratch}/home"
  ln -s "${root}/examples" "${work}/examples"
  export XDG_CACHE_HOME="${scratch}/cache"
  export MESHTUNE_HOME="${scratch}/meshtune_home"
  export HOME="${scratch}/home"
  page_started=$(date +%s)
  for ((i = 1; i <= count; i++)); do
    line=$(cat "${cases}/line_$i")
    cmd=$(cat "${cases}/cmd_$i")
    out="${scratch}/out_$i"
    started=$(date +%s)
    (cd "$work" && bash -c "$cmd") >"$out" 2>&1 </dev/null
    status=$?
    took=$(($(date +%s) - started))
    problem=""
    if [[ $status -ne 0 ]]; then
      problem="  exit status $status (a documented command must exit 0)"
    fi
    if ! report=$(match "${cases}/exp_$i" "$out"); then
      problem="${problem:+$problem
}$report"
    fi
    if [[ -z "$problem" ]]; then
      passed=$((passed + 1))
      echo "ok    ${name}:$line (${took} s) \$ $(head -n 1 "${cases}/cmd_$i")"
    else
      failed=$((failed + 1))
      echo "FAIL  ${name}:$line (${took} s) \$ $(head -n 1 "${cases}/cmd_$i")"
      echo "$problem"
      echo "  whole output:"
      sed 's/^/    | /' "$out"
    fi
  done
  echo "--    ${name}: ${count} commands in $(($(date +%s) - page_started)) s"
}

n=0
for page in "${pages[@]}"; do
  n=$((n + 1))
  path="$page"
  [[ "$path" == /* ]] || path="${root}/${page}"
  run_page "$page" "$path" "${tmp}/page_${n}"
done

if [[ $covered -eq 0 ]]; then
  echo "readme_walkthrough_test: no \`\`\`console commands in ${pages[*]}" >&2
  exit 1
fi
echo "readme walkthrough: ${passed} commands as shown, ${failed} not" \
  "(${covered} of ${#pages[@]} pages have commands)"
[[ $failed -eq 0 ]]
