"""cond, case, while_loop: values, frames, deadness, gradients, errors, TensorFlow's graphs.

Every loop here also runs on the frame scheduler in LIFO order (the serial
reference, ``run_frames(order="lifo")``), which must give the FIFO run's values.
"""

from __future__ import annotations

import os
import threading
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flowbook as tf
from flowbook.framework.errors import InvalidArgumentError
from flowbook.runtime import pool as pool_module
from flowbook.runtime.codegen.compiled_loops import LOOP_FILENAME
from flowbook.runtime.executor import run_frames
from tests.interrupts import WITHIN, CtrlC

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures")


def _both_orders(sess, fetches, feed=None):
    """The run's values (innermost loops compiled), and the same plan with every loop
    interpreted, oldest-ready-first, newest-ready-first and with heavy ops on the thread
    pool: they must agree."""
    want = sess.run(fetches, feed)
    tensors, values = sess._feeds(feed) if feed else ((), ())
    plan = sess._plans[(fetches, None, *tensors)]
    for order in ("fifo", "lifo"):
        (got,) = run_frames(plan, sess._paths[plan], values, order=order, compiled=False)
        np.testing.assert_allclose(np.asarray(got, float), np.asarray(want, float), rtol=1e-12)
    with mock.patch.object(pool_module, "POOL_MIN_ELEMENTS", 0):  # every heavy op: the pool
        (got,) = run_frames(plan, sess._paths[plan], values, compiled=False, max_in_flight=4)
    np.testing.assert_allclose(np.asarray(got, float), np.asarray(want, float), rtol=1e-12)
    return want


