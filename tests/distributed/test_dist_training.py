"""Between-graph distributed training: Server, SyncReplicasOptimizer, chief and workers.

- ``tf.ConditionalAccumulator``: means, sums, stale gradients dropped, takes
  that wait, errors; against numpy;
- ``tf.train.Server``: three Servers of one ClusterSpec (ps 0 hosting the
  scheduler, two workers) in this process, the workers' between-graph clients
  on threads; a classic synchronous training loop (``replica_device_setter``,
  ``MonitoredTrainingSession`` with a chief, ``SyncReplicasOptimizer`` over 2
  workers, StopAtStep/CheckpointSaver/SummarySaver hooks) gives its
  single-machine twin's loss curve; asynchronous workers lose no
  ``assign_add``; variables stay on the ps across runs and sessions;
- the same training script, unchanged TF1 code, as three processes.

Every cluster is on loopback, started and closed by its fixture or test, also
when a start fails half-way.  No test sleeps for a fixed time: each waits for
the event it needs (a take or a worker waiting, a thread's end), bounded by
``waits.WAIT_S``.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from types import SimpleNamespace

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

import flowbook as tf  # noqa: E402
from flowbook.distributed import server_api  # noqa: E402
from tests.waits import WAIT_S, join, wait_until  # noqa: E402

pytestmark = pytest.mark.cluster
PS = "/job:ps/replica:0/task:0"


# ------------------------------------------------------------- accumulators
def _acc_run(build):
    with tf.Graph().as_default(), tf.Session() as s:
        return s.run(build())


@pytest.mark.parametrize(
    "reduction, grads, steps, want",
    [
        ("MEAN", [[1.0, 2.0], [3.0, 6.0]], [0, 0], [2.0, 4.0]),
        ("SUM", [[1.0, 2.0], [3.0, 6.0]], [0, 0], [4.0, 8.0]),
        ("MEAN", [[1.0, 2.0], [3.0, 6.0], [5.0, 1.0]], [0, 3, 1], [3.0, 3.0]),
    ],
)
def test_an_accumulator_takes_the_mean_or_sum(reduction, grads, steps, want):
    with tf.Graph().as_default(), tf.Session() as s:
        acc = tf.ConditionalAccumulator(tf.float32, [2], reduction_type=reduction)
        for g, k in zip(grads, steps):
            s.run(acc.apply_grad(np.array(g, np.float32), local_step=k))
        assert s.run(acc.num_accumulated()) == len(grads)
        got = s.run(acc.take_grad(len(grads)))
        reduce = np.mean if reduction == "MEAN" else np.sum
        np.testing.assert_allclose(got, reduce(np.array(grads, np.float32), 0))
        np.testing.assert_allclose(got, want)
        assert s.run(acc.num_accumulated()) == 0


def test_stale_gradients_are_dropped_by_global_step():
    with tf.Graph().as_default(), tf.Session() as s:
        acc = tf.ConditionalAccumulator(tf.float32, [])
        step = tf.placeholder(tf.int64, [])
        g = tf.placeholder(tf.float32, [])
        apply, take = acc.apply_grad(g, local_step=step), acc.take_grad(1)
        s.run(acc.set_global_step(5))
        s.run(apply, {g: 100.0, step: 4})  # older than the accumulator: dropped
        s.run(apply, {g: 2.0, step: 5})
        assert s.run(acc.num_accumulated()) == 1 and s.run(take) == 2.0
        s.run(apply, {g: 7.0, step: 5})  # the take moved the accumulator to step 6
        assert s.run(acc.num_accumulated()) == 0


def _takers(session, acc):
    """The takes waiting in ``acc`` in ``session`` (0 before its first op ran)."""
    state = session._cell(acc.accumulator_ref.op).value
    return 0 if state is None else len(state.takers)


def test_a_take_waits_for_enough_gradients():
    with tf.Graph().as_default(), tf.Session() as s:
        acc = tf.ConditionalAccumulator(tf.float32, [2])
        apply = acc.apply_grad(tf.placeholder(tf.float32, [2], name="g"))
        take = acc.take_grad(2)
        got = []
        t = threading.Thread(target=lambda: got.append(s.run(take)), daemon=True)
        t.start()
        s.run(apply, {"g:0": [1.0, 1.0]})
        wait_until(lambda: _takers(s, acc) == 1, "the take to wait in the accumulator")
        assert t.is_alive() and not got  # one gradient is not enough: it still waits
        s.run(apply, {"g:0": [3.0, 5.0]})
        join(t, "the take given its second gradient")
        np.testing.assert_allclose(got[0], [2.0, 3.0])


def test_closing_the_session_cancels_a_waiting_take():
    g = tf.Graph()
    with g.as_default():
        acc = tf.ConditionalAccumulator(tf.float32, [1])
        take = acc.take_grad(1)
    s = tf.Session(graph=g)
    errors = []

    def wait():
        try:
            s.run(take)
        except tf.errors.CancelledError as e:
            errors.append(e)

    t = threading.Thread(target=wait, daemon=True)
    t.start()
    wait_until(lambda: _takers(s, acc) == 1, "the take to wait in the accumulator")
    s.close()
    join(t, "the take of a closed session")
    assert len(errors) == 1 and "accumulator" in str(errors[0])


@pytest.mark.parametrize(
    "build, error, match",
    [
        (lambda a: a.apply_grad([1.0, 2.0, 3.0]), ValueError, "incompatible"),
        (lambda a: a.take_grad(0), tf.errors.InvalidArgumentError, "must be positive"),
        (
            lambda a: a.apply_grad(tf.placeholder_with_default([1.0, 2.0, 3.0], [None])),
            tf.errors.InvalidArgumentError,
            r"AccumulatorApplyGradient.*Shape mismatch: expected \[2\], got \[3\]",
        ),
    ],
)
def test_accumulator_errors_name_the_op(build, error, match):
    with tf.Graph().as_default(), tf.Session() as s, pytest.raises(error, match=match):
        s.run(build(tf.ConditionalAccumulator(tf.float32, [2])))


# ------------------------------------------------------------- the servers
def _free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for sk in socks:
        sk.bind(("127.0.0.1", 0))
    ports = [sk.getsockname()[1] for sk in socks]
    for sk in socks:
        sk.close()
    return ports


def _cluster_spec(workers=2):
    ps, *ws = (f"127.0.0.1:{p}" for p in _free_ports(1 + workers))
    return tf.train.ClusterSpec({"ps": [ps], "worker": ws})


@contextlib.contextmanager
def _started(cluster, tasks):
    """The Servers of ``tasks`` (job, index), started in order; each closed on the way
    out, the last started first, also when a later one failed to start."""
    with contextlib.ExitStack() as stack:
        made = []
        for job, k in tasks:
            made.append(tf.train.Server(cluster, job, k))
            stack.callback(made[-1].close)
        yield made


@pytest.fixture
def servers():
    cluster = _cluster_spec()
    with _started(cluster, [("ps", 0), ("worker", 0), ("worker", 1)]) as made:
        yield cluster, made


def test_the_servers_make_one_cluster(servers):
    cluster, (ps, w0, w1) = servers
    assert ps.target == w0.target == w1.target == "dask://" + cluster.task_address("ps", 0)
    d = w1.server_def
    assert (d.job_name, d.task_index, d.cluster) == ("worker", 1, cluster.as_cluster_def())
    g = tf.Graph()
    with g.as_default(), tf.device("/job:worker/task:1"):
        y = tf.constant(2.0) * 3.0
    with tf.Session(w1.target, graph=g) as s:
        assert s.cluster.jobs == ["ps", "worker"] and s.run(y) == 6.0
    ps.close()
    ps.join()  # the scheduler is down: join returns, and the workers' joins too
    joins = [threading.Thread(target=w.join, daemon=True) for w in (w0, w1)]
    for t in joins:
        t.start()
    for t in joins:
        join(t, "a worker's join once its scheduler is down")


def test_servers_join_a_scheduler_named_by_the_environment(monkeypatch):
    cluster_spec = _cluster_spec(workers=1)
    with distributed.LocalCluster(
        n_workers=0, processes=False, dashboard_address=":0", host="127.0.0.1", protocol="tcp://"
    ) as dask:
        monkeypatch.setenv(server_api.SCHEDULER_ENV, "dask://" + dask.scheduler_address[6:])
        with _started(cluster_spec, [("ps", 0), ("worker", 0)]) as made:
            assert made[0].target == made[1].target == "dask://" + dask.scheduler_address[6:]
            with tf.Graph().as_default(), tf.device("/job:ps/task:0"):
                y = tf.constant(4.0) + 1.0
                with tf.Session(made[1].target) as s:
                    assert s.run(y) == 5.0 and s.cluster.jobs == ["ps", "worker"]


def test_a_local_server():
    server = tf.train.Server.create_local_server()
    try:
        assert server.server_def.job_name == "localhost"
        with tf.Graph().as_default(), tf.Session(server.target) as s:
            assert s.run(tf.constant([1.0, 2.0]) * 2).tolist() == [2.0, 4.0]
            assert s.list_devices()[0].name == "/job:localhost/replica:0/task:0/device:CPU:0"
    finally:
        server.close()
        server.join()


@pytest.mark.parametrize(
    "args, match",
    [
        (({"ps": ["a:1"], "worker": ["b:1"]},), "job_name"),
        (({"worker": ["a:1", "b:1"]}, "worker"), "task_index"),
        (({"worker": ["a:1"]}, "worker", 3), "No task with index 3"),
    ],
)
def test_a_server_must_name_a_task_of_its_cluster(args, match):
    with pytest.raises(ValueError, match=match):
        tf.train.Server(*args, start=False)


def test_a_session_waits_for_the_cluster_then_gives_up(monkeypatch):
    cluster = _cluster_spec()
    ps = tf.train.Server(cluster, "ps", 0)  # the workers never start
    monkeypatch.setattr(server_api, "CLUSTER_WAIT_S", 0.3)
    try:
        with pytest.raises(tf.errors.UnavailableError, match="/job:worker/task:0"):
            tf.Session(ps.target)
    finally:
        ps.close()


def test_a_queues_ops_run_where_the_queue_lives(servers):
    _, (_, w0, _) = servers
    g = tf.Graph()
    with g.as_default():
        with tf.device("/job:ps/task:0"):
            q = tf.FIFOQueue(5, tf.float32, shapes=[], shared_name="colocated")
        with tf.device("/job:worker/task:1"):  # the handle never leaves the ps
            enq = q.enqueue_many([[1.0, 2.0]])
            deq = q.dequeue() * 10.0
            size = q.size()
    with tf.Session(w0.target, graph=g) as s:
        s.run(enq)
        assert s.run(deq) == 10.0
        assert list(s._dplans.values())[-1].parted.where[deq.op.inputs[0].op.name] == PS
        assert s.run(size) == 1
        assert list(s._dplans.values())[-1].parted.where[size.op.name] == PS


# ------------------------------------------------------ async: assign_add
def _counter(cluster, worker):
    g = tf.Graph()
    with (
        g.as_default(),
        tf.device(
            tf.train.replica_device_setter(
                cluster=cluster, worker_device=f"/job:worker/task:{worker}"
            )
        ),
    ):
        v = tf.Variable(0, name="count")
        inc = tf.assign_add(v, 1)
    return g, v, inc


def test_async_workers_lose_no_assign_add_and_variables_stay_on_the_ps(servers):
    cluster, (_, w0, w1) = servers
    g, v, _ = _counter(cluster, 0)
    with tf.Session(w0.target, graph=g) as s:
        s.run(v.initializer)
    errors = []

    def worker(k, server):
        try:
            gk, _, inc = _counter(cluster, k)
            with tf.Session(server.target, graph=gk) as sk:
                for _ in range(30):
                    sk.run(inc)
        except Exception as e:  # reported below
            errors.append(e)

    args = ((0, w0), (1, w1), (1, w1))
    threads = [threading.Thread(target=worker, args=a, daemon=True) for a in args]
    for t in threads:
        t.start()
    for t in threads:
        join(t, "an asynchronous worker's 30 steps")
    assert not errors
    with tf.Session(w1.target, graph=_counter(cluster, 1)[0]) as s:  # a new session, graph
        assert s.variables_on(PS)["count"] == 90
        assert "count" not in s.variables_on("/job:worker/replica:0/task:0")


# ------------------------------------------------- synchronous: like its twin
FIXTURES = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures")
SCRIPT = os.path.join(FIXTURES, "between_graph_training.py")


@pytest.fixture(scope="module")
def script():
    sys.path.insert(0, FIXTURES)
    try:
        import between_graph_training

        yield between_graph_training
    finally:
        sys.path.remove(FIXTURES)


def _train_on_threads(script, cluster, servers, checkpoint_dir):
    """The two workers' loops on threads, in lockstep (a barrier per step), worker 0 the chief."""
    barrier = threading.Barrier(2)
    results, errors = {}, []

    def worker(k):
        try:
            ckpt = checkpoint_dir if k == 0 else None
            results[k] = script.train(servers[k].target, cluster, k, ckpt, True, barrier)
        except Exception as e:  # reported below
            errors.append(e)
            barrier.abort()

    threads = [threading.Thread(target=worker, args=(k,), daemon=True) for k in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        join(t, f"worker {threads.index(t)}'s training loop", timeout=2 * WAIT_S)
    assert not errors, errors
    return results


def test_sync_replicas_training_follows_its_single_machine_twin(servers, script, tmp_path):
    cluster, (_, w0, w1) = servers
    results = _train_on_threads(script, cluster, [w0, w1], str(tmp_path))
    want_curve, want_weights = script.twin(per_task=True)
    n = script.N_STEPS
    for k in (0, 1):
        assert sorted(results[k][0]) == list(range(n))  # a loss for every step
    # each step's loss is the mean of the two workers' losses on their own batches
    mean_curve = [(results[0][0][k] + results[1][0][k]) / 2 for k in range(n)]
    # the twin averages the same gradients as one reduce_mean over both batches: float32
    # round-off apart (rtol 1e-5); the curve must go down
    np.testing.assert_allclose(mean_curve, [want_curve[k] for k in range(n)], rtol=1e-5)
    for got, want in zip(results[0][1], want_weights):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert mean_curve[-1] < mean_curve[0]
    # the chief's hooks ran on the client: checkpoints at the last step, summaries
    latest = tf.train.latest_checkpoint(str(tmp_path))
    assert latest and int(tf.train.load_variable(latest, "global_step")) == n
    assert any(f.startswith("events.out.tfevents") for f in os.listdir(tmp_path))


def test_a_new_cluster_restores_the_chiefs_checkpoint(tmp_path):
    cluster = _cluster_spec(workers=1)
    with _started(cluster, [("ps", 0), ("worker", 0)]) as made:
        g = tf.Graph()
        with g.as_default(), tf.device(tf.train.replica_device_setter(cluster=cluster)):
            step = tf.train.get_or_create_global_step()
            inc = tf.assign_add(step, 1)
        for expected in (3, 6):  # the second chief restores the first one's step, on the ps
            with (
                g.as_default(),
                tf.train.MonitoredTrainingSession(
                    master=made[1].target,
                    checkpoint_dir=str(tmp_path),
                    save_checkpoint_steps=1,
                    hooks=[tf.train.StopAtStepHook(num_steps=3)],
                ) as sess,
            ):
                while not sess.should_stop():
                    sess.run(inc)
                assert sess.run(step) == expected
            with tf.Session(made[1].target, graph=g) as s:
                s.reset_cluster()  # the ps forgets: only the checkpoint remains


def test_a_worker_waits_for_its_chief(servers, monkeypatch):
    cluster, (_, w0, w1) = servers
    from flowbook.train import monitored_session

    monkeypatch.setattr(monitored_session, "WORKER_POLL_S", 0.05)
    g = tf.Graph()
    with g.as_default(), tf.device(tf.train.replica_device_setter(cluster=cluster)):
        v = tf.Variable(5.0, name="chief_made")
    with g.as_default(), pytest.raises(tf.errors.DeadlineExceededError, match="chief_made"):
        tf.train.MonitoredTrainingSession(master=w1.target, is_chief=False, max_wait_secs=0.3)
    got, waits = [], []

    def sleep(seconds):  # the worker's wait after it found the model not ready
        waits.append(seconds)
        time.sleep(seconds)

    clock = SimpleNamespace(monotonic=time.monotonic, sleep=sleep)
    monkeypatch.setattr(monitored_session, "time", clock)  # only the worker's wait uses it

    def worker():
        with (
            g.as_default(),
            tf.train.MonitoredTrainingSession(
                master=w1.target, is_chief=False, max_wait_secs=WAIT_S
            ) as sess,
        ):
            got.append(sess.run(v))

    t = threading.Thread(target=worker, daemon=True)
    t.start()
    wait_until(lambda: waits, "the worker to find that the chief has not initialised the model")
    assert t.is_alive() and not got  # waiting for the chief
    with tf.Session(w0.target, graph=g) as s:
        s.run(v.initializer)
    join(t, "the worker's session once the chief initialised the model")
    assert got == [5.0]


# ------------------------------------------------------ the same, as processes
def test_the_tf1_script_runs_unchanged_as_processes(script, tmp_path):
    cluster = _cluster_spec()
    spec = json.dumps(cluster.as_dict())
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    env.pop(server_api.SCHEDULER_ENV, None)
    outs = [str(tmp_path / f"w{k}.npz") for k in (0, 1)]
    argv = [
        [spec, "ps", "0"],
        [spec, "worker", "0", str(tmp_path), outs[0]],
        [spec, "worker", "1", "-", outs[1]],
    ]
    procs = [
        subprocess.Popen(
            [sys.executable, SCRIPT, *a],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for a in argv
    ]
    try:
        for p in procs[1:]:
            _, err = p.communicate(timeout=2 * WAIT_S)
            assert p.returncode == 0, err[-3000:]
    finally:
        for p in procs:
            p.kill()
            p.wait(10)
    _, want_weights = script.twin(per_task=False)
    chief = np.load(outs[0])
    # both workers feed the step's batch: every gradient of a step is the same, so the mean
    # the ps applies is exact, whatever order the workers come in
    for k, w in enumerate(want_weights):
        np.testing.assert_allclose(chief[f"w{k}"], w, rtol=1e-6, atol=1e-7)
    latest = tf.train.latest_checkpoint(str(tmp_path))
    assert int(tf.train.load_variable(latest, "global_step")) == script.N_STEPS
