"""Fuzzing feed conversion: every value fed to every kind of placeholder runs or is refused.

Values are drawn from what a notebook may hand ``feed_dict``: Python ints of
any size, floats (inf and NaN included), bools, strings, bytes, None, nested
lists (ragged ones too) and numpy arrays of every dtype.  Each run must return
an array of the placeholder's dtype and a shape it accepts, or raise
TypeError/ValueError naming the placeholder, within the fuzzers' memory and
time bounds, and never change what a later good feed computes.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import flowbook as tf
from tests.fuzzing import FUZZ, bounded

pytestmark = pytest.mark.fuzz

TARGETS = [
    (tf.float32, [None]), (tf.float64, [2]), (tf.int32, [None]), (tf.int64, []),
    (tf.uint8, [None, None]), (tf.bool, [None]), (tf.string, [None]), (tf.int32, [2, None]),
]  # fmt: skip

SCALARS = st.one_of(
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.text(max_size=4),
    st.binary(max_size=4),
    st.none(),
)
NESTED = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4), max_leaves=12)
ARRAYS = hnp.arrays(
    st.sampled_from(
        [
            np.float16,
            np.float32,
            np.float64,
            np.int8,
            np.int32,
            np.int64,
            np.uint8,
            np.uint64,
            np.bool_,
            np.complex64,
            "U3",
            "S3",
            object,
        ]
    ),
    hnp.array_shapes(min_dims=0, max_dims=3, max_side=3),
)


@pytest.fixture(scope="module")
def graph():
    g = tf.Graph()
    with g.as_default():
        holders = [tf.placeholder(dt, shape, name=f"p{i}") for i, (dt, shape) in enumerate(TARGETS)]
        outs = [tf.identity(p) for p in holders]
    sess = tf.Session(graph=g)  # not a `with`: that would keep g the default graph
    yield sess, holders, outs
    sess.close()


@pytest.mark.filterwarnings("error")  # numpy's cast warnings mean a value changed
@FUZZ
@given(st.integers(0, len(TARGETS) - 1), st.one_of(NESTED, ARRAYS))
def test_any_value_fed_runs_or_is_refused_by_name(graph, which, value):
    sess, holders, outs = graph
    p = holders[which]
    with bounded(f"feeding {type(value).__name__} to {p.name}"):
        try:
            got = sess.run(outs[which], {p: value})
        except (TypeError, ValueError) as e:
            assert f"'{p.name}'" in str(e) or f"'{p.op.name}'" in str(e), str(e)
            return
    assert got.dtype == p.dtype.np or (p.dtype.name == "string" and got.dtype == object)
    assert p.shape.is_compatible_with(got.shape)
