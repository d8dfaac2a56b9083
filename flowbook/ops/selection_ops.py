"""Selecting parts of tensors: split, unstack, gather, reverse, where and boolean_mask.

Where ``slicing`` cuts one strided box out of a tensor, the ops here pick
pieces by count, by index or by condition: ``Split`` and ``SplitV`` cut a
dimension into equal pieces or pieces of given sizes (one size may be -1),
``Unpack`` (``unstack``) takes a dimension apart into tensors of one rank
less, ``GatherV2`` takes the slices at an index tensor, ``ReverseV2`` flips
dimensions, ``Where`` lists the indices of the true entries and ``Select``
(``where(c, x, y)``) chooses element by element.  ``boolean_mask`` is no op
of its own: as in TensorFlow it is built of Reshape, Where, Squeeze and
GatherV2.

Shape inference follows ``slicing``'s rules: ``axis``, ``split_dim`` and
``size_splits`` are int32 input tensors read with ``constant_value``; when
the graph determines them the pieces get exact static shapes and an uneven
split, sizes that do not add up or an axis out of range fail at build time;
otherwise only the rank is kept.  The ops with several outputs (Split,
SplitV, Unpack) return one ``Out`` per output, so their count (the
``num_split`` or ``num`` attr) is fixed when the graph is built.  Sizes that
depend on the data stay unknown: ``Where`` is ``[?, rank]`` and the masked
dimension of ``boolean_mask`` is ``?``.  Kernels check what ``infer`` could
not (indices out of range, pieces that do not fit) and raise
InvalidArgumentError when the graph runs.  The gradient of ``GatherV2`` is
dense: UnsortedSegmentSum adds the slices back, so repeated indices add up.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     [p.shape.as_list() for p in fb.split(fb.zeros([4, 6]), 3, axis=1)]
    [[4, 2], [4, 2], [4, 2]]
"""

from __future__ import annotations

import builtins
import numbers
from typing import Any

import numpy as np

from flowbook import dtypes
from flowbook.errors import InvalidArgumentError
from flowbook.graph import name_scope
from flowbook.ops._builder import make, make1, operands, same_as_input, same_dtype
from flowbook.ops.constant_op import convert_to_tensor
from flowbook.ops.joining_ops import concat, stack, zeros_like
from flowbook.ops.slicing import (
    check_int,
    const_int,
    const_ints,
    host_ints,
    int_input,
    norm_axis,
    slice_helper,
    vector_len,
)
from flowbook.registry import NOT_DIFFERENTIABLE, Out, register_gradient, register_op
from flowbook.tensor import Operation, Tensor
from flowbook.tensor_shape import Shape, compatible, fmt, merge

__all__ = [
    "boolean_mask",
    "gather",
    "reverse",
    "reverse_v2",
    "split",
    "unpack",
    "unstack",
    "where",
]


def _outputs(pieces: list[Any]) -> Any:
    """A multi-output kernel's result: a tuple, but the bare array when there is one output."""
    return pieces[0] if len(pieces) == 1 else tuple(pieces)


