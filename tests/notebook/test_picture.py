"""The static SVG picture of a graph: well-formed, bounded, honest about the run it shows."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import flowbook as tf
from flowbook.notebook import live
from flowbook.notebook.picture import caption, picture_html, picture_svg
from flowbook.notebook.snapshot import graph_state

SVG = "{http://www.w3.org/2000/svg}"


def _parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)  # raises on anything that is not well-formed XML
    assert root.tag == SVG + "svg"
    return root


def _boxes(root: ET.Element) -> dict[str, dict]:
    """First label line -> the box: its rect's bounds, its text lines, classes and tooltip."""
    out = {}
    for g in root.iter(SVG + "g"):
        classes = (g.get("class") or "").split()
        if "box" not in classes:
            continue
        rect = g.find(SVG + "rect")
        x, y = float(rect.get("x")), float(rect.get("y"))
        w, h = float(rect.get("width")), float(rect.get("height"))
        lines = [t.text or "" for t in g.findall(SVG + "text")]
        assert lines[0] not in out, f"two boxes labelled {lines[0]!r}"
        out[lines[0]] = {
            "bounds": (x, y, x + w, y + h),
            "lines": lines,
            "classes": classes,
            "title": g.find(SVG + "title").text,
            "fill": rect.get("fill"),
            "stroke": rect.get("stroke"),
        }
    return out


def _edge_points(root: ET.Element) -> list[list[tuple[float, float]]]:
    edges = []
    for path in root.iter(SVG + "path"):
        if "edge" in (path.get("class") or "").split():
            nums = [float(v) for v in re.findall(r"-?\d+(?:\.\d+)?", path.get("d"))]
            edges.append(list(zip(nums[::2], nums[1::2])))
    return edges


def _view_box(root: ET.Element) -> tuple[float, float, float, float]:
    x, y, w, h = (float(v) for v in root.get("viewBox").split())
    assert (root.get("width"), root.get("height")) == (f"{w:.0f}", f"{h:.0f}")
    return x, y, x + w, y + h


def _softmax_graph():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 4], name="x")
        y_ = tf.placeholder(tf.float32, [None, 3], name="y_")
        w = tf.Variable(tf.zeros([4, 3]), name="W")
        b = tf.Variable(tf.zeros([3]), name="b")
        y = tf.nn.softmax(tf.matmul(x, w) + b)
        loss = tf.reduce_mean(-tf.reduce_sum(y_ * tf.log(y), axis=1), name="loss")
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        init = tf.global_variables_initializer()
        bad = tf.placeholder(tf.float32, name="bad")
        with tf.name_scope("check"):  # fails when fed a wrong shape: a scope with an error
            probe = tf.reduce_sum(tf.matmul(bad, w))
    return g, x, y_, train, init, bad, probe


def _chain_graph(n):
    g = tf.Graph()
    with g.as_default():
        y = tf.placeholder(tf.float32, name="x")
        for _ in range(n - 1):
            y = tf.negative(y)
    return g


def _wide_graph(n):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, name="x")
        for i in range(n - 1):
            tf.identity(x, name=f"out{i}")
    return g


def _loop_graph():
    g = tf.Graph()
    with g.as_default():
        tf.while_loop(lambda i: i < 10, lambda i: i + 1, [tf.constant(0)])
    return g


def _control_graph():
    g = tf.Graph()
    with g.as_default():
        a = tf.constant(1.0, name="a")
        with tf.control_dependencies([a.op]):
            tf.constant(2.0, name="b")
    return g


def _hostile_graph():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, name="a>b")
        tf.identity(x, name="c>d")
    state = graph_state(g)
    state["nodes"][0]["name"] = '<script>alert("x")</script>'  # names are user data
    state["nodes"][0]["op"] = 'a&b"'
    state["nodes"][1]["inputs"] = ['<script>alert("x")</script>:0']
    state["nodes"][1]["name"] = "x]]><y/>&amp;\x01"
    return state


GRAPHS = {
    "softmax": lambda: graph_state(_softmax_graph()[0]),
    "chain": lambda: graph_state(_chain_graph(30)),
    "wide": lambda: graph_state(_wide_graph(40)),
    "loop": lambda: graph_state(_loop_graph()),
    "control": lambda: graph_state(_control_graph()),
    "hostile": _hostile_graph,
    "truncated": lambda: graph_state(_wide_graph(300)),
}


