"""Convolution, pooling and spatial ops beyond the tables, against slow loop references.

Depthwise, dilated (atrous), 1-D and separable convolutions, dilated pools,
the argmax pool's flattened indices, the space/batch/depth moves and the
small statistics helpers; then the errors (NCHW refused by name, bad blocks).
Gradients are in the finite-difference tables of test_gradients_array.py
and test_nn_ops.py.
"""

from __future__ import annotations

import numpy as np
import pytest

import flowbook as fb
from tests.ops.test_nn_ops import ref_conv2d, ref_pads, ref_pool

RNG = np.random.default_rng(16)


def run(t, feed=None):
    with fb.Session() as s:
        return s.run(t, feed)


def ref_depthwise(x, f, strides, padding):
    """out[..., c * M + m] = sum over the window of x[..., c] * f[:, :, c, m]."""
    n, h, w, c = x.shape
    kh, kw, _, m = f.shape
    oh, pt, _ = ref_pads(h, kh, strides[0], padding)
    ow, pl, _ = ref_pads(w, kw, strides[1], padding)
    out = np.zeros((n, oh, ow, c * m))
    for i in range(oh):
        for j in range(ow):
            for di in range(kh):
                for dj in range(kw):
                    r, q = i * strides[0] + di - pt, j * strides[1] + dj - pl
                    if 0 <= r < h and 0 <= q < w:
                        for ch in range(c):
                            out[:, i, j, ch * m : ch * m + m] += (
                                x[:, r, q, ch, None] * f[di, dj, ch]
                            )
    return out


def dilate(f, rate):
    """The filter with ``rate - 1`` zeros between its taps (what atrous conv means)."""
    kh, kw = f.shape[:2]
    out = np.zeros(((kh - 1) * rate + 1, (kw - 1) * rate + 1, *f.shape[2:]))
    out[::rate, ::rate] = f
    return out


# ------------------------------------------------------------ convolutions
DEPTHWISE = [
    ((2, 7, 6, 3), (3, 3, 3, 2), (1, 1), "SAME"),
    ((2, 7, 6, 3), (3, 2, 3, 1), (2, 2), "VALID"),
    ((1, 5, 5, 2), (2, 3, 2, 3), (2, 1), "SAME"),
]


@pytest.mark.parametrize("xs,fs,st,padding", DEPTHWISE)
def test_depthwise_matches_reference(xs, fs, st, padding):
    x, f = RNG.standard_normal(xs), RNG.standard_normal(fs)
    y = fb.nn.depthwise_conv2d(x, f, [1, *st, 1], padding)
    np.testing.assert_allclose(run(y), ref_depthwise(x, f, st, padding), atol=1e-10)
    assert y.shape.as_list() == list(ref_depthwise(x, f, st, padding).shape)


@pytest.mark.parametrize("rate,padding", [(2, "SAME"), (2, "VALID"), (3, "SAME"), (1, "SAME")])
def test_atrous_conv2d_is_conv_with_a_dilated_filter(rate, padding):
    x, f = RNG.standard_normal((2, 9, 8, 2)), RNG.standard_normal((3, 2, 2, 4))
    y = fb.nn.atrous_conv2d(x, f, rate, padding)
    want = ref_conv2d(x, dilate(f, rate), (1, 1), padding)
    assert y.shape.as_list() == list(want.shape)
    np.testing.assert_allclose(run(y), want, atol=1e-10)
    # unknown spatial dims take the dynamic paddings path
    ph = fb.placeholder(fb.float64, [None, None, None, 2])
    np.testing.assert_allclose(
        run(fb.nn.atrous_conv2d(ph, f, rate, padding), {ph: x}), want, atol=1e-10
    )


def test_depthwise_rate_and_separable_match_references():
    x, f = RNG.standard_normal((1, 8, 7, 3)), RNG.standard_normal((2, 3, 3, 2))
    p = RNG.standard_normal((1, 1, 6, 4))
    d = fb.nn.depthwise_conv2d(x, f, [1, 1, 1, 1], "SAME", rate=[2, 2])
    want = ref_depthwise(x, dilate(f, 2), (1, 1), "SAME")
    np.testing.assert_allclose(run(d), want, atol=1e-10)
    s = fb.nn.separable_conv2d(x, f, p, [1, 1, 1, 1], "SAME", rate=[2, 2])
    np.testing.assert_allclose(run(s), want @ p[0, 0], atol=1e-10)


