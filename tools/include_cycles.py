#!/usr/bin/env python3
"""No include cycle among the repository's C++ files, within a folder or across folders.

  python3 tools/include_cycles.py [--root DIR]   checks the tree (default: the repository)
  python3 tools/include_cycles.py --self-test    checks this script on two small temporary trees

A file's .h and .cc (or .c) are one node, named by its path without the extension
("engine/explain"). There is an edge foo -> bar when foo.h or foo.cc has a quoted include
that names a file of bar: "dir/bar.h" from the root, or "bar.h" beside the including file
(the compiler's order). So explain.cc -> program_codegen.h -> program_run.h -> explain.h is
the cycle engine/explain -> engine/program_codegen -> engine/program_run -> engine/explain.

Every top-level folder is scanned, found rather than listed (a new folder is checked the day
it appears), except hidden ones, bazel-* and third_party. Includes of files outside the
scanned tree (absl, CLI11, generated .pb.h) are no edges. An #include inside a comment or
a raw string (codegen writes #include lines into the code it emits) is not read as one.

Prints nothing but one "layers: no include cycles" line and exits 0 when there is none;
otherwise prints each cycle with the include lines that make it, and exits 1.
"""

import os
import re
import sys
import tempfile

SOURCE_EXTENSIONS = (".h", ".cc", ".c", ".hpp", ".cpp")
SKIPPED_FOLDERS = ("third_party",)
CYCLES_PER_COMPONENT = 20  # past this many, a component's remaining cycles are only counted

# Comments and literals, so that an #include inside one is not read as an include. Numbers
# come before character literals because of digit separators (4'000'000).
TOKEN = re.compile(
    r"""(?P<raw>\b(?:u8|u|U|L)?R"(?P<delim>[^()\\\s]{0,16})\(.*?\)(?P=delim)")
      | (?P<comment>/\*.*?\*/|//[^\n]*)
      | (?P<number>\b\d[\w']*)
      | (?P<string>"(?:\\.|[^"\\\n])*")
      | (?P<char>'(?:\\.|[^'\\\n])*')""",
    re.S | re.X,
)
INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"\n]+)"', re.M)


def source_files(root):
    """Every C++ file under `root`, as a path relative to it, outside the skipped folders."""
    found = []
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = sorted(
            d
            for d in subfolders
            if not d.startswith((".", "bazel-"))
            and not (folder == root and d in SKIPPED_FOLDERS)
        )
        rel = os.path.relpath(folder, root)
        for name in sorted(files):
            if name.endswith(SOURCE_EXTENSIONS):
                found.append(os.path.normpath(os.path.join(rel, name)))
    return found


def node_of(path):
    """The node of a file: its path without the extension ("engine/explain")."""
    return os.path.splitext(path)[0]


def includes(text):
    """(line number, included path) for each quoted #include outside comments and literals."""

    def blank(m):  # a comment or raw string becomes its newlines, keeping the line numbers
        if m.group("raw") is None and m.group("comment") is None:
            return m.group(0)
        return "\n" * m.group(0).count("\n")

    code = TOKEN.sub(blank, text)
    return [(code.count("\n", 0, m.start()) + 1, m.group(1)) for m in INCLUDE.finditer(code)]


def include_graph(root):
    """The nodes' edges {foo: {bar, ...}} and, for each edge, the include lines making it."""
    files = source_files(root)
    known = set(files)
    edges = {node_of(f): set() for f in files}
    evidence = {}
    for f in files:
        with open(os.path.join(root, f), encoding="utf-8", errors="replace") as src:
            text = src.read()
        for line, included in includes(text):
            beside = os.path.normpath(os.path.join(os.path.dirname(f), included))
            target = next((p for p in (beside, os.path.normpath(included)) if p in known), None)
            if target is None or node_of(target) == node_of(f):
                continue
            edge = (node_of(f), node_of(target))
            edges[edge[0]].add(edge[1])
            evidence.setdefault(edge, []).append(f'{f}:{line}: #include "{included}"')
    return edges, evidence


