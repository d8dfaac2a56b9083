"""Tracing and profiling: step stats of FULL_TRACE runs, Chrome traces, profile() views."""

from __future__ import annotations

import copy
import json
import pickle
import threading
import time
import types

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flowbook as tf
import flowbook.profiling.timeline  # tf.timeline, as TF's `from tensorflow.python.client import timeline`
from flowbook.profiling.tracing import CPU_DEVICE, LazyStepStats, StepStatsCollector, profile
from flowbook.runtime.codegen.compile import MAX_SHAPE_SIGNATURES
from flowbook.runtime.step_stats import StepStats
from flowbook.runtime.timings import RunTimings

FULL = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
REQUIRED = ("ph", "ts", "pid", "tid", "name")


# ------------------------------------------------------------------ helpers
def traced(sess, fetches, feed=None):
    """Run traced; returns (value, node stats, run wall interval in epoch µs)."""
    md = tf.RunMetadata()
    before = time.time_ns() // 1000
    value = sess.run(fetches, feed, options=FULL, run_metadata=md)
    after = time.time_ns() // 1000
    assert len(md.step_stats.dev_stats) == 1
    assert md.step_stats.dev_stats[0].device == CPU_DEVICE
    return value, md.step_stats.dev_stats[0].node_stats, (before, after), md


def end(n):
    return n.all_start_micros + n.all_end_rel_micros


def validate_trace(text: str) -> dict:
    """Check a Chrome trace against the Trace Event Format; returns the parsed JSON."""
    trace = json.loads(text)
    events = trace["traceEvents"]
    assert isinstance(events, list) and events
    slices: dict[tuple, list[tuple[float, float]]] = {}
    flows: dict[int, dict[str, dict]] = {}
    for e in events:
        for key in REQUIRED:
            assert key in e, f"{key} missing from {e}"
        assert e["ph"] in {"X", "M", "s", "f", "C"}, e
        assert isinstance(e["ts"], int | float) and isinstance(e["name"], str)
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int)
        if e["ph"] == "X":
            assert isinstance(e["dur"], int | float) and e["dur"] >= 0, e
            assert "op" in e["args"] and "name" in e["args"]
            slices.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
        elif e["ph"] == "M":
            assert e["name"] in {"process_name", "process_sort_index", "thread_name"}
            assert isinstance(e["args"], dict)
        elif e["ph"] in "sf":
            assert "id" in e and e["cat"] == "DataFlow"
            assert e["ph"] not in flows.setdefault(e["id"], {}), f"duplicate {e['ph']} {e['id']}"
            flows[e["id"]][e["ph"]] = e
        elif e["ph"] == "C":
            assert all(isinstance(v, int | float) for v in e["args"].values())
    for fid, pair in flows.items():
        assert set(pair) == {"s", "f"}, f"flow {fid} is unmatched: {pair}"
        s, f = pair["s"], pair["f"]
        assert f["bp"] == "e" and s["ts"] <= f["ts"] and s["name"] == f["name"]
        for ev in (s, f):  # each end binds to a slice of its own thread
            lane = slices[(ev["pid"], ev["tid"])]
            assert any(a <= ev["ts"] <= b for a, b in lane), ev
    return trace


def parallel_graph():
    """Two independent 300x300 matmuls (the pool runs one), joined by an add."""
    x = tf.placeholder(tf.float32, [300, 300], name="x")
    a = tf.matmul(x, x, name="left")
    b = tf.matmul(x * 2.0, x, name="right")
    return x, a + b


def mlp_graph():
    x = tf.placeholder(tf.float32, [None, 8], name="x")
    w = tf.Variable(np.ones((8, 4), np.float32), name="w")
    loss = tf.reduce_mean(tf.nn.relu(tf.matmul(x, w)))
    return x, loss, tf.train.GradientDescentOptimizer(0.1).minimize(loss)


# -------------------------------------------------------------- step stats
def test_one_record_per_executed_op_pruned_ops_absent():
    x = tf.placeholder(tf.float32, [], name="x")
    y = tf.add(x, 1.0, name="y")
    z = tf.multiply(y, 3.0, name="z")
    tf.negative(z, name="unused")
    with tf.Session() as sess:
        _, nodes, _, _ = traced(sess, z, {y: 2.0})  # y is fed: x and y are pruned
        plan = list(sess._plans.values())[-1]
    names = [n.node_name for n in nodes]
    assert (
        sorted(names) == sorted(op.name for op in plan.ops) == sorted(["z", z.op.inputs[1].op.name])
    )
    assert "unused" not in names and "y" not in names


