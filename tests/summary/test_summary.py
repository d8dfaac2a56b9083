"""Summaries: event files read back by TensorBoard's own EventAccumulator, live display."""

from __future__ import annotations

import io

import numpy as np
import pytest

import flowbook as fb
from flowbook.framework.graph_keys import GraphKeys
from flowbook.ops.io.summary_ops import default_bucket_limits
from flowbook.summary import writer as summary
from flowbook.summary.live_plots import LivePlot, progress

event_accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
summary_pb2 = pytest.importorskip("tensorboard.compat.proto.summary_pb2")


def _reload(logdir: str) -> object:
    acc = event_accumulator.EventAccumulator(
        str(logdir), size_guidance={event_accumulator.SCALARS: 0, event_accumulator.HISTOGRAMS: 0}
    )
    acc.Reload()
    return acc


def test_scalars_and_histograms_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    with fb.Graph().as_default() as g, fb.Session() as sess:
        x = fb.placeholder(fb.float32, [None])
        with fb.name_scope("train"):
            summary.scalar("loss", fb.reduce_mean(x))
        summary.histogram("x", x)
        merged = summary.merge_all()
        with summary.FileWriter(tmp_path) as w:
            batches = [rng.normal(k, 1.0, size=200).astype(np.float32) for k in range(3)]
            for step, b in enumerate(batches):
                w.add_summary(sess.run(merged, {x: b}), global_step=step * 10)
    acc = _reload(tmp_path)
    assert set(acc.Tags()["scalars"]) == {"train/loss"}
    events = acc.Scalars("train/loss")
    assert [e.step for e in events] == [0, 10, 20]
    np.testing.assert_allclose([e.value for e in events], [b.mean() for b in batches], rtol=1e-5)
    hists = acc.Histograms("x")
    assert [h.step for h in hists] == [0, 10, 20]
    for h, b in zip(hists, batches):
        v = h.histogram_value
        assert v.num == 200 and sum(v.bucket) == 200
        np.testing.assert_allclose([v.min, v.max], [b.min(), b.max()], rtol=1e-6)
        np.testing.assert_allclose(v.sum, b.astype(np.float64).sum(), rtol=1e-5)
        np.testing.assert_allclose(v.sum_squares, (b.astype(np.float64) ** 2).sum(), rtol=1e-5)
        assert set(v.bucket_limit) <= set(default_bucket_limits().tolist())
    del g


