"""fb.losses against numpy: per-element losses, weights, reductions, collections."""

from __future__ import annotations

import numpy as np
import pytest

import flowbook as fb
from flowbook.nets.losses import losses
from flowbook.nets.losses.losses import Reduction

F = np.float32
RNG = np.random.RandomState(0)
N, C = 5, 4
LOGITS = RNG.randn(N, C).astype(F)
LABELS = np.array([0, 3, 1, 1, 2], np.int64)
ONEHOT = np.eye(C, dtype=F)[LABELS]
PRED = RNG.rand(N, 3).astype(F)
TRUE = RNG.rand(N, 3).astype(F)
BINARY = (RNG.rand(N, 3) > 0.5).astype(F)
UNIT_PRED = (PRED / np.linalg.norm(PRED, axis=1, keepdims=True)).astype(F)
UNIT_TRUE = (TRUE / np.linalg.norm(TRUE, axis=1, keepdims=True)).astype(F)


def _log_softmax(x):
    x = x.astype(np.float64)
    m = x.max(-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(-1, keepdims=True))


def _xent(onehot, logits):
    return -(onehot * _log_softmax(logits)).sum(-1)


def _sigmoid_xent(labels, logits):
    x, z = logits.astype(np.float64), labels.astype(np.float64)
    return np.maximum(x, 0) - x * z + np.log1p(np.exp(-np.abs(x)))


def _huber(e, delta=1.0):
    a = np.abs(e)
    q = np.minimum(a, delta)
    return 0.5 * q * q + delta * (a - q)


def _smooth(onehot, s):
    return onehot * (1 - s) + s / onehot.shape[-1]


# (id, build(weights, reduction) -> loss tensor, per-element numpy losses)
CASES = [
    (
        "mse",
        lambda **kw: losses.mean_squared_error(TRUE, PRED, **kw),
        (PRED.astype(np.float64) - TRUE) ** 2,
    ),
    (
        "absolute_difference",
        lambda **kw: losses.absolute_difference(TRUE, PRED, **kw),
        np.abs(PRED.astype(np.float64) - TRUE),
    ),
    (
        "sparse_softmax",
        lambda **kw: losses.sparse_softmax_cross_entropy(LABELS, LOGITS, **kw),
        _xent(ONEHOT, LOGITS),
    ),
    (
        "sparse_softmax_labels_n1",
        lambda **kw: losses.sparse_softmax_cross_entropy(LABELS[:, None], LOGITS, **kw),
        _xent(ONEHOT, LOGITS),
    ),
    (
        "softmax",
        lambda **kw: losses.softmax_cross_entropy(ONEHOT, LOGITS, **kw),
        _xent(ONEHOT, LOGITS),
    ),
    (
        "softmax_smoothed",
        lambda **kw: losses.softmax_cross_entropy(ONEHOT, LOGITS, label_smoothing=0.2, **kw),
        _xent(_smooth(ONEHOT, 0.2), LOGITS),
    ),
    (
        "sigmoid",
        lambda **kw: losses.sigmoid_cross_entropy(BINARY, LOGITS[:, :3], **kw),
        _sigmoid_xent(BINARY, LOGITS[:, :3]),
    ),
    (
        "log_loss",
        lambda **kw: losses.log_loss(BINARY, PRED, **kw),
        -BINARY * np.log(PRED + 1e-7) - (1 - BINARY) * np.log(1 - PRED + 1e-7),
    ),
    (
        "hinge",
        lambda **kw: losses.hinge_loss(BINARY, LOGITS[:, :3], **kw),
        np.maximum(0.0, 1.0 - (2 * BINARY - 1) * LOGITS[:, :3].astype(np.float64)),
    ),
    (
        "cosine_distance",
        lambda **kw: losses.cosine_distance(UNIT_TRUE, UNIT_PRED, axis=1, **kw),
        1.0 - (UNIT_TRUE.astype(np.float64) * UNIT_PRED).sum(1, keepdims=True),
    ),
    (
        "huber",
        lambda **kw: losses.huber_loss(TRUE * 3, PRED, **kw),
        _huber(PRED.astype(np.float64) - TRUE * 3),
    ),
]
IDS = [c[0] for c in CASES]


