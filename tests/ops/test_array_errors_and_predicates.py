"""TF1's array names beyond the op tables: errors, predicates and static shapes.

The ops' values are rows of ``test_ops_array`` and their gradients rows of
``test_gradients_array``; here are what those rows cannot show.
"""

from __future__ import annotations

import numpy as np
import pytest

import flowbook as tf

BUILD_ERRORS = [
    ("linspace_num", lambda: tf.linspace(0.0, 1.0, 0), "num > 0"),
    ("linspace_int", lambda: tf.linspace(0, 1, 3), "DataType int32"),
    ("broadcast_to", lambda: tf.broadcast_to(tf.zeros([2, 3]), [3, 3]), "must be equal or 1"),
    ("roll_sizes", lambda: tf.roll(tf.zeros([2, 3]), [1, 2], [0]), "same size"),
    ("roll_axis", lambda: tf.roll(tf.zeros([2, 3]), 1, 2), "out of range"),
    ("unique_rank", lambda: tf.unique(tf.zeros([2, 3])), "must be a vector"),
    ("setdiff_dtype", lambda: tf.setdiff1d([1, 2], [1, 2], tf.float32), "out_idx"),
]


@pytest.mark.parametrize("name,build,match", BUILD_ERRORS, ids=[b[0] for b in BUILD_ERRORS])
def test_build_errors_name_the_line(name, build, match):
    with tf.Graph().as_default(), pytest.raises((ValueError, TypeError), match=match) as e:
        build()
    assert "test_array_errors_and_predicates.py:" in str(e.value)


def test_runtime_shape_errors_name_the_op():
    with tf.Graph().as_default():
        s = tf.placeholder(tf.int32, [None])
        t = tf.broadcast_dynamic_shape(s, [3])
        with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError) as e:
            sess.run(t, {s: [2]})
    assert "Incompatible shapes" in str(e.value) and t.op.name in str(e.value)


def test_static_shapes():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3])
        assert tf.linspace(0.0, 1.0, 5).shape.as_list() == [5]
        assert tf.linspace(0.0, 1.0, tf.placeholder(tf.int32, [])).shape.as_list() == [None]
        assert tf.broadcast_to(x, [4, 2, 3]).shape.as_list() == [4, 2, 3]
        assert tf.unique(tf.placeholder(tf.int32, [7])).idx.shape.as_list() == [7]
        assert tf.reduce_logsumexp(x, 1).shape.as_list() == [None]
        assert tf.count_nonzero(x, 0, keepdims=True).shape.as_list() == [1, 3]
        assert tf.broadcast_dynamic_shape([2, 1], [3]).shape.as_list() == [2]


def test_logsumexp_of_minus_infinities_and_its_gradient():
    with tf.Graph().as_default(), tf.Session() as s:
        x = tf.constant([[-np.inf, -np.inf], [0.0, 0.0]], tf.float64)
        y = tf.reduce_logsumexp(x, 1)
        got, (g,) = s.run([y, tf.gradients(y, [x])])
    assert got[0] == -np.inf and got[1] == pytest.approx(np.log(2))
    np.testing.assert_allclose(g[1], [0.5, 0.5])


def test_broadcast_static_shape():
    got = tf.broadcast_static_shape(tf.TensorShape([2, 1]), tf.TensorShape([None, 4]))
    assert got.as_list() == [2, 4]
    with pytest.raises(ValueError, match="Incompatible"):
        tf.broadcast_static_shape(tf.TensorShape([2]), tf.TensorShape([3]))


def test_predicates_and_dimensions():
    with tf.Graph().as_default():
        v = tf.Variable(1.0)
        assert tf.is_tensor(v) and tf.is_tensor(tf.constant("s"))
        assert not tf.is_tensor(np.ones(2)) and not tf.is_tensor([1.0])
        assert tf.is_numeric_tensor(tf.constant(1)) and not tf.is_numeric_tensor(tf.constant("s"))
        assert not tf.is_numeric_tensor(3.0)
    shape = tf.TensorShape([None, 4])
    assert tf.dimension_value(shape[0]) is None and tf.dimension_value(shape[1]) == 4
    assert tf.dimension_value(5) == 5
    assert tf.dimension_at_index(tf.TensorShape(None), 3).value is None
    assert tf.dimension_at_index([2, 7], 1).value == 7


def test_shape_n_and_aliases():
    with tf.Graph().as_default(), tf.Session() as s:
        a, b = s.run(tf.shape_n([tf.zeros([2, 3]), tf.zeros([4])], tf.int64))
        assert a.tolist() == [2, 3] and b.dtype == np.int64
        assert tf.lin_space is tf.linspace
        got = s.run(tf.log_sigmoid(tf.constant([50.0, -50.0], tf.float64)))
    np.testing.assert_allclose(got, [-np.log1p(np.exp(-50.0)), -50.0 - np.log1p(np.exp(-50.0))])


@pytest.mark.parametrize(
    "build,feed,match",
    [
        (lambda a: tf.bincount(a), [1, -2], "non-negative"),
        (
            lambda a: tf.histogram_fixed_width(tf.cast(a, tf.float32), [0.0, 1.0], a[0]),
            [0],
            "nbins",
        ),
        (lambda a: tf.unravel_index(a, [2, 2]), [4], "out of range"),
    ],
)
def test_counting_runtime_errors_name_the_op(build, feed, match):
    with tf.Graph().as_default():
        a = tf.placeholder(tf.int32, [None])
        t = build(a)
        with tf.Session() as s, pytest.raises(tf.errors.InvalidArgumentError, match=match) as e:
            s.run(t, {a: feed})
    assert t.op.name in str(e.value) and "test_array_errors_and_predicates.py" in str(e.value)


def test_bincount_of_nothing_and_searchsorted_of_nd():
    with tf.Graph().as_default(), tf.Session() as s:
        a = tf.placeholder(tf.int32, [None])
        assert s.run(tf.bincount(a), {a: []}).tolist() == []
        assert s.run(tf.bincount(a, minlength=2), {a: []}).tolist() == [0, 0]
        seq = np.sort(np.arange(24.0).reshape(2, 3, 4) % 7, axis=-1)
        v = np.full((2, 3, 2), 3.0)
        got = s.run(tf.searchsorted(seq, v, side="right"))
    want = np.stack(
        [np.searchsorted(r, q, "right") for r, q in zip(seq.reshape(6, 4), v.reshape(6, 2))]
    )
    np.testing.assert_array_equal(got, want.reshape(2, 3, 2))
    with pytest.raises(ValueError, match="side"):
        tf.searchsorted([1.0], [1.0], side="middle")
