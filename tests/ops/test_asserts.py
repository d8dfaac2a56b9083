"""``tf.Assert`` and the ``tf.assert_*`` functions: static failures where values are known,
InvalidArgumentError naming the Assert op and its line when they run.
"""

from __future__ import annotations

import numpy as np
import pytest

import flowbook as tf
from flowbook.framework.errors import InvalidArgumentError

F = np.float32
# (id, build(x) for x of the fed value's dtype, a passing value, a failing value, message part)
CASES = [
    ("equal", lambda x: tf.assert_equal(x, [1.0, 2.0]), F([1, 2]), F([1, 3]), "x == y"),
    ("none_equal", lambda x: tf.assert_none_equal(x, 0.0), F([1, 2]), F([0, 2]), "x != y"),
    ("less", lambda x: tf.assert_less(x, 2.0), F([1, 1]), F([1, 2]), "x < y"),
    ("less_equal", lambda x: tf.assert_less_equal(x, 2.0), F([2, 1]), F([3, 1]), "x <= y"),
    ("greater", lambda x: tf.assert_greater(x, 0.0), F([1, 2]), F([0, 2]), "x > y"),
    ("greater_equal", lambda x: tf.assert_greater_equal(x, 0.0), F([0, 2]), F([-1]), "x >= y"),
    ("positive", lambda x: tf.assert_positive(x), F([1, 2]), F([0, 2]), "x > 0"),
    ("negative", lambda x: tf.assert_negative(x), F([-1, -2]), F([-1, 0]), "x < 0"),
    ("non_negative", lambda x: tf.assert_non_negative(x), F([0, 2]), F([-1, 2]), "x >= 0"),
    ("non_positive", lambda x: tf.assert_non_positive(x), F([0, -2]), F([1]), "x <= 0"),
    ("near", lambda x: tf.assert_near(x, [1.0, 2.0], atol=0.1), F([1.05, 2]), F([1.2, 2]), "tolerance"),
    ("message", lambda x: tf.assert_positive(x, message="need > 0"), F([1]), F([-1]), "need > 0"),
    ("Assert", lambda x: tf.Assert(tf.reduce_all(x > 0), ["x was", x]), F([1]), F([-4]), "x was [-4.0]"),
]  # fmt: skip


@pytest.mark.parametrize("name,build,good,bad,match", CASES, ids=[c[0] for c in CASES])
def test_runtime_failure_names_the_assert_op(name, build, good, bad, match):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None])
        check = build(x)
        assert check.type == "Assert"
        y = tf.identity(x)
        with tf.control_dependencies([check]):
            z = tf.identity(x)
        with tf.Session() as s:
            assert s.run(z, {x: good}).tolist() == good.tolist()
            assert s.run(y, {x: bad}).tolist() == bad.tolist()  # not run: not a dependency
            with pytest.raises(InvalidArgumentError, match="assertion failed") as e:
                s.run(z, {x: bad})
    text = str(e.value)
    assert match in text and check.name in text and "test_asserts.py" in text


@pytest.mark.parametrize("name,build,good,bad,match", CASES[:-1], ids=[c[0] for c in CASES[:-1]])
def test_known_values_fail_where_the_graph_is_built(name, build, good, bad, match):
    with tf.Graph().as_default():
        build(tf.constant(good))  # passes: an Assert op is still built
        with pytest.raises(InvalidArgumentError, match=match.split()[0]):
            build(tf.constant(bad))


def test_summarize_limits_the_data_shown():
    with tf.Graph().as_default(), tf.Session() as s:
        a = tf.Assert(tf.constant(False), [tf.range(10)], summarize=2)
        with pytest.raises(InvalidArgumentError, match=r"assertion failed: \[0 1\.\.\.\]"):
            s.run(a)


RANKS = [
    ("rank", lambda x: tf.assert_rank(x, 2), [[1.0]], [1.0], "must have rank 2"),
    ("at_least", lambda x: tf.assert_rank_at_least(x, 1), [1.0], 1.0, "at least 1"),
    ("rank_in", lambda x: tf.assert_rank_in(x, [0, 2]), 1.0, [1.0], r"in \[0, 2\]"),
]  # fmt: skip


@pytest.mark.parametrize("name,build,good,bad,match", RANKS, ids=[r[0] for r in RANKS])
def test_rank_assertions(name, build, good, bad, match):
    with tf.Graph().as_default():
        assert build(tf.constant(good)).type == "NoOp"  # known rank: checked here, no op to run
        with pytest.raises(ValueError, match=match):
            build(tf.constant(bad))
        x = tf.placeholder(tf.float32)  # unknown rank: an Assert on the Rank op
        check = build(x)
        with tf.Session() as s:
            s.run(check, {x: good})
            with pytest.raises(InvalidArgumentError, match=match):
                s.run(check, {x: bad})


def test_static_dtype_and_shape_assertions():
    with tf.Graph().as_default():
        i, f = tf.constant([1, 2]), tf.constant(1.0)
        assert tf.assert_integer(i).type == "NoOp"
        with pytest.raises(TypeError, match="integer"):
            tf.assert_integer(f)
        assert tf.assert_type(f, tf.float32).type == "NoOp"
        with pytest.raises(TypeError, match="must be of type int32"):
            tf.assert_type(f, tf.int32)
        assert tf.assert_scalar(f) is f
        with pytest.raises(ValueError, match="Expected scalar"):
            tf.assert_scalar(i)
        assert tf.assert_same_float_dtype([f, f]) is tf.float32
        assert tf.assert_same_float_dtype() is tf.float32
        with pytest.raises(ValueError, match="same dtype"):
            tf.assert_same_float_dtype([f], tf.float64)
        with pytest.raises(ValueError, match="floating"):
            tf.assert_same_float_dtype([i])
        tf.assert_proper_iterable([i, f])
        for bad in (i, "ab", np.ones(2)):
            with pytest.raises(TypeError, match="proper iterable"):
                tf.assert_proper_iterable(bad)


def test_monotonic_predicates():
    with tf.Graph().as_default(), tf.Session() as s:
        got = s.run(
            [
                tf.is_non_decreasing([[1, 2], [2, 3]]),
                tf.is_non_decreasing([3, 1]),
                tf.is_strictly_increasing([1.0, 2.0, 5.0]),
                tf.is_strictly_increasing([1, 1]),
            ]
        )
    assert [bool(v) for v in got] == [True, False, True, False]


def test_assert_takes_a_bool_scalar():
    with tf.Graph().as_default():
        with pytest.raises(TypeError, match="bool"):
            tf.Assert(tf.constant(1), ["x"])
        with pytest.raises(ValueError, match="scalar"):
            tf.Assert(tf.constant([True, False]), ["x"])
