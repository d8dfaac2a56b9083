"""Gradient accumulators, under TensorFlow's names (ConditionalAccumulator, AccumulatorTakeGradient...).

TF1's ``tf.ConditionalAccumulator`` (``flowbook.ops.state.accumulators``) is what
``SyncReplicasOptimizer`` keeps one of per variable, on the variable's ps: every
replica pushes its gradient, the chief takes their average.  As a queue, the
accumulator lives in the session (on a cluster, in the task server: shared by
every client that names it), never in the graph: the ``ConditionalAccumulator``
op's kernel makes its :class:`AccumulatorState` once per session
(``resource="container"``, the cell ``flowbook.state.resources`` binds) and outputs
it as its string handle.  The other ops take that handle first:

- ``AccumulatorApplyGradient(handle, local_step, gradient)``: adds the gradient
  if ``local_step`` is not older than the accumulator's global step, else drops
  it silently (a stale gradient, computed on weights since updated);
- ``AccumulatorTakeGradient(handle, num_required)``: waits until at least
  ``num_required`` gradients are in, then returns their mean (or sum, by
  ``reduction_type``), empties the accumulator and increments its global step,
  so gradients computed before the take are stale afterwards;
- ``AccumulatorSetGlobalStep(handle, new_global_step)``,
  ``AccumulatorNumAccumulated(handle)``.

**State** (guarded by ``lock``, never held while a caller waits): ``total`` (the
sum so far, None when empty), ``counter`` (gradients in it), ``global_step``
and ``takers`` (waiting takes, first come first served, each with its
``flowbook.state.pending.Pending``).  Every apply and take flushes: while the first
taker's ``num_required`` is met, it gets the average.  A take that must wait
returns a Pending the scheduler parks; a cancelled run withdraws it,
and a session's close or reset (``release``) fails every waiting take.

    >>> import numpy as np
    >>> a = AccumulatorState("acc", np.dtype("float32"), (2,), "MEAN")
    >>> a.apply(0, np.array([1.0, 2.0], np.float32)); a.apply(0, np.array([3.0, 4.0], np.float32))
    >>> a.take(2).result.tolist(), a.global_step, a.counter
    ([2.0, 3.0], 1, 0)
    >>> a.apply(0, np.ones(2, np.float32)); a.counter  # computed before step 1: dropped
    0
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any

import numpy as np

from flowbook.framework import dtypes
from flowbook.framework.errors import CancelledError, InvalidArgumentError
from flowbook.framework.registry import NOT_DIFFERENTIABLE, Out, op
from flowbook.framework.tensor import Tensor
from flowbook.framework.tensor_shape import fmt
from flowbook.state.pending import Pending, settle
from flowbook.state.resources import ResourceCell

__all__ = ["AccumulatorState"]

_STATE = {"stateful": True, "host_only": True, "grad": NOT_DIFFERENTIABLE}


class AccumulatorState:
    """One conditional accumulator in one session.  See the module docstring."""

    def __init__(self, name: str, dtype: np.dtype, shape: tuple | None, reduction: str) -> None:
        self.name = name  # the accumulator op's (shared) name, for messages
        self.dtype = dtype  # numpy dtype of the gradients
        self.shape = shape  # their static shape (dims may be None), or None: any
        self.reduction = reduction  # "MEAN" or "SUM"
        self.total: np.ndarray | None = None  # the sum of the gradients in it; None: empty
        self.counter = 0  # how many gradients the sum holds
        self.global_step = 0  # gradients with a local step below this are stale
        self.takers: deque[tuple[int, Pending]] = deque()  # waiting takes, in arrival order
        self.lock = threading.Lock()  # guards everything above

    def __repr__(self) -> str:
        return f"<ConditionalAccumulator '{self.name}' {self.counter} at step {self.global_step}>"

    def apply(self, local_step: int, grad: np.ndarray) -> None:
        """Add ``grad`` unless it is stale (``local_step`` below the global step)."""
        grad = np.asarray(grad)
        if grad.dtype != self.dtype:
            raise InvalidArgumentError(
                None, None, f"Accumulator '{self.name}' holds {self.dtype}, got {grad.dtype}"
            )
        self._check_shape(grad.shape)
        with self.lock:
            if local_step < self.global_step:
                return
            if self.total is not None and self.total.shape != grad.shape:
                raise InvalidArgumentError(
                    None,
                    None,
                    f"Shape mismatch: expected {fmt(self.total.shape)}, "
                    f"got {fmt(grad.shape)} (accumulator '{self.name}')",
                )
            self.total = grad.copy() if self.total is None else self.total + grad
            self.counter += 1
            done = self._flush()
        _settle_all(done)

    def _check_shape(self, shape: tuple) -> None:
        want = self.shape
        if want is not None and (
            len(want) != len(shape) or any(w is not None and w != d for w, d in zip(want, shape))
        ):
            raise InvalidArgumentError(
                None,
                None,
                f"Shape mismatch: expected {fmt(want)}, got {fmt(shape)} "
                f"(accumulator '{self.name}')",
            )

    def take(self, num_required: int) -> Pending:
        """A Pending for the average of at least ``num_required`` gradients."""
        if num_required <= 0:
            raise InvalidArgumentError(
                None, None, f"Argument num_required must be positive, but was {num_required}"
            )
        pending = Pending(f"{num_required} gradient(s) in accumulator '{self.name}'")
        entry = (num_required, pending)
        pending.on_cancel = lambda: self._withdraw(entry)
        with self.lock:
            self.takers.append(entry)
            done = self._flush()
        _settle_all(done)
        return pending

    def _withdraw(self, entry: tuple[int, Pending]) -> bool:
        with self.lock:
            if entry in self.takers:
                self.takers.remove(entry)
                return True
            return False

    def _flush(self) -> list[tuple[Pending, np.ndarray]]:
        """Serve the waiting takes that can be (lock held); what to settle once released."""
        done = []
        while self.takers and self.total is not None and self.counter >= self.takers[0][0]:
            _, pending = self.takers.popleft()
            self.global_step += 1  # what was computed before this take is stale from now
            value = self.total / self.counter if self.reduction == "MEAN" else self.total
            done.append((pending, np.asarray(value, self.dtype)))
            self.total, self.counter = None, 0
        return done

    def set_global_step(self, step: int) -> None:
        """Set the global step (the chief does, from the model's ``global_step``)."""
        with self.lock:
            self.global_step = int(step)

    def num_accumulated(self) -> int:
        with self.lock:
            return self.counter

    def release(self, message: str) -> None:
        """Fail every waiting take with CancelledError (the session closes or resets)."""
        with self.lock:
            waiting = [p for _, p in self.takers]
            self.takers.clear()
        for p in waiting:
            p.fail(CancelledError(None, None, f"Waiting for {p.what}: {message}"))


def _settle_all(done: list[tuple[Pending, np.ndarray]]) -> None:
    for pending, value in done:
        pending.resolve(value)


# ------------------------------------------------------------------- the ops
def _accumulator(
    xp: Any, *, cell: ResourceCell, dtype: Any, shape: Any, reduction_type: str = "MEAN", **_: Any
) -> AccumulatorState:
    dims = None if shape is None else tuple(shape)
    return cell.get(
        lambda: AccumulatorState(cell.name, dtypes.as_dtype(dtype).np, dims, reduction_type)
    )


def _apply(xp: Any, handle: AccumulatorState, local_step: Any, gradient: Any, **_: Any) -> tuple:
    handle.apply(int(local_step), np.asarray(gradient))
    return ()


def _take(xp: Any, handle: AccumulatorState, num_required: Any, **_: Any) -> Any:
    return settle(handle.take(int(num_required)))


def _set_step(xp: Any, handle: AccumulatorState, new_global_step: Any) -> tuple:
    handle.set_global_step(int(new_global_step))
    return ()


def _check_step(t: Tensor, what: str) -> None:
    if t.dtype is not dtypes.int64:
        raise TypeError(f"The {what} of an accumulator op must be int64, got {t.dtype.name}")


def _apply_infer(h: Tensor, local_step: Tensor, gradient: Tensor, dtype: Any) -> list[Out]:
    _check_step(local_step, "local_step")
    if gradient.dtype is not dtypes.as_dtype(dtype):
        raise TypeError(f"The gradient is {gradient.dtype.name}, the accumulator {dtype}")
    return []


def _set_infer(h: Tensor, step: Tensor) -> list[Out]:
    _check_step(step, "new_global_step")
    return []


op(
    "ConditionalAccumulator",
    (),
    ("dtype", "shape", "container", "shared_name", "reduction_type"),
    lambda **a: Out(dtypes.string, ()),
    _accumulator,
    resource="container",
    doc="A conditional accumulator of gradients (its handle).",
    **_STATE,
)
op(
    "AccumulatorApplyGradient",
    ("handle", "local_step", "gradient"),
    ("dtype",),
    _apply_infer,
    _apply,
    doc="Adds a gradient unless it is stale.",
    **_STATE,
)
op(
    "AccumulatorTakeGradient",
    ("handle", "num_required"),
    ("dtype",),
    lambda h, n, dtype: Out(dtypes.as_dtype(dtype), None),
    _take,
    blocking=True,
    doc="Waits for num_required gradients; their mean.",
    **_STATE,
)
op(
    "AccumulatorSetGlobalStep",
    ("handle", "new_global_step"),
    (),
    _set_infer,
    _set_step,
    doc="Sets the accumulator's global step.",
    **_STATE,
)
op(
    "AccumulatorNumAccumulated",
    ("handle",),
    (),
    lambda h: Out(dtypes.int32, ()),
    lambda xp, a: np.int32(a.num_accumulated()),
    doc="How many gradients the accumulator holds.",
    **_STATE,
)
