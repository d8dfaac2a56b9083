"""Element-wise arithmetic, comparison, logic and functions: one row per op.

Each row below declares an op completely (see :mod:`flowbook.ops.math.elementwise`):
its type, kernel, dtypes, wrapper names, gradient and docstring, and binds
the wrapper it returns by plain assignment.  The gradients are TensorFlow's
formulas, built with the wrappers of this module.  Binary gradients sum a
broadcast gradient back to each input's shape with
:func:`~flowbook.ops.math.broadcast_grad.unbroadcast` (static when shapes are known, else
``BroadcastGradientArgs``); unary ones reuse the op's output where TF does
(``Exp``: ``g * y``, ``Sqrt``: ``g * 0.5 / y``, ``Sigmoid``: ``g * y * (1 - y)``).
Complex inputs are conjugated as in TF.  Comparisons, logic, ``Floor``,
``Ceil``, ``Round`` and ``IsNan``... are not differentiable (TF returns None);
``Sign``'s gradient is zeros and ``FloorDiv``'s None, as in TF.  After the
tables come the TF1 functions built of them: ``truediv``, ``div``,
``scalar_mul``, ``logical_xor``, ``round`` and ``conj``.

    >>> import flowbook as fb
    >>> x = fb.constant([1.0, 4.0])
    >>> (dx,) = fb.gradients(fb.sqrt(x), [x])
    >>> with fb.Session() as s:
    ...     s.run(dx).tolist()
    [0.5, 0.25]

Trigonometry, hyperbolics and truncating division close the table.  The inverse and
hyperbolic functions' gradients are TF's formulas: ``Asin``: ``g /
sqrt(1 - x**2)``, ``Asinh``: ``g / cosh(y)``, ``Atan2(y, x)``: ``g * x /
(x**2 + y**2)`` and ``-g * y / (x**2 + y**2)``...  ``Rint``, ``TruncateDiv``
and ``TruncateMod`` have none (TF's ``NotDifferentiable``); ``DivNoNan`` is
``x / y`` with 0 wherever ``y`` is 0, its gradient TF's.

    >>> import flowbook as fb
    >>> x = fb.constant([0.5])
    >>> (dx,) = fb.gradients(fb.asin(x), [x])
    >>> with fb.Session() as s:
    ...     print(f"{float(s.run(dx)[0]):.4f}")
    1.1547
"""

from __future__ import annotations

from typing import Any

from flowbook.framework import dtypes, registry
from flowbook.framework.graph import name_scope
from flowbook.framework.registry import NOT_DIFFERENTIABLE, op
from flowbook.framework.tensor import Operation, Tensor
from flowbook.framework.tensor_shape import fmt
from flowbook.ops._builder import make1, operands, tensor
from flowbook.ops.array.cast_ops import cast
from flowbook.ops.array.fill_ops import ones_like, zeros_like
from flowbook.ops.array.selection_ops import where
from flowbook.ops.math.broadcast_grad import unbroadcast
from flowbook.ops.math.elementwise import (
    ANY,
    BINARY,
    BOOL,
    COMPLEX,
    FLOAT,
    INEXACT,
    NUMBER,
    REAL,
    binary,
    binary_infer,
    doctests,
    step,
    unary,
)

__all__ = [
    "abs",
    "acos",
    "acosh",
    "add",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "ceil",
    "conj",
    "cos",
    "cosh",
    "div",
    "div_no_nan",
    "divide",
    "equal",
    "exp",
    "expm1",
    "floor",
    "floor_div",
    "floordiv",
    "floormod",
    "greater",
    "greater_equal",
    "is_finite",
    "is_inf",
    "is_nan",
    "less",
    "less_equal",
    "log",
    "log1p",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "maximum",
    "minimum",
    "mod",
    "mul",
    "multiply",
    "neg",
    "negative",
    "not_equal",
    "pow",
    "realdiv",
    "reciprocal",
    "rint",
    "round",
    "rsqrt",
    "scalar_mul",
    "sigmoid",
    "sign",
    "sin",
    "sinh",
    "sqrt",
    "square",
    "squared_difference",
    "sub",
    "subtract",
    "tan",
    "tanh",
    "truediv",
    "truncatediv",
    "truncatemod",
]

Grads = tuple[Tensor | None, ...]
_B = dtypes.bool
_NO = NOT_DIFFERENTIABLE


