"""meshtune.Plan.execute from Python, timed as bench/plan_bench.cc times Plan::Execute from C++
(the slowest rank's time after a barrier, the median of --reps after one warm-up), on the
plan of the same wisdom file: C[m,n] += A[m,k] * B[k,n], 2048 cubed, f32.

    PYTHONPATH=bazel-bin/python OPENBLAS_NUM_THREADS=1 mpirun -n 4 --oversubscribe
        --bind-to none python3 bench/python_execute.py
        --wisdom bazel-bin/bench/plan_bench_wisdom.jsonl --reps 7     (one command line)

Prints "Python Plan.execute, mesh MESH: median S s of REPS" on rank 0.
"""

import argparse
import statistics

from mpi4py import MPI

import meshtune


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--wisdom", required=True)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--extents", default="m=2048,n=2048,k=2048")
    args = parser.parse_args()
    comm = MPI.COMM_WORLD
    plan = meshtune.Plan("C[m,n] += A[m,k] * B[k,n]", args.extents, comm=comm,
                         wisdom=args.wisdom)
    shards = plan.empty_shards()
    for shard in shards.values():
        shard.fill(0.25)

    def timed():
        comm.Barrier()
        t0 = MPI.Wtime()
        plan.execute(shards)
        return comm.allreduce(MPI.Wtime() - t0, op=MPI.MAX)

    timed()  # warm-up
    times = [timed() for _ in range(args.reps)]
    if comm.rank == 0:
        print("Python Plan.execute, mesh %s: median %.4f s of %d"
              % (plan.mesh, statistics.median(times), args.reps))
    plan.close()


if __name__ == "__main__":
    main()
