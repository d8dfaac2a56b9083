"""The live views' Python side, headless: graph snapshots, run states, throttling, stepper, panel."""

from __future__ import annotations

import json
import re
import time

import numpy as np
import pytest

import flowbook as fb
from flowbook.framework import source
from flowbook.notebook import flusher, history, live, panel, watch
from flowbook.notebook.snapshot import graph_state, preview
from flowbook.runtime import session as session_module
from tests.live_fakes import FakeView


def _flush():
    live.FLUSHER.flush_now()


def test_graph_state_nodes_edges_kinds_and_html_names_are_plain_text():
    g = fb.Graph()
    with g.as_default():
        x = fb.placeholder(fb.float32, [None, 3], name="x")
        v = fb.Variable(np.zeros(3, np.float32), name="a>b")  # ">" is the one HTML mark TF allows
        c = fb.constant(2.0, name="two")
        with fb.control_dependencies([c.op]), fb.name_scope("layer"):
            y = fb.add(x, v, name="y")
    nodes = {n["name"]: n for n in graph_state(g)["nodes"]}
    assert nodes["x"]["kind"] == "placeholder" and nodes["two"]["kind"] == "constant"
    assert nodes["a>b"]["kind"] == "variable"
    assert nodes["layer/y"]["inputs"] == ["x:0", "a>b/read:0"]
    assert nodes["layer/y"]["control"] == ["two"]
    assert nodes["layer/y"]["outputs"] == [["float32", "(?, 3)"]]
    assert nodes["layer/y"]["line"] > 0 and "fb.add" in nodes["layer/y"]["code"]
    assert y.op.name == "layer/y"
    json.dumps(graph_state(g))


@pytest.mark.parametrize(
    "value, expected",
    [
        (np.float32(2), "float32 () 2."),
        (np.array([1, 2, 3]), "int64 (3,) [1 2 3]"),
        (np.arange(12.0).reshape(3, 4), "float64 (3, 4) min 0 mean 5.5 max 11"),
        (np.array([np.inf] * 8), "float64 (8,) all NaN/Inf"),
        (np.array([1.0] * 7 + [np.nan]), "float64 (8,) min 1 mean 1 max 1 (1 NaN/Inf)"),
        (np.array([b"ab", b"cd"]), "bytes16 (2,) [b'ab' b'cd']"),
        (None, "None"),
    ],
)
def test_preview(value, expected):
    assert preview(value) == expected


def test_runs_first_timed_then_watched_whole_on_the_compiled_path(view, monkeypatch):
    from flowbook.notebook import watch

    # a loaded machine can make the first run look slow enough to time again soon: not here
    monkeypatch.setattr(watch, "RETIME_FAST_NS", 10**12)
    monkeypatch.setattr(watch, "RETIME_NS", 10**12)
    g = fb.Graph()
    with g.as_default():
        x = fb.placeholder(fb.float32, name="x")
        y = x
        for _ in range(20):
            y = y + 1.0
    view.attach(g)
    with fb.Session(graph=g) as s:
        s.run(y, {x: 1.0})
        _flush()
        first = view.last("run")
        assert first["phase"] == "done" and first["fed"] == ["x"]
        assert set(first["times_us"]) == set(first["pruned"]) and len(first["pruned"]) == 40
        assert first["values"][y.op.name] == "float32 () 21."
        for _ in range(5):
            assert float(s.run(y, {x: 2.0})) == 22.0
        path = next(iter(s._paths.values()))
        # watched whole: still the straight line (of the optimised plan, once there is one)
        paths = [path, *(e[1] for e in path.optimized.values() if type(e) is tuple)]
        assert paths[-1].compiled is not None
    _flush()
    last = view.last("run")
    assert last["seq"] == 6 and last["done"] == last["pruned"]
    assert last["times_us"] == first["times_us"]  # times kept from the timed run


