"""A cluster session's plans (``flowbook.runtime.plan_cache`` in ``DaskSession``): kept while ops
are added, dropped by an edit of an op they hold, and released on the tasks when dropped.

A loopback ``LocalCluster`` (in-process) of ``ps-0``, ``worker-0`` and ``worker-1``,
started and closed by the fixture.  ``EDITS`` is the table: each row edits a small graph
placed over the three tasks, in which the fetch ``near`` holds the op the edit touches and
``far`` does not, and says which of their plans stay; every run after the edit is compared
with a fresh local session on the edited graph (values, or the error raised).  A hypothesis
test does the same over random sequences of additions, edits, task moves and runs.

A partition's release is sent to its task, not waited for: a test waits (bounded) until
the tasks no longer hold a dropped plan's partitions, and checks that a kept plan's are
still held there and still registered in the session (no release on its way).
"""

from __future__ import annotations

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import flowbook as tf  # noqa: E402
from flowbook.distributed import session as dist_session  # noqa: E402
from flowbook.framework import graph_edit  # noqa: E402
from flowbook.framework.errors import FailedPreconditionError, InvalidArgumentError  # noqa: E402
from flowbook.framework.source import Cell  # noqa: E402
from flowbook.runtime import plan_cache  # noqa: E402
from tests.runtime.test_plan_cache import same  # noqa: E402
from tests.task_clusters import task_cluster  # noqa: E402
from tests.waits import wait_until  # noqa: E402

pytestmark = pytest.mark.cluster
PS, W0, W1 = (f"/job:{j}/replica:0/task:{k}" for j, k in (("ps", 0), ("worker", 0), ("worker", 1)))
TASKS = ["/job:ps/task:0", "/job:worker/task:0", "/job:worker/task:1"]
FEED = {"x:0": np.arange(6, dtype=np.float32).reshape(2, 3)}


@pytest.fixture(scope="module")
def client():
    with task_cluster() as c:
        yield c


def build():
    """x (worker-0) -> near = x * a (worker-1, the op the edits touch; a on the ps),
    far = x + 1 (the ps, never touched)."""
    with tf.device(TASKS[1]):
        x = tf.placeholder(tf.float32, [None, 3], name="x")
    with tf.device(TASKS[0]):
        a = tf.constant(np.array([1, 2, 3], np.float32), name="a")
        far = tf.add(x, 1.0, name="far")
    with tf.device(TASKS[2]), tf.control_dependencies([tf.no_op(name="before")]):
        near = tf.multiply(x, a, name="near")
    return {"x": x, "a": a, "near": near, "far": far}


def outcome(session, fetch, feed=None):
    """What running ``fetch`` gives: ("value", array) or ("error", its type)."""
    try:
        return ("value", session.run(fetch, FEED if feed is None else feed))
    except (FailedPreconditionError, InvalidArgumentError) as e:
        return ("error", type(e))


def held_on_tasks(client, session):
    """The keys of ``session``'s partitions its tasks' servers hold."""

    def keys(dask_worker):
        servers = [a for a in dask_worker.state.actors.values() if hasattr(a, "partitions")]
        return [k for server in servers for k in list(server.partitions)]

    held = client.run(keys)
    return {k for ks in held.values() for k in ks if k.startswith(session._prefix)}


def wait_released(client, session, keys):
    """Wait until none of ``keys`` is held on the tasks (releases are sent, not waited for)."""
    wait_until(
        lambda: not held_on_tasks(client, session) & keys,
        f"the tasks to release the partitions {sorted(keys)}",
    )


def still_held(client, session, keys):
    """Whether every one of ``keys`` is held on its task, and no release of it is on its way
    (the session releases a partition as it stops counting it registered)."""
    registered = {key for _, key in session._registered}
    return keys <= registered and keys <= held_on_tasks(client, session)


def registered(session):
    """Partitions imported so far on every task (each one compiles anew)."""
    return sum(t["registered"] for t in session.task_stats().values())


