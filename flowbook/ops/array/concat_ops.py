"""Joining and taking apart: concat and stack, and their inverses split and unstack.

``ConcatV2`` joins tensors along an existing dimension, ``Pack`` (``stack``)
along a new one; ``Split`` and ``SplitV`` cut a dimension into equal pieces
or pieces of given sizes (one size may be -1), ``Unpack`` (``unstack``) takes
a dimension apart into tensors of one rank less.  Each is the other's
gradient: Pack's is ``unstack``, Split's is ``concat``; ConcatV2's is one
``Slice`` per input at the offsets ``ConcatOffset`` (an op only this
gradient uses) finds from the inputs' dynamic shapes.

Shapes: ``ConcatV2`` and ``Pack`` take a variadic ``*values`` input and an
``N`` attr; ``infer`` checks one dtype and rank and merges the inputs'
static shapes per dimension (the concat axis is the sum once all are known),
so a mismatch fails at build time.  ``axis``, ``split_dim`` and
``size_splits`` are int32 inputs read with ``constant_value``: known, they
give exact shapes, else the rank only.  The ops with several outputs (Split,
SplitV, Unpack, ConcatOffset) return one ``Out`` per output, so their count
is fixed when the graph is built.  Kernels check what ``infer`` could not and
raise InvalidArgumentError when the graph runs.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.stack([fb.placeholder(fb.float32, [None, 3]), fb.ones([4, 3])], 1).shape.as_list()
    [4, 2, 3]
"""

from __future__ import annotations

import builtins
import numbers
from typing import Any

import numpy as np

from flowbook.framework.errors import InvalidArgumentError
from flowbook.framework.graph import name_scope
from flowbook.framework.registry import NOT_DIFFERENTIABLE, Out, op
from flowbook.framework.tensor import Operation, Tensor
from flowbook.framework.tensor_shape import Shape, fmt, merge
from flowbook.ops._builder import make, make1, same_dtype
from flowbook.ops._shape_inputs import (
    check_int,
    const_int,
    const_ints,
    host_ints,
    int_input,
    is_tensor,
    norm_axis,
    vector_len,
)
from flowbook.ops.array.constant_op import convert_to_tensor
from flowbook.ops.array.shape_ops import shape

__all__ = ["concat", "pack", "split", "stack", "unpack", "unstack"]


def _convert_all(values: Any, prefix: str) -> list[Tensor]:
    """Convert a list of values; Python values take the dtype of the first tensor among them."""
    if is_tensor(values):
        raise TypeError(
            f"Expected a list of tensors, got the single tensor {convert_to_tensor(values).name!r}"
        )
    values = list(values)
    dtype = next((convert_to_tensor(v).dtype for v in values if is_tensor(v)), None)
    return [
        convert_to_tensor(v)
        if is_tensor(v)
        else convert_to_tensor(v, dtype=dtype, name=f"{prefix}_{i}")
        for i, v in enumerate(values)
    ]


# -------------------------------------------------------------- ConcatV2, Pack
def _concat_infer(*inputs: Tensor, N: int) -> Out:
    values, axis = inputs[:-1], inputs[-1]
    check_int("ConcatV2", "axis", axis)
    names = tuple(f"values[{i}]" for i in builtins.range(len(values)))
    dtype = same_dtype("ConcatV2", names, *values)
    shapes = [v._shape for v in values]
    ranks = {len(s) for s in shapes if s is not None}
    if len(ranks) > 1:
        raise ValueError(
            f"All inputs must have the same rank, got shapes {', '.join(map(fmt, shapes))}"
        )
    if not ranks:
        return Out(dtype, None)
    r = ranks.pop()
    if r == 0:
        raise ValueError("Can't concatenate scalars (use stack instead)")
    a = const_int(axis)
    if a is None:
        return Out(dtype, (None,) * r)
    a = norm_axis(a, r)
    known = [s for s in shapes if s is not None]
    out: list[int | None] = []
    for i in builtins.range(r):
        dims = [s[i] for s in known]
        if i == a:
            out.append(None if len(known) < len(shapes) or None in dims else sum(dims))  # type: ignore[arg-type]
            continue
        sizes = {d for d in dims if d is not None}
        if len(sizes) > 1:
            raise ValueError(
                f"Dimension {i} must be equal in all inputs (concatenating on axis {a}), "
                f"got shapes {', '.join(map(fmt, shapes))}"
            )
        out.append(sizes.pop() if sizes else None)
    return Out(dtype, tuple(out))


