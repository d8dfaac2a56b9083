"""Seeing a run on a Dask cluster: live-graph messages, merged traces, clocks.

A loopback LocalCluster of ps-0, worker-0 and worker-1.  The live graph's
run state must name each op's task and carry the Send/Recv pairs on the
edges they split; FULL_TRACE and ``tf.profile()`` must give one Chrome-trace
process per task with the tasks' clocks aligned, so that every Recv ends
after its Send started; observers see a cluster step as they see a local
one, and an unwatched step asks its tasks for no report.  The bound on a clock
offset is held against the round trips measured in the same test, never
against a fixed duration (a loaded machine lengthens them all).
"""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

import flowbook as tf  # noqa: E402
from flowbook.distributed.dist_trace import ClockSync, TaskTimings  # noqa: E402
from flowbook.notebook import live  # noqa: E402
from flowbook.profiling.timeline import Timeline  # noqa: E402
from tests.task_clusters import task_cluster  # noqa: E402

pytestmark = pytest.mark.cluster
PS, W0, W1 = (f"/job:{j}/replica:0/task:{k}" for j, k in (("ps", 0), ("worker", 0), ("worker", 1)))
TRACE = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)


@pytest.fixture(scope="module")
def client():
    with task_cluster(dashboard=True) as c:
        yield c


