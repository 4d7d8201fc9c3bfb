"""meshtune.Client: the Tuner service of a running meshtuned, from Python.

Each method takes either a request message (``meshtune.proto.TuneRequest(...)``) or keyword
arguments that fill one: ``expr``, ``extents`` (text or a dict), ``dtype``, ``layouts`` and
``result_on_layer`` go into its ``problem``; ``mesh`` ("x=2,y=2") and ``mem_per_rank`` into its
``mesh``; ``trace`` (text) into its ``trace``; any other keyword names a field of the request
(``ranks=4``, ``model_only=True``, ``record_id=7``). It returns the service's messages. A
failed call raises ``meshtune.Error`` with the gRPC status code's name and the daemon's
message (bad input: ``INVALID_ARGUMENT``; an untuned workload's lookup: ``NOT_FOUND``).
"""

import grpc

from meshtune import meshtune_pb2 as pb
from meshtune import meshtune_pb2_grpc as pb_grpc
from meshtune._error import Error

_PROBLEM_FIELDS = ("expr", "extents", "dtype", "layouts", "result_on_layer")


def _extents_text(extents):
    if isinstance(extents, dict):
        return ",".join("%s=%s" % (k, v) for k, v in extents.items())
    return extents


def _request(method, cls, request, fields):
    """A `cls` message: `request` (or an empty one) with `fields` set as the module says."""
    if request is not None and not isinstance(request, cls):
        raise TypeError("%s() takes a %s or keyword arguments, got %s"
                        % (method, cls.__name__, type(request).__name__))
    message = cls()
    if request is not None:
        message.CopyFrom(request)
    for key, value in fields.items():
        if value is None:
            continue
        if key in _PROBLEM_FIELDS and "problem" in cls.DESCRIPTOR.fields_by_name:
            if key == "layouts":
                message.problem.layouts.update(value)
            else:
                setattr(message.problem, key, _extents_text(value) if key == "extents" else value)
        elif key == "mesh" and isinstance(value, str):
            message.mesh.axes = value
        elif key == "mem_per_rank":
            message.mesh.mem_per_rank = value
        elif key == "trace" and isinstance(value, str):
            message.trace.text = value
        elif key in cls.DESCRIPTOR.fields_by_name:
            field = getattr(message, key)
            if hasattr(field, "CopyFrom") and not isinstance(value, (str, bytes, int, float)):
                field.CopyFrom(value)
            else:
                setattr(message, key, value)
        else:
            raise TypeError("%s() got an unexpected keyword argument %r (%s has no field %s)"
                            % (method, key, cls.__name__, key))
    return message


def _error(rpc_error):
    return Error(rpc_error.code().name, rpc_error.details() or "")


class Client:
    """A connection to meshtuned at `target` ("localhost:PORT").

    `timeout` (seconds) bounds each call unless the call gives its own; None waits as long
    as the call takes. Usable as a context manager (closes the channel).
    """

    def __init__(self, target, timeout=None):
        self._channel = grpc.insecure_channel(target)
        self._stub = pb_grpc.TunerStub(self._channel)
        self._timeout = timeout

    def close(self):
        self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _call(self, rpc, request, timeout):
        try:
            return rpc(request, timeout=self._timeout if timeout is None else timeout)
        except grpc.RpcError as e:
            raise _error(e) from None

    def tune(self, request=None, timeout=None, **fields):
        """Tunes a problem: yields TuneEvent messages, progress first, then one result
        (``event.WhichOneof("event")`` is "progress" or "result")."""
        message = _request("tune", pb.TuneRequest, request, fields)
        stream = self._call(self._stub.Tune, message, timeout)
        try:
            for event in stream:
                yield event
        except grpc.RpcError as e:
            raise _error(e) from None
        finally:
            stream.cancel()

    def lookup(self, request=None, timeout=None, **fields):
        """The best record of a workload: a LookupResponse (NOT_FOUND when never tuned)."""
        return self._call(self._stub.Lookup,
                          _request("lookup", pb.LookupRequest, request, fields), timeout)

    def explain(self, request=None, timeout=None, **fields):
        """A trace's legality, transfers and cost: an ExplainResponse."""
        return self._call(self._stub.Explain,
                          _request("explain", pb.ExplainRequest, request, fields), timeout)

    def codegen(self, request=None, timeout=None, **fields):
        """The C++ of a trace or a record (``record_id``): a CodegenResponse."""
        return self._call(self._stub.Codegen,
                          _request("codegen", pb.CodegenRequest, request, fields), timeout)

    def records(self, request=None, timeout=None, **fields):
        """Tuning records (of one workload when a problem is given, else all): yields Record
        messages in the order of their ids, paging through ListRecords."""
        message = _request("records", pb.ListRecordsRequest, request, fields)
        while True:
            page = self._call(self._stub.ListRecords, message, timeout)
            for record in page.records:
                yield record
            if not page.next_page_token:
                return
            message.page_token = page.next_page_token

    def record(self, id, request=None, timeout=None, **fields):
        """One record by id (in the problem's names when a problem is given): a Record."""
        message = _request("record", pb.GetRecordRequest, request, fields)
        message.id = id
        return self._call(self._stub.GetRecord, message, timeout)