def test_plans_where_timing_is_cheap_are_retimed_often(view, monkeypatch):
    g = fb.Graph()
    with g.as_default():
        a = fb.placeholder(fb.float32, [None, 64], name="a")
        y = fb.matmul(a, fb.constant(np.ones((64, 64), np.float32)), name="mm")
    view.attach(g)
    monkeypatch.setattr(watch, "TIME_HEAVY_NS", 0)
    monkeypatch.setattr(watch, "RETIME_FAST_NS", 0)
    with fb.Session(graph=g) as s:
        for _ in range(3):
            s.run(y, {a: np.ones((8, 64), np.float32)})
        stats = next(iter(live.live_graph(g).stats.values()))
        assert stats.runs == 3 and stats.mode(next(iter(s._plans.values()))) == "timed"
        assert stats.times()["mm"] > 0


def test_long_runs_are_watched_op_by_op(view, monkeypatch):
    g = fb.Graph()
    with g.as_default():
        y = fb.constant(1.0, name="one") * 2.0
    hub = view.attach(g)
    monkeypatch.setattr(watch, "LIVE_NS", 0)
    seen = []

    class Spy(fb.Observer):
        def after_op(self, op, outputs):
            rec = hub.record
            if rec.running is not None:  # the first run is timed, not live
                seen.append((list(rec.running), list(rec.done)))

    with fb.Session(graph=g) as s, fb.observe(Spy()):
        s.run(y)
        s.run(y)
    assert seen[0] == (["one"], ["one"])  # the widget's hooks ran before the spy's
    assert seen[-1] == (["one", "mul/y", "mul"], ["one", "mul/y", "mul"])
    _flush()
    assert view.last("run")["done"] == ["one", "mul/y", "mul"]


def test_a_failed_run_names_its_op_and_the_nan_guard_is_flagged(view):
    g = fb.Graph()
    with g.as_default():
        x = fb.placeholder(fb.float32, name="x")
        bad = fb.log(x, name="bad_log")
        out = fb.identity(bad, name="out")
    view.attach(g)
    opts = fb.RunOptions(check_numerics=True)
    with fb.Session(graph=g) as s:
        s.run(out, {x: 1.0})
        for _ in range(2):
            with pytest.raises(fb.errors.InvalidArgumentError):
                s.run(out, {x: -1.0}, options=opts)
    _flush()
    run = view.last("run")
    assert run["phase"] == "error" and run["error"]["node"] == "bad_log"
    assert run["error"]["nan"] and "NaN" in run["error"]["message"]
    assert "out" not in run["done"]


def _pushes_while_running(view, seconds: float = 0.5) -> int:
    """How many updates ``view`` gets while a tiny graph runs over and over for ``seconds``
    (and the tick after); at most 0.65 s * MAX_PUSHES_PER_S, plus slack, if throttled."""
    g = fb.Graph()
    with g.as_default():
        y = fb.constant(1.0) + 1.0
    view.attach(g)
    before = len(view.got)
    with fb.Session(graph=g) as s:
        t0 = time.monotonic()
        while time.monotonic() - t0 < seconds:
            s.run(y)
    time.sleep(0.15)
    return len(view.got) - before


def test_updates_are_throttled(view):
    assert 1 <= _pushes_while_running(view) <= 0.65 * flusher.MAX_PUSHES_PER_S + 2
    assert view.last("run")["phase"] == "done"


def test_a_slow_view_is_not_sent_updates_back_to_back(view):
    """Runs keep the graph dirty while a slow view takes an update: the next waits its tick."""
    fast_push = view.push

    def push(state: dict) -> None:
        time.sleep(0.01)  # a fifth of the interval between sends
        fast_push(state)

    view.push = push
    assert 1 <= _pushes_while_running(view) <= 0.65 * flusher.MAX_PUSHES_PER_S + 2
    live.FLUSHER.flush_now()
    assert view.last("run")["phase"] == "done"


def test_graph_changes_and_stale_marks_are_sent_on_refresh(view):
    g = fb.Graph()
    with g.as_default():
        a = fb.constant(1.0, name="a")
        fb.identity(a, name="b")
    hub = view.attach(g)
    n = len(view.got)
    hub.refresh()
    assert len(view.got) == n  # nothing changed, nothing sent
    g._remove_ops([a.op])
    hub.refresh()
    nodes = view.last("graph")["nodes"]
    assert [(d["name"], d["stale"]) for d in nodes] == [("b", True)]


