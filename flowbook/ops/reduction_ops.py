"""Reductions (Sum, Mean, Max...), ArgMax/ArgMin and AddN, with TF1's wrappers.

As TensorFlow declares them, a reduction takes the axes as its second INPUT
(``reduction_indices``, an int32 tensor; the wrappers build a Const for it)
and ``keep_dims`` as an attr.  ``infer`` reads the axes with
``constant_value``: when they are known the static shape is exact, otherwise
the result has unknown rank (or, with ``keep_dims``, the input's rank with
unknown dims).  ``REDUCTIONS`` is the table the loop registers, public for
tests.  ``math_ops`` re-exports the wrappers.  The gradients (TF's formulas)
follow the table: Sum tiles the gradient back over the reduced dims, Mean
divides that by the count, Max/Min share it equally among ties, Prod gives
each element the product of the others (exact at zeros); the kept-dims
shape is static when the graph knows it, else computed from ``shape(x)``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.reduce_sum(fb.placeholder(fb.float32, [None, 3]), axis=0).shape.as_list()
    [3]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from flowbook import dtypes
from flowbook.ops import array_ops, math_ops
from flowbook.ops._builder import make1, tensor
from flowbook.ops.math_ops import BOOL, NUMBER, REAL, check_dtype
from flowbook.registry import OpDef, Out, no_gradient, register, register_gradient
from flowbook.tensor import Operation, Tensor
from flowbook.tensor_shape import Shape, fmt, merge, num_elements

__all__ = ["add_n", "argmax", "argmin"]  # the reduce_* wrappers are appended below

_INDEX = frozenset({dtypes.int32, dtypes.int64})


class Reduction(NamedTuple):
    """One row of the reduction table."""

    op_type: str  # TensorFlow's op type name
    wrapper: str  # the public TF1 function
    fn: Callable[..., Any]  # fn(xp, x, axes: tuple, keepdims: bool) -> array of x's dtype
    dtypes: frozenset  # input dtypes the op takes
    doc: tuple[str, str, str]  # summary, example call, its value (a doctest)


def _mean(xp: Any, x: Any, axes: tuple, keepdims: bool) -> Any:
    if x.dtype == np.float16:  # accumulate half precision in float32, as TF does
        return xp.mean(x, axis=axes, keepdims=keepdims, dtype=np.float32).astype(x.dtype)
    return xp.mean(x, axis=axes, keepdims=keepdims, dtype=x.dtype)  # ints: truncated, as TF


# fmt: off
REDUCTIONS: list[Reduction] = [
    Reduction("Sum", "reduce_sum",
              lambda xp, x, ax, kd: xp.sum(x, axis=ax, keepdims=kd, dtype=x.dtype), NUMBER,
              ("The sum of elements across axes.", "reduce_sum([[1, 2], [3, 4]], axis=1)",
               "[3, 7]")),
    Reduction("Mean", "reduce_mean", _mean, NUMBER,
              ("The mean across axes; integer means truncate, as in TensorFlow.",
               "reduce_mean([[1.0, 2.0], [3.0, 4.0]], axis=0)", "[2.0, 3.0]")),
    Reduction("Max", "reduce_max",
              lambda xp, x, ax, kd: xp.max(x, axis=ax, keepdims=kd), REAL,
              ("The maximum across axes.", "reduce_max([[1, 5], [3, 4]], axis=0)", "[3, 5]")),
    Reduction("Min", "reduce_min",
              lambda xp, x, ax, kd: xp.min(x, axis=ax, keepdims=kd), REAL,
              ("The minimum across axes.", "reduce_min([[1, 5], [3, 4]], axis=0)", "[1, 4]")),
    Reduction("Prod", "reduce_prod",
              lambda xp, x, ax, kd: xp.prod(x, axis=ax, keepdims=kd, dtype=x.dtype), NUMBER,
              ("The product across axes.", "reduce_prod([[1, 2], [3, 4]], axis=1)", "[2, 12]")),
    Reduction("All", "reduce_all",
              lambda xp, x, ax, kd: xp.all(x, axis=ax, keepdims=kd), BOOL,
              ("Logical AND across axes.", "reduce_all([[True, False], [True, True]], axis=1)",
               "[False, True]")),
    Reduction("Any", "reduce_any",
              lambda xp, x, ax, kd: xp.any(x, axis=ax, keepdims=kd), BOOL,
              ("Logical OR across axes.", "reduce_any([[True, False], [False, False]], axis=1)",
               "[True, False]")),
]
# fmt: on

_EXAMPLE = """{summary}

    TF1's argument names work too: ``reduction_indices`` for ``axis``,
    ``keep_dims`` for ``keepdims``.  ``axis=None`` reduces every dimension.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.{call}).tolist()
    {value}
