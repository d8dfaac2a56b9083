"""Special functions (erf, lgamma, digamma, Bessel, ndtri, polygamma...) against references.

The references are independent of the kernels: Python's ``math.erf``,
``math.erfc`` and ``math.lgamma``, bisection on ``math.erf(c)`` for the inverses,
the Bessel power series in 40-digit ``Decimal``, five-point differences of
``math.lgamma`` for digamma and long direct sums for Hurwitz's zeta.
``UNARY_REF``, ``RTOL`` and ``GRAD_DOMAINS`` are merged into the element-wise
tables of ``test_ops_math`` and ``test_gradients_math``.
"""

from __future__ import annotations

import math
from decimal import Decimal, localcontext

import numpy as np
import pytest

import flowbook as fb
from flowbook.autodiff.gradient_checker import compute_gradient_error
from flowbook.framework.registry import NOT_DIFFERENTIABLE, OPS

RNG = np.random.default_rng(11)


def _bisect(f, target: float, lo: float, hi: float) -> float:
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if f(mid) < target else (lo, mid)
    return 0.5 * (lo + hi)


def ref_ndtri(p: float) -> float:
    if p > 0.5:  # erfc's upper tail is exact; the CDF near 1 is not
        return -ref_ndtri(1.0 - p)
    return _bisect(lambda x: 0.5 * math.erfc(-x / math.sqrt(2)), p, -40.0, 40.0)


def ref_erfinv(y: float) -> float:
    return _bisect(math.erf, y, -7.0, 7.0)


def ref_digamma(x: float, h: float = 1e-3) -> float:
    f = math.lgamma
    return (f(x - 2 * h) - 8 * f(x - h) + 8 * f(x + h) - f(x + 2 * h)) / (12 * h)


def ref_zeta(s: float, q: float, n: int = 4000) -> float:
    a = q + n
    return math.fsum((q + k) ** -s for k in range(n)) + a ** (1 - s) / (s - 1) + 0.5 * a**-s


def ref_bessel(x: float, nu: int, scaled: bool = False) -> float:
    """I_nu(x) by its power series in 40-digit decimals (times e**-|x| when scaled)."""
    with localcontext() as ctx:
        ctx.prec = 40
        half = Decimal(abs(x)) / 2
        term = half**nu / math.factorial(nu) if nu else Decimal(1)
        total = term
        for k in range(1, 400):
            term = term * half * half / (k * (k + nu))
            total += term
        if scaled:
            total *= (-Decimal(abs(x))).exp()
        return float(total) * (math.copysign(1, x) if nu else 1)


def _vec(f):
    return lambda a: np.vectorize(f, otypes=[np.float64])(np.asarray(a, np.float64))


# op type -> (reference, (low, high)); merged into test_ops_math.UNARY_REF
UNARY_REF = {
    "Erf": (_vec(math.erf), (-3, 3)),
    "Erfc": (_vec(math.erfc), (-3, 5)),
    "Lgamma": (_vec(math.lgamma), (-2.5, 6)),
    "Digamma": (_vec(ref_digamma), (0.3, 6)),
    "Erfinv": (_vec(ref_erfinv), (-0.95, 0.95)),
    "Ndtri": (_vec(ref_ndtri), (0.01, 0.99)),
    "BesselI0": (_vec(lambda x: ref_bessel(x, 0)), (-4, 4)),
    "BesselI0e": (_vec(lambda x: ref_bessel(x, 0, True)), (-4, 4)),
    "BesselI1": (_vec(lambda x: ref_bessel(x, 1)), (-4, 4)),
    "BesselI1e": (_vec(lambda x: ref_bessel(x, 1, True)), (-4, 4)),
}
# float64 tolerances of the approximations (the others are float64-exact)
RTOL = {"Erf": 3e-7, "Erfc": 3e-7, "Erfinv": 1e-8, "Ndtri": 1e-8, "Digamma": 1e-9}


def _u(lo, hi):
    return lambda s: RNG.uniform(lo, hi, s)


