"""The executors: threaded == serial == compiled on random DAGs, errors, interrupts,
threads, concurrency."""

from __future__ import annotations

import threading

import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flowbook as fb
from flowbook.runtime import executor
from flowbook.runtime import pool as pool_module
from flowbook.runtime.codegen.compile import RunPath
from flowbook.runtime.plan import build_plan
from tests.interrupts import WITHIN, CtrlC

# these tests watch the executor's paths over the plan as written: no optimiser passes
AS_WRITTEN = fb.ConfigProto(
    graph_options=fb.GraphOptions(optimizer_options=fb.OptimizerOptions(opt_level=-1))
)

BINARY = [fb.add, fb.subtract, fb.multiply, fb.maximum, fb.minimum]
UNARY = [fb.negative, fb.abs, fb.square, fb.tanh, fb.sigmoid]


@st.composite
def random_dag(draw):
    """A random DAG of element-wise ops over two fed inputs; some fetches, some feeds."""
    n = draw(st.integers(3, 40))
    spec = []
    for i in range(n):
        kind = draw(st.sampled_from(["unary", "binary", "const"]))
        a = draw(st.integers(0, i + 1))
        b = draw(st.integers(0, i + 1))
        fn = draw(st.integers(0, 4))
        spec.append((kind, a, b, fn))
    fetch = draw(st.lists(st.integers(0, n + 1), min_size=1, max_size=4))
    fed = draw(st.lists(st.integers(2, n + 1), max_size=2))
    return spec, fetch, fed


def build(spec):
    x = fb.placeholder(fb.float64, [3], name="x")
    y = fb.placeholder(fb.float64, [3], name="y")
    nodes = [x, y]
    for kind, a, b, fn in spec:
        if kind == "const":
            nodes.append(fb.constant(np.full(3, 0.1 * (a + 1))))
        elif kind == "unary":
            nodes.append(UNARY[fn](nodes[a]))
        else:
            nodes.append(BINARY[fn](nodes[a], nodes[b]))
    return nodes


class Forced(executor.Observer):
    """Attaching any observer sends runs through the scheduler with its pool."""


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_dag())
def test_threaded_serial_and_compiled_agree_on_random_dags(case):
    spec, fetch, fed = case
    with fb.Graph().as_default() as g:
        nodes = build(spec)
        fetches = [nodes[i] for i in fetch]
        feeds = {nodes[0]: np.array([0.5, -1.0, 2.0]), nodes[1]: np.array([1.5, 0.25, -3.0])}
        for i in fed:
            feeds[nodes[i]] = np.array([1.0, 2.0, 3.0])
        with fb.Session(graph=g) as s:
            first = s.run(fetches, feeds)  # serial reference
            second = s.run(fetches, feeds)  # compiled
            with fb.observe(Forced()):
                threaded = s.run(fetches, feeds)
        for a, b, c in zip(first, second, threaded):
            np.testing.assert_array_equal(a, b)
            np.testing.assert_array_equal(a, c)


@settings(max_examples=40, deadline=None)
@given(random_dag())
def test_plan_is_the_pruned_ancestor_set_in_topological_order(case):
    spec, fetch, fed = case
    with fb.Graph().as_default() as g:
        nodes = build(spec)
        fed = {nodes[i] for i in fed} | {nodes[0], nodes[1]}
        fetches = [nodes[i] for i in fetch]
        dag = nx.DiGraph()
        for op in g.get_operations():
            dag.add_node(op)
            for t in op.inputs:
                if t not in fed:
                    dag.add_edge(t.op, op)
        expected = set()
        for f in fetches:
            if f not in fed:
                expected |= nx.ancestors(dag, f.op) | {f.op}
        plan = build_plan(g, fetches, (), list(fed), bind=lambda op: None)
        assert set(plan.ops) == expected
        position = {op: i for i, op in enumerate(plan.ops)}
        for op in plan.ops:
            for t in op.inputs:
                if t.op in position and t not in fed:
                    assert position[t.op] < position[op]


def test_compiled_plan_reuses_locals_and_frees_values():
    x = fb.placeholder(fb.float32, [], name="x")
    y = x
    for _ in range(50):
        y = y + 1.0
    with fb.Session(config=AS_WRITTEN) as s:
        s.run(y, {x: 0.0})
        assert s.run(y, {x: 0.0}) == 50.0
        path = next(iter(s._paths.values()))
        assert path.compiled is not None
        assert path.compiled.__code__.co_nlocals < 10  # a chain needs only a few live names


