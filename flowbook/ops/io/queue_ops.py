"""Queue ops, under TensorFlow's names (FIFOQueueV2, QueueEnqueueV2, QueueDequeueManyV2...).

The queue op (``FIFOQueueV2``, ``PaddingFIFOQueueV2``,
``RandomShuffleQueueV2``, ``PriorityQueueV2``) outputs the queue itself, a
``flowbook.state.queue_state.QueueState`` the session keeps in a container
(``resource="container"``: the session binds a ``flowbook.state.resources.ResourceCell``
as ``cell``; the first run makes the queue).  Its handle is a string tensor,
as TF1's queue ops had string ref handles.  Every other op takes that handle
as its first input:

- ``QueueEnqueueV2(handle, *components)``, ``QueueEnqueueManyV2`` (the first
  dimension of every component is the batch): no output; they may wait for
  room.
- ``QueueDequeueV2(handle)``, ``QueueDequeueManyV2(handle, n)``,
  ``QueueDequeueUpToV2(handle, n)``: the components; they may wait for
  elements.  Once the queue is closed and drained: ``OutOfRangeError``.
- ``QueueCloseV2(handle)`` (``cancel_pending_enqueues``), ``QueueSizeV2``,
  ``QueueIsClosedV2``.

The ops that may wait are ``blocking``: their kernels return what
``flowbook.state.pending.settle`` gives (a Pending the scheduler parks,
or, on a path that cannot park, the value after waiting).  Every component
is checked against the queue's dtypes and shapes when it is enqueued
(``InvalidArgumentError`` naming the op and the component).  All are
stateful, host-only and not differentiable.  The Python classes are in
``flowbook.ops.io.queues``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     q = fb.FIFOQueue(3, fb.float32)
    ...     s.run(q.enqueue_many([[1.0, 2.0]]))
    ...     [float(s.run(q.dequeue())) for _ in range(2)]
    [1.0, 2.0]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowbook.framework import dtypes
from flowbook.framework.errors import InvalidArgumentError, OutOfRangeError
from flowbook.framework.registry import NOT_DIFFERENTIABLE, OpDef, Out, op
from flowbook.framework.tensor import Tensor
from flowbook.framework.tensor_shape import fmt
from flowbook.state.pending import settle
from flowbook.state.queue_state import KINDS, QueueState
from flowbook.state.resources import ResourceCell

__all__: list[str] = []

_STATE = {"stateful": True, "host_only": True, "grad": NOT_DIFFERENTIABLE}
_QUEUE_ATTRS = ("component_types", "shapes", "capacity", "container", "shared_name")


# ------------------------------------------------------------- the queues
def _queue_infer(**attrs: Any) -> Out:
    return Out(dtypes.string, ())


def _queue_kernel(kind: str) -> Any:
    def kernel(
        xp: Any,
        *,
        cell: ResourceCell,
        component_types: list,
        shapes: list,
        capacity: int,
        min_after_dequeue: int = 0,
        seed: int = 0,
        seed2: int = 0,
        **_: Any,
    ) -> QueueState:
        types = [dtypes.as_dtype(t).np for t in component_types]
        shapes_ = [tuple(s) for s in shapes] if shapes else None
        if kind == "priority":  # the priority is an int64 scalar before the components
            types, shapes_ = [np.dtype(np.int64), *types], [(), *shapes_] if shapes_ else None
        seeded = seed or seed2
        return cell.get(
            lambda: QueueState(
                cell.name,
                kind,
                capacity,
                types,
                shapes_,
                min_after_dequeue,
                (seed, seed2) if seeded else None,
            )
        )

    return kernel


def queue(name: str, kind: str) -> OpDef:
    """Declare the op that makes a queue of ``kind`` (once per container cell)."""
    shuffle = ("min_after_dequeue", "seed", "seed2") if kind == "random_shuffle" else ()
    kernel = _queue_kernel(kind)
    return op(
        name, (), _QUEUE_ATTRS + shuffle, _queue_infer, kernel, resource="container", **_STATE
    )


queue("FIFOQueueV2", "fifo")
queue("PaddingFIFOQueueV2", "padding_fifo")
queue("RandomShuffleQueueV2", "random_shuffle")
queue("PriorityQueueV2", "priority")


# ------------------------------------------------------------ enqueueing
def _check(q: QueueState, components: tuple, many: bool) -> int:
    """Check ``components`` against the queue (count, dtypes, shapes); the batch size."""
    if len(components) != len(q.dtypes):
        raise InvalidArgumentError(
            None, None, f"Queue '{q.name}' has {len(q.dtypes)} components, got {len(components)}"
        )
    batch = -1
    for k, (c, t) in enumerate(zip(components, q.dtypes)):
        c = np.asarray(c)
        if c.dtype != t and not (t.kind == "O" and c.dtype.kind in "SUO"):
            raise InvalidArgumentError(
                None, None, f"Type mismatch in tuple component {k}: expected {t}, got {c.dtype}"
            )
        shape = c.shape
        if many:
            if not shape:
                raise InvalidArgumentError(
                    None, None, f"Component {k} of an enqueue_many must have a batch dimension"
                )
            if batch >= 0 and shape[0] != batch:
                raise InvalidArgumentError(
                    None,
                    None,
                    f"Batch sizes differ: component 0 has {batch}, component {k} has {shape[0]}",
                )
            batch, shape = shape[0], shape[1:]
        want = q.shapes[k] if q.shapes else None
        if want is not None and (
            len(want) != len(shape) or any(w is not None and w != d for w, d in zip(want, shape))
        ):
            raise InvalidArgumentError(
                None,
                None,
                f"Shape mismatch in tuple component {k}. Expected {fmt(want)}, got {fmt(shape)}",
            )
    return batch


def _enqueue(xp: Any, handle: QueueState, *components: Any, **_: Any) -> Any:
    _check(handle, components, False)
    return settle(handle.enqueue([tuple(np.asarray(c) for c in components)]))


def _enqueue_many(xp: Any, handle: QueueState, *components: Any, **_: Any) -> Any:
    n = _check(handle, components, True)
    cs = [np.asarray(c) for c in components]
    return settle(handle.enqueue([tuple(c[k, ...] for c in cs) for k in range(n)]))


def _enqueue_infer(
    handle: Tensor, *components: Tensor, Tcomponents: list, timeout_ms: int = -1
) -> list[Out]:
    return []


op(
    "QueueEnqueueV2",
    ("handle", "*components"),
    ("Tcomponents", "timeout_ms"),
    _enqueue_infer,
    _enqueue,
    blocking=True,
    **_STATE,
)
op(
    "QueueEnqueueManyV2",
    ("handle", "*components"),
    ("Tcomponents", "timeout_ms"),
    _enqueue_infer,
    _enqueue_many,
    blocking=True,
    **_STATE,
)


# ------------------------------------------------------------ dequeueing
def _one(q: QueueState) -> Any:
    def build(taken: list) -> Any:
        e = taken[0]
        return e[0] if len(e) == 1 else tuple(e)

    return build


def _batch(q: QueueState) -> Any:
    def build(taken: list) -> Any:
        out = []
        for k, t in enumerate(q.dtypes):
            parts = [np.asarray(e[k]) for e in taken]
            if not parts:
                shape = tuple(0 if d is None else d for d in q.shapes[k]) if q.shapes else ()
                out.append(np.zeros((0, *shape), t))
            elif q.kind == "padding_fifo":
                out.append(_padded(parts, t))
            else:
                out.append(np.stack(parts).astype(t, copy=False))
        return out[0] if len(out) == 1 else tuple(out)

    return build


def _padded(parts: list[np.ndarray], t: np.dtype) -> np.ndarray:
    """Stack ``parts``, padding each to the largest extent of every dimension (0 or b"")."""
    shape = tuple(max(p.shape[d] for p in parts) for d in range(parts[0].ndim))
    out = np.full((len(parts), *shape), b"" if t.kind == "O" else 0, t)
    for j, p in enumerate(parts):
        out[(j, *(slice(0, n) for n in p.shape))] = p
    return out


def _needs_shapes(q: QueueState) -> None:
    if q.kind != "padding_fifo" and (q.shapes is None or any(None in s for s in q.shapes)):
        raise InvalidArgumentError(
            None,
            None,
            f"{KINDS[q.kind]} '{q.name}': DequeueMany and DequeueUpTo require the "
            "components to have specified shapes.",
        )


def _dequeue(xp: Any, handle: QueueState, **_: Any) -> Any:
    return settle(handle.dequeue(-1, False, _one(handle)))


def _dequeue_many(xp: Any, handle: QueueState, n: Any, **_: Any) -> Any:
    _needs_shapes(handle)
    return settle(handle.dequeue(int(n), False, _batch(handle)))


def _dequeue_up_to(xp: Any, handle: QueueState, n: Any, **_: Any) -> Any:
    _needs_shapes(handle)
    return settle(handle.dequeue(int(n), True, _batch(handle)))


def _dequeue_infer(
    handle: Tensor, *n: Tensor, component_types: list, timeout_ms: int = -1
) -> list[Out]:
    return [Out(dtypes.as_dtype(t), None) for t in component_types]


op(
    "QueueDequeueV2",
    ("handle",),
    ("component_types", "timeout_ms"),
    _dequeue_infer,
    _dequeue,
    blocking=True,
    **_STATE,
)
op(
    "QueueDequeueManyV2",
    ("handle", "n"),
    ("component_types", "timeout_ms"),
    _dequeue_infer,
    _dequeue_many,
    blocking=True,
    **_STATE,
)
op(
    "QueueDequeueUpToV2",
    ("handle", "n"),
    ("component_types", "timeout_ms"),
    _dequeue_infer,
    _dequeue_up_to,
    blocking=True,
    **_STATE,
)


# ------------------------------------------------------------ the rest
def _close(xp: Any, handle: QueueState, cancel_pending_enqueues: bool = False) -> tuple:
    handle.close(cancel_pending_enqueues)
    return ()


op("QueueCloseV2", ("handle",), ("cancel_pending_enqueues",), lambda h, **a: [], _close, **_STATE)
op(
    "QueueSizeV2",
    ("handle",),
    (),
    lambda h: Out(dtypes.int32, ()),
    lambda xp, q: np.int32(q.size()),
    **_STATE,
)
op(
    "QueueIsClosedV2",
    ("handle",),
    (),
    lambda h: Out(dtypes.bool, ()),
    lambda xp, q: np.bool_(q.closed),
    **_STATE,
)


# ------------------------------------------- CountUpTo (tf.train.limit_epochs)
def _count_up_to(xp: Any, ref: Any, limit: int) -> Any:
    with ref.lock:
        old = ref.read()
        if old >= limit:
            raise OutOfRangeError(None, None, f"Reached limit of {limit}")
        ref.store(xp, old + 1)
    return old


def _count_infer(ref: Tensor, limit: int) -> Out:
    if ref.dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"CountUpTo counts an int32 or int64 variable, got {ref.dtype.name}")
    return Out(ref.dtype, ())


op(
    "CountUpTo",
    ("ref",),
    ("limit",),
    _count_infer,
    _count_up_to,
    stateful=True,
    ref_inputs=(0,),
    host_only=True,
    grad=NOT_DIFFERENTIABLE,
)
