"""The session's plan cache (``flowbook.runtime.plan_cache``): plans survive adding ops; an edit
of existing ops drops exactly the plans that hold one.

``EDITS`` is the table: each row edits a small graph in which the fetch ``near`` holds the
op the edit touches and ``far`` does not, after both ran three times (compiled, optimised),
and says which of their plans must stay.  Every run after the edit is compared with a fresh
session on the edited graph (values, or the error raised), with the optimiser on and off.
A hypothesis test does the same over random sequences of additions, edits and runs.
"""

from __future__ import annotations

import gc
import threading
import weakref

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flowbook as fb
from flowbook.framework import devices, graph_edit
from flowbook.framework.errors import FailedPreconditionError, InvalidArgumentError
from flowbook.framework.source import Cell
from flowbook.runtime import executor, plan_cache
from flowbook.runtime.gpu_sim import simulate_gpu

OFF = fb.ConfigProto(
    graph_options=fb.GraphOptions(optimizer_options=fb.OptimizerOptions(opt_level=-1))
)
CONFIGS = {"optimiser on": None, "optimiser off": OFF}
FEED = {"x:0": np.arange(6, dtype=np.float32).reshape(2, 3)}


def build():
    """x -> near = x * a (the op the edits touch), far = x + 1 (never touched)."""
    x = fb.placeholder(fb.float32, [None, 3], name="x")
    a = fb.constant(np.array([1, 2, 3], np.float32), name="a")
    with fb.control_dependencies([fb.no_op(name="before")]):
        near = fb.multiply(x, a, name="near")
    far = fb.add(x, 1.0, name="far")
    return {"x": x, "a": a, "near": near, "far": far}


def outcome(session, name):
    """What running ``name`` gives: ("value", array) or ("error", its type)."""
    try:
        return ("value", session.run(f"{name}:0", FEED))
    except Exception as e:  # the same error as a fresh session's is what counts
        return ("error", type(e))


def same(got, want):
    if got[0] != want[0] or got[0] == "error":
        return got == want
    return np.array_equal(got[1], want[1])


def _replace_cell(g, t):
    """The notebook re-runs the cell that made ``a`` and ``near``: new ops, same names."""
    g._remove_ops([t["a"].op, t["near"].op], by=Cell("c1", 2))
    a = fb.constant(np.array([4, 5, 6], np.float32), name="a")
    fb.multiply(t["x"], a, name="near")


def _import(g, t):
    other = fb.Graph()
    with other.as_default():
        fb.constant(2.0, name="two") * 3.0
    fb.import_graph_def(other.as_graph_def(), name="imported")
    fb.import_graph_def(g.as_graph_def(), input_map={"x": t["x"]}, name="again")


def _failed_import(g, t):
    other = fb.Graph()
    with other.as_default():
        fb.constant(2.0, name="two") * 3.0
    gd = other.as_graph_def()
    gd.node[-1].op = "NoSuchOp"
    with pytest.raises(ValueError):
        fb.import_graph_def(gd, name="broken")


def _assert_first(g, t):
    failing = fb.Assert(fb.constant(False), ["stop"], name="stop")
    t["near"].op._add_control_input(failing)


def _update_input(g, t):
    t["near"].op._update_input(1, fb.constant(np.array([7, 8, 9], np.float32)))


def _reroute(g, t):
    graph_edit.reroute_ts(fb.constant(np.array([0, 1, 0], np.float32)), t["a"])


def _scope_reuse(g, t):
    for _ in range(2):
        with fb.name_scope("near"):
            fb.constant(1.0, name="a")


EDITS = [  # (edit, near's plan kept, far's plan kept)
    ("append an op", lambda g, t: fb.square(t["near"], name="extra"), True, True),
    ("append a while_loop", lambda g, t: fb.while_loop(lambda i: i < 3, lambda i: i + 1, [0]),
     True, True),
    ("name scope reuse", _scope_reuse, True, True),
    ("add to a collection", lambda g, t: fb.add_to_collection("stuff", t["near"]), True, True),
    ("import_graph_def into the same graph", _import, True, True),
    ("import_graph_def that fails and rolls back", _failed_import, True, True),
    ("replace a cell's ops (notebook re-run)", _replace_cell, False, True),
    ("add a control input (a failing Assert)", _assert_first, False, True),
    ("remove all control inputs", lambda g, t: t["near"].op._remove_all_control_inputs(),
     False, True),
    ("set a device the session has not", lambda g, t: t["near"].op._set_device("/gpu:7"),
     False, True),
    ("set the CPU as device", lambda g, t: t["near"].op._set_device("/cpu:0"), False, True),
    ("update an input", _update_input, False, True),
    ("graph_edit.reroute_ts", _reroute, False, True),
]  # fmt: skip


