"""Loops and branches in the live views' states: frames, iteration counters, untaken branches."""

from __future__ import annotations

import time

import numpy as np
import pytest

import flowbook as fb
from flowbook.notebook import live, loops
from flowbook.notebook.snapshot import graph_state
from flowbook.runtime.observers import hooks_of

FRAME = "loop/while_context"


def _loop_and_cond(n=None):
    """A loop counting to ``n`` (a placeholder when None) and a cond on its result."""
    bound = fb.placeholder(fb.int32, [], name="n") if n is None else fb.constant(n, name="n")
    i = fb.while_loop(lambda i: i < bound, lambda i: i + 1, [fb.constant(0)], name="loop")
    big = fb.cond(i > 3, lambda: fb.constant(1.0, name="yes"), lambda: fb.constant(2.0, name="no"))
    return bound, i, big


def _py_step(fn, i):
    """``fn(i) + 1`` as graph, through a py_func (its scalar shape set)."""
    out = fb.py_func(fn, [i], fb.int32, name="probe")
    out.set_shape([])
    return out + 1


def _plan(sess):
    return next(iter(sess._plans.values()))


# ----------------------------------------------------------------------- the graph's side
def test_graph_state_names_loop_frames_their_nesting_and_conds():
    def outer(i, total):
        inner = fb.while_loop(
            lambda j, t: j < i, lambda j, t: (j + 1, t + 1), [0, total], name="in"
        )
        return i + 1, inner[1]

    g = fb.Graph()
    with g.as_default():
        fb.while_loop(lambda i, t: i < 3, outer, [0, 0], name="out")
        with fb.name_scope("block"):
            fb.cond(fb.constant(True), lambda: fb.constant(1), lambda: fb.constant(2), name="pick")
        fb.nn.dynamic_rnn(
            fb.nn.rnn_cell.BasicRNNCell(3), fb.zeros([2, 4, 3]), dtype=fb.float32, scope="rnn"
        )
    cf = graph_state(g)["control_flow"]
    assert cf["loops"] == [
        {"frame": "out/while_context", "scope": "out", "parent": None},
        {"frame": "out/in/while_context", "scope": "out/in", "parent": "out/while_context"},
        {"frame": "rnn/while/while_context", "scope": "rnn/while", "parent": None},
    ]
    assert cf["conds"] == ["block/pick"]
    names = {n["name"] for n in graph_state(g)["nodes"]}
    assert {"out/in/Enter", "block/pick/switch_t", "rnn/while/Exit"} <= names


def test_a_graph_without_control_flow_has_an_empty_part():
    g = fb.Graph()
    with g.as_default():
        fb.identity(fb.constant(1.0), name="switch_t")  # no Switch before it: not a cond
    assert graph_state(g)["control_flow"] == {"loops": [], "conds": []}


# ----------------------------------------------------------------------- the run's side
def test_a_run_reports_iterations_and_the_untaken_branch(view):
    g = fb.Graph()
    with g.as_default():
        bound, i, big = _loop_and_cond()
    view.attach(g)
    with fb.Session(graph=g) as s:
        assert s.run([i, big], {bound: 5}) == [5, 1.0]
        live.FLUSHER.flush_now()
        cf = view.last("run")["control_flow"]
        assert cf["iterations"] == {FRAME: 5} and cf["entries"] == {FRAME: 1}
        assert cf["taken"] == {"cond": "true"}
        assert "cond/no" in cf["not_run"] and "cond/switch_f" in cf["not_run"]
        assert "cond/yes" not in cf["not_run"] and "loop/add" not in cf["not_run"]
        for n, taken in ((2, "false"), (7, "true"), (0, "false")):  # later runs: watched whole
            s.run(big, {bound: n})
            live.FLUSHER.flush_now()
            cf = view.last("run")["control_flow"]
            assert cf["iterations"] == {FRAME: n} and cf["taken"] == {"cond": taken}
            assert ("cond/yes" in cf["not_run"]) == (taken == "false")
            assert ("loop/add" in cf["not_run"]) == (n == 0)  # a body that never ran