def _concat_kernel(xp: Any, *arrays: Any, N: int) -> Any:
    return xp.concatenate(arrays[:-1], axis=int(arrays[-1]))


def _concat_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    """One Slice of the gradient per input, at the offsets ConcatOffset finds at run time.

    The Slices are built by type: ``slicing`` sits above this module (its
    gradients concat and stack), so this one does not import it.
    """
    values, axis = op.inputs[:-1], op.inputs[-1]
    sizes = [shape(v) for v in values]
    offsets = make("ConcatOffset", [axis, *sizes], {"N": len(sizes)}).outputs
    return [make1("Slice", [grad, o, s]) for o, s in zip(offsets, sizes)] + [None]


op(
    "ConcatV2",
    ("*values", "axis"),
    infer=_concat_infer,
    attrs=("N",),
    kernel=_concat_kernel,
    host_inputs=(-1,),
    type_attrs={"T": 0, "Tidx": -1},
    grad=_concat_grad,
)


def concat(values: Any, axis: Any, name: str = "concat") -> Tensor:
    """Join tensors along an existing dimension ``axis``.

    TF before 1.0 took ``concat(axis, values)``: a Python int first and a list
    second are read in that old order.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.concat([fb.zeros([2, 3]), fb.ones([2, 4])], 1).shape.as_list()
    [2, 7]
    """
    if isinstance(values, int) and isinstance(axis, list | tuple):
        values, axis = axis, values  # the old argument order
    with name_scope(name, "concat") as scope:
        tensors = _convert_all(values, "values")
        axis_t = int_input(axis, "axis")
        if len(tensors) == 1:
            return make1("Identity", tensors, name=scope)  # as array_ops.identity builds it
        return make1("ConcatV2", [*tensors, axis_t], {"N": len(tensors)}, name=scope)


def _pack_infer(*values: Tensor, N: int, axis: int) -> Out:
    names = tuple(f"values[{i}]" for i in builtins.range(len(values)))
    dtype = same_dtype("Pack", names, *values)
    merged: Shape = None
    for i, v in enumerate(values):
        try:
            merged = merge(merged, v._shape)
        except ValueError:
            raise ValueError(
                f"Shapes of all inputs must match: values[0].shape = {fmt(values[0]._shape)} "
                f"!= values[{i}].shape = {fmt(v._shape)}"
            ) from None
    if merged is None:
        return Out(dtype, None)
    a = norm_axis(axis, len(merged) + 1)
    return Out(dtype, (*merged[:a], len(values), *merged[a:]))


def _pack_kernel(xp: Any, *values: Any, N: int, axis: int) -> Any:
    return xp.stack(values, axis=axis)


def _pack_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    return unstack(grad, num=op.attrs["N"], axis=op.attrs["axis"])


op(
    "Pack",
    ("*values",),
    infer=_pack_infer,
    attrs=("N", "axis"),
    kernel=_pack_kernel,
    grad=_pack_grad,
)


def stack(values: Any, axis: int = 0, name: str = "stack") -> Tensor:
    """Stack tensors of one shape along a new dimension ``axis`` (TF's ``Pack``).

    A list of Python values is made a single Const, as TensorFlow does.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.stack([fb.zeros([3]), fb.ones([3])], axis=1).shape.as_list()
    [3, 2]
    """
    values = list(values)
    if axis == 0 and not any(is_tensor(v) for v in values):
        try:
            return convert_to_tensor(values, name=name)
        except (TypeError, ValueError):
            pass  # a nested list holding tensors
    with name_scope(name, "stack") as scope:
        tensors = _convert_all(values, "values")
        return make1("Pack", tensors, {"N": len(tensors), "axis": int(axis)}, name=scope)


