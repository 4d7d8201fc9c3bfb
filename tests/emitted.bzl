"""emitted_main: a `meshtune codegen --main` program built from a trace, for the tests that
run it under mpirun against the worker (tests/emitted_cpp_test.cc)."""

def emitted_main(name, trace, expr, extents, mesh, codegen_args = "", deps = []):
    """Writes `name`.cc with meshtune codegen --main and builds it as cc_binary `name`.

    Args:
      name: the binary (its source is `name`.cc).
      trace: the trace file's label.
      expr: the statement in index notation.
      extents: the index extents (m=..,n=..).
      mesh: the mesh axes (x=..,y=..).
      codegen_args: more codegen flags (e.g. --layout ...).
      deps: more libraries the program links (e.g. //runtime:given_spec).
    """
    native.genrule(
        name = name + "_cc",
        srcs = [trace],
        outs = [name + ".cc"],
        cmd = ("$(location //cli:meshtune) codegen --expr '%s' --extents %s --mesh %s " +
               "--trace $(location %s) %s --main -o $@") % (expr, extents, mesh, trace, codegen_args),
        tools = ["//cli:meshtune"],
    )
    native.cc_binary(
        name = name,
        srcs = [":" + name + "_cc"],
        deps = deps + [
            "//runtime:mpi_comm",
            "//runtime:rank",
            "//runtime:run_result",
        ],
    )

def program_kernel_app(name, expr, extents, mesh, trace = None):
    """The callable kernel `meshtune codegen` writes for a program of five tensors, called by
    tests/program_kernel_app.cc as cc_binary `name`.

    Args:
      name: the binary; the kernel is `name`_kernel (`name`_kernel.cc and .h).
      expr: the program's statements in index notation.
      extents: the index extents.
      mesh: the mesh axes.
      trace: the program trace file's label; None: the cost model's joint best (--estimate).
    """
    kernel = name + "_kernel"
    source = "--trace $(location %s)" % trace if trace else "--estimate"
    native.genrule(
        name = kernel + "_src",
        testonly = True,
        srcs = [trace] if trace else [],
        outs = [kernel + ".cc", kernel + ".h"],
        cmd = ("$(location //cli:meshtune) codegen --expr '%s' --extents %s --mesh %s " +
               "%s --name %s -o $(location %s.cc)") %
              (expr, extents, mesh, source, kernel, kernel),
        tools = ["//cli:meshtune"],
    )
    native.cc_binary(
        name = name,
        testonly = True,
        srcs = ["program_kernel_app.cc", ":" + kernel + "_src"],
        copts = [
            "-DKERNEL=" + kernel,
            "-DKERNEL_HEADER='\"tests/%s.h\"'" % kernel,
            "-DEXPR='\"%s\"'" % expr,
            "-DEXTENTS='\"%s\"'" % extents,
        ],
        deps = [
            ":program_reference",
            "//runtime:given_spec",
            "//runtime:mpi_comm",
            "//runtime:rank",
            "//runtime:redistribution",
            "//third_party:mpi",
        ],
    )
