"""The ``tf.nn`` long tail: activations, normalisations and losses TF1 keeps in nn_impl.

Values are checked against numpy references written here from TensorFlow's
documented formulas (float32 round-off), gradients against central finite
differences in float64 (the table at the end).
"""

from __future__ import annotations

import numpy as np
import pytest

import flowbook as fb
from flowbook.gradient_checker import compute_gradient_error

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