def test_histogram_buckets_match_tf_scheme():
    lim = default_bucket_limits()
    assert np.all(np.diff(lim) > 0) and lim[len(lim) // 2] == 0.0
    np.testing.assert_allclose(lim[len(lim) // 2 + 2] / lim[len(lim) // 2 + 1], 1.1)
    with fb.Graph().as_default(), fb.Session() as sess:
        out = sess.run(summary.histogram("h", fb.constant([0.0, 1.0, 1.0, -3.0])))
    h = summary_pb2.Summary.FromString(out).value[0].histo
    counts = dict(zip(h.bucket_limit, h.bucket))
    # TF's Histogram::Add: bucket = upper_bound(limits, value), so 0 counts under 1e-12
    assert counts[lim[len(lim) // 2 + 1]] == 1.0
    assert counts[lim[np.searchsorted(lim, 1.0, side="right")]] == 2.0
    assert counts[lim[np.searchsorted(lim, -3.0, side="right")]] == 1.0
    assert sum(h.bucket) == 4 and h.bucket_limit[-1] == lim[-1] and h.bucket[-1] == 0


def test_histogram_nan_fails():
    with fb.Graph().as_default(), fb.Session() as sess:
        h = summary.histogram("bad", fb.placeholder(fb.float32, [2]))
        with pytest.raises(fb.errors.InvalidArgumentError, match="Nan in summary histogram"):
            sess.run(h, {h.op.inputs[1]: np.array([1.0, np.nan], np.float32)})


def test_merge_all_merges_the_collection():
    with fb.Graph().as_default() as g, fb.Session() as sess:
        a = summary.scalar("a", fb.constant(1.0))
        b = summary.scalar("b", fb.constant(2.0))
        other = summary.scalar("c", fb.constant(3.0), collections=["mine"])
        assert g.get_collection(GraphKeys.SUMMARIES) == [a, b]
        assert g.get_collection("mine") == [other]
        tags = [v.tag for v in summary_pb2.Summary.FromString(sess.run(summary.merge_all())).value]
        assert tags == ["a", "b"]
        mine = summary.merge_all("mine")
        assert [v.simple_value for v in summary_pb2.Summary.FromString(sess.run(mine)).value] == [
            3.0
        ]
        assert summary.merge_all("empty") is None


def test_tags_are_uniquified_and_duplicates_fail_in_merge():
    with fb.Graph().as_default(), fb.Session() as sess:
        s1 = summary.scalar("loss", fb.constant(1.0))
        s2 = summary.scalar("loss", fb.constant(2.0))
        assert (s1.op.name, s2.op.name) == ("loss", "loss_1")
        dup = summary.merge_summary([summary.scalar_summary("t", 1.0)] * 2)
        with pytest.raises(fb.errors.InvalidArgumentError, match="Duplicate tag t"):
            sess.run(dup)


def test_seed_era_names(tmp_path):
    with fb.Graph().as_default(), fb.Session() as sess:
        summary.scalar_summary(["acc", "err"], fb.constant([0.9, 0.1]))
        summary.histogram_summary("w", fb.constant(np.arange(10.0)))
        merged = summary.merge_all_summaries()
        assert merged.op.type == "MergeSummary"
        w = summary.SummaryWriter(str(tmp_path))
        w.add_summary(sess.run(merged), 5)
        w.close()
    acc = _reload(tmp_path)
    assert sorted(acc.Tags()["scalars"]) == ["acc", "err"]
    assert acc.Scalars("err")[0].step == 5
    assert acc.Histograms("w")[0].histogram_value.num == 10


def test_add_summary_accepts_protos_and_rejects_junk(tmp_path):
    with summary.FileWriter(tmp_path, filename_suffix=".x") as w:
        w.add_summary(summary._scalar_proto("p", 2.0), 1)
        with pytest.raises(TypeError, match="Summary proto"):
            w.add_summary(3.0)
    assert _reload(tmp_path).Scalars("p")[0].value == 2.0


def test_add_graph(tmp_path):
    g = fb.Graph()
    if not hasattr(g, "as_graph_def"):
        pytest.skip("Graph.as_graph_def is not available yet (flowbook/graph_io/graph_def.py)")
    with g.as_default():
        c = fb.add(fb.constant(1.0, name="a"), fb.constant(2.0, name="b"), name="c")
        summary.scalar("c_value", c)  # summary ops export too
        summary.merge_all()
    with summary.FileWriter(tmp_path, graph=g):
        pass
    acc = _reload(tmp_path)
    assert acc.Tags()["graph"]
    assert {n.name for n in acc.Graph().node} >= {"a", "b", "c", "c_value", "Merge/MergeSummary"}


class _FakeHandle:
    def __init__(self) -> None:
        self.shown: list[str] = []


def _fake_display():
    handles: list[_FakeHandle] = []

    def display(text: str) -> _FakeHandle:
        h = _FakeHandle()
        h.shown.append(str(text))
        handles.append(h)
        return h

    def update(handle: _FakeHandle, text: str) -> None:
        handle.shown.append(str(text))

    return handles, display, update


def test_live_plot_throttles_and_shows_final_state(tmp_path):
    now = [0.0]
    handles, display, update = _fake_display()
    live = LivePlot(display=display, update=update, clock=lambda: now[0])
    with summary.FileWriter(tmp_path, live=live) as w:
        for step in range(100):  # 100 steps within 1 s of fake time: ~4 redraws, not 100
            now[0] = step * 0.01
            s = summary_pb2.Summary()
            s.value.add(tag="loss", simple_value=1.0 / (step + 1))
            s.value.add(tag="w").histo.CopyFrom(
                summary_pb2.HistogramProto(min=0, max=1, num=1, bucket_limit=[1.0], bucket=[1])
            )
            w.add_summary(s, step)
        assert len(handles) == 1
        assert 3 <= len(handles[0].shown) <= 5
        assert live.dirty and "99" not in handles[0].shown[-1]
    assert not live.dirty
    final = handles[0].shown[-1]
    assert "@ 99" in final and "<svg" in final and "<polygon" in final  # ridgelines drawn
    assert len(live.scalars["loss"]) == 100


def test_live_plot_outside_ipython_degrades_to_nothing(tmp_path, capsys):
    with summary.FileWriter(tmp_path, live=True) as w:
        w.add_summary(summary._scalar_proto("loss", 1.0), 0)
    assert capsys.readouterr().out == ""


def test_progress_outside_ipython():
    now = [0.0]

    def clock() -> float:
        now[0] += 0.01
        return now[0]

    out = io.StringIO()
    p = progress(range(200), clock=clock, display=None, file=out)
    assert list(p) == list(range(200))
    lines = out.getvalue().split("\r")
    assert len(lines) < 30  # throttled: not one line per item
    assert lines[-1].startswith("200/200") and "it/s" in lines[-1] and lines[-1].endswith("\n")
    unknown = io.StringIO()
    assert sum(progress(iter([1, 2, 3]), display=None, file=unknown)) == 6
    assert unknown.getvalue().split("\r")[-1].startswith("3 it")


def test_progress_in_a_fake_notebook():
    handles, display, _ = _fake_display()
    p = progress(range(5), total=5, display=display, desc="train")
    for _ in p:
        pass
    assert len(handles) == 1 and "train: 0/5" in handles[0].shown[0]