@pytest.mark.parametrize("config", CONFIGS.values(), ids=CONFIGS.keys())
@pytest.mark.parametrize(
    ("edit", "near_kept", "far_kept"), [e[1:] for e in EDITS], ids=[e[0] for e in EDITS]
)
def test_each_edit_drops_exactly_the_plans_holding_an_edited_op(
    fresh_graph, config, edit, near_kept, far_kept
):
    g, t = fresh_graph, build()
    s = fb.Session(config=config)
    for _ in range(3):  # compiled, then optimised
        for name in ("near", "far"):
            assert outcome(s, name)[0] == "value"
    plans = {name: s._plans[(t[name], None, t["x"])] for name in ("near", "far")}
    edit(g, t)
    fresh = fb.Session(config=config)
    for _ in range(3):
        for name in ("near", "far"):
            got, want = outcome(s, name), outcome(fresh, name)
            assert same(got, want), (name, got, want)
    assert (plans["near"] in s._paths, plans["far"] in s._paths) == (near_kept, far_kept)


def test_an_added_op_costs_no_plan_compile_or_optimisation(fresh_graph, monkeypatch):
    t = build()
    s = fb.Session()
    for _ in range(3):
        s.run(t["near"], FEED)
    path = s._paths[s._plans[(t["near"], None, t["x"])]]
    compiled, optimised = path.compiled, dict(path.optimized)
    built = []
    real = fb.session.build_plan
    monkeypatch.setattr(fb.session, "build_plan", lambda *a, **k: built.append(1) or real(*a, **k))
    for i in range(5):
        fb.add(t["near"], float(i))
        s.run(t["near"], FEED)
    assert built == [] and path.compiled is compiled and path.optimized == optimised


class _NoWalking(dict):
    """A graph's op table that refuses to be walked (lookups by name are allowed)."""

    def _refuse(self, *args):
        raise AssertionError("the run walked the graph")

    __iter__ = values = items = keys = _refuse  # type: ignore[assignment]


def test_the_run_after_an_edit_checks_the_edited_ops_not_the_graph(fresh_graph):
    g, t = fresh_graph, build()
    s = fb.Session()
    for name in ("near", "far"):
        s.run(t[name], FEED)
    _update_input(g, t)
    fresh = fb.Session().run(t["near"], FEED)
    g._ops = _NoWalking(g._ops)
    np.testing.assert_array_equal(s.run(t["near"], FEED), fresh)  # rebuilt (by name lookups)
    s.run(t["far"], FEED)  # kept


def test_a_plan_of_a_removed_op_goes_and_so_does_the_op(fresh_graph):
    g, t = fresh_graph, build()
    s = fb.Session()
    s.run(t["near"], FEED)
    s.run(t["far"], FEED)
    gone = weakref.ref(t["near"].op)
    _replace_cell(g, t)
    t.clear()
    s.run("far:0", FEED)  # the first run after the edit sweeps the cache
    gc.collect()
    assert gone() is None and len(s._plans) == 1


def test_a_cached_plan_of_a_stale_op_is_refused_as_a_new_one_is(fresh_graph):
    g, t = fresh_graph, build()
    later = fb.subtract(t["near"], 1.0, name="later")
    s = fb.Session()
    s.run(later, FEED)
    g._remove_ops([t["a"].op], by=Cell("c1", 3))
    with pytest.raises(FailedPreconditionError, match=r"'(later|near)'.*is stale"):
        s.run(later, FEED)


def test_a_plan_fed_an_edited_ops_output_is_rebuilt_and_agrees(fresh_graph):
    g, t = fresh_graph, build()
    y = fb.multiply(t["near"], 2.0, name="y")
    feed = {t["near"]: np.ones((2, 3), np.float32)}
    s = fb.Session()
    s.run(y, feed)
    plan = s._plans[(y, None, t["near"])]
    _update_input(g, t)
    np.testing.assert_array_equal(s.run(y, feed), fb.Session().run(y, feed))
    assert plan not in s._paths  # it was fed by an edited op: rebuilt, the same


