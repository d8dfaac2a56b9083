"""Broadcasts and regular arrays: BroadcastTo, BroadcastArgs, LinSpace and Roll, with TF1's
functions built of existing ops (``count_nonzero``, ``reduce_logsumexp``, ``log_sigmoid``, ``shape_n``,
``broadcast_static_shape``) and the tensor predicates (``is_tensor``, ``dimension_value``).

``LinSpace``'s count and ``Roll``'s shifts and axes are read on the host
(``host_inputs``), as shape arguments are.  ``BroadcastArgs`` computes a
shape from two shapes, on the host as ``BroadcastGradientArgs`` does.
``BroadcastTo``'s gradient sums over the axes it broadcast along (found by
``BroadcastGradientArgs`` from the two shapes); ``Roll``'s rolls back.
``reduce_logsumexp`` subtracts the (finite) maximum first, so it neither
overflows nor lets the maximum's gradient through, as TF1's does.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.linspace(0.0, 1.0, 5)).tolist()
    [0.0, 0.25, 0.5, 0.75, 1.0]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowbook.framework import dtypes
from flowbook.framework.graph import name_scope
from flowbook.framework.registry import (
    NOT_DIFFERENTIABLE,
    Out,
    op,
)
from flowbook.framework.tensor import Operation, Tensor
from flowbook.framework.tensor_shape import Dimension, TensorShape, broadcast, fmt
from flowbook.ops._builder import make, make1, same_dtype, tensor
from flowbook.ops._shape_inputs import is_tensor  # tf.is_tensor: the one test, shared
from flowbook.ops.array import array_ops
from flowbook.ops.array.cast_ops import cast
from flowbook.ops.array.constant_op import constant_value
from flowbook.ops.math.elementwise import FLOAT, check_dtype
from flowbook.ops.math.elementwise_ops import (
    add,
    exp,
    is_finite,
    log,
    negative,
    not_equal,
    subtract,
)
from flowbook.ops.math.reduction_ops import reduce_max, reduce_sum
from flowbook.ops.nn.nn_ops import softplus

__all__ = [
    "broadcast_dynamic_shape",
    "broadcast_static_shape",
    "broadcast_to",
    "count_nonzero",
    "dimension_at_index",
    "dimension_value",
    "is_numeric_tensor",
    "is_tensor",
    "lin_space",
    "linspace",
    "log_sigmoid",
    "reduce_logsumexp",
    "roll",
    "shape_n",
]


def _known(t: Tensor) -> list[int] | None:
    v = constant_value(t)
    return None if v is None else np.asarray(v).reshape(-1).tolist()


# ----------------------------------------------------------------- LinSpace
def _linspace(xp: Any, start: Any, stop: Any, num: Any) -> Any:
    n = int(num)
    if n < 1:
        raise ValueError(f"Requires num > 0: {n}")
    steps = xp.arange(n, dtype=start.dtype)
    out = start + steps * ((stop - start) / max(n - 1, 1))
    return xp.where(steps == n - 1, stop, out) if n > 1 else out  # the last is stop exactly


def _linspace_infer(start: Tensor, stop: Tensor, num: Tensor) -> Out:
    dt = same_dtype("LinSpace", ("start", "stop"), start, stop)
    check_dtype(dt, FLOAT, "start")
    for name, t in (("start", start), ("stop", stop), ("num", num)):
        if t._shape not in (None, ()):
            raise ValueError(f"{name} must be a scalar, got {name}{fmt(t._shape)}")
    n = _known(num)
    if n is not None and n[0] < 1:
        raise ValueError(f"Requires num > 0: {n[0]}")
    return Out(dt, (None if n is None else n[0],))


op(
    "LinSpace",
    ("start", "stop", "num"),
    (),
    _linspace_infer,
    _linspace,
    host_inputs=(2,),
    grad=NOT_DIFFERENTIABLE,
    type_attrs={"T": 0, "Tidx": 2},
)


# -------------------------------------------------------------- BroadcastTo
def _broadcast_to_infer(input: Tensor, shape: Tensor) -> Out:
    want = _known(shape)
    if want is None:
        n = shape._shape[0] if shape._shape else None
        return Out(input.dtype, None if n is None else (None,) * n)
    s = input._shape
    out = broadcast(s, tuple(want)) if s is not None else tuple(want)
    if s is not None and out != tuple(want):
        raise ValueError(f"input{fmt(s)} does not broadcast to {fmt(tuple(want))}")
    return Out(input.dtype, tuple(want))


def _broadcast_to(xp: Any, input: Any, shape: Any) -> Any:
    try:
        return xp.broadcast_to(input, tuple(int(d) for d in shape)).copy()
    except ValueError:
        raise ValueError(f"input{fmt(input.shape)} does not broadcast to {list(shape)}") from None


def _broadcast_to_grad(op: Operation, g: Tensor) -> tuple[Tensor, None]:
    x, to = op.inputs
    x_shape = array_ops.shape(x, out_type=to.dtype)
    axes = make("BroadcastGradientArgs", (x_shape, to)).outputs[0]
    return array_ops.reshape(reduce_sum(g, axes), x_shape), None


op(
    "BroadcastTo",
    ("input", "shape"),
    (),
    _broadcast_to_infer,
    _broadcast_to,
    host_inputs=(1,),
    type_attrs={"T": 0, "Tidx": 1},
    grad=_broadcast_to_grad,
)


# ------------------------------------------------------------ BroadcastArgs
def _broadcast_args(xp: Any, s0: Any, s1: Any) -> Any:
    a, b = (tuple(int(d) for d in s) for s in (s0, s1))
    try:
        out = np.asarray(np.broadcast_shapes(a, b), dtype=s0.dtype)
    except ValueError:
        raise ValueError(f"Incompatible shapes: {list(a)} vs. {list(b)}") from None
    return out if xp is np else xp.asarray(out)


def _broadcast_args_infer(s0: Tensor, s1: Tensor) -> Out:
    dt = same_dtype("BroadcastArgs", ("s0", "s1"), s0, s1)
    a, b = _known(s0), _known(s1)
    if a is not None and b is not None:
        return Out(dt, (len(broadcast(tuple(a), tuple(b))),))  # type: ignore[arg-type]
    n0, n1 = (t._shape[0] if t._shape else None for t in (s0, s1))
    return Out(dt, (None if n0 is None or n1 is None else max(n0, n1),))


op(
    "BroadcastArgs",
    ("s0", "s1"),
    (),
    _broadcast_args_infer,
    _broadcast_args,
    grad=NOT_DIFFERENTIABLE,
)


# --------------------------------------------------------------------- Roll
def _roll(xp: Any, input: Any, shift: Any, axis: Any) -> Any:
    shifts = tuple(int(s) for s in np.reshape(shift, -1))
    axes = tuple(int(a) for a in np.reshape(axis, -1))
    if len(shifts) != len(axes):
        raise ValueError(f"shift and axis must have the same size, got {shifts} and {axes}")
    return xp.roll(input, shifts, axes)


def _roll_infer(input: Tensor, shift: Tensor, axis: Tensor) -> Out:
    a, s = _known(axis), _known(shift)
    if a is not None and s is not None and len(a) != len(s):
        raise ValueError(f"shift and axis must have the same size, got {s} and {a}")
    r = input._shape
    if a is not None and r is not None and any(not -len(r) <= k < len(r) for k in a):
        raise ValueError(f"axis {a} is out of range for input{fmt(r)}")
    return Out(input.dtype, r)


def _roll_grad(op: Operation, g: Tensor) -> tuple[Tensor, None, None]:
    return make1("Roll", (g, negative(op.inputs[1]), op.inputs[2])), None, None


op(
    "Roll",
    ("input", "shift", "axis"),
    (),
    _roll_infer,
    _roll,
    host_inputs=(1, 2),
    type_attrs={"T": 0, "Tshift": 1, "Taxis": 2},
    grad=_roll_grad,
)


# ----------------------------------------------------------------- wrappers
def linspace(start: Any, stop: Any, num: Any, name: str | None = None) -> Tensor:
    """``num`` evenly spaced values from ``start`` to ``stop``, both included.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.linspace(1.0, 2.0, 3)).tolist()
    [1.0, 1.5, 2.0]
    """
    a = tensor(start)
    b, n = tensor(stop, dtype=a.dtype), tensor(num, dtype=dtypes.int32)
    return make1("LinSpace", (a, b, n), name=name)


lin_space = linspace  # TF1's first name


def broadcast_to(input: Any, shape: Any, name: str | None = None) -> Tensor:
    """``input`` broadcast to ``shape`` with numpy's rules (the values repeated).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.broadcast_to([1, 2], [2, 2])).tolist()
    [[1, 2], [1, 2]]
    """
    s = shape if isinstance(shape, Tensor) else tensor(shape, dtype=dtypes.int32)
    return make1("BroadcastTo", (tensor(input), s), name=name)


def broadcast_dynamic_shape(shape_x: Any, shape_y: Any) -> Tensor:
    """The shape two shapes (1-d int tensors) broadcast to, computed when the graph runs.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.broadcast_dynamic_shape([2, 1], [3])).tolist()
    [2, 3]
    """
    x = tensor(shape_x, dtype=None if isinstance(shape_x, Tensor) else dtypes.int32)
    return make1("BroadcastArgs", (x, tensor(shape_y, dtype=x.dtype)))


def broadcast_static_shape(shape_x: Any, shape_y: Any) -> TensorShape:
    """The TensorShape two static shapes broadcast to; ValueError when they do not.

    >>> import flowbook as fb
    >>> fb.broadcast_static_shape(fb.TensorShape([None, 1]), fb.TensorShape([3])).as_list()
    [None, 3]
    """
    a, b = TensorShape(shape_x).as_tuple(), TensorShape(shape_y).as_tuple()
    try:
        return TensorShape(broadcast(a, b))
    except ValueError:
        raise ValueError(f"Incompatible shapes for broadcasting: {shape_x} and {shape_y}") from None


def roll(input: Any, shift: Any, axis: Any, name: str | None = None) -> Tensor:
    """``input`` rolled by ``shift`` places along ``axis`` (each may be a list), wrapping round.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.roll([1, 2, 3, 4], 1, 0)).tolist()
    [4, 1, 2, 3]
    """
    s, a = (tensor(v, dtype=dtypes.int32) for v in (shift, axis))
    return make1("Roll", (tensor(input), s, a), name=name)


def _axis(axis: Any, reduction_indices: Any) -> Any:
    return reduction_indices if axis is None else axis


def count_nonzero(
    input_tensor: Any,
    axis: Any = None,
    keepdims: bool | None = None,
    dtype: Any = dtypes.int64,
    name: str | None = None,
    reduction_indices: Any = None,
    keep_dims: bool | None = None,
) -> Tensor:
    """How many elements are not zero (or not False), over ``axis`` (all by default).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.count_nonzero([[0, 1, 2], [0, 0, 3]], axis=1)).tolist()
    [2, 1]
    """
    keep = bool(keepdims if keepdims is not None else keep_dims)
    with name_scope(name, "count_nonzero", [input_tensor]):
        x = tensor(input_tensor)
        zero = tensor(np.zeros((), x.dtype.np))
        flags = cast(not_equal(x, zero), dtypes.int64)
        return cast(reduce_sum(flags, _axis(axis, reduction_indices), keepdims=keep), dtype)


def reduce_logsumexp(
    input_tensor: Any,
    axis: Any = None,
    keepdims: bool | None = None,
    name: str | None = None,
    reduction_indices: Any = None,
    keep_dims: bool | None = None,
) -> Tensor:
    """log(sum(exp(x))) over ``axis``, computed without overflow.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     float(s.run(fb.reduce_logsumexp([1000.0, 1000.0])))
    1000.6931762695312
    """
    keep = bool(keepdims if keepdims is not None else keep_dims)
    ax = _axis(axis, reduction_indices)
    with name_scope(name, "ReduceLogSumExp", [input_tensor]) as scope:
        x = tensor(input_tensor)
        raw = reduce_max(x, ax, keepdims=True)
        top = array_ops.stop_gradient(
            array_ops.where(is_finite(raw), raw, array_ops.zeros_like(raw))
        )
        summed = log(reduce_sum(exp(subtract(x, top)), ax, keepdims=keep))
        if not keep:
            top = reduce_max(top, ax)  # the same value, with the reduced dims gone
        return add(summed, top, name=scope)


def log_sigmoid(x: Any, name: str | None = None) -> Tensor:
    """log(1 / (1 + exp(-x))) element-wise, as -softplus(-x) (no overflow).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.log_sigmoid([0.0, -100.0])).tolist()
    [-0.6931472, -100.0]
    """
    with name_scope(name, "LogSigmoid", [x]) as scope:
        return negative(softplus(negative(tensor(x))), name=scope)


def shape_n(input: Any, out_type: Any = dtypes.int32, name: str | None = None) -> list[Tensor]:
    """The shapes of several tensors, one Shape op each.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     [v.tolist() for v in s.run(fb.shape_n([fb.zeros([2]), fb.zeros([3, 1])]))]
    [[2], [3, 1]]
    """
    with name_scope(name, "ShapeN", input):
        return [array_ops.shape(t, out_type=out_type) for t in input]


def is_numeric_tensor(tensor: Any) -> bool:
    """Whether ``tensor`` is a Tensor of a numeric dtype (not bool, not string).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.is_numeric_tensor(fb.constant(1.0)), fb.is_numeric_tensor(fb.constant(True))
    (True, False)
    """
    return isinstance(tensor, Tensor) and tensor.dtype not in (dtypes.bool, dtypes.string)


def dimension_value(dimension: Any) -> int | None:
    """The int (or None) of a Dimension; ints and None pass through.

    >>> import flowbook as fb
    >>> fb.dimension_value(fb.TensorShape([None, 3])[1])
    3
    """
    return dimension.value if isinstance(dimension, Dimension) else dimension


def dimension_at_index(shape: Any, index: int) -> Dimension:
    """The Dimension of ``shape`` at ``index`` (unknown when the rank is).

    >>> import flowbook as fb
    >>> fb.dimension_at_index(fb.TensorShape([2, 5]), -1).value
    5
    """
    s = TensorShape(shape)
    return Dimension(None) if s.ndims is None else Dimension(s.as_list()[index])