@pytest.mark.parametrize("name", GRAPHS)
def test_boxes_do_not_overlap_and_everything_lies_in_the_view_box(name):
    root = _parse(picture_svg(GRAPHS[name](), title=f"the {name} graph"))
    left, top, right, bottom = _view_box(root)
    boxes = list(_boxes(root).values())
    assert boxes
    for box in boxes:
        x0, y0, x1, y1 = box["bounds"]
        assert left <= x0 < x1 <= right and top <= y0 < y1 <= bottom, box
    ordered = sorted(b["bounds"] for b in boxes)
    for i, (x0, y0, x1, y1) in enumerate(ordered):
        for u0, v0, u1, v1 in ordered[i + 1 :]:
            if u0 >= x1:
                break  # sorted by left edge: no later box can reach back to this one
            assert v0 >= y1 or v1 <= y0, f"boxes overlap: {(x0, y0, x1, y1)} {(u0, v0, u1, v1)}"
    edges = _edge_points(root)
    for points in edges:
        assert len(points) >= 2
        for px, py in points:
            assert left <= px <= right and top <= py <= bottom, (px, py)


@pytest.mark.parametrize(
    "name, shown, hidden",
    [
        ("softmax", ["x", "y_", "W", "b", "MatMul", "Softmax", "loss", "gradients"], []),
        ("softmax", ["GradientDescent", "init"], ["Mean_grad", "read", "Assign", "W/read"]),
        ("chain", ["x", "Neg", "Neg_1", "Neg_28"], []),
        ("control", ["a", "b"], []),
        ("loop", ["while"], ["Merge", "NextIteration"]),
        ("truncated", ["x", "out0", "out118", "+180 more"], ["out119"]),
    ],
)
def test_every_op_or_scope_label_is_drawn_and_scope_members_are_not(name, shown, hidden):
    labels = _boxes(_parse(picture_svg(GRAPHS[name]())))
    for label in shown:
        assert label in labels
    for label in hidden:
        assert label not in labels


def test_every_visible_box_has_a_label_per_op_outside_collapsed_scopes():
    state = graph_state(_chain_graph(12))
    labels = _boxes(_parse(picture_svg(state)))
    assert sorted(labels) == sorted(n["name"] for n in state["nodes"])
    assert labels["Neg_3"]["lines"] == ["Neg_3", "Neg"]
    assert labels["Neg_3"]["title"] == "Neg_3 (Neg)"


def test_collapsed_scopes_count_their_ops_and_keep_the_kind_of_the_op_they_are_named_after():
    state = graph_state(_softmax_graph()[0])
    labels = _boxes(_parse(picture_svg(state)))
    grads = sum(n["name"].startswith("gradients/") for n in state["nodes"])
    assert labels["gradients"]["lines"][1] == f"{grads} ops"
    assert "scope" in labels["gradients"]["classes"]
    w_ops = sum(n["name"].split("/")[0] == "W" for n in state["nodes"])
    assert labels["W"]["lines"][1] == f"{w_ops} ops" and w_ops >= 3
    assert "variable" in labels["W"]["classes"]
    assert "placeholder" in labels["x"]["classes"]
    assert labels["MatMul"]["lines"][:2] == ["MatMul", "MatMul"]


def test_edges_between_boxes_are_deduplicated_and_control_edges_dashed():
    root = _parse(picture_svg(graph_state(_control_graph())))
    paths = [p for p in root.iter(SVG + "path") if "edge" in (p.get("class") or "")]
    assert len(paths) == 1
    assert "control" in paths[0].get("class") and paths[0].get("stroke-dasharray")
    root = _parse(picture_svg(graph_state(_softmax_graph()[0])))
    ds = [p.get("d") for p in root.iter(SVG + "path") if "edge" in (p.get("class") or "")]
    assert len(ds) == len(set(ds))


def test_hostile_names_come_out_escaped_in_a_well_formed_svg():
    state = _hostile_graph()
    for svg in (picture_svg(state, title="<b>&"), picture_html(state, title="<b>&")):
        assert "<script" not in svg.lower() and "<b>" not in svg and "<y/>" not in svg
        assert "&lt;script&gt;" in svg and "a&amp;b&quot;" in svg
        assert "foreignobject" not in svg.lower() and "href" not in svg
    root = _parse(picture_svg(state, title="<b>&"))
    titles = [b["title"] for b in _boxes(root).values()]
    assert '<script>alert("x")</script> (a&b")' in titles
    ET.fromstring(picture_html(state))  # the HTML wrapper is well-formed too


def test_empty_graph_says_so():
    root = _parse(picture_svg(graph_state(tf.Graph())))
    assert [t.text for t in root.iter(SVG + "text")] == ["No ops yet"]
    assert "0 ops · not run yet" in picture_html({"nodes": []})


def test_five_thousand_ops_stay_bounded():
    for g in (_chain_graph(5000), _wide_graph(5000)):
        state = graph_state(g)
        assert len(state["nodes"]) == 5000
        svg = picture_svg(state)
        assert len(svg.encode()) < 200_000
        labels = _boxes(_parse(svg))
        assert len(labels) == 121 and "+4880 more" in labels


def test_same_input_same_picture():
    state = graph_state(_softmax_graph()[0])
    assert picture_svg(state) == picture_svg(graph_state(_softmax_graph()[0]))
    assert picture_html(state, title="t") == picture_html(state, title="t")


