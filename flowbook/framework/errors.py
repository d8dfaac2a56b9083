"""TensorFlow's error classes, raised where TensorFlow raises them.

Every :class:`OpError` carries the operation that failed (``.op``), and its
message names that op, its type and the cell or file and line that created it,
so a student sees *where* the graph went wrong, not only *what*.

    >>> import flowbook as fb
    >>> issubclass(fb.errors.InvalidArgumentError, fb.errors.OpError)
    True
"""

from __future__ import annotations

from typing import Any

OK = 0
CANCELLED = 1
UNKNOWN = 2
INVALID_ARGUMENT = 3
DEADLINE_EXCEEDED = 4
NOT_FOUND = 5
ALREADY_EXISTS = 6
PERMISSION_DENIED = 7
RESOURCE_EXHAUSTED = 8
FAILED_PRECONDITION = 9
ABORTED = 10
OUT_OF_RANGE = 11
UNIMPLEMENTED = 12
INTERNAL = 13
UNAVAILABLE = 14
DATA_LOSS = 15
UNAUTHENTICATED = 16


class OpError(Exception):
    """An error raised while running a graph; ``.op`` is the failing operation.

    >>> OpError(None, None, "boom", INTERNAL).message
    'boom'
    """

    error_code = UNKNOWN

    def __init__(self, node_def: Any, op: Any, message: str, error_code: int | None = None):
        super().__init__(message)
        self.node_def = node_def  # kept for TF1 compatibility; flowbook passes the op
        self.op = op  # the Operation that failed, or None
        self.message = message
        if error_code is not None:
            self.error_code = error_code

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> tuple:
        return (type(self), (None, None, self.message))


def _subclass(name: str, code: int, doc: str) -> type[OpError]:
    def __init__(self, node_def: Any, op: Any, message: str, *args: Any) -> None:
        OpError.__init__(self, node_def, op, message, code)

    return type(name, (OpError,), {"__init__": __init__, "error_code": code, "__doc__": doc})


CancelledError = _subclass("CancelledError", CANCELLED, "The run was cancelled.")
UnknownError = _subclass("UnknownError", UNKNOWN, "An error with no better class.")
InvalidArgumentError = _subclass(
    "InvalidArgumentError", INVALID_ARGUMENT, "An op got an invalid argument (a missing feed...)."
)
DeadlineExceededError = _subclass(
    "DeadlineExceededError", DEADLINE_EXCEEDED, "The run did not finish within its deadline."
)
NotFoundError = _subclass("NotFoundError", NOT_FOUND, "Something requested was not found.")
AlreadyExistsError = _subclass("AlreadyExistsError", ALREADY_EXISTS, "It exists already.")
PermissionDeniedError = _subclass("PermissionDeniedError", PERMISSION_DENIED, "Not permitted.")
ResourceExhaustedError = _subclass(
    "ResourceExhaustedError", RESOURCE_EXHAUSTED, "Memory or another resource ran out."
)
FailedPreconditionError = _subclass(
    "FailedPreconditionError",
    FAILED_PRECONDITION,
    "The system is not in a state to run the op (an uninitialised variable...).",
)
AbortedError = _subclass("AbortedError", ABORTED, "The operation was aborted.")
OutOfRangeError = _subclass("OutOfRangeError", OUT_OF_RANGE, "Iterated past the end.")
UnimplementedError = _subclass("UnimplementedError", UNIMPLEMENTED, "Not implemented.")
InternalError = _subclass("InternalError", INTERNAL, "An internal invariant broke.")
UnavailableError = _subclass("UnavailableError", UNAVAILABLE, "The runtime is unavailable.")
DataLossError = _subclass("DataLossError", DATA_LOSS, "Unrecoverable data loss.")
UnauthenticatedError = _subclass("UnauthenticatedError", UNAUTHENTICATED, "Not authenticated.")

_BY_CODE: dict[int, type[OpError]] = {
    cls.error_code: cls
    for cls in (
        CancelledError, UnknownError, InvalidArgumentError, DeadlineExceededError,
        NotFoundError, AlreadyExistsError, PermissionDeniedError, ResourceExhaustedError,
        FailedPreconditionError, AbortedError, OutOfRangeError, UnimplementedError,
        InternalError, UnavailableError, DataLossError, UnauthenticatedError,
    )
}  # fmt: skip


def exception_type_from_error_code(error_code: int) -> type[OpError]:
    """The OpError subclass for a TensorFlow error code.

    >>> exception_type_from_error_code(3).__name__
    'InvalidArgumentError'
    """
    return _BY_CODE[error_code]
