"""Filling: ``fill``, ``zeros``/``ones`` and their ``_like`` forms, and ``one_hot``.

``Fill`` repeats a scalar over a shape given as an int32 input (read with
``partial_shape_value``, so a computed shape still gives what the graph
determines); ``zeros`` and ``ones`` build a Const when the shape is known and
small, else a ``Fill``.  ``ZerosLike``/``OnesLike`` take the shape of a
tensor, ``OneHot`` spreads indices over a new dimension of size ``depth``.

Only ``Fill`` is differentiable, in its value: the gradient is the sum of the
incoming one.  It builds that ``Sum`` by type (``make1("Sum", ...)``), as
TensorFlow's array_ops calls gen_math_ops: the math modules sit above the
array modules and import them, so the array modules never import math.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.zeros_like(fb.placeholder(fb.float32, [None, 3])).shape.as_list()
    [None, 3]
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from flowbook.framework import dtypes
from flowbook.framework.graph import name_scope
from flowbook.framework.limits import claimed_bytes, human
from flowbook.framework.registry import NOT_DIFFERENTIABLE, Out, op
from flowbook.framework.tensor import Operation, Tensor
from flowbook.framework.tensor_shape import as_shape, fmt
from flowbook.ops._builder import make1, same_as_input, same_dtype
from flowbook.ops._shape_inputs import (
    check_int,
    const_int,
    const_ints,
    host_ints,
    int_input,
    is_tensor,
)
from flowbook.ops.array.constant_op import constant, convert_to_tensor, partial_shape_value
from flowbook.ops.array.shape_ops import all_axes, reshape, shape

__all__ = ["fill", "one_hot", "ones", "ones_like", "zeros", "zeros_like"]


# ---------------------------------------------------------- Fill, zeros, ones
def _fill_infer(dims: Tensor, value: Tensor) -> Out:
    check_int("Fill", "dims", dims)
    if value._shape not in (None, ()):
        raise ValueError(f"value must be a scalar, got shape {fmt(value._shape)}")
    d = const_ints(dims)
    if d is not None and any(n < 0 for n in d):
        raise ValueError(f"dims must be non-negative, got {d}")
    return Out(value.dtype, partial_shape_value(dims))


def _fill_kernel(xp: Any, dims: Any, value: Any) -> Any:
    shape = host_ints(dims)
    nbytes = claimed_bytes(shape, value.dtype.itemsize)
    if nbytes >= 2**63:  # past what numpy can even index: out of memory, said plainly
        raise MemoryError(f"shape {list(shape)} of {value.dtype} needs {human(nbytes)}")
    return xp.broadcast_to(value, shape).copy()  # value stays on the device


def _fill_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    """None for ``dims``; for ``value``, the sum of every element of the gradient."""
    return [None, make1("Sum", [grad, all_axes(grad)], {"keep_dims": False})]


op(
    "Fill",
    ("dims", "value"),
    infer=_fill_infer,
    kernel=_fill_kernel,
    host_inputs=(0,),
    type_attrs={"T": 1, "index_type": 0},
    grad=_fill_grad,
)


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


def _zeros_like_kernel(xp: Any, x: Any) -> Any:
    return xp.zeros_like(x)


op(
    "ZerosLike",
    ("x",),
    infer=same_as_input,
    kernel=_zeros_like_kernel,
    shape_inputs=(0,),
    grad=NOT_DIFFERENTIABLE,
)


def _ones_like_kernel(xp: Any, x: Any) -> Any:
    return xp.ones_like(x)


op(
    "OnesLike",
    ("x",),
    infer=same_as_input,
    kernel=_ones_like_kernel,
    shape_inputs=(0,),
    grad=NOT_DIFFERENTIABLE,
)


def _like(op_type: str, tensor: Any, dtype: Any, name: str | None, default: str) -> Tensor:
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


def _one_hot_kernel(
    xp: Any, indices: Any, depth: Any, on_value: Any, off_value: Any, axis: int
) -> Any:
    a = indices.ndim if axis == -1 else axis
    classes = xp.arange(int(depth)).reshape((int(depth),) + (1,) * (indices.ndim - a))
    hot = xp.expand_dims(indices, a) == classes
    return xp.where(hot, on_value, off_value).astype(on_value.dtype, copy=False)


op(
    "OneHot",
    ("indices", "depth", "on_value", "off_value"),
    infer=_one_hot_infer,
    attrs=("axis",),
    kernel=_one_hot_kernel,
    host_inputs=(1,),
    type_attrs={"T": 2, "TI": 0},
    grad=NOT_DIFFERENTIABLE,
)


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
