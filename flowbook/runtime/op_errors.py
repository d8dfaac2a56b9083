"""An op's failure as the OpError a user reads: the op, its type and the cell/line that made it.

Shared by every executor (``flowbook.runtime.executor``'s scheduler, serial
reference and straight line, and ``flowbook.runtime.frames`` for plans with
branches and loops), so a failing kernel reads the same whichever ran it.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     op = fb.no_op(name="x")
    >>> type(op_error(op, ValueError("bad"))).__name__
    'InvalidArgumentError'
"""

from __future__ import annotations

import traceback
from typing import Any

from flowbook.framework import errors
from flowbook.framework.tensor import Operation
from flowbook.runtime.plan import Plan


def op_error(op: Operation, exc: BaseException, device: Any = None) -> errors.OpError:
    """``exc`` raised by ``op``'s kernel, as an OpError naming the op, type and site.

    An OpError keeps its class; running out of memory (a MemoryError, or what
    ``device`` calls out of memory) becomes ResourceExhaustedError naming the
    device; anything else becomes InvalidArgumentError with the original type named.
    """
    if isinstance(exc, errors.OpError):
        if exc.op is not None and exc.op is not op:
            return exc
        cls, message = type(exc), exc.message
    elif isinstance(exc, MemoryError) or (device is not None and device.is_out_of_memory(exc)):
        cls = errors.ResourceExhaustedError
        if device is None or device.device_type == "CPU":
            message = f"out of memory ({exc})"
        else:
            message = (
                f"OOM when running on {device.full_name}: {exc} The run's buffers on the "
                "device were freed; a smaller batch may fit."
            )
    else:
        cls, message = errors.InvalidArgumentError, f"{type(exc).__name__}: {exc}"
    return cls(None, op, f"{op.describe()}: {message}")


def run_error(plan: Plan, i: int, exc: BaseException) -> errors.OpError:
    """Op ``i``'s error; after running out of memory, the run's buffers are let go first."""
    device = plan.devices[i] if plan.devices else None
    error = op_error(plan.ops[i], exc, device)
    if isinstance(error, errors.ResourceExhaustedError):
        traceback.clear_frames(exc.__traceback__)  # the kernels' frames, the compiled run's
        for d in set(plan.devices):
            d.release_memory()
    return error


def deadline_error(plan: Plan, parked: dict[int, Any]) -> errors.DeadlineExceededError:
    """The run's deadline passed while waiting: name the op that waits, if one does."""
    for i, pending in parked.items():
        op = plan.ops[i]
        return errors.DeadlineExceededError(
            None, op, f"Timed out waiting for {op.describe()}: {pending.what}"
        )
    return errors.DeadlineExceededError(None, None, "Timed out waiting for a kernel")