@pytest.mark.parametrize("stride,padding,dil", [(1, "SAME", 1), (2, "VALID", 1), (1, "SAME", 2)])
def test_conv1d_and_convolution_match_reference(stride, padding, dil):
    x, f = RNG.standard_normal((2, 11, 3)), RNG.standard_normal((3, 3, 5))
    want = ref_conv2d(x[:, None], dilate(f[None], dil)[:1], (1, stride), padding)[:, 0]
    got = fb.nn.conv1d(x, f, stride, padding, dilations=dil)
    np.testing.assert_allclose(run(got), want, atol=1e-10)
    c = fb.nn.convolution(x, f, padding, strides=[stride], dilation_rate=[dil])
    np.testing.assert_allclose(run(c), want, atol=1e-10)


def test_transposes_are_adjoints():
    """<conv(x), dy> == <x, conv_transpose(dy)> for conv1d and atrous_conv2d."""
    x, f = RNG.standard_normal((2, 10, 3)), RNG.standard_normal((3, 3, 4))
    dy = RNG.standard_normal((2, 5, 4))
    y = run(fb.nn.conv1d(x, f, 2, "SAME"))
    dx = run(fb.nn.conv1d_transpose(dy, f, [2, 10, 3], 2))
    np.testing.assert_allclose(np.sum(y * dy), np.sum(x * dx), rtol=1e-10)
    for padding in ("SAME", "VALID"):
        x, f = RNG.standard_normal((1, 9, 7, 2)), RNG.standard_normal((3, 3, 2, 3))
        y = run(fb.nn.atrous_conv2d(x, f, 2, padding))
        dy = RNG.standard_normal(y.shape)
        dx = run(fb.nn.atrous_conv2d_transpose(dy, f, list(x.shape), 2, padding))
        np.testing.assert_allclose(np.sum(y * dy), np.sum(x * dx), rtol=1e-10)


# ------------------------------------------------------------ pools
def test_pool_names_and_dilated_pool_match_reference():
    x = RNG.standard_normal((2, 7, 6, 3))
    for fn, mode in ((fb.nn.max_pool2d, "max"), (fb.nn.avg_pool_v2, "avg")):
        want = ref_pool(x, (3, 2), (2, 1), "SAME", mode)
        np.testing.assert_allclose(run(fn(x, [3, 2], [2, 1], "SAME")), want, atol=1e-12)
    x1 = x[:, 0]
    want = ref_pool(x1[:, None], (1, 2), (1, 2), "VALID", "max")[:, 0]
    np.testing.assert_allclose(run(fb.nn.max_pool1d(x1, 2, 2, "VALID")), want)
    np.testing.assert_allclose(run(fb.nn.max_pool_v2(x1, 2, 2, "VALID")), want)
    want = ref_pool(x1[:, None], (1, 3), (1, 1), "SAME", "avg")[:, 0]
    np.testing.assert_allclose(run(fb.nn.avg_pool1d(x1, 3, 1, "SAME")), want, atol=1e-12)
    # VALID dilated max pool: windows over every second cell
    got = run(fb.nn.pool(x, [2, 2], "MAX", "VALID", dilation_rate=[2, 2]))
    want = np.maximum.reduce([x[:, i : i + 5, j : j + 4] for i in (0, 2) for j in (0, 2)])
    np.testing.assert_allclose(got, want)


@pytest.mark.parametrize("padding,batch_index", [("SAME", False), ("VALID", True)])
def test_max_pool_with_argmax_flattens_like_tf(padding, batch_index):
    x = RNG.standard_normal((2, 5, 4, 3))
    y, arg = fb.nn.max_pool_with_argmax(
        x, [1, 2, 3, 1], [1, 2, 1, 1], padding, include_batch_in_index=batch_index
    )
    yv, av = run([y, arg])
    assert arg.dtype == fb.int64 and av.dtype == np.int64
    np.testing.assert_allclose(yv, ref_pool(x, (2, 3), (2, 1), padding, "max"))
    flat = x.ravel() if batch_index else x.reshape(2, -1)
    for b in range(2):
        picked = flat[av[b]] if batch_index else flat[b][av[b]]
        np.testing.assert_array_equal(picked, yv[b])  # each index points at its maximum
    if batch_index:
        assert av[1].min() >= 5 * 4 * 3


# ------------------------------------------------------------ spatial moves
def ref_space_to_batch(x, block, pads):
    p = np.pad(x, [(0, 0), *pads, (0, 0)])
    out = []
    for i in range(block[0]):
        for j in range(block[1]):
            out.append(p[:, i :: block[0], j :: block[1]])  # offset-major, then batch
    return np.concatenate(out, 0)


