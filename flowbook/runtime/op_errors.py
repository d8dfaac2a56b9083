"""An op's failure as the OpError a user reads: the op, its type and the cell/line that made it.

Shared by every executor (``flowbook.runtime.executor``'s scheduler, serial
reference and straight line, and ``flowbook.runtime.frames`` for plans with
branches and loops), so a failing kernel reads the same whichever ran it.

**In the user's terms.**  A kernel that fails inside numpy speaks numpy's
jargon (``matmul: Input operand 1 has a mismatch in its core dimension 0,
with gufunc signature ...``).  When the caller passes the op's input values,
the op's own ``infer`` (the check that runs when the graph is built) is run
again on their actual shapes: where it objects, its message replaces the
kernel's, so build and run time say the same thing (``inner dimensions
differ (3 vs 4), a[32,3] @ b[4,2]``).  Compiled code (the straight line, a
compiled loop) reads the values from its frame in the traceback (``op_args``),
passed as a function called only when the error is not running out of
memory: values read keep their buffers alive.  A caller without the values
passes none; numpy's broadcasting error names the shapes itself, which serve
instead.  Where ``infer`` accepts the shapes, or none are at hand, the
kernel's message stays.  Kernels that raise an OpError of
their own already speak the user's terms and are left as they are.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     op = fb.no_op(name="x")
    >>> type(op_error(op, ValueError("bad"))).__name__
    'InvalidArgumentError'
"""

from __future__ import annotations

import re
import traceback
from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import Any

from flowbook.framework import errors
from flowbook.framework.tensor import Operation, Tensor
from flowbook.framework.tensor_shape import Shape
from flowbook.runtime.plan import Plan


def op_error(
    op: Operation,
    exc: BaseException,
    device: Any = None,
    args: Sequence[Any] | Callable[[], Sequence[Any] | None] | None = None,
) -> errors.OpError:
    """``exc`` raised by ``op``'s kernel, as an OpError naming the op, type and site.

    An OpError keeps its class; running out of memory (a MemoryError, or what
    ``device`` calls out of memory) becomes ResourceExhaustedError naming the
    device; anything else becomes InvalidArgumentError, saying what ``op``'s
    ``infer`` says of the input values ``args`` when it rejects them
    (:func:`shape_message`), else the kernel's message with its type named.
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
        cls = errors.InvalidArgumentError
        if callable(args):  # read only here: out of memory, the values must be let go
            args = args()
        if args is None:
            args = _broadcast_operands(exc)
        message = shape_message(op, args) or f"{type(exc).__name__}: {exc}"
    return cls(None, op, f"{op.describe()}: {message}")


def shape_message(op: Operation, args: Sequence[Any] | None) -> str | None:
    """What ``op``'s ``infer`` says of the input values ``args``; None when it accepts them.

    ``infer`` sees the op's input tensors with the values' actual shapes in
    place of the static ones, so a clash that placeholders of unknown
    dimensions let through reads as it would have when the graph was built.

    >>> import numpy as np, flowbook as fb
    >>> with fb.Graph().as_default():
    ...     y = fb.matmul(fb.placeholder(fb.float32), fb.placeholder(fb.float32))
    >>> shape_message(y.op, [np.zeros((32, 3)), np.zeros((4, 2))])
    'inner dimensions differ (3 vs 4), a[32,3] @ b[4,2]'
    >>> shape_message(y.op, [np.zeros((32, 3)), np.zeros((3, 2))]) is None
    True
    """
    if args is None or len(args) < len(op.inputs):
        return None
    given = [
        Tensor(t.op, t.value_index, t.dtype, _actual_shape(t, v))
        for t, v in zip(op.inputs, args, strict=False)
    ]
    try:
        op._opdef.infer(*given, **op.attrs)
    except (ValueError, TypeError) as e:
        return str(e)
    except Exception:  # an infer that cannot judge values it never sees when building
        return None
    return None


_BROADCAST = re.compile(r"could not be broadcast together with shapes ((?:\([\d,]*\) ?)+)")


def _broadcast_operands(exc: BaseException) -> list[Any] | None:
    """Stand-ins of the shapes numpy's broadcasting error names, in order (an ``out`` last).

    >>> [o.shape for o in _broadcast_operands(ValueError(
    ...     "operands could not be broadcast together with shapes (32,3) (4,) "))]
    [(32, 3), (4,)]
    """
    found = _BROADCAST.search(str(exc)) if isinstance(exc, ValueError) else None
    if found is None:
        return None
    shapes = re.findall(r"\(([\d,]*)\)", found.group(1))
    return [SimpleNamespace(shape=tuple(int(d) for d in s.split(",") if d)) for s in shapes]


def _actual_shape(t: Tensor, value: Any) -> Shape:
    """The shape of the value ``t`` holds in this run; its static shape for a non-array."""
    shape = getattr(value, "shape", None)
    if type(shape) is tuple:
        return shape
    if isinstance(value, bool | int | float | complex):
        return ()
    return t._shape


def run_error(
    plan: Plan,
    i: int,
    exc: BaseException,
    args: Sequence[Any] | Callable[[], Sequence[Any] | None] | None = None,
) -> errors.OpError:
    """Op ``i``'s error, its input values ``args`` judged when given (:func:`op_error`);
    after running out of memory, the run's buffers are let go first."""
    device = plan.devices[i] if plan.devices else None
    error = op_error(plan.ops[i], exc, device, args)
    if isinstance(error, errors.ResourceExhaustedError):
        traceback.clear_frames(exc.__traceback__)  # the kernels' frames, the compiled run's
        for d in set(plan.devices):
            d.release_memory()
    return error


def cancelled_error(plan: Plan, path: Any, exc: BaseException) -> errors.CancelledError:
    """The run of ``plan`` that ``Session.close()`` ended (``exc``: the RunCancelled it raised),
    naming the op it was in: from the compiled straight line's line (``path.op_index``), a
    compiled loop's, or the scheduler's loop (its locals ``ops`` and ``i``), where the
    traceback shows one."""
    op = _op_in(plan, path, exc.__traceback__)
    where = f" while {op.describe()} ran" if op is not None else ""
    return errors.CancelledError(None, op, f"Session.close() ended the run{where}.")


def note_interrupt(plan: Plan, path: Any, exc: KeyboardInterrupt) -> None:
    """Add to an interrupt of a run of ``plan`` the op it stopped in, where one shows."""
    op = _op_in(plan, path, exc.__traceback__)
    if op is not None:
        exc.add_note(f"The run was interrupted while {op.describe()} ran.")


def _op_in(plan: Plan, path: Any, tb: Any) -> Operation | None:
    i = path.op_index(tb) if path is not None else None
    if i is not None:
        return plan.ops[i]
    found = None
    while tb is not None:  # the innermost scheduler frame of this plan, or its compiled loop
        local = tb.tb_frame.f_locals
        if local.get("ops") is plan.ops and isinstance(local.get("i"), int):
            found = plan.ops[local["i"]]
        loop = local.get("loop")
        if hasattr(loop, "line_to_op") and (j := loop.op_index(tb)) is not None:
            return plan.ops[j]
        tb = tb.tb_next
    return found


def deadline_error(plan: Plan, parked: dict[int, Any]) -> errors.DeadlineExceededError:
    """The run's deadline passed while waiting: name the op that waits, if one does."""
    for i, pending in parked.items():
        op = plan.ops[i]
        return errors.DeadlineExceededError(
            None, op, f"Timed out waiting for {op.describe()}: {pending.what}"
        )
    return errors.DeadlineExceededError(None, None, "Timed out waiting for a kernel")