def test_heavy_independent_ops_run_on_the_pool_and_agree():
    x = fb.placeholder(fb.float32, [300, 300])
    branches = [fb.matmul(x + float(i), x) for i in range(4)]
    total = fb.add_n(branches)
    value = np.random.default_rng(0).standard_normal((300, 300)).astype(np.float32)
    submitted = []
    real_submit = executor.pool().submit

    def counting_submit(*args, **kwargs):
        submitted.append(args[1])
        return real_submit(*args, **kwargs)

    with fb.Session() as s:
        got = s.run(total, {x: value})
        executor.pool().submit = counting_submit
        try:
            s.run(total, {x: value})
        finally:
            del executor.pool().submit
    expected = sum((value + i) @ value for i in range(4))
    np.testing.assert_allclose(got, expected, rtol=1e-3, atol=1e-2)
    assert submitted  # independent heavy ops went to the pool, side by side


def test_a_heavy_op_ready_behind_a_light_one_with_work_goes_to_the_pool_first():
    """After a CNN's pool gradient, its bias gradient (light) and filter gradient (heavy) are
    ready: the heavy one is sent to the pool before the light one runs inline, so they overlap."""
    dy = fb.placeholder(fb.float32, [4096, 256])
    light = fb.get_default_graph().create_op("BiasAddGrad", [dy]).outputs[0]  # made first
    w = fb.placeholder(fb.float32, [256, 256])
    heavy = fb.matmul(dy, w)  # both ready once the feeds are in
    value = np.ones((4096, 256), np.float32)
    submitted = []
    real_submit = executor.pool().submit

    def counting_submit(*args, **kwargs):
        submitted.append(args[1])  # the op index the pool runs
        return real_submit(*args, **kwargs)

    with fb.Session() as s:
        plan_ops = None
        executor.pool().submit = counting_submit
        try:
            got = s.run([light, heavy], {dy: value, w: np.ones((256, 256), np.float32)})
            plan_ops = s._cache.last.ops
        finally:
            del executor.pool().submit
    assert [plan_ops[i].type for i in submitted] == ["MatMul"]
    assert got[0].tolist() == [4096.0] * 256 and float(got[1][0, 0]) == 256.0


def test_first_error_cancels_the_rest_of_the_step():
    m = fb.placeholder(fb.float64, [200, 200], name="m")
    bad = fb.matrix_inverse(fb.zeros([200, 200], fb.float64), name="bad")
    v = fb.Variable(0.0, name="v")
    with fb.control_dependencies([bad]):
        later = v.assign_add(1.0)
    slow = [fb.matmul(m, m) for _ in range(3)]
    with fb.Session() as s:
        s.run(v.initializer)
        with pytest.raises(fb.errors.InvalidArgumentError, match="'bad'"):
            s.run([later, *slow], {m: np.ones((200, 200))})
        assert s.run(v) == 0.0  # the op after the failure never ran
        s.run(slow[0], {m: np.ones((200, 200))})  # and the session still works


def test_keyboard_interrupt_stops_a_run_and_session_stays_usable():
    x = fb.placeholder(fb.float64, [200, 200])
    y = x
    for _ in range(400):
        y = fb.matmul(y, x) * 1e-3  # a long run: 800 ops, 400 of them products
    value = np.eye(200)
    # the press raises only inside Session.run: the interrupt lands in a run, never between
    press = CtrlC(inside=[fb.Session.run], started=True)
    with fb.Session() as s:
        with press:
            while press.pressing():  # ends if no interrupt lands: the block then fails
                s.run(y, {x: value})
        assert np.allclose(s.run(x * 2.0, {x: value}), 2 * value)


def test_an_interrupt_while_a_pool_starts_leaves_every_worker_registered():
    """Interpreter exit wakes only the workers concurrent.futures registered; one that
    Ctrl-C cut off from its registration (in Thread.start()) would hang it forever."""
    from concurrent.futures import thread as futures_thread

    pools = []
    press = CtrlC(inside=[threading.Thread.start], started=True)
    with press:
        while press.pressing():  # pools start workers until one start is interrupted
            p = pool_module.CountingPool(max_workers=2, thread_name_prefix="ctrl-c-pool")
            pools.append(p)
            p.submit(int).result()
    for t in threading.enumerate():
        if t.name == "flowbook-pool-start":
            t.join(WITHIN)  # what the interrupted start had left to do
    workers = [t for t in threading.enumerate() if t.name.startswith("ctrl-c-pool")]
    assert [t.name for t in workers if t not in futures_thread._threads_queues] == []
    for p in pools:
        p.shutdown()