def components(edges):
    """The strongly connected components of more than one node (Tarjan's, iteratively)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    for start in sorted(edges):
        if start in index:
            continue
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        work = [(start, iter(sorted(edges[start])))]
        while work:
            node, successors = work[-1]
            nxt = next(successors, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(edges[nxt]))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def cycles_in(component, edges, limit):
    """Up to `limit` elementary cycles of a component, each from its smallest node, and
    whether there were more."""
    order = {n: i for i, n in enumerate(component)}
    found = []

    def walk(start, path, seen):
        for nxt in sorted(edges[path[-1]]):
            if len(found) > limit:
                return
            if nxt == start:
                found.append(path + [start])
            elif nxt in order and order[nxt] > order[start] and nxt not in seen:
                seen.add(nxt)
                walk(start, path + [nxt], seen)
                seen.discard(nxt)

    for start in component:
        walk(start, [start], {start})
    return sorted(found[:limit], key=lambda c: (len(c), c)), len(found) > limit


def report(root):
    """The lines to print for the tree at `root`, and the exit status."""
    edges, evidence = include_graph(root)
    cyclic = components(edges)
    if not cyclic:
        return ["layers: no include cycles"], 0
    lines = ["layers: include cycles (a file's .h and .cc are one node):"]
    for component in cyclic:
        cycles, more = cycles_in(component, edges, CYCLES_PER_COMPONENT)
        for cycle in cycles:
            lines.append("  " + " -> ".join(cycle))
            for a, b in zip(cycle, cycle[1:]):
                lines.extend("    " + e for e in evidence[(a, b)])
        if more:
            lines.append(f"  ... and more cycles among {', '.join(component)}")
    return lines, 1


def self_test():
    """A 3-node cycle (x.cc -> y.h -> z.h -> x.h, across two folders) is found and fails;
    the same tree without the closing include passes, although its comments and raw strings
    still name x.h and its third_party and bazel-out folders hold cycles."""
    files = {
        "a/x.h": "",
        "a/x.cc": '#include "a/x.h"\n#include "a/y.h"\n',
        "a/y.h": '#include "z.h"\n',  # the z.h beside it, a/z.h
        "a/z.h": "// #include \"a/x.h\"\n/* \n#include \"a/x.h\"\n*/\n",
        "a/z.cc": 'auto s = R"(\n#include "a/x.h"\n)";\n'
        'int n = 4\'000; /* it\'s\n#include "a/x.h"\n*/\n',  # 4'000 and it's: no char literal
        "third_party/p.h": '#include "q.h"\n',  # cycles in the skipped folders
        "third_party/q.h": '#include "p.h"\n',
        "bazel-out/p.h": '#include "q.h"\n',
        "bazel-out/q.h": '#include "p.h"\n',
    }
    expected = [
        "layers: include cycles (a file's .h and .cc are one node):",
        "  a/x -> a/y -> a/z -> a/x",
        '    a/x.cc:2: #include "a/y.h"',
        '    a/y.h:1: #include "z.h"',
        '    a/z.h:5: #include "a/x.h"',
    ]
    failures = []
    for closed in (True, False):
        with tempfile.TemporaryDirectory(prefix="include_cycles.") as root:
            for path, text in files.items():
                if closed and path == "a/z.h":
                    text += '#include "a/x.h"\n'
                os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
                with open(os.path.join(root, path), "w", encoding="utf-8") as f:
                    f.write(text)
            lines, status = report(root)
        want = (expected, 1) if closed else (["layers: no include cycles"], 0)
        if (lines, status) != want:
            failures.append(f"{'cyclic' if closed else 'acyclic'} tree: got {status}, {lines}")
    for failure in failures:
        print("include_cycles: self-test failed:", failure)
    if not failures:
        print("include_cycles: self-test ok")
    return 1 if failures else 0


def main(argv):
    if argv == ["--self-test"]:
        return self_test()
    if argv and (argv[0] != "--root" or len(argv) != 2):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    root = argv[1] if argv else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    if not os.path.isdir(root):
        print(f"include_cycles: no folder {root}", file=sys.stderr)
        return 2
    lines, status = report(os.path.abspath(root))
    print("\n".join(lines))
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
