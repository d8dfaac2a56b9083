"""fb.train.Saver: round trips, the checkpoint file, atomic saves, and restore errors."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import flowbook as fb
from flowbook import train
from flowbook.framework.errors import FailedPreconditionError, InvalidArgumentError, NotFoundError

F = np.float32


def _model():
    w = fb.Variable(np.arange(6, dtype=F).reshape(2, 3), name="W")
    b = fb.Variable(np.array([0.5, -0.5, 1.5], F), name="b")
    return w, b


def _files(d) -> list[str]:
    return sorted(os.listdir(d))


def test_round_trip_in_a_new_session_and_graph(tmp_path):
    _model()
    saver = train.Saver()
    with fb.Session() as sess:
        sess.run(fb.global_variables_initializer())
        path = saver.save(sess, str(tmp_path / "model.ckpt"), global_step=100)
    assert path == str(tmp_path / "model.ckpt-100")
    assert train.checkpoint_exists(path)
    assert train.latest_checkpoint(str(tmp_path)) == path
    with fb.Graph().as_default():
        w2 = fb.Variable(np.zeros((2, 3), F), name="W")
        b2 = fb.Variable(np.zeros(3, F), name="b")
        saver2 = train.Saver()
        with fb.Session() as sess:
            saver2.restore(sess, path)  # restore initialises: no init op needed
            np.testing.assert_array_equal(sess.run(w2), np.arange(6).reshape(2, 3))
            np.testing.assert_array_equal(sess.run(b2), [0.5, -0.5, 1.5])


def test_restore_overwrites_changed_values(tmp_path):
    w, b = _model()
    saver = train.Saver()
    with fb.Session() as sess:
        sess.run(fb.global_variables_initializer())
        path = saver.save(sess, str(tmp_path / "m"))
        assert path == str(tmp_path / "m")
        sess.run([w.assign(np.ones((2, 3), F)), b.assign(np.zeros(3, F))])
        saver.restore(sess, path)
        np.testing.assert_array_equal(sess.run(b), [0.5, -0.5, 1.5])
        np.testing.assert_array_equal(sess.run(w), np.arange(6).reshape(2, 3))


def test_global_step_variable_names_the_checkpoint(tmp_path):
    _model()
    step = train.get_or_create_global_step()
    saver = train.Saver()
    with fb.Session() as sess:
        sess.run(fb.global_variables_initializer())
        sess.run(fb.assign_add(step, 42))
        path = saver.save(sess, str(tmp_path / "model.ckpt"), global_step=step)
        assert os.path.basename(path) == "model.ckpt-42"
        sess.run(fb.assign(step, 0))
        saver.restore(sess, path)
        assert sess.run(step) == 42
        assert (
            train.Saver(pad_step_number=True)
            .save(sess, str(tmp_path / "p"), 7)
            .endswith("p-00000007")
        )


def test_checkpoint_state_file_and_max_to_keep(tmp_path):
    _model()
    saver = train.Saver(max_to_keep=2)
    prefix = str(tmp_path / "model.ckpt")
    with fb.Session() as sess:
        sess.run(fb.global_variables_initializer())
        paths = [saver.save(sess, prefix, global_step=s) for s in (1, 2, 3, 4)]
    assert _files(tmp_path) == [
        "checkpoint",
        "model.ckpt-3.data-00000-of-00001",
        "model.ckpt-3.index",
        "model.ckpt-3.meta",
        "model.ckpt-4.data-00000-of-00001",
        "model.ckpt-4.index",
        "model.ckpt-4.meta",
    ]
    assert saver.last_checkpoints == paths[2:]
    text = (tmp_path / "checkpoint").read_text()
    assert text == (
        'model_checkpoint_path: "model.ckpt-4"\n'
        'all_model_checkpoint_paths: "model.ckpt-3"\n'
        'all_model_checkpoint_paths: "model.ckpt-4"\n'
    )
    state = train.get_checkpoint_state(str(tmp_path))
    assert state.model_checkpoint_path == paths[3]
    assert state.all_model_checkpoint_paths == paths[2:]
    assert train.latest_checkpoint(str(tmp_path)) == paths[3]


def test_latest_checkpoint_none_cases(tmp_path):
    assert train.latest_checkpoint(str(tmp_path)) is None
    (tmp_path / "checkpoint").write_text('model_checkpoint_path: "gone.ckpt-9"\n')
    assert train.latest_checkpoint(str(tmp_path)) is None  # names a file that is not there


def test_reads_a_tensorflow_written_state_file(tmp_path):
    _model()
    with fb.Session() as sess:
        sess.run(fb.global_variables_initializer())
        train.Saver().save(sess, str(tmp_path / "model.ckpt-5"), write_state=False)
    assert not (tmp_path / "checkpoint").exists()
    (tmp_path / "checkpoint").write_text(
        'model_checkpoint_path: "model.ckpt-5"\n'
        'all_model_checkpoint_paths: "model.ckpt-5"\n'
        "all_model_checkpoint_timestamps: 1700000000.5\n"
        "last_preserved_timestamp: 1699999999.0\n"
    )
    assert train.latest_checkpoint(str(tmp_path)) == str(tmp_path / "model.ckpt-5")


def test_write_version_v1_file_is_npz_without_pickle(tmp_path):
    _model()
    with fb.Session() as sess:
        sess.run(fb.global_variables_initializer())
        saver = train.Saver(write_version=train.SaverDef.V1)
        path = saver.save(sess, str(tmp_path / "model.ckpt"))
    assert _files(tmp_path) == ["checkpoint", "model.ckpt.meta", "model.ckpt.npz"]
    with np.load(path + ".npz", allow_pickle=False) as archive:
        index = json.loads(bytes(archive["__index__"]).decode())
        by_name = {e["name"]: archive[e["key"]] for e in index["variables"]}
    assert index["format"] == "flowbook-checkpoint"
    assert [(e["name"], e["dtype"], e["shape"]) for e in index["variables"]] == [
        ("W", "float32", [2, 3]),
        ("b", "float32", [3]),
    ]
    np.testing.assert_array_equal(by_name["b"], [0.5, -0.5, 1.5])
    assert train.list_variables(str(tmp_path)) == [("W", [2, 3]), ("b", [3])]
    np.testing.assert_array_equal(train.load_variable(path, "W:0"), np.arange(6).reshape(2, 3))


def test_crash_during_save_keeps_previous_checkpoint(tmp_path, monkeypatch):
    w, b = _model()
    saver = train.Saver()
    prefix = str(tmp_path / "model.ckpt")
    with fb.Session() as sess:
        sess.run(fb.global_variables_initializer())
        first = saver.save(sess, prefix)
        older = saver.save(sess, prefix, global_step=1)
        state_before = (tmp_path / "checkpoint").read_text()
        files_before = _files(tmp_path)
        sess.run([w.assign(np.full((2, 3), 9.0, F)), b.assign(np.full(3, 9.0, F))])

        def crash(src, dst):
            raise OSError("simulated crash before the rename")

        monkeypatch.setattr(os, "replace", crash)
        with pytest.raises(OSError, match="simulated crash"):
            saver.save(sess, prefix)  # overwrite the same prefix
        with pytest.raises(OSError, match="simulated crash"):
            saver.save(sess, prefix, global_step=2)  # a new step
        monkeypatch.undo()

        assert _files(tmp_path) == files_before  # no temp files, no half files
        assert (tmp_path / "checkpoint").read_text() == state_before
        assert train.latest_checkpoint(str(tmp_path)) == older
        for path in (first, older):
            saver.restore(sess, path)
            np.testing.assert_array_equal(sess.run(w), np.arange(6).reshape(2, 3))
            np.testing.assert_array_equal(sess.run(b), [0.5, -0.5, 1.5])


def test_missing_variables_raise_not_found_and_change_nothing(tmp_path):
    w, _ = _model()
    with fb.Session() as sess:
        sess.run(fb.global_variables_initializer())
        path = train.Saver([w]).save(sess, str(tmp_path / "only_w"))
    extra = fb.Variable(np.zeros(2, F), name="extra")
    saver = train.Saver()
    with fb.Session() as sess:
        sess.run(fb.global_variables_initializer())
        sess.run(w.assign(np.full((2, 3), 7.0, F)))
        with pytest.raises(NotFoundError) as e:
            saver.restore(sess, path)
        assert "'b'" in str(e.value) and "'extra'" in str(e.value)
        assert "'W'" not in str(e.value).split("holds")[0]
        np.testing.assert_array_equal(sess.run(w), np.full((2, 3), 7.0))  # unchanged
        np.testing.assert_array_equal(sess.run(extra), np.zeros(2))


def test_shape_and_dtype_mismatch_raise_invalid_argument_and_change_nothing(tmp_path):
    _model()
    with fb.Session() as sess:
        sess.run(fb.global_variables_initializer())
        path = train.Saver().save(sess, str(tmp_path / "model.ckpt"))
    with fb.Graph().as_default():
        w = fb.Variable(np.zeros((3, 2), F), name="W")
        b = fb.Variable(np.zeros(3, np.float64), name="b")
        saver = train.Saver()
        with fb.Session() as sess:
            sess.run(fb.global_variables_initializer())
            with pytest.raises(InvalidArgumentError) as e:
                saver.restore(sess, path)
            msg = str(e.value)
            assert "'W': shape [3,2] in the graph, [2,3] in the checkpoint" in msg
            assert "'b': dtype float64 in the graph, float32 in the checkpoint" in msg
            np.testing.assert_array_equal(sess.run(w), np.zeros((3, 2)))
            np.testing.assert_array_equal(sess.run(b), np.zeros(3))
    with fb.Graph().as_default():  # reshape=True accepts as many elements in another shape
        w = fb.Variable(np.zeros((3, 2), F), name="W")
        fb.Variable(np.zeros(3, F), name="b")
        with fb.Session() as sess:
            train.Saver(reshape=True).restore(sess, path)
            np.testing.assert_array_equal(sess.run(w), np.arange(6).reshape(3, 2))


def test_repeated_restore_does_not_grow_the_graph(tmp_path):
    _model()
    saver = train.Saver()
    graph = fb.get_default_graph()
    with fb.Session() as sess:
        sess.run(fb.global_variables_initializer())
        path = saver.save(sess, str(tmp_path / "model.ckpt"))
        ops, version = len(graph.get_operations()), graph.version
        for _ in range(3):
            saver.restore(sess, path)
            saver.save(sess, str(tmp_path / "model.ckpt"))
    assert len(graph.get_operations()) == ops
    assert graph.version == version


def test_dict_var_list_maps_checkpoint_names(tmp_path):
    w, _ = _model()
    with fb.Session() as sess:
        sess.run(fb.global_variables_initializer())
        path = train.Saver({"weights": w}).save(sess, str(tmp_path / "model.ckpt"))
    assert train.list_variables(path) == [("weights", [2, 3])]
    with fb.Graph().as_default():
        other = fb.Variable(np.zeros((2, 3), F), name="layer/kernel")
        with fb.Session() as sess:
            train.Saver({"weights": other}).restore(sess, path)
            np.testing.assert_array_equal(sess.run(other), np.arange(6).reshape(2, 3))


def test_optimizer_slots_are_saved(tmp_path):
    w = fb.Variable(np.ones(2, F), name="w")
    opt = train.AdamOptimizer(0.1)
    step = opt.apply_gradients([(fb.constant(np.array([1.0, -2.0], F)), w)])
    saver = train.Saver()
    assert {v.op.name for v in fb.global_variables()} == {
        "w",
        "w/Adam",
        "w/Adam_1",
        "beta1_power",
        "beta2_power",
    }
    with fb.Session() as sess:
        sess.run(fb.global_variables_initializer())
        sess.run(step)
        path = saver.save(sess, str(tmp_path / "model.ckpt"))
        sess.run(step)
        straight = sess.run(w)
    with fb.Session() as sess:
        saver.restore(sess, path)
        sess.run(step)
        np.testing.assert_array_equal(sess.run(w), straight)


def test_string_and_int_variables_round_trip(tmp_path):
    s = fb.Variable(fb.constant([b"ab", b"c"]), name="s")
    i = fb.Variable(np.array([1, 2], np.int64), name="i")
    saver = train.Saver()
    with fb.Session() as sess:
        sess.run(fb.global_variables_initializer())
        path = saver.save(sess, str(tmp_path / "model.ckpt"))
    with fb.Session() as sess:
        saver.restore(sess, path)
        assert sess.run(s).tolist() == [b"ab", b"c"]
        assert sess.run(i).dtype == np.int64


def test_errors(tmp_path):
    w, _ = _model()
    saver = train.Saver()
    with fb.Session() as sess:
        with pytest.raises(FailedPreconditionError, match="uninitialized"):
            saver.save(sess, str(tmp_path / "model.ckpt"))
        assert _files(tmp_path) == []
        sess.run(fb.global_variables_initializer())
        with pytest.raises(ValueError, match="Parent directory"):
            saver.save(sess, str(tmp_path / "nope" / "model.ckpt"))
        with pytest.raises(ValueError, match="not a valid checkpoint"):
            saver.restore(sess, str(tmp_path / "missing"))
        with pytest.raises(ValueError, match="None"):
            saver.restore(sess, None)
        (tmp_path / "junk.npz").write_bytes(b"not a zip")
        with pytest.raises(fb.errors.DataLossError):
            saver.restore(sess, str(tmp_path / "junk"))
    with pytest.raises(ValueError, match="same name"):
        train.Saver([w, w])
    with pytest.raises(TypeError, match="only save and restore variables"):
        train.Saver([fb.constant(1.0)])
    with fb.Graph().as_default():
        with pytest.raises(ValueError, match="No variables to save"):
            train.Saver()
        assert train.Saver(allow_empty=True).last_checkpoints == []
        with fb.Session() as other, pytest.raises(ValueError, match="another graph"):
            saver.save(other, str(tmp_path / "x"))


def test_a_string_variable_holding_a_number_is_refused_not_saved_as_nuls(tmp_path):
    from flowbook.train.checkpoint_utils import write_checkpoint

    with pytest.raises(TypeError, match="variable 's' is a string variable but holds int 5"):
        write_checkpoint(str(tmp_path / "m"), {"s": np.array(["a", 5], dtype=object)})
    assert list(tmp_path.iterdir()) == []  # nothing written, no temp file left


# ------------------------------------------------------------------ TensorFlow's format V2
TF_FIXTURE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "tf_checkpoint_v2")


def test_default_files_are_tensorflows_v2(tmp_path):
    from flowbook.train.tensor_bundle import read_bundle

    _model()
    with fb.Session() as sess:
        sess.run(fb.global_variables_initializer())
        path = train.Saver().save(sess, str(tmp_path / "model.ckpt"), global_step=7)
    assert _files(tmp_path) == [
        "checkpoint",
        "model.ckpt-7.data-00000-of-00001",
        "model.ckpt-7.index",
        "model.ckpt-7.meta",  # the graph, as TF1's Saver writes it
    ]
    r = read_bundle(path)
    assert r.keys() == ["W", "b"] and r.dtype("b").name == "float32"
    np.testing.assert_array_equal(r.get("b"), [0.5, -0.5, 1.5])
    assert (tmp_path / "checkpoint").read_text() == (
        'model_checkpoint_path: "model.ckpt-7"\nall_model_checkpoint_paths: "model.ckpt-7"\n'
    )


def test_restores_a_checkpoint_tensorflow_wrote(tmp_path):
    import shutil

    d = tmp_path / "tf"
    shutil.copytree(TF_FIXTURE, d)
    prefix = train.latest_checkpoint(str(d))
    assert prefix == str(d / "model.ckpt-3")
    w = fb.Variable(np.zeros((2, 3), F), name="weights")
    step = fb.Variable(np.int64(0), name="global_step")
    names = fb.Variable(np.array([[b""] * 2] * 2, dtype=object), dtype=fb.string, name="names")
    with fb.Session() as sess:
        train.Saver([w, step, names]).restore(sess, prefix)
        got_w, got_step, got_names = sess.run([w, step, names])
    np.testing.assert_array_equal(got_w, np.arange(6, dtype=F).reshape(2, 3) / 4)
    assert got_step == 42 and got_names.tolist() == [[b"hello", b""], [b"tf", b"x" * 200]]
    assert ("flags", [3]) in train.list_variables(str(d))
    assert train.load_variable(str(d), "layer_07/bias") == 7 * 7 - 100


def test_v1_and_v2_saves_replace_each_other(tmp_path):
    w, _ = _model()
    prefix = str(tmp_path / "m")
    with fb.Session() as sess:
        sess.run(fb.global_variables_initializer())
        train.Saver(write_version=train.SaverDef.V1).save(sess, prefix)
        sess.run(w.assign(np.ones((2, 3), F)))
        train.Saver().save(sess, prefix)
        assert _files(tmp_path) == ["checkpoint", "m.data-00000-of-00001", "m.index", "m.meta"]
        sess.run(w.assign(np.full((2, 3), 2, F)))
        train.Saver(write_version=train.SaverDef.V1).save(sess, prefix)
        assert _files(tmp_path) == ["checkpoint", "m.meta", "m.npz"]
    assert train.load_variable(prefix, "W").tolist() == [[2.0] * 3] * 2
