"""The memory plan (flowbook/runtime/memory_plan.py): values freed at their last use, dead buffers
written again (out=), fed, variable, constant and fetched arrays never touched, and differential
tests: buffer reuse on = off = the serial reference, bit for bit, on every executor."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flowbook as tf
from flowbook.runtime import memory_plan
from flowbook.runtime.codegen.compile import RunPath
from flowbook.runtime.config import RewriterConfig
from flowbook.runtime.executor import run_serial, run_threaded
from flowbook.runtime.memory_plan import buffer_plan, owned
from flowbook.runtime.optimize.optimizer import _slot_shapes, passes_for
from flowbook.runtime.plan import build_plan

NO_REUSE = tf.ConfigProto(
    graph_options=tf.GraphOptions(
        rewrite_options=RewriterConfig(memory_optimization=RewriterConfig.NO_MEM_OPT)
    )
)
THREADED = tf.RunOptions(timeout_in_ms=600_000)  # a deadline: the threaded scheduler runs it


def same_bits(a: object, b: object) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def bind(op):
    return op._opdef.bound_kernel(np, op.attrs)


def paths_with_buffers(sess: tf.Session) -> list[RunPath]:
    return [
        e[1]
        for p in sess._paths.values()
        for e in p.optimized.values()
        if type(e) is tuple and e[1].buffers is not None
    ]


@pytest.fixture
def any_size(monkeypatch):
    """Reuse buffers of every size (the small arrays of generated graphs included)."""
    monkeypatch.setattr(memory_plan, "MIN_REUSE_BYTES", 0)


# ---------------------------------------------------------------- the plan
def test_owned_counts_the_references_the_caller_does_not_know_of():
    a = np.ones(4)
    assert owned(a, 1)
    view = a[1:]
    assert not owned(a, 1) and not owned(view, 1)  # the view holds a; the view owns nothing
    del view
    assert owned(a, 1)
    assert not owned(np.float64(1.0), 1) and not owned([1.0], 1)  # arrays only


def test_an_element_wise_chain_writes_into_its_dead_inputs():
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [None, 256], name="x")
        y = tf.exp(tf.nn.relu(x * 2.0 + 1.0)) - 3.0
        plan = build_plan(g, [y], [], [x], bind=bind)
    buffers = buffer_plan(plan, _slot_shapes(plan, ((64, 256),)))
    chosen = {op.type: k for op, k in zip(plan.ops, buffers) if k >= 0}
    assert chosen == {"Add": 0, "Relu": 0, "Exp": 0, "Sub": 0}  # Mul reads the fed x
    assert buffer_plan(plan, _slot_shapes(plan, ((4, 256),))) is None  # 4 KiB: not worth it
    assert buffer_plan(plan, {}) is None  # shapes unknown: nothing decided


def test_reuse_halves_the_peak_of_a_chain():
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [None, 1024], name="x")
        y = x * 2.0
        for _ in range(6):
            y = tf.exp(tf.negative(y))
        plan = build_plan(g, [y], [], [x], bind=bind)
    feeds = [np.ones((256, 1024), np.float32)]  # 1 MiB
    plain, reusing = (
        RunPath(plan),
        RunPath(plan, buffer_plan(plan, _slot_shapes(plan, ((256, 1024),)))),
    )
    peaks = []
    for path in (plain, reusing):
        path.compile()
        tracemalloc.start()
        path.compiled(feeds)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    assert peaks[0] > 1.9 * 2**20  # each op allocates while its input lives
    assert peaks[1] < 1.2 * 2**20  # one buffer, written again and again
    assert same_bits(plain.compiled(feeds)[0], reusing.compiled(feeds)[0])


def test_dtype_changes_shape_changes_and_broadcasts_get_no_buffer():
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [None, 64], name="x")
        b = tf.placeholder(tf.float32, [64], name="b")
        big = tf.exp(b) + tf.exp(x)  # the exp(b) input is smaller than the output
        mask = tf.exp(x) > 1.0  # bool from float
        ints = tf.cast(x, tf.int32) // 2  # FloorDiv on ints keeps int32
        plan = build_plan(g, [big, mask, ints], [], [x, b], bind=bind)
    buffers = buffer_plan(plan, _slot_shapes(plan, ((128, 64), (64,))), min_bytes=0)
    chosen = {op.name: (k, [t.op.type for t in op.inputs]) for op, k in zip(plan.ops, buffers)}
    assert chosen["add"][0] == 1  # exp(x), not the broadcast exp(b)
    assert chosen["Greater"][0] == -1  # bool output, float inputs
    assert chosen["floordiv"][0] == 0


# ---------------------------------------------------------- never touched
def test_fed_variable_constant_and_fetched_arrays_are_never_written(any_size):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 8], name="x")
        c = tf.constant(np.arange(32, dtype=np.float32).reshape(4, 8))
        v = tf.Variable(np.full((4, 8), 2.0, np.float32))
        a = x * 3.0  # fetched, and read by b last
        b = tf.exp(a) + 1.0
        r = tf.reshape(b, [-1])  # a view of b, read after b's last element-wise reader
        d = tf.negative(b)
        e = d + tf.reduce_sum(r)
        fx = tf.abs(x)  # reads the fed array
        fv = tf.abs(v) * 1.0  # reads the variable
        fc = tf.abs(c) + 0.0  # reads the constant
        fetches = [a, e, fx, fv, fc]
        feed_x = np.linspace(-1, 1, 32, dtype=np.float32).reshape(4, 8)
        keep = feed_x.copy()
        with tf.Session() as on, tf.Session(config=NO_REUSE) as off:
            on.run(v.initializer), off.run(v.initializer)
            for options in (None, None, None, None, THREADED):
                got = on.run(fetches, {x: feed_x}, options=options)
                want = off.run(fetches, {x: feed_x}, options=options)
                assert all(same_bits(p, q) for p, q in zip(got, want))
                assert same_bits(feed_x, keep)
            assert same_bits(on.run(v), np.full((4, 8), 2.0, np.float32))
            assert same_bits(on.run(c), np.arange(32, dtype=np.float32).reshape(4, 8))
            assert paths_with_buffers(on) and not paths_with_buffers(off)


def test_a_value_a_view_still_reads_is_not_overwritten(any_size):
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [None, 8], name="x")
        a = tf.exp(x)
        t = tf.transpose(a)  # numpy: a view of a's buffer
        b = tf.negative(a)  # a's last element-wise reader in the static order
        y = tf.transpose(t) * 1.0 + b  # reads the view after a's buffer could be reused
        plan = build_plan(g, [y], [], [x], bind=bind)
    feed = [np.linspace(0, 1, 24, dtype=np.float32).reshape(3, 8)]
    buffers = buffer_plan(plan, _slot_shapes(plan, ((3, 8),)), min_bytes=0)
    assert buffers is not None and buffers[[op.name for op in plan.ops].index("Neg")] == 0
    path = RunPath(plan, buffers)
    path.compile()
    want = run_serial(plan, feed)[0]
    assert same_bits(path.compiled(feed)[0], want)
    assert same_bits(run_threaded(plan, feed, path=path)[0], want)


def test_memory_optimization_off_and_opt_level_l0_turn_reuse_off():
    assert "memory" in passes_for(tf.ConfigProto())
    assert "memory" not in passes_for(NO_REUSE)
    l0 = tf.OptimizerOptions(opt_level=tf.OptimizerOptions.L0)
    assert "memory" not in passes_for(tf.ConfigProto(graph_options=tf.GraphOptions(l0)))


# ------------------------------------------------------------ differential
LAYERS = [
    lambda t, w: tf.exp(t * 0.5),
    lambda t, w: tf.nn.relu(t - 0.25),
    lambda t, w: tf.matmul(t, w) + tf.reduce_mean(t, 0),
    lambda t, w: tf.reshape(tf.square(t), tf.shape(t)) * tf.negative(t),
    lambda t, w: tf.transpose(tf.transpose(t) * 2.0) - t,
    lambda t, w: tf.identity(tf.abs(t)) + tf.sin(t),
    lambda t, w: tf.nn.bias_add(tf.tanh(t), w[0]),
    lambda t, w: t[:, ::-1] * t,
    lambda t, w: tf.maximum(t, tf.zeros_like(t)) / (tf.abs(t) + 1.0),
]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.integers(0, len(LAYERS) - 1), min_size=1, max_size=6),
    st.lists(st.booleans(), min_size=6, max_size=6),
    st.lists(st.integers(1, 6), min_size=1, max_size=2),
    st.integers(0, 2**16),
)
def test_reuse_on_equals_reuse_off_equals_serial_bit_for_bit(layers, fetched, batches, seed):
    """Hypothesis graphs of element-wise ops and views, gradients and an update included:
    the straight line, the threaded scheduler and the serial reference agree bit for bit
    whether dead buffers are reused or not, and no fetched value is written afterwards."""
    saved, memory_plan.MIN_REUSE_BYTES = memory_plan.MIN_REUSE_BYTES, 0
    try:
        with tf.Graph().as_default():
            x = tf.placeholder(tf.float32, [None, 3], name="x")
            w = tf.Variable(np.linspace(-1, 1, 9).reshape(3, 3).astype(np.float32), name="w")
            t, middle = x, []
            for k, keep in zip(layers, fetched):
                t = LAYERS[k](t, w)
                if keep:
                    middle.append(t)
            loss = tf.reduce_sum(t * t)
            gx, gw = tf.gradients(loss, [x, w])
            fetches = [t, *middle, *(g for g in (gx,) if g is not None)]
            if gw is not None:
                with tf.control_dependencies(fetches):
                    fetches.append(tf.assign_sub(w, 0.01 * gw))
            rng = np.random.default_rng(seed)
            with tf.Session() as on, tf.Session(config=NO_REUSE) as off:
                on.run(w.initializer), off.run(w.initializer)
                for batch in batches:
                    feed = {x: rng.standard_normal((batch, 3)).astype(np.float32)}
                    for options in (None, None, None, THREADED):
                        got = on.run(fetches, feed, options=options)
                        copies = [np.array(v, copy=True) for v in got]
                        want = off.run(fetches, feed, options=options)
                        for a, b, c in zip(got, want, copies):
                            assert same_bits(a, b) and same_bits(a, c)
                    prepared = off.prepare(fetches[:-1] if gw is not None else fetches, feed)
                    plan, feeds = prepared.plan, list(prepared.feeds)
                    shapes = tuple(np.shape(v) for v in feeds)
                    path = RunPath(plan, buffer_plan(plan, _slot_shapes(plan, shapes)))
                    path.compile()
                    with np.errstate(all="ignore"):
                        reference = run_serial(plan, feeds)
                        runs = [path.compiled(feeds), run_threaded(plan, feeds, path=path)]
                    for got in runs:
                        for a, b in zip(got, reference):
                            assert same_bits(a, b)
    finally:
        memory_plan.MIN_REUSE_BYTES = saved


# ----------------------------------------------------------------- profiler
def test_a_traced_run_reports_output_bytes_and_the_peak_of_live_values():
    from flowbook.profiling.tracing import profile
    from flowbook.runtime.step_stats import peak_bytes

    with tf.Graph().as_default(), tf.Session() as s:
        x = tf.placeholder(tf.float32, [None, 100], name="x")
        y = tf.reduce_sum(tf.exp(x * 2.0) + 1.0)  # 10 x 100 float32: 4,000 bytes each
        md = tf.RunMetadata()
        s.run(y, {x: np.ones((10, 100))}, tf.RunOptions(trace_level=3), md)
        nodes = {n.node_name: n.memory[0] for n in md.step_stats.dev_stats[0].node_stats}
        assert nodes["Exp"].total_bytes == 4000
        # while add runs: exp's output, add/y, Sum's axes [0, 1] and add's output (mul's is
        # freed already)
        assert nodes["add"].peak_bytes == 4000 + 4 + 8 + 4000
        assert nodes["add"].live_bytes == 4000 + 8  # exp's output and add/y freed
        assert peak_bytes(md.step_stats) == 8012
        with profile() as prof:
            s.run(y, {x: np.ones((10, 100))})
        rows = {r["op"]: r for r in prof.table().rows}
        assert rows["mul"]["output_bytes"] == 4000
        caption = prof.table().caption  # the straight line makes Sum's axes after add: 8,004
        assert "peak of live values 8,004 bytes" in caption or "8,012 bytes" in caption
