"""The top-level ``tf.*`` math names, where the op tables cannot reach.

The element-wise rows themselves are checked by ``test_ops_math`` (values,
dtypes, shapes) and ``test_gradients_math`` (finite differences); here are
the signs, zeros and aliases that their positive domains leave out.
"""

from __future__ import annotations

import numpy as np
import pytest

import flowbook as tf


@pytest.mark.parametrize(
    "fn,x,y,want",
    [
        (tf.truncatediv, [7, -7, 7, -7], [2, 2, -2, -2], [3, -3, -3, 3]),
        (tf.truncatemod, [7, -7, 7, -7], [3, 3, -3, -3], [1, -1, 1, -1]),
        (tf.truncatediv, [7.5, -7.5], [2.0, 2.0], [3.0, -3.0]),
        (tf.floor_div, [7, -7], [2, 2], [3, -4]),
        (tf.div_no_nan, [1.0, 2.0, 0.0], [2.0, 0.0, 0.0], [0.5, 0.0, 0.0]),
        (tf.atan2, [1.0, 1.0, -1.0], [1.0, -1.0, -1.0], np.arctan2([1, 1, -1], [1, -1, -1])),
    ],
)
def test_signs_and_zeros(fn, x, y, want):
    with tf.Graph().as_default(), tf.Session() as s:
        np.testing.assert_allclose(s.run(fn(x, y)), want, rtol=1e-6)


def test_div_no_nan_gradient_is_zero_where_y_is_zero():
    with tf.Graph().as_default(), tf.Session() as s:
        x, y = tf.constant([1.0, 3.0], tf.float64), tf.constant([2.0, 0.0], tf.float64)
        gx, gy = s.run(tf.gradients(tf.div_no_nan(x, y), [x, y]))
    np.testing.assert_allclose(gx, [0.5, 0.0])
    np.testing.assert_allclose(gy, [-0.25, 0.0])


def test_integer_trig_is_refused_at_the_line_that_built_it():
    with tf.Graph().as_default(), pytest.raises(TypeError, match="DataType int32"):
        tf.asin([1, 2])
