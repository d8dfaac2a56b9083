"""Reductions (Sum, Mean, Max...), ArgMax/ArgMin and AddN, with TF1's wrappers.

As TensorFlow declares them, a reduction takes the axes as its second INPUT
(``reduction_indices``, an int32 tensor; the wrappers build a Const for it)
and ``keep_dims`` as an attr.  ``infer`` reads the axes with
``constant_value``: when they are known the static shape is exact, otherwise
the result has unknown rank (or, with ``keep_dims``, the input's rank with
unknown dims).  Each reduction is one row, ``reduction(...)``: op type,
wrapper name, kernel, dtypes, gradient and docstring; the row registers the
op, is recorded in ``REDUCTIONS`` (public for tests) and returns the wrapper,
bound below by plain assignment.  ``math_ops`` re-exports the wrappers.  The
gradients (TF's formulas) come before the rows: Sum tiles the gradient back
over the reduced dims, Mean divides that by the count, Max/Min share it
equally among ties, Prod gives each element the product of the others (exact
at zeros); the kept-dims shape is static when the graph knows it, else
computed from ``shape(x)``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.reduce_sum(fb.placeholder(fb.float32, [None, 3]), axis=0).shape.as_list()
    [3]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from flowbook.framework import dtypes
from flowbook.framework.registry import NOT_DIFFERENTIABLE, Fusion, Out, op
from flowbook.framework.tensor import Operation, Tensor
from flowbook.framework.tensor_shape import Shape, fmt, merge, num_elements
from flowbook.ops._builder import make1, tensor
from flowbook.ops.array import array_ops
from flowbook.ops.array.cast_ops import cast
from flowbook.ops.array.constant_op import constant_value
from flowbook.ops.array.shape_ops import all_axes
from flowbook.ops.math.elementwise import BOOL, NUMBER, REAL, check_dtype, doctests
from flowbook.ops.math.elementwise_ops import (
    add,
    conj,
    equal,
    floordiv,
    floormod,
    maximum,
    multiply,
    realdiv,
)

__all__ = [
    "add_n",
    "argmax",
    "argmin",
    "reduce_all",
    "reduce_any",
    "reduce_max",
    "reduce_mean",
    "reduce_min",
    "reduce_prod",
    "reduce_sum",
]

_INDEX = frozenset({dtypes.int32, dtypes.int64})


class Reduction(NamedTuple):
    """One row of the reduction table."""

    op_type: str  # TensorFlow's op type name
    wrapper: str  # the public TF1 function
    fn: Callable[..., Any]  # fn(xp, x, axes: tuple, keepdims: bool) -> array of x's dtype
    dtypes: frozenset  # input dtypes the op takes
    grad: Any  # grad(op, g) -> (input gradient, None), or NOT_DIFFERENTIABLE
    doc: tuple[str, str, str]  # summary, example call, its value (a doctest)


def _mean(xp: Any, x: Any, axes: tuple, keepdims: bool) -> Any:
    if x.dtype == np.float16:  # accumulate half precision in float32, as TF does
        return xp.mean(x, axis=axes, keepdims=keepdims, dtype=np.float32).astype(x.dtype)
    return xp.mean(x, axis=axes, keepdims=keepdims, dtype=x.dtype)  # ints: truncated, as TF


REDUCTIONS: list[Reduction] = []  # the rows below, in declaration order

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
    return all_axes(x)


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


def reduction(
    op_type: str,
    wrapper: str,
    fn: Callable[..., Any],
    allowed: frozenset,
    *,
    grad: Any,
    doc: tuple[str, str, str],
    **fields: Any,
) -> Callable[..., Tensor]:
    """Declare a reduction from its row: register the op, record the row, return the wrapper.

    ``fields``: more of the op's OpDef fields (``fusion``, ``passthrough``).
    """
    row = Reduction(op_type, wrapper, fn, allowed, grad, doc)
    infer, kernel = _reduction_infer(row), _reduction_kernel(fn)
    inputs = ("input", "reduction_indices")  # the axes are read on the host as Python ints
    op(
        op_type,
        inputs,
        ("keep_dims",),
        infer,
        kernel,
        host_inputs=(1,),
        grad=grad,
        type_attrs={"T": 0, "Tidx": 1},
        **fields,
    )
    REDUCTIONS.append(row)
    built = _reduction_wrapper(op_type)
    built.__name__ = built.__qualname__ = wrapper
    summary, call, value = doc
    built.__doc__ = _EXAMPLE.format(summary=summary, call=call, value=value)
    return built


# ------------------------------------------------------ reduction gradients
def _kept_dims(op: Operation) -> tuple[Any, Any]:
    """(the output's shape with reduced dims kept as 1, tile multiples back to the input).

    Lists when the input shape and the axes are known when the graph is built,
    else int32 tensors computed from ``shape(x)`` (TF's ``reduced_shape``).
    """
    x, axes = op.inputs
    shape, ax = x._shape, constant_value(axes)
    if shape is not None and None not in shape and ax is not None:
        dims = {a % len(shape) for a in np.ravel(ax).tolist()} if shape else set()
        kept = [1 if i in dims else d for i, d in enumerate(shape)]
        return kept, [d if i in dims else 1 for i, d in enumerate(shape)]
    sx = array_ops.shape(x)
    rank = array_ops.size(sx)
    ax = floormod(cast(array_ops.reshape(axes, [-1]), dtypes.int32), rank)
    dim = array_ops.expand_dims(array_ops.range(0, rank, 1), 1)
    reduced = reduce_any(equal(dim, array_ops.expand_dims(ax, 0)), axis=1)
    ones = array_ops.ones_like(sx)
    return array_ops.where(reduced, ones, sx), array_ops.where(reduced, sx, ones)


def _reshape(t: Tensor, shape: Any) -> Tensor:
    if isinstance(shape, list) and t._shape == tuple(shape):
        return t
    return array_ops.reshape(t, shape)


def _sum_grad(op: Operation, g: Tensor) -> tuple[Tensor, None]:
    """TF's: the gradient reshaped to the kept dims and tiled over the reduced ones."""
    kept, multiples = _kept_dims(op)
    g = _reshape(g, kept)
    if isinstance(multiples, list) and all(k == 1 for k in multiples):
        return g, None
    return array_ops.tile(g, multiples), None


def _mean_grad(op: Operation, g: Tensor) -> tuple[Tensor, None]:
    """Sum's gradient divided by the number of elements averaged."""
    sum_grad = _sum_grad(op, g)[0]
    n_in, n_out = num_elements(op.inputs[0]._shape), num_elements(op.outputs[0]._shape)
    if n_in is not None and n_out is not None:
        factor = tensor(n_in // max(n_out, 1), dtype=sum_grad.dtype)
    else:
        size_in, size_out = array_ops.size(op.inputs[0]), array_ops.size(op.outputs[0])
        count = floordiv(size_in, maximum(size_out, 1))
        factor = cast(count, sum_grad.dtype)
    return realdiv(sum_grad, factor), None


def _min_or_max_grad(op: Operation, g: Tensor) -> tuple[Tensor, None]:
    """TF's: the gradient goes to the extreme elements, divided equally among ties."""
    x, axes = op.inputs
    y = op.outputs[0]
    if not op.attrs.get("keep_dims"):
        kept = _kept_dims(op)[0]
        y, g = _reshape(y, kept), _reshape(g, kept)
    indicators = cast(equal(y, x), g.dtype)
    num_selected = reduce_sum(indicators, axes, keepdims=True)
    return multiply(realdiv(indicators, num_selected), g), None


def _prod_grad(op: Operation, g: Tensor) -> tuple[Tensor, None]:
    """The product of the other elements of each group, exact where x has zeros.

    TF computes it with exclusive cumprods; here, per group, it is prod/x
    with no zero, the product of the non-zeros at the one zero, else 0.
    """
    x, axes = op.inputs
    if not op.attrs.get("keep_dims"):
        g = _reshape(g, _kept_dims(op)[0])
    is_zero = equal(x, 0)
    safe_x = array_ops.where(is_zero, array_ops.ones_like(x), x)
    prod = reduce_prod(safe_x, axes, keepdims=True)
    n_zeros = reduce_sum(cast(is_zero, x.dtype), axes, keepdims=True)
    no_zero = cast(equal(n_zeros, 0), x.dtype)
    one_zero = cast(equal(n_zeros, 1), x.dtype)
    others = add(
        multiply(realdiv(prod, safe_x), no_zero),
        multiply(multiply(prod, one_zero), cast(is_zero, x.dtype)),
    )
    return multiply(g, conj(others)), None


def _sum(xp: Any, x: Any, ax: tuple[int, ...], kd: bool) -> Any:
    """numpy's sum; over no axes a copy of ``x``, as TensorFlow's reduction kernels do (a sum
    of nothing keeps ``-0.0``, which numpy's reduce, adding to 0.0, would not)."""
    return x.copy() if ax == () else xp.sum(x, axis=ax, keepdims=kd, dtype=x.dtype)


reduce_sum = reduction(
    "Sum",
    "reduce_sum",
    _sum,
    NUMBER,
    grad=_sum_grad,
    # heads a _FusedSum over folded axes; over no axes a copy: a step, or dropped
    fusion=Fusion(head="_FusedSum", step="sum"),
    passthrough="no_axes",
    doc=("The sum of elements across axes.", "reduce_sum([[1, 2], [3, 4]], axis=1)", "[3, 7]"),
)
reduce_mean = reduction(
    "Mean",
    "reduce_mean",
    _mean,
    NUMBER,
    grad=_mean_grad,
    doc=(
        "The mean across axes; integer means truncate, as in TensorFlow.",
        "reduce_mean([[1.0, 2.0], [3.0, 4.0]], axis=0)",
        "[2.0, 3.0]",
    ),
)
reduce_max = reduction(
    "Max",
    "reduce_max",
    lambda xp, x, ax, kd: xp.max(x, axis=ax, keepdims=kd),
    REAL,
    grad=_min_or_max_grad,
    doc=("The maximum across axes.", "reduce_max([[1, 5], [3, 4]], axis=0)", "[3, 5]"),
)
reduce_min = reduction(
    "Min",
    "reduce_min",
    lambda xp, x, ax, kd: xp.min(x, axis=ax, keepdims=kd),
    REAL,
    grad=_min_or_max_grad,
    doc=("The minimum across axes.", "reduce_min([[1, 5], [3, 4]], axis=0)", "[1, 4]"),
)
reduce_prod = reduction(
    "Prod",
    "reduce_prod",
    lambda xp, x, ax, kd: xp.prod(x, axis=ax, keepdims=kd, dtype=x.dtype),
    NUMBER,
    grad=_prod_grad,
    doc=("The product across axes.", "reduce_prod([[1, 2], [3, 4]], axis=1)", "[2, 12]"),
)
reduce_all = reduction(
    "All",
    "reduce_all",
    lambda xp, x, ax, kd: xp.all(x, axis=ax, keepdims=kd),
    BOOL,
    grad=NOT_DIFFERENTIABLE,
    doc=(
        "Logical AND across axes.",
        "reduce_all([[True, False], [True, True]], axis=1)",
        "[False, True]",
    ),
)
reduce_any = reduction(
    "Any",
    "reduce_any",
    lambda xp, x, ax, kd: xp.any(x, axis=ax, keepdims=kd),
    BOOL,
    grad=NOT_DIFFERENTIABLE,
    doc=(
        "Logical OR across axes.",
        "reduce_any([[True, False], [False, False]], axis=1)",
        "[True, False]",
    ),
)
__test__ = doctests(
    reduce_sum, reduce_mean, reduce_max, reduce_min, reduce_prod, reduce_all, reduce_any
)


# ------------------------------------------------------------- ArgMax/ArgMin
def _arg_infer(x: Tensor, dimension: Tensor, output_type: Any = dtypes.int64, **_: Any) -> Out:
    check_dtype(x.dtype, REAL, "input")
    check_dtype(dimension.dtype, _INDEX, "dimension")
    check_dtype(output_type, _INDEX, "output_type")
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


def _arg_reduction(op_type: str, fn: str, extreme: str, example: str) -> Callable[..., Tensor]:
    """Declare ArgMax or ArgMin (``xp.<fn>`` along one axis); returns TF1's wrapper."""
    kernel, inputs = _arg_kernel(fn), ("input", "dimension")
    no_grad = NOT_DIFFERENTIABLE  # an index does not vary smoothly with x
    op(
        op_type,
        inputs,
        ("output_type",),
        _arg_infer,
        kernel,
        host_inputs=(1,),
        grad=no_grad,
        type_attrs={"T": 0, "Tidx": 1},
    )

    def wrapper(
        input: Any,
        axis: Any = None,
        name: str | None = None,
        dimension: Any = None,
        output_type: Any = dtypes.int64,
    ) -> Tensor:
        x = tensor(input)
        axis = _pick("axis", axis, "dimension", dimension)
        axis = _reduction_axes(x, 0 if axis is None else axis)
        attrs = {"output_type": dtypes.as_dtype(output_type)}
        return make1(op_type, (x, axis), attrs, name=name)

    wrapper.__name__ = wrapper.__qualname__ = fn
    wrapper.__doc__ = _ARG_EXAMPLE.format(extreme=extreme, fn=fn, value=example)
    return wrapper


_ARG_EXAMPLE = """The index of the {extreme} value along ``axis`` (0 when None, as in TF1).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.{fn}([[1, 9], [8, 2]], axis=1)).tolist()
    {value}
"""
argmax = _arg_reduction("ArgMax", "argmax", "largest", "[1, 0]")
argmin = _arg_reduction("ArgMin", "argmin", "smallest", "[0, 1]")
__test__.update(doctests(argmax, argmin))


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


op(
    "AddN",
    ("*inputs",),
    (),
    _add_n_infer,
    _add_n,
    grad=lambda op, g: [g] * len(op.inputs),
    count_attr="N",
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
