"""TF1's queue-based input pipeline: producers, ``limit_epochs``, ``batch`` and ``shuffle_batch``.

Each function builds a queue (``flowbook.ops.io.queues``), its enqueue op(s) and a
``QueueRunner`` added to the graph's ``QUEUE_RUNNERS`` collection, as
TensorFlow's ``tf.train`` does, so ``tf.train.start_queue_runners`` fills
it:

- ``input_producer`` (and ``string_input_producer``,
  ``range_input_producer``, ``slice_input_producer``): the rows of a tensor,
  shuffled each epoch if asked, ``num_epochs`` times (``limit_epochs``: a
  local ``epochs`` counter and ``CountUpTo``; initialise local variables
  first), through a FIFO queue.  When the epochs run out the queue closes,
  and its consumers get ``OutOfRangeError`` once it is drained.
- ``batch`` / ``batch_join`` (a FIFO queue, or a padding one with
  ``dynamic_pad``) and ``shuffle_batch`` / ``shuffle_batch_join`` (a random
  shuffle queue): ``dequeue_many(batch_size)``, or ``dequeue_up_to`` with
  ``allow_smaller_final_batch``.  The result has the structure of
  ``tensors`` (a list, a dict), except that one tensor in a list comes back
  as a tensor, as in TensorFlow.
- ``match_filenames_once``: a local variable holding the files matching a
  pattern, sorted.

Each queue also gets TensorFlow's scalar summary of how full it is.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default(), tf.Session() as s:
    ...     x = tf.train.limit_epochs([1, 2], num_epochs=1)
    ...     b = tf.train.batch([x], batch_size=2, enqueue_many=True)
    ...     s.run(tf.local_variables_initializer())
    ...     coord = tf.train.Coordinator()
    ...     threads = tf.train.start_queue_runners(s, coord)
    ...     got = s.run(b); coord.request_stop(); coord.join(threads)
    >>> got
    array([1, 2], dtype=int32)
"""

from __future__ import annotations

import glob
from typing import Any

import numpy as np

from flowbook.framework import dtypes
from flowbook.framework.graph import GraphKeys, control_dependencies, name_scope
from flowbook.framework.tensor import Tensor
from flowbook.ops.array import selection_ops
from flowbook.ops.array.cast_ops import cast
from flowbook.ops.array.constant_op import convert_to_tensor
from flowbook.ops.array.shape_ops import identity, range, shape
from flowbook.ops.debugging.script_ops import py_func
from flowbook.ops.io.queues import FIFOQueue, PaddingFIFOQueue, RandomShuffleQueue, count_up_to
from flowbook.ops.math.elementwise_ops import maximum
from flowbook.ops.random import random_ops
from flowbook.summary import writer as summary
from flowbook.train.queue_runner import QueueRunner, add_queue_runner
from flowbook.variables.variables import Variable

__all__ = [
    "batch",
    "batch_join",
    "input_producer",
    "limit_epochs",
    "match_filenames_once",
    "range_input_producer",
    "shuffle_batch",
    "shuffle_batch_join",
    "slice_input_producer",
    "string_input_producer",
]


def _local(value: Any, name: str, validate_shape: bool = True) -> Variable:
    return Variable(
        value,
        trainable=False,
        collections=[GraphKeys.LOCAL_VARIABLES],
        name=name,
        validate_shape=validate_shape,
    )


def limit_epochs(tensor: Any, num_epochs: int | None = None, name: str | None = None) -> Tensor:
    """``tensor``, ``num_epochs`` times; then OutOfRangeError (needs local variables initialised)."""
    if num_epochs is None:
        return convert_to_tensor(tensor)
    if num_epochs <= 0:
        raise ValueError(f"num_epochs must be > 0 not {num_epochs}.")
    with name_scope(name, "limit_epochs", [tensor]) as scope:
        epochs = _local(np.int64(0), "epochs")
        counter = count_up_to(epochs, num_epochs)
        with control_dependencies([counter.op]):
            return identity(tensor, name=scope)


def _fill_summary(q: Any, name: str, capacity: int) -> None:
    full = cast(q.size(), dtypes.float32) * (1.0 / capacity)
    summary.scalar(f"{name}/fraction_of_{capacity}_full", full)