# ------------------------------------------------------------------- adding ops
def test_added_ops_keep_the_plan_no_partition_no_registration(client, monkeypatch):
    t = build()
    with tf.Session(client) as s:
        for _ in range(3):
            np.testing.assert_array_equal(s.run(t["near"], FEED), FEED["x:0"] * [1, 2, 3])
        dplan = s._dplans[s._plans[(t["near"], None, t["x"])]]
        before, calls = registered(s), dict(s.calls)
        made = []
        real = dist_session.partition
        monkeypatch.setattr(dist_session, "partition", lambda *a: made.append(1) or real(*a))
        for k, task in enumerate(TASKS * 2):
            with tf.device(task):
                tf.square(t["near"] + float(k), name=f"extra{k}")  # reads near: near unchanged
            np.testing.assert_array_equal(s.run(t["near"], FEED), FEED["x:0"] * [1, 2, 3])
        assert made == []  # no new partition
        assert s._dplans[s._plans[(t["near"], None, t["x"])]] is dplan
        assert registered(s) == before  # nothing new registered (or compiled) on the tasks
        assert s.calls["run"] - calls["run"] == 6 * len(dplan.keys)  # one call per task a step
        assert {m for m in s.calls if s.calls[m] != calls.get(m)} == {"run", "stats"}  # no release


# ------------------------------------------------------------------- the edits
def _replace_cell(g, t):
    """The notebook re-runs the cell that made ``a`` and ``near``: new ops, same names."""
    g._remove_ops([t["a"].op, t["near"].op], by=Cell("c1", 2))
    with tf.device(TASKS[0]):
        a = tf.constant(np.array([4, 5, 6], np.float32), name="a")
    with tf.device(TASKS[2]):
        tf.multiply(t["x"], a, name="near")


def _assert_first(g, t):
    with tf.device(TASKS[2]):
        failing = tf.Assert(tf.constant(False), ["stop"], name="stop")
    t["near"].op._add_control_input(failing)


def _update_input(g, t):
    with tf.device(TASKS[0]):
        t["near"].op._update_input(1, tf.constant(np.array([7, 8, 9], np.float32)))


def _reroute(g, t):
    with tf.device(TASKS[1]):
        graph_edit.reroute_ts(tf.constant(np.array([0, 1, 0], np.float32)), t["a"])


EDITS = [  # (edit, near's plan kept, far's plan kept, near's task after)
    ("append an op", lambda g, t: tf.square(t["near"], name="extra"), True, True, W1),
    ("add to a collection", lambda g, t: tf.add_to_collection("s", t["near"]), True, True, W1),
    ("replace a cell's ops (notebook re-run)", _replace_cell, False, True, W1),
    ("add a control input (a failing Assert)", _assert_first, False, True, W1),
    ("remove all control inputs", lambda g, t: t["near"].op._remove_all_control_inputs(),
     False, True, W1),
    ("move near to the ps", lambda g, t: t["near"].op._set_device(TASKS[0]), False, True, PS),
    ("move near to no task (the default)", lambda g, t: t["near"].op._set_device(""),
     False, True, W0),
    ("update an input", _update_input, False, True, W1),
    ("graph_edit.reroute_ts", _reroute, False, True, W1),
]  # fmt: skip


@pytest.mark.parametrize(
    ("edit", "near_kept", "far_kept", "near_on"),
    [e[1:] for e in EDITS],
    ids=[e[0] for e in EDITS],
)
def test_each_edit_drops_exactly_the_plans_holding_an_edited_op(
    client, fresh_graph, edit, near_kept, far_kept, near_on
):
    g, t = fresh_graph, build()
    with tf.Session(client) as s:
        for _ in range(2):
            for name in ("near", "far"):
                assert outcome(s, t[name])[0] == "value"
        plans = {name: s._plans[(t[name], None, t["x"])] for name in ("near", "far")}
        keys = {name: set(s._dplans[p].keys.values()) for name, p in plans.items()}
        edit(g, t)
        fresh = tf.Session()
        for _ in range(2):
            for name in ("near", "far"):
                got, want = outcome(s, f"{name}:0"), outcome(fresh, f"{name}:0")
                assert same(got, want), (name, got, want)
        kept = (plans["near"] in s._dplans, plans["far"] in s._dplans)
        assert kept == (near_kept, far_kept)
        if near_kept:
            assert still_held(client, s, keys["near"])
        else:
            wait_released(client, s, keys["near"])  # a dropped plan goes there too
        assert still_held(client, s, keys["far"])
        near = g.get_tensor_by_name("near:0")
        if outcome(fresh, near)[0] == "value":
            dplan = s._dplans[s._plans[(near, None, g.get_tensor_by_name("x:0"))]]
            assert dplan.parted.where[near.op.name] == near_on


