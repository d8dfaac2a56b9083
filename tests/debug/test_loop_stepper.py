"""Stepping through branches and loops: the Stepper driving the scheduler under the frame rule."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flowbook as tf
from flowbook.debug import LoopStepper, Stepper, StepperError

FRAME = "loop/while_context"


def _counter(n=3):
    return tf.while_loop(lambda i: i < n, lambda i: i + 1, [tf.constant(0)], name="loop")


def test_a_run_with_a_loop_gets_the_loop_stepper_and_steps_iteration_by_iteration():
    with tf.Graph().as_default(), tf.Session() as s:
        i = _counter()
        st_ = Stepper(s, i)
        assert isinstance(st_, LoopStepper)
        wheres = []
        while not st_.done:
            op = st_.step()
            wheres.append((op.name, st_.where))
        assert ("loop/add", ((FRAME, 0),)) in wheres and ("loop/add", ((FRAME, 2),)) in wheres
        assert ("loop/add", ((FRAME, 3),)) not in wheres  # the last check fails
        assert st_.iterations == {FRAME: 3}
        assert st_.cont() == 3 == s.run(i)


def test_run_to_an_op_in_iteration_k_and_inspect_it():
    with tf.Graph().as_default(), tf.Session() as s:
        _, acc = tf.while_loop(
            lambda k, a: k < 5, lambda k, a: (k + 1, a * 2.0), [0, 1.0], name="loop"
        )
        st_ = Stepper(s, acc)
        st_.run_to("loop/mul", iteration=2)
        assert st_.value("loop/mul") == 8.0 and st_.value_where("loop/mul") == ((FRAME, 2),)
        assert st_.where == ((FRAME, 2),)
        st_.run_to("loop/mul")  # its next run: iteration 3
        assert st_.value("loop/mul") == 16.0
        assert st_.cont() == 32.0
        with pytest.raises(StepperError, match="ended before"):
            st_.run_to("loop/mul", iteration=9)


def test_a_cond_steps_only_its_taken_branch():
    with tf.Graph().as_default(), tf.Session() as s:
        x = tf.placeholder(tf.float32, [])
        y = tf.cond(x > 0.0, lambda: tf.square(x, name="yes"), lambda: tf.negative(x, name="no"))
        st_ = Stepper(s, y, {x: 3.0})
        assert st_.cont() == 9.0
        ran = {op.name for op in st_.executed}
        assert "cond/yes" in ran and "cond/no" not in ran
        assert "cond/no" in {op.name for op in st_.remaining()}
        with pytest.raises(StepperError, match="has not been computed"):
            st_.value("cond/no")


def test_breakpoints_stop_in_every_iteration():
    with tf.Graph().as_default(), tf.Session() as s:
        i = _counter(4)
        st_ = Stepper(s, i)
        st_.break_at("loop/add")
        stops = 0
        while st_.cont() is None:
            assert st_.stopped_at.name == "loop/add"
            stops += 1
        assert stops == 4 and st_.cont() == 4


def test_a_kernel_error_names_the_iteration_and_leaves_the_op_ready():
    with tf.Graph().as_default(), tf.Session() as s:
        idx = tf.placeholder(tf.int32, [])
        table = tf.constant([1.0, 2.0])
        _, b = tf.while_loop(
            lambda k, a: k < 4,
            lambda k, a: (k + 1, a + tf.gather(table, k * idx)),
            [0, 0.0],
            name="loop",
        )
        st_ = Stepper(s, b, {idx: 1})
        with pytest.raises(tf.errors.InvalidArgumentError, match="iteration 2"):
            st_.cont()
        assert "loop/GatherV2" in {op.name for op in st_.ready()}  # still ready, still usable
        with pytest.raises(tf.errors.InvalidArgumentError):
            st_.step("loop/GatherV2")


def test_the_nan_guard_names_the_iteration():
    config = tf.ConfigProto(check_numerics=True)
    with tf.Graph().as_default(), tf.Session(config=config) as s:
        _, a = tf.while_loop(
            lambda k, a: k < 6, lambda k, a: (k + 1, a * 1e20), [0, 1.0], name="loop"
        )
        with pytest.raises(tf.errors.InvalidArgumentError, match=f"iteration 1 of loop '{FRAME}'"):
            s.run(a)
        with pytest.raises(tf.errors.InvalidArgumentError, match=f"iteration 1 of loop '{FRAME}'"):
            Stepper(s, a).cont()


def test_stepping_a_dynamic_rnn():
    rng = np.random.default_rng(0)
    with tf.Graph().as_default(), tf.Session() as s:
        x = tf.constant(rng.normal(size=(2, 4, 3)).astype(np.float32))
        out, _ = tf.nn.dynamic_rnn(tf.nn.rnn_cell.BasicRNNCell(5), x, dtype=tf.float32)
        s.run(tf.global_variables_initializer())
        want = s.run(out)
        st_ = Stepper(s, out)
        tanh = next(op for op in st_.plan.ops if op.type == "Tanh")
        st_.run_to(tanh, iteration=1)
        np.testing.assert_allclose(st_.value(tanh), want[:, 1], rtol=1e-6)
        np.testing.assert_allclose(st_.cont(), want, rtol=1e-6)


@settings(max_examples=30, deadline=None)
@given(
    n=st.integers(0, 4),
    threshold=st.floats(-2.0, 2.0),
    seed=st.integers(0, 2**31),
)
def test_every_order_the_stepper_allows_gives_the_runs_values(n, threshold, seed):
    rng = np.random.default_rng(seed)

    def body(i, a, b):
        a2 = tf.cond(tf.reduce_sum(a) > threshold, lambda: a * 0.5 - b, lambda: a + 1.0)
        inner = tf.while_loop(lambda j, c: j < i, lambda j, c: (j + 1, c + tf.sin(a2)), [0, b])
        return i + 1, a2, inner[1]

    with tf.Graph().as_default(), tf.Session() as s:
        x = tf.placeholder(tf.float64, [3])
        out = tf.while_loop(lambda i, a, b: i < n, body, [0, x, tf.zeros([3], tf.float64)])
        feed = {x: np.linspace(-1, 1, 3)}
        want = s.run(out, feed)
        st_ = Stepper(s, out, feed)
        while not st_.done:
            ready = st_.ready()
            st_.step(ready[rng.integers(len(ready))])
        got = st_.cont()
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)
