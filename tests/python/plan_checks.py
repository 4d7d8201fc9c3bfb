"""meshtune.Plan from Python, on every rank of COMM_WORLD (run under `python3 -m mpi4py`, so
that a failed check aborts the job instead of leaving ranks waiting).

Each check compares with a reference the check computes itself with NumPy from the problem
and the data (numpy.einsum on whole tensors), never with meshtune's own: GEMMs of odd
extents (shards of short last blocks: arrays of the extents by default, of the whole storage
after plan.provide_storage(True)), f32 and f64, arrays by name and in order, a program
of two statements, a plan leaving a rank idle; and the exact meshtune.Error (code and
message) for each kind of bad input, also when only one rank's input is bad. Rank 0 prints
"plan_checks: N checks passed on R ranks".
"""

import os
import tempfile
import threading
import time

import numpy as np
from mpi4py import MPI

import meshtune

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
GEMM = "C[m,n] += A[m,k] * B[k,n]"
passed = []


def check(fn):
    fn()
    comm.Barrier()
    passed.append(fn.__name__)
    return fn


def raises(code, message, fn, *args, **kwargs):
    """Calls fn; it must raise meshtune.Error with `code` and exactly `message`."""
    try:
        fn(*args, **kwargs)
    except meshtune.Error as e:
        assert e.code == code, "%s: code %s, want %s (%s)" % (fn, e.code, code, e)
        assert str(e) == message, "message:\n  %r\nwant:\n  %r" % (str(e), message)
        return
    raise AssertionError("%s did not raise %s %r" % (fn, code, message))


def wholes(shapes, dtype, seed=5):
    rng = np.random.default_rng(seed)  # the same on every rank
    return {t: rng.uniform(-1, 1, s).astype(dtype) for t, s in shapes.items()}


def run_and_gather(plan, whole, outputs):
    """Scatters `whole` from rank 0, executes once, gathers `outputs` on rank 0."""
    shards = plan.empty_shards()
    for t in plan.tensors:
        plan.scatter(t, whole[t] if rank == 0 else None, out=shards[t])
    plan.execute(shards)
    return {t: plan.gather(t, shards[t]) for t in outputs}


def gemm_reference(w):
    f = {t: a.astype(np.float64) for t, a in w.items()}
    return f["C"] + np.einsum("mk,kn->mn", f["A"], f["B"])


def assert_close(got, want, tolerance):
    if rank == 0:
        error = np.max(np.abs(got - want)) if want.size else 0.0
        assert error <= tolerance, "max error %g > %g" % (error, tolerance)


@check
def gemms_of_odd_extents_in_f32_and_f64():
    for m, n, k in ((13, 7, 5), (50, 37, 29), (1, 9, 4)):
        for dtype, np_type, tol in (("f32", np.float32, 1e-4), ("f64", np.float64, 1e-11)):
            plan = meshtune.Plan(GEMM, {"m": m, "n": n, "k": k}, comm=comm, mode="estimate",
                                 dtype=dtype, calibrate=False)
            assert plan.tensors == ["C", "A", "B"] and plan.dtype == dtype
            assert plan.shape("A") == (m, k)
            w = wholes({"C": (m, n), "A": (m, k), "B": (k, n)}, np_type)
            got = run_and_gather(plan, w, ["C"])["C"]
            assert (got is None) == (rank != 0)
            assert_close(got, gemm_reference(w), tol * k)


def run_filled(plan, shards):
    """Fills A and B of `shards` by plan.shard from whole tensors every rank builds, C from
    zero; executes once; checks C gathered on rank 0."""
    w = wholes({"A": (13, 5), "B": (5, 7)}, np.float32)
    for t in ("A", "B"):
        (i, j), (r, c) = plan.shard(t)
        shards[t][:r, :c] = w[t][i:i + r, j:j + c]
    plan.execute([shards[t] for t in plan.tensors])  # a list in tensors order works too
    got = plan.gather("C", shards["C"])
    w["C"] = np.zeros((13, 7), np.float32)
    assert_close(got, gemm_reference(w), 1e-4 * 5)


