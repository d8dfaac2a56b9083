"""Splitting by a partition vector and stitching back: DynamicPartition, DynamicStitch.

``DynamicPartition(data, partitions)`` has ``num_partitions`` outputs (an
attr, so the number of outputs is known when the graph is built): output
``p`` holds the rows of ``data`` whose entry in ``partitions`` is ``p``, in
order; ``partitions`` has the shape of a prefix of ``data``'s, so each output
is ``[?] + data.shape[partitions.rank:]``, its row count depending on the
data.  ``DynamicStitch(indices..., data...)`` is the inverse: two variadic
lists of ``N`` tensors each (TF's signature, both counted by the attr ``N``);
``out[indices[m][i]] = data[m][i]``, later values winning where an index
repeats, with ``max(index) + 1`` rows.

The gradients are each other: DynamicPartition's is the stitch of the output
gradients at the partitioned positions of ``range(size(partitions))``
(outputs with no gradient get zeros), DynamicStitch's gathers the gradient at
each ``indices[m]``.  Kernels check partitions and indices against their
ranges and raise InvalidArgumentError.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     parts = fb.dynamic_partition([10, 20, 30, 40], [1, 0, 1, 1], 2)
    ...     s.run(fb.dynamic_stitch([[1], [0, 2, 3]], parts)).tolist()
    [10, 20, 30, 40]
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from flowbook.framework import dtypes
from flowbook.framework.errors import InvalidArgumentError
from flowbook.framework.graph import name_scope
from flowbook.framework.registry import Out, op
from flowbook.framework.tensor import Operation, Tensor
from flowbook.framework.tensor_shape import compatible, fmt
from flowbook.ops._builder import make, make1, same_dtype
from flowbook.ops._shape_inputs import const_ints, int_input, is_tensor
from flowbook.ops.array.cast_ops import cast
from flowbook.ops.array.constant_op import convert_to_tensor
from flowbook.ops.array.selection_ops import gather
from flowbook.ops.array.shape_ops import range, reshape, shape, size

__all__ = ["dynamic_partition", "dynamic_stitch"]


# ---------------------------------------------------------- DynamicPartition
def _partition_infer(data: Tensor, partitions: Tensor, num_partitions: int) -> list[Out]:
    if partitions.dtype is not dtypes.int32:
        raise TypeError(f"partitions must be int32, got {partitions.dtype.name}")
    if num_partitions < 1:
        raise ValueError(f"num_partitions must be at least 1, got {num_partitions}")
    d, p = data._shape, partitions._shape
    if d is None or p is None:
        return [Out(data.dtype, None)] * num_partitions
    if not compatible(d[: len(p)], p) or len(p) > len(d):
        raise ValueError(f"partitions{fmt(p)} must have the shape of a prefix of data{fmt(d)}")
    return [Out(data.dtype, (None, *d[len(p) :]))] * num_partitions


def _partition_kernel(xp: Any, data: Any, partitions: Any, num_partitions: int) -> Any:
    p = partitions.ravel()
    if p.size and (int(p.min()) < 0 or int(p.max()) >= num_partitions):
        bad = int(p.min()) if int(p.min()) < 0 else int(p.max())
        raise InvalidArgumentError(
            None, None, f"partitions contain {bad}, which is not in [0, {num_partitions})"
        )
    rows = data.reshape((p.size, *data.shape[partitions.ndim :]))
    return tuple(rows[p == k] for k in builtins.range(num_partitions))


def _partition_grad(op: Operation, *grads: Tensor) -> list[Tensor | None]:
    """Stitch the output gradients back at the rows each partition took."""
    data, partitions = op.inputs
    n = op.attrs["num_partitions"]
    positions = reshape(range(size(partitions)), shape(partitions))
    taken = make(
        "DynamicPartition", [positions, partitions], {"num_partitions": n}
    ).outputs  # the same split of the row numbers
    stitched = make1("DynamicStitch", [*taken, *grads], {"N": n})
    return [reshape(stitched, shape(data)), None]


op(
    "DynamicPartition",
    ("data", "partitions"),
    ("num_partitions",),
    _partition_infer,
    _partition_kernel,
    grad=_partition_grad,
)


def dynamic_partition(
    data: Any, partitions: Any, num_partitions: int, name: str | None = None
) -> list[Tensor]:
    """Split the rows of ``data`` into ``num_partitions`` tensors by ``partitions``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     [a.tolist() for a in s.run(fb.dynamic_partition([1, 2, 3], [1, 0, 1], 2))]
    [[2], [1, 3]]
    """
    with name_scope(name, "DynamicPartition") as scope:
        x = convert_to_tensor(data, name="data")
        p = int_input(partitions, "partitions")
        attrs = {"num_partitions": int(num_partitions)}
        return list(make("DynamicPartition", [x, p], attrs, name=scope).outputs)


# ------------------------------------------------------------- DynamicStitch
def _stitch_infer(*inputs: Tensor, N: int | None = None) -> Out:
    n = len(inputs) // 2 if N is None else N
    if len(inputs) != 2 * n or n < 1:
        raise ValueError(f"expected {n} indices and {n} data tensors, got {len(inputs)} inputs")
    indices, data = inputs[:n], inputs[n:]
    for m, i in enumerate(indices):
        if i.dtype is not dtypes.int32:
            raise TypeError(f"indices[{m}] must be int32, got {i.dtype.name}")
    dtype = same_dtype("DynamicStitch", tuple(f"data[{m}]" for m in builtins.range(n)), *data)
    inner = None
    for m, (i, d) in enumerate(zip(indices, data)):
        if i._shape is None or d._shape is None:
            continue
        if not compatible(d._shape[: len(i._shape)], i._shape) or len(i._shape) > len(d._shape):
            raise ValueError(
                f"data[{m}]{fmt(d._shape)} must start with the shape of indices[{m}]{fmt(i._shape)}"
            )
        inner = inner or d._shape[len(i._shape) :]
    known = [const_ints(i) for i in indices]
    rows = None if any(k is None for k in known) else max(max(k, default=-1) for k in known) + 1
    return Out(dtype, None if inner is None else (rows, *inner))


def _stitch_kernel(xp: Any, *inputs: Any, N: int | None = None) -> Any:
    n = len(inputs) // 2
    indices, data = inputs[:n], inputs[n:]
    flat = [i.ravel().astype(np.int64) for i in indices]
    if any(f.size and int(f.min()) < 0 for f in flat):
        raise InvalidArgumentError(None, None, "DynamicStitch: indices must be >= 0")
    rows = max((int(f.max()) for f in flat if f.size), default=-1) + 1
    inner = data[0].shape[indices[0].ndim :]
    out = xp.zeros((rows, *inner), dtype=data[0].dtype)
    for m, (f, d) in enumerate(zip(flat, data)):
        if d.shape != (*indices[m].shape, *inner):
            raise InvalidArgumentError(
                None,
                None,
                f"data[{m}] has shape {list(d.shape)}, expected "
                f"{list((*indices[m].shape, *inner))}",
            )
        out[f] = d.reshape((f.size, *inner))
    return out


def _stitch_grad(op: Operation, g: Tensor) -> list[Tensor | None]:
    """Each data tensor gets the gradient gathered at its indices."""
    n = len(op.inputs) // 2
    indices = op.inputs[:n]
    return [None] * n + [gather(g, cast(i, dtypes.int32)) for i in indices]


op(
    "DynamicStitch",
    ("*indices", "*data"),
    ("N",),
    _stitch_infer,
    _stitch_kernel,
    grad=_stitch_grad,
    type_attrs={"T": -1},
)


def dynamic_stitch(indices: Any, data: Any, name: str | None = None) -> Tensor:
    """Interleave ``data`` into one tensor: ``out[indices[m][i]] = data[m][i]``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.dynamic_stitch([[2, 0], [1]], [[7.0, 8.0], [9.0]])).tolist()
    [8.0, 9.0, 7.0]
    """
    with name_scope(name, "DynamicStitch") as scope:
        idx = [int_input(i, f"indices_{m}") for m, i in enumerate(indices)]
        if len(idx) != len(data):
            raise ValueError(f"{len(idx)} indices tensors but {len(data)} data tensors")
        first = next((convert_to_tensor(d).dtype for d in data if is_tensor(d)), None)
        values = [convert_to_tensor(d, dtype=first, name=f"data_{m}") for m, d in enumerate(data)]
        return make1("DynamicStitch", [*idx, *values], {"N": len(idx)}, name=scope)
