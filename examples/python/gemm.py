"""A GEMM whose shards are NumPy arrays, planned and run by meshtune on mpi4py's COMM_WORLD,
checked against numpy.einsum on the gathered result.

    PYTHONPATH=bazel-bin/python mpirun -n 4 python3 examples/python/gemm.py
    ... gemm.py --mode wisdom --wisdom wisdom.jsonl   (`meshtune records export > wisdom.jsonl`)

Every rank builds the same A and B from a seed and fills its own blocks of them
(plan.shard); C starts as a random matrix on rank 0, scattered; after one execute
(C += A B), C is gathered on rank 0 and compared with C + einsum("mk,kn->mn", A, B).
Prints "gemm: verified on N ranks (MODE, mesh MESH)" on rank 0 and exits 0, or says what
differs and exits 1.
"""

import argparse
import sys

import numpy as np
from mpi4py import MPI

import meshtune


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--extents", default="m=50,n=37,k=29")
    parser.add_argument("--mode", default=None, choices=["estimate", "wisdom", "measure"])
    parser.add_argument("--wisdom", default=None, help="wisdom file (wisdom mode)")
    parser.add_argument("--dtype", default="f32", choices=["f32", "f64"])
    args = parser.parse_args()

    comm = MPI.COMM_WORLD
    plan = meshtune.Plan("C[m,n] += A[m,k] * B[k,n]", args.extents, comm=comm,
                         mode=args.mode, wisdom=args.wisdom, dtype=args.dtype)
    dtype = np.float32 if args.dtype == "f32" else np.float64
    ext = dict(part.split("=") for part in args.extents.split(","))
    m, n, k = int(ext["m"]), int(ext["n"]), int(ext["k"])

    rng = np.random.default_rng(7)  # the same A and B on every rank
    A = rng.uniform(-1, 1, (m, k)).astype(dtype)
    B = rng.uniform(-1, 1, (k, n)).astype(dtype)
    C0 = rng.uniform(-1, 1, (m, n)).astype(dtype) if comm.rank == 0 else None

    shards = plan.empty_shards()
    for name, whole in (("A", A), ("B", B)):
        (i, j), (rows, cols) = plan.shard(name)
        shards[name][...] = whole[i:i + rows, j:j + cols]
    plan.scatter("C", C0, out=shards["C"])

    plan.execute(shards)
    C = plan.gather("C", shards["C"])

    if comm.rank != 0:
        return 0
    want = C0.astype(np.float64) + np.einsum("mk,kn->mn", A.astype(np.float64),
                                             B.astype(np.float64))
    error = np.max(np.abs(C - want)) if C.size else 0.0
    tolerance = (1e-4 if dtype == np.float32 else 1e-10) * k
    mode = args.mode or ("wisdom" if args.wisdom else "estimate")
    if not error <= tolerance:
        print("gemm: WRONG on %d ranks (%s, mesh %s): max error %g > %g\ntrace:\n%s"
              % (comm.size, mode, plan.mesh, error, tolerance, plan.trace))
        return 1
    if mode == "measure" and not plan.measured_seconds > 0:
        print("gemm: measure mode, but the plan has no measured time")
        return 1
    print("gemm: verified on %d ranks (%s, mesh %s)" % (comm.size, mode, plan.mesh))
    return 0


if __name__ == "__main__":
    sys.exit(main())