def _sum_back(gx: Tensor, gy: Tensor, x: Tensor, y: Tensor) -> Grads:
    """Each of two full-shape gradients summed back to its own input's shape."""
    return unbroadcast(gx, x, y)[0], unbroadcast(gy, x, y)[1]


def _sub_grad(op: Operation, g: Tensor) -> Grads:
    gx, gy = unbroadcast(g, *op.inputs)
    return gx, negative(gy)


def _mul_grad(op: Operation, g: Tensor) -> Grads:
    x, y = op.inputs
    return _sum_back(multiply(g, conj(y)), multiply(conj(x), g), x, y)


def _realdiv_grad(op: Operation, g: Tensor) -> Grads:
    x, y = conj(op.inputs[0]), conj(op.inputs[1])
    gy = multiply(g, realdiv(realdiv(negative(x), y), y))
    return _sum_back(realdiv(g, y), gy, *op.inputs)


def _floormod_grad(op: Operation, g: Tensor) -> Grads:
    x, y = conj(op.inputs[0]), conj(op.inputs[1])
    return _sum_back(g, multiply(g, negative(floordiv(x, y))), *op.inputs)


def _pow_grad(op: Operation, g: Tensor) -> Grads:
    """TF's: grad * y * x**(y-1) and grad * z * log(x), with log(x) taken as 0 where x <= 0."""
    x, y, z = (conj(t) for t in (*op.inputs, op.outputs[0]))
    gx = multiply(multiply(g, y), pow(x, subtract(y, 1)))
    mask = not_equal(x, 0) if x.dtype.is_complex else greater(x, 0)
    log_x = where(mask, log(where(mask, x, ones_like(x))), zeros_like(x))
    return _sum_back(gx, multiply(multiply(g, z), log_x), *op.inputs)


def _max_min_grad(selector: Any) -> Any:
    """The gradient goes to x where ``selector(x, y)`` (ties: to x), else to y."""

    def grad(op: Operation, g: Tensor) -> Grads:
        x, y = op.inputs
        xmask = selector(x, y)  # shaped like the output, as g is
        zeros = zeros_like(g)
        return _sum_back(where(xmask, g, zeros), where(xmask, zeros, g), x, y)

    return grad


def _squared_difference_grad(op: Operation, g: Tensor) -> Grads:
    x, y = op.inputs
    gx, gy = unbroadcast(multiply(scalar_mul(2.0, g), subtract(x, y)), x, y)
    return gx, negative(gy)


def _squared_difference(xp: Any, x: Any, y: Any) -> Any:
    return xp.square(xp.subtract(x, y))


def _rsqrt(xp: Any, x: Any) -> Any:
    return xp.reciprocal(xp.sqrt(x))


def _sigmoid(xp: Any, x: Any) -> Any:
    # 1 / (1 + e^-x), in place on one temporary: e^-x overflows to inf for x below about
    # -88 (float32), and 1 / inf is the limit 0 (the run ignores the overflow, as TF does)
    t = xp.negative(x)
    if not isinstance(t, xp.ndarray):  # a 0-d input gives a scalar: nothing to reuse
        return xp.reciprocal(1 + xp.exp(t))
    xp.exp(t, out=t)
    t += 1
    return xp.reciprocal(t, out=t)


def _x(op: Operation) -> Tensor:  # a unary op's input, conjugated as TF's gradients take it
    return conj(op.inputs[0])


def _y(op: Operation) -> Tensor:  # a unary op's output, conjugated
    return conj(op.outputs[0])


def _cube(y: Tensor) -> Tensor:
    return multiply(y, square(y))


