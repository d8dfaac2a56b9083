"""The ``tf.nn`` long tail: activations, normalisations and losses TF1 keeps in nn_impl.

Values are checked against numpy references written here from TensorFlow's
documented formulas (float32 round-off), gradients against central finite
differences in float64 (the table at the end).
"""

from __future__ import annotations

import numpy as np
import pytest

import flowbook as fb
from flowbook.autodiff.gradient_checker import compute_gradient_error

RNG = np.random.default_rng(11)
F64 = fb.float64


def run(t, feed=None):
    with fb.Session() as s:
        return s.run(t, feed)


def f32(*shape, lo=-2.0, hi=2.0):
    return RNG.uniform(lo, hi, shape).astype(np.float32)


# ------------------------------------------------------------ activations
def test_leaky_relu_values_dtypes_and_default_alpha():
    x = f32(3, 4)
    np.testing.assert_allclose(run(fb.nn.leaky_relu(x)), np.where(x > 0, x, 0.2 * x), rtol=1e-6)
    y = fb.nn.leaky_relu(x, alpha=0.01)
    assert y.op.type == "LeakyRelu" and y.op.attrs["alpha"] == np.float32(0.01)  # float32 attr
    np.testing.assert_allclose(run(y), np.where(x > 0, x, np.float32(0.01) * x), rtol=1e-6)
    yi = fb.nn.leaky_relu([-2, 3])  # ints are cast to float32, as TF does
    assert yi.dtype == fb.float32 and run(yi).tolist() == pytest.approx([-0.4, 3.0])


def test_crelu_relu_layer_xw_plus_b():
    x, w, b = f32(3, 4), f32(4, 5), f32(5)
    c = fb.nn.crelu(x)
    assert c.shape.as_list() == [3, 8]
    np.testing.assert_allclose(run(c), np.maximum(np.concatenate([x, -x], -1), 0))
    c0 = fb.nn.crelu(x, axis=0)
    np.testing.assert_allclose(run(c0), np.maximum(np.concatenate([x, -x], 0), 0))
    np.testing.assert_allclose(run(fb.nn.xw_plus_b(x, w, b)), x @ w + b, rtol=1e-5)
    np.testing.assert_allclose(
        run(fb.nn.relu_layer(x, w, b)), np.maximum(x @ w + b, 0), rtol=1e-5, atol=1e-6
    )
    assert fb.nn.xw_plus_b(x, w, b, name="dense").op.name == "dense"


# ------------------------------------------------------------ moments and batch norm
@pytest.mark.parametrize(
    "shape,axes,keep",
    [((4, 3), [0], False), ((4, 3), [0, 1], False), ((2, 3, 5), [0, 2], True), ((6,), [0], True)],
)
def test_moments_match_numpy(shape, axes, keep):
    x = f32(*shape) * 3 + 1
    m, v = fb.nn.moments(x, axes, keep_dims=keep)
    want_m = x.astype(np.float64).mean(tuple(axes), keepdims=keep)
    want_v = x.astype(np.float64).var(tuple(axes), keepdims=keep)
    assert m.shape.as_list() == list(want_m.shape) and v.shape.as_list() == list(want_v.shape)
    got_m, got_v = run([m, v])
    np.testing.assert_allclose(got_m, want_m, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_v, want_v, rtol=1e-5, atol=1e-6)


def test_moments_half_computes_in_float32_and_ignores_shift():
    x = (f32(8, 3) * 100).astype(np.float16)
    m, v = fb.nn.moments(x, [0], shift=123.0, keepdims=True)
    assert m.dtype == fb.float16 and v.dtype == fb.float16
    got_m, got_v = run([m, v])
    np.testing.assert_allclose(got_m, x.astype(np.float64).mean(0, keepdims=True), rtol=1e-3)
    np.testing.assert_allclose(got_v, x.astype(np.float64).var(0, keepdims=True), rtol=1e-3)