def model():
    """x (fed) @ w (on the ps) on worker-0, then a sum on worker-1: two pairs and a feed."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [4, 3], name="x")
        with tf.device("/job:ps/task:0"):
            w = tf.Variable(tf.ones([3, 2]), name="w")
        with tf.device("/job:worker/task:0"):
            h = tf.matmul(x, w, name="h")
        with tf.device("/job:worker/task:1"):
            y = tf.reduce_sum(h * 2.0, name="y")
        init = tf.global_variables_initializer()
    return g, x, y, init


FEED = np.ones((4, 3), np.float32)


class _View:
    def push(self, state: dict) -> None:
        self.state = json.loads(json.dumps(state))


def test_the_run_state_names_tasks_and_carries_the_send_recv_pairs(client):
    g, x, y, init = model()
    hub = live.live_graph(g)
    view = _View()
    hub.add_view(view)
    try:
        with tf.Session(client, graph=g) as s:
            s.run(init)
            assert s.run(y, {x: FEED}) == 48.0
        live.FLUSHER.flush_now()
        run = hub.state(("run",))["run"]
    finally:
        hub.remove_view(view)
    assert run["phase"] == "done"
    placement = run["placement"]
    assert placement["w"] == placement["w/read"] == "ps:0"
    assert placement["h"] == "worker:0" and placement["y"] == "worker:1"
    pairs = {(c["src"], c["src_device"], c["dst_device"]): c for c in run["copies"]}
    assert set(pairs) == {("w/read", "ps:0", "worker:0"), ("h", "worker:0", "worker:1")}
    for c in run["copies"]:
        assert c["op"] == "_Send/_Recv" and not c["fetch"]
        assert c["name"] in run["pruned"] and c["name"] in run["done"]  # lights up with the run
        assert run["times_us"][c["name"]] >= 0  # Send start to Recv end, clocks aligned
    assert pairs[("w/read", "ps:0", "worker:0")]["readers"] == ["h"]
    assert pairs[("h", "worker:0", "worker:1")]["readers"] == ["mul"]
    assert pairs[("h", "worker:0", "worker:1")]["tensor"] == "h:0"
    assert run["times_us"]["h"] > 0  # kernel times came back from the tasks
    assert run["values"]["y"]  # the fetched value's preview (the client has no other)


class _Log(tf.Observer):
    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def on_start(self, plan):
        self.calls.append(("start",))

    def before_op(self, op):
        self.calls.append(("before", op.name))

    def after_op(self, op, outputs):
        self.calls.append(("after", op.name, len(outputs)))

    def on_timings(self, plan, timings):
        self.calls.append(("timings", timings))

    def on_finish(self, plan, error):
        self.calls.append(("finish", error))


def test_observers_see_a_cluster_step_as_a_local_one(client):
    g, x, y, init = model()
    with tf.Session(client, graph=g) as s:
        s.run(init)
        s.run(y, {x: FEED})
        assert "spans" not in s.last_step  # unwatched: the tasks were asked for no report
        with tf.observe(_Log()) as log:
            s.run(y, {x: FEED})
        spans = s.last_step["spans"]
    kinds = [c[0] for c in log.calls]
    assert kinds[0] == "start" and kinds[-2:] == ["timings", "finish"]
    ops = {"w", "w/read", "h", "mul/y", "mul", "Const", "y"}
    assert {c[1] for c in log.calls if c[0] == "before"} == ops
    after = {c[1]: c[2] for c in log.calls if c[0] == "after"}
    assert set(after) == ops and after["y"] == 1 and after["h"] == 0  # only y's value came back
    assert kinds.index("after") > max(i for i, k in enumerate(kinds) if k == "before")
    timings = log.calls[-2][1]
    assert isinstance(timings, TaskTimings) and set(timings.spans) == {PS, W0, W1} == set(spans)
    assert {op.type for op, _ in timings.extra} == {"_Send", "_Recv"}


def _causal(trace: dict) -> None:
    """One named process per task; every Recv ends after its Send starts; flows cross tasks."""
    events = trace["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name"}
    assert sorted(names.values()) == sorted(f"{t}/device:CPU:0 Compute" for t in (PS, W0, W1))
    ops = {e["name"]: e for e in events if e["ph"] == "X"}
    assert names[ops["w"]["pid"]].startswith(PS) and names[ops["y"]["pid"]].startswith(W1)
    recvs = [e for e in ops.values() if e["args"]["op"] == "_Recv" and "input0" in e["args"]]
    assert len(recvs) == 2
    for r in recvs:
        send = ops[r["args"]["input0"]]
        assert send["args"]["op"] == "_Send" and send["pid"] != r["pid"]
        assert r["ts"] + r["dur"] >= send["ts"], (r, send)


def test_full_trace_merges_the_tasks_into_one_trace_with_a_process_each(client):
    g, x, y, init = model()
    with tf.Session(client, graph=g) as s:
        s.run(init)
        md = tf.RunMetadata()
        s.run(y, {x: FEED}, options=TRACE, run_metadata=md)
        offsets = s.clock_offsets()
    devices = {d.device: [n.node_name for n in d.node_stats] for d in md.step_stats.dev_stats}
    assert set(devices) == {f"{t}/device:CPU:0" for t in (PS, W0, W1)}
    assert "h" in devices[f"{W0}/device:CPU:0"] and "w" in devices[f"{PS}/device:CPU:0"]
    _causal(json.loads(Timeline(md.step_stats, g).generate_chrome_trace_format()))
    for clock in offsets.values():  # one process: one clock, so 0 lies within the bound
        assert abs(clock["offset_us"]) <= clock["bound_us"] + 1


def test_profile_merges_the_tasks_and_counts_each_step_once(client):
    g, x, y, init = model()
    with tf.Session(client, graph=g) as s:
        s.run(init)
        with tf.profile() as prof:
            for _ in range(3):
                s.run(y, {x: FEED})
    assert len(prof.runs) == 3  # the tasks' own partition runs are not profiled again
    trace = json.loads(prof.chrome_trace())
    pids = {e["pid"] for e in trace["traceEvents"] if e["ph"] == "X"}
    assert len(pids) == 3
    rows = {r["op"]: r for r in prof.table().rows}
    assert rows["h"]["count"] == 3 and rows["y"]["count"] == 3
    chart = prof.timeline()._repr_html_()  # a lane per task's thread, named after the task
    assert chart.count('class="lane"') >= 3 and "ps:0 " in chart and "worker:1 " in chart


def test_the_repr_links_the_dask_dashboard_and_colours_the_tasks(client):
    with tf.Session(client, graph=tf.Graph()) as s:
        page = s._repr_html_()
        assert s.dashboard_link and s.dashboard_link in page and "Dask dashboard" in page
    assert "#882255" in page and "ps:0" in page and "worker:1" in page


def test_clock_sync_keeps_the_round_trip_with_the_least_time_on_the_wire():
    c = ClockSync()
    c.sample("t", 0, 5_000, 5_100, 1_000)  # 900 ns on the wire, offset 4550
    c.sample("t", 2_000, 7_010, 7_020, 2_100)  # 90 ns on the wire, offset 4965
    assert c.offset("t") == (4965, 45)
    assert c.offset("other") == (0, 0)


def test_processes_clocks_are_aligned_within_their_bound():
    with task_cluster(processes=True) as c:
        g, x, y, init = model()
        with tf.Session(c, graph=g) as s:
            s.run(init)
            steps_us = []  # each step's time here, which holds every task's round trip
            for _ in range(4):  # the clock estimate keeps the best of several round trips
                md = tf.RunMetadata()
                began = time.perf_counter_ns()
                s.run(y, {x: FEED}, options=TRACE, run_metadata=md)
                steps_us.append((time.perf_counter_ns() - began) / 1000)
            bounds = [v["bound_us"] for v in s.clock_offsets().values()]
    # the bound is half the time on the wire of the best round trip: within half a step
    assert len(bounds) == 3 and all(0 < b <= min(steps_us) / 2 for b in bounds)
    _causal(json.loads(Timeline(md.step_stats, g).generate_chrome_trace_format()))