# ----------------------------------------------------------------- values
CASES = {
    "cond true": (lambda x: tf.cond(x > 0.0, lambda: x * 2.0, lambda: x - 1.0), 3.0, 6.0),
    "cond false": (lambda x: tf.cond(x > 0.0, lambda: x * 2.0, lambda: x - 1.0), -3.0, -4.0),
    "cond outer constant": (lambda x: tf.cond(x > 0.0, lambda: 5.0, lambda: x), 1.0, 5.0),
    "case": (
        lambda x: tf.case([(x < 0.0, lambda: -1.0), (x < 10.0, lambda: x)], default=lambda: 9.0),
        4.0,
        4.0,
    ),
    "while": (
        lambda x: tf.while_loop(lambda i, a: i < 5, lambda i, a: (i + 1, a * x), [0, 1.0])[1],
        2.0,
        32.0,
    ),
    "nested while": (
        lambda x: tf.while_loop(
            lambda i, a: i < 3,
            lambda i, a: (
                i + 1,
                tf.while_loop(lambda j, b: j < i, lambda j, b: (j + 1, b + x), [0, a])[1],
            ),
            [0, 0.0],
        )[1],
        1.5,
        4.5,
    ),
    "cond in while": (
        lambda x: tf.while_loop(
            lambda i, a: i < 6,
            lambda i, a: (i + 1, tf.cond(i < 3, lambda: a + x, lambda: a * 2.0)),
            [0, 0.0],
        )[1],
        1.0,
        24.0,
    ),
    "while in cond": (
        lambda x: tf.cond(
            x > 0.0,
            lambda: tf.while_loop(lambda a: a < 100.0, lambda a: a * 3.0, [x]),
            lambda: x,
        ),
        2.0,
        162.0,
    ),
    "maximum_iterations": (
        lambda x: tf.while_loop(lambda a: a > -1.0, lambda a: a + x, [0.0], maximum_iterations=4),
        0.5,
        2.0,
    ),
    "dict loop vars": (
        lambda x: tf.while_loop(
            lambda s: s["i"] < 3,
            lambda s: {"i": s["i"] + 1, "v": s["v"] + x},
            [{"i": 0, "v": 0.0}],
        )["v"],
        2.0,
        6.0,
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_values(name):
    build, feed, want = CASES[name]
    with tf.Graph().as_default(), tf.Session() as s:
        x = tf.placeholder(tf.float32, [])
        y = build(x)
        assert float(_both_orders(s, y, {x: feed})) == pytest.approx(want)


def test_untaken_branch_does_not_run_and_its_tensors_are_dead():
    with tf.Graph().as_default(), tf.Session() as s:
        v = tf.Variable(0.0)
        p = tf.placeholder(tf.bool, [])
        y = tf.cond(p, lambda: tf.assign_add(v, 1.0), lambda: tf.assign_add(v, 10.0))
        s.run(tf.global_variables_initializer())
        s.run(y, {p: True})
        s.run(y, {p: False})
        assert s.run(v) == 11.0
        (f, _t) = next(op for op in y.graph.get_operations() if op.type == "Switch").outputs
        with pytest.raises(InvalidArgumentError, match="does not have a value"):
            s.run(f, {p: True})


def test_variables_read_and_updated_inside_a_loop():
    with tf.Graph().as_default(), tf.Session() as s:
        v = tf.Variable(1.0)
        s.run(tf.global_variables_initializer())

        def body(i):
            with tf.control_dependencies([tf.assign(v, v * 2.0)]):
                return i + 1

        n = tf.while_loop(lambda i: i < 4, body, [0])
        assert s.run(n) == 4 and s.run(v) == 16.0
        _, total = tf.while_loop(lambda i, t: i < 3, lambda i, t: (i + 1, t + v), [0, 0.0])
        assert s.run(total) == 48.0


def test_a_control_dependency_on_an_outside_op_inside_a_body():
    with tf.Graph().as_default(), tf.Session() as s:
        v = tf.Variable(0.0)
        s.run(tf.global_variables_initializer())
        bump = tf.assign_add(v, 5.0)

        def body(i, a):
            with tf.control_dependencies([bump]):
                return i + 1, a + tf.identity(v)

        _, a = tf.while_loop(lambda i, a: i < 2, body, [0, 0.0])
        assert s.run(a) == 10.0 and s.run(v) == 5.0


# ------------------------------------------------------------- gradients
def _numeric(f, x, eps=1e-5):
    return (f(x + eps) - f(x - eps)) / (2 * eps)


ONE, HALF, ZERO = np.float64(1.0), np.float64(0.5), np.float64(0.0)  # float64 loop variables
GRAD_CASES = {
    "power": lambda x: tf.while_loop(lambda i, a: i < 4, lambda i, a: (i + 1, a * x), [0, ONE])[1],
    "series": lambda x: tf.while_loop(
        lambda k, t, s: k < 6,
        lambda k, t, s: (k + 1, t * x / (tf.cast(k, tf.float64) + 1.0), s + t),
        [0, ONE, ZERO],
    )[2],
    "cond": lambda x: tf.cond(x > 0.5, lambda: tf.sin(x) * x, lambda: x**3),
    "nested": lambda x: tf.while_loop(
        lambda i, a: i < 2,
        lambda i, a: (
            i + 1,
            tf.while_loop(lambda j, b: j < 2, lambda j, b: (j + 1, b * x + ONE), [0, a])[1],
        ),
        [0, HALF],
    )[1],
    "cond in loop": lambda x: tf.while_loop(
        lambda i, a: i < 4,
        lambda i, a: (i + 1, tf.cond(a < 2.0, lambda: a * x, lambda: a + x)),
        [0, ONE],
    )[1],
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
@pytest.mark.parametrize("at", [0.3, 1.7])
def test_gradients_equal_finite_differences(name, at):
    with tf.Graph().as_default(), tf.Session() as s:
        x = tf.placeholder(tf.float64, [])
        y = GRAD_CASES[name](x)
        (g,) = tf.gradients(y, [x])
        got = s.run(g, {x: at})
        want = _numeric(lambda v: s.run(y, {x: v}), at)
        assert got == pytest.approx(want, rel=1e-5, abs=1e-7)


def test_loop_gradient_equals_the_unrolled_graph():
    with tf.Graph().as_default(), tf.Session() as s:
        w = tf.constant(np.arange(6.0).reshape(2, 3) / 10)
        x0 = tf.constant(np.ones((4, 2)))
        _, h = tf.while_loop(
            lambda i, h: i < 3, lambda i, h: (i + 1, tf.tanh(h @ w) @ tf.transpose(w)), [0, x0]
        )
        u = x0
        for _ in range(3):
            u = tf.tanh(u @ w) @ tf.transpose(w)
        got, want = s.run(
            [tf.gradients(tf.reduce_sum(h), w)[0], tf.gradients(tf.reduce_sum(u), w)[0]]
        )
        np.testing.assert_allclose(got, want, rtol=1e-12)


# ---------------------------------------------------------------- errors
def test_a_shape_that_changes_names_the_loop_and_line():
    with tf.Graph().as_default() as g:
        one = tf.ones([1])
        before = len(g.get_operations())
        with pytest.raises(
            ValueError, match=r"while_loop 'grow'.*test_control_flow.py.*shape_invariants"
        ):
            tf.while_loop(
                lambda a: tf.size(a) < 5, lambda a: tf.concat([a, a], 0), [one], name="grow"
            )
        assert len(g.get_operations()) == before
        a = tf.while_loop(
            lambda a: tf.size(a) < 5,
            lambda a: tf.concat([a, a], 0),
            [tf.ones([1])],
            shape_invariants=[tf.TensorShape([None])],
        )
        assert tf.Session().run(a).tolist() == [1.0] * 8


def test_bad_invariant_and_maximum_iterations_are_named():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="shape invariant"):
            tf.while_loop(lambda a: a < 1.0, lambda a: a, [tf.ones([2])], shape_invariants=[[3]])
        with pytest.raises(ValueError, match="maximum_iterations must be an integer scalar"):
            tf.while_loop(lambda a: a < 1.0, lambda a: a, [1.0], maximum_iterations=2.5)


def test_a_body_that_raises_leaves_the_graph_as_it_was():
    with tf.Graph().as_default() as g:
        x = tf.constant(1.0)
        positive = x > 0.0
        names = [op.name for op in g.get_operations()]

        def body(a):
            a = a * x
            raise RuntimeError("student's bug")

        with pytest.raises(RuntimeError):
            tf.while_loop(lambda a: a < 3.0, body, [x])
        with pytest.raises(RuntimeError):
            tf.cond(positive, lambda: body(x), lambda: x)
        assert [op.name for op in g.get_operations()] == names
        y = tf.while_loop(lambda a: a < 3.0, lambda a: a + x, [x])
        assert y.op.name == "while/Exit"


def test_a_kernel_error_names_the_op_and_the_iteration():
    with tf.Graph().as_default(), tf.Session() as s:
        _, a = tf.while_loop(
            lambda i, a: i < 3,
            lambda i, a: (i + 1, tf.reshape(a, [2, -1]) if False else a),
            [0, tf.ones([4])],
        )
        idx = tf.placeholder(tf.int32, [])
        _, b = tf.while_loop(
            lambda i, b: i < 3, lambda i, b: (i + 1, b + tf.gather(a, idx + i)), [0, 0.0]
        )
        with pytest.raises(InvalidArgumentError, match=r"GatherV2.*iteration 2"):
            s.run(b, {idx: 2})


class LoopWatch(tf.Observer):
    """Sets ``started`` when a loop starts; keeps its live count and how the run ended."""

    def __init__(self, started: threading.Event) -> None:
        self.started, self.progress, self.ended = started, None, None

    def on_loop(self, name, progress):  # watching this leaves the loop compiled
        self.progress = progress
        self.started.set()

    def on_finish(self, plan, error):
        self.ended = error


def test_interrupt_stops_a_long_loop():
    total = 10**7
    with tf.Graph().as_default(), tf.Session() as s:
        n = tf.while_loop(lambda i: i < total, lambda i: i + 1, [0])
        # the press raises only inside the compiled loop, once it has started
        press = CtrlC(inside=[LOOP_FILENAME])
        with tf.observe(LoopWatch(press.reached)) as loop, press:
            s.run(n)  # a lost interrupt: the loop ends by itself, and the block fails
        assert isinstance(loop.ended, KeyboardInterrupt)  # the run ended by the interrupt
        assert loop.progress() < total  # before the loop's end
        assert s.run(tf.while_loop(lambda i: i < 3, lambda i: i + 1, [0])) == 3


def test_deadline_in_a_loop():
    with tf.Graph().as_default(), tf.Session() as s:
        n = tf.while_loop(lambda i: i < 10**7, lambda i: i + 1, [0])
        opts = tf.RunOptions(timeout_in_ms=200)
        with pytest.raises(tf.errors.DeadlineExceededError):
            s.run(n, options=opts)


# ------------------------------------------------------- random programs
@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(0, 6),
    k=st.integers(1, 4),
    threshold=st.floats(-2.0, 2.0),
    ops=st.lists(st.sampled_from(["add", "mul", "sin", "cond", "mat"]), min_size=1, max_size=4),
)
def test_random_loops_agree_in_every_order_and_with_python(n, k, threshold, ops):
    def step(a, x, i):
        for op in ops:
            if op == "add":
                a = a + x
            elif op == "mul":
                a = a * 0.5
            elif op == "sin":
                a = tf.sin(a) if isinstance(a, tf.Tensor) else np.sin(a)
            elif op == "mat":  # a heavy op: the threaded run sends it to the pool
                m = np.eye(k) * 0.5 + 0.1
                a = tf.reshape(tf.matmul(a[None], m), [k]) if isinstance(a, tf.Tensor) else a @ m
            elif isinstance(a, tf.Tensor):
                a = tf.cond(tf.reduce_sum(a) > threshold, lambda a=a: a - x, lambda a=a: a + 1.0)
            else:
                a = a - x if a.sum() > threshold else a + 1.0
        return a

    xv = np.linspace(-1, 1, k)
    with tf.Graph().as_default(), tf.Session() as s:
        x = tf.placeholder(tf.float64, [k])
        _, a = tf.while_loop(
            lambda i, a: i < n, lambda i, a: (i + 1, step(a, x, i)), [0, tf.zeros([k], tf.float64)]
        )
        got = _both_orders(s, a, {x: xv})
    want = np.zeros(k)
    for i in range(n):
        want = step(want, xv, i)
    np.testing.assert_allclose(np.asarray(got, float), want, rtol=1e-12)


# ---------------------------------------------------- TensorFlow's graphs
def test_a_loop_graph_frozen_by_tensorflow_imports_and_computes_its_values():
    pytest.importorskip("tensorboard")
    from flowbook.graph_io import graph_def as gdef

    want = np.load(os.path.join(FIXTURES, "tf_while.npz"))
    with open(os.path.join(FIXTURES, "tf_while.pb"), "rb") as f:
        data = f.read()
    with tf.Graph().as_default(), tf.Session() as s:
        gdef.import_graph_def(data, name="")
        outs = ["exp_series:0", "nested:0", "cond_out:0"]
        for suffix, x in (("", want["x"]), ("__x2", want["x2"])):
            got = s.run(outs, {"x:0": x, "n:0": want["n"]})
            for name, value in zip(outs, got):
                key = name.replace(":", "_") + suffix
                np.testing.assert_allclose(value, want[key], rtol=1e-6, err_msg=key)


def test_tensorflows_series_gradient():
    want = np.load(os.path.join(FIXTURES, "tf_while.npz"))
    with tf.Graph().as_default(), tf.Session() as s:
        x = tf.placeholder(tf.float32, [3])
        n = tf.placeholder(tf.int32, [])

        def body(k, term, total):
            return k + 1, term * x / (tf.cast(k, tf.float32) + 1.0), total + term

        _, _, tot = tf.while_loop(lambda k, t, s: k < n, body, [0, tf.ones([3]), tf.zeros([3])])
        (gx,) = tf.gradients(tf.reduce_sum(tot), x)
        got, g = s.run([tot, gx], {x: want["x"], n: want["n"]})
    np.testing.assert_allclose(got, want["exp_series_0"], rtol=1e-6)
    np.testing.assert_allclose(g, want["grad_exp_series_x"], rtol=1e-6)


def test_control_flow_graphs_round_trip_through_graph_def():
    pytest.importorskip("tensorboard")
    from flowbook.graph_io import graph_def as gdef

    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [], name="x")
        _, y = tf.while_loop(
            lambda i, a: i < 4,
            lambda i, a: (i + 1, tf.cond(a > 3.0, lambda: a, lambda: a * x)),
            [0, 1.0],
        )
        y = tf.identity(y, name="y")
    data = gdef.to_graph_def(g).SerializeToString()
    with tf.Graph().as_default(), tf.Session() as s:
        gdef.import_graph_def(data, name="")
        assert s.run("y:0", {"x:0": 2.0}) == 4.0


def test_operation_timeout_in_ms_is_a_session_s_deadline():
    """TF's ConfigProto.operation_timeout_in_ms: every run's bound unless RunOptions sets one."""
    config = tf.ConfigProto(operation_timeout_in_ms=200)
    with tf.Graph().as_default(), tf.Session(config=config) as s:
        n = tf.while_loop(lambda i: i < 10**7, lambda i: i + 1, [0])
        q = tf.FIFOQueue(2, tf.float32)
        watch = tf.observe(LoopWatch(threading.Event()))
        with watch as loop, pytest.raises(tf.errors.DeadlineExceededError):
            s.run(n)
        assert loop.progress() < 10**7  # the deadline cut the loop short
        # should the deadline not end the wait, this element does: a failure, not a hang
        guard = threading.Timer(WITHIN, s.run, [q.enqueue(1.0)])
        guard.start()
        try:
            with pytest.raises(tf.errors.DeadlineExceededError):
                s.run(q.dequeue())  # an empty queue: the wait ends at the deadline
        finally:
            guard.cancel()
            guard.join()
        assert s.run(tf.constant(2.0) * 3.0) == 6.0  # the session stays usable
