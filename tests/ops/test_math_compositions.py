"""``tf.math``'s composed functions (xlogy, reduce_std, polyval...) against numpy, with gradients."""

from __future__ import annotations

import numpy as np
import pytest

import flowbook as fb
from flowbook.autodiff.gradient_checker import compute_gradient_error

RNG = np.random.default_rng(7)


@pytest.fixture
def sess():
    graph = fb.Graph()
    with graph.as_default(), fb.Session(graph=graph) as s:
        yield s


def _grad_error(f, *values, wrt=0):
    """Finite-difference vs symbolic gradient of ``f`` w.r.t. input ``wrt``, in float64."""
    with fb.Graph().as_default():
        phs = [fb.placeholder(fb.float64, np.shape(v)) for v in values]
        y = f(*phs)
        feed = {p: v for i, (p, v) in enumerate(zip(phs, values)) if i != wrt}
        out_shape = fb.Session().run(y, dict(zip(phs, values))).shape
        x = phs[wrt]
        return compute_gradient_error(
            x, np.shape(values[wrt]), y, out_shape, x_init_value=values[wrt], extra_feed_dict=feed
        )


X0 = np.array([[0.0, 1.5, -2.0], [0.0, 0.5, 3.0]])
Y0 = np.array([[0.0, 2.0, 0.5], [3.0, 0.0, 1.5]])
with np.errstate(divide="ignore"):  # xlogy(0.5, 0) is -inf, xdivy(0.5, 0) inf
    BINARY_CASES = {  # function -> numpy reference on X0, Y0
        fb.math.xlogy: np.where(X0 == 0, 0.0, X0 * np.log(np.where(X0 == 0, 1, Y0))),
        fb.math.xlog1py: np.where(X0 == 0, 0.0, X0 * np.log1p(np.where(X0 == 0, 0, Y0))),
        fb.math.xdivy: np.where(X0 == 0, 0.0, X0 / np.where(X0 == 0, 1, Y0)),
        fb.math.multiply_no_nan: np.where(Y0 == 0, 0.0, X0 * Y0),
    }


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("fn", BINARY_CASES, ids=lambda f: f.__name__)
def test_no_nan_binaries(sess, fn):
    got = sess.run(fn(X0, Y0))
    np.testing.assert_allclose(got, BINARY_CASES[fn], rtol=1e-12)
    assert not np.isnan(got).any()


def test_multiply_no_nan_ignores_inf_and_nan_where_y_is_zero(sess):
    got = sess.run(fb.math.multiply_no_nan([np.inf, np.nan, 2.0], [0.0, 0.0, 3.0]))
    assert got.tolist() == [0.0, 0.0, 6.0]


@pytest.mark.parametrize("fn", BINARY_CASES, ids=lambda f: f.__name__)
@pytest.mark.parametrize("wrt", [0, 1])
def test_no_nan_binaries_gradients(fn, wrt):
    x = RNG.uniform(0.5, 2.0, (2, 3))
    y = RNG.uniform(0.5, 2.0, (3,))
    assert _grad_error(fn, x, y, wrt=wrt) < 1e-6


def test_xlogy_gradient_is_zero_where_x_is_zero(sess):
    x, y = fb.constant([0.0, 2.0]), fb.constant([0.0, 3.0])
    gx, gy = fb.gradients(fb.math.xlogy(x, y), [x, y])
    gx, gy = sess.run([gx, gy])
    np.testing.assert_allclose(gx, [0.0, np.log(3.0)])
    np.testing.assert_allclose(gy, [0.0, 2.0 / 3.0])


def test_reciprocal_no_nan(sess):
    assert sess.run(fb.math.reciprocal_no_nan([0.0, 4.0, -0.5])).tolist() == [0.0, 0.25, -2.0]


@pytest.mark.parametrize("axis,keepdims", [(None, False), (0, False), (1, True), ([0, 1], False)])
def test_variance_std_euclidean(sess, axis, keepdims):
    v = RNG.normal(size=(3, 4))
    ax = tuple(axis) if isinstance(axis, list) else axis
    cases = [
        (fb.math.reduce_variance, np.var(v, ax, keepdims=keepdims)),
        (fb.math.reduce_std, np.std(v, ax, keepdims=keepdims)),
        (fb.math.reduce_euclidean_norm, np.sqrt(np.sum(v * v, ax, keepdims=keepdims))),
    ]
    for fn, ref in cases:
        got = sess.run(fn(v, axis, keepdims))
        np.testing.assert_allclose(got, ref, rtol=1e-12)
        assert got.shape == np.shape(ref)


def test_complex_variance_is_real_magnitude(sess):
    v = np.array([1 + 1j, 3 - 1j])
    np.testing.assert_allclose(sess.run(fb.math.reduce_variance(v)), np.var(v))


@pytest.mark.parametrize("fn", [fb.math.reduce_variance, fb.math.reduce_std])
def test_std_gradient(fn):
    assert _grad_error(lambda a: fn(a, 1), RNG.normal(size=(2, 4))) < 1e-6


def test_accumulate_n(sess):
    assert sess.run(fb.accumulate_n([[1, 2], [3, 4], [5, 6]])).tolist() == [9, 12]
    assert fb.math.accumulate_n is fb.accumulate_n


