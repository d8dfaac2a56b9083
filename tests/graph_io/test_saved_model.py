"""SavedModels: TensorFlow's fixture, round trips in flowbook, damaged files."""

import os

import numpy as np
import pytest

import flowbook as tf

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "tf_saved_model")


def test_tensorflow_saved_model_runs_in_flowbook():
    with tf.Graph().as_default(), tf.Session() as s:
        mg = tf.saved_model.loader.load(s, [tf.saved_model.tag_constants.SERVING], FIXTURE)
        sig = mg.signature_def[tf.saved_model.signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY]
        out = s.run(
            sig.outputs["out"].name, {sig.inputs["x"].name: np.load(FIXTURE + "/probe.npy")}
        )
    np.testing.assert_allclose(out, np.load(FIXTURE + "/expected.npy"), rtol=1e-6)


def test_builder_round_trip_and_signatures(tmp_path):
    d = str(tmp_path / "sm")
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        w = tf.Variable([[2.0], [3.0]], name="w")
        y = tf.matmul(x, w, name="y")
        with tf.Session() as s:
            s.run(w.initializer)
            b = tf.saved_model.builder.SavedModelBuilder(d)
            info = tf.saved_model.utils.build_tensor_info(x)
            assert info.name == "x:0" and [dim.size for dim in info.tensor_shape.dim] == [-1, 2]
            sig = tf.saved_model.signature_def_utils.build_signature_def(
                {"x": info}, {"y": tf.saved_model.utils.build_tensor_info(y)}, "m"
            )
            b.add_meta_graph_and_variables(s, ["train"], signature_def_map={"s": sig})
            b.add_meta_graph(["serve", "gpu"])
            b.save()
    assert os.path.exists(os.path.join(d, "variables", "variables.index"))
    with tf.Graph().as_default() as g, tf.Session() as s:
        mg = tf.saved_model.loader.load(s, ["train"], d)
        t = tf.saved_model.utils.get_tensor_from_tensor_info(mg.signature_def["s"].outputs["y"])
        assert t.graph is g and s.run(t, {"x:0": [[1.0, 1.0]]}).tolist() == [[5.0]]
    with tf.Graph().as_default(), tf.Session() as s:
        assert list(tf.saved_model.loader.load(s, ["gpu", "serve"], d).meta_info_def.tags)
        with pytest.raises(RuntimeError, match="could not be found"):
            tf.saved_model.loader.load(s, ["nope"], d)


def test_simple_save_refuses_a_full_directory(tmp_path):
    (tmp_path / "f").write_text("x")
    with tf.Graph().as_default(), tf.Session() as s:
        x = tf.placeholder(tf.float32, name="x")
        with pytest.raises(AssertionError, match="already exists"):
            tf.saved_model.simple_save(s, str(tmp_path), {"x": x}, {"y": x})


def open_bytes(path):
    with open(path, "rb") as f:
        return f.read()[:3000]


@pytest.mark.parametrize("data", [b"\xff\xfe garbage", b"", None])
def test_damaged_saved_model_is_an_error_naming_the_file(tmp_path, data):
    if data is None:
        data = open_bytes(os.path.join(FIXTURE, "saved_model.pb"))
    (tmp_path / "saved_model.pb").write_bytes(data)
    with (
        tf.Graph().as_default(),
        tf.Session() as s,
        pytest.raises(ValueError, match=r"saved_model\.pb"),
    ):
        tf.saved_model.loader.load(s, ["serve"], str(tmp_path))
    with tf.Graph().as_default(), tf.Session() as s, pytest.raises(OSError, match="does not exist"):
        tf.saved_model.loader.load(s, ["serve"], str(tmp_path / "none"))
