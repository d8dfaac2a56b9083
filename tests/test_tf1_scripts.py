"""Unchanged TF1 scripts and notebooks: ``python -m flowbook.tf1``, ``%flowbook_as_tensorflow``,
the MNIST stand-in, TensorBoard working while flowbook is ``tensorflow``, TFRecord files.
"""

from __future__ import annotations

import importlib.util
import os
import re
import struct
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import numpy as np
import pytest

import flowbook as fb
from flowbook import tf1
from flowbook.data import input_data
from flowbook.framework import errors
from flowbook.graph_io.tfrecord import TFRecordWriter, tf_record_iterator

ROOT = Path(__file__).parent.parent
SCRIPT = ROOT / "tutorials" / "data" / "mnist_softmax.py"  # tutorial 08 runs it too
REAL_TF = importlib.util.find_spec("tensorflow") is not None and not tf1.is_installed()


def _run(*args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FLOWBOOK_NO_GPU": "1"}
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, env=env, timeout=timeout
    )


@pytest.fixture
def alias():
    """The alias for one test; removed after it, whatever the test did."""
    tf1.install()
    yield
    tf1.uninstall()


# ------------------------------------------------------------ the runner
def test_runner_trains_an_unchanged_tf1_script(tmp_path):
    logdir = tmp_path / "logs"
    out = _run("-m", "flowbook.tf1", str(SCRIPT), "--steps=150", f"--logdir={logdir}", "extra")
    assert out.returncode == 0, out.stderr
    accuracy = float(re.search(r"accuracy ([0-9.]+)", out.stdout).group(1))
    assert accuracy > 0.85, out.stdout  # softmax regression on the digits stand-in
    assert "args ['extra']" in out.stdout  # flags consumed, the rest handed to main
    assert "tensorflow is flowbook and flowbook" in out.stdout
    assert "INFO:flowbook:step 0" in out.stderr and "INFO:flowbook:step 100" in out.stderr
    # TensorBoard's writer ran with flowbook as `tensorflow`: its gfile wrote the events
    from tensorboard.backend.event_processing import event_accumulator

    acc = event_accumulator.EventAccumulator(str(logdir), {event_accumulator.SCALARS: 0})
    acc.Reload()
    assert [e.step for e in acc.Scalars("cross_entropy")] == list(range(150))


def test_runner_exit_status_usage_and_missing_script(tmp_path):
    script = tmp_path / "exits.py"
    script.write_text("import tensorflow as tf\nimport sys\nsys.exit(3)\n")
    assert _run("-m", "flowbook.tf1", str(script)).returncode == 3
    usage = _run("-m", "flowbook.tf1")
    assert usage.returncode == 2 and "usage" in usage.stderr
    missing = _run("-m", "flowbook.tf1", str(tmp_path / "nope.py"))
    assert missing.returncode == 2 and "cannot open" in missing.stderr


def test_console_script_is_declared():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["flowbook-tf1"] == "flowbook.tf1:main"


def test_tensorboard_reads_and_writes_through_flowbook_while_aliased(tmp_path):
    code = textwrap.dedent(
        """
        import sys
        from flowbook import tf1
        tf1.install()
        import flowbook as fb
        from tensorboard.compat import tf as tb_tf
        from tensorboard.backend.event_processing import event_accumulator as ea
        logdir = sys.argv[1]
        with fb.Session() as sess:
            x = fb.placeholder(fb.float32, [])
            s = fb.summary.scalar("loss", x)
            with fb.summary.FileWriter(logdir, sess.graph) as w:
                for step in range(3):
                    w.add_summary(sess.run(s, {x: step * 1.5}), step)
        print("found", tb_tf.__name__, tb_tf.io.gfile.GFile is fb.gfile.GFile)
        acc = ea.EventAccumulator(logdir)
        acc.Reload()
        print("scalars", [(e.step, e.value) for e in acc.Scalars("loss")])
        print("graph", len(acc.Graph().node))
        """
    )
    out = _run("-c", code, str(tmp_path / "logs"))
    assert out.returncode == 0, out.stderr
    assert "found flowbook True" in out.stdout  # TensorBoard took flowbook for tensorflow
    assert "scalars [(0, 0.0), (1, 1.5), (2, 3.0)]" in out.stdout
    assert "graph 3" in out.stdout


# ------------------------------------------------------------ the alias
def test_alias_maps_tensorflow_names_and_is_removed_cleanly(alias):
    import tensorflow as tf
    import tensorflow.compat.v1 as v1
    import tensorflow.train
    from tensorflow.examples.tutorials.mnist import input_data as mnist_helper

    assert tf is fb and v1 is fb and tensorflow.train is fb.train
    assert mnist_helper is input_data
    with pytest.raises(ModuleNotFoundError, match="internal modules"):
        import tensorflow.python.ops
    from tensorflow.contrib import layers  # contrib's common corners are flowbook's

    assert layers is fb.contrib.layers
    with pytest.raises(ModuleNotFoundError, match="public"):
        import tensorflow.contrib.slim
    tf1.install()  # twice: harmless
    tf1.uninstall()
    assert not any(n == "tensorflow" or n.startswith("tensorflow.") for n in sys.modules)
    assert not tf1.is_installed()
    if not REAL_TF:
        with pytest.raises(ModuleNotFoundError):
            import tensorflow