def test_times_are_ordered_nested_and_follow_the_graph():
    g = tf.get_default_graph()
    x, loss, train = mlp_graph()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        feed = {x: np.random.default_rng(0).standard_normal((16, 8)).astype(np.float32)}
        _, nodes, (before, after), _ = traced(sess, [loss, train], feed)
    first = min(n.all_start_micros for n in nodes)
    last = max(end(n) for n in nodes)
    by_name = {n.node_name: n for n in nodes}
    slack = 2  # µs: the epoch offset is read from two clocks, a moment apart
    assert before - slack <= first <= last <= after + slack
    for n in nodes:
        assert n.op_start_rel_micros == 0 <= n.op_end_rel_micros <= n.all_end_rel_micros
        assert first <= n.all_start_micros <= end(n) <= last
        assert n.scheduled_micros <= n.all_start_micros
        op = g.get_operation_by_name(n.node_name)
        deps = [t.op for t in op.inputs] + list(op.control_inputs)
        for dep in deps:
            if dep.name in by_name:  # fed or pruned inputs have no record
                assert end(by_name[dep.name]) <= n.all_start_micros, (dep.name, n.node_name)
                assert end(by_name[dep.name]) <= n.scheduled_micros
        assert n.timeline_label.startswith(f"{op.name} = {op.type}(")


def test_outputs_describe_the_produced_arrays():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    v = tf.Variable(np.zeros((3, 2), np.float64), name="v")
    y = tf.matmul(x, tf.cast(v, tf.float32), name="y")
    with tf.Session() as sess:
        sess.run(v.initializer)
        _, nodes, _, _ = traced(sess, y, {x: np.ones((5, 3))})
    out = {n.node_name: n.output for n in nodes}
    (desc,) = out["y"]
    td = desc.tensor_description
    assert (desc.slot, td.dtype, td.shape) == (0, "float32", [5, 2])
    assert td.allocation_description.allocated_bytes == 5 * 2 * 4
    vd = out["v"][0].tensor_description  # a variable's output is its state: static spec
    assert (vd.dtype, vd.shape, vd.allocation_description.requested_bytes) == (
        "float64",
        [3, 2],
        48,
    )


def test_pool_threads_show_in_thread_ids():
    x, y = parallel_graph()
    feed = {x: np.ones((300, 300), np.float32)}
    me = threading.get_ident()
    pool_ids = set()
    with tf.Session() as sess:
        for _ in range(3):
            _, nodes, _, md = traced(sess, y, feed)
            tids = {n.thread_id for n in nodes}
            for n in nodes:
                if n.node_name not in ("left", "right"):
                    assert n.thread_id == me  # cheap ops run inline on the calling thread
            pool_ids |= tids - {me}
            events = validate_trace(
                tf.timeline.Timeline(md.step_stats).generate_chrome_trace_format()
            )
            x_tids = {e["tid"] for e in events["traceEvents"] if e["ph"] == "X"}
            named = {e["tid"] for e in events["traceEvents"] if e["name"] == "thread_name"}
            assert x_tids == tids == named
    alive = {t.ident: t.name for t in threading.enumerate()}
    assert all(alive.get(t, "").startswith("flowbook") for t in pool_ids)
    if not pool_ids:
        pytest.skip("the scheduler used one thread only on this machine")
    assert len(pool_ids | {me}) > 1


def test_failed_run_still_reports_the_ops_that_ran():
    x = tf.placeholder(tf.float32, [None], name="x")
    y = tf.reshape(tf.square(x, name="sq"), [2, 2], name="bad")
    md = tf.RunMetadata()
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError):
        sess.run(y, {x: np.ones(3)}, options=FULL, run_metadata=md)
    names = [n.node_name for n in md.step_stats.dev_stats[0].node_stats]
    assert "sq" in names and "bad" not in names


def test_step_stats_are_built_lazily_and_copy_as_plain_step_stats():
    c = tf.constant(1.0, name="c") + 1.0
    md = tf.RunMetadata()
    with tf.Session() as sess:
        sess.run(c, options=FULL, run_metadata=md)
    stats = md.step_stats
    assert isinstance(stats, StepStats) and isinstance(stats, LazyStepStats)
    plain = copy.deepcopy(stats)
    assert type(plain) is StepStats and plain == stats
    assert pickle.loads(pickle.dumps(stats)) == stats
    assert [n.node_name for n in plain.dev_stats[0].node_stats] == ["c", "add/y", "add"]