# ------------------------------------------------------------------ binary
add = binary(
    "Add",
    "add",
    NUMBER | {dtypes.string},
    ("add",),
    grad=lambda op, g: unbroadcast(g, *op.inputs),
    fusion=step("add", "either"),
    doc=("x + y element-wise, with numpy broadcasting.", "add([1, 2], 10)", "[11, 12]"),
)
subtract = sub = binary(
    "Sub",
    "subtract",
    NUMBER,
    ("subtract", "sub"),
    grad=_sub_grad,
    fusion=step("subtract", "left"),
    doc=("x - y element-wise, with broadcasting.", "subtract([5, 7], 2)", "[3, 5]"),
)
multiply = mul = binary(
    "Mul",
    "multiply",
    NUMBER,
    ("multiply", "mul"),
    grad=_mul_grad,
    fusion=step("multiply", "either"),
    doc=("x * y element-wise, with broadcasting.", "multiply([1, 2], 3)", "[3, 6]"),
)
realdiv = binary(
    "RealDiv",
    "true_divide",
    INEXACT,
    ("realdiv",),
    grad=_realdiv_grad,
    fusion=step("divide", "left"),
    doc=("x / y for floats, element-wise.", "realdiv([1.0, 3.0], 2.0)", "[0.5, 1.5]"),
)
floordiv = binary(
    "FloorDiv",
    "floor_divide",
    REAL,
    ("floordiv",),
    grad=lambda op, g: (None, None),  # TF: "FloorDiv has no gradient"
    doc=("x // y element-wise, rounding down.", "floordiv([7, -7], 2)", "[3, -4]"),
)
floormod = mod = binary(
    "FloorMod",
    "remainder",
    REAL,
    ("floormod", "mod"),
    grad=_floormod_grad,
    doc=("x % y element-wise, the sign of y (Python's %).", "floormod([7, -7], 3)", "[1, 2]"),
)
pow = binary(
    "Pow",
    "power",
    NUMBER,
    ("pow",),
    grad=_pow_grad,
    doc=("x ** y element-wise.", "pow([2, 3], 2)", "[4, 9]"),
)
maximum = binary(
    "Maximum",
    "maximum",
    REAL,
    ("maximum",),
    grad=_max_min_grad(lambda x, y: greater_equal(x, y)),
    fusion=step("maximum", "either"),
    doc=("The larger of x and y, element-wise.", "maximum([1, 5], 3)", "[3, 5]"),
)
minimum = binary(
    "Minimum",
    "minimum",
    REAL,
    ("minimum",),
    grad=_max_min_grad(lambda x, y: less_equal(x, y)),
    fusion=step("minimum", "either"),
    doc=("The smaller of x and y, element-wise.", "minimum([1, 5], 3)", "[1, 3]"),
)
squared_difference = binary(
    "SquaredDifference",
    _squared_difference,
    REAL,
    ("squared_difference",),
    grad=_squared_difference_grad,
    doc=("(x - y) ** 2 element-wise.", "squared_difference([1, 5], 3)", "[4, 4]"),
)
less = binary(
    "Less",
    "less",
    REAL,
    ("less",),
    out=_B,
    grad=_NO,
    doc=("x < y element-wise, as bools.", "less([1, 5], 3)", "[True, False]"),
)
less_equal = binary(
    "LessEqual",
    "less_equal",
    REAL,
    ("less_equal",),
    out=_B,
    grad=_NO,
    doc=("x <= y element-wise.", "less_equal([1, 3], 3)", "[True, True]"),
)
greater = binary(
    "Greater",
    "greater",
    REAL,
    ("greater",),
    out=_B,
    grad=_NO,
    doc=("x > y element-wise.", "greater([1, 5], 3)", "[False, True]"),
)
greater_equal = binary(
    "GreaterEqual",
    "greater_equal",
    REAL,
    ("greater_equal",),
    out=_B,
    grad=_NO,
    doc=("x >= y element-wise.", "greater_equal([1, 3], 3)", "[False, True]"),
)
equal = binary(
    "Equal",
    "equal",
    ANY,
    ("equal",),
    out=_B,
    grad=_NO,
    doc=("x == y element-wise.", "equal([1, 3], 3)", "[False, True]"),
)
not_equal = binary(
    "NotEqual",
    "not_equal",
    ANY,
    ("not_equal",),
    out=_B,
    grad=_NO,
    doc=("x != y element-wise.", "not_equal([1, 3], 3)", "[True, False]"),
)
logical_and = binary(
    "LogicalAnd",
    "logical_and",
    BOOL,
    ("logical_and",),
    out=_B,
    grad=_NO,
    doc=(
        "x AND y element-wise, for bools.",
        "logical_and([True, True], [True, False])",
        "[True, False]",
    ),
)
logical_or = binary(
    "LogicalOr",
    "logical_or",
    BOOL,
    ("logical_or",),
    out=_B,
    grad=_NO,
    doc=("x OR y element-wise, for bools.", "logical_or([True, False], False)", "[True, False]"),
)