# op type -> values(shape) for the finite-difference gradient check
GRAD_DOMAINS = {
    "Erf": _u(-2, 2),
    "Erfc": _u(-2, 2),
    "Lgamma": _u(0.3, 5),
    "Digamma": _u(0.3, 5),
    "Erfinv": _u(-0.8, 0.8),
    "Ndtri": _u(0.1, 0.9),
    "BesselI0": _u(-3, 3),
    "BesselI0e": _u(0.2, 3),
    "BesselI1": _u(-3, 3),
    "BesselI1e": _u(0.2, 3),
}


@pytest.fixture
def sess():
    graph = fb.Graph()
    with graph.as_default(), fb.Session(graph=graph) as s:
        yield s


def _run(sess, fn, *args):
    return sess.run(fn(*[np.asarray(a, np.float64) for a in args]))


def test_erf_erfc_tails_and_accuracy(sess):
    x = np.linspace(-6, 6, 481)
    np.testing.assert_allclose(_run(sess, fb.erf, x), _vec(math.erf)(x), rtol=2e-7, atol=1e-300)
    np.testing.assert_allclose(_run(sess, fb.erfc, x), _vec(math.erfc)(x), rtol=2e-7)
    tiny = np.array([1e-30, -1e-8])  # relative accuracy near 0 (the series)
    np.testing.assert_allclose(_run(sess, fb.erf, tiny), _vec(math.erf)(tiny), rtol=1e-15)
    assert _run(sess, fb.erfc, [30.0, -30.0]).tolist() == [math.erfc(30.0), 2.0]


def test_lgamma_accuracy_poles_and_negatives(sess):
    x = np.concatenate([np.linspace(0.01, 170, 500), -np.linspace(0.05, 20.95, 200)])
    x = x[x != np.floor(x)]
    np.testing.assert_allclose(
        _run(sess, fb.lgamma, x), _vec(math.lgamma)(x), rtol=1e-13, atol=1e-13
    )
    assert _run(sess, fb.lgamma, [0.0, -3.0, 1.0, 2.0]).tolist() == [np.inf, np.inf, 0.0, 0.0]


def test_digamma_identities(sess):
    euler = 0.5772156649015329
    got = _run(sess, fb.digamma, [1.0, 0.5, 5.0, -0.5, 1e-9])
    harmonic4 = 1 + 1 / 2 + 1 / 3 + 1 / 4
    ref = [-euler, -euler - 2 * math.log(2), harmonic4 - euler, 2 - euler - 2 * math.log(2)]
    np.testing.assert_allclose(got[:4], ref, rtol=1e-12)
    np.testing.assert_allclose(got[4], -1e9 - euler, rtol=1e-13)
    x = RNG.uniform(-5, 30, 50)
    a, b = _run(sess, fb.digamma, x + 1), _run(sess, fb.digamma, x)
    np.testing.assert_allclose(a, b + 1 / x, rtol=1e-12, atol=1e-12)  # the recurrence
    assert np.isnan(_run(sess, fb.digamma, [0.0, -2.0])).all()


def test_ndtri_and_erfinv_accuracy_and_edges(sess):
    p = np.array([1e-300, 1e-20, 1e-5, 0.02, 0.0243, 0.0245, 0.3, 0.5, 0.8, 0.99, 1 - 1e-12])
    np.testing.assert_allclose(
        _run(sess, fb.math.ndtri, p), _vec(ref_ndtri)(p), rtol=2e-9, atol=1e-15
    )
    assert _run(sess, fb.math.ndtri, [0.0, 1.0]).tolist() == [-np.inf, np.inf]
    assert np.isnan(_run(sess, fb.math.ndtri, [-0.1, 1.5])).all()
    y = np.array([-0.999999, -0.5, -1e-12, 1e-12, 0.3, 0.9999])
    np.testing.assert_allclose(_run(sess, fb.math.erfinv, y), _vec(ref_erfinv)(y), rtol=2e-9)
    assert _run(sess, fb.math.erfinv, [-1.0, 1.0]).tolist() == [-np.inf, np.inf]
    c = np.array([1e-10, 0.2, 1.0 + 1e-9, 1.7, 2.0 - 1e-6])
    ref = [_bisect(lambda v: -math.erfc(v), -t, -7.0, 7.0) for t in c]  # erfc decreases
    np.testing.assert_allclose(_run(sess, fb.math.erfcinv, c), ref, rtol=2e-9, atol=1e-15)
    x = RNG.uniform(0.2, 1.8, (2, 3))
    assert _grad_error(fb.math.erfcinv, x) < 1e-6


