"""The rest of TF1's element-wise table: trigonometry, hyperbolics and truncating division.

Rows as in :mod:`flowbook.ops.math.elementwise_ops` (one ``unary``/``binary``
call per op, its gradient and docstring in the row).  The inverse and
hyperbolic functions' gradients are TF's formulas: ``Asin``: ``g /
sqrt(1 - x**2)``, ``Asinh``: ``g / cosh(y)``, ``Atan2(y, x)``: ``g * x /
(x**2 + y**2)`` and ``-g * y / (x**2 + y**2)``...  ``Rint``, ``TruncateDiv``
and ``TruncateMod`` have none (TF's ``NotDifferentiable``); ``DivNoNan`` is
``x / y`` with 0 wherever ``y`` is 0, its gradient TF's.

    >>> import flowbook as fb
    >>> x = fb.constant([0.5])
    >>> (dx,) = fb.gradients(fb.asin(x), [x])
    >>> with fb.Session() as s:
    ...     round(float(s.run(dx)[0]), 4)
    1.1547
"""

from __future__ import annotations

from typing import Any

from flowbook.framework.registry import NOT_DIFFERENTIABLE
from flowbook.framework.tensor import Operation, Tensor
from flowbook.ops.math.broadcast_grad import unbroadcast
from flowbook.ops.math.elementwise import FLOAT, INEXACT, REAL, binary, doctests, unary
from flowbook.ops.math.elementwise_ops import (
    add,
    conj,
    cos,
    exp,
    floordiv,
    multiply,
    negative,
    realdiv,
    reciprocal,
    rsqrt,
    square,
    subtract,
)

__all__ = [
    "acos",
    "acosh",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "cosh",
    "div_no_nan",
    "expm1",
    "floor_div",
    "rint",
    "sinh",
    "tan",
    "truncatediv",
    "truncatemod",
]

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

__test__ = doctests(
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
