"""TensorFlow's element-wise gradient ops (TanhGrad, SigmoidGrad...): values against numpy,
their own gradients against finite differences, and a TensorFlow gradient graph's use."""

from __future__ import annotations

import numpy as np
import pytest

import flowbook as tf
from flowbook.ops._builder import make1
from flowbook.ops.math.cwise_grad_ops import ROWS

Y = np.array([[0.2, 0.5, 0.9], [0.3, 0.7, 0.4]])  # in (0, 1): every op's forward output can be
DY = np.array([[1.0, -2.0, 0.5], [3.0, 0.25, -1.0]])
REFERENCE = {
    "TanhGrad": lambda y, dy: dy * (1 - y**2),
    "SigmoidGrad": lambda y, dy: dy * y * (1 - y),
    "SqrtGrad": lambda y, dy: dy * 0.5 / y,
    "RsqrtGrad": lambda y, dy: dy * -0.5 * y**3,
    "ReciprocalGrad": lambda y, dy: -dy * y**2,
    "InvGrad": lambda y, dy: -dy * y**2,
    "SoftsignGrad": lambda g, x: g / (1 + np.abs(x)) ** 2,
}


def test_every_row_has_a_reference():
    assert {r.op_type for r in ROWS} == set(REFERENCE)


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.op_type)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_values_match_numpy(row, dtype):
    first, second = (Y, DY) if row.inputs[0] == "y" else (DY, Y)
    with tf.Graph().as_default(), tf.Session() as s:
        out = make1(
            row.op_type, (tf.constant(first.astype(dtype)), tf.constant(second.astype(dtype)))
        )
        assert out.dtype.as_numpy_dtype == dtype
        np.testing.assert_allclose(s.run(out), REFERENCE[row.op_type](first, second), rtol=1e-6)


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.op_type)
def test_second_derivatives_match_finite_differences(row):
    first, second = (Y, DY) if row.inputs[0] == "y" else (DY, Y)
    with tf.Graph().as_default(), tf.Session():
        a, b = tf.constant(first), tf.constant(second)
        out = make1(row.op_type, (a, b))
        errors = [
            tf.test.compute_gradient_error(t, (2, 3), out, (2, 3), x_init_value=v)
            for t, v in ((a, first), (b, second))
        ]
    assert max(errors) < 1e-6, errors


def test_a_shape_clash_names_both_inputs():
    with (
        tf.Graph().as_default(),
        pytest.raises(ValueError, match="TanhGrad: y and dy must have the same shape"),
    ):
        make1("TanhGrad", (tf.ones([2]), tf.ones([3])))