def input_producer(
    input_tensor: Any,
    element_shape: Any = None,
    num_epochs: int | None = None,
    shuffle: bool = True,
    seed: int | None = None,
    capacity: int = 32,
    shared_name: str | None = None,
    summary_name: str | None = None,
    name: str | None = None,
    cancel_op: Any = None,
) -> FIFOQueue:
    """A queue fed with the rows of ``input_tensor`` (shuffled each epoch if asked)."""
    with name_scope(name, "input_producer", [input_tensor]):
        input_tensor = convert_to_tensor(input_tensor, name="input_tensor")
        shape = (
            element_shape
            if element_shape is not None
            else (None if input_tensor._shape is None else input_tensor._shape[1:])
        )
        if shuffle:
            input_tensor = random_ops.random_shuffle(input_tensor, seed=seed)
        input_tensor = limit_epochs(input_tensor, num_epochs)
        q = FIFOQueue(
            capacity,
            [input_tensor.dtype],
            shapes=None if shape is None else [shape],
            shared_name=shared_name,
            name="fifo_queue",
        )
        enq = q.enqueue_many([input_tensor])
        add_queue_runner(QueueRunner(q, [enq], cancel_op=cancel_op))
        if summary_name is not None:
            _fill_summary(q, f"queue/{q.name}/{summary_name}".rsplit("/", 1)[0], capacity)
        return q


def string_input_producer(
    string_tensor: Any,
    num_epochs: int | None = None,
    shuffle: bool = True,
    seed: int | None = None,
    capacity: int = 32,
    shared_name: str | None = None,
    name: str | None = None,
    cancel_op: Any = None,
) -> FIFOQueue:
    """A queue of strings (file names, usually) for a reader."""
    with name_scope(name, "input_producer", [string_tensor]):
        t = convert_to_tensor(string_tensor, dtype=dtypes.string)
        return input_producer(
            t,
            (),
            num_epochs,
            shuffle,
            seed,
            capacity,
            shared_name,
            f"fraction_of_{capacity}_full",
            cancel_op=cancel_op,
        )


def range_input_producer(
    limit: int,
    num_epochs: int | None = None,
    shuffle: bool = True,
    seed: int | None = None,
    capacity: int = 32,
    shared_name: str | None = None,
    name: str | None = None,
) -> FIFOQueue:
    """A queue of the integers 0 .. limit-1."""
    with name_scope(name, "input_producer", [limit]):
        r = range(limit)
        return input_producer(r, (), num_epochs, shuffle, seed, capacity, shared_name)


def slice_input_producer(
    tensor_list: list[Any],
    num_epochs: int | None = None,
    shuffle: bool = True,
    seed: int | None = None,
    capacity: int = 32,
    shared_name: str | None = None,
    name: str | None = None,
) -> list[Tensor]:
    """One row of each tensor of ``tensor_list`` at a time (the same row of each)."""
    with name_scope(name, "input_producer", tensor_list):
        tensors = [convert_to_tensor(t) for t in tensor_list]
        if not tensors:
            raise ValueError("Expected at least one tensor in slice_input_producer().")
        size = shape(tensors[0], out_type=dtypes.int32)[0]
        q = range_input_producer(size, num_epochs, shuffle, seed, capacity, shared_name)
        index = q.dequeue()
        return [selection_ops.gather(t, index) for t in tensors]


def match_filenames_once(pattern: Any, name: str | None = None) -> Variable:
    """A local variable: the files matching ``pattern`` (a glob, or a list of them), sorted."""
    with name_scope(name, "matching_filenames", [pattern]) as scope:

        def match(p: Any) -> Any:
            found = sorted({f for q in np.atleast_1d(p) for f in glob.glob(_text(q))})
            return np.array([f.encode() for f in found], dtype=object)

        files = py_func(
            match, [convert_to_tensor(pattern, dtype=dtypes.string)], dtypes.string, stateful=False
        )
        files.set_shape([None])
        return _local(files, scope.rstrip("/"), validate_shape=False)


def _text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


# ------------------------------------------------------------------- batching
def _flat(tensors: Any) -> tuple[list[Tensor], Any]:
    if isinstance(tensors, dict):
        keys = sorted(tensors)
        return [convert_to_tensor(tensors[k]) for k in keys], keys
    if isinstance(tensors, list | tuple):
        return [convert_to_tensor(t) for t in tensors], len(tensors)
    return [convert_to_tensor(tensors)], None


def _restore(structure: Any, dequeued: Any) -> Any:
    outs = dequeued if isinstance(dequeued, list) else [dequeued]
    if isinstance(structure, list):
        return dict(zip(structure, outs))
    if structure is None or structure == 1:
        return outs[0]  # TF: one tensor in a list comes back bare
    return outs


def _shapes(tensors: list[Tensor], shapes: Any, enqueue_many: bool, pad: bool) -> Any:
    if shapes is not None:
        return shapes
    out = []
    for t in tensors:
        s = t._shape
        if s is not None and enqueue_many:
            s = s[1:]
        if s is None or (None in s and not pad):
            raise ValueError(
                f"All shapes must be fully defined: tensor '{t.name}' has shape "
                f"{s}; pass shapes= or dynamic_pad=True"
            )
        out.append(s)
    return out