@pytest.mark.parametrize(
    "name,nu,scaled",
    [
        ("bessel_i0", 0, False),
        ("bessel_i0e", 0, True),
        ("bessel_i1", 1, False),
        ("bessel_i1e", 1, True),
    ],
)
def test_bessel_accuracy_across_the_switch_to_the_asymptotic_form(sess, name, nu, scaled):
    x = np.array([0.0, 0.1, -1.0, 2.5, 10.0, -29.99, 30.0, 45.0, 80.0, -100.0])
    ref = [ref_bessel(v, nu, scaled) for v in x]
    np.testing.assert_allclose(_run(sess, getattr(fb.math, name), x), ref, rtol=1e-13)


def test_float32_results_are_float32(sess):
    for fn in [fb.erf, fb.lgamma, fb.digamma, fb.math.ndtri, fb.math.bessel_i1e]:
        got = sess.run(fn(np.array([0.25, 0.75], np.float32)))
        assert got.dtype == np.float32


def test_zeta_and_polygamma(sess):
    s, q = np.array([2.0, 3.0, 4.5, 2.0]), np.array([1.0, 0.5, 3.0, 20.0])
    ref = [ref_zeta(a, b) for a, b in zip(s, q)]
    np.testing.assert_allclose(sess.run(fb.zeta(s, q)), ref, rtol=1e-10)
    n, x = np.array([0.0, 1.0, 2.0, 3.0]), np.array([1.0, 1.0, 0.5, 2.0])
    ref = [-0.5772156649015329, math.pi**2 / 6, -2 * ref_zeta(3, 0.5), 6 * ref_zeta(4, 2.0)]
    np.testing.assert_allclose(sess.run(fb.polygamma(n, x)), ref, rtol=1e-10)
    assert np.isnan(sess.run(fb.polygamma([0.5, -1.0], [1.0, 1.0]))).all()
    assert np.isnan(sess.run(fb.zeta([1.0, 2.0], [1.0, -1.0]))).all()
    assert fb.math.polygamma is fb.polygamma and fb.math.zeta is fb.zeta


def _grad_error(f, x, extra=None):
    with fb.Graph().as_default():
        ph = fb.placeholder(fb.float64, x.shape)
        y = f(ph)
        return compute_gradient_error(ph, x.shape, y, x.shape, x_init_value=x)


def test_second_derivatives_polygamma_zeta_gradients():
    x = RNG.uniform(0.5, 3, (2, 3))
    assert _grad_error(lambda a: fb.digamma(a), x) < 1e-6  # via polygamma(1, x)
    assert _grad_error(lambda a: fb.polygamma(2.0, a), x) < 1e-6
    assert _grad_error(lambda a: fb.zeta(3.0, a), x) < 1e-6
    with fb.Graph().as_default():
        a, b = fb.constant([2.0], fb.float64), fb.constant([1.5], fb.float64)
        assert fb.gradients(fb.zeta(a, b), [a])[0] is None
        assert fb.gradients(fb.polygamma(a, b), [a])[0] is None


def test_bessel_i1_gradients_at_zero(sess):
    x = fb.constant([0.0, 1.0], fb.float64)
    for fn in (fb.math.bessel_i1, fb.math.bessel_i1e):
        (g,) = fb.gradients(fn(x), [x])
        assert sess.run(g)[0] == 0.5


def test_lbeta(sess):
    x = np.array([[1.0, 2.0, 3.5], [0.5, 0.5, 4.0]])
    ref = [sum(map(math.lgamma, r)) - math.lgamma(sum(r)) for r in x]
    np.testing.assert_allclose(sess.run(fb.math.lbeta(x)), ref, rtol=1e-12)
    assert fb.lbeta is fb.math.lbeta


def test_nextafter(sess):
    got = sess.run(fb.math.nextafter(np.array([1.0, 0.0], np.float32), [2.0, -1.0]))
    assert got.tolist() == np.nextafter(np.float32([1.0, 0.0]), np.float32([2, -1])).tolist()
    assert OPS["NextAfter"].grad is NOT_DIFFERENTIABLE