def _run(t):
    with fb.Session() as sess:
        return sess.run(t)


@pytest.mark.parametrize(("name", "build", "per_element"), CASES, ids=IDS)
def test_default_is_the_mean(name, build, per_element):
    loss = build()
    assert loss.get_shape().as_list() == []
    assert loss.dtype == fb.float32
    assert loss.name.endswith("/value:0")
    np.testing.assert_allclose(_run(loss), per_element.mean(), rtol=1e-5)
    assert fb.get_collection(fb.GraphKeys.LOSSES) == [loss]


@pytest.mark.parametrize(("name", "build", "per_element"), CASES, ids=IDS)
def test_weights_and_reductions(name, build, per_element):
    shape = per_element.shape
    weights = np.array([1.0, 0.0, 2.0, 0.5, 0.0], F).reshape((N,) + (1,) * (len(shape) - 1))
    full = np.broadcast_to(weights, shape)
    weighted = per_element * weights
    want = {
        Reduction.NONE: weighted,
        Reduction.SUM: weighted.sum(),
        Reduction.MEAN: weighted.sum() / full.sum(),
        Reduction.SUM_OVER_BATCH_SIZE: weighted.sum() / per_element.size,
        Reduction.SUM_BY_NONZERO_WEIGHTS: weighted.sum() / np.count_nonzero(full),
    }
    got = {r: build(weights=weights, reduction=r) for r in want}
    values = _run(got)
    for r, value in values.items():
        np.testing.assert_allclose(value, want[r], rtol=1e-5, atol=1e-6, err_msg=r)
    assert got[Reduction.NONE].get_shape().as_list() == list(shape)


def test_scalar_weight_scales_the_mean():
    loss = losses.mean_squared_error(TRUE, PRED, weights=3.0)
    np.testing.assert_allclose(_run(loss), 3.0 * ((PRED - TRUE) ** 2).mean(), rtol=1e-6)


def test_zero_weights_give_zero_not_nan():
    zero = np.zeros((N, 1), F)
    results = _run(
        [
            losses.mean_squared_error(TRUE, PRED, weights=0.0),
            losses.mean_squared_error(TRUE, PRED, weights=zero),
            losses.mean_squared_error(TRUE, PRED, weights=zero, reduction=Reduction.MEAN),
        ]
    )
    assert [float(r) for r in results] == [0.0, 0.0, 0.0]


def test_unknown_batch_size_matches_static():
    x = fb.placeholder(fb.float32, [None, 3])
    y = fb.placeholder(fb.float32, [None, 3])
    w = fb.placeholder(fb.float32, [None, 1])
    logits = fb.placeholder(fb.float32, [None, C])
    labels = fb.placeholder(fb.int64, [None])
    dynamic = [
        losses.mean_squared_error(y, x),
        losses.mean_squared_error(y, x, weights=w),
        losses.sparse_softmax_cross_entropy(labels, logits),
        losses.mean_squared_error(y, x, reduction=Reduction.SUM_OVER_BATCH_SIZE),
    ]
    weights = np.array([[1.0], [0.0], [2.0], [1.0], [0.0]], F)
    feed = {x: PRED, y: TRUE, w: weights, logits: LOGITS, labels: LABELS}
    with fb.Session() as sess:
        got = sess.run(dynamic, feed)
        empty = sess.run(dynamic[0], {x: np.zeros((0, 3), F), y: np.zeros((0, 3), F)})
    sq = (PRED.astype(np.float64) - TRUE) ** 2
    np.testing.assert_allclose(got[0], sq.mean(), rtol=1e-5)
    np.testing.assert_allclose(got[1], (sq * weights).sum() / 9, rtol=1e-5)
    np.testing.assert_allclose(got[2], _xent(ONEHOT, LOGITS).mean(), rtol=1e-5)
    np.testing.assert_allclose(got[3], sq.mean(), rtol=1e-5)
    assert float(empty) == 0.0


