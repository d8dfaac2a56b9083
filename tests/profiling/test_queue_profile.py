"""Waiting time in profiles: a queue op's wait is counted apart from its kernel time.

A dequeue from an empty queue (or an enqueue into a full one) is parked by
the threaded scheduler; FULL_TRACE step stats start it at its wait, its
kernel ``op_start_rel_micros`` later; ``tf.profile()`` tables gain a
``waited_ms`` column; Chrome traces get a separate async ``wait`` slice.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable

import numpy as np
import pytest

import flowbook as tf
from tests.waits import Parks, once_parked

WAIT_S = 0.2  # how long the other thread keeps the run waiting, once it waits


def _traced() -> tuple[tf.RunOptions, tf.RunMetadata]:
    opts = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE, timeout_in_ms=20_000)
    return opts, tf.RunMetadata()


@pytest.fixture(autouse=True)
def parked():
    """Set when a queue op of the test's runs starts to wait (``waits.Parks``), so the other
    thread lets it wait WAIT_S from then: the wait cannot come out short on a busy machine."""
    parks = Parks()
    with tf.observe(parks):
        yield parks.parked


def _later(parked: threading.Event, fn: Callable[[], None]) -> threading.Thread:
    """Call ``fn`` on another thread WAIT_S after the run starts waiting on a queue."""
    return once_parked(parked, fn, after=WAIT_S)


def _node(md: tf.RunMetadata, name: str):
    return next(n for d in md.step_stats.dev_stats for n in d.node_stats if n.node_name == name)


@pytest.mark.parametrize("kind", ["dequeue", "dequeue_many", "enqueue"])
def test_a_wait_is_counted_apart_from_kernel_time(kind, parked):
    with tf.Graph().as_default(), tf.Session() as sess:
        q = tf.FIFOQueue(1, tf.float32, shapes=[[3]], name="q")
        x = tf.placeholder(tf.float32, [3], name="x")
        enq = q.enqueue([x], name="enq")
        if kind == "enqueue":  # a full queue: the enqueue waits for room
            sess.run(enq, {x: np.zeros(3)})
            waiter, fetch, feed = "enq", enq, {x: np.ones(3)}
            deq = q.dequeue(name="deq")  # built here: the default graph is per thread
            other = _later(parked, lambda: sess.run(deq))
        else:
            deq = q.dequeue(name="deq") if kind == "dequeue" else q.dequeue_many(2, name="deq")
            waiter, fetch, feed = "deq", tf.reduce_sum(deq, name="total"), None

            def feed_two() -> None:
                for k in range(2):
                    sess.run(enq, {x: np.full(3, k + 1.0)})

            other = _later(parked, feed_two)
        opts, md = _traced()
        with tf.profile() as prof:
            value = sess.run(fetch, feed, options=opts, run_metadata=md)
        other.join()
    if kind != "enqueue":
        assert value == (3.0 if kind == "dequeue" else 9.0)
    n = _node(md, waiter)
    waited_us, kernel_us = n.op_start_rel_micros, n.op_end_rel_micros - n.op_start_rel_micros
    assert waited_us >= WAIT_S * 1e6 * 0.75 and 0 <= kernel_us < waited_us / 2  # wait apart
    assert n.all_start_micros >= n.scheduled_micros and n.all_end_rel_micros >= n.op_end_rel_micros
    others = [m for d in md.step_stats.dev_stats for m in d.node_stats if m is not n]
    assert others and all(m.op_start_rel_micros == 0 for m in others)
    # the profile table: waited_ms apart from total_ms (kernel time)
    rows = {r["op"]: r for r in prof.table().rows}
    assert rows[waiter]["waited_ms"] >= WAIT_S * 1e3 * 0.75
    assert rows[waiter]["total_ms"] == pytest.approx(kernel_us / 1e3, abs=0.01)
    assert all(r["waited_ms"] == 0 for k, r in rows.items() if k != waiter)
    assert "waited_ms" in str(prof.table(by="type"))
    # Chrome traces: one async wait slice, ending where the kernel starts
    for trace in (
        prof.chrome_trace(),
        tf.timeline.Timeline(md.step_stats).generate_chrome_trace_format(),
    ):
        events = json.loads(trace)["traceEvents"]
        begin, end = (e for e in events if e.get("cat") == "wait")
        assert (begin["ph"], end["ph"], begin["id"]) == ("b", "e", end["id"])
        assert begin["args"]["op"] == waiter and end["ts"] - begin["ts"] >= WAIT_S * 1e6 * 0.75
        kernel = next(e for e in events if e["ph"] == "X" and e["name"] == waiter)
        assert kernel["ts"] == pytest.approx(end["ts"], abs=2)
    assert "waiting on queues" in prof.timeline()._repr_html_()


def test_without_waits_the_table_has_no_waited_column_and_the_trace_no_wait_slice():
    with tf.Graph().as_default(), tf.Session() as sess:
        q = tf.FIFOQueue(4, tf.float32, name="q")
        sess.run(q.enqueue(1.0))
        opts, md = _traced()
        with tf.profile() as prof:
            assert sess.run(q.dequeue(), options=opts, run_metadata=md) == 1.0
    assert "waited_ms" not in prof.table().columns
    assert '"cat":"wait"' not in prof.chrome_trace()
    assert all(n.op_start_rel_micros == 0 for d in md.step_stats.dev_stats for n in d.node_stats)


def test_a_wait_ended_by_the_deadline_is_traced_to_its_end():
    with tf.Graph().as_default(), tf.Session() as sess:
        q = tf.FIFOQueue(4, tf.float32, name="q")
        deq = q.dequeue(name="deq")
        opts, md = _traced()
        opts.timeout_in_ms = int(WAIT_S * 1000)
        with tf.profile() as prof, pytest.raises(tf.errors.DeadlineExceededError, match="deq"):
            sess.run(deq, options=opts, run_metadata=md)
        sess.run(q.enqueue(2.0))  # the session is still usable and the queue whole
        assert sess.run(deq) == 2.0
    n = _node(md, "deq")
    assert n.op_start_rel_micros >= WAIT_S * 1e6 * 0.75
    (row,) = (r for r in prof.table().rows if r["op"] == "deq")
    assert row["waited_ms"] >= WAIT_S * 1e3 * 0.75


def test_a_wait_in_a_run_with_a_loop_is_counted_apart_too(parked):
    """Runs with branches and loops go through the frame scheduler, which parks waits too."""
    with tf.Graph().as_default(), tf.Session() as sess:
        q = tf.FIFOQueue(4, tf.float32, shapes=[[]], name="q")
        body = lambda k, s: (k + 1, s + q.dequeue(name="deq"))
        total = tf.while_loop(lambda k, s: k < 3, body, [0, 0.0])[1]
        enq = q.enqueue_many([[1.0, 2.0, 3.0]])
        other = _later(parked, lambda: sess.run(enq))
        opts, md = _traced()
        with tf.profile() as prof:
            assert sess.run(total, options=opts, run_metadata=md) == 6.0
        other.join()
    n = _node(md, "while/deq")  # the first iteration's: it waited
    assert n.op_start_rel_micros >= WAIT_S * 1e6 * 0.75
    assert n.op_end_rel_micros - n.op_start_rel_micros < n.op_start_rel_micros / 2  # wait apart
    (row,) = (r for r in prof.table().rows if r["op"] == "while/deq")
    assert row["count"] == 3 and row["waited_ms"] >= WAIT_S * 1e3 * 0.75
    assert row["total_ms"] < row["waited_ms"] / 2
    labels = [m.timeline_label for d in md.step_stats.dev_stats for m in d.node_stats]
    assert sum("[loop" in label for label in labels) >= 3  # the loop's ops, once per iteration