@check
def shards_are_their_extents_or_with_provide_storage_the_whole_storage():
    plan = meshtune.Plan(GEMM, "m=13,n=7,k=5", comm=comm, mode="estimate", calibrate=False)
    assert not plan.provides_storage
    shards = plan.empty_shards()
    for t in plan.tensors:
        start, shape = plan.shard(t)
        assert shards[t].shape == shape and shards[t].dtype == np.float32, (t, shape)
        assert len(start) == 2 and all(s >= 0 for s in start)
        storage = plan.storage(t)
        assert all(e <= s for e, s in zip(shape, storage)), (t, shape, storage)
        # By default a shard is its extents alone, C-contiguous: the plan keeps the rest.
        assert shards[t].flags.c_contiguous and shards[t].base.size == shards[t].size, t
        shards[t] = np.zeros(shape, np.float32) if t == "C" else shards[t]
    run_filled(plan, shards)
    # Opted in: arrays of the whole storage, the schedule running on them in place.
    plan.provide_storage(True)
    assert plan.provides_storage
    shards = plan.empty_shards()
    for t in plan.tensors:
        storage, shape = plan.storage(t), plan.shard(t)[1]
        assert shards[t].shape == shape and shards[t].base.size == storage[0] * storage[1], t
        # An array of the storage's shape is taken as well as the view empty_shards gives.
        shards[t] = np.zeros(storage, np.float32) if t == "C" else shards[t]
    run_filled(plan, shards)


@check
def a_program_of_two_statements_runs_in_one_execute():
    plan = meshtune.Plan("H[b,f] = X[b,d] * W1[d,f]; Y[b,e] = H[b,f] * W2[f,e]",
                         "b=7,d=5,e=3,f=11", comm=comm, mode="estimate", calibrate=False)
    assert plan.tensors == ["H", "X", "W1", "Y", "W2"], plan.tensors
    w = wholes({"H": (7, 11), "X": (7, 5), "W1": (5, 11), "Y": (7, 3), "W2": (11, 3)},
               np.float32)
    got = run_and_gather(plan, w, ["H", "Y"])
    h = np.einsum("bd,df->bf", w["X"].astype(np.float64), w["W1"].astype(np.float64))
    assert_close(got["H"], h, 1e-4 * 5)
    assert_close(got["Y"], np.einsum("bf,fe->be", h, w["W2"].astype(np.float64)), 1e-4 * 55)


@check
def a_smaller_mesh_leaves_ranks_idle():
    plan = meshtune.Plan(GEMM, "m=8,n=6,k=4", comm=comm, mode="estimate", mesh="x=1",
                         calibrate=False)
    assert plan.mesh == "x=1" and plan.active == (rank == 0)
    if rank > 0:
        assert all(s == (0, 0) for _, s in (plan.shard(t) for t in plan.tensors))
    w = wholes({"C": (8, 6), "A": (8, 4), "B": (4, 6)}, np.float32)
    assert_close(run_and_gather(plan, w, ["C"])["C"], gemm_reference(w), 1e-4 * 4)


@check
def too_small_for_the_ranks_with_idle_ranks_allowed_says_so():
    # Every mesh of 2 or more ranks leaves one a block past the end of a 1x1x1 problem. With
    # idle ranks allowed the refusal names the rank counts tried and does not advise them.
    where = ("the 2 ranks of x=2" if size == 2
             else "2 to %d ranks (%s), idle ranks allowed," % (
                 size, {3: "x=3 or x=2", 4: "x=4 or x=2,y=2 or x=3 or x=2"}[size]))
    advice = ("one rank (--ranks 1, or a mesh of one rank) leaves the other idle instead"
              if size == 2 else
              "fewer than 2 ranks (a smaller --ranks or mesh) leave more ranks idle")
    raises("FAILED_PRECONDITION",
           "no schedule spreads C[m,n] += A[m,k] * B[k,n] (k=1,m=1,n=1) over %s without "
           "leaving a rank empty (every split of an index over an axis leaves a block past its "
           "end); %s" % (where, advice),
           meshtune.Plan, GEMM, "m=1,n=1,k=1", comm=comm, mode="estimate",
           allow_idle_ranks=True, calibrate=False)


