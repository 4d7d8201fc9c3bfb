"""meshtune_kernel: a tuned distributed kernel as a cc_library, generated at build time.

The same file serves the source tree (//build_defs) and an installed meshtune
(PREFIX/share/meshtune/bazel, a repository named "meshtune"): it names its tool and support
library relative to its own repository, //build_defs:meshtune_tool (the meshtune program)
and //build_defs:kernel_support (the runtime the kernel links: MPI and CBLAS).
"""

def _assignments(value, what):
    """A "k=v,k=v" string from a string or a dict of names to integers."""
    if type(value) == "dict":
        return ",".join(["%s=%s" % (k, value[k]) for k in value])
    if type(value) == "string":
        return value
    fail("meshtune_kernel: %s must be a string like \"m=64,n=48\" or a dict, got %s" % (what, type(value)))

def _shell_quote(s):
    return "'" + s.replace("'", "'\\''") + "'"

def meshtune_kernel(
        name,
        expr,
        extents,
        mesh = None,
        ranks = None,
        wisdom = None,
        estimate = False,
        profile = None,
        dtype = "f32",
        visibility = None,
        **kwargs):
    """A cc_library `name` with the callable kernel meshtune generates for one workload.

    The workload (expr, extents, dtype, mesh or ranks, profile) is looked up in the wisdom
    file `wisdom` (a label of a file written by `meshtune records export`) at build time;
    nothing outside the build is read (no tuning database, no home directory). A workload
    missing from the file fails the build with the exact `meshtune tune ...` commands that
    add it, unless estimate = True: then (and without a wisdom file) the kernel is the cost
    model's best with built-in machine numbers, a deterministic model-only search in the build.

    The library's header is NAME.h (`#include "NAME.h"`; it declares
    `int NAME(OUT*, const IN*..., MPI_Comm)` and `NAME_shard(...)`, or for a record whose
    answer is ScaLAPACK's GEMM `NAME_local(...)` and tensors in cyclic(NB,NB)); it depends on
    the support library and links ScaLAPACK (-lscalapack-openmpi, Debian's
    libscalapack-openmpi-dev), so a cc_binary only adds it to its deps.

    Args:
      name: the library's and the kernel function's name (a C identifier).
      expr: the statement, e.g. "C[m,n] += A[m,k] * B[k,n]".
      extents: "m=64,n=48,k=32" or {"m": 64, "n": 48, "k": 32}.
      mesh: the mesh, "x=2,y=2" or {"x": 2, "y": 2}; exactly one of mesh and ranks.
      ranks: the rank count (the record of the best mesh of that many ranks).
      wisdom: label of the wisdom file; required unless estimate = True.
      estimate: on a miss (or without wisdom) estimate with the cost model instead of failing.
      profile: the hardware profile the records were tuned with (default: "default").
      dtype: "f32" or "f64".
      visibility: of the cc_library.
      **kwargs: passed to both the genrule and the cc_library (e.g. tags, testonly).
    """
    if (mesh == None) == (ranks == None):
        fail("meshtune_kernel(name = \"%s\"): give exactly one of mesh and ranks" % name)
    if wisdom == None and not estimate:
        fail("meshtune_kernel(name = \"%s\"): give a wisdom file (wisdom = \"wisdom.jsonl\") or estimate = True" % name)
    args = [
        "codegen",
        "--expr",
        _shell_quote(expr),
        "--extents",
        _shell_quote(_assignments(extents, "extents")),
        "--dtype",
        _shell_quote(dtype),
        "--name",
        name,
    ]
    if mesh != None:
        args += ["--mesh", _shell_quote(_assignments(mesh, "mesh"))]
    else:
        args += ["--ranks", str(ranks)]
    if profile != None:
        args += ["--profile", _shell_quote(profile)]
    srcs = []
    if wisdom != None:
        # The path from the workspace root, as the user would type it ($(location) may
        # start it with "./").
        args += ["--lookup", "--wisdom", "\"$${WISDOM#./}\""]
        srcs = [wisdom]
    if estimate:
        args.append("--estimate")
    # In a folder of its own, so that `includes` names only the kernel's header.
    out = "_meshtune/%s/%s" % (name, name)
    hint = "meshtune_kernel //%s:%s: meshtune codegen failed (its message is above)" % (native.package_name(), name)
    if not estimate:
        hint += "; a workload missing from the wisdom file also builds with estimate = True (the cost model's choice)"
    native.genrule(
        name = name + "_gen",
        srcs = srcs,
        outs = [out + ".cc", out + ".h"],
        # Hermetic: meshtune gets no home directory, profile folder or cache to read.
        cmd = ("WISDOM=%s; HOME=/nonexistent MESHTUNE_HOME=/nonexistent " +
               "XDG_CACHE_HOME=/nonexistent $(location %s) %s -o $(location %s.cc) || " +
               "{ echo %s >&2; exit 1; }") % (
            "$(location %s)" % wisdom if wisdom != None else "",
            Label("//build_defs:meshtune_tool"),
            " ".join(args),
            out,
            _shell_quote(hint),
        ),
        tools = [Label("//build_defs:meshtune_tool")],
        message = "meshtune: generating kernel " + name,
        **kwargs
    )
    native.cc_library(
        name = name,
        srcs = [out + ".cc"],
        hdrs = [out + ".h"],
        includes = ["_meshtune/" + name],
        # A record whose answer is the library gives a kernel that calls ScaLAPACK's PSGEMM or
        # PDGEMM (codegen/emit/emit_library.h), declaring the functions itself; which one the
        # wisdom file holds is known only when the genrule runs, so every kernel links it.
        # As a link flag, not //third_party:scalapack: an installed meshtune's repository has
        # no third_party package.
        linkopts = ["-lscalapack-openmpi"],
        deps = [Label("//build_defs:kernel_support")],
        visibility = visibility,
        **kwargs
    )
