"""The one scheduler, every mechanism over it: random programs with loops and branches give the
same values serially (newest or oldest ready first), threaded (heavy kernels on the pool),
watched op by op and timed, with innermost loops compiled, and stepped in random orders;
random DAGs give the same values under every ready order of the flat rule."""

from __future__ import annotations

from unittest import mock

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flowbook as tf
from flowbook.debug import Stepper
from flowbook.runtime import pool as pool_module
from flowbook.runtime.executor import run_frames
from flowbook.runtime.observers import Observer
from flowbook.runtime.plan import build_plan
from flowbook.runtime.scheduler import Flat, InOrder, Scheduler
from tests.runtime.test_executor import build, random_dag

STEPS = ["add", "mul", "sin", "cond", "mat", "inner", "invariant"]


class Watch(Observer):
    """Watches every op, iteration and timing: keeps every loop interpreted."""

    def __init__(self) -> None:
        self.ops = 0
        self.wheres: set[tuple[tuple[str, int], ...]] = set()

    def after_op(self, op, outputs):
        self.ops += 1

    def on_iteration(self, where):
        self.wheres.add(where)


def _graph_step(a, x, c, i, steps, threshold, k):
    """One loop body, as graph ops."""
    for op in steps:
        if op == "add":
            a = a + x
        elif op == "mul":
            a = a * 0.5
        elif op == "sin":
            a = tf.sin(a)
        elif op == "mat":  # a heavy op: threaded runs may send it to the pool
            a = tf.reshape(tf.matmul(a[None], np.eye(k) * 0.5 + 0.1), [k])
        elif op == "invariant":  # a value from outside the loop (a constant Enter)
            a = a - c
        elif op == "inner":  # a loop inside, run i times
            a = tf.while_loop(lambda j, b: j < i, lambda j, b: (j + 1, b + 0.25), [0, a])[1]
        else:
            a = tf.cond(tf.reduce_sum(a) > threshold, lambda a=a: a - x, lambda a=a: a + 1.0)
    return a


def _python_step(a, x, c, i, steps, threshold, k):
    """The same body in plain Python over numpy."""
    for op in steps:
        if op == "add":
            a = a + x
        elif op == "mul":
            a = a * 0.5
        elif op == "sin":
            a = np.sin(a)
        elif op == "mat":
            a = a @ (np.eye(k) * 0.5 + 0.1)
        elif op == "invariant":
            a = a - c
        elif op == "inner":
            a = a + 0.25 * i
        else:
            a = a - x if a.sum() > threshold else a + 1.0
    return a


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(0, 5),
    k=st.integers(1, 3),
    threshold=st.floats(-2.0, 2.0),
    steps=st.lists(st.sampled_from(STEPS), min_size=1, max_size=4),
    outer_cond=st.booleans(),
    seed=st.integers(0, 2**31),
)
def test_random_loops_agree_on_every_mechanism(n, k, threshold, steps, outer_cond, seed):
    xv, cv = np.linspace(-1, 1, k), np.full(k, 0.125)
    want = np.zeros(k)
    for i in range(n):
        want = _python_step(want, xv, cv, i, steps, threshold, k)
    if outer_cond:  # the loop inside a branch, which is taken when want's sum is small
        want = want * 2.0 if xv.sum() < 10.0 else want
    with tf.Graph().as_default(), tf.Session() as s:
        x = tf.placeholder(tf.float64, [k])
        c = tf.constant(cv)

        def loop():
            body = lambda i, a: (i + 1, _graph_step(a, x, c, i, steps, threshold, k))
            return tf.while_loop(lambda i, a: i < n, body, [0, tf.zeros([k], tf.float64)])[1]

        if outer_cond:
            out = tf.cond(tf.reduce_sum(x) < 10.0, lambda: loop() * 2.0, lambda: x)
        else:
            out = loop()
        feed = {x: xv}
        got = {"compiled loops": s.run(out, feed)}
        plan = s._plans[(out, None, x)]
        path = s._paths[plan]
        for order in ("fifo", "lifo"):  # the serial reference: no pool, two ready orders
            (got[f"serial {order}"],) = run_frames(
                plan, path, [xv], order=order, compiled=False, max_in_flight=-1
            )
        with mock.patch.object(pool_module, "POOL_MIN_ELEMENTS", 0):  # heavy kernels: the pool
            (got["threaded"],) = run_frames(plan, path, [xv], compiled=False, max_in_flight=4)
        watch = Watch()
        with tf.observe(watch):  # per-op and per-iteration hooks: every loop interpreted
            got["watched"] = s.run(out, feed)
        assert watch.ops > 0
        md = tf.RunMetadata()
        got["timed"] = s.run(
            out, feed, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=md
        )
        rng = np.random.default_rng(seed)
        stepper = Stepper(s, out, feed)
        while not stepper.done:
            ready = stepper.ready()
            stepper.step(ready[rng.integers(len(ready))])
        got["stepper"] = stepper.cont()
    for how, value in got.items():
        np.testing.assert_allclose(np.asarray(value, float), want, rtol=1e-9, err_msg=how)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_dag())
def test_every_ready_order_of_the_flat_rule_agrees_on_random_dags(case):
    spec, fetch, fed = case
    with tf.Graph().as_default() as g:
        nodes = build(spec)
        feeds = {nodes[0]: np.array([0.5, -1.0, 2.0]), nodes[1]: np.array([1.5, 0.25, -3.0])}
        for i in fed:
            feeds[nodes[i]] = np.array([1.0, 2.0, 3.0])
        fetches = [nodes[i] for i in fetch]
        with tf.Session(graph=g) as s:
            fed_tensors = list(feeds)
            plan = build_plan(g, fetches, (), fed_tensors, s._bind)
            values = [feeds[t] for t in fed_tensors]
            want = Scheduler(plan, InOrder(plan, values)).run()
            runs = {
                "fifo": Scheduler(plan, Flat(plan, values)).run(),
                "lifo": Scheduler(plan, Flat(plan, values), lifo=True).run(),
                "kept": Scheduler(plan, Flat(plan, values, keep_values=True)).run(),
            }
            with mock.patch.object(pool_module, "POOL_MIN_ELEMENTS", 0):
                runs["pool"] = Scheduler(plan, Flat(plan, values), threads=4).run()
    for how, got in runs.items():
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b, err_msg=how)
