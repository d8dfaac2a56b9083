"""ClusterSpec, replica_device_setter and partitioning (no Dask needed)."""

from __future__ import annotations

import pytest

import flowbook as tf
from flowbook.distributed.partition import assign_tasks, partition
from flowbook.runtime.plan import build_plan

pytestmark = pytest.mark.cluster
TASKS = [("ps", 0), ("ps", 1), ("worker", 0), ("worker", 1)]


def test_cluster_spec_queries():
    spec = tf.train.ClusterSpec({"worker": ["w0:1", "w1:1"], "ps": ["p0:1"]})
    assert spec.jobs == ["ps", "worker"]
    assert (spec.num_tasks("worker"), spec.task_indices("worker")) == (2, [0, 1])
    assert spec.task_address("ps", 0) == "p0:1"
    assert spec.job_tasks("worker") == ["w0:1", "w1:1"]
    assert spec.as_dict() == {"ps": ["p0:1"], "worker": ["w0:1", "w1:1"]}
    assert tf.train.ClusterSpec(spec) == spec and bool(spec)
    back = tf.train.ClusterSpec(spec.as_cluster_def())
    assert back == spec and back.as_dict() == spec.as_dict()


@pytest.mark.parametrize(
    "bad, error",
    [("not a dict", TypeError), ({"ps": "p0:1"}, TypeError), ({"ps": {-1: "a"}}, TypeError)],
)
def test_cluster_spec_rejects(bad, error):
    with pytest.raises(error):
        tf.train.ClusterSpec(bad)


def test_cluster_spec_unknown_job_and_task():
    spec = tf.train.ClusterSpec({"ps": {2: "p2:1"}})
    assert spec.job_tasks("ps") == [None, None, "p2:1"]
    with pytest.raises(ValueError, match="No such job"):
        spec.num_tasks("worker")
    with pytest.raises(ValueError, match="No task with index 0"):
        spec.task_address("ps", 0)


def test_replica_device_setter_round_robin_and_merge():
    g = tf.Graph()
    with g.as_default():
        setter = tf.train.replica_device_setter(ps_tasks=2, worker_device="/job:worker/task:1")
        with tf.device(setter):
            a, b, c = (tf.Variable(1.0, name=n) for n in "abc")
            y = a * b
            with tf.device("/job:ps/task:1/device:CPU:0"):
                pinned = tf.Variable(0.0, name="pinned")
            with tf.device("/gpu:0"):
                z = y + 1.0
    assert [v.op.device for v in (a, b, c)] == [
        "/job:ps/task:0",
        "/job:ps/task:1",
        "/job:ps/task:0",
    ]
    assert y.op.device == "/job:worker/task:1"
    assert pinned.op.device == "/job:ps/task:1/device:CPU:0"
    assert z.op.device == "/job:worker/task:1/device:GPU:0"


def test_replica_device_setter_from_cluster():
    cluster = {"ps": ["p0", "p1", "p2"], "worker": ["w0"]}
    g = tf.Graph()
    with g.as_default(), tf.device(tf.train.replica_device_setter(cluster=cluster)):
        vs = [tf.Variable(float(k), name=f"v{k}") for k in range(4)]
    assert [v.op.device for v in vs] == [f"/job:ps/task:{k % 3}" for k in range(4)]
    assert tf.train.replica_device_setter(cluster={"worker": ["w0"]}) is None


def _model():
    g = tf.Graph()
    with g.as_default():
        with tf.device(tf.train.replica_device_setter(ps_tasks=2)):
            x = tf.placeholder(tf.float32, [None, 2], name="x")
            w = tf.Variable(tf.ones([2, 2]), name="w")
            y = tf.matmul(x, w, name="y")
            step = tf.assign_add(w, tf.ones([2, 2]), name="step")
        with tf.device("/job:worker/task:1"), tf.control_dependencies([step]):
            z = tf.reduce_sum(y, name="z")
    return g, x, w, y, z


def test_variables_colocate_their_snapshot_and_updates():
    g, x, _w, _y, z = _model()
    plan = build_plan(g, [z], (), [x], lambda op: None)
    where = {op.name: t for op, t in assign_tasks(plan.ops, {x}, TASKS).items()}
    assert where["w"] == where["w/read"] == where["step"] == "/job:ps/replica:0/task:0"
    assert where["y"] == "/job:worker/replica:0/task:0"
    assert where["z"] == "/job:worker/replica:0/task:1"


def test_partitions_are_cut_by_send_recv_pairs():
    g, x, _w, y, z = _model()
    plan = build_plan(g, [z, y], (), [x], lambda op: None)
    parted = partition(g, plan.ops, [z, y], [x], TASKS)
    ps, w0, w1 = (
        f"/job:{j}/replica:0/task:{k}" for j, k in (("ps", 0), ("worker", 0), ("worker", 1))
    )
    nodes = {t: {n.name: n for n in p.graph_def.node} for t, p in parted.parts.items()}
    sends = [n for t in nodes for n in nodes[t].values() if n.op == "_Send"]
    recvs = {
        n.attr["tensor_name"].s: n for t in nodes for n in nodes[t].values() if n.op == "_Recv"
    }
    for s in sends:  # every Send has its Recv, on the device it names, under the same key
        r = recvs[s.attr["tensor_name"].s]
        assert r.attr["send_device"].s == s.attr["send_device"].s
        assert r.device == r.attr["recv_device"].s.decode() == s.attr["recv_device"].s.decode()
        assert not s.attr["client_terminated"].b and not r.attr["client_terminated"].b
    feed = nodes[w0]["x/_recv_0"]  # the fed x is received from the client where it is read
    assert feed.attr["client_terminated"].b and feed.attr["tensor_name"].s == b"x:0"
    assert nodes[w0]["y"].input[0] == "x/_recv_0"
    ctrl = [i for n in nodes[w1].values() for i in n.input if i.startswith("^")]
    assert len(ctrl) == 1 and nodes[w1][ctrl[0][1:]].op == "_Recv"  # the control edge from ps
    assert "step" in nodes[ps] and "z" not in nodes[ps]
    assert parted.parts[w1].fetch_names == ["z:0"] and parted.parts[w0].fetch_names == ["y:0"]
    assert parted.edges == len(sends) == 4  # w/read -> y, ones -> step, y -> z, ^step -> z


def test_a_device_on_a_missing_task_names_the_op():
    g = tf.Graph()
    with g.as_default(), tf.device("/job:worker/task:7"):
        c = tf.constant(1.0, name="far")
    plan = build_plan(g, [c], (), (), lambda op: None)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Const 'far'.*task:7"):
        partition(g, plan.ops, [c], [], TASKS)