@pytest.fixture
def softmax_runs(view):
    """The softmax graph's run states: after a training step, then after a failed run."""
    g, x, y_, train, init, bad, probe = _softmax_graph()
    view.attach(g)
    with tf.Session(graph=g) as s:
        s.run(init)
        ys = np.eye(3, dtype=np.float32)[[0, 1]]
        s.run(train, {x: np.ones((2, 4), np.float32), y_: ys})
        live.FLUSHER.flush_now()
        done = view.last("run")
        with pytest.raises(tf.errors.InvalidArgumentError):
            s.run(probe, {bad: np.ones((2, 5), np.float32)})
        live.FLUSHER.flush_now()
        failed = view.last("run")
    return graph_state(g), done, failed


def test_a_done_run_outlines_what_ran_and_times_it(softmax_runs):
    state, done, _ = softmax_runs
    assert done["phase"] == "done"
    labels = _boxes(_parse(picture_svg(state, done)))
    for label in ("MatMul", "Softmax", "gradients", "GradientDescent", "W"):
        assert "done" in labels[label]["classes"], label
        assert labels[label]["stroke"] == "#2f8f4e"
        assert re.fullmatch(r"[\d.]+ (µs|ms|s)", labels[label]["lines"][2]), labels[label]
    assert "done" not in labels["init"]["classes"]  # not part of this run
    assert labels["init"]["stroke"] != "#2f8f4e" and len(labels["init"]["lines"]) == 2
    assert labels["x"]["lines"][2] == "fed"
    assert re.search(r"run \d+: done in [\d.]+ (µs|ms|s)</div>", picture_html(state, done))


def test_a_failed_run_marks_the_failing_op_and_its_scope(softmax_runs):
    state, _, failed = softmax_runs
    node = failed["error"]["node"]
    assert failed["phase"] == "error" and node
    top = node.split("/")[0]
    labels = _boxes(_parse(picture_svg(state, failed)))
    box = labels[top]
    assert "error" in box["classes"] and box["fill"] == "#fbdcdc" and box["stroke"] == "#c62828"
    assert failed["error"]["message"].splitlines()[0] in box["title"]
    assert len(box["lines"]) == 2  # no time for a failed box
    assert sum("error" in b["classes"] for b in labels.values()) == 1
    html = picture_html(state, failed, title="default graph")
    assert f"run {failed['seq']} failed at {node}" in html


@pytest.mark.parametrize(
    "run, expected",
    [
        (None, "g · 2 ops · not run yet"),
        ({"seq": 0, "phase": "idle"}, "g · 2 ops · not run yet"),
        ({"seq": 4, "phase": "done", "total_us": 563.2}, "g · 2 ops · run 4: done in 563 µs"),
        ({"seq": 4, "phase": "done", "total_us": 1234.0}, "g · 2 ops · run 4: done in 1.2 ms"),
        ({"seq": 5, "phase": "error", "error": {"node": "a/b"}}, "g · 2 ops · run 5 failed at a/b"),
        ({"seq": 6, "phase": "running"}, "g · 2 ops · run 6: running"),
    ],
)
def test_caption(run, expected):
    assert caption({"nodes": [{}, {}]}, run, title="g") == expected


def _hand_run(**kw):
    run = {"seq": 2, "phase": "done", "pruned": [], "fed": [], "done": [], "running": []}
    run |= {"error": None, "times_us": {}, "total_us": 10.0, "values": {}}
    return run | kw


@pytest.mark.parametrize(
    "run, state",
    [
        (_hand_run(pruned=["s/a", "s/b"], done=["s/a", "s/b"]), "done"),
        (_hand_run(pruned=["s/a", "s/b"], done=["s/a"]), ""),
        (_hand_run(pruned=["s/a"], done=["s/a"]), "done"),  # s/b was not part of the run
        (_hand_run(pruned=[], done=[]), ""),  # nothing of the scope ran
        (
            _hand_run(
                phase="error",
                pruned=["s/a", "s/b"],
                done=["s/a"],
                error={"node": "s/b", "message": "boom\ndetails", "nan": False},
            ),
            "error",
        ),
        (_hand_run(phase="running", pruned=["s/a", "s/b"], running=["s/b"]), "running"),
    ],
)
def test_a_collapsed_scope_takes_the_state_of_its_members(run, state):
    graph = {
        "nodes": [
            {"name": "s/a", "op": "Const", "kind": "constant", "inputs": [], "control": []},
            {"name": "s/b", "op": "Neg", "kind": "op", "inputs": ["s/a:0"], "control": []},
            {"name": "c", "op": "Neg", "kind": "op", "inputs": ["s/b:0"], "control": []},
        ]
    }
    box = _boxes(_parse(picture_svg(graph, run)))["s"]
    states = {"done", "error", "running"} & set(box["classes"])
    assert states == ({state} if state else set())
    if state == "error":
        assert box["title"].endswith("failed at s/b: boom")
