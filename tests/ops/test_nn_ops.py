"""Conv, pool, bias, cross-entropy, L2 and dropout: values, gradients, shapes, errors.

Forward values are checked against slow numpy references written here with
explicit loops (the kernels themselves are vectorised), every gradient
against central finite differences in float64, static shapes with an unknown
batch, and the errors a student meets.
"""

from __future__ import annotations

import numpy as np
import pytest

import flowbook as fb
from flowbook.autodiff.gradient_checker import compute_gradient_error
from flowbook.framework.registry import OPS
from flowbook.ops._builder import make, make1

RNG = np.random.default_rng(3)
F64 = fb.float64
TOL = 1e-6


# ------------------------------------------------------------ slow references
def ref_pads(size: int, k: int, s: int, padding: str) -> tuple[int, int, int]:
    """(out, before, after), written from TF's docs independently of the kernels."""
    if padding == "VALID":
        return int(np.ceil((size - k + 1) / s)), 0, 0
    out = int(np.ceil(size / s))
    total = max((out - 1) * s + k - size, 0)
    return out, total // 2, total - total // 2


def ref_conv2d(x, w, strides, padding):
    n, h, wd, _ = x.shape
    kh, kw, _, o = w.shape
    oh, pt, _ = ref_pads(h, kh, strides[0], padding)
    ow, pl, _ = ref_pads(wd, kw, strides[1], padding)
    out = np.zeros((n, oh, ow, o))
    for b in range(n):
        for i in range(oh):
            for j in range(ow):
                for di in range(kh):
                    for dj in range(kw):
                        r, q = i * strides[0] + di - pt, j * strides[1] + dj - pl
                        if 0 <= r < h and 0 <= q < wd:
                            out[b, i, j] += x[b, r, q] @ w[di, dj]
    return out


def ref_pool(x, k, strides, padding, mode):
    n, h, wd, c = x.shape
    oh, pt, _ = ref_pads(h, k[0], strides[0], padding)
    ow, pl, _ = ref_pads(wd, k[1], strides[1], padding)
    out = np.zeros((n, oh, ow, c))
    for i in range(oh):
        for j in range(ow):
            r0, q0 = i * strides[0] - pt, j * strides[1] - pl
            win = x[:, max(r0, 0) : r0 + k[0], max(q0, 0) : q0 + k[1], :]
            out[:, i, j] = win.max(axis=(1, 2)) if mode == "max" else win.mean(axis=(1, 2))
    return out


def run(t, feed=None):
    with fb.Session() as s:
        return s.run(t, feed)


# (input NHWC, filter HWIO or pool window, strides): odd sizes, batch and channels > 1
GEOMETRIES = [
    ((2, 7, 6, 3), (3, 3, 3, 4), (1, 1)),
    ((2, 7, 6, 3), (3, 2, 3, 2), (2, 2)),
    ((1, 5, 5, 2), (1, 1, 2, 3), (2, 1)),
    ((3, 4, 5, 1), (2, 3, 1, 2), (1, 2)),
    ((1, 3, 3, 2), (5, 4, 2, 1), (2, 2)),  # window larger than the image: SAME only
]
CASES = [(g, p) for g in GEOMETRIES for p in ("SAME", "VALID") if p == "SAME" or g[0][1] >= g[1][0]]


