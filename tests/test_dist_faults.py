"""A lost worker (issue 20, §3.3): worker processes on loopback, killed mid-step.

A ``LocalCluster`` of processes under nannies (``ps-0``, ``worker-0``,
``worker-1``), started and closed by the fixture.  A worker is killed with
``os._exit`` sent through ``client.run``; its nanny starts a new one of the
same name at a new address.  Every wait is bounded: the step's error within
10 s, the worker's return within ``SERVER_START_S``.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

from task_clusters import run_in_thread, stalled_step, task_cluster  # noqa: E402

import flowbook as tf  # noqa: E402
from flowbook.distributed.session import SERVER_START_S  # noqa: E402

pytestmark = pytest.mark.timeout(240)
PS, W0, W1 = (f"/job:{j}/replica:0/task:{k}" for j, k in (("ps", 0), ("worker", 0), ("worker", 1)))
ERROR_WITHIN_S = 10.0  # the bound on a lost worker's step


@pytest.fixture(scope="module")
def client():
    with task_cluster(processes=True, timeout=120) as c:
        yield c


def _kill(client, session, task):
    """End ``task``'s worker process at once (its nanny starts a new one)."""
    address = session.cluster.task_address(*_job_task(task))

    def kill():
        with contextlib.suppress(Exception):  # its connection closes: the call fails
            client.run(os._exit, 1, workers=[address])

    threading.Thread(target=kill, daemon=True).start()


def _job_task(task):
    parts = dict(p.split(":") for p in task.strip("/").split("/"))
    return parts["job"], int(parts["task"])


def _wait_started(session, task, before):
    deadline = time.monotonic() + 30
    while session.task_stats()[task]["open_steps"] == before and time.monotonic() < deadline:
        time.sleep(0.05)


def test_one_call_per_task_and_only_fetched_values(client):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [], name="x")
        with tf.device("/job:ps/task:0"):
            a = x * 2.0
        with tf.device("/job:worker/task:0"):
            b = a + 1.0
        with tf.device("/job:worker/task:1"):
            c = b * 3.0
    with tf.Session(client, graph=g) as s:
        before = dict(s.calls)
        for k in range(5):
            assert s.run(c, {x: float(k)}) == (2.0 * k + 1.0) * 3.0
        assert s.calls["run"] - before.get("run", 0) == 5 * 3  # one Dask call per task per step
        assert sum(s.calls.values()) - sum(before.values()) == 5 * 3  # and nothing else
        assert s.last_step["returned"] == {PS: [], W0: [], W1: [27.0]}  # k = 4


def test_a_killed_worker_fails_the_step_with_its_name_and_leaves_the_ps_untouched(client):
    g, t = stalled_step("stall_1")
    a = t["a"]
    with tf.Session(client, graph=g) as s:
        s.run(t["init"])
        thread, box = run_in_thread(s, t["train"])
        _wait_started(s, PS, 0)  # the ps waits for db (and has da)
        old = s.cluster.task_address("worker", 1)
        killed = time.monotonic()
        _kill(client, s, W1)
        thread.join(ERROR_WITHIN_S + 5)
        assert "error" in box, "the step did not fail"
        assert box["at"] - killed < ERROR_WITHIN_S
        e = box["error"]
        assert isinstance(e, tf.errors.UnavailableError) and W1 in str(e)
        ps = s.variables_on(PS)
        assert (ps["a"], ps["b"]) == (1.0, 10.0)  # da arrived, but no update was applied
        assert s.task_stats()[PS]["open_steps"] == 0  # its pending Recv was aborted

        # the same session goes on once Dask has replaced the worker
        assert s.run(a) == 1.0  # the ps kept its variables
        with g.as_default(), tf.device("/job:worker/task:1"):
            here = tf.constant(5.0) * 2.0
        assert s.run(here) == 10.0
        assert s.cluster.task_address("worker", 1) != old


