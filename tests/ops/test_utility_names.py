"""TF1's utility names: placeholder_with_default, where_v2, collections, gradient
registration, variable checks and the ``tf.debugging`` namespace."""

from __future__ import annotations

import numpy as np
import pytest

import flowbook as tf
from flowbook.framework.errors import FailedPreconditionError, InvalidArgumentError
from flowbook.framework.registry import NOT_DIFFERENTIABLE, OPS, OpDef, Out, register


def test_placeholder_with_default_is_fed_or_computes_its_default():
    with tf.Graph().as_default(), tf.Session() as s:
        d = tf.placeholder_with_default(tf.constant([1.0, 2.0]) * 2, [None])
        y = d + 1
        assert s.run(y).tolist() == [3.0, 5.0]
        assert s.run(y, {d: [0.0, 0.0, 0.0]}).tolist() == [1.0, 1.0, 1.0]
        x = tf.constant([1.0])
        assert tf.gradients(tf.placeholder_with_default(x, [1]), [x]) == [None]


@pytest.mark.parametrize(
    "build,error,match",
    [
        (lambda: tf.placeholder_with_default([1.0, 2.0], [3]), ValueError, "not compatible"),
        (lambda: tf.where_v2([True, False], [1, 2, 3], 0), ValueError, "do not broadcast"),
        (lambda: tf.where_v2([True], 1), ValueError, "both"),
    ],
)
def test_build_errors(build, error, match):
    with tf.Graph().as_default(), pytest.raises(error, match=match):
        build()


def test_where_v2_without_branches_gives_coordinates():
    with tf.Graph().as_default(), tf.Session() as s:
        assert s.run(tf.where_v2([False, True, True])).tolist() == [[1], [2]]


def test_add_to_collections_adds_once_per_name():
    with tf.Graph().as_default() as g:
        tf.add_to_collections(["a", "b", "a"], 7)
        tf.add_to_collections("c", 8)
        assert [g.get_collection(k) for k in "abc"] == [[7], [7], [8]]


def test_no_gradient_and_not_differentiable_stop_the_gradient():
    for fn in (tf.no_gradient, tf.NotDifferentiable):
        register(
            OpDef("TfcoreTwice", ("x",), (), lambda x: Out(x.dtype, x._shape), lambda xp, x: x * 2)
        )
        try:
            fn("TfcoreTwice")
            assert OPS["TfcoreTwice"].grad is NOT_DIFFERENTIABLE
            with tf.Graph().as_default():
                x = tf.constant(1.0)
                y = tf.get_default_graph().create_op("TfcoreTwice", [x]).outputs[0]
                assert tf.gradients(y, [x]) == [None]
        finally:
            del OPS["TfcoreTwice"]


def test_assert_variables_initialized_names_the_variable():
    with tf.Graph().as_default():
        assert tf.assert_variables_initialized() is None
        a, b = tf.Variable(1.0, name="a"), tf.Variable(2.0, name="b")
        check = tf.assert_variables_initialized()
        with tf.Session() as s:
            s.run(a.initializer)
            with pytest.raises(FailedPreconditionError, match="b"):
                s.run(check)
            s.run(b.initializer)
            s.run(check)
            s.run(tf.assert_variables_initialized([a]))


def test_verify_tensor_all_finite_and_static_values():
    with tf.Graph().as_default(), tf.Session() as s:
        x = tf.placeholder(tf.float32, [2])
        y = tf.verify_tensor_all_finite(x, "x went bad")
        assert s.run(y, {x: [1.0, 2.0]}).tolist() == [1.0, 2.0]
        with pytest.raises(InvalidArgumentError, match="x went bad"):
            s.run(y, {x: [1.0, np.nan]})
        assert tf.get_static_value(tf.constant([3, 4])).tolist() == [3, 4]
        assert tf.get_static_value(x) is None
        assert tf.get_static_value(5).tolist() == 5


def test_debugging_namespace_is_the_same_functions():
    for name in tf.debugging.__all__:
        assert getattr(tf.debugging, name) is getattr(tf, name), name


def test_multinomial_follows_the_softmax_of_the_logits():
    p = np.array([0.1, 0.6, 0.3])
    with tf.Graph().as_default(), tf.Session() as s:
        draws = s.run(tf.multinomial(np.log([p, p[::-1]]) + 5.0, 20000, seed=7))
    assert draws.shape == (2, 20000) and draws.dtype == np.int64
    for row, want in zip(draws, (p, p[::-1])):
        np.testing.assert_allclose(np.bincount(row, minlength=3) / row.size, want, atol=0.015)


def test_multinomial_errors():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="2-D"):
            tf.multinomial([0.0, 1.0], 3)
        with pytest.raises(TypeError, match="DataType int32"):
            tf.multinomial([[0, 1]], 3)