def test_tf1_top_level_names():
    for name in ["erf", "erfc", "lgamma", "digamma", "polygamma", "zeta", "lbeta"]:
        assert getattr(fb, name) is getattr(fb.math, name)


def ref_igammac_int(n: int, x: float) -> float:
    """Q(n, x) for a whole n: e**-x * sum_{k<n} x**k / k!, each term in log space."""
    return math.fsum(math.exp(-x + k * math.log(x) - math.lgamma(k + 1)) for k in range(n))


def test_igamma_igammac(sess):
    a = np.array([1.0, 3.0, 50.0, 50.0, 1000.0, 1000.0, 7.0])
    x = np.array([2.0, 20.0, 45.0, 60.0, 950.0, 1060.0, 0.5])
    q = [ref_igammac_int(int(n), v) for n, v in zip(a, x)]
    np.testing.assert_allclose(sess.run(fb.igammac(a, x)), q, rtol=1e-11)
    np.testing.assert_allclose(sess.run(fb.igamma(a, x)), 1 - np.array(q), rtol=1e-11)
    half = np.array([0.01, 0.3, 4.0, 30.0])  # P(1/2, x) = erf(sqrt(x))
    ref = [math.erf(math.sqrt(v)) for v in half]
    np.testing.assert_allclose(sess.run(fb.math.igamma(0.5, fb.constant(half))), ref, rtol=1e-13)
    assert _run(sess, fb.igamma, [2.0, 2.0], [0.0, np.inf]).tolist() == [0.0, 1.0]
    assert np.isnan(_run(sess, fb.igammac, [-1.0, 2.0], [1.0, -1.0])).all()


@pytest.mark.parametrize("fn", [fb.igamma, fb.igammac], ids=["igamma", "igammac"])
def test_igamma_gradients(fn):
    x = RNG.uniform(0.5, 6, (2, 3))
    assert _grad_error(lambda t: fn(2.5, t), x) < 1e-6
    with fb.Graph().as_default():
        a = fb.constant([2.0], fb.float64)
        assert fb.gradients(fn(a, fb.constant([1.0], fb.float64)), [a])[0] is None


def ref_betainc_int(a: int, b: int, x: float) -> float:
    """I_x(a, b) for whole a, b: the binomial tail sum_{j>=a} C(n, j) x**j (1-x)**(n-j)."""
    n = a + b - 1
    return math.fsum(math.comb(n, j) * x**j * (1 - x) ** (n - j) for j in range(a, n + 1))


def test_betainc(sess):
    a = np.array([1.0, 2.0, 5.0, 30.0, 200.0, 3.0])
    b = np.array([3.0, 1.0, 7.0, 40.0, 150.0, 9.0])
    x = np.array([0.3, 0.6, 0.5, 0.45, 0.56, 0.05])
    ref = [ref_betainc_int(int(p), int(q), v) for p, q, v in zip(a, b, x)]
    np.testing.assert_allclose(_run(sess, fb.betainc, a, b, x), ref, rtol=1e-11)
    half = np.array([0.2, 0.7])  # I_x(1/2, 1/2) = 2/pi asin(sqrt(x))
    ref = [2 / math.pi * math.asin(math.sqrt(v)) for v in half]
    np.testing.assert_allclose(
        _run(sess, fb.betainc, [0.5, 0.5], [0.5, 0.5], half), ref, rtol=1e-12
    )
    got = _run(sess, fb.betainc, [2.0] * 4, [3.0] * 4, [0.0, 1.0, -0.1, 1.5])
    assert got[:2].tolist() == [0.0, 1.0] and np.isnan(got[2:]).all()
    assert sess.run(fb.math.betainc(2.0, 1.0, np.full((2, 1), 0.5))).shape == (2, 1)


def test_betainc_gradient():
    x = RNG.uniform(0.1, 0.9, (2, 3))
    assert _grad_error(lambda t: fb.betainc(2.5, 1.5, t), x) < 1e-6
    with fb.Graph().as_default():
        a = fb.constant([2.0], fb.float64)
        g = fb.gradients(fb.betainc(a, a, fb.constant([0.5], fb.float64)), [a])
        assert g == [None]