def test_a_view_added_after_new_ops_leaves_the_others_due_for_them(view):
    """A cell that builds ops and shows the graph (a new widget) must still send the ops to
    the views already showing it (the side panel) when the cell ends."""
    g = fb.Graph()
    with g.as_default():
        fb.constant(1.0, name="a")
    hub = view.attach(g)
    with g.as_default():
        fb.identity(g.get_tensor_by_name("a:0"), name="b")
    shown = FakeView()
    hub.add_view(shown)  # tf.show() in the cell that built "b"
    try:
        assert [d["name"] for d in shown.last("graph")["nodes"]] == ["a", "b"]
        hub.refresh()  # the cell's end
        assert [d["name"] for d in view.last("graph")["nodes"]] == ["a", "b"]
    finally:
        hub.remove_view(shown)


def test_watcher_leaves_other_graphs_alone(view):
    g, other = fb.Graph(), fb.Graph()
    with other.as_default():
        y = fb.constant(3.0) * 2.0
    view.attach(g)
    with fb.Session(graph=other) as s:
        assert float(s.run(y)) == 6.0
    _flush()
    assert view.last("run")["seq"] == 0


def test_stepper_followed_and_driven_by_actions(view):
    g = fb.Graph()
    with g.as_default():
        x = fb.placeholder(fb.float32, name="x")
        y = fb.add(x, 1.0, name="y")
        z = fb.multiply(y, 2.0, name="z")
    hub = view.attach(g)
    with fb.Session(graph=g) as s:
        st = fb.debug.Stepper(s, z, {x: 3.0})
        live.follow_stepper(st)
        assert hub.act("step") == ""
        _flush()
        state = view.last("stepper")
        assert state["active"] and state["current"] == "Const" and state["done"] == ["Const"]
        assert state["values"]["Const"] == "float32 () 1."
        assert hub.act("run_to", "y") == "" and view.last("stepper")["current"] == "y"
        assert "select a node" in hub.act("run_to", None)
        assert "KeyError" in hub.act("run_to", "no_such_op") or hub.act("run_to", "nope")
        assert hub.act("cont") == ""
        state = view.last("stepper")
        assert state["done"] == state["pruned"] and state["message"].startswith("finished")
        assert hub.act("reset") == "" and view.last("stepper")["done"] == []
        assert hub.act("fly") == "unknown action 'fly'"
        assert float(st.cont()) == 8.0


class FakeComm:
    def __init__(self) -> None:
        self.sent: list[dict] = []
        self.msg_cb = self.close_cb = None

    def send(self, data):
        json.dumps(data)
        self.sent.append(data)

    def on_msg(self, cb):
        self.msg_cb = cb

    def on_close(self, cb):
        self.close_cb = cb


def test_panel_follows_the_default_graph_and_closes_cleanly():
    with fb.Graph().as_default() as g1:
        fb.constant(1.0, name="first")
        comm = FakeComm()
        panel._on_open(comm, {})
        assert [n["name"] for n in comm.sent[-1]["graph"]["nodes"]] == ["first"]
        assert live.WATCHER in session_module._observers
    with fb.Graph().as_default():
        fb.constant(2.0, name="second")
        live._after_cell()
        assert [n["name"] for n in comm.sent[-1]["graph"]["nodes"]] == ["second"]
        assert not live.live_graph(g1).views
        comm.msg_cb({"content": {"data": {"action": "step"}}})
        assert "no stepper" in comm.sent[-1]["message"]
        comm.close_cb({})
    assert live.WATCHER not in session_module._observers and not panel._panels


