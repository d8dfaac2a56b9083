"""GraphWidget's Python side, without a browser: its traits follow the graph and its runs.

The front end is replaced by a stand-in ES module so these tests need no
build; the real one is exercised by the browser tests (tests/e2e).
"""

from __future__ import annotations

import numpy as np
import pytest

import flowbook as fb
from flowbook.notebook import live
from flowbook.notebook import widget as widget_module
from flowbook.runtime import session as session_module


@pytest.fixture(autouse=True)
def stand_in_front_end(tmp_path, monkeypatch):
    (tmp_path / "graph-widget.js").write_text("export default { render() {} };\n")
    (tmp_path / "graph-widget-loader.js").write_text("export default { render() {} };\n")
    (tmp_path / "graph-widget.css").write_text("\n")
    monkeypatch.setattr(widget_module, "STATIC", tmp_path)
    yield
    assert live.WATCHER not in session_module._observers or any(
        h.views for h in live._graphs.values()
    )


def names(w):
    return [n["name"] for n in w.graph["nodes"]]


def test_missing_front_end_says_how_to_build_it(monkeypatch, tmp_path):
    monkeypatch.setattr(widget_module, "STATIC", tmp_path / "nowhere")
    with pytest.raises(RuntimeError, match="pip install -e"):
        widget_module.GraphWidget(fb.Graph())


def test_a_widget_sends_the_loader_unless_told_to_embed_the_whole_view(monkeypatch):
    monkeypatch.setattr(
        widget_module, "STATIC", widget_module.Path(widget_module.__file__).parents[1] / "static"
    )
    if not (widget_module.STATIC / "graph-widget-loader.js").exists():
        pytest.skip("the front end is not built")
    monkeypatch.delenv(widget_module.EMBED_ENV, raising=False)
    small = widget_module.GraphWidget(fb.Graph())
    monkeypatch.setenv(widget_module.EMBED_ENV, "1")
    whole = widget_module.GraphWidget(fb.Graph())
    try:
        assert len(small._esm) < 4096 and "flowbook.graph-widget" in small._esm
        assert len(whole._esm) > 100_000 and whole._css
        assert not getattr(small, "_css", "")  # the extension's styles serve it
    finally:
        small.close()
        whole.close()


def test_widget_shows_the_graph_and_its_runs():
    g = fb.Graph()
    with g.as_default():
        x = fb.placeholder(fb.float32, [2], name="x")
        y = fb.multiply(x, 3.0, name="y")
    w = widget_module.GraphWidget(g)
    try:
        assert names(w) == ["x", "Const", "y"] and w.run["phase"] == "idle"
        assert not w.stepper["active"]
        with g.as_default():
            z = fb.add(y, 1.0, name="z")
        w.refresh()
        assert names(w)[-1] == "z"
        with fb.Session(graph=g) as s:
            s.run(z, {x: np.ones(2, np.float32)})
        live.FLUSHER.flush_now()
        assert w.run["phase"] == "done" and w.run["done"] == w.run["pruned"]
        assert set(w.run["times_us"]) == set(w.run["pruned"]) == {"Const", "y", "Const_1", "z"}
        w.selected = "y"
        assert w.run["values"]["y"] == "float32 (2,) [3. 3.]"
        assert w.selected_op.name == "y"
    finally:
        w.close()
    assert w not in live.live_graph(g).views


def test_show_follows_the_default_graph_and_drives_a_stepper():
    with fb.Graph().as_default():
        fb.constant(1.0, name="before")
        w = fb.show()
        try:
            assert names(w) == ["before"]
            with fb.Graph().as_default() as g2:
                a = fb.constant(2.0, name="a")
                b = fb.square(a, name="b")
                live._after_cell()  # what the post_run_cell hook does
                assert names(w) == ["a", "b"]
                with fb.Session() as s:
                    st = fb.debug.Stepper(s, b)
                    w2 = fb.show(st)
                    try:
                        assert w2.shown is g2 and w2.stepper["ready"] == ["a"]
                        w2._on_action(w2, {"action": "step"}, [])
                        assert w2.stepper["current"] == "a"
                        w2._on_action(w2, {"action": "run_to", "node": "nope"}, [])
                        assert "nope" in w2.stepper["message"]
                        w2._on_action(w2, {"action": "cont"}, [])
                        assert w2.stepper["done"] == ["a", "b"]
                        assert w2.stepper["values"]["b"] == "float32 () 4."
                    finally:
                        w2.close()
        finally:
            w.close()


