"""Session.run's remembered last run (flowbook.runtime.run_args.LastRun): same values, same errors.

Each test runs a sequence of ``sess.run`` calls twice: on a session that
remembers its last run, and on one that forgets it before every run (so each
run takes the general path: flatten, feed_items, the plan cache).  Values,
and errors (type and message), must be identical.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flowbook as tf
from flowbook.runtime.run_args import FLAT, ONE, LastRun, fetch_elements


def _outcome(sess: Any, fetches: Any, feed: Any, forget: bool) -> Any:
    if forget:
        sess._last = None
    try:
        return ("ok", sess.run(fetches, feed))
    except Exception as e:  # the error is part of what must match
        return ("error", type(e).__name__, str(e))


def _same(a: Any, b: Any) -> None:
    if isinstance(a, tuple | list):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            _same(a[k], b[k])
    elif isinstance(a, np.ndarray | np.generic):
        assert type(a) is type(b) and a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    else:
        assert a == b


def _model() -> tuple[Any, dict[str, Any]]:
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        y = tf.placeholder(tf.int32, [None], name="y")
        w = tf.Variable(np.arange(3, dtype=np.float32), name="w")
        s = tf.add(tf.reduce_sum(x * w, 1), tf.cast(y, tf.float32), name="s")
        step = tf.assign_add(w, tf.reduce_mean(x, 0))
        init = tf.global_variables_initializer()
    return g, {"x": x, "y": y, "w": w, "s": s, "step": step, "init": init}


FEEDS = [  # (x value, y value): good ones, converted ones, and ones the checks refuse
    (np.ones((2, 3), np.float32), np.arange(2)),
    (np.ones((4, 3), np.float32), np.arange(4, dtype=np.int32)),
    (np.ones((2, 3)), [1, 2]),  # float64 and a list: converted
    (np.ones((2, 3), np.float32), np.array([2**40, 1])),  # int64 beyond int32: refused
    (np.ones((2, 3), np.float32), np.array([1.5, 2.0])),  # not whole: refused
    (np.ones((2, 4), np.float32), np.arange(2)),  # wrong shape: refused
    (np.ones((2, 3), np.float32), np.array([-1, 3], np.int64)),
    ([[1, 2], [3]], np.arange(2)),  # ragged: refused
    (np.ones((3, 3), np.float32), np.arange(3, dtype=np.uint64)),
]


def _fetches(h: dict[str, Any], k: int) -> Any:
    return [h["s"], (h["s"], h["w"]), [h["s"], h["step"]], {"s": h["s"]}, h["step"], "s:0"][k]


def _compare(calls: list[tuple[int, int, bool]]) -> None:
    g, h = _model()
    with tf.Session(graph=g) as fast, tf.Session(graph=g) as slow:
        fast.run(h["init"])
        slow.run(h["init"])
        for k, f, swap in calls:
            xv, yv = FEEDS[f]
            feed = {h["y"]: yv, h["x"]: xv} if swap else {h["x"]: xv, h["y"]: yv}
            a = _outcome(fast, _fetches(h, k), feed, forget=False)
            b = _outcome(slow, _fetches(h, k), feed, forget=True)
            _same(a, b)


@pytest.mark.parametrize("k", range(6))
def test_every_pair_of_feeds_matches_the_general_path(k: int) -> None:
    """Each feed after each other one, same fetches: the second run is a remembered one."""
    pairs = [(f1, f2) for f1 in range(len(FEEDS)) for f2 in range(len(FEEDS))]
    _compare([(k, f, swap) for swap in (False, True) for pair in pairs for f in pair])


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 5), st.integers(0, len(FEEDS) - 1), st.booleans()),
        min_size=1,
        max_size=12,
    )
)
def test_remembered_runs_match_the_general_path(calls: list[tuple[int, int, bool]]) -> None:
    _compare(calls)


def test_a_remembered_run_sees_graph_edits() -> None:
    with tf.Graph().as_default() as g, tf.Session() as s:
        x = tf.placeholder(tf.float32, name="x")
        y = x * 2.0
        assert float(s.run(y, {x: np.float32(1)})) == 2.0
        assert s._last is not None
        y.op._update_input(1, tf.constant(5.0))
        assert float(s.run(y, {x: np.float32(1)})) == 5.0
        assert g is s.graph


def test_a_mutated_fetch_list_is_read_again() -> None:
    with tf.Graph().as_default(), tf.Session() as s:
        a, b = tf.constant(1), tf.constant(2)
        fetches = [a, b]
        assert s.run(fetches) == [1, 2]
        fetches[1] = a
        assert s.run(fetches) == [1, 1]
        fetches.append(b)
        assert s.run(fetches) == [1, 1, 2]


def test_set_shape_after_a_run_refuses_what_it_accepted() -> None:
    with tf.Graph().as_default(), tf.Session() as s:
        x = tf.placeholder(tf.float32, name="x")
        y = x + 1.0
        v = np.zeros((2, 3), np.float32)
        s.run(y, {x: v})
        s.run(y, {x: v})
        x.set_shape([4, 3])
        with pytest.raises(ValueError, match="Cannot feed value of shape"):
            s.run(y, {x: v})


def test_int64_labels_are_cast_exactly_or_refused() -> None:
    with tf.Graph().as_default(), tf.Session() as s:
        y = tf.placeholder(tf.int32, [None], name="y")
        z = y * 1
        for _ in range(2):
            out = s.run(z, {y: np.array([1, -2, 2**31 - 1])})
            assert out.dtype == np.int32 and out.tolist() == [1, -2, 2**31 - 1]
        with pytest.raises(ValueError, match="2147483648 is outside"):
            s.run(z, {y: np.array([1, 2**31])})
        with pytest.raises(ValueError, match="-2147483649 is outside"):
            s.run(z, {y: np.array([-(2**31) - 1, 0])})


@pytest.mark.parametrize(
    "make, remembered",
    [
        (lambda h: (h["s"], {h["x"]: np.ones((1, 3)), h["y"]: [1]}), True),
        (lambda h: ((h["s"], h["step"]), {h["x"]: np.ones((1, 3)), h["y"]: [1]}), True),
        (lambda h: ("s:0", {h["x"]: np.ones((1, 3)), h["y"]: [1]}), False),  # names re-resolve
        (lambda h: (h["s"], {"x:0": np.ones((1, 3)), h["y"]: [1]}), False),  # a string key
        (lambda h: ({"s": h["s"]}, {h["x"]: np.ones((1, 3)), h["y"]: [1]}), False),
        (lambda h: (h["s"], {h["x"]: np.ones((1, 3)), h["y"]: [1], h["w"]: [0, 0, 0]}), False),
    ],
    ids=["tensor", "flat-tuple", "name", "string-key", "dict", "fed-variable"],
)
def test_which_runs_are_remembered(make: Any, remembered: bool) -> None:
    g, h = _model()
    with tf.Session(graph=g) as s:
        s.run(h["init"])
        fetches, feed = make(h)
        s.run(fetches, feed)
        assert isinstance(s._last, LastRun) is remembered


def test_fetch_elements_common_shapes() -> None:
    with tf.Graph().as_default() as g:
        a = tf.constant(1.0)
        assert fetch_elements(g, a) == ([a], ONE)
        assert fetch_elements(g, a.op) == ([a.op], ONE)
        assert fetch_elements(g, (a, a.op)) == ([a, a.op], FLAT)
        elements, structure = fetch_elements(g, (a, a))  # repeated: the general path
        assert elements == [a] and structure not in (ONE, FLAT)