# --------------------------------------------------------------- Split, SplitV
def _split_infer(split_dim: Tensor, value: Tensor, num_split: int) -> list[Out]:
    check_int("Split", "split_dim", split_dim)
    if num_split < 1:
        raise ValueError(f"num_split must be >= 1, got {num_split}")
    shape, axis = value._shape, const_int(split_dim)
    if shape is None:
        return [Out(value.dtype, None)] * num_split
    if axis is None:
        return [Out(value.dtype, (None,) * len(shape))] * num_split
    axis = norm_axis(axis, len(shape))
    dim = shape[axis]
    if dim is not None and dim % num_split:
        raise ValueError(
            f"Dimension {axis} of shape {fmt(shape)} (size {dim}) "
            f"must be evenly divisible by {num_split}"
        )
    piece = (*shape[:axis], None if dim is None else dim // num_split, *shape[axis + 1 :])
    return [Out(value.dtype, piece)] * num_split


@register_op(
    "Split", ("split_dim", "value"), infer=_split_infer, attrs=("num_split",), host_inputs=(0,)
)
def _split_kernel(xp: Any, split_dim: Any, value: Any, num_split: int) -> Any:
    axis = int(split_dim) % value.ndim
    if value.shape[axis] % num_split:
        raise InvalidArgumentError(
            None,
            None,
            f"Dimension {axis} of shape {list(value.shape)} is not divisible by {num_split}",
        )
    return _outputs(xp.split(value, num_split, axis=axis))


@register_gradient("Split")
def _split_grad(op: Operation, *grads: Tensor) -> list[Tensor | None]:
    return [None, concat(list(grads), op.inputs[0])]


def _fill_sizes(sizes: list[int], dim: int | None, shape: Shape) -> list[int | None]:
    if sizes.count(-1) > 1:
        raise ValueError(f"Only one size in size_splits may be -1, got {sizes}")
    if dim is None:
        return [None if s == -1 else s for s in sizes]
    known = sum(s for s in sizes if s != -1)
    if -1 in sizes:
        if known > dim:
            raise ValueError(
                f"size_splits {sizes} add up to more than dimension size {dim} of {fmt(shape)}"
            )
        return [dim - known if s == -1 else s for s in sizes]
    if known != dim:
        raise ValueError(f"size_splits {sizes} must add up to dimension size {dim} of {fmt(shape)}")
    return list(sizes)


def _splitv_infer(
    value: Tensor, size_splits: Tensor, split_dim: Tensor, num_split: int
) -> list[Out]:
    check_int("SplitV", "size_splits", size_splits)
    check_int("SplitV", "split_dim", split_dim)
    shape, axis, sizes = value._shape, const_int(split_dim), const_ints(size_splits)
    if sizes is not None and len(sizes) != num_split:
        raise ValueError(f"size_splits has {len(sizes)} elements but num_split is {num_split}")
    if shape is None:
        return [Out(value.dtype, None)] * num_split
    if axis is None:
        return [Out(value.dtype, (None,) * len(shape))] * num_split
    axis = norm_axis(axis, len(shape))
    filled = _fill_sizes(sizes, shape[axis], shape) if sizes is not None else [None] * num_split
    return [Out(value.dtype, (*shape[:axis], d, *shape[axis + 1 :])) for d in filled]


@register_op(
    "SplitV",
    ("value", "size_splits", "split_dim"),
    infer=_splitv_infer,
    attrs=("num_split",),
    host_inputs=(1, 2),
)
def _splitv_kernel(xp: Any, value: Any, size_splits: Any, split_dim: Any, num_split: int) -> Any:
    axis = int(split_dim) % value.ndim
    try:
        sizes = _fill_sizes(list(host_ints(size_splits)), value.shape[axis], value.shape)
    except ValueError as err:
        raise InvalidArgumentError(None, None, str(err)) from None
    return _outputs(xp.split(value, np.cumsum(sizes[:-1]).tolist(), axis=axis))


@register_gradient("SplitV")
def _splitv_grad(op: Operation, *grads: Tensor) -> list[Tensor | None]:
    return [concat(list(grads), op.inputs[2]), None, None]


def split(
    value: Any, num_or_size_splits: Any, axis: Any = 0, num: int | None = None, name: str = "split"
) -> list[Tensor]:
    """Split into ``num_or_size_splits`` equal pieces (an int) or pieces of the given sizes.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     [p.shape.as_list() for p in fb.split(fb.zeros([2, 6]), [1, -1], axis=1)]
    [[2, 1], [2, 5]]
    """
    with name_scope(name, "split") as scope:
        if isinstance(num_or_size_splits, numbers.Integral):
            axis_t = int_input(axis, "split_dim")
            x = convert_to_tensor(value, name="value")
            op = make("Split", [axis_t, x], {"num_split": int(num_or_size_splits)}, name=scope)
            return list(op.outputs)
        x = convert_to_tensor(value, name="value")
        sizes = int_input(num_or_size_splits, "size_splits")
        n = num if num is not None else vector_len(sizes)
        if n is None:
            raise ValueError(f"Cannot infer num from shape {fmt(sizes._shape)} of size_splits")
        op = make(
            "SplitV", [x, sizes, int_input(axis, "split_dim")], {"num_split": int(n)}, name=scope
        )
        return list(op.outputs)


# -------------------------------------------------------------------- Unpack
def _unpack_infer(value: Tensor, num: int, axis: int) -> list[Out]:
    shape = value._shape
    if shape is None:
        return [Out(value.dtype, None)] * num
    axis = norm_axis(axis, len(shape))
    if shape[axis] is not None and shape[axis] != num:
        raise ValueError(
            f"Dimension {axis} of shape {fmt(shape)} has size {shape[axis]}, not num={num}"
        )
    return [Out(value.dtype, shape[:axis] + shape[axis + 1 :])] * num


@register_op("Unpack", ("value",), infer=_unpack_infer, attrs=("num", "axis"))
def _unpack_kernel(xp: Any, value: Any, num: int, axis: int) -> Any:
    if value.shape[axis] != num:
        raise InvalidArgumentError(
            None,
            None,
            f"Input shape {list(value.shape)} has {value.shape[axis]} values on axis {axis}, "
            f"not {num}",
        )
    moved = xp.moveaxis(value, axis, 0)
    return _outputs([moved[i, ...] for i in range(num)])


@register_gradient("Unpack")
def _unpack_grad(op: Operation, *grads: Tensor) -> Tensor:
    return stack(list(grads), axis=op.attrs["axis"])


def unstack(
    value: Any, num: int | None = None, axis: int = 0, name: str = "unstack"
) -> list[Tensor]:
    """Unpack dimension ``axis`` into a list of tensors of one rank less.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     len(fb.unstack(fb.zeros([3, 2])))
    3
    """
    with name_scope(name, "unstack") as scope:
        x = convert_to_tensor(value, name="value")
        if num is None:
            shape = x._shape
            if shape is None or shape[norm_axis(axis, len(shape))] is None:
                raise ValueError(f"Cannot infer num from shape {fmt(shape)}")
            num = shape[norm_axis(axis, len(shape))]
        return list(make("Unpack", [x], {"num": int(num), "axis": int(axis)}, name=scope).outputs)


unpack = unstack  # the TF 0.x name


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


@register_op(
    "GatherV2",
    ("params", "indices", "axis"),
    infer=_gather_infer,
    attrs=("batch_dims",),
    host_inputs=(2,),
)
def _gather_kernel(xp: Any, params: Any, indices: Any, axis: Any, batch_dims: int) -> Any:
    a = int(axis) % params.ndim
    n = params.shape[a]
    if indices.size and (int(indices.min()) < 0 or int(indices.max()) >= n):
        bad = int(indices.min()) if int(indices.min()) < 0 else int(indices.max())
        raise InvalidArgumentError(None, None, f"indices contain {bad}, which is not in [0, {n})")
    return xp.take(params, indices, axis=a)


@register_gradient("GatherV2")
def _gather_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    """Dense: the gradient's slices added back at their indices (repeats add up).

    TF returns an IndexedSlices; here UnsortedSegmentSum sums the rows along
    axis 0 (moved there by transposes for another axis, as TF does).
    """
    from flowbook.ops.array_ops import expand_dims, range, reshape, shape, size, transpose

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
        from flowbook.ops.math_ops import floormod

        a = floormod(axis, make1("Rank", [params]))
    outer, inner = p_shape[:a], p_shape[a:][1:]
    n_outer, n_inner = size(outer), size(inner)
    outer_axes, inner_axes = range(n_outer), range(n_outer + 1, n_outer + 1 + n_inner)
    values = reshape(grad, concat([outer, n_ids, inner], 0))
    values = transpose(values, concat([stack([n_outer]), outer_axes, inner_axes], 0))
    summed = make1("UnsortedSegmentSum", [values, ids, p_shape[a]])
    return [transpose(summed, concat([outer_axes + 1, [0], inner_axes], 0)), None, None]


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


# ----------------------------------------------------------------- ReverseV2
def _reverse_infer(x: Tensor, axis: Tensor) -> Out:
    check_int("ReverseV2", "axis", axis)
    axes = const_ints(axis)
    if axes is not None and x._shape is not None:
        normed = [norm_axis(a, len(x._shape)) for a in axes]
        if len(set(normed)) != len(normed):
            raise ValueError(f"axis {axes} names a dimension more than once")
    return same_as_input(x)


@register_op("ReverseV2", ("tensor", "axis"), infer=_reverse_infer, host_inputs=(1,))
def _reverse_kernel(xp: Any, x: Any, axis: Any) -> Any:
    return xp.flip(x, axis=tuple(a % x.ndim for a in host_ints(axis)))


@register_gradient("ReverseV2")
def _reverse_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    return [reverse(grad, op.inputs[1]), None]


def reverse(tensor: Any, axis: Any, name: str | None = None) -> Tensor:
    """Reverse the order of elements along each dimension in ``axis``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.reverse(fb.zeros([2, 3]), [1]).op.type
    'ReverseV2'
    """
    with name_scope(name, "ReverseV2") as scope:
        x = convert_to_tensor(tensor, name="tensor")
        return make1("ReverseV2", [x, int_input(axis, "axis")], name=scope)


reverse_v2 = reverse


# ----------------------------------------------------- Where, Select, boolean_mask
def _where_infer(x: Tensor) -> Out:
    return Out(dtypes.int64, (None, None if x._shape is None else len(x._shape)))


@register_op("Where", ("input",), infer=_where_infer, grad=NOT_DIFFERENTIABLE)
def _where_kernel(xp: Any, x: Any) -> Any:
    return xp.argwhere(x).astype(np.int64, copy=False)


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


@register_op("Select", ("condition", "t", "e"), infer=_select_infer)
def _select_kernel(xp: Any, condition: Any, t: Any, e: Any) -> Any:
    if condition.ndim == 1 and t.ndim > 1:
        condition = condition.reshape(condition.shape + (1,) * (t.ndim - 1))
    return xp.where(condition, t, e)


@register_gradient("Select")
def _select_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    c, zeros = op.inputs[0], zeros_like(grad)
    return [None, where(c, grad, zeros), where(c, zeros, grad)]


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
            [slice_helper(dyn, builtins.slice(None, axis)), int_input([-1], "minus_one"),
             slice_helper(dyn, builtins.slice(axis + k, None)), int_input(0, "axis")],
            {"N": 3},
        )  # fmt: skip
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