def test_nested_loops_count_entries_and_a_cond_in_a_loop_takes_both_sides(view):
    def outer(i, total):
        inner = fb.while_loop(
            lambda j, t: j < i, lambda j, t: (j + 1, t + 1), [0, total], name="in"
        )
        odd = fb.cond(fb.equal(i % 2, 1), lambda: inner[1] * 10, lambda: inner[1], name="odd")
        return i + 1, odd

    g = fb.Graph()
    with g.as_default():
        _, total = fb.while_loop(lambda i, t: i < 4, outer, [0, 0], name="out")
    view.attach(g)
    with fb.Session(graph=g) as s:
        s.run(total)
    live.FLUSHER.flush_now()
    cf = view.last("run")["control_flow"]
    assert cf["iterations"] == {"out/while_context": 4, "out/in/while_context": 0 + 1 + 2 + 3}
    assert cf["entries"] == {"out/while_context": 1, "out/in/while_context": 4}
    assert cf["taken"] == {"out/odd": "both"}
    assert not [n for n in cf["not_run"] if n.startswith("out/odd/")]


def test_while_a_loop_runs_the_state_says_which_iteration_it_is_in(view):
    seen: list[dict] = []

    def probe(k):  # runs inside the loop: send what the views would get now (as a tick does)
        if k in (2, 5):
            hub.touch("run")
            live.FLUSHER.flush_now()
            seen.append(view.last("run"))
        return k

    g = fb.Graph()
    with g.as_default():
        i = fb.while_loop(lambda i: i < 8, lambda i: _py_step(probe, i), [0], name="loop")
    hub = view.attach(g)
    with fb.Session(graph=g) as s:
        assert s.run(i) == 8  # the first run: shown as it goes, its loop compiled
        assert _plan(s) and s._paths[_plan(s)].layout.loops
        assert [r["phase"] for r in seen] == ["running", "running"]
        assert [r["control_flow"] for r in seen] == [{"at": {FRAME: 2}}, {"at": {FRAME: 5}}]
        live.FLUSHER.flush_now()
        done = view.last("run")
        assert done["phase"] == "done" and done["control_flow"]["iterations"] == {FRAME: 8}
        assert hub.plan_stats(_plan(s)).loops.progress == {}  # the run is over


def test_the_views_follow_a_loop_that_calls_no_hook_as_it_goes(view):
    def nap(k):
        time.sleep(0.02)
        return k

    g = fb.Graph()
    with g.as_default():
        i = fb.while_loop(lambda i: i < 20, lambda i: _py_step(nap, i), [0], name="loop")
    view.attach(g)
    with fb.Session(graph=g) as s:
        assert s.run(i) == 20  # 0.4 s: the ticker asks the flusher for a send each 0.05 s
    live.FLUSHER.flush_now()
    counts = [
        r["control_flow"]["at"][FRAME]
        for r in view.runs()
        if r["phase"] == "running" and FRAME in r["control_flow"].get("at", {})
    ]
    assert len(set(counts)) >= 3 and counts == sorted(counts), counts
    assert view.last("run")["control_flow"]["iterations"] == {FRAME: 20}
    deadline = time.monotonic() + 2
    while loops.TICKER.following and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not loops.TICKER.following  # it lets go once the run is over


# ------------------------------------------------------------- what each run is watched with
def _observer_for(sess, mode_setup):
    """What the live watcher answers for the next run of the session's plan (after ``mode_setup``)."""
    plan = _plan(sess)
    mode_setup(live.live_graph(sess.graph).plan_stats(plan))
    return live.WATCHER.for_run(plan)


def _quick(st):  # the last run took 0.1 ms, 1 µs per op run, however loaded the machine
    st.last_ns, st.n = 100_000, 100


def _slow(st):  # the last run took 1 s, in a million op runs: the next one is watched live
    st.last_ns, st.n = 10**9, 10**6


