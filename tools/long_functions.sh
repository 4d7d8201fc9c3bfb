#!/usr/bin/env bash
# Lists C++ functions longer than a limit (default 100 lines) in the given directories.
#
#   bash tools/long_functions.sh [--max N] [--all] [DIR_OR_FILE ...]
#
# Defaults to the layers (base ir codegen runtime cost search storage engine cli daemon). Prints "NAME<tab>FILE:LINE<tab>N lines" for every function
# (definition at namespace or class scope, including TEST bodies) longer than N lines,
# longest first; --all prints every function. A function's length counts the lines from its
# name to its closing brace. Exits 1 when any function is over the limit, 0 otherwise.
# A heuristic scanner, not a compiler: comments, strings, raw strings, character literals and
# preprocessor lines are skipped; lambdas and local classes count towards their function.
set -euo pipefail
cd "$(dirname "$0")/.."

max=100
all=0
paths=()
while [ $# -gt 0 ]; do
  case "$1" in
    --max) max="$2"; shift 2 ;;
    --all) all=1; shift ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) paths+=("$1"); shift ;;
  esac
done
[ ${#paths[@]} -eq 0 ] && paths=(base ir codegen runtime cost search storage engine cli daemon)

files=()
while IFS= read -r f; do files+=("$f"); done < <(
  find "${paths[@]}" -type f \( -name '*.cc' -o -name '*.h' -o -name '*.cpp' \) | sort)
[ ${#files[@]} -eq 0 ] && exit 0

exec python3 - "$max" "$all" "${files[@]}" <<'PY'
import re
import sys

SCOPE_KEYWORDS = ("namespace", "class", "struct", "union", "enum", "extern")
# The (qualified) name that ends the text before a parameter list.
NAME = re.compile(
    r"((?:[A-Za-z_]\w*(?:<[^()]*>)?\s*::\s*)*"
    r"(?:operator\s*(?:\(\s*\)|[^\s(]+)|~?[A-Za-z_]\w*)(?:<[^()]*>)?)\s*$")
OPERATOR = re.compile(r"operator\s*(?:\(\s*\)|[^\s(]+)\s*\(")


def params_paren(header):
    """Index of the '(' that opens the parameter list: the first outside template brackets."""
    m = OPERATOR.search(header)
    if m:
        return m.end() - 1
    depth = 0
    for i, ch in enumerate(header):
        if ch == "<":
            depth += 1
        elif ch == ">" and depth:
            depth -= 1
        elif ch == "(" and depth == 0:
            return i
    return header.find("(")


def strip(text):
    """The text with comments, literals and preprocessor lines blanked (newlines kept)."""
    out = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c == "#":
            # Preprocessor line, with backslash continuations.
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append(" \n")
                    i += 2
                    continue
                out.append(" ")
                i += 1
            continue
        if c in " \t":
            out.append(c)
            i += 1
            continue
        if c == "\n":
            out.append(c)
            line_start = True
            i += 1
            continue
        line_start = False
        if text.startswith("//", i):
            while i < n and text[i] != "\n":
                out.append(" ")
                i += 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            k = text.find("(", i + 2)
            delim = text[i + 2:k]
            end = text.find(")" + delim + '"', k)
            j = n if end < 0 else end + len(delim) + 2
            out.append('""' + re.sub(r"[^\n]", " ", text[i + 2:j]))
            i = j
        elif c == '"' or (c == "'" and not (i > 0 and text[i - 1].isalnum())):
            # String or character literal (a ' after a digit is a digit separator).
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j - 1]) + c)
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def header_kind(header):
    """'scope', 'function' or 'other' for the declaration text before a '{'."""
    h = re.sub(r"\s+", " ", header).strip()
    h = re.sub(r"^template ?<.*?> ?(?=[A-Za-z_])", "", h)
    words = h.split(" ")
    if not h:
        return "other"
    if words[0] in SCOPE_KEYWORDS or (len(words) > 1 and words[0] in ("typedef", "using") and
                                      words[1] in SCOPE_KEYWORDS):
        if "(" not in h or words[0] in ("namespace", "extern"):
            return "scope"
    if "(" not in h:
        return "other"
    # An initializer such as `const Foo kX = {` or `Foo x(1), y{`.
    depth = 0
    for ch in h:
        if ch in "(<[":
            depth += 1
        elif ch in ")>]":
            depth -= 1
        elif ch == "=" and depth == 0 and "operator" not in h:
            return "other"
    return "function"


def functions(path):
    text = strip(open(path, encoding="utf-8", errors="replace").read())
    stack = []  # kinds of the open braces
    decl_start = 0  # where the current declaration's text begins
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "{":
            if all(k == "scope" for k in stack):
                header = text[decl_start:i]
                kind = header_kind(header)
                if kind == "function":
                    paren = params_paren(header)
                    m = NAME.search(header[:paren])
                    name = re.sub(r"\s+", "", m.group(1)) if m else "?"
                    if name.startswith(("TEST", "INSTANTIATE_")):
                        args = header[paren + 1:header.find(")", paren)]
                        args = [a.strip() for a in re.sub(r"\s+", " ", args).split(",")][:2]
                        name += "(" + ", ".join(args) + ")"
                    name_pos = decl_start + (m.start(1) if m else len(header) - len(header.lstrip()))
                    # Find the matching brace.
                    depth, j = 0, i
                    while j < n:
                        if text[j] == "{":
                            depth += 1
                        elif text[j] == "}":
                            depth -= 1
                            if depth == 0:
                                break
                        j += 1
                    first = text.count("\n", 0, name_pos) + 1
                    last = text.count("\n", 0, j) + 1
                    yield name, first, last - first + 1
                    i = j + 1
                    decl_start = i
                    continue
                stack.append(kind)
            else:
                stack.append("other")
            decl_start = i + 1
        elif c == "}":
            if stack:
                stack.pop()
            decl_start = i + 1
        elif c == ";":
            if all(k == "scope" for k in stack):
                decl_start = i + 1
        elif c == ":" and all(k == "scope" for k in stack):
            # Access specifiers end a declaration too.
            before = text[decl_start:i].strip()
            if before in ("public", "private", "protected"):
                decl_start = i + 1
        i += 1


def main():
    limit, show_all, files = int(sys.argv[1]), sys.argv[2] == "1", sys.argv[3:]
    found = []
    for path in files:
        for name, line, length in functions(path):
            if show_all or length > limit:
                found.append((length, name, path, line))
    found.sort(key=lambda f: (-f[0], f[2], f[3]))
    for length, name, path, line in found:
        print(f"{name}\t{path}:{line}\t{length} lines")
    over = sum(1 for f in found if f[0] > limit)
    if over:
        print(f"{over} function(s) over {limit} lines", file=sys.stderr)
    return 1 if over else 0


sys.exit(main())
PY
