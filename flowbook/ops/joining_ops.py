"""Joining and replicating ops: concat, stack, tile, pad, fill, zeros/ones, one_hot.

``ConcatV2`` joins tensors along an existing dimension, ``Pack`` (``stack``)
along a new one; ``Tile`` repeats a tensor and ``Fill`` (behind ``zeros``,
``ones`` and their ``_like`` forms) a scalar; ``Pad``/``PadV2``/``MirrorPad``
surround a tensor with a constant or its reflection; ``OneHot`` spreads indices
over a new dimension of size ``depth``.

Shapes: ``ConcatV2`` and ``Pack`` take a variadic ``*values`` input and an ``N``
attr; ``infer`` checks one dtype and rank and merges the inputs' static shapes
per dimension (the concat axis is the sum once all are known), so a mismatch
fails at build time.  Concat's ``axis``, ``multiples``, ``paddings``, ``dims``
and ``depth`` are int32 inputs read with ``constant_value`` (``Fill``'s with
``partial_shape_value``): known, they give exact shapes, else the rank only.
Wrappers needing ``array_ops.reshape`` or ``shape`` import them late, as
``array_ops`` imports this module.  Their gradients are in ``array_grad.py``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.stack([fb.placeholder(fb.float32, [None, 3]), fb.ones([4, 3])], 1).shape.as_list()
    [4, 2, 3]
"""

from __future__ import annotations

import builtins
import math
from typing import Any

import numpy as np

from flowbook import dtypes
from flowbook.errors import InvalidArgumentError
from flowbook.graph import name_scope
from flowbook.ops._builder import make1, same_as_input, same_dtype
from flowbook.ops.constant_op import (
    constant,
    constant_value,
    convert_to_tensor,
    partial_shape_value,
)
from flowbook.ops.slicing import (
    check_int,
    const_int,
    const_ints,
    host_ints,
    int_input,
    is_tensor,
    norm_axis,
    per_dim_ints,
)
from flowbook.registry import Out, register_op
from flowbook.tensor import Tensor
from flowbook.tensor_shape import Shape, as_shape, fmt, merge

__all__ = [
    "concat",
    "fill",
    "one_hot",
    "ones",
    "ones_like",
    "pack",
    "pad",
    "stack",
    "tile",
    "zeros",
    "zeros_like",
]


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


@register_op("ConcatV2", ("*values", "axis"), infer=_concat_infer, attrs=("N",), host_inputs=(-1,))
def _concat_kernel(xp: Any, *arrays: Any, N: int) -> Any:
    return xp.concatenate(arrays[:-1], axis=int(arrays[-1]))


def concat(values: Any, axis: Any, name: str = "concat") -> Tensor:
    """Join tensors along an existing dimension ``axis``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.concat([fb.zeros([2, 3]), fb.ones([2, 4])], 1).shape.as_list()
    [2, 7]
    """
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


@register_op("Pack", ("*values",), infer=_pack_infer, attrs=("N", "axis"))
def _pack_kernel(xp: Any, *values: Any, N: int, axis: int) -> Any:
    return xp.stack(values, axis=axis)


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


# ---------------------------------------------------------- Fill, zeros, ones
def _fill_infer(dims: Tensor, value: Tensor) -> Out:
    check_int("Fill", "dims", dims)
    if value._shape not in (None, ()):
        raise ValueError(f"value must be a scalar, got shape {fmt(value._shape)}")
    d = const_ints(dims)
    if d is not None and any(n < 0 for n in d):
        raise ValueError(f"dims must be non-negative, got {d}")
    return Out(value.dtype, partial_shape_value(dims))


@register_op("Fill", ("dims", "value"), infer=_fill_infer, host_inputs=(0,))
def _fill_kernel(xp: Any, dims: Any, value: Any) -> Any:
    return xp.broadcast_to(value, host_ints(dims)).copy()  # value stays on the device