@pytest.mark.parametrize("geom,padding", CASES)
def test_conv2d_matches_reference(geom, padding):
    xs, ws, (sh, sw) = geom
    x, w = RNG.standard_normal(xs), RNG.standard_normal(ws)
    y = fb.nn.conv2d(fb.constant(x), fb.constant(w), [1, sh, sw, 1], padding)
    want = ref_conv2d(x, w, (sh, sw), padding)
    assert y.shape.as_list() == list(want.shape)
    np.testing.assert_allclose(run(y), want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("geom,padding", CASES)
def test_pools_match_reference(geom, padding):
    xs, ws, (sh, sw) = geom
    x = RNG.standard_normal(xs) - 5.0  # all negative: zero padding must never win a max
    k = [1, ws[0], ws[1], 1]
    for fn, mode in ((fb.nn.max_pool, "max"), (fb.nn.avg_pool, "avg")):
        y = fn(fb.constant(x), k, [1, sh, sw, 1], padding)
        want = ref_pool(x, ws[:2], (sh, sw), padding, mode)
        assert y.shape.as_list() == list(want.shape)
        np.testing.assert_allclose(run(y), want, rtol=1e-12)


def test_same_padding_puts_the_odd_cell_after():
    """TF's SAME: 4 wide, 3x3 window, stride 2 pads 0 before and 1 after."""
    x = np.arange(16.0).reshape(1, 4, 4, 1)
    y = fb.nn.conv2d(x, np.ones((3, 3, 1, 1)), [1, 2, 2, 1], "SAME")
    assert run(y)[0, :, :, 0].tolist() == [[45.0, 39.0], [66.0, 50.0]]
    # avg pool divides by the real cells only: 9, 6, 6 and 4 of them
    a = fb.nn.avg_pool(x, [1, 3, 3, 1], [1, 2, 2, 1], "SAME")
    assert run(a)[0, :, :, 0].tolist() == [[5.0, 6.5], [11.0, 12.5]]


def test_float32_and_short_window_forms():
    x = RNG.standard_normal((2, 6, 6, 3)).astype(np.float32)
    w = RNG.standard_normal((3, 3, 3, 2)).astype(np.float32)
    y = fb.nn.conv2d(x, w, 2, "SAME")  # TF 1.14+ accepts an int or a 2-list
    assert y.dtype == fb.float32
    np.testing.assert_allclose(run(y), ref_conv2d(x, w, (2, 2), "SAME"), rtol=1e-4, atol=1e-5)
    p = fb.nn.max_pool(x, [2, 2], [2, 2], "VALID")
    assert p.shape.as_list() == [2, 3, 3, 3]


def test_max_pool_grad_ties_go_to_the_first_max():
    x = fb.constant(np.array([[1.0, 3.0, 3.0], [3.0, 0.0, 3.0]]).reshape(1, 2, 3, 1))
    y = fb.nn.max_pool(x, [1, 2, 2, 1], [1, 1, 1, 1], "VALID")
    (g,) = fb.gradients(y, [x])
    assert run(g)[0, :, :, 0].tolist() == [[0.0, 2.0, 0.0], [0.0, 0.0, 0.0]]


def test_bias_add_and_its_grad():
    v, b = RNG.standard_normal((2, 3, 4)), RNG.standard_normal(4)
    np.testing.assert_allclose(run(fb.nn.bias_add(v, b)), v + b)
    vc = RNG.standard_normal((2, 4, 3, 3))
    np.testing.assert_allclose(
        run(fb.nn.bias_add(vc, b, data_format="NCHW")), vc + b[None, :, None, None]
    )
    assert run(make1("BiasAddGrad", (fb.constant(v),))).tolist() == pytest.approx(v.sum((0, 1)))


def test_transpose_and_backprops_are_adjoints_of_conv():
    """<conv(x, w), dy> == <x, conv_transpose(dy, w)> == <w, backprop_filter(x, dy)>."""
    x, w = RNG.standard_normal((2, 7, 6, 3)), RNG.standard_normal((3, 2, 3, 4))
    for padding, s in (("SAME", 2), ("VALID", 1), ("SAME", 1)):
        y = ref_conv2d(x, w, (s, s), padding)
        dy = RNG.standard_normal(y.shape)
        dx = fb.nn.conv2d_transpose(dy, w, x.shape, [1, s, s, 1], padding)
        dw = fb.nn.conv2d_backprop_filter(x, w.shape, dy, [1, s, s, 1], padding)
        dx_v, dw_v = run([dx, dw])
        assert np.sum(y * dy) == pytest.approx(np.sum(x * dx_v))
        assert np.sum(y * dy) == pytest.approx(np.sum(w * dw_v))


# ------------------------------------------------------------ losses
def np_log_softmax(z, axis=-1):
    z = z - z.max(axis=axis, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=axis, keepdims=True))


def test_softmax_cross_entropy_values():
    logits = RNG.standard_normal((4, 5)) * 3
    logits[0] += 1000.0  # stable: no overflow
    labels = RNG.dirichlet(np.ones(5), 4)
    want = -(labels * np_log_softmax(logits)).sum(1)
    for fn in (fb.nn.softmax_cross_entropy_with_logits, fb.nn.softmax_cross_entropy_with_logits_v2):
        np.testing.assert_allclose(run(fn(labels=labels, logits=logits)), want, rtol=1e-12)
    op = make("SoftmaxCrossEntropyWithLogits", (fb.constant(logits), fb.constant(labels)))
    p = np.exp(np_log_softmax(logits))
    np.testing.assert_allclose(run(op.outputs[1]), p - labels, atol=1e-12)
    # rank 3 with the class dim first: moved last and flattened, as TF does
    l3, z3 = RNG.dirichlet(np.ones(3), (2, 4)).transpose(2, 0, 1), RNG.standard_normal((3, 2, 4))
    y3 = fb.nn.softmax_cross_entropy_with_logits(labels=l3, logits=z3, dim=0)
    assert y3.shape.as_list() == [2, 4]
    np.testing.assert_allclose(run(y3), -(l3 * np_log_softmax(z3, 0)).sum(0), rtol=1e-12)


