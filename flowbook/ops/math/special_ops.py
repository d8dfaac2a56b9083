"""Special functions as element-wise rows: erf, lgamma, digamma, Bessel, ndtri...

Each row names TF's op type, its kernel from :mod:`flowbook.kernels.special_kernels`
(float64 inside, the input's dtype out), its gradient and its docstring, as
the rows of :mod:`flowbook.ops.math.elementwise_ops` do.  The gradients are the
functions' derivatives: ``erf' = 2/sqrt(pi) exp(-x**2)``, ``lgamma' =
digamma``, ``digamma' = polygamma(1, x)``, ``erfinv' = sqrt(pi)/2 exp(y**2)``,
``ndtri' = sqrt(2 pi) exp(y**2 / 2)``, ``i0' = i1``, ``i1' = i0 - i1/x``
(1/2 at 0) and the scaled forms' likewise.  ``Polygamma(a, x)`` and
``Zeta(x, q)`` are differentiable in their second input only (TF's), and
``NextAfter`` not at all.  ``lbeta`` is composed of ``lgamma``.

    >>> import flowbook as fb
    >>> x = fb.constant([1.0])
    >>> (dx,) = fb.gradients(fb.lgamma(x), [x])  # digamma(1) = -Euler's gamma
    >>> with fb.Session() as s:
    ...     round(float(s.run(dx)[0]), 6)
    -0.577216
"""

from __future__ import annotations

import math
from typing import Any

from flowbook.framework import dtypes
from flowbook.framework.graph import name_scope
from flowbook.framework.registry import NOT_DIFFERENTIABLE, OpDef, Out, op
from flowbook.framework.tensor import Operation, Tensor
from flowbook.framework.tensor_shape import broadcast
from flowbook.kernels import special_kernels as k
from flowbook.ops._builder import make1, operands, same_dtype, tensor
from flowbook.ops.array.cast_ops import cast
from flowbook.ops.array.fill_ops import zeros_like
from flowbook.ops.array.select_v2_ops import sum_to_shape_of, where_v2
from flowbook.ops.math.broadcast_grad import unbroadcast
from flowbook.ops.math.elementwise import (
    FLOAT,
    Elementwise,
    binary,
    binary_infer,
    check_dtype,
    doctests,
    unary,
)
from flowbook.ops.math.elementwise_ops import (
    add,
    equal,
    exp,
    log,
    log1p,
    multiply,
    negative,
    realdiv,
    sign,
    square,
    subtract,
)
from flowbook.ops.math.reduction_ops import reduce_sum

__all__ = [
    "bessel_i0",
    "bessel_i0e",
    "bessel_i1",
    "bessel_i1e",
    "betainc",
    "digamma",
    "erf",
    "erfc",
    "erfcinv",
    "erfinv",
    "igamma",
    "igammac",
    "lbeta",
    "lgamma",
    "ndtri",
    "nextafter",
    "polygamma",
    "zeta",
]


def _x(op: Operation) -> Tensor:
    return op.inputs[0]


def _scaled(op: Operation, g: Tensor, c: float, y2: float) -> Tensor:
    """g * c * exp(y2 * y**2), y the op's output (erfinv, ndtri)."""
    return multiply(g, multiply(c, exp(multiply(y2, square(op.outputs[0])))))


def _at_zero_half(x: Tensor, value: Tensor) -> Tensor:
    """``value``, with 1/2 where x is 0 (the limit of i1'(x) there)."""
    return where_v2(equal(x, zeros_like(x)), zeros_like(x) + 0.5, value)


def _i1_grad(op: Operation, g: Tensor) -> Tensor:
    x, y = _x(op), op.outputs[0]
    safe = where_v2(equal(x, zeros_like(x)), zeros_like(x) + 1.0, x)
    return multiply(g, _at_zero_half(x, subtract(bessel_i0(x), realdiv(y, safe))))


def _i1e_grad(op: Operation, g: Tensor) -> Tensor:
    x, y = _x(op), op.outputs[0]
    safe = where_v2(equal(x, zeros_like(x)), zeros_like(x) + 1.0, x)
    d = subtract(bessel_i0e(x), multiply(y, add(sign(x), realdiv(1.0, safe))))
    return multiply(g, _at_zero_half(x, d))


def _second_grad(deriv: Any) -> Any:
    """The gradient of a binary op differentiable in its second input only."""

    def grad(op: Operation, g: Tensor) -> tuple[Tensor | None, Tensor]:
        a, x = op.inputs
        return None, unbroadcast(multiply(g, deriv(a, x)), a, x)[1]

    return grad


_ERF_C = 2 / math.sqrt(math.pi)
_NO = NOT_DIFFERENTIABLE

