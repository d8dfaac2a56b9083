"""TF1's queues: ``tf.FIFOQueue``, ``PaddingFIFOQueue``, ``RandomShuffleQueue``,
``PriorityQueue`` (also as ``tf.queue.*``), and ``tf.container``.

A queue object builds its queue op once (the handle, ``queue_ref``) and
each method builds one op reading it (``flowbook.ops.io.queue_ops``), named as
TensorFlow names them (``fifo_queue_enqueue``, ``fifo_queue_Dequeue``,
``fifo_queue_DequeueMany``...).  What can be checked while building is
checked here, at the line that builds the op: the number of components
(or their names, for a queue with ``names``), each value converted to the
component's dtype (a TypeError otherwise), each static shape compatible with
the component's shape (a ValueError otherwise).  Dequeued tensors get the
component shapes, with the batch dimension in front for ``dequeue_many``
(``n`` when it is a constant) and ``dequeue_up_to`` (unknown).  One
component dequeues as a tensor, several as a list, named ones as a dict.

``tf.container(name)`` puts the queues and variables built inside it in a
resource container, which ``tf.Session.reset(target, [name])`` releases
(``flowbook.state.resources``).

    >>> import flowbook as tf
    >>> with tf.Graph().as_default(), tf.Session() as s:
    ...     q = tf.FIFOQueue(2, [tf.int32, tf.string], shapes=[[], []])
    ...     s.run(q.enqueue_many([[1, 2], ["a", "b"]]))
    ...     s.run(q.dequeue_many(2))
    [array([1, 2], dtype=int32), array([b'a', b'b'], dtype=object)]
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator
from typing import Any

from flowbook.framework import dtypes
from flowbook.framework.graph import get_default_graph, name_scope
from flowbook.framework.tensor import Operation, Tensor
from flowbook.framework.tensor_shape import TensorShape, as_shape, compatible, fmt
from flowbook.ops._builder import make, make1
from flowbook.ops.array.constant_op import constant_value, convert_to_tensor
from flowbook.ops.io import queue_ops  # noqa: F401  (registers the ops)
from flowbook.ops.random.random_ops import get_seed

__all__ = [
    "FIFOQueue",
    "PaddingFIFOQueue",
    "PriorityQueue",
    "QueueBase",
    "RandomShuffleQueue",
    "container",
    "count_up_to",
]


@contextlib.contextmanager
def container(container_name: str) -> Iterator[str]:
    """Build the stateful ops inside in the resource container ``container_name``.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     with tf.container("c"):
    ...         q = tf.FIFOQueue(1, tf.int32)
    ...     q.queue_ref.op.attrs["container"]
    'c'
    """
    graph = get_default_graph()
    before = getattr(graph, "_container", "")
    first = graph._next_id
    graph._container = container_name
    try:
        yield container_name
    finally:
        graph._container = before
        placed = graph.__dict__.setdefault("_containers", {})  # VariableV2 name -> container
        for op in list(graph._ops.values()):
            if op._id >= first and op.type == "VariableV2":
                placed.setdefault(op.name, container_name)


def _shape_list(shapes: Any, n: int) -> list[tuple | None] | None:
    if shapes is None:
        return None
    shapes = [shapes] if isinstance(shapes, TensorShape) or _is_shape(shapes) else list(shapes)
    if not shapes and n == 1:  # shapes=() is one scalar shape, as in TF
        shapes = [()]
    if len(shapes) != n:
        raise ValueError(f"shapes must have one entry per component ({n}), got {len(shapes)}")
    return [as_shape(s) for s in shapes]


def _is_shape(value: Any) -> bool:
    return (
        isinstance(value, list | tuple)
        and all(isinstance(d, int) or d is None for d in value)
        and len(value) > 0
        and not isinstance(value[0], list | tuple)
    )


class QueueBase:
    """What every queue shares: its handle, components, and the ops that use it."""

    def __init__(self, dtypes_: list[Any], shapes: Any, names: Any, queue_ref: Tensor) -> None:
        self._dtypes = [dtypes.as_dtype(t) for t in dtypes_]
        self._shapes = shapes  # per component: a shape (dims may be None), or None: unknown
        self._names = list(names) if names is not None else None
        if self._names is not None and len(self._names) != len(self._dtypes):
            raise ValueError("names must have one entry per component")
        self._queue_ref = queue_ref
        self._name = queue_ref.op.name.split("/")[-1]

    @property
    def queue_ref(self) -> Tensor:
        return self._queue_ref

    @property
    def name(self) -> str:
        return self._queue_ref.op.name

    @property
    def dtypes(self) -> list[Any]:
        return self._dtypes

    @property
    def shapes(self) -> list[TensorShape]:
        return [TensorShape(s) for s in self._shapes or [None] * len(self._dtypes)]

    @property
    def names(self) -> list[str] | None:
        return self._names

    # ------------------------------------------------------------ building
    def _values(self, vals: Any, many: bool) -> list[Tensor]:
        if self._names is not None:
            if not isinstance(vals, dict) or set(vals) != set(self._names):
                raise ValueError(f"Queue '{self.name}' takes a dict with keys {self._names}")
            vals = [vals[n] for n in self._names]
        elif not isinstance(vals, list | tuple):  # TF: a list or tuple is the components
            vals = [vals]
        if len(vals) != len(self._dtypes):
            raise ValueError(
                f"Queue '{self.name}' expects {len(self._dtypes)} components, got {len(vals)}"
            )
        out = []
        for k, (v, t) in enumerate(zip(vals, self._dtypes)):
            v = convert_to_tensor(v, dtype=t, name=f"component_{k}")
            if v.dtype is not t:
                raise TypeError(
                    f"Component {k} of queue '{self.name}' has dtype {t.name}, got {v.dtype.name}"
                )
            shape = v._shape
            if many:
                shape = None if shape is None else shape[1:]
            want = self._shapes[k] if self._shapes else None
            if not compatible(shape, want):
                raise ValueError(
                    f"Shape {fmt(shape)} of component {k} is not compatible with "
                    f"queue '{self.name}''s shape {fmt(want)}"
                )
            out.append(v)
        return out

    def _enqueue_op(self, op_type: str, default: str, vals: Any, name: str | None) -> Operation:
        with name_scope(name, default) as scope:
            vals = self._values(vals, op_type == "QueueEnqueueManyV2")
            attrs = {"Tcomponents": [v.dtype for v in vals], "timeout_ms": -1}
            return make(op_type, (self._queue_ref, *vals), attrs, name=scope)

    def enqueue(self, vals: Any, name: str | None = None) -> Operation:
        """An op putting one element (one value per component) into the queue."""
        return self._enqueue_op("QueueEnqueueV2", f"{self._name}_enqueue", vals, name)

    def enqueue_many(self, vals: Any, name: str | None = None) -> Operation:
        """An op putting the elements of a batch (split along dimension 0) into the queue."""
        return self._enqueue_op("QueueEnqueueManyV2", f"{self._name}_EnqueueMany", vals, name)

    def _dequeue_op(self, op_type: str, n: Any, batch: Any, name: str | None) -> Any:
        attrs = {"component_types": list(self._dtypes), "timeout_ms": -1}
        inputs: tuple = (self._queue_ref,)
        if n is not None:
            inputs += (convert_to_tensor(n, dtype=dtypes.int32, name="n"),)
        op = make(op_type, inputs, attrs, name=name)
        for k, t in enumerate(op.outputs):
            shape = self._shapes[k] if self._shapes else None
            if batch is not False:
                shape = None if shape is None else (batch, *shape)
            if shape is not None:
                t.set_shape(shape)
        outs = list(op.outputs)
        if self._names is not None:
            return dict(zip(self._names, outs))
        return outs[0] if len(outs) == 1 else outs

    def dequeue(self, name: str | None = None) -> Any:
        """The next element: a tensor (one component), a list, or a dict (named components)."""
        return self._dequeue_op("QueueDequeueV2", None, False, name or f"{self._name}_Dequeue")

    def dequeue_many(self, n: Any, name: str | None = None) -> Any:
        """The next ``n`` elements, stacked along a new first dimension."""
        known = constant_value(n) if isinstance(n, Tensor) else n
        return self._dequeue_op(
            "QueueDequeueManyV2",
            n,
            None if known is None else int(known),
            name or f"{self._name}_DequeueMany",
        )

    def dequeue_up_to(self, n: Any, name: str | None = None) -> Any:
        """Up to ``n`` elements: fewer only once the queue is closed and that is all it has."""
        return self._dequeue_op("QueueDequeueUpToV2", n, None, name or f"{self._name}_DequeueUpTo")

    def close(self, cancel_pending_enqueues: bool = False, name: str | None = None) -> Operation:
        """An op closing the queue (and cancelling waiting enqueues, if asked)."""
        return make(
            "QueueCloseV2",
            (self._queue_ref,),
            {"cancel_pending_enqueues": bool(cancel_pending_enqueues)},
            name=name or f"{self._name}_Close",
        )

    def is_closed(self, name: str | None = None) -> Tensor:
        """A bool tensor: whether the queue is closed."""
        return make1("QueueIsClosedV2", (self._queue_ref,), name=name or f"{self._name}_IsClosed")

    def size(self, name: str | None = None) -> Tensor:
        """An int32 tensor: how many elements the queue holds."""
        return make1("QueueSizeV2", (self._queue_ref,), name=name or f"{self._name}_Size")


def _queue_ref(
    op_type: str,
    dtypes_: list[Any],
    shapes: Any,
    capacity: int,
    shared_name: str | None,
    name: str,
    **extra: Any,
) -> Tensor:
    attrs = {
        "component_types": [dtypes.as_dtype(t) for t in dtypes_],
        "shapes": [] if shapes is None else [tuple(s) for s in shapes],
        "capacity": int(capacity),
        "container": getattr(get_default_graph(), "_container", ""),
        "shared_name": shared_name or "",
        **extra,
    }
    return make1(op_type, (), attrs, name=name)


def _listed(dtypes_: Any) -> list[Any]:
    return list(dtypes_) if isinstance(dtypes_, list | tuple) else [dtypes_]


class FIFOQueue(QueueBase):
    """A queue handing out elements in the order they were put in (TF1's ``tf.FIFOQueue``)."""

    def __init__(
        self,
        capacity: int,
        dtypes: Any,
        shapes: Any = None,
        names: Any = None,
        shared_name: str | None = None,
        name: str = "fifo_queue",
    ) -> None:
        types = _listed(dtypes)
        shapes_ = _shape_list(shapes, len(types))
        ref = _queue_ref("FIFOQueueV2", types, shapes_, capacity, shared_name, name)
        super().__init__(types, shapes_, names, ref)


class PaddingFIFOQueue(QueueBase):
    """A FIFO queue whose ``dequeue_many`` pads components to the batch's largest shape."""

    def __init__(
        self,
        capacity: int,
        dtypes: Any,
        shapes: Any,
        names: Any = None,
        shared_name: str | None = None,
        name: str = "padding_fifo_queue",
    ) -> None:
        types = _listed(dtypes)
        shapes_ = _shape_list(shapes, len(types))
        if shapes_ is None or any(s is None for s in shapes_):
            raise ValueError("PaddingFIFOQueue needs every component's rank in shapes")
        ref = _queue_ref("PaddingFIFOQueueV2", types, shapes_, capacity, shared_name, name)
        super().__init__(types, shapes_, names, ref)


class RandomShuffleQueue(QueueBase):
    """A queue handing out a random element, keeping ``min_after_dequeue`` until closed."""

    def __init__(
        self,
        capacity: int,
        min_after_dequeue: int,
        dtypes: Any,
        shapes: Any = None,
        names: Any = None,
        seed: int | None = None,
        shared_name: str | None = None,
        name: str = "random_shuffle_queue",
    ) -> None:
        types = _listed(dtypes)
        shapes_ = _shape_list(shapes, len(types))
        seed1, seed2 = get_seed(seed)
        if seed is None and seed1 is not None and shared_name:  # TF: seed2 from the name
            digest = hashlib.md5(f"{seed1}{shared_name}".encode()).hexdigest()
            seed2 = int(digest[:8], 16) & 0x7FFFFFFF
        ref = _queue_ref(
            "RandomShuffleQueueV2",
            types,
            shapes_,
            capacity,
            shared_name,
            name,
            min_after_dequeue=int(min_after_dequeue),
            seed=seed1 or 0,
            seed2=seed2 or 0,
        )
        super().__init__(types, shapes_, names, ref)


class PriorityQueue(QueueBase):
    """A queue handing out the element of lowest priority first; an element is
    ``(priority (int64 scalar), *components)``, and so is what it dequeues."""

    def __init__(
        self,
        capacity: int,
        types: Any,
        shapes: Any = None,
        names: Any = None,
        shared_name: str | None = None,
        name: str = "priority_queue",
    ) -> None:
        types_ = _listed(types)
        shapes_ = _shape_list(shapes, len(types_))
        ref = _queue_ref("PriorityQueueV2", types_, shapes_, capacity, shared_name, name)
        all_shapes = None if shapes_ is None else [(), *shapes_]
        super().__init__([dtypes.int64, *types_], all_shapes, names, ref)


def count_up_to(ref: Any, limit: int, name: str | None = None) -> Tensor:
    """Increment an int variable until ``limit``; returns the value before (OutOfRangeError
    once it reached ``limit``).

    >>> import flowbook as tf
    >>> with tf.Graph().as_default(), tf.Session() as s:
    ...     v = tf.Variable(0); c = tf.count_up_to(v, 2); s.run(v.initializer)
    ...     [int(s.run(c)) for _ in range(2)]
    [0, 1]
    """
    ref = getattr(ref, "_variable", ref)
    return make1("CountUpTo", (ref,), {"limit": int(limit)}, name=name)