def test_collector_hooks_work_without_the_executor():
    c = StepStatsCollector()
    op = tf.constant(np.zeros((2, 2), np.int64), name="k").op
    c.on_start(None)
    plan = types.SimpleNamespace(ops=[op])
    shapes = [(np.dtype(np.int64), (2, 2))]
    c.on_timings(plan, RunTimings([0], [1_000], [2_000], [5_000], [7], shapes))
    seen = []
    c.on_step = lambda stats, rec: seen.append(stats)
    c.on_finish(None, None)
    (n,) = seen[0].dev_stats[0].node_stats
    assert (n.thread_id, n.op_end_rel_micros - n.op_start_rel_micros) == (7, 3)
    assert n.output[0].tensor_description.allocation_description.allocated_bytes == 32


# -------------------------------------------------------------- timelines
def test_classic_tf1_timeline_usage(tmp_path):
    a = tf.constant(np.ones((4, 4), np.float32), name="a")
    y = tf.matmul(a, a, name="mm") + tf.reduce_sum(a, name="total")
    with tf.Session() as sess:
        run_metadata = tf.RunMetadata()
        sess.run(
            y,
            options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
            run_metadata=run_metadata,
        )
        tl = tf.timeline.Timeline(run_metadata.step_stats)
        expected = {op.name for op in list(sess._plans.values())[-1].ops}
        path = tmp_path / "timeline.json"
        with open(path, "w") as f:
            f.write(tl.generate_chrome_trace_format())
    trace = validate_trace(path.read_text())
    ops = {e["name"]: e for e in trace["traceEvents"] if e["ph"] == "X"}
    assert set(ops) == expected and {"a", "mm", "total", y.op.name} <= expected
    assert ops["mm"]["args"] == {"name": "mm", "op": "MatMul", "input0": "a", "input1": "a"}
    flows = {e["name"] for e in trace["traceEvents"] if e["ph"] == "s"}
    assert flows == expected - {y.op.name}  # every op but the last feeds another
    procs = [e for e in trace["traceEvents"] if e["name"] == "process_name"]
    assert procs[0]["args"]["name"] == f"{CPU_DEVICE} Compute"


def test_timeline_with_graph_memory_and_without_dataflow():
    g = tf.get_default_graph()
    x, y = parallel_graph()
    md = tf.RunMetadata()
    with tf.Session() as sess:
        sess.run(y, {x: np.ones((300, 300), np.float32)}, options=FULL, run_metadata=md)
    with_graph = tf.timeline.Timeline(md.step_stats, graph=g)
    trace = validate_trace(with_graph.generate_chrome_trace_format(show_memory=True))
    counters = [e for e in trace["traceEvents"] if e["ph"] == "C"]
    assert counters and all(e["args"]["bytes"] >= 0 for e in counters)
    assert max(e["args"]["bytes"] for e in counters) >= 2 * 300 * 300 * 4
    assert counters[-1]["args"]["bytes"] == 0  # everything freed by the step's end
    plain = tf.timeline.Timeline(md.step_stats).generate_chrome_trace_format(show_dataflow=False)
    assert not [e for e in validate_trace(plain)["traceEvents"] if e["ph"] in "sf"]


# ---------------------------------------------------------------- profile
def test_profile_tables_timeline_and_node_times(tmp_path):
    x, _, train = mlp_graph()
    feed = {x: np.ones((16, 8), np.float32)}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        with profile() as prof:
            for _ in range(3):
                sess.run(train, feed)
        plan = list(sess._plans.values())[-1]
    assert len(prof.runs) == 3
    by_op, by_type = prof.table(by="op"), prof.table(by="type", sort="count")
    assert sum(r["share"] for r in by_op.rows) <= 1 + 1e-9
    assert abs(sum(r["share"] for r in by_op.rows) - sum(r["share"] for r in by_type.rows)) < 1e-9
    assert {r["op"] for r in by_op.rows} == {op.name for op in plan.ops}
    assert all(r["count"] == 3 for r in by_op.rows)
    totals = [r["total_ms"] for r in by_op.rows]
    assert totals == sorted(totals, reverse=True)
    counts = [r["count"] for r in by_type.rows]
    assert counts == sorted(counts, reverse=True) and sum(counts) == 3 * len(plan.ops)
    text, page = str(by_op), by_op._repr_html_()
    assert "total_ms" in text and "MatMul" in text and "3 run(s)" in text
    assert page.count("<th onclick=") == len(by_op.columns) and "data-v=" in page
    times = prof.node_times()
    assert set(times) == {op.name for op in plan.ops} and all(v >= 0 for v in times.values())
    assert abs(sum(times.values()) / 1e3 - sum(totals)) < 1e-6
    tids = {n.thread_id for run in prof.runs for n in run.dev_stats[0].node_stats}
    svg = prof.timeline()._repr_html_()
    assert svg.count('class="lane"') == len(tids) and svg.count("<rect") == 3 * len(plan.ops)
    trace = validate_trace(prof.chrome_trace())
    assert len([e for e in trace["traceEvents"] if e["ph"] == "X"]) == 3 * len(plan.ops)
    assert validate_trace(prof.save_trace(tmp_path / "p.json").read_text()) == trace
    with pytest.raises(ValueError):
        prof.table(by="device")