erf = unary(
    "Erf",
    k.erf,
    FLOAT,
    ("erf",),
    grad=lambda op, g: multiply(g, multiply(_ERF_C, exp(negative(square(_x(op)))))),
    doc=("The Gauss error function, element-wise.", "erf([0.0, 0.5])", "[0.0, 0.5204999]"),
)
erfc = unary(
    "Erfc",
    k.erfc,
    FLOAT,
    ("erfc",),
    grad=lambda op, g: multiply(g, multiply(-_ERF_C, exp(negative(square(_x(op)))))),
    doc=("1 - erf(x), accurate where erf(x) is near 1.", "erfc([0.0, 3.0])", "[1.0, 2.20905e-05]"),
)
lgamma = unary(
    "Lgamma",
    k.lgamma,
    FLOAT,
    ("lgamma",),
    grad=lambda op, g: multiply(g, digamma(_x(op))),
    doc=("log|Gamma(x)|, element-wise.", "lgamma([1.0, 3.0])", "[0.0, 0.6931472]"),
)
digamma = unary(
    "Digamma",
    k.digamma,
    FLOAT,
    ("digamma",),
    grad=lambda op, g: multiply(g, polygamma(zeros_like(_x(op)) + 1.0, _x(op))),
    doc=("The derivative of lgamma, element-wise.", "digamma([1.0])", "[-0.5772157]"),
)
erfinv = unary(
    "Erfinv",
    k.erfinv,
    FLOAT,
    ("erfinv",),
    grad=lambda op, g: _scaled(op, g, math.sqrt(math.pi) / 2, 1.0),
    doc=("The inverse of erf, element-wise.", "math.erfinv([0.0, 0.5])", "[0.0, 0.4769363]"),
)
ndtri = unary(
    "Ndtri",
    k.ndtri,
    FLOAT,
    ("ndtri",),
    grad=lambda op, g: _scaled(op, g, math.sqrt(2 * math.pi), 0.5),
    doc=(
        "The standard normal quantile (inverse CDF), element-wise.",
        "math.ndtri([0.5, 0.975])",
        "[0.0, 1.959964394569397]",
    ),
)
bessel_i0 = unary(
    "BesselI0",
    k.bessel_i0,
    FLOAT,
    ("bessel_i0",),
    grad=lambda op, g: multiply(g, bessel_i1(_x(op))),
    doc=(
        "The modified Bessel function of order 0, element-wise.",
        "math.bessel_i0([0.0, 1.0])",
        "[1.0, 1.2660658359527588]",
    ),
)
bessel_i0e = unary(
    "BesselI0e",
    k.bessel_i0e,
    FLOAT,
    ("bessel_i0e",),
    grad=lambda op, g: multiply(
        g, subtract(bessel_i1e(_x(op)), multiply(sign(_x(op)), op.outputs[0]))
    ),
    doc=("exp(-|x|) * bessel_i0(x), element-wise.", "math.bessel_i0e([0.0])", "[1.0]"),
)
bessel_i1 = unary(
    "BesselI1",
    k.bessel_i1,
    FLOAT,
    ("bessel_i1",),
    grad=_i1_grad,
    doc=(
        "The modified Bessel function of order 1, element-wise.",
        "math.bessel_i1([0.0, 1.0])",
        "[0.0, 0.5651590824127197]",
    ),
)
bessel_i1e = unary(
    "BesselI1e",
    k.bessel_i1e,
    FLOAT,
    ("bessel_i1e",),
    grad=_i1e_grad,
    doc=("exp(-|x|) * bessel_i1(x), element-wise.", "math.bessel_i1e([0.0])", "[0.0]"),
)
nextafter = binary(
    "NextAfter",
    "nextafter",
    FLOAT,
    ("nextafter",),
    grad=_NO,
    doc=(
        "The next representable value after x1 toward x2.",
        "math.nextafter([1.0], [2.0])",
        "[1.0000001192092896]",
    ),
)

_POLYGAMMA = Elementwise("Polygamma", k.polygamma, ("polygamma",), FLOAT)
_ZETA = Elementwise("Zeta", k.zeta, ("zeta",), FLOAT)
op(
    "Polygamma",
    ("a", "x"),
    (),
    binary_infer(_POLYGAMMA),
    k.polygamma,
    grad=_second_grad(lambda a, x: polygamma(add(a, 1.0), x)),
)
op(
    "Zeta",
    ("x", "q"),
    (),
    binary_infer(_ZETA),
    k.zeta,
    grad=_second_grad(lambda s, q: negative(multiply(s, zeta(add(s, 1.0), q)))),
)


def _igamma_dx(a: Tensor, x: Tensor) -> Tensor:
    """d/dx P(a, x) = x**(a-1) e**-x / Gamma(a)."""
    return exp(subtract(subtract(multiply(subtract(a, 1.0), log(x)), x), lgamma(a)))