def test_polyval(sess):
    x = RNG.normal(size=(2, 3))
    coeffs = [2.0, -1.0, 0.5, 3.0]
    np.testing.assert_allclose(sess.run(fb.math.polyval(coeffs, x)), np.polyval(coeffs, x))
    assert sess.run(fb.math.polyval([], x)).tolist() == np.zeros((2, 3)).tolist()
    assert _grad_error(lambda a: fb.math.polyval(coeffs, a), x) < 1e-6


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_cumulative_logsumexp(sess, exclusive, reverse):
    v = RNG.normal(size=(3, 4)) * 3 + 500
    e = np.exp(v - 500)
    e = e[:, ::-1] if reverse else e
    c = np.cumsum(e, 1)
    c = np.concatenate([np.zeros((3, 1)), c[:, :-1]], 1) if exclusive else c
    c = c[:, ::-1] if reverse else c
    with np.errstate(divide="ignore"):
        ref = np.log(c) + 500
    t = fb.math.cumulative_logsumexp(v, axis=1, exclusive=exclusive, reverse=reverse)
    np.testing.assert_allclose(sess.run(t), ref, rtol=1e-12)


def test_cumulative_logsumexp_gradient():
    f = lambda a: fb.math.cumulative_logsumexp(a, axis=1)
    assert _grad_error(f, RNG.normal(size=(2, 4))) < 1e-6


def test_unsorted_segment_sqrt_n(sess):
    data = RNG.normal(size=(4, 2))
    got = sess.run(fb.unsorted_segment_sqrt_n(data, [0, 2, 0, 0], 4))
    ref = np.stack([data[[0, 2, 3]].sum(0) / np.sqrt(3), np.zeros(2), data[1], np.zeros(2)])
    np.testing.assert_allclose(got, ref, rtol=1e-12)
    f = lambda a: fb.unsorted_segment_sqrt_n(a, [0, 2, 0, 0], 4)
    assert _grad_error(f, data) < 1e-6


def test_confusion_matrix(sess):
    labels, preds = [0, 2, 2, 1, 2], [0, 1, 2, 1, 1]
    ref = np.zeros((3, 3), np.int32)
    np.add.at(ref, (labels, preds), 1)
    got = sess.run(fb.confusion_matrix(labels, preds))
    assert got.dtype == np.int32 and got.tolist() == ref.tolist()
    got = sess.run(fb.math.confusion_matrix(labels, preds, 4, [1.0, 2, 3, 4, 5], fb.float32))
    ref = np.zeros((4, 4), np.float32)
    np.add.at(ref, (labels, preds), [1.0, 2, 3, 4, 5])
    assert got.dtype == np.float32 and got.tolist() == ref.tolist()


def test_math_aliases_are_the_existing_functions():
    for name in ["log_softmax", "softmax", "softplus", "softsign", "l2_normalize"]:
        assert getattr(fb.math, name) is getattr(fb.nn, name)
    for name in [
        "count_nonzero",
        "reduce_logsumexp",
        "log_sigmoid",
        "bincount",
        "is_non_decreasing",
        "is_strictly_increasing",
    ]:
        assert getattr(fb.math, name) is getattr(fb, name)
    assert fb.math.zero_fraction is fb.nn.zero_fraction


# ------------------------------------------------------------------ complex
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_real_imag_angle_complex(sess, dtype):
    z = (RNG.normal(size=(2, 3)) + 1j * RNG.normal(size=(2, 3))).astype(dtype)
    part = np.float32 if dtype == np.complex64 else np.float64
    for fn, ref in [(fb.real, z.real), (fb.imag, z.imag), (fb.angle, np.angle(z))]:
        got = sess.run(fn(z))
        assert got.dtype == part
        np.testing.assert_allclose(got, ref, rtol=1e-6)
    got = sess.run(fb.complex(z.real, z.imag))
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, z)
    assert fb.math.real is fb.real and fb.math.complex is fb.complex


def test_real_imag_angle_of_real_tensors(sess):
    x = np.array([-2.0, 0.0, 3.0])
    assert sess.run(fb.real(x)).tolist() == x.tolist()
    assert sess.run(fb.imag(x)).tolist() == [0.0, 0.0, 0.0]
    np.testing.assert_allclose(sess.run(fb.angle(x)), np.angle(x))


def test_complex_broadcasts_and_is_differentiable(sess):
    re, im = fb.constant([1.0, 2.0], fb.float64), fb.constant(3.0, fb.float64)
    z = fb.complex(re, im)
    assert sess.run(z).tolist() == [1 + 3j, 2 + 3j]
    loss = fb.reduce_sum(fb.real(z * z))  # re^2 - im^2
    gre, gim = sess.run(fb.gradients(loss, [re, im]))
    np.testing.assert_allclose(gre, [2.0, 4.0])
    np.testing.assert_allclose(gim, -2 * 3.0 * 2)


def test_angle_gradient(sess):
    x, y = fb.constant([1.0, -0.5], fb.float64), fb.constant([2.0, 1.5], fb.float64)
    a = fb.angle(fb.complex(x, y))  # atan2(y, x)
    gx, gy = sess.run(fb.gradients(a, [x, y]))
    r2 = np.array([1.0, -0.5]) ** 2 + np.array([2.0, 1.5]) ** 2
    np.testing.assert_allclose(gx, -np.array([2.0, 1.5]) / r2)
    np.testing.assert_allclose(gy, np.array([1.0, -0.5]) / r2)


@pytest.mark.parametrize("dim", [-1, 0, 1])
def test_approx_max_min_k_are_exact(sess, dim):
    v = RNG.permutation(24).reshape(2, 3, 4).astype(np.float64)
    for fn, order in [(fb.math.approx_max_k, -1), (fb.math.approx_min_k, 1)]:
        values, indices = sess.run(fn(v, 2, reduction_dimension=dim))
        ref_idx = np.take(np.argsort(order * v, axis=dim, kind="stable"), [0, 1], axis=dim)
        np.testing.assert_array_equal(indices, ref_idx)
        np.testing.assert_array_equal(values, np.take_along_axis(v, ref_idx, axis=dim))