def test_sparse_softmax_cross_entropy_values():
    logits = RNG.standard_normal((4, 5)) * 3
    labels = np.array([0, 4, 2, 2])
    want = -np_log_softmax(logits)[np.arange(4), labels]
    y = fb.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    np.testing.assert_allclose(run(y), want, rtol=1e-12)
    y3 = fb.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels.reshape(2, 2), logits=logits.reshape(2, 2, 5)
    )
    np.testing.assert_allclose(run(y3), want.reshape(2, 2), rtol=1e-12)


def test_sigmoid_cross_entropy_and_l2_loss_values():
    x = np.array([-1000.0, -2.0, 0.0, 1.5, 1000.0])
    z = np.array([0.0, 1.0, 0.5, 0.0, 1.0])
    want = np.maximum(x, 0) - x * z + np.log1p(np.exp(-np.abs(x)))
    y = fb.nn.sigmoid_cross_entropy_with_logits(labels=z, logits=x)
    np.testing.assert_allclose(run(y), want, rtol=1e-12)
    assert run(fb.nn.l2_loss(x[1:4])) == pytest.approx((4 + 0 + 2.25) / 2)


def test_dropout_scales_and_masks():
    fb.set_random_seed(1)
    x = fb.ones([200, 50])
    y = fb.nn.dropout(x, keep_prob=0.25)
    (g,) = fb.gradients(fb.reduce_sum(y), [x])
    y_v, g_v = run([y, g])
    assert set(np.unique(y_v)) <= {0.0, 4.0}
    assert 0.2 < np.mean(y_v > 0) < 0.3
    np.testing.assert_array_equal(g_v, y_v)  # d(sum y)/dx is the kept mask / keep_prob
    assert fb.nn.dropout(x, keep_prob=1.0) is x
    keep = fb.placeholder(fb.float32, [])
    assert run(fb.nn.dropout(x, keep), {keep: 1.0}).tolist() == run(x).tolist()
    z = fb.nn.dropout(x, rate=0.5, noise_shape=[200, 1])
    rows = run(z)
    assert all(len(set(r)) == 1 for r in rows)  # one coin per row


# ------------------------------------------------------------ gradients vs finite differences
def _conv(x, w, s, p):
    return fb.nn.conv2d(x, w, [1, s, s, 1], p)


X, W = (2, 5, 4, 2), (3, 2, 2, 3)  # conv input and filter
DW, DW_Y = (3, 2, 2, 3), (2, 3, 2, 6)  # a depthwise filter (multiplier 3), its SAME/2 output


def _dw(x, w, s, p):
    return fb.nn.depthwise_conv2d_native(x, w, [1, s, s, 1], p)


def _dw_bi(w, dy):
    return fb.nn.depthwise_conv2d_native_backprop_input(X, w, dy, [1, 2, 2, 1], "SAME")


def _dw_bf(x, dy):
    return fb.nn.depthwise_conv2d_native_backprop_filter(x, DW, dy, [1, 2, 2, 1], "SAME")


Y_SAME2, Y_VALID1 = (2, 3, 2, 3), (2, 3, 3, 3)
KS, ST = [1, 3, 2, 1], [1, 2, 1, 1]  # a pool window and strides
P_SAME = (2, 3, 4, 2)  # pooled shape of X under KS/ST, SAME
P_VALID = (2, 2, 3, 2)
A = {"ksize": (1, 3, 2, 1), "strides": (1, 2, 1, 1), "padding": "SAME", "data_format": "NHWC"}