def _incomplete_gamma(name: str, kernel: Any, sign: float) -> OpDef:
    """Declare Igamma (``sign`` 1) or Igammac (-1): float inputs, broadcast, d/dx only."""
    row = Elementwise(name, kernel, (name.lower(),), FLOAT)
    d = lambda a, x: multiply(sign, _igamma_dx(a, x))
    return op(name, ("a", "x"), (), binary_infer(row), kernel, grad=_second_grad(d))


_incomplete_gamma("Igamma", k.igamma, 1.0)
_incomplete_gamma("Igammac", k.igammac, -1.0)


def igamma(a: Any, x: Any, name: str | None = None) -> Tensor:
    """The regularised lower incomplete gamma function P(a, x) (a > 0, x >= 0).

    Differentiable in ``x``; its gradient in ``a`` is None here.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.igamma(1.0, [0.0, 1.0])).tolist()  # 1 - exp(-x)
    [0.0, 0.6321205496788025]
    """
    return make1("Igamma", operands(a, x), name=name)


def igammac(a: Any, x: Any, name: str | None = None) -> Tensor:
    """The regularised upper incomplete gamma function Q(a, x) = 1 - P(a, x).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.igammac(1.0, [0.0, 1.0])).tolist()  # exp(-x)
    [1.0, 0.3678794503211975]
    """
    return make1("Igammac", operands(a, x), name=name)


def _betainc_infer(a: Tensor, b: Tensor, x: Tensor, **_: Any) -> Out:
    dt = same_dtype("Betainc", ("a", "b", "x"), a, b, x)
    check_dtype(dt, FLOAT)
    return Out(dt, broadcast(broadcast(a._shape, b._shape), x._shape))


def _betainc_grad(op: Operation, g: Tensor) -> tuple[None, None, Tensor]:
    """d/dx I_x(a, b) = x**(a-1) (1-x)**(b-1) / B(a, b); None for a and b (TF's)."""
    a, b, x = op.inputs
    log_b = subtract(add(lgamma(a), lgamma(b)), lgamma(add(a, b)))
    log_d = add(multiply(subtract(a, 1.0), log(x)), multiply(subtract(b, 1.0), log1p(negative(x))))
    return None, None, sum_to_shape_of(multiply(g, exp(subtract(log_d, log_b))), x)


op("Betainc", ("a", "b", "x"), (), _betainc_infer, k.betainc, grad=_betainc_grad)


def betainc(a: Any, b: Any, x: Any, name: str | None = None) -> Tensor:
    """The regularised incomplete beta function I_x(a, b) (a, b > 0; 0 <= x <= 1).

    Differentiable in ``x``; its gradients in ``a`` and ``b`` are None, as in TF.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.betainc(2.0, 1.0, [0.5, 1.0])).tolist()  # x ** 2
    [0.25, 1.0]
    """
    a, b, x = tensor(a), tensor(b), tensor(x)
    dt = next((t.dtype for t in (x, a, b) if t.dtype.is_floating), dtypes.float32)
    return make1("Betainc", tuple(cast(t, dt) for t in (a, b, x)), name=name)


def polygamma(a: Any, x: Any, name: str | None = None) -> Tensor:
    """The a-th derivative of digamma at x (a a whole number >= 0; x > 0 for a >= 1).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.polygamma(1.0, [1.0])).tolist()  # pi**2 / 6
    [1.644934]
    """
    return make1("Polygamma", operands(a, x), name=name)


def zeta(x: Any, q: Any, name: str | None = None) -> Tensor:
    """Hurwitz's zeta: sum over k >= 0 of (q + k)**-x (x > 1, q > 0).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.zeta([2.0], 1.0)).tolist()  # pi**2 / 6
    [1.644934]
    """
    return make1("Zeta", operands(x, q), name=name)


def erfcinv(x: Any, name: str | None = None) -> Tensor:
    """The inverse of erfc: -ndtri(x / 2) / sqrt(2), for x in [0, 2].

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.math.erfcinv([0.5, 2.0])).tolist()
    [0.476936, -inf]
    """
    with name_scope(name, "erfcinv"):
        x = tensor(x)
        return multiply(ndtri(multiply(x, 0.5)), -1 / math.sqrt(2))


def lbeta(x: Any, name: str | None = None) -> Tensor:
    """log|Beta(x)| over the last axis: sum(lgamma(x)) - lgamma(sum(x)).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     round(float(s.run(fb.math.lbeta([1.0, 2.0]))), 6)  # log(1/2)
    -0.693147
    """
    with name_scope(name, "lbeta"):
        x = tensor(x)
        return subtract(reduce_sum(lgamma(x), -1), lgamma(reduce_sum(x, -1)))


__test__ = doctests(
    erf,
    erfc,
    lgamma,
    digamma,
    erfinv,
    ndtri,
    bessel_i0,
    bessel_i0e,
    bessel_i1,
    bessel_i1e,
    nextafter,
)