"""


def reduced_shape(shape: Shape, axes: Any, keep_dims: bool) -> Shape:
    """The static shape of a reduction of ``shape`` over ``axes`` (None if unknown).

    >>> reduced_shape((2, None, 4), np.array([0, -1]), False), reduced_shape((2, 3), None, True)
    ((None,), (None, None))
    """
    if shape is None:
        return None
    rank = len(shape)
    if axes is None:
        return (None,) * rank if keep_dims else None
    if np.ndim(axes) > 1:
        raise ValueError(f"reduction axes must be a scalar or 1-D, got shape {fmt(np.shape(axes))}")
    dims = set()
    for a in np.ravel(axes).tolist():
        if not -rank <= a < rank:
            raise ValueError(f"Invalid reduction dimension {a} for input with {rank} dimensions")
        dims.add(a % rank)
    if keep_dims:
        return tuple(1 if i in dims else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in dims)


def _axes(axis: Any, ndim: int) -> tuple[int, ...]:
    """The axes input array as a tuple numpy accepts (normalised, no repeats)."""
    v = axis.tolist()
    return tuple(sorted({a % ndim for a in v})) if isinstance(v, list) else (v % ndim,)


def _reduction_infer(row: Reduction) -> Callable[..., Out]:
    def infer(x: Tensor, axis: Tensor, keep_dims: bool = False, **_: Any) -> Out:
        check_dtype(x.dtype, row.dtypes, "input")
        check_dtype(axis.dtype, _INDEX, "reduction_indices")
        from flowbook.ops.constant_op import constant_value

        return Out(x.dtype, reduced_shape(x._shape, constant_value(axis), keep_dims))

    return infer


def _reduction_kernel(fn: Callable[..., Any]) -> Callable[..., Any]:
    def kernel(xp: Any, x: Any, axis: Any, keep_dims: bool = False, **_: Any) -> Any:
        return fn(xp, x, _axes(axis, max(x.ndim, 1)), keep_dims)

    return kernel


def _pick(new_name: str, new: Any, old_name: str, old: Any) -> Any:
    """TF1's deprecated_argument_lookup: one of a new and an old argument name."""
    if new is not None and old is not None:
        raise ValueError(f"Cannot specify both '{new_name}' and '{old_name}'.")
    return old if new is None else new


def _reduction_axes(x: Tensor, axis: Any) -> Tensor:
    """The axes input: the given axes, else every dimension of ``x``."""
    if axis is not None:
        if isinstance(axis, Tensor) or hasattr(axis, "_as_tensor"):
            return tensor(axis)
        return tensor(axis, dtype=dtypes.int32)
    if x._shape is not None:
        return tensor(np.arange(len(x._shape), dtype=np.int32))
    return array_ops.range(0, array_ops.rank(x), 1)


def _reduction_wrapper(op_type: str) -> Callable[..., Tensor]:
    def wrapper(
        input_tensor: Any,
        axis: Any = None,
        keepdims: bool | None = None,
        name: str | None = None,
        reduction_indices: Any = None,
        keep_dims: bool | None = None,
    ) -> Tensor:
        axis = _pick("axis", axis, "reduction_indices", reduction_indices)
        keepdims = _pick("keepdims", keepdims, "keep_dims", keep_dims)
        x = tensor(input_tensor)
        attrs = {"keep_dims": bool(keepdims)}
        return make1(op_type, (x, _reduction_axes(x, axis)), attrs, name=name)

    return wrapper


for _row in REDUCTIONS:
    register(
        OpDef(
            _row.op_type,
            ("input", "reduction_indices"),
            ("keep_dims",),
            _reduction_infer(_row),
            _reduction_kernel(_row.fn),
            host_inputs=(1,),  # the axes
        )
    )
    _wrapper = _reduction_wrapper(_row.op_type)
    _wrapper.__name__ = _wrapper.__qualname__ = _row.wrapper
    _wrapper.__module__ = __name__
    _summary, _call, _value = _row.doc
    _wrapper.__doc__ = _EXAMPLE.format(summary=_summary, call=_call, value=_value)
    globals()[_row.wrapper] = _wrapper
    __all__.append(_row.wrapper)