def np_batch_norm(x, mean, var, offset, scale, eps):
    y = (x - mean) / np.sqrt(var + eps)
    return (y if scale is None else y * scale) + (0 if offset is None else offset)


@pytest.mark.parametrize("with_offset", [True, False])
@pytest.mark.parametrize("with_scale", [True, False])
def test_batch_normalization_matches_formula(with_offset, with_scale):
    x, mean, var = f32(5, 3), f32(3), f32(3, lo=0.1, hi=2.0)
    offset = f32(3) if with_offset else None
    scale = f32(3) if with_scale else None
    y = fb.nn.batch_normalization(x, mean, var, offset, scale, 1e-3)
    want = np_batch_norm(x, mean, var, offset, scale, 1e-3)
    np.testing.assert_allclose(run(y), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
def test_fused_batch_norm_training_and_inference(data_format):
    x = f32(2, 3, 4, 5) * 2 + 1
    axes, ch = ((0, 1, 2), 3) if data_format == "NHWC" else ((0, 2, 3), 1)
    vec = [1, 1, 1, -1] if data_format == "NHWC" else [1, -1, 1, 1]
    c = x.shape[ch]
    scale, offset = f32(c), f32(c)
    y, m, v = fb.nn.fused_batch_norm(x, scale, offset, epsilon=1e-3, data_format=data_format)
    mean, var = x.mean(axes), x.var(axes)
    n = x.size / c
    want = np_batch_norm(x, *(a.reshape(vec) for a in (mean, var, offset, scale)), 1e-3)
    got_y, got_m, got_v = run([y, m, v])
    np.testing.assert_allclose(got_y, want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got_m, mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_v, var * n / (n - 1), rtol=1e-5)  # Bessel's correction
    mean2, var2 = f32(c), f32(c, lo=0.5, hi=1.5)
    y2, m2, v2 = fb.nn.fused_batch_norm(
        x, scale, offset, mean2, var2, epsilon=0.0, data_format=data_format, is_training=False
    )
    want2 = np_batch_norm(x, *(a.reshape(vec) for a in (mean2, var2, offset, scale)), 1.001e-5)
    got2 = run([y2, m2, v2])
    np.testing.assert_allclose(got2[0], want2, rtol=1e-4, atol=1e-4)  # epsilon raised to 1.001e-5
    np.testing.assert_array_equal(got2[1], mean2)
    np.testing.assert_array_equal(got2[2], var2)


def test_fused_batch_norm_errors():
    x = fb.zeros([1, 2, 2, 3])
    with pytest.raises(ValueError, match="must be given"):
        fb.nn.fused_batch_norm(x, [1.0] * 3, [0.0] * 3, is_training=False)
    with pytest.raises(ValueError, match="4-D"):
        fb.nn.fused_batch_norm(fb.zeros([2, 3]), [1.0] * 3, [0.0] * 3)
    with pytest.raises(ValueError, match="data_format"):
        fb.nn.fused_batch_norm(x, [1.0] * 3, [0.0] * 3, data_format="NDHWC")


# ------------------------------------------------------------ LRN and l2_normalize
def np_lrn(x, r, bias, alpha, beta):
    """TF's documented formula, one depth index at a time."""
    x = x.astype(np.float64)
    out = np.empty_like(x)
    depth = x.shape[-1]
    for d in range(depth):
        sqr_sum = (x[..., max(d - r, 0) : d + r + 1] ** 2).sum(-1)
        out[..., d] = x[..., d] / (bias + alpha * sqr_sum) ** beta
    return out


@pytest.mark.parametrize(
    "r,bias,alpha,beta",
    [(5, 1.0, 1.0, 0.5), (2, 2.0, 1e-4, 0.75), (0, 1.0, 0.5, 1.0), (9, 0.5, 2.0, 0.3)],
)
def test_lrn_matches_formula(r, bias, alpha, beta):
    x = f32(2, 3, 4, 7)
    y = fb.nn.local_response_normalization(x, r, bias, alpha, beta)
    assert y.op.type == "LRN" and y.shape.as_list() == [2, 3, 4, 7]
    np.testing.assert_allclose(run(y), np_lrn(x, r, bias, alpha, beta), rtol=1e-5)
    h = fb.nn.lrn(x.astype(np.float16), r, bias, alpha, beta)
    np.testing.assert_allclose(run(h), np_lrn(x, r, bias, alpha, beta), rtol=2e-3, atol=2e-3)


def test_lrn_defaults_and_errors():
    x = f32(1, 2, 2, 12)
    np.testing.assert_allclose(run(fb.nn.lrn(x)), np_lrn(x, 5, 1.0, 1.0, 0.5), rtol=1e-5)
    with pytest.raises(ValueError, match="4-D"):
        fb.nn.lrn(fb.zeros([2, 3]))
    with pytest.raises(TypeError, match="int32"):
        fb.nn.lrn(fb.zeros([1, 1, 1, 2], fb.int32))


@pytest.mark.parametrize("axis", [0, 1, [0, 1], None])
def test_l2_normalize_matches_formula(axis):
    x = f32(3, 4)
    ax = tuple(axis) if isinstance(axis, list) else axis
    want = x / np.sqrt(np.maximum((x.astype(np.float64) ** 2).sum(ax, keepdims=True), 1e-12))
    np.testing.assert_allclose(run(fb.nn.l2_normalize(x, axis)), want, rtol=1e-5)
    if axis == 1:
        np.testing.assert_allclose(run(fb.nn.l2_normalize(x, dim=1)), want, rtol=1e-5)


def test_l2_normalize_of_zeros_is_zeros():
    assert run(fb.nn.l2_normalize(np.zeros((2, 2), np.float32), 1)).tolist() == [[0, 0], [0, 0]]
    with pytest.raises(ValueError, match="both"):
        fb.nn.l2_normalize([1.0], axis=0, dim=0)


# ------------------------------------------------------------ losses composed as TF1 does
def test_weighted_cross_entropy_matches_its_definition():
    x, z = f32(4, 5) * 3, RNG.uniform(0, 1, (4, 5)).astype(np.float32)
    q = 2.5
    sig = 1 / (1 + np.exp(-x.astype(np.float64)))
    want = q * z * -np.log(sig) + (1 - z) * -np.log(1 - sig)  # TF's documented definition
    got = run(fb.nn.weighted_cross_entropy_with_logits(targets=z, logits=x, pos_weight=q))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    big = run(fb.nn.weighted_cross_entropy_with_logits([1.0, 0.0], [-1000.0, 1000.0], 2.0))
    assert big.tolist() == pytest.approx([2000.0, 1000.0])  # stable: no inf or nan
    with pytest.raises(ValueError, match="same shape"):
        fb.nn.weighted_cross_entropy_with_logits(fb.zeros([2]), fb.zeros([3]), 1.0)


@pytest.mark.parametrize("full", [False, True])
def test_log_poisson_loss_matches_formula(full):
    c = f32(3, 4)
    z = RNG.integers(0, 6, (3, 4)).astype(np.float32)
    want = np.exp(c.astype(np.float64)) - z * c
    if full:
        zs = np.where(z > 0, z, 1.0)
        stirling = zs * np.log(zs) - zs + 0.5 * np.log(2 * np.pi * zs)
        want = want + np.where(z <= 1, 0.0, stirling)
    got = run(fb.nn.log_poisson_loss(z, c, compute_full_loss=full))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------ gradients vs finite differences
def _away_from_zero(shape):
    return RNG.uniform(0.2, 2.0, shape) * RNG.choice([-1.0, 1.0], shape)


# name -> (function of placeholders, input values, index to differentiate)
GRADIENT_CASES = {
    "leaky_relu": (lambda x: fb.nn.leaky_relu(x, 0.3), [_away_from_zero((3, 4))], 0),
    "crelu": (fb.nn.crelu, [_away_from_zero((3, 4))], 0),
    "xw_plus_b/w": (fb.nn.xw_plus_b, [RNG.standard_normal((3, 4)), RNG.standard_normal((4, 2)),
                                      RNG.standard_normal(2)], 1),
    "relu_layer/b": (fb.nn.relu_layer, [RNG.standard_normal((3, 4)), RNG.standard_normal((4, 2)),
                                        RNG.uniform(3, 4, 2)], 2),
    "moments/mean": (lambda x: fb.nn.moments(x, [0, 2])[0], [RNG.standard_normal((3, 2, 4))], 0),
    "moments/variance": (lambda x: fb.nn.moments(x, [1])[1], [RNG.standard_normal((3, 4))], 0),
    "batch_norm/x": (lambda x, m, v, o, s: fb.nn.batch_normalization(x, m, v, o, s, 0.01),
                     [RNG.standard_normal((4, 3)), RNG.standard_normal(3), RNG.uniform(0.5, 1, 3),
                      RNG.standard_normal(3), RNG.standard_normal(3)], 0),
    "batch_norm/variance": (lambda x, m, v, o, s: fb.nn.batch_normalization(x, m, v, o, s, 0.01),
                            [RNG.standard_normal((4, 3)), RNG.standard_normal(3),
                             RNG.uniform(0.5, 1, 3), RNG.standard_normal(3),
                             RNG.standard_normal(3)], 2),
    "batch_norm/scale": (lambda x, s: fb.nn.batch_normalization(x, 0.5, 2.0, None, s, 0.0),
                         [RNG.standard_normal((4, 3)), RNG.standard_normal(3)], 1),
    "fused_batch_norm/x": (lambda x, s: fb.nn.fused_batch_norm(x, s, [0.1, 0.2])[0],
                           [RNG.standard_normal((2, 2, 3, 2)), RNG.standard_normal(2)], 0),
    "fused_batch_norm/scale": (lambda x, s: fb.nn.fused_batch_norm(x, s, [0.1, 0.2])[0],
                               [RNG.standard_normal((2, 2, 3, 2)), RNG.standard_normal(2)], 1),
    "lrn": (lambda x: fb.nn.lrn(x, 2, 1.5, 0.7, 0.75), [RNG.standard_normal((2, 2, 3, 6))], 0),
    "lrn/wide": (lambda x: fb.nn.lrn(x, 8, 0.5, 2.0, 0.4), [RNG.standard_normal((1, 2, 2, 4))], 0),
    "l2_normalize": (lambda x: fb.nn.l2_normalize(x, 1), [RNG.standard_normal((3, 4))], 0),
    "weighted_xent/logits": (
        lambda x, z: fb.nn.weighted_cross_entropy_with_logits(z, x, 3.0),
        [RNG.standard_normal((3, 4)) * 3, RNG.uniform(0, 1, (3, 4))], 0),
    "log_poisson/full": (lambda c, z: fb.nn.log_poisson_loss(z, c, compute_full_loss=True),
                         [RNG.standard_normal((3, 4)), RNG.uniform(0, 4, (3, 4))], 0),
}  # fmt: skip


@pytest.mark.parametrize("case", GRADIENT_CASES, ids=str)
def test_gradient_matches_finite_differences(case):
    fn, values, wrt = GRADIENT_CASES[case]
    phs = [fb.placeholder(F64, v.shape) for v in values]
    y = fn(*phs)
    feed = {p: v for i, (p, v) in enumerate(zip(phs, values)) if i != wrt}
    shape = run(y, {**feed, phs[wrt]: values[wrt]}).shape
    err = compute_gradient_error(
        phs[wrt], values[wrt].shape, y, shape, values[wrt], extra_feed_dict=feed
    )
    assert err < 1e-6, f"{case}: {err}"
