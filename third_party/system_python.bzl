"""Debian's Python 3 (/usr/bin/python3, python3-dev) as a repository: its C headers, for the
pybind11 extension of python/, and its version, for where //dist:install puts the package.

/usr/bin/python3 on purpose, not the first python3 on PATH: the modules the extension and the
examples use (python3-mpi4py, python3-numpy, python3-grpcio) are Debian's, installed for it.
"""

def _system_python_impl(rctx):
    python = rctx.attr.interpreter
    r = rctx.execute([python, "-c", "import sys, sysconfig; " +
                                    "print(sysconfig.get_paths()['include']); " +
                                    "print('%d.%d' % sys.version_info[:2])"])
    if r.return_code != 0:
        fail("system_python: cannot run %s (Debian's python3-dev): %s" % (python, r.stderr))
    include, version = r.stdout.strip().split("\n")
    if not rctx.path(include + "/Python.h").exists:
        fail("system_python: no %s/Python.h: install python3-dev (tools/deps.sh)" % include)
    rctx.symlink(include, "include")
    rctx.file("version.txt", version + "\n")
    rctx.file("BUILD", """package(default_visibility = ["//visibility:public"])

exports_files(["version.txt"])

# Python's C API headers (Python.h and what it includes).
cc_library(
    name = "headers",
    hdrs = glob(["include/**/*.h"]),
    includes = ["include"],
)
""")

system_python = repository_rule(
    implementation = _system_python_impl,
    attrs = {"interpreter": attr.string(default = "/usr/bin/python3")},
    doc = "@NAME//:headers (Python.h) and @NAME//:version.txt (\"3.11\") of `interpreter`.",
)