def test_profile_timeline_lanes_per_thread_with_the_pool():
    x, y = parallel_graph()
    with tf.Session() as sess, profile() as prof:
        for _ in range(3):
            sess.run(y, {x: np.ones((300, 300), np.float32)})
    tids = {n.thread_id for run in prof.runs for n in run.dev_stats[0].node_stats}
    html = prof.timeline()._repr_html_()
    assert html.count('class="lane"') == len(tids)
    assert sum(r["share"] for r in prof.table().rows) <= 1 + 1e-9  # even when kernels overlap
    few = prof.timeline(max_bars=6)._repr_html_()
    assert "last 1 of 3 runs" in few


def test_profile_collects_runs_of_several_threads_apart():
    c = tf.constant(2.0, name="c") * 3.0
    with tf.Session() as sess, profile() as prof:

        def work():
            for _ in range(20):
                sess.run(c)

        threads = [threading.Thread(target=work) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert len(prof.runs) == 60
    for run in prof.runs:
        nodes = run.dev_stats[0].node_stats
        assert sorted(n.node_name for n in nodes) == ["c", "mul", "mul/y"]
        assert len({n.thread_id for n in nodes}) == 1
    with tf.Session() as sess:
        sess.run(c)
    assert len(prof.runs) == 60  # nothing collected after the block


# ------------------------------------------- traced runs of compiled (all-cheap) plans
def test_repeated_traced_runs_of_a_cheap_plan_keep_its_straight_line():
    x = tf.placeholder(tf.float32, [None], name="x")
    y = x
    for k in range(20):
        y = tf.add(y, float(k), name=f"a{k}")
    z = tf.reduce_sum(y, name="z")
    feed = {x: np.arange(4, dtype=np.float32)}
    me = threading.get_ident()
    with tf.Session() as sess:
        first, nodes1, _, _ = traced(sess, z, feed)  # the threaded scheduler, then compiled
        for _ in range(2):
            value, nodes, (before, after), _ = traced(sess, z, feed)
        path = list(sess._paths.values())[-1]
        assert path.timed  # the timed straight line ran
        assert value == first == sess.run(z, feed)
    assert sorted(n.node_name for n in nodes) == sorted(n.node_name for n in nodes1)
    assert {n.thread_id for n in nodes} == {me}
    by_name = {n.node_name: n for n in nodes}
    slack = 2
    for n in nodes:
        assert before - slack <= n.all_start_micros <= end(n) <= after + slack
        assert n.scheduled_micros <= n.all_start_micros
        for t in tf.get_default_graph().get_operation_by_name(n.node_name).inputs:
            if t.op.name in by_name:
                assert end(by_name[t.op.name]) <= n.all_start_micros
    shape = by_name["a19"].output[0].tensor_description.shape  # [None] statically: the feed says
    assert shape == [4]
    assert by_name["z"].output[0].tensor_description.shape == []


def test_a_failing_traced_straight_line_names_the_op_and_reports_what_ran():
    x = tf.placeholder(tf.float32, [None], name="x")
    y = tf.reshape(tf.square(x, name="sq"), [2, 2], name="bad")
    md = tf.RunMetadata()
    with tf.Session() as sess:
        for _ in range(2):  # compiled from the second run on
            sess.run(y, {x: np.ones(4)}, options=FULL, run_metadata=tf.RunMetadata())
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            sess.run(y, {x: np.ones(3)}, options=FULL, run_metadata=md)
        assert "bad" in str(info.value)
        assert sess.run(y, {x: np.ones(4)}).shape == (2, 2)  # the session goes on
    names = [n.node_name for n in md.step_stats.dev_stats[0].node_stats]
    assert "sq" in names and "bad" not in names


# ------------------- output shapes of traced straight-line runs, given the fed shapes
LAYERS = [  # each maps a [batch, 3] float32 tensor to another
    lambda t: t * 2.0,
    lambda t: t + tf.constant([1.0, 2.0, 3.0]),
    lambda t: tf.reshape(tf.reshape(t, [-1]), tf.shape(t)),
    lambda t: tf.nn.relu(t) - tf.reduce_mean(t, axis=0),
    lambda t: tf.tile(t, [2, 1])[: tf.shape(t)[0]],
    lambda t: tf.concat([t, t], 0)[::2],
    lambda t: t * tf.reduce_sum(t, axis=1, keepdims=True),
    lambda t: tf.matmul(t, tf.ones([3, 3])),
    lambda t: tf.expand_dims(t, 1)[:, 0, :] / (1.0 + tf.cast(tf.size(t), tf.float32)),
]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.integers(0, len(LAYERS) - 1), min_size=1, max_size=6),
    st.lists(st.integers(1, 5), min_size=1, max_size=4),
)
def test_traced_shapes_given_the_feeds_match_the_outputs(layers, batches):
    """A timed straight-line run records only shapes the fed shapes do not determine; what
    it reports for every op, gradients' shape arithmetic and data-dependent ops included,
    is the shape the op produced."""
    with tf.Graph().as_default(), tf.Session() as sess:
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        t = x
        for k in layers:
            t = LAYERS[k](t)
        (grad,) = tf.gradients(tf.reduce_sum(t), [x])
        fetches = [grad, tf.where(x > 0.5), tf.range(tf.shape(t)[0])]  # where: data decides
        rng = np.random.default_rng(len(layers))
        for batch in batches:
            feed = {x: rng.random((batch, 3), dtype=np.float32)}
            for _ in range(3):  # the scheduler, then the compiled straight line, timed
                _, nodes, _, _ = traced(sess, fetches, feed)
            plan = next(p for p, path in sess._paths.items() if path.timed)
            tensors = [o for op in plan.ops for o in op.outputs]
            actual = dict(zip(tensors, sess.run(tensors, feed)))
            ops = {op.name: op for op in plan.ops}
            assert sorted(n.node_name for n in nodes) == sorted(ops)
            for n in nodes:
                for desc, out in zip(n.output, ops[n.node_name].outputs):
                    assert desc.tensor_description.shape == list(np.shape(actual[out])), n


