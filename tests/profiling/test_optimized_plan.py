"""Showing what the optimiser changed: ``Optimized.origin``/``changes``, ``tf.optimized_plan``,
the widget's ``optimized`` state, and ``tf.profile``'s tables per written and executed op."""

from __future__ import annotations

import json

import numpy as np
import pytest

import flowbook as tf
from flowbook.notebook import live, rewrites
from flowbook.runtime.optimize.optimizer import origin_of


def _mlp():
    """A small MLP training step (the shape of tutorial 04's), with its feed."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 4], name="x")
        y = tf.placeholder(tf.float32, [None, 3], name="y")
        w = tf.Variable(tf.ones([4, 3]) * 0.1, name="W")
        b = tf.Variable(tf.zeros([3]), name="b")
        h = tf.nn.relu(tf.matmul(x, w) + b)
        xent = tf.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=h)
        loss = tf.reduce_mean(xent, name="loss")
        step = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        init = tf.global_variables_initializer()
    rng = np.random.default_rng(0)
    feed = {x: rng.random((5, 4), np.float32), y: np.eye(3, dtype=np.float32)[[0, 1, 2, 0, 1]]}
    return g, init, step, loss, feed


def _dupes():
    """Two Shape ops of one tensor, an Identity and a constant product."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        a = tf.cast(tf.shape(x, name="s1"), tf.float32) * tf.reduce_sum(x, name="r1")
        b = tf.cast(tf.shape(x, name="s2"), tf.float32) * tf.reduce_sum(x, name="r2")
        out = tf.identity(a + b, name="out") * (tf.constant(2.0) * 3.0)
    return g, x, out


def test_origin_covers_every_written_op_once():
    g, init, step, loss, feed = _mlp()
    with g.as_default(), tf.Session() as sess:
        sess.run(init)
        rw = tf.optimized_plan([step, loss], feed)
    opt = rw.optimized
    assert opt is not None and len(rw.executed) < len(rw.written)
    assert set(opt.origin) == set(rw.executed)
    stood_for = [n for names in opt.origin.values() for n in names]
    changed = {c.op: c.kind for c in opt.changes}
    assert len(stood_for) == len(set(stood_for))  # no written op stands in two executed ones
    for name in rw.written:  # each written op runs (as itself or merged) or has a change
        assert (name in stood_for) != (changed.get(name) in ("folded", "removed", "dropped"))
    assert changed["W/read"] == "removed"
    assert next(c for c in opt.changes if c.op == "W/read").into == "W:0"
    assert changed["gradients/add_grad/BroadcastGradientArgs"] == "folded"
    assert origin_of(opt.plan) == opt.origin and origin_of(opt.written) is None
    assert len(opt.notes) == len(opt.changes) - sum(c.kind == "dropped" for c in opt.changes)


def test_merged_duplicates_map_the_kept_op_to_both():
    g, x, out = _dupes()
    with g.as_default(), tf.Session():
        rw = tf.optimized_plan(out, {x: np.ones((2, 3), np.float32)})
    kinds = {c.op: (c.kind, c.into) for c in rw.changes}
    assert kinds["r2"] == ("merged", "r1")
    assert rw.origin["r1"] == ("r1", "r2")
    assert kinds["s1"][0] == kinds["s2"][0] == "folded"  # the fed shape decides them
    assert kinds["out"] == ("removed", "add:0")
    assert "merged with r1, the same Sum of the same inputs" in " ".join(rw.notes)
    counts = rw.counts()
    assert kinds["mul_1"] == ("merged", "mul")  # its inputs became mul's: merged too
    assert counts["merged"] == 2 and counts["removed"] == 1
    assert rw.summary().startswith(f"{len(rw.written)} ops as written, {len(rw.executed)} run: ")


def test_diff_is_json_and_names_the_plan():
    g, x, out = _dupes()
    with g.as_default(), tf.Session():
        rw = tf.optimized_plan(out, {x: np.ones((2, 3), np.float32)})
    d = json.loads(json.dumps(rw.diff()))
    assert d["written"] == rw.written and d["executed"] == rw.executed
    assert {c["op"] for c in d["changes"]} == {c.op for c in rw.changes}
    assert d["fused"] == [] and d["notes"] == rw.notes and d["graph_version"] == g._version
    assert "out" not in d["executed"] and d["fetches"] == ["mul_3"]