def test_monitored_training_recovers_from_the_checkpoint(client, tmp_path):
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((12, 32, 3)).astype(np.float32)
    ys = (xs @ np.array([[1.0], [-2.0], [0.5]], np.float32) + 0.3).astype(np.float32)
    g = tf.Graph()
    with g.as_default(), tf.device(tf.train.replica_device_setter(ps_tasks=1, worker_device=W1)):
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        y = tf.placeholder(tf.float32, [None, 1], name="y")
        w = tf.Variable(np.zeros((3, 1), np.float32), name="w")
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
        step = tf.train.get_or_create_global_step()
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
        hooks = [tf.train.StopAtStepHook(last_step=len(xs))]
        steps, losses = [], []
        with tf.train.MonitoredTrainingSession(
            master=client, checkpoint_dir=str(tmp_path), hooks=hooks,
            save_checkpoint_steps=1, save_summaries_steps=None, log_step_count_steps=None,
        ) as s:  # fmt: skip
            killed_at = 0.0
            while not s.should_stop():
                k = len(steps) % len(xs)
                if len(steps) == 5 and not killed_at:  # the ps loses its variables
                    _kill(client, s._sess.session, PS)
                    killed_at = time.monotonic()
                value, n, _ = s.run([loss, step, train], {x: xs[k], y: ys[k]})
                steps.append(int(n))
                losses.append(float(value))
            assert s._sess.recoveries == 1
    # step 6 ran on a new ps restored from step 5's checkpoint: no step lost or repeated,
    # and the weights went on from there (a fresh start would give a loss like the first)
    assert steps == list(range(1, len(xs) + 1))
    assert losses[5] < losses[0] / 4 and losses[-1] < losses[0] / 10


def test_a_worker_that_does_not_come_back_is_reported(client):
    g = tf.Graph()
    with g.as_default(), tf.device("/job:worker/task:0"):
        y = tf.constant(1.0) + 1.0
    with tf.Session(client, graph=g) as s:
        assert s.run(y) == 2.0
        s._lost.add(W0)  # as if its worker were lost, and none of its name came back
        with pytest.raises(tf.errors.UnavailableError, match="did not come back"):
            s.await_lost_tasks(timeout=0.5)
        assert SERVER_START_S >= ERROR_WITHIN_S


# ------------------------------------------- when partitions run (stages.py), no cluster
def _parted(build, fetch_names):
    from flowbook.distributed.partition import partition
    from flowbook.run.plan import build_plan

    g = tf.Graph()
    with g.as_default():
        built = build()
    fetches = [built[n] for n in fetch_names]
    plan = build_plan(g, fetches, (), (), lambda op: None)
    tasks = [("ps", 0), ("worker", 0), ("worker", 1)]
    return partition(g, plan.ops, fetches, [], tasks)


def _chain():
    with tf.device("/job:ps/task:0"):
        a = tf.constant(1.0) * 2.0
    with tf.device("/job:worker/task:0"):
        b = a + 1.0
    with tf.device("/job:worker/task:1"):
        c = b * 3.0
    return {"c": c}


def _sgd():
    with tf.device("/job:ps/task:0"):
        w, v = tf.Variable(1.0, name="w"), tf.Variable(2.0, name="v")
    with tf.device("/job:worker/task:0"):
        dw, dv = w * 0.1, v * 0.1
        with tf.device("/job:ps/task:0"):
            up = [tf.assign_sub(w, dw, name="up_w"), tf.assign_sub(v, dv, name="up_v")]
        train = tf.group(*up, name="train")  # on the worker: control edges back from the ps
    return {"train": train}


def _update_feeds_a_recv():
    with tf.device("/job:ps/task:0"):
        n, u = tf.Variable(0.0, name="n"), tf.Variable(0.0, name="u")
        inc = tf.assign_add(n, 1.0, name="inc")  # its value goes to worker-0 and back
    with tf.device("/job:worker/task:0"):
        twice = inc * 2.0
    with tf.device("/job:ps/task:0"):
        keep = tf.assign(u, twice, name="keep")
    return {"keep": keep}


@pytest.mark.parametrize(
    "build, fetches, first, gated",
    [
        (_chain, ["c"], {PS, W0, W1}, {}),
        (_sgd, ["train"], set(), {PS: ["up_w", "up_v"]}),  # each waits for the other's delta
        (_update_feeds_a_recv, ["keep"], {W0}, {}),  # waiting would deadlock: inc not gated
    ],
    ids=["chain", "sgd", "update-feeds-its-recv"],
)
def test_receive_first_and_gated_updates(build, fetches, first, gated):
    from flowbook.distributed.stages import gate_updates, receive_first

    parted = _parted(build, fetches)
    assert receive_first(parted) == first
    assert gate_updates(parted, first) == gated


def test_an_update_that_feeds_its_own_recv_does_not_deadlock(client):
    g = tf.Graph()
    with g.as_default():
        keep = _update_feeds_a_recv()["keep"]
        init = tf.global_variables_initializer()
    with tf.Session(client, graph=g) as s:
        s.run(init)
        options = tf.RunOptions(timeout_in_ms=10_000)
        assert [s.run(keep, options=options) for _ in range(3)] == [2.0, 4.0, 6.0]