def test_show_times_overlays_a_profile():
    g = fb.Graph()
    with g.as_default():
        y = fb.constant(2.0, name="c") * 2.0
    w = widget_module.GraphWidget(g)
    try:
        with fb.profile() as prof, fb.Session(graph=g) as s:
            s.run(y)
        w.show_times(prof)
        assert set(w.run["times_us"]) == {"c", "mul/y", "mul"}
        w.show_times({"c": 5.0})
        assert w.run["times_us"] == {"c": 5.0}
    finally:
        w.close()


def test_show_present_starts_in_present_mode_and_the_trait_syncs_both_ways():
    with fb.Graph().as_default():
        fb.constant(1.0, name="c")
        w = fb.show(present=True)
        plain = fb.show()
        try:
            assert w.present is True and plain.present is False
            assert "present" in w.keys and w.get_state()["present"] is True  # sent to the browser
            assert plain.get_state()["present"] is False
            w.present = False  # from Python: the view leaves present mode
            assert w.get_state()["present"] is False
            w.set_state({"present": True})  # from the browser: its toolbar's Present button
            assert w.present is True
        finally:
            w.close()
            plain.close()


def _two_fetch_graph():
    g = fb.Graph()
    with g.as_default():
        x = fb.placeholder(fb.float32, [None], name="x")
        y = fb.multiply(x, 2.0, name="y")
        z = fb.reduce_sum(fb.square(y, name="sq"), name="z")
    return g, x, y, z


def test_runs_lists_every_run_with_its_fetches_order_times_and_previews():
    g, x, y, z = _two_fetch_graph()
    w = widget_module.GraphWidget(g)
    try:
        with fb.Session(graph=g) as s:
            s.run(y, {x: [1.0, 2.0]})
            for i in range(3):
                s.run(z, {x: [float(i)]})
        runs = w.runs
        assert [r["seq"] for r in runs] == [1, 2, 3, 4]
        assert [r["fetches"] for r in runs] == [["y"], ["z"], ["z"], ["z"]]
        first, second, last = runs[0], runs[1], runs[-1]
        assert first["ops"] == ["Const", "y"] and first["phase"] == "done"
        assert first["order"] == ["Const", "y"] and set(first["times"]) == {"Const", "y"}
        assert first["previews"]["y"] == "float32 (2,) [2. 4.]"
        order = second["order"]
        assert set(order) == set(second["ops"]) and order.index("sq") < order.index("z")
        assert second["times_seq"] == 2 and second["values_seq"] == 2 and second["times"]["z"] > 0
        assert second["previews"]["z"] == "float32 () 0."
        # later runs of the plan were watched whole: times and values are run 2's, and say so
        assert last["times_seq"] == 2 and last["values_seq"] == 2 and last["order"] == order
        live.FLUSHER.flush_now()
        assert [r["seq"] for r in w.history["runs"]] == [1, 2, 3, 4]
        row = w.history["runs"][1]
        assert row == {
            "seq": 2,
            "phase": "done",
            "total_us": row["total_us"],
            "ops": 5,
            "fetches": ["z"],
        }
    finally:
        w.close()


def test_replay_sends_a_kept_run_by_record_or_index_and_a_view_can_ask_for_one(monkeypatch):
    g, x, y, z = _two_fetch_graph()
    w = widget_module.GraphWidget(g)
    sent: list[dict] = []
    monkeypatch.setattr(w, "send", sent.append)
    try:
        with pytest.raises(ValueError, match="no run kept yet"):
            w.replay()
        with fb.Session(graph=g) as s:
            s.run(z, {x: [1.0, 2.0]})
            s.run(y, {x: [3.0]})
        w.replay()  # the newest
        w.replay(w.runs[0], seconds=5)
        assert [m["replay"]["seq"] for m in sent] == [2, 1]
        assert sent[0]["seconds"] == 2.0 and sent[1]["seconds"] == 5.0
        replayed = sent[1]["replay"]
        assert replayed["order"] == replayed["done"] and replayed["order"][-1] == "z"
        assert replayed["pruned"] == w.runs[0]["ops"]
        assert replayed["values"]["z"] == "float32 () 20."
        with pytest.raises(ValueError, match="index below 2"):
            w.replay(2)
        with pytest.raises(ValueError, match="run 9 is no longer kept"):
            w.replay({"seq": 9})
        w._on_action(w, {"action": "history_run", "seq": 1}, [])
        w._on_action(w, {"action": "history_run", "seq": 7}, [])
        assert sent[-2]["history_run"]["fetches"] == ["z"]
        assert sent[-1] == {"history_run": {"seq": 7}}
    finally:
        w.close()
