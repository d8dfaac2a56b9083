"""The scheduler's thread pool and waits under the frame rule: heavy kernels of branches and loop iterations
run side by side on the pool; a queue op that waits inside a branch or a loop is parked."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import flowbook as tf
from flowbook.runtime import pool as pool_module
from flowbook.runtime.executor import run_frames
from tests.waits import WITHIN, Parks, once_parked


def _count_submissions(monkeypatch):
    submitted = []
    real = pool_module.pool().submit

    def counting(*args, **kwargs):
        submitted.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(pool_module.pool(), "submit", counting)
    return submitted


def test_heavy_ops_in_a_branch_and_a_loop_go_to_the_pool_and_agree(monkeypatch):
    rng = np.random.default_rng(0)
    value = rng.standard_normal((200, 200)).astype(np.float32) / 20
    with tf.Graph().as_default(), tf.Session() as s:
        x = tf.placeholder(tf.float32, [200, 200])

        def body(i, a):
            # two independent heavy products an iteration, and a cond (the loop is interpreted)
            left, right = tf.matmul(a, x), tf.matmul(x, a)
            return i + 1, tf.cond(i < 2, lambda: left + right, lambda: left - right)

        _, out = tf.while_loop(lambda i, a: i < 4, body, [0, x])
        want = s.run(out, {x: value})
        plan = list(s._plans.values())[-1]
        path = s._paths[plan]
        assert not path.layout.loops  # a cond inside: the loop stays on the scheduler
        submitted = _count_submissions(monkeypatch)
        (threaded,) = run_frames(plan, path, [value], max_in_flight=4)
        (inline,) = run_frames(plan, path, [value], max_in_flight=-1, order="lifo")
    assert submitted  # the products went to the pool
    np.testing.assert_array_equal(threaded, want)
    np.testing.assert_array_equal(inline, want)


def test_a_kernel_error_on_the_pool_names_the_op_and_iteration_and_the_session_stays_usable():
    with tf.Graph().as_default(), tf.Session() as s:
        x = tf.placeholder(tf.float32, [200, 200])
        y = tf.placeholder(tf.float32, [None, None])
        _, out = tf.while_loop(
            lambda i, a: i < 3,
            lambda i, a: (
                i + 1,
                tf.cond(i < 5, lambda: tf.matmul(a, y) + tf.matmul(x, a), lambda: a),
            ),
            [0, x],
        )
        good, bad = np.ones((200, 200), np.float32), np.ones((199, 199), np.float32)
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"MatMul.*iteration"):
            s.run(out, {x: good, y: bad})
        assert s.run(out, {x: good * 0.0, y: good}).sum() == 0.0


def test_a_dequeue_that_waits_in_a_branch_honours_the_deadline():
    with tf.Graph().as_default(), tf.Session() as s:
        q = tf.FIFOQueue(2, tf.float32, shapes=[[]], name="q")
        flag = tf.placeholder(tf.bool, [])
        got = tf.cond(flag, lambda: q.dequeue(), lambda: tf.constant(-1.0))
        assert s.run(got, {flag: False}) == -1.0
        # should the deadline not end the wait, this element does: a failure, not a hang
        guard = threading.Timer(WITHIN, s.run, [q.enqueue(7.0)])
        guard.start()
        t0 = time.monotonic()
        try:
            with pytest.raises(tf.errors.DeadlineExceededError, match="q"):
                s.run(got, {flag: True}, options=tf.RunOptions(timeout_in_ms=100))
        finally:
            guard.cancel()
            guard.join()
        assert time.monotonic() - t0 >= 0.1  # not before its deadline
        s.run(q.enqueue(5.0))
        assert s.run(got, {flag: True}) == 5.0  # the session is still usable


@pytest.mark.parametrize("parallel", [1, 2])
def test_parallel_iterations_bounds_a_loops_kernels_on_the_pool(monkeypatch, parallel):
    value = np.ones((200, 200), np.float32) / 200
    most, now, lock = [0], [0], threading.Lock()
    real = pool_module.pool().submit

    def watching(fn, *args, **kwargs):
        def counted(*a):
            with lock:
                now[0] += 1
                most[0] = max(most[0], now[0])
            try:
                give_up = time.monotonic() + WITHIN  # a hang guard: most[0] stays short
                while most[0] < parallel and time.monotonic() < give_up:
                    time.sleep(0.001)  # until as many run at once as the loop allows
                time.sleep(0.1)  # then a while longer: one more starting would show
                return fn(*a)
            finally:
                with lock:
                    now[0] -= 1

        return real(counted, *args, **kwargs)

    with tf.Graph().as_default(), tf.Session() as s:
        x = tf.placeholder(tf.float32, [200, 200])
        ta = tf.TensorArray(tf.float32, size=8)

        def body(i, ta):  # independent heavy products: every iteration could run at once
            return i + 1, ta.write(i, tf.cond(i >= 0, lambda: tf.matmul(x, x), lambda: x))

        _, ta = tf.while_loop(lambda i, ta: i < 8, body, [0, ta], parallel_iterations=parallel)
        out = ta.stack()
        want = s.run(out, {x: value})
        plan = list(s._plans.values())[-1]
        monkeypatch.setattr(pool_module.pool(), "submit", watching)
        (got,) = run_frames(plan, s._paths[plan], [value], max_in_flight=8)
    np.testing.assert_array_equal(got, want)
    assert most[0] == parallel  # iterations overlap on the pool, as many as the loop allows


def test_a_loop_that_dequeues_is_not_compiled_and_waits_for_its_elements():
    with tf.Graph().as_default(), tf.Session() as s:
        q = tf.FIFOQueue(10, tf.float32, shapes=[[]], name="q")
        _, total = tf.while_loop(
            lambda i, t: i < 3, lambda i, t: (i + 1, t + q.dequeue()), [0, 0.0]
        )
        enqueue = q.enqueue(4.0)  # made here: another thread has its own default graph
        s.run(q.enqueue_many([[1.0, 2.0]]))
        waits = Parks()
        later = once_parked(waits.parked, lambda: s.run(enqueue))
        opts = tf.RunOptions(timeout_in_ms=int(2 * WITHIN * 1000))  # should it never come
        with tf.observe(waits):
            assert s.run(total, options=opts) == 7.0  # the third dequeue waited for it
        later.join()
        assert waits.events[0][:2] == ("wait", "QueueDequeueV2")
        (plan,) = [p for p in s._plans.values() if p.control_flow]
        assert not s._paths[plan].layout.loops


def test_observers_hear_of_a_wait_inside_a_branch():
    with tf.Graph().as_default(), tf.Session() as s:
        q = tf.FIFOQueue(2, tf.float32, shapes=[[]], name="q")
        got = tf.cond(tf.constant(True), lambda: q.dequeue(), lambda: tf.constant(-1.0))
        enqueue = q.enqueue(3.0)
        seen = Parks()
        later = once_parked(seen.parked, lambda: s.run(enqueue))
        with tf.observe(seen):
            assert s.run(got, options=tf.RunOptions(timeout_in_ms=int(2 * WITHIN * 1000))) == 3.0
        later.join()
    assert seen.events == [
        ("wait", "QueueDequeueV2", "an element of queue 'q'"),
        ("end", "QueueDequeueV2"),
    ]