# ------------------------------------------------------------------- unary
negative = neg = unary(
    "Neg",
    "negative",
    NUMBER,
    ("negative", "neg"),
    grad=lambda op, g: negative(g),
    doc=("-x element-wise.", "negative([1, -2])", "[-1, 2]"),
)
abs = unary(
    "Abs",
    "absolute",
    REAL,
    ("abs",),
    grad=lambda op, g: multiply(g, sign(op.inputs[0])),
    doc=("|x| element-wise.", "abs([1, -2])", "[1, 2]"),
)
square = unary(
    "Square",
    "square",
    NUMBER,
    ("square",),
    grad=lambda op, g: multiply(g, multiply(_x(op), 2)),
    doc=("x * x element-wise.", "square([2, -3])", "[4, 9]"),
)
sqrt = unary(
    "Sqrt",
    "sqrt",
    INEXACT,
    ("sqrt",),
    grad=lambda op, g: realdiv(multiply(g, 0.5), _y(op)),  # TF's SqrtGrad
    doc=("The square root, element-wise.", "sqrt([4.0, 9.0])", "[2.0, 3.0]"),
)
rsqrt = unary(
    "Rsqrt",
    _rsqrt,
    INEXACT,
    ("rsqrt",),  # TF's RsqrtGrad: -g * y**3 / 2
    grad=lambda op, g: multiply(multiply(g, _cube(_y(op))), -0.5),
    doc=("1 / sqrt(x) element-wise.", "rsqrt([4.0, 0.25])", "[0.5, 2.0]"),
)
exp = unary(
    "Exp",
    "exp",
    INEXACT,
    ("exp",),
    grad=lambda op, g: multiply(g, _y(op)),
    doc=("e ** x element-wise.", "exp([0.0])", "[1.0]"),
)
log = unary(
    "Log",
    "log",
    INEXACT,
    ("log",),
    grad=lambda op, g: multiply(g, reciprocal(_x(op))),
    doc=("The natural logarithm, element-wise.", "log([1.0])", "[0.0]"),
)
log1p = unary(
    "Log1p",
    "log1p",
    INEXACT,
    ("log1p",),
    grad=lambda op, g: multiply(g, reciprocal(add(_x(op), 1))),
    doc=("log(1 + x) element-wise, accurate for small x.", "log1p([0.0])", "[0.0]"),
)
sigmoid = unary(
    "Sigmoid",
    _sigmoid,
    FLOAT,
    ("sigmoid",),
    grad=lambda op, g: multiply(multiply(g, op.outputs[0]), subtract(1, op.outputs[0])),
    doc=(
        "1 / (1 + exp(-x)) element-wise, without overflow.",
        "sigmoid([0.0, -1000.0])",
        "[0.5, 0.0]",
    ),
)
tanh = unary(
    "Tanh",
    "tanh",
    INEXACT,
    ("tanh",),  # TF's TanhGrad
    grad=lambda op, g: multiply(g, subtract(1, square(_y(op)))),
    doc=("The hyperbolic tangent, element-wise.", "tanh([0.0])", "[0.0]"),
)
sign = unary(
    "Sign",
    "sign",
    NUMBER,
    ("sign",),
    grad=lambda op, g: zeros_like(op.inputs[0]),  # TF: zeros, not None
    doc=("-1, 0 or 1 by the sign of x, element-wise.", "sign([-3, 0, 2])", "[-1, 0, 1]"),
)
reciprocal = unary(
    "Reciprocal",
    "reciprocal",
    NUMBER,
    ("reciprocal",),
    grad=lambda op, g: multiply(negative(g), square(_y(op))),
    doc=("1 / x element-wise.", "reciprocal([2.0, 4.0])", "[0.5, 0.25]"),
)
floor = unary(
    "Floor",
    "floor",
    FLOAT,
    ("floor",),
    grad=_NO,
    doc=("The largest integer <= x, element-wise.", "floor([1.5, -1.5])", "[1.0, -2.0]"),
)
ceil = unary(
    "Ceil",
    "ceil",
    FLOAT,
    ("ceil",),
    grad=_NO,
    doc=("The smallest integer >= x, element-wise.", "ceil([1.5, -1.5])", "[2.0, -1.0]"),
)
_round = unary("Round", "rint", FLOAT, (), grad=_NO, doc=None)  # `round` below: ints pass
sin = unary(
    "Sin",
    "sin",
    INEXACT,
    ("sin",),
    grad=lambda op, g: multiply(g, cos(_x(op))),
    doc=("The sine, element-wise.", "sin([0.0])", "[0.0]"),
)
cos = unary(
    "Cos",
    "cos",
    INEXACT,
    ("cos",),
    grad=lambda op, g: multiply(negative(g), sin(_x(op))),
    doc=("The cosine, element-wise.", "cos([0.0])", "[1.0]"),
)
_conj = unary("Conj", "conj", COMPLEX, (), grad=lambda op, g: conj(g), doc=None)  # `conj` below
logical_not = unary(
    "LogicalNot",
    "logical_not",
    BOOL,
    ("logical_not",),
    out=_B,
    grad=_NO,
    doc=("NOT x element-wise, for bools.", "logical_not([True, False])", "[False, True]"),
)


