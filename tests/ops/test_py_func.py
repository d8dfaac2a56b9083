"""``tf.py_func`` / ``tf.numpy_function``: Python functions run as host ops."""

from __future__ import annotations

import numpy as np
import pytest

import flowbook as tf
from flowbook.framework.errors import InvalidArgumentError
from flowbook.framework.registry import OPS


def run(fetches, feed=None):
    with tf.Session() as s:
        return s.run(fetches, feed)


def test_values_dtypes_and_unknown_shapes():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [3])
        y = tf.py_func(lambda a: a.astype(np.float64) ** 2, [x], tf.float32)
        lo, hi, n = tf.py_func(
            lambda a: (a.min(), a.max(), a.size), [x], [tf.float32] * 2 + [tf.int64]
        )
        assert y.op.type == "PyFunc" and y.dtype is tf.float32 and y.shape.ndims is None
        got = run([y, lo, hi, n], {x: [1.0, -2.0, 3.0]})
    assert got[0].dtype == np.float32 and got[0].tolist() == [1.0, 4.0, 9.0]
    assert [got[1], got[2], got[3]] == [-2.0, 3.0, 3] and got[3].dtype == np.int64


def test_calls_every_run_and_sees_numpy_arrays():
    seen = []
    with tf.Graph().as_default():
        x = tf.placeholder(tf.int32, [None])
        y = tf.numpy_function(lambda a: seen.append(type(a)) or a + 1, [x], tf.int32)
        for k in range(3):
            assert run(y, {x: [k]}).tolist() == [k + 1]
    assert seen == [np.ndarray] * 3


def test_no_outputs_and_stateless():
    calls = []
    with tf.Graph().as_default():
        op = tf.py_func(lambda: calls.append(1), [], [])
        assert op.type == "PyFunc" and list(op.outputs) == []
        run(op)
        pure = tf.py_func(lambda a: a, [tf.constant(1.0)], tf.float32, stateful=False)
        assert pure.op.type == "PyFuncStateless" and not OPS["PyFuncStateless"].stateful
        assert run(pure) == 1.0
    assert calls == [1] and OPS["PyFunc"].stateful and OPS["PyFunc"].host_only


def _boom(a):
    raise ValueError("the function broke")


ERRORS = [
    ("raises", _boom, tf.float32, "ValueError: the function broke"),
    ("count", lambda a: (a, a), tf.float32, "returned 2 values, Tout lists 1"),
    ("dtype", lambda a: a + 0.5, tf.int32, "does not convert to int32"),
]


@pytest.mark.parametrize("name,fn,tout,match", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_name_the_op_and_its_line(name, fn, tout, match):
    with tf.Graph().as_default():
        y = tf.py_func(fn, [tf.constant([1.0])], tout, name="mine")
        with pytest.raises(InvalidArgumentError, match=match) as e:
            run(y)
    assert "PyFunc 'mine'" in str(e.value) and "test_py_func.py:" in str(e.value)


def test_not_differentiable():
    with tf.Graph().as_default():
        x = tf.constant([1.0])
        assert tf.gradients(tf.py_func(lambda a: a, [x], tf.float32), [x]) == [None]


def test_a_graph_def_copy_finds_the_function_in_this_process():
    with tf.Graph().as_default() as g:
        tf.py_func(lambda a: a * 3, [tf.constant([2])], tf.int32, name="triple")
    with tf.Graph().as_default():
        tf.import_graph_def(g.as_graph_def(), name="")
        assert run("triple:0").tolist() == [6]