def fill(dims: Any, value: Any, name: str | None = None) -> Tensor:
    """A tensor of shape ``dims`` with every element ``value``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.fill([2, 3], 9).dtype
    tf.int32
    """
    with name_scope(name, "Fill") as scope:
        d = int_input(dims, "dims")
        return make1("Fill", [d, convert_to_tensor(value, name="value")], name=scope)


def _filled(shape_: Any, value: Any, dtype: Any, name: str | None, default: str) -> Tensor:
    dt = dtypes.as_dtype(dtype)
    scalar = np.array(value).astype(dt.np)
    with name_scope(name, default) as scope:
        if not is_tensor(shape_):
            try:
                dims = as_shape(shape_)
            except (TypeError, ValueError):
                dims = None
            if dims is not None and None not in dims and math.prod(dims) < 1000:  # type: ignore[arg-type]
                return constant(scalar, dtype=dt, shape=dims, name=scope)
        dims_t = int_input(shape_, "shape")
        if dims_t._shape == ():
            from flowbook.ops.array_ops import reshape

            dims_t = reshape(dims_t, [-1])
        return fill(dims_t, constant(scalar, dtype=dt), name=scope)


def zeros(shape: Any, dtype: Any = dtypes.float32, name: str | None = None) -> Tensor:
    """A tensor of zeros (a Const when small, else ``Fill``).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.zeros([2, 3]).shape.as_list()
    [2, 3]
    """
    return _filled(shape, 0, dtype, name, "zeros")


def ones(shape: Any, dtype: Any = dtypes.float32, name: str | None = None) -> Tensor:
    """A tensor of ones (a Const when small, else ``Fill``).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.ones([2], fb.int32).dtype
    tf.int32
    """
    return _filled(shape, 1, dtype, name, "ones")


@register_op("ZerosLike", ("x",), infer=same_as_input)
def _zeros_like_kernel(xp: Any, x: Any) -> Any:
    return xp.zeros_like(x)


@register_op("OnesLike", ("x",), infer=same_as_input)
def _ones_like_kernel(xp: Any, x: Any) -> Any:
    return xp.ones_like(x)


def _like(op_type: str, tensor: Any, dtype: Any, name: str | None, default: str) -> Tensor:
    from flowbook.ops.array_ops import shape

    with name_scope(name, default) as scope:
        x = convert_to_tensor(tensor, name="tensor")
        if dtype is not None and dtypes.as_dtype(dtype) is not x.dtype:
            s = x._shape
            dims = list(s) if s is not None and None not in s else shape(x)
            return _filled(dims, 0 if op_type == "ZerosLike" else 1, dtype, scope, default)
        return make1(op_type, [x], name=scope)


def zeros_like(
    tensor: Any, dtype: Any = None, name: str | None = None, optimize: bool = True
) -> Tensor:
    """Zeros of the shape (and, unless ``dtype`` is given, the dtype) of ``tensor``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.zeros_like(fb.ones([2])).op.type
    'ZerosLike'
    """
    return _like("ZerosLike", tensor, dtype, name, "zeros_like")


def ones_like(
    tensor: Any, dtype: Any = None, name: str | None = None, optimize: bool = True
) -> Tensor:
    """Ones of the shape (and, unless ``dtype`` is given, the dtype) of ``tensor``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.ones_like(fb.zeros([2]), dtype=fb.int32).dtype
    tf.int32
    """
    return _like("OnesLike", tensor, dtype, name, "ones_like")


# ------------------------------------------------------------------------ Tile
def _tile_infer(x: Tensor, multiples: Tensor) -> Out:
    m, unknown = per_dim_ints("Tile", "multiples", x, multiples)
    if m is None:
        return Out(x.dtype, unknown)
    shape = x._shape
    if shape is not None and len(m) != len(shape):
        raise ValueError(
            f"multiples {m} must have one entry per dimension of the input {fmt(shape)}"
        )
    if any(k < 0 for k in m):
        raise ValueError(f"multiples must be non-negative, got {m}")
    if shape is None:
        return Out(x.dtype, (None,) * len(m))
    return Out(x.dtype, tuple(None if d is None else d * k for d, k in zip(shape, m)))