def _float_test(op: str, fn: str, wrapper: str, what: str, special: str, value: str) -> Any:
    """The row of a float -> bool test (IsNan, IsInf, IsFinite); none is differentiable.

    Its example runs it on ``[1.0, float(special)]``, giving ``value``.
    """
    doc = (f"Whether x is {what}, element-wise.", f"{wrapper}([1.0, float('{special}')])", value)
    return unary(op, fn, FLOAT, (wrapper,), out=_B, grad=_NO, doc=doc)


is_nan = _float_test("IsNan", "isnan", "is_nan", "NaN", "nan", "[False, True]")
is_inf = _float_test("IsInf", "isinf", "is_inf", "+-inf", "inf", "[False, True]")
is_finite = _float_test("IsFinite", "isfinite", "is_finite", "finite", "inf", "[True, False]")

__test__ = doctests(
    add,
    subtract,
    multiply,
    realdiv,
    floordiv,
    floormod,
    pow,
    maximum,
    minimum,
    squared_difference,
    less,
    less_equal,
    greater,
    greater_equal,
    equal,
    not_equal,
    logical_and,
    logical_or,
    negative,
    abs,
    square,
    sqrt,
    rsqrt,
    exp,
    log,
    log1p,
    sigmoid,
    tanh,
    sign,
    reciprocal,
    floor,
    ceil,
    sin,
    cos,
    logical_not,
    is_nan,
    is_inf,
    is_finite,
)

# TensorFlow's GraphDefs spell Add "AddV2": the same kernel, infer and gradient
_ADD = registry.OPS["Add"]
_ADD_V2 = BINARY[0]._replace(op_type="AddV2")
op(
    "AddV2",
    _ADD.inputs,
    (),
    binary_infer(_ADD_V2),
    _ADD.kernel,
    bind=_ADD.bind,
    grad=_ADD.grad,
    fusion=_ADD.fusion,
)


# ----------------------------------------------------------------- composites
_TRUEDIV_FLOAT = {
    dtypes.int8: dtypes.float32,
    dtypes.int16: dtypes.float32,
    dtypes.uint8: dtypes.float32,
    dtypes.uint16: dtypes.float32,
    dtypes.int32: dtypes.float64,
    dtypes.int64: dtypes.float64,
}  # TF1's _TRUEDIV_TABLE: ints are divided as these floats


def truediv(x: Any, y: Any, name: str | None = None) -> Tensor:
    """x / y as floats (Python 3 division): ints are cast to float first, as TF1 does.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.truediv([1, 3], 2)).tolist()
    [0.5, 1.5]
    """
    x, y = operands(x, y)
    if x.dtype is not y.dtype:
        raise TypeError(f"x and y must have the same dtype, got {x.dtype.name} != {y.dtype.name}")
    to = _TRUEDIV_FLOAT.get(x.dtype)
    if to is None:
        return make1("RealDiv", (x, y), name=name or "truediv")
    with name_scope(name, "truediv", [x, y]) as scope:
        return make1("RealDiv", (cast(x, to), cast(y, to)), name=scope)


def divide(x: Any, y: Any, name: str | None = None) -> Tensor:
    """x / y element-wise, TF1's ``tf.divide``: the same as :func:`truediv`.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.divide([1.0, 3.0], 2.0)).tolist()
    [0.5, 1.5]
    """
    return truediv(x, y, name=name)


