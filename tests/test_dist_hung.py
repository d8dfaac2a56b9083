"""A hung worker (issue 20, §3.3): alive but not answering, found by its Dask heartbeat.

A ``LocalCluster`` of processes under nannies (``ps-0``, ``worker-0``,
``worker-1``) on loopback, started and closed by the fixture.  A worker is
hung by stopping its process (``SIGSTOP``): its connections stay open, so
only the heartbeat check (``flowbook.distributed.liveness``) can fail the
step.  Every stopped process is continued (``SIGCONT``) in a ``finally``,
and every wait is bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import threading
import time

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

from task_clusters import run_in_thread, stalled_step, task_cluster  # noqa: E402

import flowbook as tf  # noqa: E402
from flowbook.distributed import liveness  # noqa: E402
from flowbook.distributed.recovery import RecoverableSession  # noqa: E402

pytestmark = [
    pytest.mark.timeout(240),
    pytest.mark.skipif(not hasattr(signal, "SIGSTOP"), reason="needs POSIX signals"),
]
PS, W0, W1 = (f"/job:{j}/replica:0/task:{k}" for j, k in (("ps", 0), ("worker", 0), ("worker", 1)))
ERROR_WITHIN_S = 10.0  # the bound on a lost (here: hung) worker's step
BOUNDED = tf.RunOptions(timeout_in_ms=10_000)  # runs that must not wait for ever if wrong


@pytest.fixture(scope="module")
def client():
    with task_cluster(processes=True, timeout=120) as c:
        yield c


@contextlib.contextmanager
def stopped(client, session, task):
    """``task``'s worker process stopped (SIGSTOP) inside the block, continued after it,
    whatever happens.  Yields ``(pid, time stopped)``."""
    job, k = task.split("/")[1][4:], int(task.rsplit(":", 1)[1])
    address = session.cluster.task_address(job, k)
    pid = client.run(os.getpid, workers=[address])[address]
    os.kill(pid, signal.SIGSTOP)
    try:
        yield pid, time.monotonic()
    finally:
        os.kill(pid, signal.SIGCONT)


def _wait_open(session, task, want=1):
    deadline = time.monotonic() + 30
    while session.task_stats()[task]["open_steps"] != want and time.monotonic() < deadline:
        time.sleep(0.05)
    return session.task_stats()[task]["open_steps"]


def _busy_for(seconds, task):
    """A kernel that computes on ``task`` for ``seconds`` (a while_loop of matmuls that
    reads the clock), its result read on the ps."""
    g = tf.Graph()
    with g.as_default():
        with tf.device(task):
            t0 = tf.timestamp()
            w = tf.constant(np.full((128, 128), 1 / 128, np.float32))
            _, x = tf.while_loop(
                lambda i, x: tf.timestamp() - t0 < seconds,
                lambda i, x: (i + 1, tf.tanh(tf.matmul(x, w)) + 1.0),
                [tf.constant(0), tf.ones((128, 128))],
            )
        with tf.device("/job:ps/task:0"):
            total = tf.reduce_mean(x) * 0.0 + 1.0
    return g, total


def test_a_stopped_worker_fails_the_step_naming_it_and_is_used_again_once_continued(client):
    g, t = stalled_step("hung_1")
    with tf.Session(client, graph=g) as s:
        s.run(t["init"])
        address = s.cluster.task_address("worker", 1)
        thread, box = run_in_thread(s, t["train"])
        assert _wait_open(s, PS) == 1  # the ps has 2a and waits for worker-1's value
        with stopped(client, s, W1) as (_, at):
            thread.join(ERROR_WITHIN_S + 5)
            assert "error" in box, "the step did not fail"
            assert box["at"] - at < ERROR_WITHIN_S
            e = box["error"]
            assert isinstance(e, tf.errors.UnavailableError), e
            assert W1 in str(e) and "hung" in str(e) and address in str(e)
            # asked of the ps alone (a run, or variables_on, would wait for worker-1 first)
            ps = s._on_tasks("variable_values", [PS], find_lost=False)[PS]
            assert (ps["a"], ps["b"]) == (1.0, 10.0)  # no update half-applied on the ps
            stats = s._on_tasks("stats", [PS], find_lost=False)[PS]
            assert stats["open_steps"] == 0  # its waiting Recv was aborted
        # continued: the next run finds the same worker, server and queue; the step given
        # up is aborted there first, so its dequeue does not take the value put next
        s.run(t["put"], options=BOUNDED)
        assert s.cluster.task_address("worker", 1) == address
        assert s.run(t["size"], options=BOUNDED) == 1
        s.run(t["train"], options=BOUNDED)
        assert s.run([t["a"], t["b"]], options=BOUNDED) == [3.0, 15.0]
        assert _wait_open(s, W1, 0) == 0


def test_a_long_kernel_on_a_healthy_worker_is_not_taken_for_hung(client):
    seconds = liveness.HUNG_AFTER_S + 1.5  # longer than the heartbeat bound
    g, total = _busy_for(seconds, "/job:worker/task:1")
    with tf.Session(client, graph=g) as s:
        polls = s.heartbeats.polls
        began = time.monotonic()
        assert s.run(total) == 1.0
        assert time.monotonic() - began >= seconds
        assert s.heartbeats.polls - polls >= seconds - 2  # the check ran all along
        assert not s._lost


def test_a_recoverable_session_goes_on_once_the_worker_is_continued(client):
    g, total = _busy_for(1.5, "/job:worker/task:1")
    made = []

    def create():
        made.append(tf.Session(client, graph=g))
        return made[-1]

    s = RecoverableSession(create, wait_s=30)
    try:
        assert s.run(total) == 1.0
        thread, box = run_in_thread(s, total)
        time.sleep(0.5)  # the step is running on worker-1
        with stopped(client, s.session, W1) as (pid, at):
            timer = threading.Timer(liveness.HUNG_AFTER_S + 4, os.kill, (pid, signal.SIGCONT))
            timer.start()  # continued while the session waits for the worker to come back
            try:
                thread.join(ERROR_WITHIN_S + 20)
            finally:
                timer.cancel()
        assert box.get("value") == 1.0, box
        assert box["at"] - at < liveness.HUNG_AFTER_S + 4 + ERROR_WITHIN_S  # continued, rerun
        assert s.recoveries == 1 and len(made) == 2
        assert made[1].cluster.task_address("worker", 1) == made[0].cluster.task_address(
            "worker", 1
        )  # the same worker, continued: not replaced
    finally:
        s.close()


def test_operation_timeout_in_ms_bounds_a_step_a_live_task_blocks(client):
    g, t = stalled_step("hung_2")
    config = tf.ConfigProto(operation_timeout_in_ms=1000)
    with tf.Session(client, graph=g, config=config) as s:
        s.run(t["init"])
        began = time.monotonic()
        with pytest.raises(tf.errors.DeadlineExceededError):
            s.run(t["train"])
        assert time.monotonic() - began < 1.0 + ERROR_WITHIN_S
        assert s.run(t["a"]) == 1.0  # the session goes on


# -------------------------------------------------- the heartbeat bookkeeping, no cluster
@pytest.mark.parametrize(
    "n_workers, bound, beats, now, silent",
    [
        (3, 5.0, [(0.0, 1.0), (1.0, 1.5)], 5.9, {}),  # moved at 1.0: 4.9 s ago
        (3, 5.0, [(0.0, 1.0), (1.0, 1.0)], 6.4, {"w": 6.4}),  # stood still since 0.0
        (3, 5.0, [(0.0, None)], 5.5, {"w": 5.5}),  # the scheduler no longer knows it
        (1000, 5.0, [(0.0, 1.0)], 12.0, {}),  # 6 s heartbeats there: the bound is 18 s
        (1000, 5.0, [(0.0, 1.0)], 18.5, {"w": 18.5}),
    ],
)
def test_heartbeats_find_the_silent_workers(n_workers, bound, beats, now, silent):
    h = liveness.Heartbeats(hung_after_s=bound)
    others = {f"o{k}": {"last_seen": 0.0} for k in range(n_workers - 1)}
    for at, beat in beats:
        me = {} if beat is None else {"w": {"last_seen": beat}}
        h.update({**others, **me}, ["w"], now=at)
    assert {a: round(s, 3) for a, s in h.silent(["w"], now).items()} == silent


def test_a_scheduler_that_does_not_answer_gives_no_verdict(monkeypatch):
    class Scheduler:
        async def identity(self, n_workers):
            await asyncio.sleep(60)

    class Client:
        scheduler = Scheduler()

    monkeypatch.setattr(liveness, "ASK_S", 0.05)
    h = liveness.Heartbeats(hung_after_s=0.0)
    h.seen["w"] = (1.0, 0.0)  # silent for ever, as far as it knows
    box = {}  # on a thread of its own: earlier tests may leave this thread's loop running

    def ask():
        box["verdict"] = asyncio.run(liveness.heartbeats(Client(), h, ["w"]))

    thread = threading.Thread(target=ask, daemon=True)
    thread.start()
    thread.join(30)
    assert box["verdict"] == {}
    assert h.polls == 0