def test_an_initializer_made_before_a_new_variable_does_not_initialise_it(fresh_graph):
    v1 = fb.Variable(1.0, name="v1")
    init = fb.global_variables_initializer()
    s = fb.Session()
    s.run(init)
    v2 = fb.Variable(2.0, name="v2")
    s.run(init)  # the cached plan: still only v1, as a fresh session's plan of init
    fresh = fb.Session()
    fresh.run(init)
    for session in (s, fresh):
        assert float(session.run(v1)) == 1.0
        with pytest.raises(FailedPreconditionError, match="uninitialized value v2"):
            session.run(v2)
        session.run(fb.global_variables_initializer())
        assert float(session.run(v2)) == 2.0


def test_edits_older_than_the_log_keeps_drop_every_plan(fresh_graph, monkeypatch):
    monkeypatch.setattr(graph_edit.EditLog, "MAX", 2)
    t = build()
    s = fb.Session()
    s.run(t["far"], FEED)
    for _ in range(4):  # edits of an op no plan holds, more than the log keeps
        fb.constant(1.0, name="other").op._set_device("/cpu:0")
    s.run(t["near"], FEED)
    assert list(s._plans) == [(t["near"], None, t["x"])]


def test_a_device_edit_with_a_gpu_drops_every_plan(fresh_graph):
    with simulate_gpu():
        t = build()
        s = fb.Session()
        for name in ("near", "far"):
            s.run(t[name], FEED)
        t["near"].op._set_device("/cpu:0")
        fresh = fb.Session()
        for name in ("near", "far"):
            np.testing.assert_array_equal(s.run(t[name], FEED), fresh.run(t[name], FEED))
        assert {k[0].op.name for k in s._plans} == {"near", "far"}
        (near_plan,) = [p for k, p in s._plans.items() if k[0] is t["near"]]
        assert all(
            d is devices.CPU for op, d in zip(near_plan.ops, near_plan.devices) if op.name == "near"
        )


def test_the_least_recently_used_plan_is_evicted(fresh_graph, monkeypatch):
    monkeypatch.setattr(plan_cache, "MAX_PLANS", 3)
    x = fb.placeholder(fb.float32, name="x")
    ys = [x + float(i) for i in range(4)]
    s = fb.Session()
    for y in ys[:3]:
        s.run(y, {x: 1.0})
    s.run(ys[0], {x: 1.0})  # now the most recently used
    s.run(ys[3], {x: 1.0})  # evicts ys[1]
    assert [k[0] for k in s._plans] == [ys[2], ys[0], ys[3]]
    assert len(s._paths) == 3


def test_alternating_batch_shapes_each_keep_the_straight_line(fresh_graph, monkeypatch):
    """A plan with matmuls (heavy ops) whose runs keep every kernel inline takes the
    straight line for each of the feed shapes it alternates between."""
    x = fb.placeholder(fb.float32, [None, 64], name="x")
    w = fb.constant(np.full((64, 32), 0.01, np.float32))
    y = fb.reduce_sum(fb.nn.relu(fb.matmul(x, w)))
    taken = []
    real = executor.run_compiled
    monkeypatch.setattr(executor, "run_compiled", lambda *a: taken.append(1) or real(*a))
    batches = [np.ones((n, 64), np.float32) for n in (100, 99)]
    with fb.Session(config=OFF) as s:
        for k in range(12):
            got = s.run(y, {x: batches[k % 2]})
            assert np.isclose(got, batches[k % 2].shape[0] * 32 * 0.64, rtol=1e-5)
    assert len(taken) >= 8  # every run after each shape's first two


def test_runs_from_several_threads_while_the_graph_is_edited(fresh_graph):
    t = build()
    s = fb.Session()
    want = {name: s.run(t[name], FEED) for name in ("near", "far")}
    errors = []

    def runs(name):
        try:
            for _ in range(200):
                np.testing.assert_array_equal(s.run(t[name], FEED), want[name])
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=runs, args=(n,)) for n in ("near", "far")]
    for th in threads:
        th.start()
    for i in range(50):  # edits that leave both values as they are
        fb.add(t["far"], float(i))
        t["near"].op._add_control_input(fb.no_op())
    for th in threads:
        th.join()
    assert errors == []