@check
def the_gil_is_released_while_a_plan_runs():
    plan = meshtune.Plan(GEMM, "m=640,n=640,k=640", comm=comm, mode="estimate", dtype="f64",
                         calibrate=False)
    shards = plan.empty_shards()
    ticks, stop = [], threading.Event()

    def count():
        while not stop.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    counter = threading.Thread(target=count)
    counter.start()
    t0 = time.perf_counter()
    plan.execute(shards)
    t1 = time.perf_counter()
    stop.set()
    counter.join()
    inside = [t for t in ticks if t0 + 0.01 < t < t1 - 0.01]
    assert t1 - t0 < 0.05 or len(inside) >= 1, (
        "%d ticks of the other thread during an execute of %.3f s" % (len(inside), t1 - t0))


def raises_where(bad, code, message, fn, arrays):
    """fn(arrays) must raise on every rank: `message` (this rank's, when `bad` here) on the
    ranks where `bad`, the lowest such rank's message after "rank R: " on the others."""
    first = comm.allgather(message if bad else None)
    lowest = min(r for r, m in enumerate(first) if m is not None)
    raises(code, message if bad else "rank %d: %s" % (lowest, first[lowest]), fn, arrays)


@check
def bad_arrays_raise_the_same_error_on_every_rank():
    plan = meshtune.Plan(GEMM, "m=13,n=7,k=5", comm=comm, mode="estimate", calibrate=False)
    (_, (r, c)) = plan.shard("A")
    good = plan.empty_shards()

    def with_a(a):
        return dict(good, A=a)

    storage = plan.storage("A")
    wrong = (storage[0] + 1, c)  # neither the shard's shape nor its storage's
    shape_message = "A: shape (%d, %d), but this rank's shard of A is (%d, %d)" % (wrong + (r, c))
    raises("INVALID_ARGUMENT", shape_message + " (plan.shard('A'))",
           plan.execute, with_a(np.zeros(wrong, np.float32)))
    raises("INVALID_ARGUMENT", "A: dtype float64, but the plan's is float32",
           plan.execute, with_a(np.zeros((r, c), np.float64)))
    raises("INVALID_ARGUMENT", "A: 1 dimensions, but A has 2",
           plan.execute, with_a(np.zeros(r * c, np.float32)))
    raises("INVALID_ARGUMENT", "A: expected a numpy.ndarray, got list",
           plan.execute, with_a([[0.0] * c] * r))
    if r > 1 and c > 1:
        t = np.zeros((c, r), np.float32).T
        raises("INVALID_ARGUMENT",
               "A: the array's strides (4, %d) (bytes) are not the shard's (%d, 4): pass "
               "plan.empty_shards()['A'] or a contiguous copy (numpy.ascontiguousarray)"
               % (4 * r, 4 * c), plan.execute, with_a(t))
    frozen = np.zeros((r, c), np.float32)
    frozen.setflags(write=False)
    raises("INVALID_ARGUMENT", "A: the array is read-only (the plan writes its shards)",
           plan.execute, with_a(frozen))
    plan.gather("A", frozen)  # gather only reads its shard
    # An array of the storage, by default: refused where it is larger than the shard, with
    # the way to opt in; then, opted in, taken, and the storage's layout asked for.
    ragged = any(comm.allgather(storage != (r, c)))
    if ragged:
        raises_where(storage != (r, c), "INVALID_ARGUMENT",
                     "A: shape (%d, %d), but this rank's shard of A is (%d, %d) (plan.shard('A'))"
                     "; an array of its storage needs plan.provide_storage(True)"
                     % (storage + (r, c)), plan.execute, with_a(np.zeros(storage, np.float32)))
    plan.provide_storage(True)
    stored = plan.empty_shards()
    plan.execute(dict(stored, A=np.zeros(storage, np.float32)))
    here = r > 1 and c > 1  # a transposed array has other strides
    if any(comm.allgather(here)):
        other = ("an array of shape (%d, %d) (plan.storage('A'))" % storage
                 if storage != (r, c) else "a contiguous copy (numpy.ascontiguousarray)")
        message = ("A: the array's strides (4, %d) (bytes) are not the shard's (%d, 4): pass "
                   "plan.empty_shards()['A'] or %s" % (4 * r, 4 * storage[1], other))
        a = np.zeros((c, r), np.float32).T if here else stored["A"]
        raises_where(here, "INVALID_ARGUMENT", message, plan.execute, dict(stored, A=a))
    plan.provide_storage(False)
    raises("INVALID_ARGUMENT", "execute: Q is not a tensor of the plan (C, A, B)",
           plan.execute, dict(good, Q=good["A"]))
    raises("INVALID_ARGUMENT", "execute: no array for B (the plan's tensors: C, A, B)",
           plan.execute, {"C": good["C"], "A": good["A"]})
    raises("INVALID_ARGUMENT", "execute: 2 arrays, but the plan has 3 tensors (C, A, B)",
           plan.execute, [good["C"], good["A"]])
    # One rank's bad array: every rank raises, the others naming that rank.
    bad = size - 1
    mine = with_a(np.zeros(wrong, np.float32)) if rank == bad else good
    message = comm.bcast(shape_message + " (plan.shard('A'))", root=bad)
    raises("INVALID_ARGUMENT", message if rank == bad else "rank %d: %s" % (bad, message),
           plan.execute, mine)
    plan.execute(good)  # and the plan still runs


