"""``tf.summary``'s TF1 helpers and protos: the writer cache, summary descriptions, the
TF2-summary bridges, and the lazily loaded TensorBoard messages."""

from __future__ import annotations

import pytest

import flowbook as tf

event_pb2 = pytest.importorskip("tensorboard.compat.proto.event_pb2")
summary_pb2 = pytest.importorskip("tensorboard.compat.proto.summary_pb2")
node_def_pb2 = pytest.importorskip("tensorboard.compat.proto.node_def_pb2")

PROTOS = [
    ("Event", event_pb2),
    ("SessionLog", event_pb2),
    ("TaggedRunMetadata", event_pb2),
    ("Summary", summary_pb2),
    ("SummaryDescription", summary_pb2),
]


@pytest.mark.parametrize(("name", "module"), PROTOS, ids=[p[0] for p in PROTOS])
def test_protos_are_tensorboards(name, module):
    assert getattr(tf.summary, name) is getattr(module, name)
    assert name in dir(tf.summary)


def test_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = tf.summary.Nope


def test_file_writer_cache_shares_one_writer_per_logdir(tmp_path):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    try:
        wa = tf.summary.FileWriterCache.get(a)
        assert isinstance(wa, tf.summary.FileWriter)
        assert tf.summary.FileWriterCache.get(a) is wa
        assert tf.summary.FileWriterCache.get(b) is not wa
    finally:
        tf.summary.FileWriterCache.clear()
    assert wa.closed
    assert tf.summary.FileWriterCache.get(a) is not wa
    tf.summary.FileWriterCache.clear()


def test_get_summary_description_parses_the_json_attr():
    node = node_def_pb2.NodeDef(op="TensorSummary")
    node.attr["description"].s = b'{"typeHint": "image"}'
    desc = tf.summary.get_summary_description(node)
    assert isinstance(desc, summary_pb2.SummaryDescription)
    assert desc.type_hint == "image"
    with pytest.raises(ValueError, match="Can't get_summary_description on ScalarSummary"):
        tf.summary.get_summary_description(node_def_pb2.NodeDef(op="ScalarSummary"))


def test_all_v2_summary_ops_is_the_v2_collection():
    with tf.Graph().as_default() as g:
        tf.summary.scalar("loss", tf.constant(1.0))  # a TF1 summary: not a v2 one
        assert tf.summary.all_v2_summary_ops() == []
        marker = tf.constant(0)
        g.add_to_collection("_SUMMARY_V2", marker)
        assert tf.summary.all_v2_summary_ops() == [marker]


def test_initialize_without_a_v2_writer_raises_as_tf1():
    with pytest.raises(RuntimeError, match=r"No default tf\.contrib\.summary\.SummaryWriter"):
        tf.summary.initialize()