def test_the_least_recently_used_plan_is_released_on_the_tasks(client, monkeypatch):
    monkeypatch.setattr(plan_cache, "MAX_PLANS", 2)
    with tf.device(TASKS[2]):
        x = tf.placeholder(tf.float32, name="x")
        ys = [x + float(i) for i in range(3)]
    with tf.Session(client) as s:
        assert s.run(ys[0], {x: 1.0}) == 1.0
        first = set(s._dplans[s._plans[(ys[0], None, x)]].keys.values())
        for y in ys[1:]:
            s.run(y, {x: 1.0})
        assert [k[0] for k in s._plans] == ys[1:]
        wait_released(client, s, first)
        assert len(held_on_tasks(client, s)) == 2


def test_closing_the_session_releases_every_partition(client):
    t = build()
    s = tf.Session(client)
    for name in ("near", "far"):
        s.run(t[name], FEED)
    keys = held_on_tasks(client, s)
    assert len(keys) == 3  # near on worker-1, far on the ps, nothing on worker-0 (x is fed)
    s.close()
    wait_released(client, s, keys)


# ----------------------------------------------------------------- hypothesis
STEPS = st.lists(
    st.tuples(
        st.sampled_from(
            ["add", "update", "control", "uncontrol", "reroute", "move", "remove", "run"]
        ),
        st.integers(0, 50),
        st.integers(0, 50),
    ),
    min_size=1,
    max_size=20,
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=STEPS)
def test_a_kept_cluster_session_agrees_with_a_fresh_local_one_through_random_edits(client, steps):
    """Random additions, input rewiring, control inputs, moves between tasks, removals and
    runs: every run of a cluster session kept throughout gives what a fresh local session
    gives on the graph as it is then."""
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [2], name="x")
        with tf.device(TASKS[0]):
            tensors = [x, tf.constant([1.0, 2.0])]
        feed = {x: np.array([0.5, -1.5], np.float32)}
        with tf.Session(client, graph=g) as s:
            for kind, i, j in steps:
                live = [u for u in tensors if g._ops.get(u.op.name) is u.op]
                a, b = live[i % len(live)], live[j % len(live)]
                if kind == "add":
                    with tf.device(TASKS[(i + j) % 3]):
                        tensors.append(tf.add(a, tf.tanh(b)))
                elif kind == "update" and a.op.inputs and a.op._id > b.op._id:
                    a.op._update_input(0, b)  # an older input: no cycle
                elif kind == "control" and a.op._id > b.op._id:
                    a.op._add_control_input(b.op)
                elif kind == "uncontrol":
                    a.op._remove_all_control_inputs()
                elif kind == "reroute" and a.op._id < b.op._id and a.dtype == b.dtype:
                    later = [u.op for u in live if u.op._id > b.op._id]  # no cycle
                    graph_edit.reroute_ts(b, a, can_modify=later)
                elif kind == "move":
                    a.op._set_device([*TASKS, ""][j % 4])
                elif kind == "remove" and a is not x:
                    g._remove_ops([a.op])
                elif kind == "run":  # each tensor made so far, removed ones too
                    fresh = tf.Session(graph=g)
                    for u in tensors:
                        got, want = outcome(s, u, feed), outcome(fresh, u, feed)
                        assert got[0] == want[0], (u.name, got, want)
                        assert got[0] == "error" or np.allclose(got[1], want[1], rtol=1e-6)