def _batch(
    tensors_list: list[Any],
    batch_size: Any,
    capacity: int,
    enqueue_many: bool,
    shapes: Any,
    dynamic_pad: bool,
    allow_smaller: bool,
    shared_name: str | None,
    name: str | None,
    default: str,
    shuffle: dict | None,
    threads: int,
) -> Any:
    flats = [_flat(t) for t in tensors_list]
    first, structure = flats[0]
    with name_scope(name, default, first) as scope:
        types = [t.dtype for t in first]
        qshapes = _shapes(first, shapes, enqueue_many, dynamic_pad)
        if shuffle is not None:
            q: Any = RandomShuffleQueue(
                capacity,
                shuffle["min_after_dequeue"],
                types,
                qshapes,
                seed=shuffle["seed"],
                shared_name=shared_name,
            )
        elif dynamic_pad:
            q = PaddingFIFOQueue(capacity, types, qshapes, shared_name=shared_name)
        else:
            q = FIFOQueue(capacity, types, qshapes, shared_name=shared_name)
        ops = [(q.enqueue_many if enqueue_many else q.enqueue)(ts) for ts, _ in flats] * threads
        add_queue_runner(QueueRunner(q, ops))
        kept = shuffle["min_after_dequeue"] if shuffle is not None else 0
        if shuffle is not None:
            over = cast(maximum(0, q.size() - kept), dtypes.float32)
            summary.scalar(
                f"fraction_over_{kept}_of_{capacity - kept}_full", over * (1.0 / (capacity - kept))
            )
        else:
            _fill_summary(q, "batch", capacity)
        take = q.dequeue_up_to if allow_smaller else q.dequeue_many
        return _restore(structure, take(batch_size, name=scope.rstrip("/") + "_out"))


def batch(
    tensors: Any,
    batch_size: Any,
    num_threads: int = 1,
    capacity: int = 32,
    enqueue_many: bool = False,
    shapes: Any = None,
    dynamic_pad: bool = False,
    allow_smaller_final_batch: bool = False,
    shared_name: str | None = None,
    name: str | None = None,
) -> Any:
    """Batches of ``tensors`` through a FIFO queue filled by ``num_threads`` threads."""
    return _batch(
        [tensors],
        batch_size,
        capacity,
        enqueue_many,
        shapes,
        dynamic_pad,
        allow_smaller_final_batch,
        shared_name,
        name,
        "batch",
        None,
        num_threads,
    )


def batch_join(
    tensors_list: list[Any],
    batch_size: Any,
    capacity: int = 32,
    enqueue_many: bool = False,
    shapes: Any = None,
    dynamic_pad: bool = False,
    allow_smaller_final_batch: bool = False,
    shared_name: str | None = None,
    name: str | None = None,
) -> Any:
    """Batches mixing several lists of tensors, one enqueuing thread per list."""
    return _batch(
        list(tensors_list),
        batch_size,
        capacity,
        enqueue_many,
        shapes,
        dynamic_pad,
        allow_smaller_final_batch,
        shared_name,
        name,
        "batch_join",
        None,
        1,
    )


def shuffle_batch(
    tensors: Any,
    batch_size: Any,
    capacity: int,
    min_after_dequeue: int,
    num_threads: int = 1,
    seed: int | None = None,
    enqueue_many: bool = False,
    shapes: Any = None,
    allow_smaller_final_batch: bool = False,
    shared_name: str | None = None,
    name: str | None = None,
) -> Any:
    """Shuffled batches of ``tensors`` through a random shuffle queue."""
    return _batch(
        [tensors],
        batch_size,
        capacity,
        enqueue_many,
        shapes,
        False,
        allow_smaller_final_batch,
        shared_name,
        name,
        "shuffle_batch",
        {"min_after_dequeue": min_after_dequeue, "seed": seed},
        num_threads,
    )


def shuffle_batch_join(
    tensors_list: list[Any],
    batch_size: Any,
    capacity: int,
    min_after_dequeue: int,
    seed: int | None = None,
    enqueue_many: bool = False,
    shapes: Any = None,
    allow_smaller_final_batch: bool = False,
    shared_name: str | None = None,
    name: str | None = None,
) -> Any:
    """Shuffled batches mixing several lists of tensors, one enqueuing thread per list."""
    return _batch(
        list(tensors_list),
        batch_size,
        capacity,
        enqueue_many,
        shapes,
        False,
        allow_smaller_final_batch,
        shared_name,
        name,
        "shuffle_batch_join",
        {"min_after_dequeue": min_after_dequeue, "seed": seed},
        1,
    )
