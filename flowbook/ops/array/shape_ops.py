"""Shapes: identity, static and dynamic shapes, reshaping, and ``range``.

The lowest of the array modules: every other one (and the math modules above
them) builds its gradients from these.  Each op is declared once with
TensorFlow's type name and input names; the public wrapper beside it has
TF1's signature.  Shape-like arguments (``shape``, ``dim``) are int32 input
tensors (see ``_shape_inputs``): a wrapper given a Python list builds a Const
named after the input inside the op's name scope (``Reshape/shape``), and
``infer`` reads it back, so ``reshape(x, [-1, 28, 28, 1])`` of a ``[?, 784]``
x is ``[?, 28, 28, 1]`` and a wrong element count fails at the line that
wrote it.  Kernels are single bodies against ``xp``; they turn shape inputs
into Python ints with ``.tolist()``.  Gradients are declared beside each op
and build graph from dynamic shapes (``shape(x)``), so they work when static
shapes are unknown.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     x = fb.placeholder(fb.float32, [None, 784])
    ...     fb.reshape(x, [-1, 28, 28, 1]).shape.as_list()
    [None, 28, 28, 1]
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from flowbook.framework import dtypes
from flowbook.framework.errors import InvalidArgumentError
from flowbook.framework.graph import name_scope
from flowbook.framework.registry import NOT_DIFFERENTIABLE, Out, op
from flowbook.framework.tensor import Tensor
from flowbook.framework.tensor_shape import Shape, fmt, num_elements
from flowbook.ops._builder import make1, same_as_input, tensor
from flowbook.ops._shape_inputs import (
    check_int,
    const_int,
    const_ints,
    host_ints,
    int_input,
    is_tensor,
    norm_axis,
)
from flowbook.ops.array.cast_ops import cast
from flowbook.ops.array.constant_op import constant_value, convert_to_tensor, partial_shape_value

__all__ = [
    "expand_dims",
    "identity",
    "range",
    "rank",
    "reshape",
    "shape",
    "size",
    "squeeze",
    "stop_gradient",
]


# ------------------------------------------------------- Identity, StopGradient
def _identity_kernel(xp: Any, x: Any) -> Any:
    return x


op(
    "Identity",
    ("input",),
    infer=same_as_input,
    kernel=_identity_kernel,
    grad=lambda op, grad: grad,
    passthrough="always",
)


def _stop_gradient_kernel(xp: Any, x: Any) -> Any:
    return x


op(
    "StopGradient",
    ("input",),
    infer=same_as_input,
    kernel=_stop_gradient_kernel,
    grad=NOT_DIFFERENTIABLE,
    passthrough="always",
)


def identity(input: Any, name: str | None = None) -> Tensor:
    """A tensor with the same value as ``input``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.identity(fb.constant(1.0), name="y").name
    'y:0'
    """
    return make1("Identity", [convert_to_tensor(input)], name=name or "Identity")


def stop_gradient(input: Any, name: str | None = None) -> Tensor:
    """The same value as ``input``; gradients do not flow through it.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.stop_gradient(fb.constant(1.0)).op.type
    'StopGradient'
    """
    return make1("StopGradient", [convert_to_tensor(input)], name=name or "StopGradient")


# ------------------------------------------------------------ Shape, Size, Rank
def _check_out_type(out_type: dtypes.DType) -> None:
    if out_type not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"out_type must be int32 or int64, got {out_type.name}")


def _shape_infer(x: Tensor, out_type: dtypes.DType) -> Out:
    _check_out_type(out_type)
    return Out(out_type, (None,) if x._shape is None else (len(x._shape),))


def _size_infer(x: Tensor, out_type: dtypes.DType) -> Out:
    _check_out_type(out_type)
    return Out(out_type, ())


_INT_RESULT = {"grad": NOT_DIFFERENTIABLE}  # the shape of x does not change with x's values
_META = {**_INT_RESULT, "meta_inputs": (0,)}  # reads x's shape only: x is never copied


def _shape_kernel(xp: Any, x: Any, out_type: dtypes.DType) -> Any:
    return xp.asarray(x.shape, dtype=out_type.np)


op("Shape", ("input",), infer=_shape_infer, attrs=("out_type",), kernel=_shape_kernel, **_META)


def _size_kernel(xp: Any, x: Any, out_type: dtypes.DType) -> Any:
    return xp.asarray(x.size, dtype=out_type.np)


op("Size", ("input",), infer=_size_infer, attrs=("out_type",), kernel=_size_kernel, **_META)


def _rank_kernel(xp: Any, x: Any) -> Any:
    return xp.asarray(x.ndim, dtype=np.int32)


op("Rank", ("input",), infer=lambda x: Out(dtypes.int32, ()), kernel=_rank_kernel, **_META)


def shape(input: Any, name: str | None = None, out_type: Any = dtypes.int32) -> Tensor:
    """The shape of ``input`` as a 1-D int tensor.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.shape(fb.zeros([2, 3])).shape.as_list()
    [2]
    """
    attrs = {"out_type": dtypes.as_dtype(out_type)}
    return make1("Shape", [convert_to_tensor(input)], attrs, name=name or "Shape")


def size(input: Any, name: str | None = None, out_type: Any = dtypes.int32) -> Tensor:
    """The number of elements of ``input`` as a scalar int tensor.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.size(fb.zeros([2, 3])).dtype
    tf.int32
    """
    attrs = {"out_type": dtypes.as_dtype(out_type)}
    return make1("Size", [convert_to_tensor(input)], attrs, name=name or "Size")


def rank(input: Any, name: str | None = None) -> Tensor:
    """The number of dimensions of ``input`` as a scalar int32 tensor.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.rank(fb.zeros([2, 3])).op.type
    'Rank'
    """
    return make1("Rank", [convert_to_tensor(input)], name=name or "Rank")


# ------------------------------------------------------------------- Reshape
def _reshape_static(in_shape: Shape, dims: list[int]) -> Shape:
    bad = f"Cannot reshape a tensor of shape {fmt(in_shape)}"
    if dims.count(-1) > 1:
        raise ValueError(f"{bad} to shape {dims}: only one dimension may be -1")
    if any(d < -1 for d in dims):
        raise ValueError(f"{bad} to shape {dims}: dimensions must be >= -1")
    known = math.prod(d for d in dims if d != -1)
    n_in = num_elements(in_shape)
    if n_in is None:  # some input dims unknown: check what can be checked
        part = math.prod(d for d in in_shape or () if d is not None)
        if in_shape is not None and -1 not in dims and part and known % part:
            raise ValueError(f"{bad} ({part}*? elements) to shape {dims} ({known} elements)")
        return tuple(None if d == -1 else d for d in dims)
    if -1 not in dims:
        if known != n_in:
            raise ValueError(f"{bad} ({n_in} elements) to shape {dims} ({known} elements)")
        return tuple(dims)
    if known == 0 or n_in % known:
        raise ValueError(
            f"{bad} ({n_in} elements) to shape {dims}: {n_in} is not a multiple of {known}"
        )
    return tuple(n_in // known if d == -1 else d for d in dims)


def _reshape_infer(tensor: Tensor, shape: Tensor) -> Out:
    check_int("Reshape", "shape", shape)
    if shape._shape is not None and len(shape._shape) != 1:
        raise ValueError(f"shape must be a 1-D tensor, got one of shape {fmt(shape._shape)}")
    dims = const_ints(shape)
    if dims is None:
        return Out(tensor.dtype, partial_shape_value(shape))
    return Out(tensor.dtype, _reshape_static(tensor._shape, dims))


def _reshape_kernel(xp: Any, tensor: Any, shape: Any) -> Any:
    dims = host_ints(shape)
    try:
        return xp.reshape(tensor, dims)
    except ValueError:
        raise InvalidArgumentError(
            None,
            None,
            f"Input to reshape is a tensor with {tensor.size} values (shape {list(tensor.shape)}), "
            f"but the requested shape is {list(dims)}",
        ) from None


def _reshape_grad(op: Any, grad: Tensor) -> list[Tensor | None]:
    return [reshape(grad, shape(op.inputs[0])), None]


op(
    "Reshape",
    ("tensor", "shape"),
    infer=_reshape_infer,
    kernel=_reshape_kernel,
    host_inputs=(1,),
    passthrough="same_shape",
    type_attrs={"T": 0, "Tshape": 1},
    grad=_reshape_grad,
)


def reshape(tensor: Any, shape: Any, name: str | None = None) -> Tensor:
    """Give ``tensor`` a new shape with the same elements; one dimension may be -1.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.reshape(fb.zeros([2, 6]), [3, -1]).shape.as_list()
    [3, 4]
    """
    with name_scope(name, "Reshape") as scope:
        x = convert_to_tensor(tensor, name="tensor")
        return make1("Reshape", [x, int_input(shape, "shape")], name=scope)


# ---------------------------------------------------------- ExpandDims, Squeeze
def _expand_dims_infer(x: Tensor, dim: Tensor) -> Out:
    check_int("ExpandDims", "dim", dim)
    d, shape = const_int(dim), x._shape
    if shape is None:
        return Out(x.dtype, None)
    if d is None:
        return Out(x.dtype, (None,) * (len(shape) + 1))
    d = norm_axis(d, len(shape) + 1, "dim")
    return Out(x.dtype, (*shape[:d], 1, *shape[d:]))


def _expand_dims_kernel(xp: Any, x: Any, dim: Any) -> Any:
    d, n = host_ints(dim)[0], x.ndim + 1  # dim: a scalar, or TF's 1-element vector
    if not -n <= d < n:
        raise ValueError(f"dim {d} is out of range for an input of rank {x.ndim}")
    d %= n
    return x.reshape((*x.shape[:d], 1, *x.shape[d:]))  # a view, as xp.expand_dims gives


def _expand_dims_grad(op: Any, grad: Tensor) -> list[Tensor | None]:
    return [reshape(grad, shape(op.inputs[0])), None]


op(
    "ExpandDims",
    ("input", "dim"),
    infer=_expand_dims_infer,
    kernel=_expand_dims_kernel,
    host_inputs=(1,),
    type_attrs={"T": 0, "Tdim": 1},
    grad=_expand_dims_grad,
)


def expand_dims(input: Any, axis: Any = None, name: str | None = None, dim: Any = None) -> Tensor:
    """Insert a dimension of size 1 at ``axis`` (``dim`` is the old name).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.expand_dims(fb.zeros([2, 3]), -1).shape.as_list()
    [2, 3, 1]
    """
    if axis is not None and dim is not None:
        raise ValueError("Cannot specify both 'axis' and 'dim'")
    axis = dim if axis is None else axis
    if axis is None:
        raise ValueError("Must specify an axis argument to expand_dims()")
    with name_scope(name, "ExpandDims") as scope:
        x = convert_to_tensor(input, name="input")
        return make1("ExpandDims", [x, int_input(axis, "dim")], name=scope)


def _squeeze_infer(x: Tensor, squeeze_dims: list[int]) -> Out:
    shape = x._shape
    if shape is None:
        return Out(x.dtype, None)
    if not squeeze_dims:
        return Out(x.dtype, None if None in shape else tuple(d for d in shape if d != 1))
    dims = {norm_axis(d, len(shape), "squeeze dim") for d in squeeze_dims}
    for d in sorted(dims):
        if shape[d] not in (1, None):
            raise ValueError(
                f"Can not squeeze dim[{d}], expected a dimension of 1, got {shape[d]} "
                f"(shape {fmt(shape)})"
            )
    return Out(x.dtype, tuple(n for i, n in enumerate(shape) if i not in dims))


def _squeeze_kernel(xp: Any, x: Any, squeeze_dims: list[int]) -> Any:
    if not squeeze_dims:
        return xp.reshape(x, tuple(n for n in x.shape if n != 1))
    axes = tuple(d % x.ndim for d in squeeze_dims)
    if any(x.shape[a] != 1 for a in axes):
        raise InvalidArgumentError(
            None, None, f"Can not squeeze dims {squeeze_dims} of shape {list(x.shape)}"
        )
    return xp.squeeze(x, axis=axes)


def _squeeze_grad(op: Any, grad: Tensor) -> Tensor:
    return reshape(grad, shape(op.inputs[0]))


op(
    "Squeeze",
    ("input",),
    infer=_squeeze_infer,
    attrs=("squeeze_dims",),
    kernel=_squeeze_kernel,
    grad=_squeeze_grad,
)


def squeeze(
    input: Any, axis: Any = None, name: str | None = None, squeeze_dims: Any = None
) -> Tensor:
    """Remove dimensions of size 1 (all of them, or those in ``axis``).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.squeeze(fb.zeros([1, 2, 1]), axis=[0]).shape.as_list()
    [2, 1]
    """
    if axis is not None and squeeze_dims is not None:
        raise ValueError("Cannot specify both 'axis' and 'squeeze_dims'")
    axis = squeeze_dims if axis is None else axis
    axis = [] if axis is None else [int(axis)] if np.ndim(axis) == 0 else [int(a) for a in axis]
    return make1(
        "Squeeze", [convert_to_tensor(input)], {"squeeze_dims": axis}, name=name or "Squeeze"
    )


# --------------------------------------------------------------------- Range
_RANGE_TYPES = (dtypes.int32, dtypes.int64, dtypes.float32, dtypes.float64)  # promotion order


def _range_len(start: Any, limit: Any, delta: Any) -> int:
    if delta == 0:
        raise ValueError("Requires delta != 0")
    if (delta > 0 and start > limit) or (delta < 0 and start < limit):
        raise ValueError(
            f"Requires start {'<=' if delta > 0 else '>='} limit when delta "
            f"{'>' if delta > 0 else '<'} 0: {start}/{limit}"
        )
    if isinstance(start, int) and isinstance(limit, int) and isinstance(delta, int):
        return (abs(limit - start) + abs(delta) - 1) // abs(delta)
    return max(0, math.ceil((limit - start) / delta))


def _range_infer(start: Tensor, limit: Tensor, delta: Tensor, Tidx: dtypes.DType) -> Out:
    for n, t in (("start", start), ("limit", limit), ("delta", delta)):
        if t._shape not in (None, ()):
            raise ValueError(f"{n} must be a scalar, got shape {fmt(t._shape)}")
        if t.dtype is not Tidx:
            raise TypeError(f"{n} has type {t.dtype.name}, expected {Tidx.name}")
    vals = [constant_value(t) for t in (start, limit, delta)]
    if any(v is None for v in vals):
        return Out(Tidx, (None,))
    return Out(Tidx, (_range_len(*(v.item() for v in vals)),))  # type: ignore[union-attr]


def _range_kernel(xp: Any, start: Any, limit: Any, delta: Any, Tidx: dtypes.DType) -> Any:
    s, lim, d = start.item(), limit.item(), delta.item()
    try:
        _range_len(s, lim, d)
    except ValueError as err:
        raise InvalidArgumentError(None, None, str(err)) from None
    return xp.arange(s, lim, d, dtype=Tidx.np)


op(
    "Range",
    ("start", "limit", "delta"),
    infer=_range_infer,
    attrs=("Tidx",),
    kernel=_range_kernel,
    grad=NOT_DIFFERENTIABLE,
    host_inputs=(0, 1, 2),
    type_attrs={},
)


def _as_dtype_tensor(value: Any, dtype: dtypes.DType, name: str) -> Tensor:
    if not is_tensor(value):
        return convert_to_tensor(value, dtype=dtype, name=name)
    t = convert_to_tensor(value)
    if t.dtype is dtype:
        return t
    return cast(t, dtype)


def range(
    start: Any, limit: Any = None, delta: Any = 1, dtype: Any = None, name: str = "range"
) -> Tensor:
    """The numbers ``start, start + delta, ...`` before ``limit`` (``range(5)`` is 0..4).

    Ints give int32 and floats float32 unless ``dtype`` says otherwise.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     r = fb.range(5)
    >>> r.shape.as_list(), r.dtype
    ([5], tf.int32)
    """
    if limit is None:
        start, limit = 0, start
    with name_scope(name, "Range") as scope:
        args = (start, limit, delta)
        if dtype is None:
            kinds = [
                convert_to_tensor(a).dtype if is_tensor(a) else dtypes.of_value(a) for a in args
            ]
            dt = max(kinds, key=lambda k: _RANGE_TYPES.index(k) if k in _RANGE_TYPES else -1)
        else:
            dt = dtypes.as_dtype(dtype)
        tensors = [_as_dtype_tensor(a, dt, n) for a, n in zip(args, ("start", "limit", "delta"))]
        return make1("Range", tensors, {"Tidx": dt}, name=scope)


def all_axes(x: Tensor) -> Tensor:
    """The axes input that reduces every dimension of ``x``: a Const when the rank is known.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     all_axes(fb.zeros([2, 3])).op.type
    'Const'
    """
    if x._shape is not None:
        return tensor(np.arange(len(x._shape), dtype=np.int32))
    return range(0, rank(x), 1)
