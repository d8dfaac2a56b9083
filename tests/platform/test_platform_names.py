"""TF1's utilities: tf.gfile / tf.io.gfile, tf.flags, tf.logging, tf.test, tf.compat.v1, protos."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
import unittest
from pathlib import Path

import numpy as np
import pytest

import flowbook as tf
from flowbook.framework import errors

ROOT = Path(__file__).resolve().parents[2]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "FLOWBOOK_NO_GPU": "1"}


# ------------------------------------------------------------------- gfile
def test_gfile_both_naming_styles_are_the_same_functions():
    assert tf.io.gfile is tf.gfile
    pairs = [("Exists", "exists"), ("MakeDirs", "makedirs"), ("MkDir", "mkdir"),
             ("ListDirectory", "listdir"), ("Glob", "glob"), ("Remove", "remove"),
             ("Rename", "rename"), ("Copy", "copy"), ("DeleteRecursively", "rmtree"),
             ("IsDirectory", "isdir"), ("Stat", "stat")]  # fmt: skip
    for tf1, tf2 in pairs:
        assert getattr(tf.gfile, tf1) is getattr(tf.io.gfile, tf2), tf1
    assert tf.gfile.Open is tf.gfile.FastGFile is tf.gfile.GFile is tf.io.gfile.GFile


def test_gfile_text_and_binary_files(tmp_path):
    path = str(tmp_path / "a.txt")
    with tf.gfile.GFile(path, "w") as f:
        f.write("héllo\r\n")
        f.write(b"second\n")  # bytes in a text file: decoded
    with tf.gfile.Open(path, "r") as f:
        assert f.read() == "héllo\r\nsecond\n"  # no newline translation
    with tf.gfile.GFile(path, "rb") as f:
        assert f.read() == "héllo\r\nsecond\n".encode()
    with tf.gfile.GFile(path, "a") as f:
        f.write("third\n")
    with tf.io.gfile.GFile(path) as f:
        assert list(f) == ["héllo\r\n", "second\n", "third\n"]
    with tf.gfile.FastGFile(path, "rb") as f:
        assert f.readline() == "héllo\r\n".encode()
        assert f.tell() == len("héllo\r\n".encode())
        f.seek(0)
        assert f.read(2) == b"h\xc3"
    bin_path = str(tmp_path / "b.bin")
    with tf.io.gfile.GFile(bin_path, "wb") as f:
        f.write(bytes(range(256)))
        f.write("é")  # str in a binary file: encoded
        f.flush()
        assert f.size() == 258
    assert tf.gfile.GFile(bin_path, "rb").read() == bytes(range(256)) + "é".encode()
    assert tf.gfile.Stat(bin_path).length == 258 and not tf.gfile.Stat(bin_path).is_directory


def test_gfile_errors_are_tensorflows(tmp_path):
    missing = str(tmp_path / "missing")
    f = tf.gfile.GFile(missing)  # opens lazily, as TF's does
    with pytest.raises(errors.NotFoundError, match="missing"):
        f.read()
    with pytest.raises(errors.NotFoundError):
        tf.gfile.Remove(missing)
    with pytest.raises(errors.NotFoundError):
        tf.gfile.Stat(missing)
    with pytest.raises(errors.NotFoundError):
        tf.gfile.ListDirectory(missing)
    with pytest.raises(errors.NotFoundError):
        tf.gfile.DeleteRecursively(missing)
    with pytest.raises(errors.NotFoundError):
        tf.gfile.Rename(missing, str(tmp_path / "x"))
    with pytest.raises(errors.NotFoundError):
        tf.gfile.Copy(missing, str(tmp_path / "x"))
    with pytest.raises(errors.NotFoundError):
        tf.gfile.MkDir(str(tmp_path / "no" / "parent"))
    tf.gfile.MkDir(str(tmp_path / "d"))
    with pytest.raises(errors.AlreadyExistsError):
        tf.gfile.MkDir(str(tmp_path / "d"))
    tf.gfile.MakeDirs(str(tmp_path / "d"))  # existing: fine
    with pytest.raises(errors.FailedPreconditionError):
        tf.gfile.GFile(str(tmp_path / "d")).read()
    with pytest.raises(errors.InvalidArgumentError, match="mode"):
        tf.gfile.GFile(str(tmp_path / "d"), "rw")
    assert issubclass(errors.NotFoundError, errors.OpError)


def test_gfile_directories_rename_copy_glob_walk(tmp_path):
    root = str(tmp_path / "root")
    tf.gfile.MakeDirs(os.path.join(root, "a", "b"))
    assert tf.gfile.IsDirectory(root) and tf.io.gfile.isdir(os.path.join(root, "a", "b"))
    for name in ("x.txt", "y.txt", os.path.join("a", "z.log")):
        with tf.gfile.GFile(os.path.join(root, name), "w") as f:
            f.write(name)
    assert tf.gfile.ListDirectory(root) == ["a", "x.txt", "y.txt"]
    assert tf.io.gfile.listdir(os.path.join(root, "a")) == ["b", "z.log"]
    assert tf.gfile.Glob(os.path.join(root, "*.txt")) == [
        os.path.join(root, "x.txt"),
        os.path.join(root, "y.txt"),
    ]
    assert tf.io.gfile.glob([os.path.join(root, "*", "*.log")]) == [
        os.path.join(root, "a", "z.log")
    ]
    assert tf.gfile.Stat(root).is_directory

    x, y = os.path.join(root, "x.txt"), os.path.join(root, "y.txt")
    with pytest.raises(errors.AlreadyExistsError):
        tf.gfile.Rename(x, y)
    with pytest.raises(errors.AlreadyExistsError):
        tf.gfile.Copy(x, y)
    tf.gfile.Copy(x, y, overwrite=True)
    assert tf.gfile.GFile(y).read() == "x.txt"
    tf.io.gfile.rename(x, os.path.join(root, "w.txt"))
    assert not tf.gfile.Exists(x) and tf.gfile.Exists(os.path.join(root, "w.txt"))
    tf.io.gfile.rename(os.path.join(root, "w.txt"), y, overwrite=True)
    assert tf.gfile.GFile(y).read() == "x.txt"
    tf.io.gfile.copy(y, os.path.join(root, "c.txt"))
    tf.gfile.Remove(os.path.join(root, "c.txt"))

    walked = list(tf.gfile.Walk(root))
    assert walked == [
        (root, ["a"], ["y.txt"]),
        (os.path.join(root, "a"), ["b"], ["z.log"]),
        (os.path.join(root, "a", "b"), [], []),
    ]
    assert list(tf.gfile.Walk(root, in_order=False))[-1][0] == root
    assert next(d for d, _, _ in tf.io.gfile.walk(root, topdown=False)) == os.path.join(
        root, "a", "b"
    )
    assert list(tf.gfile.Walk(str(tmp_path / "missing"))) == []
    tf.gfile.DeleteRecursively(os.path.join(root, "a"))
    assert tf.gfile.ListDirectory(root) == ["y.txt"]
    tf.io.gfile.rmtree(root)
    assert not tf.io.gfile.exists(root)


# ------------------------------------------------------------------- flags
def test_flags_define_and_parse():
    assert tf.app.flags is tf.flags
    fv = tf.flags.FlagValues()
    tf.flags.DEFINE_string("data_dir", "/tmp/data", "where", flag_values=fv)
    tf.flags.DEFINE_integer("steps", 10, "steps", flag_values=fv)
    tf.flags.DEFINE_float("lr", 0.5, "rate", flag_values=fv)
    tf.flags.DEFINE_boolean("fake", False, "fake data", flag_values=fv)
    tf.flags.DEFINE_list("layers", ["64", "10"], "sizes", flag_values=fv)
    rest = fv(["prog", "--steps=3", "--lr", "0.1", "--fake", "--layers=8,4", "extra"])
    assert rest == ["prog", "extra"]
    assert (fv.data_dir, fv.steps, fv.lr, fv.fake, fv.layers) == (
        "/tmp/data",
        3,
        0.1,
        True,
        ["8", "4"],
    )
    with pytest.raises(tf.flags.IllegalFlagValueError):
        fv(["prog", "--steps=abc"])


def test_global_flags_parse_leniently_on_first_read(monkeypatch):
    from absl import flags as absl_flags

    name = "fb_test_lenient_batch"
    tf.flags.DEFINE_integer(name, 32, "batch size")
    try:
        absl_flags.FLAGS.unparse_flags()
        monkeypatch.setattr(sys, "argv", ["kernel", "-f", "kernel.json", f"--{name}=7"])
        assert getattr(tf.flags.FLAGS, name) == 7  # parsed sys.argv, ignoring the unknown -f
        assert tf.app.flags.FLAGS.is_parsed()
        setattr(tf.flags.FLAGS, name, 9)
        assert absl_flags.FLAGS[name].value == 9 and name in tf.flags.FLAGS
    finally:
        delattr(absl_flags.FLAGS, name)


def test_app_run_parses_flags_and_passes_the_rest_to_main(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        textwrap.dedent(
            """
            import flowbook as tf
            flags = tf.app.flags
            flags.DEFINE_integer("steps", 5, "training steps")
            flags.DEFINE_string("name", "run", "a name")
            FLAGS = flags.FLAGS

            def main(argv):
                print("steps", FLAGS.steps, "name", FLAGS.name, "argv", argv[1:])
                return 0

            if __name__ == "__main__":
                tf.app.run()
            """
        )
    )
    cmd = [sys.executable, str(script), "--steps=12", "positional", "--unknown=1"]
    out = subprocess.run(cmd, capture_output=True, text=True, env=_env(), timeout=120)
    assert out.returncode == 0, out.stderr
    assert "steps 12 name run argv ['positional', '--unknown=1']" in out.stdout
    bad = subprocess.run(
        [sys.executable, str(script), "--steps=abc"],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=120,
    )
    assert bad.returncode == 1 and "Flags parsing error" in bad.stderr and "steps" in bad.stderr


# ----------------------------------------------------------------- logging
def test_logging_levels_and_verbosity(caplog):
    assert (
        tf.logging.DEBUG,
        tf.logging.INFO,
        tf.logging.WARN,
        tf.logging.ERROR,
        tf.logging.FATAL,
    ) == (
        logging.DEBUG,
        logging.INFO,
        logging.WARNING,
        logging.ERROR,
        logging.CRITICAL,
    )
    old = tf.logging.get_verbosity()
    caplog.set_level(logging.DEBUG, logger="")  # the root lets everything through
    try:
        tf.logging.set_verbosity(tf.logging.WARN)
        tf.logging.info("hidden %d", 1)
        tf.logging.warning("shown %d", 2)
        tf.logging.error("bad")
        tf.logging.fatal("worse")
        tf.logging.set_verbosity(tf.logging.DEBUG)
        assert tf.logging.get_verbosity() == tf.logging.DEBUG
        tf.logging.debug("dbg")
        tf.logging.info("step %d loss %.1f", 3, 0.5)
        tf.logging.warn("warned")
        tf.logging.log(tf.logging.ERROR, "logged")
    finally:
        tf.logging.set_verbosity(old)
    mine = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "flowbook"]
    assert mine == [
        ("WARNING", "shown 2"),
        ("ERROR", "bad"),
        ("CRITICAL", "worse"),
        ("DEBUG", "dbg"),
        ("INFO", "step 3 loss 0.5"),
        ("WARNING", "warned"),
        ("ERROR", "logged"),
    ]
    assert all(
        r.filename == "test_platform_names.py" for r in caplog.records if r.name == "flowbook"
    )


def test_log_every_n_and_first_n_count_per_call_site(caplog):
    caplog.set_level(logging.INFO, logger="flowbook")
    for i in range(7):
        tf.logging.log_every_n(tf.logging.WARN, "every %d", 3, i)
        tf.logging.log_first_n(tf.logging.WARN, "first %d", 2, i)
    tf.logging.log_first_n(tf.logging.WARN, "other site %d", 1, 0)  # its own count
    tf.logging.log_if(tf.logging.WARN, "if %s", False, "no")
    tf.logging.log_if(tf.logging.WARN, "if %s", True, "yes")
    got = [r.getMessage() for r in caplog.records if r.name == "flowbook"]
    assert got == ["every 0", "first 0", "first 1", "every 3", "every 6", "other site 0", "if yes"]


def test_logging_writes_to_stderr_in_a_plain_script():
    code = "import flowbook as tf; tf.logging.set_verbosity(tf.logging.INFO); tf.logging.info('hi %s', 'there')"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=_env(), timeout=120
    )
    assert out.returncode == 0 and out.stderr.strip().endswith("INFO:flowbook:hi there")
    quiet = "import flowbook as tf; tf.logging.info('not by default')"
    out = subprocess.run(
        [sys.executable, "-c", quiet], capture_output=True, text=True, env=_env(), timeout=120
    )
    assert "not by default" not in out.stderr


# -------------------------------------------------------------------- test
class _Sample(tf.test.TestCase):
    def test_sessions_and_evaluate(self):
        self.assertEqual(len(tf.get_default_graph().get_operations()), 0)  # fresh graph
        x = tf.constant([1.0, 2.0])
        with self.cached_session() as sess:
            self.assertIs(tf.get_default_session(), sess)
            self.assertAllClose(self.evaluate(x * 2), [2.0, 4.0])
            with self.test_session() as again:
                self.assertIs(again, sess)
        with self.session() as other:
            self.assertIsNot(other, sess)
            self.assertAllEqual(x.eval(), [1.0, 2.0])
        self.assertAllClose(self.evaluate({"a": x, "b": [x, x]}), {"a": [1, 2], "b": [[1, 2], x]})
        with self.session(use_gpu=False):
            self.assertEqual(tf.constant(1.0).device, "/device:CPU:0")

    def test_assertions(self):
        x = tf.constant([1.0, 2.0, 3.0])
        self.assertAllClose(x, np.array([1.0, 2.0, 3.0 + 1e-7]))
        self.assertNotAllClose(x, [1.0, 2.0, 3.1])
        self.assertAllEqual(tf.constant([[1, 2]]), [[1, 2]])
        self.assertAllLessEqual(x, 3.0)
        self.assertAllLess(x, 3.5)
        self.assertAllGreater(x, 0.5)
        self.assertAllGreaterEqual(x, 1.0)
        self.assertAllInRange(x, 1.0, 3.0)
        self.assertNear(1.0, 1.05, 0.1)
        self.assertArrayNear([1.0, 2.0], [1.01, 2.0], 0.02)
        self.assertShapeEqual(np.zeros((3,)), x)
        self.assertDTypeEqual(np.zeros(2, np.float32), tf.float32)
        self.assertTrue(os.path.isdir(self.get_temp_dir()))
        with self.assertRaisesOpError("must be fed|feed"):
            self.evaluate(tf.placeholder(tf.float32, [1]) + 1.0)

    def test_failures_fail(self):
        x = tf.constant([1.0, 2.0, 3.0])
        for check in (
            lambda: self.assertAllClose(x, [1.0, 2.0, 3.01]),
            lambda: self.assertAllClose(x, [1.0, 2.0]),
            lambda: self.assertAllClose({"a": x}, {"b": x}),
            lambda: self.assertAllEqual(x, [1.0, 2.0, 4.0]),
            lambda: self.assertAllLessEqual(x, 2.5),
            lambda: self.assertAllGreater(x, 1.0),
            lambda: self.assertAllInRange(x, 1.0, 3.0, open_lower_bound=True),
            lambda: self.assertNotAllClose(x, x),
            lambda: self.assertNear(1.0, 2.0, 0.5),
        ):
            with self.assertRaises(AssertionError):
                check()


def test_testcase_methods_pass_and_catch_failures():
    suite = unittest.defaultTestLoader.loadTestsFromTestCase(_Sample)
    result = unittest.TestResult()
    suite.run(result)
    assert result.testsRun >= 3
    assert not result.failures and not result.errors, result.failures + result.errors


def test_test_main_runs_a_scripts_tests(tmp_path):
    script = tmp_path / "my_test.py"
    script.write_text(
        textwrap.dedent(
            """
            import flowbook as tf

            class T(tf.test.TestCase):
                def test_ok(self):
                    with self.test_session():
                        self.assertAllEqual(tf.constant(2) + 1, 3)

                def test_bad(self):
                    self.assertAllClose(tf.constant(1.0), 2.0)

            if __name__ == "__main__":
                tf.test.main()
            """
        )
    )
    out = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=_env(), timeout=120
    )
    assert (
        out.returncode == 1 and "Ran 2 tests" in out.stderr and "FAILED (failures=1)" in out.stderr
    )


# ------------------------------------------------------------ compat, protos
def test_compat_v1_is_flowbook_and_the_switches_are_no_ops():
    assert tf.compat.v1 is tf
    x = tf.compat.v1.placeholder(tf.float32, [None], name="x")
    tf.compat.v1.disable_eager_execution()
    tf.compat.v1.disable_v2_behavior()
    tf.disable_tensor_equality()
    assert not tf.executing_eagerly() and not tf.compat.v1.executing_eagerly()
    with tf.compat.v1.Session() as sess:
        assert sess.run(x * 2, {x: [1.0, 2.0]}).tolist() == [2.0, 4.0]
    assert tf.compat.as_bytes("é") == b"\xc3\xa9" and tf.compat.as_text(b"\xc3\xa9") == "é"
    with pytest.raises(TypeError):
        tf.compat.as_bytes(3)
    assert not hasattr(tf, "enable_eager_execution")  # flowbook has no eager mode to offer
    assert not tf.control_flow_v2_enabled() and not tf.resource_variables_enabled()
    assert tf.get_logger() is logging.getLogger("flowbook") and tf.OpError is errors.OpError
    assert tf.python_io.TFRecordWriter is tf.io.TFRecordWriter


def test_node_def_and_other_protos_are_tensorflows():
    node = tf.NodeDef(name="a", op="Const", device="/cpu:0")
    assert type(node).__module__ == "tensorboard.compat.proto.node_def_pb2"
    assert tf.GraphDef(node=[node]).node[0].name == "a"
    summary = tf.Summary(value=[tf.Summary.Value(tag="loss", simple_value=1.0)])
    assert summary.value[0].tag == "loss"
    with pytest.raises(AttributeError):
        tf.NoSuchThing


def test_device_function_sees_ops_and_can_use_node_def():
    seen = []

    def place(op):
        seen.append(isinstance(op, tf.NodeDef) or op.type)
        return "/cpu:0"

    with tf.device(place):
        c = tf.constant(1.0)
    assert seen == ["Const"] and c.device.lower().endswith("cpu:0")


def test_plain_import_does_not_alias_tensorflow():
    code = "import sys, flowbook; print('tensorflow' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=_env(), timeout=120
    )
    assert out.stdout.strip() == "False", out.stderr
