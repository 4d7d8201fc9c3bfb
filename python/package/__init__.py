"""meshtune from Python.

``meshtune.Plan`` plans a tensor statement (or a program of several) on an mpi4py
communicator and runs it on NumPy arrays, without copying them::

    from mpi4py import MPI
    import meshtune

    plan = meshtune.Plan("C[m,n] += A[m,k] * B[k,n]", "m=1000,n=1000,k=1000",
                         comm=MPI.COMM_WORLD, mode="estimate")
    shards = plan.empty_shards()          # {"C": ndarray, "A": ..., "B": ...}
    start, shape = plan.shard("A")        # where this rank's block of A lies
    plan.execute(shards)
    C = plan.gather("C", shards["C"])     # the whole C on rank 0, None elsewhere

``meshtune.Client`` talks to a running ``meshtuned`` (tune, lookup, explain, codegen,
records) and returns the messages of proto/meshtune.proto (``meshtune.proto``).
Failures raise ``meshtune.Error`` (``.code``, ``.message``). See python/README.md.
"""

import atexit as _atexit

from meshtune import _meshtune
from meshtune._error import Error
from meshtune._meshtune import Plan

# No plan may outlive MPI: mpi4py finalizes MPI after the interpreter's atexit functions.
_atexit.register(_meshtune._close_all)

__all__ = ["Plan", "Client", "Error", "proto"]


def __getattr__(name):
    # The client and the messages need grpcio and protobuf; plans do not.
    if name == "Client":
        from meshtune.client import Client

        return Client
    if name == "proto":
        from meshtune import meshtune_pb2

        return meshtune_pb2
    raise AttributeError("module 'meshtune' has no attribute %r" % name)
