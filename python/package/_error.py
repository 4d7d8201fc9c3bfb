"""meshtune.Error: what every failure of meshtune raises in Python."""


class Error(Exception):
    """A failure reported by meshtune: a plan's or the daemon's.

    ``code`` is the status code's name, as absl and gRPC spell it ("INVALID_ARGUMENT",
    "NOT_FOUND", "FAILED_PRECONDITION", ...); ``message`` is meshtune's message, which is
    also ``str(error)``.
    """

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message

    def __str__(self):
        return self.message

    def __repr__(self):
        return "meshtune.Error(%r, %r)" % (self.code, self.message)


Error.__module__ = "meshtune"  # shown as meshtune.Error in tracebacks