# name -> (function of placeholders, input shapes, index to differentiate)
GRADIENT_CASES = {
    "conv2d/input/SAME2": (lambda x, w: _conv(x, w, 2, "SAME"), [X, W], 0),
    "conv2d/filter/SAME2": (lambda x, w: _conv(x, w, 2, "SAME"), [X, W], 1),
    "conv2d/input/VALID1": (lambda x, w: _conv(x, w, 1, "VALID"), [X, W], 0),
    "conv2d/filter/VALID1": (lambda x, w: _conv(x, w, 1, "VALID"), [X, W], 1),
    "backprop_input/filter": (
        lambda w, dy: fb.nn.conv2d_backprop_input(X, w, dy, [1, 2, 2, 1], "SAME"),
        [W, Y_SAME2],
        0,
    ),
    "backprop_input/dy": (
        lambda w, dy: fb.nn.conv2d_backprop_input(X, w, dy, [1, 2, 2, 1], "SAME"),
        [W, Y_SAME2],
        1,
    ),
    "backprop_filter/input": (
        lambda x, dy: fb.nn.conv2d_backprop_filter(x, W, dy, [1, 1, 1, 1], "VALID"),
        [X, Y_VALID1],
        0,
    ),
    "backprop_filter/dy": (
        lambda x, dy: fb.nn.conv2d_backprop_filter(x, W, dy, [1, 1, 1, 1], "VALID"),
        [X, Y_VALID1],
        1,
    ),
    "max_pool/SAME": (lambda x: fb.nn.max_pool(x, KS, ST, "SAME"), [X], 0),
    "max_pool/VALID": (lambda x: fb.nn.max_pool(x, KS, ST, "VALID"), [X], 0),
    "avg_pool/SAME": (lambda x: fb.nn.avg_pool(x, KS, ST, "SAME"), [X], 0),
    "avg_pool/VALID": (lambda x: fb.nn.avg_pool(x, KS, ST, "VALID"), [X], 0),
    "max_pool_grad/grad": (
        lambda x, g: make1("MaxPoolGrad", (x, fb.nn.max_pool(x, KS, ST, "SAME"), g), A),
        [X, P_SAME],
        1,
    ),
    "max_pool_grad_grad/grad": (
        lambda x, g: make1("MaxPoolGradGrad", (x, fb.nn.max_pool(x, KS, ST, "SAME"), g), A),
        [X, X],
        1,
    ),
    "avg_pool_grad/grad": (lambda g: make1("AvgPoolGrad", (fb.constant(X), g), A), [P_SAME], 0),
    # the tail: depthwise conv (each input), its backprops, the argmax pool
    "depthwise/input/SAME2": (lambda x, w: _dw(x, w, 2, "SAME"), [X, DW], 0),
    "depthwise/filter/SAME2": (lambda x, w: _dw(x, w, 2, "SAME"), [X, DW], 1),
    "depthwise/filter/VALID1": (lambda x, w: _dw(x, w, 1, "VALID"), [X, DW], 1),
    "depthwise_backprop_input/filter": (lambda w, dy: _dw_bi(w, dy), [DW, DW_Y], 0),
    "depthwise_backprop_input/dy": (lambda w, dy: _dw_bi(w, dy), [DW, DW_Y], 1),
    "depthwise_backprop_filter/input": (lambda x, dy: _dw_bf(x, dy), [X, DW_Y], 0),
    "depthwise_backprop_filter/dy": (lambda x, dy: _dw_bf(x, dy), [X, DW_Y], 1),
    "separable/pointwise": (
        lambda p: fb.nn.separable_conv2d(np.ones(X), np.ones(DW), p, [1, 1, 1, 1], "SAME"),
        [(1, 1, 6, 2)],
        0,
    ),
    "max_pool_with_argmax": (
        lambda x: fb.nn.max_pool_with_argmax(x, KS, ST, "SAME")[0],
        [X],
        0,
    ),
    "bias_add/value": (fb.nn.bias_add, [(2, 3, 4), (4,)], 0),
    "bias_add/bias": (fb.nn.bias_add, [(2, 3, 4), (4,)], 1),
    "bias_add_grad": (lambda d: make1("BiasAddGrad", (d,)), [(2, 3, 4)], 0),
    "l2_loss": (fb.nn.l2_loss, [(3, 4)], 0),
    "softmax_xent/logits": (
        lambda z, p: fb.nn.softmax_cross_entropy_with_logits(labels=p, logits=z),
        [(3, 4), "dist"],
        0,
    ),
    "softmax_xent_v2/labels": (
        lambda z, p: fb.nn.softmax_cross_entropy_with_logits_v2(labels=p, logits=z),
        [(3, 4), "dist"],
        1,
    ),
    "sparse_xent/logits": (
        lambda z: fb.nn.sparse_softmax_cross_entropy_with_logits(labels=[3, 0, 1], logits=z),
        [(3, 4)],
        0,
    ),
    "sigmoid_xent/logits": (
        lambda z, p: fb.nn.sigmoid_cross_entropy_with_logits(labels=p, logits=z),
        [(3, 4), "dist"],
        0,
    ),
}