def div(x: Any, y: Any, name: str | None = None) -> Tensor:
    """TF1's old ``tf.div``: floor division for ints, true division for floats.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.div([7, -7], 2)).tolist()
    [3, -4]
    """
    x, y = operands(x, y)
    return make1("FloorDiv" if x.dtype.is_integer else "RealDiv", (x, y), name=name or "div")


def scalar_mul(scalar: Any, x: Any, name: str | None = None) -> Tensor:
    """A scalar times a tensor; the scalar must be 0-d.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.scalar_mul(2, fb.constant([1.5, 2.0]))).tolist()
    [3.0, 4.0]
    """
    x = tensor(x)
    s = tensor(scalar, dtype=x.dtype)
    if s._shape != ():
        raise ValueError(f"Only scalar multiply works, got shape {fmt(s._shape)}")
    return make1("Mul", (s, x), name=name or "scalar_mul")


def logical_xor(x: Any, y: Any, name: str = "LogicalXor") -> Tensor:
    """x XOR y element-wise, for bools (built from And, Or and Not as TF does).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.logical_xor([True, True], [True, False])).tolist()
    [False, True]
    """
    x, y = operands(x, y)
    either = make1("LogicalOr", (x, y))
    not_both = make1("LogicalNot", (make1("LogicalAnd", (x, y)),))
    return make1("LogicalAnd", (either, not_both), name=name)


def round(x: Any, name: str | None = None) -> Tensor:
    """Round half to even, element-wise; integer tensors are returned as they are.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.round([0.5, 1.5, -2.7])).tolist()
    [0.0, 2.0, -3.0]
    """
    x = tensor(x)
    return x if x.dtype.is_integer else _round(x, name=name)


def conj(x: Any, name: str | None = None) -> Tensor:
    """The complex conjugate, element-wise; real tensors are returned as they are.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.conj([1 + 2j])).tolist()
    [(1-2j)]
    """
    x = tensor(x)
    return _conj(x, name=name) if x.dtype.is_complex else x


_NO = NOT_DIFFERENTIABLE


def _x(op: Operation) -> Tensor:
    return conj(op.inputs[0])


def _y(op: Operation) -> Tensor:
    return conj(op.outputs[0])


def _one_minus_x2(op: Operation) -> Tensor:
    return subtract(1, square(_x(op)))


def _atan2_grad(op: Operation, g: Tensor) -> tuple[Tensor, Tensor]:
    """TF's: d/dy = x / (x^2 + y^2), d/dx = -y / (x^2 + y^2)."""
    y, x = op.inputs
    scale = realdiv(g, add(square(x), square(y)))
    return (
        unbroadcast(multiply(x, scale), y, x)[0],
        unbroadcast(multiply(negative(y), scale), y, x)[1],
    )


def _div_no_nan(xp: Any, x: Any, y: Any) -> Any:
    safe = xp.where(y == 0, xp.ones_like(y), y)
    return xp.where(y == 0, xp.zeros_like(x * y), x / safe)


def _div_no_nan_grad(op: Operation, g: Tensor) -> tuple[Tensor, Tensor]:
    """TF's: div_no_nan(g, y) and g * div_no_nan(div_no_nan(-x, y), y)."""
    x, y = op.inputs
    gy = multiply(g, div_no_nan(div_no_nan(negative(conj(x)), conj(y)), conj(y)))
    return unbroadcast(div_no_nan(g, conj(y)), x, y)[0], unbroadcast(gy, x, y)[1]