def test_no_threads_leak_across_thousands_of_runs():
    x = fb.placeholder(fb.float32, [64, 64])
    a = fb.matmul(x, x)
    b = fb.matmul(x + 1.0, x)
    c = a + b
    value = np.ones((64, 64), np.float32)
    with fb.Session() as s:
        s.run(c, {x: value})
    before = threading.active_count()
    for _ in range(2000):
        with fb.Session() as s, fb.observe(Forced()):
            s.run(c, {x: value})
    assert threading.active_count() <= max(before, 1 + executor.pool()._max_workers + 1)


def test_concurrent_runs_lose_no_assign_add():
    counter = fb.Variable(0, name="counter")
    inc = counter.assign_add(1)
    with fb.Session() as s:
        s.run(counter.initializer)

        def worker(observed: bool) -> None:
            for _ in range(500):
                if observed:
                    with fb.observe(Forced()):
                        s.run(inc)
                else:
                    s.run(inc)

        threads = [threading.Thread(target=worker, args=(i % 2 == 0,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert s.run(counter) == 8 * 500


def test_serial_reference_and_compile_directly():
    x = fb.placeholder(fb.float32, [2], name="x")
    y = fb.square(x) + x
    with fb.Session() as s:
        plan = build_plan(s.graph, [y], (), [x], s._bind)
        ref = executor.run_serial(plan, [np.array([1.0, 2.0], np.float32)])
        path = RunPath(plan)
        path.compile()
        fast = executor.run_compiled(path, [np.array([1.0, 2.0], np.float32)])
    assert ref[0].tolist() == fast[0].tolist() == [2.0, 6.0]


def _paths(monkeypatch):
    """Record which executor path each run of a session takes."""
    taken: list[str] = []
    for name in ("run_serial", "run_compiled", "run_compiled_timed", "run_threaded"):
        fn = getattr(executor, name)

        def spy(*args, _fn=fn, _name=name, **kwargs):
            taken.append(_name)
            return _fn(*args, **kwargs)

        monkeypatch.setattr(executor, name, spy)
    return taken


def test_heavy_plans_whose_kernels_ran_inline_take_the_straight_line(monkeypatch):
    """A plan with matmuls runs on the scheduler until one run sends nothing to the pool;
    then runs whose feeds have the same shapes take the compiled straight line."""
    x = fb.placeholder(fb.float32, [None, 300], name="x")
    w = fb.constant(np.full((300, 30), 0.01, np.float32))  # small: a matmul of 2 rows stays inline
    y = fb.matmul(x, w, name="left") + fb.matmul(x * 2.0, w, name="right")
    small, big = np.ones((2, 300), np.float32), np.ones((300, 300), np.float32)
    taken = _paths(monkeypatch)
    with fb.Session(config=AS_WRITTEN) as s:
        plan_value = s.run(y, {x: small})
        assert taken == ["run_threaded"]  # heavy: the scheduler decides, kernels inline
        for _ in range(2):
            np.testing.assert_allclose(s.run(y, {x: small}), plan_value, rtol=1e-6)
        assert taken[1:] == ["run_compiled", "run_compiled"]
        expected = big @ np.full((300, 30), 0.01, np.float32) * 3
        np.testing.assert_allclose(s.run(y, {x: big}), expected, rtol=1e-5)  # new shapes
        assert taken[3] == "run_threaded"
        md = fb.RunMetadata()  # traced runs with the small feed: its signature kept its line
        s.run(
            y,
            {x: small},
            options=fb.RunOptions(trace_level=fb.RunOptions.FULL_TRACE),
            run_metadata=md,
        )
        s.run(
            y,
            {x: small},
            options=fb.RunOptions(trace_level=fb.RunOptions.FULL_TRACE),
            run_metadata=md,
        )
        assert taken[4:] == ["run_compiled_timed", "run_compiled_timed"]
        names = {n.node_name for n in md.step_stats.dev_stats[0].node_stats}
        assert {"left", "right"} <= names
        path = next(iter(s._paths.values()))
        s.run(y, {x: big})  # new shapes again: the scheduler, which may use the pool
        assert taken[-1] == "run_threaded"
        inline = (big.shape,) in path.inline_feeds  # whether that run kept every kernel inline
        s.run(y, {x: big})
        assert taken[-1] == ("run_compiled" if inline else "run_threaded")