def _heavy(st):  # ... and its ops are heavy (10 op runs)
    st.last_ns, st.n = 10**9, 10


def _retime(st):  # a quick run whose times are old: the next run would be timed
    _quick(st)
    st.timed_at = 0


@pytest.mark.parametrize(
    "case, setup, watched",
    [
        ("whole", _quick, {"on_control_flow"}),
        ("timed, cheap ops", _retime, {"on_control_flow"}),
        ("live, cheap ops", _slow, {"on_loop", "on_control_flow"}),
        (
            "live, heavy ops",
            _heavy,
            {"on_loop", "on_control_flow", "before_op", "after_op", "on_timings"},
        ),
    ],
)
def test_hooks_each_loop_run_gets(view, case, setup, watched):
    g = fb.Graph()
    with g.as_default():
        bound, _, big = _loop_and_cond()
    view.attach(g)
    with fb.Session(graph=g) as s:
        s.run(big, {bound: 3})  # the first run, shown as it goes
        s.run(big, {bound: 3})  # a second one in the same cell: watched whole
        o = _observer_for(s, setup)
        hooks = (
            "before_op",
            "after_op",
            "on_timings",
            "on_iteration",
            "on_loop",
            "on_control_flow",
        )
        assert {h for h in hooks if hooks_of([o], h)} == watched
        if case == "timed, cheap ops":
            assert _observer_for(s, _quick).__class__ is loops._WholeRun  # not again


def test_the_first_run_of_a_plan_keeps_its_loops_compiled(view):
    g = fb.Graph()
    with g.as_default():
        bound, _, big = _loop_and_cond()
    view.attach(g)
    with fb.Session(graph=g) as s:
        o = live.WATCHER.for_run(_unwatched_plan(s, big, bound))
        assert isinstance(o, loops._LoopRun)  # nothing known of its ops yet
        assert not [h for h in ("before_op", "after_op", "on_timings") if hooks_of([o], h)]


def _unwatched_plan(s, fetch, bound):
    """The plan of ``fetch``, made by a run nobody watches."""
    live.WATCHER.detach()
    try:
        s.run(fetch, {bound: 1})
    finally:
        live.WATCHER.attach()
    return _plan(s)


def test_a_live_run_of_heavy_ops_shows_each_op_once(view):
    g = fb.Graph()
    with g.as_default():
        bound, _, big = _loop_and_cond()
    hub = view.attach(g)
    with fb.Session(graph=g) as s:
        s.run(big, {bound: 3})
        stats = hub.plan_stats(_plan(s))
        stats.last_ns, stats.n = 10**9, 10  # as if its ops were slow: watched live
        s.run(big, {bound: 6})
        done = hub.record.done
        assert len(done) == len(set(done)) and "loop/add" in done and "cond/no" not in done
        live.FLUSHER.flush_now()
        assert view.last("run")["control_flow"]["iterations"] == {FRAME: 6}


def test_a_failed_loop_run_names_no_untaken_ops(view):
    def fail(k):
        if k == 2:
            raise ValueError("boom")
        return k

    g = fb.Graph()
    with g.as_default():
        i = fb.while_loop(lambda i: i < 5, lambda i: _py_step(fail, i), [0], name="loop")
    view.attach(g)
    with fb.Session(graph=g) as s, pytest.raises(Exception, match="boom"):
        s.run(i)
    live.FLUSHER.flush_now()
    run = view.last("run")
    assert run["phase"] == "error" and "not_run" not in run["control_flow"]


def test_runs_without_control_flow_keep_their_path_and_an_empty_part(view):
    g = fb.Graph()
    with g.as_default():
        y = fb.constant(np.float32(2.0)) * 3.0
    view.attach(g)
    with fb.Session(graph=g) as s:
        s.run(y)
        s.run(y)
        o = live.WATCHER.for_run(_plan(s))
    live.FLUSHER.flush_now()
    assert o is None  # watched whole, on its compiled straight line
    assert view.last("run")["control_flow"] == {}