def test_collections_and_total_loss():
    a = losses.mean_squared_error(TRUE, PRED)
    b = losses.absolute_difference(TRUE, PRED, scope="l1")
    c = losses.mean_squared_error(TRUE, PRED, loss_collection=None)
    assert losses.get_losses() == [a, b]
    assert losses.get_losses(scope="l1") == [b]
    assert c not in losses.get_losses()
    fb.add_to_collection(fb.GraphKeys.REGULARIZATION_LOSSES, fb.constant(0.25))
    total = losses.get_total_loss()
    no_reg = losses.get_total_loss(add_regularization_losses=False)
    with fb.Session() as sess:
        va, vb, vt, vn, vr = sess.run([a, b, total, no_reg, losses.get_regularization_loss()])
    assert vt == pytest.approx(va + vb + 0.25)
    assert vn == pytest.approx(va + vb)
    assert vr == pytest.approx(0.25)


def test_float64_inputs_come_back_float64():
    loss = losses.compute_weighted_loss(np.array([1.0, 2.0]))
    assert loss.dtype == fb.float64
    assert _run(loss) == pytest.approx(1.5)


def test_errors():
    with pytest.raises(ValueError, match="labels must not be None"):
        losses.mean_squared_error(None, PRED)
    with pytest.raises(ValueError, match="logits must not be None"):
        losses.sparse_softmax_cross_entropy(LABELS, None)
    with pytest.raises(ValueError, match=r"incompatible|not compatible"):
        losses.mean_squared_error(TRUE[:, :2], PRED)
    with pytest.raises(ValueError, match="Invalid Reduction Key"):
        losses.mean_squared_error(TRUE, PRED, reduction="mean")
    with pytest.raises(ValueError, match="weights can not be broadcast"):
        losses.mean_squared_error(TRUE, PRED, weights=np.ones(N, F))
    with pytest.raises(ValueError, match="No losses"):
        losses.get_total_loss()


def test_gradients_of_the_mean():
    p = fb.Variable(PRED, name="p")
    logits = fb.Variable(LOGITS, name="logits")
    (gp,) = fb.gradients(losses.mean_squared_error(TRUE, p), [p])
    (gl,) = fb.gradients(losses.sparse_softmax_cross_entropy(LABELS, logits), [logits])
    with fb.Session() as sess:
        sess.run(fb.global_variables_initializer())
        got_p, got_l = sess.run([gp, gl])
    np.testing.assert_allclose(got_p, 2 * (PRED - TRUE) / PRED.size, rtol=1e-5)
    softmax = np.exp(_log_softmax(LOGITS))
    np.testing.assert_allclose(got_l, (softmax - ONEHOT) / N, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("weights", [1.0, np.array([1.0, 0.0, 2.0, 0.5, 3.0], F)])
def test_mean_pairwise_squared_error_is_the_mean_over_pairs(weights):
    loss = losses.mean_pairwise_squared_error(TRUE, PRED, weights=weights)
    d = PRED.astype(np.float64) - TRUE
    per_example = [
        np.mean([(row[i] - row[j]) ** 2 for i in range(3) for j in range(3) if i != j]) for row in d
    ]
    want = float(np.sum(np.asarray(per_example) * weights))
    np.testing.assert_allclose(_run(loss), want, rtol=1e-5)
    assert fb.get_collection(fb.GraphKeys.LOSSES) == [loss]


def test_loss_argument_errors():
    with pytest.raises(ValueError, match="You must specify 'axis'"):
        losses.cosine_distance(UNIT_TRUE, UNIT_PRED)
    with pytest.raises(ValueError, match="need rank >= 2"):
        losses.mean_pairwise_squared_error([1.0, 2.0], [1.0, 3.0])
