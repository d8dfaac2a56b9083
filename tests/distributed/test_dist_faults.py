"""A lost worker (the whitepaper's §3.3): worker processes on loopback, killed mid-step.

A ``LocalCluster`` of processes under nannies (``ps-0``, ``worker-0``,
``worker-1``), started and closed by the fixture; each test starts once every
task's worker is on the scheduler.  A worker is killed with SIGKILL, and the
test goes on once the scheduler has dropped it; its nanny starts a new one of
the same name at a new address.  No test bounds the step's failure by a
duration: the error must say the worker was lost (the client noticed its
connection close, not a timer), and every wait is for an event, bounded by
``waits.WAIT_S``.
"""

from __future__ import annotations

import signal

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

import flowbook as tf  # noqa: E402
from flowbook.distributed.session import SERVER_START_S  # noqa: E402
from tests.task_clusters import (  # noqa: E402
    kill_worker,
    open_steps,
    run_in_thread,
    stalled_step,
    task_cluster,
    wait_back,
    wait_workers,
)
from tests.waits import WAIT_S, join, wait_until  # noqa: E402

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals"),
]
PS, W0, W1 = (f"/job:{j}/replica:0/task:{k}" for j, k in (("ps", 0), ("worker", 0), ("worker", 1)))
ERROR_WITHIN_S = 10.0  # a lost worker's step fails within this on an idle machine
BOUNDED = tf.RunOptions(timeout_in_ms=int(WAIT_S * 1000))  # runs that must not wait for ever


@pytest.fixture(scope="module")
def cluster():
    with task_cluster(processes=True) as c:
        yield c


@pytest.fixture
def client(cluster):
    """The cluster's client, once every task's worker is on the scheduler (a test that
    killed one leaves its nanny restarting it)."""
    wait_workers(cluster)
    return cluster


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
        old = s.cluster.task_address("worker", 1)
        thread, box = run_in_thread(s, t["train"])
        wait_until(lambda: open_steps(s, PS) == 1, "the ps to wait for db (it has da)")
        kill_worker(client, old)
        join(thread, "the step whose worker-1 was killed")
        e = box.get("error")
        assert isinstance(e, tf.errors.UnavailableError), box
        assert W1 in str(e) and "was lost" in str(e)  # noticed as its connection closed
        wait_until(lambda: open_steps(s, PS) == 0, "the ps's pending Recv to be aborted")
        wait_back(client, "worker-1", old)
        ps = s.variables_on(PS)  # the session finds worker-1 again first
        assert (ps["a"], ps["b"]) == (1.0, 10.0)  # da arrived, but no update was applied

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
            master=client,
            checkpoint_dir=str(tmp_path),
            hooks=hooks,
            save_checkpoint_steps=1,
            save_summaries_steps=None,
            log_step_count_steps=None,
        ) as s:
            killed = False
            while not s.should_stop():
                k = len(steps) % len(xs)
                if len(steps) == 5 and not killed:  # the ps loses its variables
                    killed = True
                    old = s._sess.session.cluster.task_address("ps", 0)
                    kill_worker(client, old)
                    wait_back(client, "ps-0", old)  # step 6 fails on the old one, recovers
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


def test_a_task_server_that_does_not_start_is_unavailable(client, monkeypatch):
    from flowbook.distributed import task_servers

    monkeypatch.setattr(task_servers, "SERVER_START_S", 0.5)
    nowhere = "tcp://127.0.0.1:9"  # no worker there: its server never starts
    name = f"flowbook-task-worker-7@{nowhere}"
    try:
        with pytest.raises(tf.errors.UnavailableError, match=f"{name}: not started within"):
            task_servers.start_servers(client, tf.train.ClusterSpec({"worker": {7: nowhere}}))
    finally:
        client.unpublish_dataset(name)


# ------------------------------------------- when partitions run (stages.py), no cluster
def _parted(build, fetch_names):
    from flowbook.distributed.partition import partition
    from flowbook.runtime.plan import build_plan

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
        assert [s.run(keep, options=BOUNDED) for _ in range(3)] == [2.0, 4.0, 6.0]
