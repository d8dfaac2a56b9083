"""Selecting by index or condition: gather, where and boolean_mask.

Where ``slicing`` cuts one strided box out of a tensor, the ops here pick
entries by index or by condition: ``GatherV2`` takes the slices at an index
tensor, ``Where`` lists the indices of the true entries and ``Select``
(``where(c, x, y)``) chooses element by element.  ``boolean_mask`` is no op
of its own: as in TensorFlow it is built of Reshape, Where, Squeeze and
GatherV2.  ``UnsortedSegmentSum`` adds rows into segments by id: it is the
dense gradient of ``GatherV2`` (TF builds an ``IndexedSlices``), so repeated
indices add up, and a public op of its own.

Shape inference follows ``slicing``'s rules: ``axis``, ``indices`` and
``num_segments`` are int32 input tensors read with ``constant_value``; when
the graph determines them the result gets an exact static shape and an axis
out of range fails at build time; otherwise only the rank is kept.  Sizes
that depend on the data stay unknown: ``Where`` is ``[?, rank]`` and the
masked dimension of ``boolean_mask`` is ``?``.  Kernels check what ``infer``
could not (indices out of range) and raise InvalidArgumentError when the
graph runs.  The few arithmetic ops the gradients need (FloorMod, Maximum,
GreaterEqual) are built by type, as in ``fill_ops``: the math modules import
this one.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.gather(fb.placeholder(fb.float32, [None, 3]), [0, 2], axis=1).shape.as_list()
    [None, 2]
"""

from __future__ import annotations

import builtins
import math
from typing import Any

import numpy as np

from flowbook.framework import dtypes
from flowbook.framework.errors import InvalidArgumentError
from flowbook.framework.graph import name_scope
from flowbook.framework.registry import NOT_DIFFERENTIABLE, Out, op
from flowbook.framework.tensor import Operation, Tensor
from flowbook.framework.tensor_shape import compatible, fmt, merge
from flowbook.ops._builder import make1, operands, same_dtype
from flowbook.ops._shape_inputs import check_int, const_int, int_input, norm_axis
from flowbook.ops.array.concat_ops import concat, stack
from flowbook.ops.array.constant_op import convert_to_tensor
from flowbook.ops.array.fill_ops import zeros_like
from flowbook.ops.array.shape_ops import expand_dims, range, reshape, shape, size
from flowbook.ops.array.slicing import slice_helper
from flowbook.ops.array.transpose_ops import transpose

__all__ = ["boolean_mask", "gather", "unsorted_segment_sum", "where"]


# ------------------------------------------------------------------ GatherV2
def _gather_infer(params: Tensor, indices: Tensor, axis: Tensor, batch_dims: int) -> Out:
    check_int("GatherV2", "indices", indices)
    check_int("GatherV2", "axis", axis)
    if batch_dims:
        raise ValueError(f"batch_dims={batch_dims} is not supported (only 0)")
    p, i, a = params._shape, indices._shape, const_int(axis)
    if p is None or i is None:
        return Out(params.dtype, None)
    if a is None:
        return Out(params.dtype, (None,) * (len(p) + len(i) - 1))
    a = norm_axis(a, len(p))
    return Out(params.dtype, p[:a] + i + p[a + 1 :])


def _gather_kernel(xp: Any, params: Any, indices: Any, axis: Any, batch_dims: int) -> Any:
    a = int(axis) % params.ndim
    n = params.shape[a]
    if indices.ndim == 0:  # one slice (a loop reading step t): indexing, not take's copy loop
        k = int(indices)
        if not 0 <= k < n:
            raise InvalidArgumentError(None, None, f"indices contain {k}, which is not in [0, {n})")
        v = params[(slice(None),) * a + (k,)]
        if v.ndim == 0:  # a scalar out of a vector: a 0-d array, as take gives
            return xp.asarray(v)
        return v if v.flags.c_contiguous else v.copy()
    if indices.size and (int(indices.min()) < 0 or int(indices.max()) >= n):
        bad = int(indices.min()) if int(indices.min()) < 0 else int(indices.max())
        raise InvalidArgumentError(None, None, f"indices contain {bad}, which is not in [0, {n})")
    return xp.take(params, indices, axis=a)


