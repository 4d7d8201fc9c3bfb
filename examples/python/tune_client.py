"""Tunes a problem through a running meshtuned, then looks the answer up and asks for its
kernel, with meshtune.Client.

    meshtuned --listen 127.0.0.1:50051 &
    PYTHONPATH=bazel-bin/python python3 examples/python/tune_client.py localhost:50051

Prints each progress event of the tune, the winning schedule, the record a lookup finds
under other names (the same problem written with other letters), and the size of the
callable kernel Codegen writes for it.
"""

import argparse
import sys

import meshtune


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("address", help="the daemon's HOST:PORT")
    parser.add_argument("--extents", default="m=64,n=64,k=64")
    parser.add_argument("--ranks", type=int, default=4)
    args = parser.parse_args()

    with meshtune.Client(args.address, timeout=600) as client:
        result = None
        for event in client.tune(expr="C[m,n] += A[m,k] * B[k,n]", extents=args.extents,
                                 ranks=args.ranks, model_only=True):
            if event.WhichOneof("event") == "progress":
                p = event.progress
                print("progress: %-7s costed %d, legal %d" % (p.stage, p.costed, p.legal))
            else:
                result = event.result
        print("best on %s, predicted %.3g s:\n%s" % (result.record.mesh, result.record.predicted_s,
                                                     result.record.trace.text))

        # The same workload under other names finds the same record, in these names.
        found = client.lookup(expr="Z[i,j] += X[i,l] * Y[l,j]",
                              extents=args.extents.replace("m=", "i=").replace("n=", "j=")
                              .replace("k=", "l="),
                              ranks=args.ranks)
        print("lookup as Z = X * Y: record %d on %s" % (found.record.id, found.record.mesh))

        kernel = client.codegen(record_id=found.record.id, expr="C[m,n] += A[m,k] * B[k,n]",
                                extents=args.extents, name="gemm")
        print("codegen: gemm kernel of %d lines" % kernel.source.count("\n"))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except meshtune.Error as e:
        print("tune_client: %s: %s" % (e.code, e), file=sys.stderr)
        sys.exit(1)