def _value(spec):
    if spec == "dist":
        return RNG.dirichlet(np.ones(4), 3)
    return RNG.standard_normal(spec)


@pytest.mark.parametrize("case", GRADIENT_CASES, ids=str)
def test_gradient_matches_finite_differences(case):
    fn, specs, wrt = GRADIENT_CASES[case]
    values = [_value(s) for s in specs]
    phs = [fb.placeholder(F64, v.shape) for v in values]
    y = fn(*phs)
    feed = {p: v for i, (p, v) in enumerate(zip(phs, values)) if i != wrt}
    err = compute_gradient_error(
        phs[wrt], values[wrt].shape, y, y.shape.as_list(), values[wrt], extra_feed_dict=feed
    )
    assert err < TOL, f"{case}: {err}"


@pytest.mark.parametrize("sparse", [False, True])
def test_cross_entropy_second_derivative(sparse):
    """The Hessian of the loss w.r.t. logits, through the backprop output's own gradient."""
    z = fb.placeholder(F64, (3, 4))
    if sparse:
        loss = fb.nn.sparse_softmax_cross_entropy_with_logits(labels=[3, 0, 1], logits=z)
    else:
        loss = fb.nn.softmax_cross_entropy_with_logits(
            labels=RNG.dirichlet(np.ones(4), 3), logits=z
        )
    (g,) = fb.gradients(loss, [z])
    err = compute_gradient_error(z, (3, 4), g, (3, 4), RNG.standard_normal((3, 4)))
    assert err < TOL


def test_conv_second_derivative():
    """d/dw of a gradient w.r.t. x: Conv2DBackpropInput's own gradient."""
    x, w = fb.placeholder(F64, X), fb.placeholder(F64, W)
    y = _conv(x, w, 2, "SAME")
    (gx,) = fb.gradients(fb.reduce_sum(y * y), [x])
    feed = {x: RNG.standard_normal(X)}
    err = compute_gradient_error(w, W, gx, X, RNG.standard_normal(W), extra_feed_dict=feed)
    assert err < 1e-5


# ------------------------------------------------------------ static shapes
def test_static_shapes_with_unknown_batch():
    x = fb.placeholder(fb.float32, [None, 28, 27, 3])
    c = fb.nn.conv2d(x, fb.zeros([5, 5, 3, 8]), [1, 2, 2, 1], "SAME")
    assert c.shape.as_list() == [None, 14, 14, 8]
    v = fb.nn.conv2d(x, fb.zeros([5, 4, 3, 8]), [1, 1, 1, 1], "VALID")
    assert v.shape.as_list() == [None, 24, 24, 8]
    assert fb.nn.max_pool(x, [1, 3, 3, 1], [1, 2, 2, 1], "VALID").shape.as_list() == [
        None,
        13,
        13,
        3,
    ]
    assert fb.nn.avg_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], "SAME").shape.as_list() == [
        None,
        14,
        14,
        3,
    ]
    assert fb.nn.bias_add(c, fb.zeros([8])).shape.as_list() == [None, 14, 14, 8]
    gx, gw = fb.gradients(fb.reduce_sum(c), [x, c.op.inputs[1]])
    assert gx.shape.as_list() == [None, 28, 27, 3] and gw.shape.as_list() == [5, 5, 3, 8]
    (gp,) = fb.gradients(fb.nn.max_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], "SAME"), [x])
    assert gp.shape.as_list() == [None, 28, 27, 3]
    z = fb.placeholder(fb.float32, [None, 10])
    xent = make("SoftmaxCrossEntropyWithLogits", (z, fb.placeholder(fb.float32, [None, 10])))
    assert [t.shape.as_list() for t in xent.outputs] == [[None], [None, 10]]
    sparse = fb.nn.sparse_softmax_cross_entropy_with_logits(
        labels=fb.placeholder(fb.int64, [None]), logits=z
    )
    assert sparse.shape.as_list() == [None]
    assert fb.nn.l2_loss(z).shape.as_list() == []
    unknown = fb.placeholder(fb.float32)
    assert fb.nn.conv2d(unknown, fb.zeros([3, 3, 3, 8]), 1, "SAME").shape.as_list() == [
        None
    ] * 3 + [8]