def test_the_final_state_of_a_run_wins_over_a_delayed_send(view, monkeypatch):
    """The flusher thread builds a "running" state and is held up before sending it; the
    run ends and the cell's flush sends "done".  The view must end on "done", and the
    update numbers it got must only grow."""
    import threading

    from flowbook.runtime.plan import build_plan

    x = fb.placeholder(fb.float32, [], name="x")
    y = x + 1.0
    hub = view.attach(fb.get_default_graph())
    plan = build_plan(fb.get_default_graph(), [y], [], [x], bind=lambda op: None)
    built, release = threading.Event(), threading.Event()
    state = hub.state

    def slow_state(keys):  # the flusher thread's build of "running", then a delay
        out = state(keys)
        flusher = threading.current_thread() is live.FLUSHER.thread
        if flusher and "run" in out and out["run"]["phase"] == "running":
            built.set()
            release.wait(5)
        return out

    monkeypatch.setattr(hub, "state", slow_state)
    rec = hub.run_started(plan, hub.plan_stats(plan), live=True)  # the flusher picks it up
    assert built.wait(5)  # the flusher holds a "running" state, not yet sent
    hub.run_finished(rec, None)
    cell_end = threading.Thread(target=live.FLUSHER.flush_now)  # the cell's end sends "done"
    cell_end.start()
    time.sleep(0.1)
    release.set()
    cell_end.join(5)
    _flush()
    runs = [st["run"] for st in view.got if "run" in st]
    assert [r["phase"] for r in runs[-2:]] == ["running", "done"]
    updates = [part["update"] for st in view.got for part in st.values()]
    assert updates == sorted(updates)


