"""What TF1 forgives or provides, flowbook does too: each expectation is TensorFlow's own answer.

Summary names with characters a scope refuses, ``get_variable`` over a name a
plain Variable holds, ``device_lib``, the embedding projector, ``tf.contrib``
submodule imports, and string equality whichever op made each side.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap

import pytest

import flowbook as tf
from flowbook.framework.tensor_shape import TensorShape


# ----------------------------------------------------------- summary names
@pytest.mark.parametrize(
    ("build", "name", "scope", "op_name", "tag"),
    [  # TF1: the op name, and the tag its Summary proto carries
        ("histogram", "histogram loss", None, "histogram_loss", "histogram_loss"),
        ("scalar", "W1:0", None, "W1_0", "W1_0"),
        ("scalar", "a b/c:d", None, "a_b/c_d", "a_b/c_d"),
        ("scalar", "x y", "sc", "sc/x_y", "sc/x_y"),
        ("scalar", "/lead", None, "lead", "lead"),
        ("image", "my image", None, "my_image", "my_image/image/0"),
        ("text", "my text", None, "my_text", "my_text"),
        ("tensor_summary", "my t", None, "my_t", "my_t"),
    ],
)
def test_illegal_summary_names_are_cleaned_as_tf1(build, name, scope, op_name, tag):
    from tensorboard.compat.proto import summary_pb2

    with tf.Graph().as_default(), tf.Session() as s:
        value = {
            "histogram": tf.constant([1.0, 2.0]),
            "image": tf.zeros([1, 2, 2, 3]),
            "text": tf.constant("a"),
        }.get(build, tf.constant(1.0))
        with tf.name_scope(scope):
            out = getattr(tf.summary, build)(name, value)
        assert out.op.name == op_name
        summary = summary_pb2.Summary.FromString(s.run(out))
        assert [v.tag for v in summary.value] == [tag]


def test_a_cleaned_summary_name_is_logged_and_uniquified(caplog):
    with tf.Graph().as_default():
        x = tf.constant(1.0)
        with caplog.at_level(logging.INFO, logger="flowbook"):
            first = tf.summary.scalar("W1:0", x)
        second = tf.summary.scalar("W1:0", x, family="my fam")
        third = tf.summary.scalar("W1:0", x)
    assert "Summary name W1:0 is illegal; using W1_0 instead." in caplog.text
    assert [first.op.name, second.op.name, third.op.name] == ["W1_0", "my_fam/W1_0", "W1_0_1"]


# ------------------------------------------------- get_variable after Variable
def test_get_variable_over_a_plain_variable_is_uniquified_as_tf1():
    with tf.Graph().as_default():
        a = tf.Variable(1.0, name="scalar")
        b = tf.get_variable("scalar", shape=[], initializer=tf.zeros_initializer())
        assert (a.name, b.name) == ("scalar:0", "scalar_1:0")
        with pytest.raises(ValueError, match="Variable scalar already exists"):
            tf.get_variable("scalar", shape=[])
        with tf.variable_scope("scope", reuse=None):
            tf.get_variable("scalar", shape=[])
        assert tf.Variable(1.0, name="scalar").name == "scalar_2:0"
        with tf.variable_scope("s"):
            p = tf.Variable(1.0, name="q")
            q = tf.get_variable("q", shape=[])
        assert (p.name, q.name) == ("s/q:0", "s/q_1:0")
        tf.constant(1.0, name="kk")
        assert tf.get_variable("kk", shape=[]).name == "kk_1:0"
        e = tf.get_variable("w", shape=[])
        assert (e.name, tf.Variable(1.0, name="w").name) == ("w:0", "w_1:0")
        with tf.variable_scope("", reuse=True):
            assert tf.get_variable("scalar") is b


# ------------------------------------------------------ TF1 module imports
def _run_tf1(tmp_path, source):
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(source))
    done = subprocess.run(
        [sys.executable, "-m", "flowbook.tf1", str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_tf1_module_imports_device_lib_projector_and_contrib(tmp_path):
    contrib = [n for n in dir(tf.contrib) if not n.startswith("_")]
    imports = "; ".join(f"import tensorflow.contrib.{n}" for n in contrib)
    out = _run_tf1(
        tmp_path,
        f"""
        import os
        import tensorflow as tf
        {imports}
        from tensorflow.contrib import layers, rnn
        from tensorflow.python.client import device_lib
        from tensorflow.contrib.tensorboard.plugins import projector

        assert tensorflow.contrib.layers is tf.contrib.layers is layers
        assert rnn is tf.contrib.rnn
        devices = device_lib.list_local_devices()
        cpu = devices[0]
        print(cpu.name, cpu.device_type, cpu.memory_limit, type(cpu.incarnation).__name__)
        gpus = [d.name for d in devices if d.device_type == "GPU"]
        assert tf.test.is_gpu_available() == bool(gpus)
        assert tf.test.gpu_device_name() == (gpus[0] if gpus else "")

        writer = tf.summary.FileWriter("logs")
        config = projector.ProjectorConfig()
        embedding = config.embeddings.add()
        embedding.tensor_name = "embedding:0"
        embedding.metadata_path = "metadata.tsv"
        projector.visualize_embeddings(writer, config)
        writer.close()
        print(open(os.path.join("logs", "projector_config.pbtxt")).read())
        try:
            import tensorflow.python.ops
        except ModuleNotFoundError:
            print("internal refused")
        """,
    )
    assert "/device:CPU:0 CPU 268435456 int" in out
    assert 'tensor_name: "embedding:0"' in out and 'metadata_path: "metadata.tsv"' in out
    assert "internal refused" in out


def test_projector_config_is_tensorboards_message(tmp_path):
    from tensorboard.plugins.projector import projector_config_pb2

    from flowbook.api import projector

    config = projector.ProjectorConfig()
    config.embeddings.add(tensor_name="w", metadata_path="m.tsv")
    assert isinstance(config, projector_config_pb2.ProjectorConfig)
    projector.visualize_embeddings(str(tmp_path / "run"), config)
    text = (tmp_path / "run" / "projector_config.pbtxt").read_text()
    parsed = projector_config_pb2.ProjectorConfig()
    from google.protobuf import text_format

    text_format.Parse(text, parsed)
    assert parsed == config
    with pytest.raises(ValueError, match="logdir"):
        projector.visualize_embeddings(type("W", (), {"get_logdir": lambda self: None})(), config)


# ------------------------------------------------------------ string equality
# TensorFlow's answers (tf.compat.v1, graph mode): what each op fetches, and
# whether it equals "Present".  TF gave the same answer comparing with
# "Present" or b"Present", with the placeholder fed "Present" or b"Present",
# for tf.equal and (negated) tf.not_equal; nothing equals "Absent".
PRODUCERS = {
    "decode_csv": (b"Present", True),
    "decode_csv_default": (b"Present", True),
    "constant_str": (b"Present", True),
    "constant_bytes": (b"Present", True),
    "constant_list": (b"Present", True),
    "placeholder": (None, True),  # TF hands a fed fetch back as fed
    "string_join": (b"Present", True),
    "substr": (b"Present", True),
    "reduce_join": (b"Present", True),
    "regex_replace": (b"Present", True),
    "as_string": (b"7", False),
    "identity": (b"Present", True),
}


def _producers(ph):
    return {
        "decode_csv": tf.decode_csv("Present,1", [[""], [0]])[0],
        "decode_csv_default": tf.decode_csv(",1", [["Present"], [0]])[0],
        "constant_str": tf.constant("Present"),
        "constant_bytes": tf.constant(b"Present"),
        "constant_list": tf.constant(["Present", "Absent"])[0],
        "placeholder": ph,
        "string_join": tf.string_join(["Pre", "sent"]),
        "substr": tf.substr("xPresent", 1, 7),
        "reduce_join": tf.reduce_join(tf.constant(["Pre", "sent"])),
        "regex_replace": tf.regex_replace("Presant", "a", "e"),
        "as_string": tf.as_string(tf.constant(7)),
        "identity": tf.identity("Present"),
    }


@pytest.mark.parametrize("feed", ["Present", b"Present"])
@pytest.mark.parametrize("producer", sorted(PRODUCERS))
def test_string_equality_whichever_op_made_each_side(producer, feed):
    fetched, is_present = PRODUCERS[producer]
    with tf.Graph().as_default(), tf.Session() as s:
        ph = tf.placeholder(tf.string, [])
        t = _producers(ph)[producer]
        checks = {
            other: (tf.equal(t, other), tf.not_equal(t, other))
            for other in ("Present", b"Present", "Absent")
        }
        got = s.run(checks, {ph: feed})
        if fetched is not None:
            assert s.run(t, {ph: feed}) == fetched
    for other, (eq, ne) in got.items():
        expected = is_present and other != "Absent"
        assert (bool(eq), bool(ne)) == (expected, not expected), other


def test_string_tensors_from_different_ops_compare_equal():
    with tf.Graph().as_default(), tf.Session() as s:
        ph = tf.placeholder(tf.string, [])
        t = _producers(ph)
        pairs = [
            (a, b)
            for a in ("decode_csv", "constant_str", "placeholder", "string_join")
            for b in ("constant_bytes", "substr", "reduce_join", "regex_replace")
        ]
        got = s.run([tf.equal(t[a], t[b]) for a, b in pairs], {ph: "Present"})
    assert [bool(g) for g in got] == [True] * len(pairs)  # TF: True for every pair


def test_the_csv_column_compared_with_a_literal():
    with tf.Graph().as_default(), tf.Session() as s:
        line = tf.placeholder(tf.string, [None])
        status, _value = tf.decode_csv(line, [[""], [0.0]])
        present = tf.equal(status, "Present")
        got = s.run(present, {line: ["Present,1.5", "Absent,2", "Present,0"]})
    assert got.tolist() == [True, False, True]


def test_dimension_product_shapes_a_flatten():
    assert TensorShape([None, 7, 7, 64])[1] * 49 == 343


def test_device_lib_lists_the_gpus_flowbook_sees():
    from flowbook.api import device_lib
    from flowbook.runtime.gpu_sim import simulate_gpu

    with simulate_gpu(1 << 30):
        found = device_lib.list_local_devices()
        assert [(d.name, d.device_type) for d in found] == [
            ("/device:CPU:0", "CPU"),
            ("/device:GPU:0", "GPU"),
        ]
        assert found[1].memory_limit == 1 << 30 and found[1].physical_device_desc
        assert found[1].incarnation == device_lib.list_local_devices()[1].incarnation
        assert tf.test.is_gpu_available() and tf.test.gpu_device_name() == "/device:GPU:0"
