"""Queues: TF1's queue classes, their ops, and ops that wait without a thread."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import flowbook as tf
from tests.interrupts import CtrlC
from tests.waits import WITHIN, Parks, once_parked


def _later(seconds, fn):
    t = threading.Timer(seconds, fn)
    t.start()
    return t


def test_fifo_order_size_and_closed_drained_queue():
    q = tf.FIFOQueue(10, [tf.int32, tf.string], shapes=[[], []])
    with tf.Session() as s:
        s.run(q.enqueue_many([[1, 2, 3], ["a", "b", "c"]]))
        s.run(q.enqueue((4, "d")))
        assert s.run(q.size()) == 4
        assert s.run(q.dequeue()) == [1, b"a"]
        got = s.run(q.dequeue_many(2))
        np.testing.assert_array_equal(got[0], [2, 3])
        s.run(q.close())
        assert s.run(q.is_closed())
        np.testing.assert_array_equal(s.run(q.dequeue_up_to(5))[0], [4])
        with pytest.raises(tf.errors.OutOfRangeError, match=r"fifo_queue_Dequeue.*is closed"):
            s.run(q.dequeue())
        with pytest.raises(tf.errors.CancelledError, match="is closed"):
            s.run(q.enqueue((5, "e")))


@pytest.mark.parametrize(
    "build, error",
    [
        (lambda q: q.enqueue(["x"]), (TypeError, ValueError)),  # a string into an int32 queue
        (lambda q: q.enqueue([[1, 2, 3]]), ValueError),  # shape [3] into [2]
        (lambda q: q.enqueue([1, 2]), ValueError),  # two components into one
    ],
)
def test_dtypes_shapes_and_counts_are_checked_when_building(build, error):
    q = tf.FIFOQueue(3, tf.int32, shapes=[[2]])
    with pytest.raises(error):
        build(q)


def test_names_give_dicts_and_shapes_are_set():
    q = tf.FIFOQueue(5, [tf.float32, tf.int32], shapes=[[2], []], names=["x", "y"])
    assert q.dequeue()["x"].shape.as_list() == [2]
    assert q.dequeue_many(4)["y"].shape.as_list() == [4]
    assert q.dequeue_up_to(4)["x"].shape.as_list() == [None, 2]
    with tf.Session() as s:
        s.run(q.enqueue({"x": [1.0, 2.0], "y": 3}))
        out = s.run(q.dequeue())
        assert out["y"] == 3 and list(out["x"]) == [1.0, 2.0]
    with pytest.raises(ValueError, match="keys"):
        q.enqueue({"x": [1.0, 2.0]})


def test_runtime_shape_mismatch_names_the_op():
    q = tf.FIFOQueue(3, tf.float32, shapes=[[2]])
    x = tf.placeholder(tf.float32)
    enq = q.enqueue(x, name="put")
    with (
        tf.Session() as s,
        pytest.raises(tf.errors.InvalidArgumentError, match=r"'put'.*Expected \[2\], got \[3\]"),
    ):
        s.run(enq, {x: [1.0, 2.0, 3.0]})


def test_dequeue_many_needs_shapes_and_may_exceed_capacity():
    q = tf.FIFOQueue(2, tf.int32)
    with tf.Session() as s, pytest.raises(tf.errors.InvalidArgumentError, match="specified shapes"):
        s.run(q.dequeue_many(2))
    q = tf.FIFOQueue(2, tf.int32, shapes=[[]])
    with tf.Session() as s:
        threads = [_later(0.05, lambda: s.run(q.enqueue_many([list(range(5))])))]
        np.testing.assert_array_equal(s.run(q.dequeue_many(5)), range(5))
        threads[0].join()


def test_padding_fifo_pads_to_the_batch_max():
    q = tf.PaddingFIFOQueue(5, [tf.int32], shapes=[[None]])
    x = tf.placeholder(tf.int32, [None])
    enq = q.enqueue([x])
    with tf.Session() as s:
        s.run(enq, {x: [1]})
        s.run(enq, {x: [1, 2, 3]})
        np.testing.assert_array_equal(s.run(q.dequeue_many(2)), [[1, 0, 0], [1, 2, 3]])
    with pytest.raises(ValueError):
        tf.PaddingFIFOQueue(5, [tf.int32], shapes=None)


def _shuffled(seed):
    with tf.Graph().as_default():
        q = tf.RandomShuffleQueue(100, 10, tf.int32, shapes=[[]], seed=seed)
        with tf.Session() as s:
            s.run(q.enqueue_many([list(range(50))]))
            first = list(s.run(q.dequeue_many(40)))
            with pytest.raises(tf.errors.DeadlineExceededError):  # 10 stay until closed
                s.run(q.dequeue(), options=tf.RunOptions(timeout_in_ms=50))
            s.run(q.close())
            return first + list(s.run(q.dequeue_up_to(100)))


def test_random_shuffle_is_seeded_repeatable_and_loses_nothing():
    a, b = _shuffled(7), _shuffled(7)
    assert a == b and sorted(a) == list(range(50)) and a != list(range(50))


def test_priority_queue_lowest_first():
    q = tf.PriorityQueue(10, [tf.string], shapes=[[]])
    with tf.Session() as s:
        s.run(q.enqueue_many([[3, 1, 2], ["c", "a", "b"]]))
        pri, val = s.run(q.dequeue_many(3))
        assert list(pri) == [1, 2, 3] and list(val) == [b"a", b"b", b"c"]


def test_queues_are_shared_by_runs_and_sessions_are_separate():
    q = tf.FIFOQueue(5, tf.int32)
    with tf.Session() as a, tf.Session() as b:
        a.run(q.enqueue(1))
        assert a.run(q.size()) == 1 and b.run(q.size()) == 0


def test_other_ready_ops_run_while_an_op_waits():
    q = tf.FIFOQueue(5, tf.float32)
    side = tf.FIFOQueue(5, tf.float32)
    d = q.dequeue()
    with tf.control_dependencies([side.enqueue(9.0)]):
        marker = tf.identity(1.0)
    with tf.Session() as s:
        # the dequeue waits; the side enqueue in the same run still runs: another run sees it
        t = _later(0.0, lambda: None)
        box = {}
        worker = threading.Thread(target=lambda: box.setdefault("v", s.run([d, marker])))
        worker.start()
        # bounds that only turn a hang into a failure: the worker may start late under load
        bound = tf.RunOptions(timeout_in_ms=int(WITHIN * 1000))
        assert s.run(side.dequeue(), options=bound) == 9.0
        s.run(q.enqueue(5.0))
        worker.join(WITHIN)
        assert box["v"][0] == 5.0
        t.join()


@pytest.mark.parametrize(
    "how", ["close", "cancel_enqueue", "timeout", "interrupt", "session_close"]
)
def test_a_blocked_run_ends_when_its_wait_is_ended(how):
    q = tf.FIFOQueue(1, tf.int32)
    full = q.enqueue(1)
    s = tf.Session()
    s.run(full)  # now full: another enqueue waits
    op = q.dequeue()
    s.run(op)  # empty again: a dequeue waits
    expect = {
        "close": tf.errors.OutOfRangeError,
        "cancel_enqueue": tf.errors.CancelledError,
        "timeout": tf.errors.DeadlineExceededError,
        "interrupt": KeyboardInterrupt,
        "session_close": tf.errors.CancelledError,
    }[how]
    # a deadline that fires only if what should end the wait does not: a failure, not a hang
    options = tf.RunOptions(timeout_in_ms=int(2 * WITHIN * 1000))
    press = CtrlC(inside=[tf.Session.run])
    parked, ender = press.reached, None
    if how == "cancel_enqueue":
        s.run(full)
        op = full
        ender = once_parked(parked, lambda: s.run(q.close(cancel_pending_enqueues=True)))
    elif how == "close":
        ender = once_parked(parked, lambda: s.run(q.close()))
    elif how == "timeout":
        options = tf.RunOptions(timeout_in_ms=100)
    elif how == "session_close":
        ender = once_parked(parked, s.close)
    start = time.monotonic()
    with tf.observe(Parks(parked)):
        if how == "interrupt":
            with press:  # presses from the moment the dequeue waits, until caught
                s.run(op, options=options)
            info = None
        else:
            with pytest.raises(expect) as info:
                s.run(op, options=options)
    elapsed = time.monotonic() - start
    if ender is not None:
        ender.join()
    assert parked.is_set()  # the run waited; then what ended the wait ended the run
    if how == "timeout":
        assert elapsed >= 0.1  # not before its deadline
    if info is not None:
        assert "fifo_queue" in str(info.value)
    if how != "session_close":
        assert s.run(q.size()) == (1 if op is full else 0)  # the waiting op took nothing
        assert s.run(tf.constant(3)) == 3  # the session is still usable
        s.close()


def test_a_cancelled_dequeue_puts_nothing_away():
    q = tf.FIFOQueue(5, tf.int32, shapes=[[]])
    with tf.Session() as s:
        s.run(q.enqueue(1))
        with pytest.raises(tf.errors.DeadlineExceededError, match="DequeueMany"):
            s.run(q.dequeue_many(2), options=tf.RunOptions(timeout_in_ms=50))
        assert s.run(q.size()) == 1  # what the waiting dequeue_many had taken went back


def test_producers_and_consumers_lose_and_duplicate_nothing():
    n, producers, consumers, chunk = 100_000, 4, 4, 250
    q = tf.FIFOQueue(1000, tf.int64, shapes=[[]])
    x = tf.placeholder(tf.int64, [None])
    enq, deq = q.enqueue_many([x]), q.dequeue_up_to(chunk)
    got: list = []
    with tf.Session() as s:

        def produce(k):
            for start in range(k * n // producers, (k + 1) * n // producers, chunk):
                s.run(enq, {x: np.arange(start, start + chunk)})

        def consume():
            while True:
                try:
                    got.append(s.run(deq))
                except tf.errors.OutOfRangeError:
                    return

        ps = [threading.Thread(target=produce, args=(k,)) for k in range(producers)]
        cs = [threading.Thread(target=consume) for _ in range(consumers)]
        for t in ps + cs:
            t.start()
        for t in ps:
            t.join()
        s.run(q.close())
        for t in cs:
            t.join()
    values = np.concatenate(got)
    assert len(values) == n and len(np.unique(values)) == n


def test_container_reset_releases_queues_and_variables():
    with tf.container("exp"):
        q = tf.FIFOQueue(3, tf.int32)
        v = tf.Variable(1.0)
    other = tf.FIFOQueue(3, tf.int32)
    with tf.Session() as s:
        s.run([q.enqueue(1), other.enqueue(2), v.initializer])
        tf.Session.reset("", ["exp"])
        assert s.run(q.size()) == 0 and s.run(other.size()) == 1
        with pytest.raises(tf.errors.FailedPreconditionError):
            s.run(v)


def test_queue_ops_round_trip_through_graph_def_names():
    q = tf.RandomShuffleQueue(10, 2, [tf.float32], shapes=[[3]], seed=1)
    q.dequeue_many(2)
    types = {op.type for op in tf.get_default_graph().get_operations()}
    assert {"RandomShuffleQueueV2", "QueueDequeueManyV2"} <= types
    graph_def, g2 = tf.get_default_graph().as_graph_def(), tf.Graph()
    with g2.as_default():
        tf.import_graph_def(graph_def, name="")
    assert g2.get_operation_by_name(q.name).get_attr("min_after_dequeue") == 2