def test_feeds_of_ever_new_shapes_fall_back_to_recording_what_the_graph_leaves_open():
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    y = tf.reduce_sum(tf.square(x, name="sq"), axis=0, name="y")
    with tf.Session() as sess:
        for batch in range(1, 2 * MAX_SHAPE_SIGNATURES + 2):
            feed = {x: np.ones((batch, 2), np.float32)}
            for _ in range(2):  # the second run takes the timed straight line
                _, nodes, _, _ = traced(sess, y, feed)
            sq = next(n for n in nodes if n.node_name == "sq")
            assert sq.output[0].tensor_description.shape == [batch, 2]
        path = next(iter(sess._paths.values()))
        assert len(path.given_feeds) == MAX_SHAPE_SIGNATURES + 1  # the last: every new shape
        assert () in path.given_feeds


def test_compiling_a_timed_straight_line_is_not_counted_in_the_run(monkeypatch):
    """The first traced run of a feed signature works its shapes out and compiles its timed
    line first; the profile's run time is the run's, so the kernels' share stays true."""
    import flowbook.runtime.codegen.compile as compile_module

    define = compile_module._define

    def slow_define(*args, **kwargs):
        time.sleep(0.2)
        return define(*args, **kwargs)

    x = tf.placeholder(tf.float32, [None], name="x")
    y = tf.reduce_sum(tf.square(x), name="y")
    feed = {x: np.ones(3, np.float32)}
    with tf.Session() as sess:
        sess.run(y, feed)  # the serial reference
        sess.run(y, feed)  # compiles the untimed straight line
        monkeypatch.setattr(compile_module, "_define", slow_define)
        with profile() as prof:
            sess.run(y, feed)  # compiles the timed twin (slowly), then runs it
        assert next(iter(sess._paths.values())).timed  # it took the timed straight line
    assert prof.run_time_us() < 0.1e6