pack = stack  # the TF 0.x name


# --------------------------------------------------------------- ConcatOffset
def _concat_offset_infer(concat_dim: Tensor, *shapes: Tensor, N: int) -> list[Out]:
    check_int("ConcatOffset", "concat_dim", concat_dim)
    return [Out(s.dtype, s._shape) for s in shapes]


def _concat_offset_kernel(xp: Any, concat_dim: Any, *shapes: Any, N: int) -> Any:
    dims = [host_ints(s) for s in shapes]
    r = len(dims[0])
    axis = int(concat_dim)
    if not -r <= axis < r or any(len(d) != r for d in dims):
        raise InvalidArgumentError(None, None, f"Cannot concatenate shapes {dims} on axis {axis}")
    axis %= r
    offsets, at = [], 0
    for d in dims:
        if d[:axis] != dims[0][:axis] or d[axis + 1 :] != dims[0][axis + 1 :]:
            raise InvalidArgumentError(None, None, f"Shapes {dims} differ off the axis {axis}")
        offsets.append(
            xp.asarray([at if i == axis else 0 for i in range(r)], dtype=shapes[0].dtype)
        )
        at += d[axis]
    return offsets[0] if N == 1 else tuple(offsets)  # one output: the bare array


op(
    "ConcatOffset",
    ("concat_dim", "*shape"),
    infer=_concat_offset_infer,
    attrs=("N",),
    kernel=_concat_offset_kernel,
    grad=NOT_DIFFERENTIABLE,
    type_attrs={},
)


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


def _split_kernel(xp: Any, split_dim: Any, value: Any, num_split: int) -> Any:
    axis = int(split_dim) % value.ndim
    if value.shape[axis] % num_split:
        raise InvalidArgumentError(
            None,
            None,
            f"Dimension {axis} of shape {list(value.shape)} is not divisible by {num_split}",
        )
    return _outputs(xp.split(value, num_split, axis=axis))


def _split_grad(op: Operation, *grads: Tensor) -> list[Tensor | None]:
    return [None, concat(list(grads), op.inputs[0])]


op(
    "Split",
    ("split_dim", "value"),
    infer=_split_infer,
    attrs=("num_split",),
    kernel=_split_kernel,
    host_inputs=(0,),
    type_attrs={"T": 1},
    grad=_split_grad,
)


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


def _splitv_kernel(xp: Any, value: Any, size_splits: Any, split_dim: Any, num_split: int) -> Any:
    axis = int(split_dim) % value.ndim
    try:
        sizes = _fill_sizes(list(host_ints(size_splits)), value.shape[axis], value.shape)
    except ValueError as err:
        raise InvalidArgumentError(None, None, str(err)) from None
    return _outputs(xp.split(value, np.cumsum(sizes[:-1]).tolist(), axis=axis))


def _splitv_grad(op: Operation, *grads: Tensor) -> list[Tensor | None]:
    return [concat(list(grads), op.inputs[2]), None, None]


op(
    "SplitV",
    ("value", "size_splits", "split_dim"),
    infer=_splitv_infer,
    attrs=("num_split",),
    kernel=_splitv_kernel,
    host_inputs=(1, 2),
    type_attrs={"T": 0, "Tlen": 1},
    grad=_splitv_grad,
)


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


def _unpack_grad(op: Operation, *grads: Tensor) -> Tensor:
    return stack(list(grads), axis=op.attrs["axis"])


op(
    "Unpack",
    ("value",),
    infer=_unpack_infer,
    attrs=("num", "axis"),
    kernel=_unpack_kernel,
    grad=_unpack_grad,
)


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