def _values_in(obj, seen=None) -> list:
    """The numpy arrays reachable from ``obj`` through slots, dicts, lists and tuples."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return []
    seen.add(id(obj))
    if isinstance(obj, np.ndarray | np.generic):
        return [obj]
    if isinstance(obj, dict):
        items = list(obj.values())
    elif isinstance(obj, list | tuple):
        items = list(obj)
    elif isinstance(obj, history.RunEntry):
        items = [getattr(obj, k) for k in obj.__slots__]
    else:
        return []
    return [v for item in items for v in _values_in(item, seen)]


def test_history_is_bounded_in_runs_plans_and_previews_and_holds_no_values(view, monkeypatch):
    monkeypatch.setattr(history, "MAX_PREVIEWS", 3)
    monkeypatch.setattr(history, "PREVIEW_CHARS", 20)
    g = fb.Graph()
    with g.as_default():
        x = fb.placeholder(fb.float32, [None], name="x")
        chain = [x]
        for i in range(8):
            chain.append(fb.add(chain[-1], float(i), name=f"a{i}"))
    hub = view.attach(g)
    hub.history = history.History(size=5, pinned=2)
    with fb.Session(graph=g) as s:
        for fetch in chain[1:5]:  # four plans, one run each: the first timed, with values
            s.run(fetch, {x: np.arange(50, dtype=np.float32)})
        for _ in range(6):  # then a fifth plan, six times
            s.run(chain[8], {x: np.zeros(3, np.float32)})
    kept = hub.history.runs
    # the last 5 runs, plus the newest run of the 2 plans run most recently before them
    assert [e.seq for e in kept] == [3, 4, 6, 7, 8, 9, 10]
    assert len(hub.history.entries) == 5 and len(hub.history.pending) == 0
    assert kept[1].fetches == ["a3"] and kept[-1].fetches == ["a7"]
    for e in kept:
        assert 0 < len(e.previews) <= 3 and all(len(p) <= 20 for p in e.previews.values())
        assert _values_in(e) == []  # previews only, never the values themselves
    assert kept[1].previews["a3"].startswith("float32 (50,) min")  # the fetch's comes first
    assert kept[1].previews["a3"].endswith("...")
    assert kept[-1].previews is kept[2].previews  # shared, not copied
    assert kept[-1].values_seq == kept[-1].times_seq == 5  # run 5, the first, dropped unsummarised
    assert len(kept[1].times) == len(kept[1].names) and kept[1].times.itemsize == 4


def test_runs_not_yet_summarised_are_bounded_too():
    h = history.History(size=3)
    g = fb.Graph()
    with g.as_default():
        y = fb.constant(1.0, name="c") * 2.0
    hub = live.LiveGraph(g)
    hub.history = h  # a LiveGraph with no views: its runs are recorded by hand, not flushed
    with fb.Session(graph=g) as s:
        s.run(y)
        plan = next(iter(s._plans.values()))
    stats = hub.plan_stats(plan)
    for _ in range(10):
        hub.run_finished(hub.run_started(plan, stats, False), None)
    assert len(h.pending) == 3 and [e.seq for e in h.runs] == [8, 9, 10]


def test_each_cell_run_keeps_the_values_of_its_first_run_of_a_plan(view):
    g = fb.Graph()
    with g.as_default():
        x = fb.placeholder(fb.float32, name="x")
        y = fb.square(x, name="y")
    hub = view.attach(g)
    try:
        with fb.Session(graph=g) as s:
            for cell, feeds in ((source.Cell("c1", 1), (1.0, 2.0)), (source.Cell("c1", 2), (3.0,))):
                source.set_current_cell(cell)  # what the notebook extension does before a cell
                for v in feeds:
                    s.run(y, {x: v})
    finally:
        source.set_current_cell(None)
    runs = hub.history.runs
    assert [(e.seq, e.values_seq, e.previews["y"]) for e in runs] == [
        (1, 1, "float32 () 1."),
        (2, 1, "float32 () 1."),  # watched whole: run 1's values
        (3, 3, "float32 () 9."),  # the next cell's first run: its own
    ]


def test_runs_watched_whole_make_no_record_and_the_ring_keeps_each_plans_newest(view):
    g = fb.Graph()
    with g.as_default():
        x = fb.placeholder(fb.float32, name="x")
        a, b = fb.add(x, 1.0, name="a"), fb.multiply(x, 2.0, name="b")
    hub = view.attach(g)
    hub.history = history.History(size=4, pinned=2)
    with fb.Session(graph=g) as s:
        for fetch in (a, b, a, b, a, *[b] * 6):  # runs 1, 2 recorded (first); 3..11 whole
            s.run(fetch, {x: 1.0})
    assert hub.record is not None and hub.record.seq == 2  # no record for a run watched whole
    kept = hub.history.runs
    # the last 4 runs, and plan a's newest (5), which the ring had moved past: pinned
    assert [(e.seq, e.fetches, e.phase) for e in kept] == [
        (5, ["a"], "done"),
        *[(n, ["b"], "done") for n in (8, 9, 10, 11)],
    ]
    assert kept[0].values_seq == 1 and kept[-1].values_seq == 2  # their plans' first runs
    assert all(e.total_us > 0 for e in kept)
    _flush()
    run = view.last("run")
    assert (run["seq"], run["phase"], run["done"]) == (11, "done", run["pruned"])
    assert run["values"]["b"] == "float32 () 2."


@pytest.fixture
def no_flusher(monkeypatch):
    """The flusher thread sends nothing: the test calls ``flush`` itself."""
    monkeypatch.setattr(live.Flusher, "wake", lambda self, hub: None)


def test_runs_watched_whole_are_sent_as_ticks_and_the_cell_end_sends_the_run_whole(
    view, no_flusher
):
    g = fb.Graph()
    with g.as_default():
        x = fb.placeholder(fb.float32, name="x")
        y = fb.square(x, name="y")
    hub = view.attach(g)
    with fb.Session(graph=g) as s:
        s.run(y, {x: 1.0})  # first: recorded
        s.run(y, {x: 2.0})  # watched whole
        hub.flush(force=True)  # the end of a cell: the run state, whole
        assert view.last("run")["seq"] == 2
        before = len(view.got)
        for _ in range(3):
            s.run(y, {x: 3.0})
        hub.flush()  # the flusher's send while runs stream: a tick on run 2's state
        sent = view.got[before:]
        assert [sorted(st) for st in sent] == [["tick"]]  # the index: at most twice a second
        tick = sent[-1]["tick"]
        assert (tick["seq"], tick["base"]) == (5, 2) and tick["total_us"] > 0
        assert tick["update"] > view.last("run")["update"]
        live.refresh_all()  # the cell ends: the run state catches up with the ticks
        assert view.last("run")["seq"] == 5 and view.last("run")["done"] == ["y"]
        n = len(view.got)
        live.refresh_all()
        assert len(view.got) == n  # nothing new: nothing sent
        source.set_current_cell(source.Cell("c2", 1))  # a new cell: its first run is recorded
        try:
            s.run(y, {x: 4.0})
            hub.flush()
            assert "tick" not in view.got[-1] and view.last("run")["seq"] == 6
        finally:
            source.set_current_cell(None)


def test_a_new_view_gets_the_run_whole_and_so_do_the_others_next(view, no_flusher):
    g = fb.Graph()
    with g.as_default():
        y = fb.constant(2.0, name="c") * 3.0
    hub = view.attach(g)
    with fb.Session(graph=g) as s:
        s.run(y)
        s.run(y)
        hub.flush(force=True)
        s.run(y)
        hub.flush()
        assert view.got[-1]["tick"]["base"] == 2
        other = FakeView()
        hub.add_view(other)  # it gets run 3 whole; the first view has run 2 and a tick
        assert other.last("run")["seq"] == 3
        s.run(y)
        hub.flush()
        assert view.last("run")["seq"] == other.last("run")["seq"] == 4
        assert "tick" not in view.got[-1]
        s.run(y)
        hub.flush()
        assert view.got[-1]["tick"]["base"] == other.got[-1]["tick"]["base"] == 4
        hub.remove_view(other)


def test_the_fast_path_skips_mode_until_a_timing_is_due_or_the_cell_changes(view, monkeypatch):
    g = fb.Graph()
    with g.as_default():
        y = fb.constant(2.0, name="c") + 1.0
    hub = view.attach(g)
    with fb.Session(graph=g) as s:
        s.run(y)
        s.run(y)  # mode() said "whole" and until when
        stats = next(iter(hub.stats.values()))
        assert stats.whole_until > 0
        calls = []
        mode = watch.PlanStats.mode
        monkeypatch.setattr(watch.PlanStats, "mode", lambda *a: calls.append(1) or mode(*a))
        for _ in range(5):
            s.run(y)
        assert calls == [] and hub.seq == 7
        stats.whole_until = 0  # a timing due
        s.run(y)
        assert calls == [1]
        hub.remove_view(view)  # no views: the fast path must ask again
        assert stats.whole_until == 0
        hub.add_view(view)


def _counts(message: str) -> list[tuple[int, int]]:
    return [(int(a), int(b)) for a, b in re.findall(r"(\d+) of (\d+)", message)]


def test_stepper_message_counts_ops_run_of_the_plan_and_op_runs_in_loops(view):
    g = fb.Graph()
    with g.as_default():
        x = fb.placeholder(fb.float32, name="x")
        z = fb.multiply(fb.add(x, 1.0, name="y"), 2.0, name="z")
        n = fb.while_loop(lambda i: i < 5, lambda i: i + 1, [fb.constant(0)], name="loop")
    hub = view.attach(g)
    with fb.Session(graph=g) as s:
        live.follow_stepper(fb.debug.Stepper(s, z, {x: 3.0}))
        hub.act("step")
        assert re.fullmatch(r"1 of \d+ ops run · \d+ ready", hub.stepper_state()["message"])
        hub.act("cont")
        message = hub.stepper_state()["message"]
        assert message.startswith("finished: ") and all(a <= b for a, b in _counts(message))
        live.follow_stepper(fb.debug.Stepper(s, n))
        for _ in range(12):
            hub.act("step")
        message = hub.stepper_state()["message"]
        assert re.fullmatch(r"iteration \d+ · 1\d op runs · \d+ ready", message), message
        hub.act("cont")
        message = hub.stepper_state()["message"]
        assert re.fullmatch(r"finished: \d+ op runs · \d+ ops in the plan", message), message
        assert not _counts(message)