def _gather_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    """Dense: the gradient's slices added back at their indices (repeats add up).

    TF returns an IndexedSlices; here UnsortedSegmentSum sums the rows along
    axis 0 (moved there by transposes for another axis, as TF does).
    """
    params, indices, axis = op.inputs
    p_shape, n_ids = shape(params), expand_dims(size(indices), 0)
    ids = reshape(indices, n_ids)
    a = const_int(axis)
    if a is not None and params._shape is not None:
        a = norm_axis(a, len(params._shape))
    if a == 0:
        rows = reshape(grad, concat([n_ids, p_shape[1:]], 0))
        return [make1("UnsortedSegmentSum", [rows, ids, p_shape[0]]), None, None]
    if a is None:
        a = make1("FloorMod", operands(axis, make1("Rank", [params])))
    outer, inner = p_shape[:a], p_shape[a:][1:]
    n_outer, n_inner = size(outer), size(inner)
    outer_axes, inner_axes = range(n_outer), range(n_outer + 1, n_outer + 1 + n_inner)
    values = reshape(grad, concat([outer, n_ids, inner], 0))
    values = transpose(values, concat([stack([n_outer]), outer_axes, inner_axes], 0))
    summed = make1("UnsortedSegmentSum", [values, ids, p_shape[a]])
    return [transpose(summed, concat([outer_axes + 1, [0], inner_axes], 0)), None, None]


op(
    "GatherV2",
    ("params", "indices", "axis"),
    infer=_gather_infer,
    attrs=("batch_dims",),
    kernel=_gather_kernel,
    host_inputs=(2,),
    type_attrs={"Tparams": 0, "Tindices": 1, "Taxis": 2},
    grad=_gather_grad,
)


def gather(
    params: Any, indices: Any, validate_indices: Any = None, name: str | None = None, axis: Any = 0
) -> Tensor:
    """Gather slices of ``params`` along ``axis`` at ``indices``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.gather(fb.zeros([5, 3]), [[0, 1], [4, 4]]).shape.as_list()
    [2, 2, 3]
    """
    with name_scope(name, "GatherV2") as scope:
        p = convert_to_tensor(params, name="params")
        i = int_input(indices, "indices")
        return make1("GatherV2", [p, i, int_input(axis, "axis")], {"batch_dims": 0}, name=scope)


# --------------------------------------------------------- UnsortedSegmentSum
def _segment_sum_infer(data: Tensor, segment_ids: Tensor, num_segments: Tensor) -> Out:
    check_int("UnsortedSegmentSum", "segment_ids", segment_ids)
    check_int("UnsortedSegmentSum", "num_segments", num_segments)
    d, i, n = data._shape, segment_ids._shape, const_int(num_segments)
    if d is None or i is None:
        return Out(data.dtype, None)
    if len(i) > len(d) or any(a is not None and b is not None and a != b for a, b in zip(i, d)):
        raise ValueError(
            f"segment_ids of shape {fmt(i)} must be a prefix of the data shape {fmt(d)}"
        )
    return Out(data.dtype, (n, *d[len(i) :]))


def _segment_sum_kernel(xp: Any, data: Any, segment_ids: Any, num_segments: Any) -> Any:
    """``out[segment_ids[i]] += data[i]`` (negative ids are dropped), as one ``bincount``."""
    n, ids = int(num_segments), segment_ids.ravel().astype(np.int64)
    inner = data.shape[segment_ids.ndim :]
    k = math.prod(inner)
    if ids.size and int(ids.max()) >= n:
        raise InvalidArgumentError(None, None, f"segment id {int(ids.max())} is not < {n}")
    keep = ids >= 0
    slots = (ids[:, None] * k + xp.arange(k))[keep].ravel()  # flat index into out
    rows = data.reshape(ids.size, k)[keep].ravel()

    def add(w: Any) -> Any:
        return xp.bincount(slots, weights=w, minlength=n * k)

    total = add(rows.real) + 1j * add(rows.imag) if rows.dtype.kind == "c" else add(rows)
    return total.astype(data.dtype).reshape((n, *inner))


def _segment_sum_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    """Gather the gradient at each id; rows with a negative (dropped) id get zeros."""
    data, ids = op.inputs[0], reshape(op.inputs[1], [-1])
    rows = gather(grad, make1("Maximum", operands(ids, 0)))
    rows = where(make1("GreaterEqual", operands(ids, 0)), rows, zeros_like(rows))
    return [reshape(rows, shape(data)), None, None]


op(
    "UnsortedSegmentSum",
    ("data", "segment_ids", "num_segments"),
    infer=_segment_sum_infer,
    kernel=_segment_sum_kernel,
    host_inputs=(2,),
    type_attrs={"T": 0, "Tindices": 1, "Tnumsegments": 2},
    grad=_segment_sum_grad,
)


def unsorted_segment_sum(
    data: Any, segment_ids: Any, num_segments: Any, name: str | None = None
) -> Tensor:
    """Sum the slices of ``data`` into ``num_segments`` rows by ``segment_ids``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.unsorted_segment_sum([1.0, 2.0, 4.0], [1, 0, 1], 3)).tolist()
    [2.0, 5.0, 0.0]
    """
    with name_scope(name, "UnsortedSegmentSum") as scope:
        x = convert_to_tensor(data, name="data")
        ids = int_input(segment_ids, "segment_ids")
        return make1(
            "UnsortedSegmentSum", [x, ids, int_input(num_segments, "num_segments")], name=scope
        )