# ------------------------------------------------------ reduction gradients
def _kept_dims(op: Operation) -> tuple[Any, Any]:
    """(the output's shape with reduced dims kept as 1, tile multiples back to the input).

    Lists when the input shape and the axes are known when the graph is built,
    else int32 tensors computed from ``shape(x)`` (TF's ``reduced_shape``).
    """
    x, axes = op.inputs
    from flowbook.ops.constant_op import constant_value

    shape, ax = x._shape, constant_value(axes)
    if shape is not None and None not in shape and ax is not None:
        dims = {a % len(shape) for a in np.ravel(ax).tolist()} if shape else set()
        kept = [1 if i in dims else d for i, d in enumerate(shape)]
        return kept, [d if i in dims else 1 for i, d in enumerate(shape)]
    sx = array_ops.shape(x)
    rank = array_ops.size(sx)
    ax = math_ops.floormod(math_ops.cast(array_ops.reshape(axes, [-1]), dtypes.int32), rank)
    dim = array_ops.expand_dims(array_ops.range(0, rank, 1), 1)
    reduced = math_ops.reduce_any(math_ops.equal(dim, array_ops.expand_dims(ax, 0)), axis=1)
    ones = array_ops.ones_like(sx)
    return array_ops.where(reduced, ones, sx), array_ops.where(reduced, sx, ones)


def _reshape(t: Tensor, shape: Any) -> Tensor:
    if isinstance(shape, list) and t._shape == tuple(shape):
        return t
    return array_ops.reshape(t, shape)


@register_gradient("Sum")
def _sum_grad(op: Operation, g: Tensor) -> tuple[Tensor, None]:
    """TF's: the gradient reshaped to the kept dims and tiled over the reduced ones."""
    kept, multiples = _kept_dims(op)
    g = _reshape(g, kept)
    if isinstance(multiples, list) and all(k == 1 for k in multiples):
        return g, None
    return array_ops.tile(g, multiples), None


