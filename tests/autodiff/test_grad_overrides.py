"""RegisterGradient, Graph.gradient_override_map and custom_gradient."""

from __future__ import annotations

import numpy as np
import pytest

import flowbook as tf
from flowbook.framework import grad_overrides
from flowbook.framework.registry import OPS, register_op
from flowbook.ops._builder import make1, same_as_input

X = np.array([0.5, -2.0, 3.0])


@pytest.fixture(autouse=True)
def _forget_registrations():
    before = set(grad_overrides.GRADIENTS)
    yield
    for name in set(grad_overrides.GRADIENTS) - before:
        del grad_overrides.GRADIENTS[name]


def _grad(y, x):
    with tf.Session() as s:
        return s.run(tf.gradients(y, x)[0])


def test_override_applies_only_inside_the_block():
    tf.RegisterGradient("Times10")(lambda op, g: g * 10.0)
    g = tf.Graph()
    with g.as_default():
        x = tf.constant(X)
        with g.gradient_override_map({"Square": "Times10"}):
            inside = tf.square(x)
            mid = _grad(inside, x)  # seen while the block is still open
        outside = tf.square(x)
        np.testing.assert_allclose(mid, 10.0)
        np.testing.assert_allclose(_grad(inside, x), 10.0)
        np.testing.assert_allclose(_grad(outside, x), 2 * X)


def test_inner_blocks_win_and_op_types_name_builtin_gradients():
    tf.RegisterGradient("Times10")(lambda op, g: g * 10.0)
    g = tf.Graph()
    with g.as_default():
        x = tf.constant(X)
        with (
            g.gradient_override_map({"Square": "Times10", "Identity": "Times10"}),
            g.gradient_override_map({"Square": "StopGradient"}),
        ):
            stopped = tf.square(x)
            ident = tf.identity(x)
        assert tf.gradients(stopped, x) == [None]
        np.testing.assert_allclose(_grad(ident, x), 10.0)


def test_registered_gradient_serves_an_op_type_without_one():
    register_op("TwiceNoGrad", ("x",), infer=same_as_input)(lambda xp, x: x * 2)
    try:
        with tf.Graph().as_default():
            x = tf.constant(X)
            y = make1("TwiceNoGrad", [x])
            with pytest.raises(LookupError, match="No gradient defined"):
                tf.gradients(y, x)
            tf.RegisterGradient("TwiceNoGrad")(lambda op, g: g * 2.0)
            np.testing.assert_allclose(_grad(y, x), 2.0)
    finally:
        del OPS["TwiceNoGrad"]


def test_errors():
    tf.RegisterGradient("Once")(lambda op, g: g)
    with pytest.raises(KeyError, match="Once"):
        tf.RegisterGradient("Once")(lambda op, g: g)
    g = tf.Graph()
    with pytest.raises(TypeError, match="strings"), g.gradient_override_map({"Square": 3}):
        pass
    with g.as_default():
        x = tf.constant(X)
        with g.gradient_override_map({"Square": "NoSuchGradient"}):
            y = tf.square(x, name="sq")
        with pytest.raises(LookupError, match=r"NoSuchGradient.*sq"):
            tf.gradients(y, x)


def test_custom_gradient_replaces_the_path_inside():
    @tf.custom_gradient
    def log1pexp(x):
        e = tf.exp(x)
        return tf.log(1 + e), lambda dy: dy * (1 - 1 / (1 + e))

    with tf.Graph().as_default():
        x = tf.constant([0.0, 100.0])
        y = log1pexp(x)
        assert y.op.type == "IdentityN"
        with tf.Session() as s:
            got = s.run(tf.gradients(y, x)[0])
    np.testing.assert_allclose(got, [0.5, 1.0])  # the plain path gives nan at 100


def test_custom_gradient_several_inputs_and_outputs():
    @tf.custom_gradient
    def pair(a, b):
        return [a * b, a + b], lambda da, db: (da * 7.0, db * 0.0 + 3.0)

    with tf.Graph().as_default():
        a, b = tf.constant(2.0), tf.constant(5.0)
        p, q = pair(a, b)
        with tf.Session() as s:
            ga, gb = s.run(tf.gradients(p + q, [a, b]))
    assert (ga, gb) == (7.0, 3.0)


def test_custom_gradient_wrong_count_names_the_function():
    @tf.custom_gradient
    def bad(a, b):
        return a * b, lambda dy: dy

    with tf.Graph().as_default():
        a, b = tf.constant(2.0), tf.constant(5.0)
        with pytest.raises(ValueError, match="bad's grad_fn returned 1 gradients for 2"):
            tf.gradients(bad(a, b), a)