def _truncate_div(xp: Any, x: Any, y: Any) -> Any:
    if x.dtype.kind == "f":
        return xp.trunc(x / y)
    return (xp.abs(x) // xp.abs(y)) * (xp.sign(x) * xp.sign(y))  # rounds toward zero, as C


# ----------------------------------------------------------------- binary
atan2 = binary(
    "Atan2",
    "arctan2",
    FLOAT,
    ("atan2",),
    grad=_atan2_grad,
    doc=(
        "The angle of the point (x, y) from the x axis: atan(y / x) in all quadrants.",
        "atan2([1.0], [1.0])",
        "[0.7853981]",
    ),
)
truncatediv = binary(
    "TruncateDiv",
    _truncate_div,
    REAL,
    ("truncatediv",),
    grad=_NO,
    doc=(
        "x / y rounded toward zero, element-wise (C's integer division).",
        "truncatediv([7, -7], 2)",
        "[3, -3]",
    ),
)
truncatemod = binary(
    "TruncateMod",
    "fmod",
    REAL,
    ("truncatemod",),
    grad=_NO,
    doc=(
        "The remainder of truncatediv, with the sign of x (C's %).",
        "truncatemod([7, -7], 3)",
        "[1, -1]",
    ),
)
div_no_nan = binary(
    "DivNoNan",
    _div_no_nan,
    INEXACT,
    ("div_no_nan",),
    grad=_div_no_nan_grad,
    doc=("x / y, and 0 wherever y is 0.", "div_no_nan([1.0, 2.0], [2.0, 0.0])", "[0.5, 0.0]"),
)

# ------------------------------------------------------------------ unary
tan = unary(
    "Tan",
    "tan",
    INEXACT,
    ("tan",),
    grad=lambda op, g: multiply(g, square(reciprocal(cos(_x(op))))),
    doc=("The tangent, element-wise.", "tan([0.0])", "[0.0]"),
)
asin = unary(
    "Asin",
    "arcsin",
    INEXACT,
    ("asin",),
    grad=lambda op, g: multiply(g, rsqrt(_one_minus_x2(op))),
    doc=("The arcsine, element-wise.", "asin([0.0, 1.0])", "[0.0, 1.5707964]"),
)
acos = unary(
    "Acos",
    "arccos",
    INEXACT,
    ("acos",),
    grad=lambda op, g: negative(multiply(g, rsqrt(_one_minus_x2(op)))),
    doc=("The arccosine, element-wise.", "acos([1.0])", "[0.0]"),
)
atan = unary(
    "Atan",
    "arctan",
    INEXACT,
    ("atan",),
    grad=lambda op, g: realdiv(g, add(square(_x(op)), 1)),
    doc=("The arctangent, element-wise.", "atan([0.0])", "[0.0]"),
)
sinh = unary(
    "Sinh",
    "sinh",
    INEXACT,
    ("sinh",),
    grad=lambda op, g: multiply(g, cosh(_x(op))),
    doc=("The hyperbolic sine, element-wise.", "sinh([0.0])", "[0.0]"),
)
cosh = unary(
    "Cosh",
    "cosh",
    INEXACT,
    ("cosh",),
    grad=lambda op, g: multiply(g, sinh(_x(op))),
    doc=("The hyperbolic cosine, element-wise.", "cosh([0.0])", "[1.0]"),
)
asinh = unary(
    "Asinh",
    "arcsinh",
    INEXACT,
    ("asinh",),
    grad=lambda op, g: realdiv(g, cosh(_y(op))),
    doc=("The inverse hyperbolic sine, element-wise.", "asinh([0.0])", "[0.0]"),
)
acosh = unary(
    "Acosh",
    "arccosh",
    INEXACT,
    ("acosh",),
    grad=lambda op, g: realdiv(g, sinh(_y(op))),
    doc=("The inverse hyperbolic cosine, element-wise.", "acosh([1.0])", "[0.0]"),
)
atanh = unary(
    "Atanh",
    "arctanh",
    INEXACT,
    ("atanh",),
    grad=lambda op, g: realdiv(g, _one_minus_x2(op)),
    doc=("The inverse hyperbolic tangent, element-wise.", "atanh([0.0])", "[0.0]"),
)
expm1 = unary(
    "Expm1",
    "expm1",
    INEXACT,
    ("expm1",),
    grad=lambda op, g: multiply(g, exp(_x(op))),
    doc=("e ** x - 1 element-wise, accurate for small x.", "expm1([0.0])", "[0.0]"),
)
rint = unary(
    "Rint",
    "rint",
    FLOAT,
    ("rint",),
    grad=_NO,
    doc=(
        "The nearest integer, halves to even, element-wise.",
        "rint([0.5, 1.5, -1.7])",
        "[0.0, 2.0, -2.0]",
    ),
)

floor_div = floordiv  # TF1's second name for FloorDiv

__test__ |= doctests(
    atan2,
    truncatediv,
    truncatemod,
    div_no_nan,
    tan,
    asin,
    acos,
    atan,
    sinh,
    cosh,
    asinh,
    acosh,
    atanh,
    expm1,
    rint,
)