@check
def bad_arguments_raise_meshtunes_messages():
    raises("INVALID_ARGUMENT", "mode: 'fast' is not one of estimate, wisdom, measure",
           meshtune.Plan, GEMM, "m=4,n=4,k=4", mode="fast")
    raises("INVALID_ARGUMENT",
           "comm: expected an mpi4py intracommunicator (mpi4py.MPI.Intracomm), got int",
           meshtune.Plan, GEMM, "m=4,n=4,k=4", comm=5)
    raises("INVALID_ARGUMENT", "comm: MPI.COMM_NULL is no communicator",
           meshtune.Plan, GEMM, "m=4,n=4,k=4", comm=MPI.COMM_NULL)
    raises("INVALID_ARGUMENT", "extents: k is str, not an integer",
           meshtune.Plan, GEMM, {"m": 4, "n": 4, "k": "4"})
    raises("INVALID_ARGUMENT", "dtype: 'f16' is not f32 or f64",
           meshtune.Plan, GEMM, "m=4,n=4,k=4", dtype="f16")
    try:
        meshtune.Plan(GEMM, "m=4,n=4,k=4", modes="estimate")
        raise AssertionError("an unknown keyword was taken")
    except TypeError as e:
        assert str(e).startswith("Plan: unexpected keyword argument 'modes'"), e
    empty = comm.bcast(tempfile.mkstemp(suffix=".jsonl")[1] if rank == 0 else None)
    try:
        meshtune.Plan(GEMM, "m=6,n=6,k=6", comm=comm, wisdom=empty)
        raise AssertionError("a plan from a wisdom file without the workload")
    except meshtune.Error as e:
        assert e.code == "NOT_FOUND" and str(e).startswith(
            "no tuning record for C[m,n] += A[m,k] * B[k,n] (m=6,n=6,k=6, f32)"), repr(e)
    comm.Barrier()
    if rank == 0:
        os.remove(empty)
    plan = meshtune.Plan(GEMM, "m=6,n=6,k=6", comm=comm, calibrate=False)
    raises("NOT_FOUND", "the plan has no tensor Q", plan.shard, "Q")
    raises("INVALID_ARGUMENT", "root %d is not a rank of the communicator (size %d)"
           % (size, size), plan.gather, "C", plan.empty_shards()["C"], root=size)
    with plan:
        pass
    raises("FAILED_PRECONDITION",
           "the plan was closed (Plan.close(), or the interpreter is exiting)",
           lambda: plan.trace)


comm.Barrier()
if rank == 0:
    print("plan_checks: %d checks passed on %d ranks" % (len(passed), size))