# ----------------------------------------------------- Where, Select, boolean_mask
def _where_infer(x: Tensor) -> Out:
    return Out(dtypes.int64, (None, None if x._shape is None else len(x._shape)))


def _where_kernel(xp: Any, x: Any) -> Any:
    return xp.argwhere(x).astype(np.int64, copy=False)


op("Where", ("input",), infer=_where_infer, kernel=_where_kernel, grad=NOT_DIFFERENTIABLE)


def _select_infer(condition: Tensor, t: Tensor, e: Tensor) -> Out:
    if condition.dtype is not dtypes.bool:
        raise TypeError(f"condition must be bool, got {condition.dtype.name}")
    dtype = same_dtype("Select", ("t", "e"), t, e)
    try:
        shape = merge(t._shape, e._shape)
    except ValueError:
        raise ValueError(
            f"t and e must have the same shape, got {fmt(t._shape)} and {fmt(e._shape)}"
        ) from None
    c = condition._shape
    vector_ok = c is not None and len(c) == 1 and bool(shape) and compatible(c, shape[:1])
    if c is not None and shape is not None and not compatible(c, shape) and not vector_ok:
        raise ValueError(
            f"condition of shape {fmt(c)} must have the shape of t and e ({fmt(shape)}) "
            "or be a vector over their first dimension"
        )
    return Out(dtype, shape)


def _select_kernel(xp: Any, condition: Any, t: Any, e: Any) -> Any:
    if condition.ndim == 1 and t.ndim > 1:
        condition = condition.reshape(condition.shape + (1,) * (t.ndim - 1))
    return xp.where(condition, t, e)


def _select_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    c, zeros = op.inputs[0], zeros_like(grad)
    return [None, where(c, grad, zeros), where(c, zeros, grad)]


op(
    "Select",
    ("condition", "t", "e"),
    infer=_select_infer,
    kernel=_select_kernel,
    type_attrs={"T": 1},
    grad=_select_grad,
)


def where(condition: Any, x: Any = None, y: Any = None, name: str | None = None) -> Tensor:
    """With ``x`` and ``y``, pick from ``x`` where ``condition``, else ``y``; alone, true indices.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.where(fb.constant([True, False])).shape.as_list()
    [None, 1]
    """
    if x is None and y is None:
        return make1("Where", [convert_to_tensor(condition)], name=name or "Where")
    if x is None or y is None:
        raise ValueError("x and y must both be non-None or both be None.")
    with name_scope(name, "Select") as scope:
        c = convert_to_tensor(condition, name="condition")
        t, e = operands(x, y)
        return make1("Select", [c, t, e], name=scope)


def _flatten_mask_dims(t: Tensor, axis: int, k: int) -> Tensor:
    """``t`` with dims ``axis .. axis+k-1`` merged into one (a Reshape with a -1 there)."""
    s = t._shape
    rest = None if s is None else s[:axis] + s[axis + k :]
    if rest is not None and None not in rest:
        target: Any = int_input([*rest[:axis], -1, *rest[axis:]], "shape")
    else:
        dyn = make1("Shape", [t], {"out_type": dtypes.int32})
        target = make1(
            "ConcatV2",
            [
                slice_helper(dyn, builtins.slice(None, axis)),
                int_input([-1], "minus_one"),
                slice_helper(dyn, builtins.slice(axis + k, None)),
                int_input(0, "axis"),
            ],
            {"N": 3},
        )
    return make1("Reshape", [t, target])


def boolean_mask(
    tensor: Any, mask: Any, name: str = "boolean_mask", axis: int | None = None
) -> Tensor:
    """The entries of ``tensor`` where the bool ``mask`` is true (``tensor[mask]`` in numpy).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.boolean_mask(fb.zeros([4, 3]), [True, False, True, True]).shape.as_list()
    [None, 3]
    """
    with name_scope(name, "boolean_mask"):
        t = convert_to_tensor(tensor, name="tensor")
        m = convert_to_tensor(mask, name="mask")
        ms, ts, axis = m._shape, t._shape, axis or 0
        if ms is None:
            raise ValueError(
                "Number of mask dimensions must be specified, even if some dimensions are None"
            )
        if not ms:
            raise ValueError("mask cannot be scalar.")
        if ts is not None:
            axis = norm_axis(axis, len(ts))
            if not compatible(ts[axis : axis + len(ms)], ms):
                raise ValueError(
                    f"mask of shape {fmt(ms)} does not fit tensor shape {fmt(ts)} at axis {axis}"
                )
        flat = _flatten_mask_dims(t, axis, len(ms))
        flat_mask = make1("Reshape", [m, int_input([-1], "shape")])
        indices = make1("Squeeze", [make1("Where", [flat_mask])], {"squeeze_dims": [1]})
        out = make1("GatherV2", [flat, indices, int_input(axis, "axis")], {"batch_dims": 0})
        if ts is not None:
            out.set_shape((*ts[:axis], None, *ts[axis + len(ms) :]))
        return out