# ----------------------------------------------------------------- hypothesis
STEPS = st.lists(
    st.tuples(
        st.sampled_from(
            ["add", "update", "control", "uncontrol", "reroute", "device", "remove", "run"]
        ),
        st.integers(0, 50),
        st.integers(0, 50),
    ),
    min_size=1,
    max_size=25,
)


@settings(max_examples=40, deadline=None)
@given(steps=STEPS)
def test_a_kept_session_agrees_with_a_fresh_one_through_random_edits(steps):
    """Random additions, input rewiring, control inputs, removals and runs: every run of a
    session kept throughout gives what a fresh session gives on the graph as it is then."""
    with fb.Graph().as_default() as g:
        x = fb.placeholder(fb.float32, [2], name="x")
        tensors = [x, fb.constant([1.0, 2.0])]
        feed = {x: np.array([0.5, -1.5], np.float32)}
        s = fb.Session(graph=g)
        for kind, i, j in steps:
            live = [u for u in tensors if g._ops.get(u.op.name) is u.op]
            a, b = live[i % len(live)], live[j % len(live)]
            if kind == "add":
                tensors.append(fb.add(a, fb.tanh(b)))
            elif kind == "update" and a.op.inputs and a.op.type != "Placeholder":
                if a.op._id > b.op._id:  # an older input: no cycle
                    a.op._update_input(0, b)
            elif kind == "control" and a.op._id > b.op._id:
                a.op._add_control_input(b.op)
            elif kind == "uncontrol":
                a.op._remove_all_control_inputs()
            elif kind == "reroute" and a.op._id < b.op._id and a.dtype == b.dtype:
                later = [u.op for u in live if u.op._id > b.op._id]  # readers after b: no cycle
                graph_edit.reroute_ts(b, a, can_modify=later)
            elif kind == "device":
                a.op._set_device("/cpu:0" if i % 2 else "")
            elif kind == "remove" and a is not x:
                g._remove_ops([a.op])
            elif kind == "run":  # each tensor made so far, removed ones too
                fresh = fb.Session(graph=g)
                for u in tensors:
                    got, want = outcome_of(s, u, feed), outcome_of(fresh, u, feed)
                    assert got[0] == want[0]
                    assert got[0] == "error" or np.array_equal(got[1], want[1])
        s.close()


def outcome_of(session, fetch, feed):
    try:
        return ("value", session.run(fetch, feed))
    except (FailedPreconditionError, InvalidArgumentError) as e:
        return ("error", type(e))


# ---------------------------------------------------------------- the edits
def test_reroute_ts_changes_only_the_readers_it_may():
    a, b = fb.constant(1.0, name="a"), fb.constant(5.0, name="b")
    keep, free, barred = (fb.multiply(a, float(k), name=n) for k, n in enumerate("kfz", 2))
    assert graph_edit.reroute_ts(b, a, can_modify=[free, barred], cannot_modify=barred) == [free.op]
    with fb.Session() as s:
        assert s.run([keep, free, barred]) == [2.0, 15.0, 4.0]
    with pytest.raises(ValueError, match="not the same dtype"):
        graph_edit.reroute_ts(fb.constant(1), a)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda y, other: y.op._update_input(0, fb.constant(1)), "it cannot read int32"),
        (lambda y, other: y.op._update_input(0, other), "of another graph"),
        (lambda y, other: y.op._add_control_input(other.op), "not an op of its graph"),
        (lambda y, other: y.op._set_device("/nonsense:thing"), None),
    ],
    ids=["dtype", "graph", "control input", "device"],
)
def test_bad_edits_are_refused_and_change_nothing(edit, message):
    y = fb.multiply(fb.constant(2.0), 3.0, name="y")
    with fb.Graph().as_default():
        other = fb.constant(1.0)
    before = (y.op.inputs, list(y.op.control_inputs), y.op.device, y.graph._edit_log.count)
    with pytest.raises(ValueError, match=message):
        edit(y, other)
    assert (y.op.inputs, y.op.control_inputs, y.op.device, y.graph._edit_log.count) == before