@register_op("Tile", ("input", "multiples"), infer=_tile_infer, host_inputs=(1,))
def _tile_kernel(xp: Any, x: Any, multiples: Any) -> Any:
    reps = host_ints(multiples)
    if len(reps) != x.ndim:
        raise InvalidArgumentError(None, None, f"multiples {list(reps)} must have {x.ndim} entries")
    return xp.tile(x, reps)


def tile(input: Any, multiples: Any, name: str | None = None) -> Tensor:
    """Repeat ``input`` ``multiples[i]`` times along each dimension ``i``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.tile(fb.zeros([2, 3]), [2, 1]).shape.as_list()
    [4, 3]
    """
    with name_scope(name, "Tile") as scope:
        x = convert_to_tensor(input, name="input")
        return make1("Tile", [x, int_input(multiples, "multiples")], name=scope)


# ------------------------------------------------------- Pad, PadV2, MirrorPad
def _pad_infer(
    x: Tensor, paddings: Tensor, constant_values: Tensor | None = None, mode: str = "CONSTANT"
) -> Out:
    check_int("Pad", "paddings", paddings)
    shape, ps = x._shape, paddings._shape
    if ps is not None and (len(ps) != 2 or ps[1] not in (2, None)):
        raise ValueError(f"paddings must be a matrix with 2 columns, got shape {fmt(ps)}")
    if shape is not None and ps is not None and ps[0] not in (None, len(shape)):
        raise ValueError(
            f"paddings of shape {fmt(ps)} must have one row per dimension of the input {fmt(shape)}"
        )
    if constant_values is not None and constant_values.dtype is not x.dtype:
        raise TypeError(
            f"constant_values has type {constant_values.dtype.name}, expected {x.dtype.name}"
        )
    p = constant_value(paddings)
    if p is None:
        n = len(shape) if shape is not None else None if ps is None else ps[0]
        return Out(x.dtype, None if n is None else (None,) * n)
    rows = np.asarray(p, dtype=np.int64).reshape(-1, 2).tolist()
    if any(a < 0 or b < 0 for a, b in rows):
        raise ValueError(f"paddings must be non-negative, got {rows}")
    if shape is None:
        return Out(x.dtype, (None,) * len(rows))
    for i, ((a, b), d) in enumerate(zip(rows, shape)):
        limit = None if d is None or mode == "CONSTANT" else d - (mode == "REFLECT")
        if limit is not None and max(a, b) > limit:
            raise ValueError(
                f"{mode} paddings [{a}, {b}] of dimension {i} must be at most {limit} "
                f"(shape {fmt(shape)})"
            )
    return Out(x.dtype, tuple(None if d is None else d + a + b for (a, b), d in zip(rows, shape)))


def _pad_widths(x: Any, paddings: Any) -> list[tuple[int, int]]:
    rows = [tuple(r) for r in paddings.tolist()]
    if len(rows) != x.ndim or any(min(r) < 0 for r in rows):
        raise InvalidArgumentError(
            None, None, f"paddings {rows} do not fit the input shape {list(x.shape)}"
        )
    return rows


@register_op("Pad", ("input", "paddings"), infer=_pad_infer, host_inputs=(1,))
def _pad_kernel(xp: Any, x: Any, paddings: Any) -> Any:
    return xp.pad(x, _pad_widths(x, paddings), mode="constant")


@register_op(
    "PadV2", ("input", "paddings", "constant_values"), infer=_pad_infer, host_inputs=(1, 2)
)
def _padv2_kernel(xp: Any, x: Any, paddings: Any, constant_values: Any) -> Any:
    return xp.pad(
        x, _pad_widths(x, paddings), mode="constant", constant_values=constant_values.item()
    )


@register_op(
    "MirrorPad", ("input", "paddings"), infer=_pad_infer, attrs=("mode",), host_inputs=(1,)
)
def _mirror_pad_kernel(xp: Any, x: Any, paddings: Any, mode: str) -> Any:
    return xp.pad(x, _pad_widths(x, paddings), mode=mode.lower())


