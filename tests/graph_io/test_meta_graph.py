"""MetaGraphs: export and import in flowbook, TensorFlow's fixture, damaged files."""

import os

import numpy as np
import pytest

import flowbook as tf

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "tf_meta_graph")


def _head(path, n):
    with open(path, "rb") as f:
        return f.read()[:n]


def _model():
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    w = tf.Variable([[1.0], [2.0]], name="w")
    y = tf.identity(tf.matmul(x, w), name="y")
    tf.add_to_collection("outputs", y)
    tf.add_to_collection(tf.GraphKeys.TRAIN_OP, y.op)
    return x, w, y


def test_tensorflow_checkpoint_and_meta_graph_run_in_flowbook():
    with tf.Graph().as_default():
        saver = tf.train.import_meta_graph(os.path.join(FIXTURE, "model.ckpt.meta"))
        assert saver.saver_def.restore_op_name == "save/restore_all"
        assert sorted(v.op.name for v in tf.trainable_variables()) == ["b1", "b2", "w1", "w2"]
        assert [op.name for op in tf.get_collection("train_op")] == ["GradientDescent"]
        with tf.Session() as s:
            saver.restore(s, os.path.join(FIXTURE, "model.ckpt"))
            out = s.run("out:0", {"x:0": np.load(os.path.join(FIXTURE, "probe.npy"))})
    np.testing.assert_allclose(out, np.load(os.path.join(FIXTURE, "expected.npy")), rtol=1e-6)


def test_round_trip_collections_saver_def_and_meta_file(tmp_path):
    prefix = str(tmp_path / "model.ckpt")
    with tf.Graph().as_default():
        _, w, _ = _model()
        saver = tf.train.Saver()
        sd = saver.as_saver_def()
        assert (sd.filename_tensor_name, sd.save_tensor_name, sd.restore_op_name) == (
            "save/Const:0",
            "save/control_dependency:0",
            "save/restore_all",
        )
        assert sd.version == 2 and sd.max_to_keep == 5
        with tf.Session() as s:
            s.run(w.initializer)
            saver.save(s, prefix, global_step=1, write_meta_graph=True)
    assert os.path.exists(prefix + "-1.meta")
    with tf.Graph().as_default() as g:
        saver = tf.train.import_meta_graph(prefix + "-1.meta")
        assert [v.name for v in tf.global_variables()] == ["w:0"]
        assert g.get_collection("outputs")[0].name == "y:0"
        assert g.get_collection("train_op")[0].name == "y"
        with tf.Session() as s:
            saver.restore(s, prefix + "-1")
            assert s.run("y:0", {"x:0": [[1.0, 1.0]]}).tolist() == [[3.0]]
            s.run(tf.global_variables()[0].assign([[0.0], [0.0]]))
            again = saver.save(s, str(tmp_path / "again"))  # the graph's own SaveV2
            saver.restore(s, prefix + "-1")
            saver.restore(s, again)
            assert s.run("y:0", {"x:0": [[1.0, 1.0]]}).tolist() == [[0.0]]


def test_import_scope_clear_devices_and_export_scope():
    with tf.Graph().as_default():
        with tf.device("/cpu:0"):
            _model()
        mg = tf.train.export_meta_graph(clear_devices=True)
        assert all(not n.device for n in mg.graph_def.node)
        with tf.name_scope("outer"):
            tf.constant(1.0, name="c")
        scoped = tf.train.export_meta_graph(export_scope="outer")
        assert [n.name for n in scoped.graph_def.node] == ["c"]
    with tf.Graph().as_default() as h:
        tf.train.import_meta_graph(mg, import_scope="m")
        assert h.get_collection("outputs")[0].name == "m/y:0"
        assert [v.name for v in tf.global_variables()] == ["m/w:0"]
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            assert s.run("m/y:0", {"m/x:0": [[1.0, 0.0]]}).tolist() == [[1.0]]


def test_text_meta_graph(tmp_path):
    path = str(tmp_path / "g.pbtxt")
    with tf.Graph().as_default():
        _model()
        tf.train.export_meta_graph(path, as_text=True)
    with tf.Graph().as_default():
        assert isinstance(tf.train.import_meta_graph(path), tf.train.Saver)


@pytest.mark.parametrize("data", [b"\xff\xfe garbage \x00\x01", b"\n\x05abc"])
def test_damaged_meta_graph_is_an_error_naming_the_file(tmp_path, data):
    good = os.path.join(FIXTURE, "model.ckpt.meta")
    for i, blob in enumerate([data, _head(good, 5000)]):
        path = str(tmp_path / f"bad{i}.meta")
        with open(path, "wb") as f:
            f.write(blob)
        with tf.Graph().as_default(), pytest.raises(ValueError, match="bad"):
            tf.train.import_meta_graph(path)