@register_gradient("Mean")
def _mean_grad(op: Operation, g: Tensor) -> tuple[Tensor, None]:
    """Sum's gradient divided by the number of elements averaged."""
    sum_grad = _sum_grad(op, g)[0]
    n_in, n_out = num_elements(op.inputs[0]._shape), num_elements(op.outputs[0]._shape)
    if n_in is not None and n_out is not None:
        factor = tensor(n_in // max(n_out, 1), dtype=sum_grad.dtype)
    else:
        size_in, size_out = array_ops.size(op.inputs[0]), array_ops.size(op.outputs[0])
        count = math_ops.floordiv(size_in, math_ops.maximum(size_out, 1))
        factor = math_ops.cast(count, sum_grad.dtype)
    return math_ops.realdiv(sum_grad, factor), None


@register_gradient("Max")
@register_gradient("Min")
def _min_or_max_grad(op: Operation, g: Tensor) -> tuple[Tensor, None]:
    """TF's: the gradient goes to the extreme elements, divided equally among ties."""
    x, axes = op.inputs
    y = op.outputs[0]
    if not op.attrs.get("keep_dims"):
        kept = _kept_dims(op)[0]
        y, g = _reshape(y, kept), _reshape(g, kept)
    indicators = math_ops.cast(math_ops.equal(y, x), g.dtype)
    num_selected = math_ops.reduce_sum(indicators, axes, keepdims=True)
    return math_ops.multiply(math_ops.realdiv(indicators, num_selected), g), None


@register_gradient("Prod")
def _prod_grad(op: Operation, g: Tensor) -> tuple[Tensor, None]:
    """The product of the other elements of each group, exact where x has zeros.

    TF computes it with exclusive cumprods; here, per group, it is prod/x
    with no zero, the product of the non-zeros at the one zero, else 0.
    """
    x, axes = op.inputs
    if not op.attrs.get("keep_dims"):
        g = _reshape(g, _kept_dims(op)[0])
    is_zero = math_ops.equal(x, 0)
    safe_x = array_ops.where(is_zero, array_ops.ones_like(x), x)
    prod = math_ops.reduce_prod(safe_x, axes, keepdims=True)
    n_zeros = math_ops.reduce_sum(math_ops.cast(is_zero, x.dtype), axes, keepdims=True)
    no_zero = math_ops.cast(math_ops.equal(n_zeros, 0), x.dtype)
    one_zero = math_ops.cast(math_ops.equal(n_zeros, 1), x.dtype)
    others = math_ops.add(
        math_ops.multiply(math_ops.realdiv(prod, safe_x), no_zero),
        math_ops.multiply(math_ops.multiply(prod, one_zero), math_ops.cast(is_zero, x.dtype)),
    )
    return math_ops.multiply(g, math_ops.conj(others)), None


no_gradient("All", "Any")


# ------------------------------------------------------------- ArgMax/ArgMin
def _arg_infer(x: Tensor, dimension: Tensor, output_type: Any = dtypes.int64, **_: Any) -> Out:
    check_dtype(x.dtype, REAL, "input")
    check_dtype(dimension.dtype, _INDEX, "dimension")
    check_dtype(output_type, _INDEX, "output_type")
    from flowbook.ops.constant_op import constant_value

    d = constant_value(dimension)
    if d is not None and np.ndim(d) != 0:
        raise ValueError(f"dimension must be a scalar, got shape {fmt(np.shape(d))}")
    if x._shape is not None and not x._shape:
        raise ValueError("Expected input of rank >= 1, got a scalar")
    shape = reduced_shape(x._shape, d, False)
    if shape is None and d is None and x._shape is not None:
        shape = (None,) * (len(x._shape) - 1)
    return Out(output_type, shape)


def _arg_kernel(fn: str) -> Callable[..., Any]:
    def kernel(xp: Any, x: Any, dimension: Any, output_type: Any = dtypes.int64, **_: Any) -> Any:
        return getattr(xp, fn)(x, axis=int(dimension)).astype(output_type.np)

    return kernel


for _op_type, _fn in (("ArgMax", "argmax"), ("ArgMin", "argmin")):
    register(
        OpDef(
            _op_type,
            ("input", "dimension"),
            ("output_type",),
            _arg_infer,
            _arg_kernel(_fn),
            host_inputs=(1,),
        )
    )
no_gradient("ArgMax", "ArgMin")


def argmax(
    input: Any,
    axis: Any = None,
    name: str | None = None,
    dimension: Any = None,
    output_type: Any = dtypes.int64,
) -> Tensor:
    """The index of the largest value along ``axis`` (0 when None, as in TF1).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.argmax([[1, 9], [8, 2]], axis=1)).tolist()
    [1, 0]
    """
    return _arg("ArgMax", input, _pick("axis", axis, "dimension", dimension), output_type, name)


def argmin(
    input: Any,
    axis: Any = None,
    name: str | None = None,
    dimension: Any = None,
    output_type: Any = dtypes.int64,
) -> Tensor:
    """The index of the smallest value along ``axis`` (0 when None, as in TF1).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.argmin([[1, 9], [8, 2]], axis=1)).tolist()
    [0, 1]
    """
    return _arg("ArgMin", input, _pick("axis", axis, "dimension", dimension), output_type, name)


def _arg(op_type: str, x: Any, axis: Any, output_type: Any, name: str | None) -> Tensor:
    x = tensor(x)
    axis = _reduction_axes(x, 0 if axis is None else axis)
    attrs = {"output_type": dtypes.as_dtype(output_type)}
    return make1(op_type, (x, axis), attrs, name=name)


# ---------------------------------------------------------------------- AddN
def _add_n_infer(*inputs: Tensor, **_: Any) -> Out:
    if not inputs:
        raise ValueError("AddN needs at least one input")
    dt = inputs[0].dtype
    check_dtype(dt, NUMBER, "inputs")
    shape = inputs[0]._shape
    for i, t in enumerate(inputs[1:], 1):
        if t.dtype is not dt:
            raise TypeError(
                f"AddN inputs must have one dtype: inputs[0] is {dt.name}, "
                f"inputs[{i}] is {t.dtype.name}"
            )
        try:
            shape = merge(shape, t._shape)
        except ValueError:
            raise ValueError(
                f"AddN inputs must have one shape: {fmt(shape)} vs inputs[{i}]{fmt(t._shape)}"
            ) from None
    return Out(dt, shape)


def _add_n(xp: Any, *arrays: Any, **_: Any) -> Any:
    if len(arrays) == 1:
        return arrays[0]
    out = xp.add(arrays[0], arrays[1])
    for a in arrays[2:]:
        out += a  # in place into the fresh sum (rebinds when it is a 0-d scalar)
    return out


register(
    OpDef(
        "AddN",
        ("*inputs",),
        (),
        _add_n_infer,
        _add_n,
        grad=lambda op, g: [g] * len(op.inputs),  # TF: the same gradient to every input
    )
)


def add_n(inputs: Any, name: str | None = None) -> Tensor:
    """The element-wise sum of a list of tensors of one dtype and shape.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.add_n([[1, 2], [3, 4], [5, 6]])).tolist()
    [9, 12]
    """
    if not isinstance(inputs, list | tuple) or not inputs:
        raise ValueError(
            "inputs must be a list of at least one Tensor with the same dtype and shape"
        )
    first = next((x for x in inputs if isinstance(x, Tensor) or hasattr(x, "_as_tensor")), None)
    dtype = None if first is None else tensor(first).dtype
    tensors = [tensor(x, dtype=None if isinstance(x, Tensor) else dtype) for x in inputs]
    if len(tensors) == 1 and name is None:
        return tensors[0]
    return make1("AddN", tensors, name=name)