def test_conv_ops_are_heavy():
    assert all(
        OPS[t].heavy is True for t in ("Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter")
    )


# ------------------------------------------------------------ errors
X32 = [1, 8, 8, 3]


@pytest.mark.parametrize(
    "build,message",
    [
        (lambda x: fb.nn.conv2d(x, fb.zeros([3, 3, 3, 4]), [1, 1, 1, 1], "same"), 'not in: "SAME"'),
        (lambda x: fb.nn.max_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], "FULL"), "'FULL' not in"),
        (lambda x: fb.nn.conv2d(x, fb.zeros([3, 3, 4, 4]), [1, 1, 1, 1], "SAME"), r"\[1,8,8,3\]"),
        (lambda x: fb.nn.conv2d(x, fb.zeros([9, 3, 3, 4]), [1, 1, 1, 1], "VALID"), "subtracting 9"),
        (lambda x: fb.nn.conv2d(x, fb.zeros([3, 3, 4]), [1, 1, 1, 1], "SAME"), "rank 4"),
        (
            lambda x: fb.nn.conv2d(x, fb.zeros([3, 3, 3, 4]), [2, 1, 1, 1], "SAME"),
            "batch and depth",
        ),
        (
            lambda x: fb.nn.conv2d(x, fb.zeros([3, 3, 3, 4]), 1, "SAME", dilations=[2, 1, 1, 1]),
            "dilations",
        ),
        (lambda x: fb.nn.conv2d(x, fb.zeros([3, 3, 3, 4]), 1, "SAME", data_format="NCHW"), "NHWC"),
        (lambda x: fb.nn.avg_pool(x, [1, 2, 2, 2], [1, 1, 1, 1], "SAME"), "batch and depth"),
        (lambda x: fb.nn.bias_add(x, fb.zeros([4])), "3 and 4"),
    ],
)
def test_build_errors(build, message):
    x = fb.placeholder(fb.float32, X32)
    with pytest.raises(ValueError, match=message):
        build(x)


def test_loss_argument_errors():
    z = fb.zeros([2, 3])
    with pytest.raises(ValueError, match="named arguments"):
        fb.nn.softmax_cross_entropy_with_logits(z, z)
    with pytest.raises(ValueError, match="named arguments"):
        fb.nn.sparse_softmax_cross_entropy_with_logits([0, 1], z)
    with pytest.raises(ValueError, match="Both labels and logits"):
        fb.nn.sigmoid_cross_entropy_with_logits(logits=z)
    with pytest.raises(ValueError, match="same size"):
        fb.nn.softmax_cross_entropy_with_logits_v2(labels=fb.zeros([2, 4]), logits=z)
    with pytest.raises(ValueError, match="Rank mismatch"):
        fb.nn.sparse_softmax_cross_entropy_with_logits(labels=[[0, 1]], logits=z)
    with pytest.raises(ValueError, match="same shape"):
        fb.nn.sigmoid_cross_entropy_with_logits(labels=fb.zeros([3]), logits=z)
    with pytest.raises(ValueError, match=r"range \(0, 1\]"):
        fb.nn.dropout(z, keep_prob=1.5)
    with pytest.raises(ValueError, match="floating point"):
        fb.nn.dropout(fb.zeros([2], fb.int32), keep_prob=0.5)


def test_runtime_errors():
    labels = fb.placeholder(fb.int32, [None])
    loss = fb.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=fb.zeros([3, 4]))
    with pytest.raises(fb.errors.InvalidArgumentError, match=r"label value of 4 .*\[0, 4\)"):
        run(loss, {labels: [0, 4, 1]})
    x = fb.placeholder(fb.float32, [1, 5, 5, None])
    y = fb.nn.conv2d(x, fb.zeros([3, 3, 2, 1]), 1, "VALID")
    with pytest.raises(fb.errors.InvalidArgumentError, match=r"Conv2D.*input depth 3"):
        run(y, {x: np.zeros((1, 5, 5, 3), np.float32)})
    small = fb.placeholder(fb.float32, [1, None, None, 1])
    p = fb.nn.max_pool(small, [1, 3, 3, 1], [1, 1, 1, 1], "VALID")
    with pytest.raises(fb.errors.InvalidArgumentError, match="larger than"):
        run(p, {small: np.zeros((1, 2, 2, 1), np.float32)})
