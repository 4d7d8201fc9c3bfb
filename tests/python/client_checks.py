"""meshtune.Client against a meshtuned this script starts (argv[1]: the daemon's binary) on a
free loopback port, over a database and a home directory in $TEST_TMPDIR.

Checks: a Tune stream (progress events, then one stored result), Lookup of it, Lookup of the
same workload under other names (the same record, its trace in the new names), Explain,
Codegen, records, and bad input as meshtune.Error with INVALID_ARGUMENT (the daemon still
serving), NOT_FOUND for an untuned workload. Prints "client_checks: N checks passed".
"""

import os
import re
import signal
import subprocess
import sys
import tempfile

import meshtune

GEMM = "C[m,n] += A[m,k] * B[k,n]"
RENAMED = "Z[i,j] += X[i,l] * Y[l,j]"
passed = []


def check(fn):
    fn()
    passed.append(fn.__name__)
    return fn


def raises(code, fn, *args, **kwargs):
    """Calls fn (iterating what it returns); it must raise meshtune.Error with `code`.
    Returns the message."""
    try:
        result = fn(*args, **kwargs)
        if hasattr(result, "__next__"):
            list(result)
    except meshtune.Error as e:
        assert e.code == code, "code %s, want %s (%s)" % (e.code, code, e)
        return str(e)
    raise AssertionError("no %s from %s" % (code, fn))


def start_daemon(binary, work):
    env = dict(os.environ, MESHTUNE_HOME=os.path.join(work, "home"))
    daemon = subprocess.Popen([binary, "--listen", "127.0.0.1:0", "--db",
                               os.path.join(work, "t.db")],
                              stdout=subprocess.PIPE, stderr=open(os.path.join(work, "err"), "w"),
                              env=env, text=True)
    line = daemon.stdout.readline()
    prefix = "meshtuned listening on "
    assert line.startswith(prefix), "the daemon said %r" % line
    return daemon, line[len(prefix):].strip()


work = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
daemon, address = start_daemon(sys.argv[1], work)
client = meshtune.Client(address, timeout=300)
tuned = {}


@check
def tune_streams_progress_then_one_stored_result():
    events = list(client.tune(expr=GEMM, extents={"m": 64, "n": 48, "k": 32}, ranks=4,
                              model_only=True, max_evaluations=50))
    kinds = [e.WhichOneof("event") for e in events]
    assert kinds[-1] == "result" and kinds.count("result") == 1, kinds
    assert len(kinds) >= 2 and set(kinds[:-1]) == {"progress"}, kinds
    assert events[-2].progress.stage == "done", events[-2].progress
    result = events[-1].result
    assert result.stored and result.record.id > 0, result
    assert result.record.trace.text.startswith("distribute"), result.record.trace.text
    assert isinstance(result, meshtune.proto.TuneResult)
    tuned["record"] = result.record


@check
def lookup_finds_the_record():
    found = client.lookup(expr=GEMM, extents="m=64,n=48,k=32", ranks=4)
    assert isinstance(found, meshtune.proto.LookupResponse)
    assert found.record.id == tuned["record"].id
    assert found.record.trace.text == tuned["record"].trace.text


@check
def a_renamed_lookup_finds_the_record_in_its_names():
    found = client.lookup(meshtune.proto.LookupRequest(
        problem=meshtune.proto.Problem(expr=RENAMED, extents="i=64,j=48,l=32"), ranks=4))
    assert found.record.id == tuned["record"].id
    assert found.record.problem.expr == RENAMED, found.record.problem
    # The tuned trace with every index and tensor renamed (loop names such as mo stay); the
    # translation may open with a reorder into the request's loop order.
    names = {"m": "i", "n": "j", "k": "l", "C": "Z", "A": "X", "B": "Y"}
    want = re.sub(r"\b([mnkABC])\b", lambda g: names[g.group(1)], tuned["record"].trace.text)
    assert found.record.trace.text.endswith(want), (found.record.trace.text, want)


@check
def explain_codegen_and_records():
    r = tuned["record"]
    explained = client.explain(expr=GEMM, extents="m=64,n=48,k=32", mesh=r.mesh,
                               trace=r.trace.text)
    assert explained.legal, explained
    kernel = client.codegen(record_id=r.id, expr=GEMM, extents="m=64,n=48,k=32", name="gemm")
    assert "gemm(" in kernel.source and "gemm_shard" in kernel.header, kernel.header[:200]
    ids = [x.id for x in client.records()]
    assert r.id in ids, ids
    assert client.record(r.id).fingerprint == r.fingerprint


@check
def bad_input_is_invalid_argument_and_the_daemon_keeps_serving():
    message = raises("INVALID_ARGUMENT", client.lookup, expr="C[m,n] += A[m,k] *",
                     extents="m=4,n=4,k=4", ranks=4)
    assert message, "an empty message"
    raises("INVALID_ARGUMENT", client.tune, expr=GEMM, extents="m=4,n=-4,k=4", ranks=4,
           model_only=True)
    raises("NOT_FOUND", client.lookup, expr=GEMM, extents="m=8,n=8,k=8", ranks=4)
    try:
        client.lookup(expr=GEMM, extents="m=4,n=4,k=4", rank=4)
        raise AssertionError("an unknown field was taken")
    except TypeError as e:
        assert "LookupRequest has no field rank" in str(e), e
    assert client.lookup(expr=GEMM, extents="m=64,n=48,k=32", ranks=4).record.id > 0


client.close()
daemon.send_signal(signal.SIGTERM)
assert daemon.wait(timeout=30) == 0, "meshtuned exited %s" % daemon.returncode
print("client_checks: %d checks passed" % len(passed))
