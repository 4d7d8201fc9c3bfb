"""What an installed tree needs of some cc_libraries, collected from Bazel's own knowledge.

public_headers: every header of this repository the libraries declare, directly or
transitively (CcInfo's headers), instead of a hand-written list for include/.
own_objects: the libraries' own object files (PIC), so that a linkshared cc_binary links
them whole (from deps, the linker would take only what something already references).
"""

def _public_headers_impl(ctx):
    headers = []
    for dep in ctx.attr.deps:
        for h in dep[CcInfo].compilation_context.headers.to_list():
            # This repository's own headers only (system and external ones stay where they are).
            if h.owner != None and h.owner.workspace_name == "" and not h.short_path.startswith("../"):
                headers.append(h)
    by_path = {h.short_path: h for h in headers}
    headers = [by_path[p] for p in sorted(by_path.keys())]
    manifest = ctx.actions.declare_file(ctx.label.name + ".txt")
    ctx.actions.write(manifest, "".join([h.short_path + "\n" for h in headers]))
    return [DefaultInfo(
        files = depset([manifest]),
        runfiles = ctx.runfiles(files = [manifest] + headers),
    )]

public_headers = rule(
    implementation = _public_headers_impl,
    doc = "NAME.txt lists (one a line, by runfiles path) the repository's headers that `deps` " +
          "need transitively; the headers themselves are the target's runfiles.",
    attrs = {"deps": attr.label_list(providers = [CcInfo])},
)

def _own_objects_impl(ctx):
    objects = []
    for dep in ctx.attr.deps:
        for li in dep[CcInfo].linking_context.linker_inputs.to_list():
            if li.owner != dep.label:
                continue
            for lib in li.libraries:
                objects += lib.pic_objects
    return [DefaultInfo(files = depset(objects))]

own_objects = rule(
    implementation = _own_objects_impl,
    doc = "The PIC object files of each of `deps` (its own srcs, not its dependencies').",
    attrs = {"deps": attr.label_list(providers = [CcInfo])},
)
