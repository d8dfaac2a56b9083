"""Sessions on a Dask cluster: a loopback LocalCluster of ps-0, worker-0 and worker-1.

Partitioned runs must equal local runs (hypothesis graphs placed at random
over the tasks); variables stay on their ps across runs and sessions;
concurrent asynchronous clients lose no ``assign_add``; the client gets back
only what it fetched; errors name the client's op and the task.  Every wait is
for an event (a thread's end), bounded by ``waits.WAIT_S``.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import flowbook as tf  # noqa: E402
from tests.task_clusters import task_cluster  # noqa: E402
from tests.waits import join  # noqa: E402

pytestmark = pytest.mark.cluster
PS, W0, W1 = (f"/job:{j}/replica:0/task:{k}" for j, k in (("ps", 0), ("worker", 0), ("worker", 1)))
DEVICES = ["/job:ps/task:0", "/job:worker/task:0", "/job:worker/task:1", ""]


@pytest.fixture(scope="module")
def client():
    with task_cluster() as c:  # workers named after their tasks
        yield c


def _session(client, graph):
    return tf.Session(client, graph=graph)


def test_the_tasks_come_from_the_worker_names(client):
    with _session(client, tf.Graph()) as s:
        assert isinstance(s, tf.Session) and s.cluster.jobs == ["ps", "worker"]
        assert s.cluster.num_tasks("worker") == 2
        assert next(d.name for d in s.list_devices()) == f"{PS}/device:CPU:0"


def test_a_dask_url_target_runs(client):
    g = tf.Graph()
    with g.as_default(), tf.device("/job:worker/task:1"):
        y = tf.constant(2.0) * 3.0
    with tf.Session("dask://" + client.scheduler.address, graph=g) as s:  # its own Client
        assert s.run(y) == 6.0 and s.last_step["tasks"] == [W1]
    assert s._client.status == "closed"


# ------------------------------------------------------- partitioned = local
_OPS = {
    "add": lambda a, b: a + b,
    "mul": lambda a, b: a * b,
    "matmul": lambda a, b: tf.matmul(a, b),
    "max": lambda a, b: tf.maximum(a, b),
    "tanh": lambda a, b: tf.tanh(a),
    "neg": lambda a, b: -a,
}


@st.composite
def placed_graphs(draw):
    """A list of (op kind, two earlier nodes, device, control input or None), fetches."""
    n = draw(st.integers(1, 7))
    nodes = []
    for i in range(n):
        kind = draw(st.sampled_from(sorted(_OPS)))
        a, b = (draw(st.integers(0, i + 2)) for _ in range(2))  # 0: x, 1: v, 2: c, then ops
        control = draw(st.none() | st.integers(3, i + 2)) if i else None
        nodes.append((kind, a, b, draw(st.sampled_from(DEVICES)), control))
    sources = draw(st.tuples(*(st.sampled_from(DEVICES) for _ in range(3))))
    fetches = draw(st.lists(st.integers(0, n + 2), min_size=1, max_size=3, unique=True))
    return sources, nodes, fetches


def _build(sources, nodes, fetches):
    g = tf.Graph()
    with g.as_default():
        with tf.device(sources[0]):
            x = tf.placeholder(tf.float32, [2, 2], name="x")
        with tf.device(sources[1]):
            v = tf.Variable(np.array([[1.0, -2.0], [0.5, 3.0]], np.float32), name="hv")
        with tf.device(sources[2]):
            c = tf.constant(np.array([[0.25, 1.0], [-1.0, 2.0]], np.float32), name="c")
        made = [x, v.value(), c]
        for kind, a, b, device, control in nodes:
            deps = [made[control].op] if control is not None else []
            with tf.device(device), tf.control_dependencies(deps):
                made.append(_OPS[kind](made[a], made[b]))
        init = tf.global_variables_initializer()
    return g, x, init, [made[k] for k in fetches]


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(spec=placed_graphs(), feed=st.floats(-2, 2, width=32))
def test_partitioned_runs_equal_local_runs(client, spec, feed):
    g, x, init, fetches = _build(*spec)
    value = np.full((2, 2), feed, np.float32)
    with tf.Session(graph=g) as local:
        local.run(init)
        want = local.run(fetches, {x: value})
    with _session(client, g) as s:
        s.run(init)
        got = s.run(fetches, {x: value})
        again = s.run(fetches, {x: value})  # the second run takes the registered partitions
    for w, a, b in zip(want, got, again):
        np.testing.assert_allclose(a, w, rtol=1e-6)
        np.testing.assert_allclose(b, w, rtol=1e-6)


def test_structures_feeds_and_op_fetches(client):
    g = tf.Graph()
    with g.as_default():
        with tf.device("/job:worker/task:0"):
            x = tf.placeholder(tf.float32, name="x")
        with tf.device("/job:worker/task:1"):
            y = x * 2.0
            op = tf.no_op(name="nothing")
    with _session(client, g) as s:
        out = s.run({"y": y, "x": x, "pair": (y, op)}, {x: 3.0})
    assert out == {"y": 6.0, "x": 3.0, "pair": (6.0, None)}


def test_an_edited_op_releases_the_old_partitions_an_added_one_does_not(client):
    g = tf.Graph()
    with g.as_default(), tf.device("/job:worker/task:1"):
        y = tf.constant(1.0, name="first") + 1.0
    with _session(client, g) as s:
        assert s.run(y) == 2.0
        (old,) = s._registered
        with g.as_default(), tf.device("/job:worker/task:1"):
            z = y * 3.0  # a new op: y's plan stays (tests/distributed/test_dist_plan_cache.py)
        assert s.run(z) == 6.0
        assert old in s._registered and len(s._registered) == 2
        with g.as_default(), tf.device("/job:worker/task:1"):
            y.op._update_input(1, tf.constant(5.0))  # an edit of y: both plans go
        assert s.run(y) == 6.0  # registered anew
        assert old not in s._registered and len(s._registered) == 1


# ------------------------------------------------------- variables on the ps
def _counter(name):
    g = tf.Graph()
    with g.as_default(), tf.device(tf.train.replica_device_setter(ps_tasks=1)):
        v = tf.Variable(0, name=name)
        inc = tf.assign_add(v, 1)
        init = tf.variables_initializer([v])
    return g, v, inc, init


def test_variables_stay_on_their_ps_across_runs_and_sessions(client):
    g, _v, inc, init = _counter("stays")
    with _session(client, g) as s:
        s.run(init)
        for _ in range(3):
            s.run(inc)
        assert s.variables_on(PS)["stays"] == 3
        assert "stays" not in s.variables_on(W0) and "stays" not in s.variables_on(W1)
    g2, v2, inc2, _ = _counter("stays")  # another graph (another client's): same variable
    with _session(client, g2) as s:
        assert s.run(inc2) == 4 and s.run(v2) == 4


def test_concurrent_asynchronous_workers_lose_no_assign_add(client):
    g, v, _inc, init = _counter("shared_count")
    with _session(client, g) as s:
        s.run(init)
    errors = []

    def worker(k):
        try:
            gk, _, inck, _ = _counter("shared_count")
            with _session(client, gk) as sk:
                for _ in range(40):
                    sk.run(inck)
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,), daemon=True) for k in (0, 1, 0)]
    for t in threads:
        t.start()
    for t in threads:
        join(t, "an asynchronous worker's 40 steps")
    assert not errors
    with _session(client, g) as s:
        assert s.run(v) == 120


# ---------------------------------------------------- only fetches come back
def test_the_client_receives_only_what_it_fetched(client):
    g = tf.Graph()
    with g.as_default():
        with tf.device("/job:worker/task:0"):
            big = tf.random_uniform([200, 500], seed=1, name="big")  # 400 kB, never fetched
        with tf.device("/job:worker/task:1"):
            total = tf.reduce_sum(big * 2.0, name="total")
    with _session(client, g) as s:
        before = s.task_stats()
        value = s.run(total)
        after = s.task_stats()
    assert np.isfinite(value)
    assert s.last_step["returned"] == {W0: [], W1: [value]}  # W0 made big, returned nothing
    returned = {t: after[t]["returned_bytes"] - before[t]["returned_bytes"] for t in after}
    assert returned == {PS: 0, W0: 0, W1: 4}
    assert after[W0]["sent_bytes"] - before[W0]["sent_bytes"] == 200 * 500 * 4  # worker to worker


# --------------------------------------------------------------- errors
def test_an_uninitialised_variable_names_it_and_its_task(client):
    g = tf.Graph()
    with g.as_default(), tf.device(tf.train.replica_device_setter(ps_tasks=1)):
        v = tf.Variable(1.0, name="never_initialised")
        y = v * 2.0
    with (
        _session(client, g) as s,
        pytest.raises(tf.errors.FailedPreconditionError, match="never_initialised") as e,
    ):
        s.run(y)
    assert "task:0" in str(e.value)


def test_a_failing_task_aborts_the_step_on_the_others(client):
    g = tf.Graph()
    with g.as_default():
        with tf.device("/job:worker/task:0"):
            x = tf.placeholder(tf.float32, [None], name="x")
            bad = tf.reshape(x, [3], name="bad_reshape")  # fails for 2 values
        with tf.device("/job:worker/task:1"):
            y = tf.reduce_sum(bad * 2.0)
        with tf.device("/job:ps/task:0"):
            z = y + 1.0
    with _session(client, g) as s:
        with pytest.raises(tf.errors.InvalidArgumentError, match="Reshape 'bad_reshape'") as e:
            s.run(z, {x: [1.0, 2.0]})
        assert W0 in str(e.value) and "test_dist_sessions.py" in str(e.value)  # the client's line
        assert s.run(z, {x: [1.0, 2.0, 3.0]}) == 13.0  # the session goes on
        assert all(t["open_steps"] == 0 for t in s.task_stats().values())


def test_a_device_on_a_missing_task_is_refused(client):
    g = tf.Graph()
    with g.as_default(), tf.device("/job:worker/task:9"):
        y = tf.constant(1.0, name="nowhere")
    with _session(client, g) as s, pytest.raises(tf.errors.InvalidArgumentError, match="task:9"):
        s.run(y)


# ------------------------------------------------- training, like its local twin
def _regression(seed=0):
    rng = np.random.default_rng(seed)
    xs = rng.standard_normal((8, 32, 3)).astype(np.float32)
    ys = (xs @ np.array([[1.0], [-2.0], [0.5]], np.float32) + 0.3).astype(np.float32)
    g = tf.Graph()
    with g.as_default(), tf.device(tf.train.replica_device_setter(ps_tasks=1, worker_device=W1)):
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        y = tf.placeholder(tf.float32, [None, 1], name="y")
        w = tf.Variable(np.zeros((3, 1), np.float32), name="reg_w")
        b = tf.Variable(0.0, name="reg_b")
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
        step = tf.train.get_or_create_global_step()
        train = tf.train.MomentumOptimizer(0.05, 0.9).minimize(loss, global_step=step)
    return g, x, y, loss, train, w, xs, ys


def _curve(g, x, y, loss, train, w, xs, ys, master):
    losses = []
    with g.as_default():
        hooks = [tf.train.StopAtStepHook(last_step=len(xs))]
        with tf.train.MonitoredTrainingSession(master=master, hooks=hooks) as s:
            k = 0
            while not s.should_stop():
                losses.append(s.run([loss, train], {x: xs[k], y: ys[k]})[0])
                k += 1
            final = s.run(w)
    return np.array(losses), final


def test_monitored_training_on_the_cluster_follows_its_local_twin(client):
    local = _curve(*_regression(), master="")
    remote = _curve(*_regression(), master=client)
    np.testing.assert_allclose(remote[0], local[0], rtol=1e-5)
    np.testing.assert_allclose(remote[1], local[1], rtol=1e-5)
    assert local[0][-1] < local[0][0] / 2  # it learnt something


# ------------------------------------------------- worker processes, over TCP
def test_a_cluster_of_processes_over_tcp_gives_the_local_values():
    with task_cluster(("ps-0", "worker-0"), processes=True) as c:
        g, x, init, fetches = _build(
            (W0, "/job:ps/task:0", ""), [("matmul", 0, 1, "/job:ps/task:0", None)], [1, 3]
        )
        value = np.arange(4, dtype=np.float32).reshape(2, 2)
        with tf.Session(graph=g) as local:
            local.run(init)
            want = local.run(fetches, {x: value})
        with tf.Session("dask://" + c.scheduler.address, graph=g) as s:
            assert s.cluster.task_address("ps", 0).startswith("tcp://127.0.0.1")
            s.run(init)
            got = s.run(fetches, {x: value})
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b)