def test_turned_off_leaves_the_plan_as_written():
    g, x, out = _dupes()
    opts = tf.OptimizerOptions(opt_level=tf.OptimizerOptions.L0)
    config = tf.ConfigProto(graph_options=tf.GraphOptions(optimizer_options=opts))
    with g.as_default(), tf.Session(config=config):
        rw = tf.optimized_plan(out, {x: np.ones((2, 3), np.float32)})
    assert rw.optimized is None and rw.executed == rw.written and rw.changes == []
    assert rw.summary().endswith("the optimiser left this plan as written")
    with pytest.raises(ValueError, match="needs a session"):
        tf.optimized_plan(out)


def test_by_type_counts_ops_written_and_run():
    g, init, step, loss, feed = _mlp()
    with g.as_default(), tf.Session() as sess:
        sess.run(init)
        rows = {r["type"]: r for r in tf.optimized_plan([step, loss], feed).by_type().rows}
    assert rows["Shape"]["run"] == 0 and rows["Shape"]["written"] >= 2
    assert (
        rows["MatMul"]["written"] == 2
    )  # forward and dW; the forward one runs fused with its bias
    assert rows["MatMul"]["run"] + rows["_FusedMatMul"]["run"] == 2


@pytest.mark.parametrize("optimized", [False, True])
def test_profile_counts_written_and_executed_ops(optimized):
    g, init, step, loss, feed = _mlp()
    with g.as_default(), tf.Session() as sess:
        sess.run(init)
        written = tf.optimized_plan([step, loss], feed)
        with tf.profile(optimized=optimized) as prof:
            for _ in range(3):
                sess.run([step, loss], feed)
    by_op, by_written = prof.table(by="op"), prof.table(by="written")
    ran = {r["op"] for r in by_op.rows}
    total = sum(r["total_ms"] for r in by_op.rows)
    assert sum(r["total_ms"] for r in by_written.rows) == pytest.approx(total)
    counts = {r["op"]: r["count"] for r in by_op.rows}
    if optimized:  # the first run of the signature runs as written, the next two optimised
        assert "2 of 3 run(s) took the optimised plan" in by_op.caption
        assert (
            counts["gradients/add_grad/Shape"] == 1
            and counts["gradients/MatMul_grad/MatMul_1"] == 3
        )
        assert set(written.executed) <= ran
    else:
        assert "optimised" not in by_op.caption
        assert ran == set(written.written) and set(counts.values()) == {3}


def test_profile_shares_a_merged_ops_time_and_says_so():
    g, x, out = _dupes()
    feed = {x: np.ones((2, 3), np.float32)}
    with g.as_default(), tf.Session() as sess:
        sess.run(out, feed)  # the signature's first run: as written
        with tf.profile(optimized=True) as prof:
            sess.run(out, feed)
    ops = {r["op"]: r for r in prof.table(by="op").rows}
    assert ops["r1"]["stands_for"] == "r1, r2" and "r2" not in ops
    written = {r["op"]: r for r in prof.table(by="written").rows}
    assert written["r1"]["total_ms"] == pytest.approx(written["r2"]["total_ms"])
    assert written["r2"]["via"] == "share of _FusedSum 'r1' (2 ops)"  # the Sum, its axes an attr
    assert written["r2"]["type"] == "Sum"
    assert written["r1"]["total_ms"] * 2 == pytest.approx(ops["r1"]["total_ms"])
    with pytest.raises(ValueError, match="by must be one of"):
        prof.table(by="device")


class _View:
    def __init__(self) -> None:
        self.states: list[dict] = []

    def push(self, state: dict) -> None:
        self.states.append(json.loads(json.dumps(state)))


def test_send_rewrite_reaches_every_view_and_later_ones():
    g, x, out = _dupes()
    with g.as_default(), tf.Session():
        rw = tf.optimized_plan(out, {x: np.ones((2, 3), np.float32)})
    hub = live.live_graph(g)
    first, later = _View(), _View()
    hub.add_view(first)
    try:
        rewrites.send_rewrite(g, rw)
        sent = [s["optimized"] for s in first.states if "optimized" in s]
        assert len(sent) == 1 and sent[0]["show"] is True
        assert sent[0]["executed"] == rw.executed and sent[0]["update"] > 0
        hub.add_view(later)
        rewrites.resend(hub, [later])  # as the side panel does when it opens
        assert [s["optimized"]["notes"] for s in later.states if "optimized" in s] == [rw.notes]
        assert rewrites.sent_rewrite(hub)["summary"] == rw.summary()
    finally:
        hub.remove_view(first)
        hub.remove_view(later)