def test_alias_refuses_when_the_real_tensorflow_is_imported(monkeypatch):
    import types

    monkeypatch.setitem(sys.modules, "tensorflow", types.ModuleType("tensorflow"))
    with pytest.raises(RuntimeError, match="real tensorflow"):
        tf1.install()


def test_as_tensorflow_is_scoped():
    with tf1.as_tensorflow() as tf:
        assert tf is fb and sys.modules["tensorflow"] is fb
    assert "tensorflow" not in sys.modules


# ------------------------------------------------------ the MNIST stand-in
def test_read_data_sets_looks_like_mnist():
    mnist = input_data.read_data_sets("MNIST_data/", one_hot=True)
    train, val, test = mnist
    assert train.images.shape[1:] == (784,) and train.images.dtype == np.float32
    assert train.labels.shape[1:] == (10,) and set(np.unique(train.labels)) == {0.0, 1.0}
    assert train.images.min() >= 0.0 and train.images.max() <= 1.0
    n = train.num_examples + val.num_examples + test.num_examples
    assert n == 1797 and val.num_examples == round(5000 * 1347 / 60000)
    xs, ys = train.next_batch(100)
    assert xs.shape == (100, 784) and ys.shape == (100, 10)
    plain = input_data.read_data_sets(None, reshape=False, dtype=fb.uint8, validation_size=0)
    assert plain.train.images.shape[1:] == (28, 28, 1) and plain.train.images.dtype == np.uint8
    assert plain.validation.num_examples == 0 and plain.train.labels.ndim == 1
    # the 28x28 images are the 8x8 digits scaled up: the mean brightness stays
    small = fb.datasets.load_digits(seed=0).test.images[:5].reshape(5, 8, 8)
    assert np.allclose(
        input_data.upscale(small.reshape(5, 64)).mean(axis=(1, 2)),
        small.mean(axis=(1, 2)),
        atol=0.05,
    )
    with pytest.raises(ValueError, match="fake_data"):
        input_data.read_data_sets("x", fake_data=True)


# ----------------------------------------------------------------- TFRecord
def test_tfrecord_round_trip_resumes_and_detects_damage(tmp_path):
    path = tmp_path / "r.tfrecord"
    with TFRecordWriter(str(path)) as w:
        w.write(b"a")
        w.write("bé")
    it = tf_record_iterator(str(path))
    assert list(it) == [b"a", "bé".encode()]
    with open(path, "ab") as f:  # a record half written, then finished: read once complete
        raw = path.read_bytes()[: 12 + 1 + 4]  # the first record again, framed
        f.write(raw[:7])
        f.flush()
        with pytest.raises(errors.DataLossError, match="truncated record at offset 36"):
            next(it)  # cut in its length: named, and the iterator keeps its place
        f.write(raw[7:])
    assert list(it) == [b"a"]
    data = bytearray(path.read_bytes())
    data[12] ^= 0xFF  # the first record's data byte
    path.write_bytes(bytes(data))
    with pytest.raises(errors.DataLossError, match="offset 0"):
        next(tf_record_iterator(str(path)))
    with pytest.raises(errors.NotFoundError):
        tf_record_iterator(str(tmp_path / "missing"))
    assert struct.unpack("<Q", data[:8])[0] == 1
    assert fb.io.tf_record_iterator is tf_record_iterator and fb.io.TFRecordWriter is TFRecordWriter


# ------------------------------------------------------------ the notebook magic
@pytest.fixture
def shell(tmp_path, monkeypatch):
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    from flowbook.framework.source import set_current_cell

    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    ip = InteractiveShell.instance(config=config)
    ip.run_cell("%load_ext flowbook", store_history=True)
    yield ip
    ip.run_cell("%unload_ext flowbook")
    InteractiveShell.clear_instance()
    set_current_cell(None)
    tf1.uninstall()


def test_notebook_magic_makes_tensorflow_flowbook(shell):
    assert not shell.run_cell("%flowbook_as_tensorflow", store_history=True).error_in_exec
    result = shell.run_cell(
        "import tensorflow as tf\n"
        "from tensorflow.examples.tutorials.mnist import input_data\n"
        "x = tf.placeholder(tf.float32, [None, 784])\n"
        "n = input_data.read_data_sets('MNIST_data', one_hot=True).train.images.shape[1]\n"
        "with tf.Session() as sess:\n"
        "    value = sess.run(tf.reduce_sum(x), {x: [[1.0] * n]})",
        store_history=True,
    )
    assert result.error_in_exec is None
    assert shell.user_ns["tf"] is fb and shell.user_ns["value"] == 784.0
    assert shell.run_cell("%flowbook_as_tensorflow off").error_in_exec is None
    assert "tensorflow" not in sys.modules
    bad = shell.run_cell("%flowbook_as_tensorflow sideways")
    assert isinstance(bad.error_in_exec, ValueError)


def test_plain_extension_load_does_not_alias(shell):
    assert "tensorflow" not in sys.modules and not tf1.is_installed()
