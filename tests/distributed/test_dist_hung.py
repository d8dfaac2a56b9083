"""A hung worker (the whitepaper's §3.3): alive but not answering, found by its Dask heartbeat.

A ``LocalCluster`` of processes under nannies (``ps-0``, ``worker-0``,
``worker-1``) on loopback, started and closed by the fixture.  A worker is
hung by stopping its process (``SIGSTOP``): its connections stay open, so
only the heartbeat check (``flowbook.distributed.liveness``) can fail the
step.  Every stopped process is continued (``SIGCONT``) in a ``finally``.

No test bounds a step by a duration: a step fails with the cause it must
name (hung, a deadline), and the order of events is what is checked -- the
stop, then the step's failure; the session finding the worker hung, then
its continuation, then the recovered run; the heartbeats read past the bound
while a kernel runs, then the kernel's end.  Every wait is for an event,
bounded by ``waits.WAIT_S``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import threading
import time

import pytest

distributed = pytest.importorskip("distributed")

import flowbook as tf  # noqa: E402
from flowbook.distributed import liveness  # noqa: E402
from flowbook.distributed.recovery import RecoverableSession  # noqa: E402
from tests.task_clusters import (  # noqa: E402
    busy_until_put,
    open_steps,
    run_in_thread,
    stalled_step,
    task_cluster,
    wait_workers,
    worker_pid,
)
from tests.waits import WAIT_S, join, wait_until  # noqa: E402

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.skipif(not hasattr(signal, "SIGSTOP"), reason="needs POSIX signals"),
]
PS, W0, W1 = (f"/job:{j}/replica:0/task:{k}" for j, k in (("ps", 0), ("worker", 0), ("worker", 1)))
BOUNDED = tf.RunOptions(timeout_in_ms=int(WAIT_S * 1000))  # runs that must not wait for ever


@pytest.fixture(scope="module")
def cluster():
    with task_cluster(processes=True) as c:
        yield c


@pytest.fixture
def client(cluster):
    """The cluster's client, once every task's worker is on the scheduler."""
    wait_workers(cluster)
    return cluster


@contextlib.contextmanager
def stopped(client, address):
    """The worker process at ``address`` stopped (SIGSTOP) inside the block, continued after
    it, whatever happens."""
    pid = worker_pid(client, address)
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def test_a_stopped_worker_fails_the_step_naming_it_and_is_used_again_once_continued(client):
    g, t = stalled_step("hung_1")
    with tf.Session(client, graph=g) as s:
        s.run(t["init"])
        address = s.cluster.task_address("worker", 1)
        thread, box = run_in_thread(s, t["train"])
        wait_until(lambda: open_steps(s, PS) == 1, "the ps to wait for worker-1's value")
        with stopped(client, address):
            join(thread, "the step whose worker-1 was stopped")
            e = box.get("error")
            assert isinstance(e, tf.errors.UnavailableError), box
            assert W1 in str(e) and "hung" in str(e) and address in str(e)
            # asked of the ps alone (a run, or variables_on, would wait for worker-1 first)
            ps = s._on_tasks("variable_values", [PS], find_lost=False)[PS]
            assert (ps["a"], ps["b"]) == (1.0, 10.0)  # no update half-applied on the ps
            wait_until(lambda: open_steps(s, PS) == 0, "the ps's waiting Recv to be aborted")
        # continued: the next run finds the same worker, server and queue; the step given
        # up is aborted there first, so its dequeue does not take the value put next
        s.run(t["put"], options=BOUNDED)
        assert s.cluster.task_address("worker", 1) == address
        assert s.run(t["size"], options=BOUNDED) == 1
        s.run(t["train"], options=BOUNDED)
        assert s.run([t["a"], t["b"]], options=BOUNDED) == [3.0, 15.0]
        wait_until(lambda: open_steps(s, W1) == 0, "worker-1 to hold no step")


def test_a_long_kernel_on_a_healthy_worker_is_not_taken_for_hung(client):
    g, t = busy_until_put("busy_1", "/job:worker/task:1")
    with tf.Session(client, graph=g) as s:
        reads = []  # when the heartbeats were read (the client's clock)
        update = s.heartbeats.update

        def noted(workers, addresses, now):
            update(workers, addresses, now)
            reads.append(now)

        s.heartbeats.update = noted
        began = time.monotonic()
        thread, box = run_in_thread(s, t["total"])
        # the kernel runs until the check has read worker-1's heartbeat past the bound: a
        # worker whose heartbeat stood still so long would have been found hung by then
        wait_until(
            lambda: any(r - began > s.heartbeats.bound() for r in reads) or "error" in box,
            "the heartbeats to be read past the bound",
        )
        with tf.Session(client, graph=g) as other:
            other.run(t["put"], options=BOUNDED)  # the kernel ends
        join(thread, "the step of the long kernel")
        assert box.get("value") == 1.0, box
        assert not s._lost


def test_a_recoverable_session_goes_on_once_the_worker_is_continued(client):
    g, t = busy_until_put("busy_2", "/job:worker/task:1")
    made = []

    def create():
        made.append(tf.Session(client, graph=g))
        return made[-1]

    s = RecoverableSession(create, wait_s=WAIT_S)
    try:
        address = s.session.cluster.task_address("worker", 1)
        thread, box = run_in_thread(s, t["total"])
        wait_until(lambda: open_steps(made[0], PS) == 1, "the ps to wait for worker-1's value")
        with stopped(client, address):  # worker-1 stopped mid-kernel
            wait_until(lambda: W1 in made[0]._hung, "the session to find worker-1 hung")
        # continued while the session waits for it to come back; the run is made again
        wait_until(
            lambda: len(made) == 2 and open_steps(made[1], PS) == 1,
            "the run to be made again on a new session",
        )
        with tf.Session(client, graph=g) as other:
            other.run(t["put"], options=BOUNDED)  # the kernels end
        join(thread, "the recovered run")
        assert box.get("value") == 1.0, box
        assert s.recoveries == 1 and len(made) == 2
        # the same worker, continued: not replaced
        assert made[1].cluster.task_address("worker", 1) == address
    finally:
        s.close()


def test_operation_timeout_in_ms_bounds_a_step_a_live_task_blocks(client):
    g, t = stalled_step("hung_2")
    config = tf.ConfigProto(operation_timeout_in_ms=1000)
    with tf.Session(client, graph=g, config=config) as s:
        s.run(t["init"], options=BOUNDED)  # the runs' own deadline, not the config's
        began = time.monotonic()
        thread, box = run_in_thread(s, t["train"])  # only its deadline can end it
        join(thread, "the step bounded by operation_timeout_in_ms")
        assert isinstance(box.get("error"), tf.errors.DeadlineExceededError), box
        assert box["at"] - began >= 1.0  # not before its deadline
        assert s.run(t["a"], options=BOUNDED) == 1.0  # the session goes on


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
    join(thread, "the heartbeat check of a scheduler that does not answer")
    assert box["verdict"] == {}
    assert h.polls == 0
