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