def pad(
    tensor: Any,
    paddings: Any,
    mode: str = "CONSTANT",
    name: str | None = None,
    constant_values: Any = 0,
) -> Tensor:
    """Pad ``tensor`` by ``paddings[i] = [before, after]`` along each dimension ``i``.

    ``mode`` is CONSTANT (with ``constant_values``), REFLECT or SYMMETRIC.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.pad(fb.zeros([2, 3]), [[1, 1], [0, 2]]).shape.as_list()
    [4, 5]
    """
    mode = mode.upper()
    if mode not in ("CONSTANT", "REFLECT", "SYMMETRIC"):
        raise ValueError(f"Unknown padding mode: {mode}")
    default = "Pad" if mode == "CONSTANT" else "MirrorPad"
    with name_scope(name, default) as scope:
        x = convert_to_tensor(tensor, name="input")
        p = int_input(paddings, "paddings")
        if mode != "CONSTANT":
            return make1("MirrorPad", [x, p], {"mode": mode}, name=scope)
        if not is_tensor(constant_values) and np.all(np.asarray(constant_values) == 0):
            return make1("Pad", [x, p], name=scope)
        c = convert_to_tensor(constant_values, dtype=x.dtype, name="constant_values")
        return make1("PadV2", [x, p, c], name=scope)


# -------------------------------------------------------------------- OneHot
def _one_hot_infer(
    indices: Tensor, depth: Tensor, on_value: Tensor, off_value: Tensor, axis: int
) -> Out:
    if indices.dtype not in (dtypes.uint8, dtypes.int32, dtypes.int64):
        raise TypeError(f"indices must be uint8, int32 or int64, got {indices.dtype.name}")
    check_int("OneHot", "depth", depth)
    dtype = same_dtype("OneHot", ("on_value", "off_value"), on_value, off_value)
    d, shape = const_int(depth), indices._shape
    if d is not None and d < 0:
        raise ValueError(f"depth must be non-negative, got {d}")
    if shape is None:
        return Out(dtype, None)
    if not -1 <= axis <= len(shape):
        raise ValueError(f"axis must be -1 or in [0, {len(shape)}], got {axis}")
    a = len(shape) if axis == -1 else axis
    return Out(dtype, (*shape[:a], d, *shape[a:]))


@register_op(
    "OneHot",
    ("indices", "depth", "on_value", "off_value"),
    infer=_one_hot_infer,
    attrs=("axis",),
    host_inputs=(1,),
)
def _one_hot_kernel(
    xp: Any, indices: Any, depth: Any, on_value: Any, off_value: Any, axis: int
) -> Any:
    a = indices.ndim if axis == -1 else axis
    classes = xp.arange(int(depth)).reshape((int(depth),) + (1,) * (indices.ndim - a))
    hot = xp.expand_dims(indices, a) == classes
    return xp.where(hot, on_value, off_value).astype(on_value.dtype, copy=False)


def one_hot(
    indices: Any,
    depth: Any,
    on_value: Any = None,
    off_value: Any = None,
    axis: int | None = None,
    dtype: Any = None,
    name: str | None = None,
) -> Tensor:
    """One-hot encode ``indices`` into a new dimension of size ``depth`` (float32 by default).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.one_hot([0, 2], 3).shape.as_list()
    [2, 3]
    """
    dt = None if dtype is None else dtypes.as_dtype(dtype)
    given = [v for v in (on_value, off_value) if v is not None]
    if dt is None:
        kinds = [convert_to_tensor(v).dtype if is_tensor(v) else dtypes.of_value(v) for v in given]
        dt = kinds[0] if kinds else dtypes.float32
    with name_scope(name, "one_hot") as scope:
        i = int_input(indices, "indices")
        on = convert_to_tensor(1 if on_value is None else on_value, dtype=dt, name="on_value")
        off = convert_to_tensor(0 if off_value is None else off_value, dtype=dt, name="off_value")
        inputs = [i, int_input(depth, "depth"), on, off]
        return make1("OneHot", inputs, {"axis": -1 if axis is None else int(axis)}, name=scope)