def test_space_to_batch_and_back():
    x = RNG.standard_normal((2, 4, 5, 3))
    pads = [[0, 2], [1, 0]]
    y = fb.space_to_batch_nd(x, [3, 2], pads)
    want = ref_space_to_batch(x, (3, 2), pads)
    assert y.shape.as_list() == list(want.shape)
    np.testing.assert_array_equal(run(y), want)
    np.testing.assert_array_equal(run(fb.batch_to_space_nd(want, [3, 2], pads)), x)
    sq = fb.space_to_batch(x[:, :4, :4], [[0, 0], [0, 0]], block_size=2)
    np.testing.assert_array_equal(run(sq), ref_space_to_batch(x[:, :4, :4], (2, 2), [[0, 0]] * 2))
    np.testing.assert_array_equal(run(fb.batch_to_space(sq, [[0, 0], [0, 0]], 2)), x[:, :4, :4])
    assert fb.nn.space_to_batch is fb.space_to_batch


def test_space_to_depth_and_back_in_dcr_order():
    x = RNG.standard_normal((2, 4, 6, 3))
    y = run(fb.nn.space_to_depth(x, 2))
    for i in range(2):
        for j in range(2):
            k = (i * 2 + j) * 3
            np.testing.assert_array_equal(y[..., k : k + 3], x[:, i::2, j::2])
    np.testing.assert_array_equal(run(fb.nn.depth_to_space(y, 2)), x)


ERRORS = [
    (lambda: fb.nn.space_to_depth(np.zeros((1, 3, 4, 1)), 2), "not divisible by block_size"),
    (lambda: fb.nn.depth_to_space(np.zeros((1, 2, 2, 3)), 2), "not divisible"),
    (lambda: fb.nn.space_to_depth(np.zeros((1, 4, 4, 1)), 2, data_format="NCHW"), "SpaceToDepth"),
    (lambda: fb.space_to_batch_nd(np.zeros((1, 5, 4, 1)), [2, 2], [[0, 0]] * 2), "divisible"),
    (lambda: fb.batch_to_space_nd(np.zeros((3, 2, 2, 1)), [2, 1], [[0, 0]] * 2), "divisible"),
    (
        lambda: fb.nn.depthwise_conv2d_native(
            np.zeros((1, 4, 4, 2)), np.zeros((2, 2, 2, 1)), [1, 1, 1, 1], "SAME", "NCHW"
        ),
        "DepthwiseConv2dNative: data_format",
    ),
    (
        lambda: fb.nn.depthwise_conv2d(
            np.zeros((1, 4, 4, 2)), np.zeros((2, 2, 3, 1)), [1, 1, 1, 1], "SAME"
        ),
        "input depth 2 does not match",
    ),
    (
        lambda: fb.nn.conv1d(
            np.zeros((1, 4, 2)), np.zeros((2, 2, 1)), 1, "SAME", data_format="NCW"
        ),
        "conv1d",
    ),
    (lambda: fb.nn.pool(np.zeros((1, 4, 4, 1)), [2, 2], "MIN", "SAME"), "pooling_type"),
]


@pytest.mark.parametrize("build,match", ERRORS)
def test_errors_name_the_op_and_values(build, match):
    with fb.Graph().as_default(), pytest.raises(ValueError, match=match):
        build()


# ------------------------------------------------------------ small helpers
def test_statistics_helpers():
    x = RNG.standard_normal((4, 3))
    w = RNG.uniform(0.5, 2.0, (4, 1))
    count, m_ss, v_ss, shift = fb.nn.sufficient_statistics(x, [0], shift=0.5)
    mean, var = fb.nn.normalize_moments(count, m_ss, v_ss, shift)
    got = run([count, mean, var])
    assert got[0] == 4.0
    np.testing.assert_allclose(got[1], x.mean(0))
    np.testing.assert_allclose(got[2], x.var(0))
    wm, wv = run(fb.nn.weighted_moments(x, [0], w))
    ref_m = (w * x).sum(0) / (w.sum() * np.ones(3))
    np.testing.assert_allclose(wm, ref_m)
    np.testing.assert_allclose(wv, (w * (x - ref_m) ** 2).sum(0) / w.sum())
    assert run(fb.nn.zero_fraction(np.array([0.0, 1.0, 0.0, 0.0]))) == 0.75
    np.testing.assert_allclose(run(fb.nn.swish(x, beta=2.0)), x / (1 + np.exp(-2 * x)))
    assert fb.nn.silu is fb.nn.swish
    assert run(fb.nn.compute_average_loss([1.0, 2.0, 3.0], sample_weight=2.0)) == 4.0
    assert run(fb.nn.scale_regularization_loss(3.0)) == 3.0
    bn = fb.nn.batch_norm_with_global_normalization(x, 0.5, 4.0, 1.0, 3.0, 0.0, True)
    np.testing.assert_allclose(run(bn), (x - 0.5) / 2 * 3 + 1)
    bn = fb.nn.batch_norm_with_global_normalization(x, 0.5, 4.0, 1.0, 3.0, 0.0, False)
    np.testing.assert_allclose(run(bn), (x - 0.5) / 2 + 1)
