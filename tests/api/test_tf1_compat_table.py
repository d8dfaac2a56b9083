"""benchmarks/tf1_compat.py: the TF1 compatibility table, on a small list of names."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import flowbook as tf

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "tf1_compat.py"


def _run(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FLOWBOOK_NO_GPU": "1"}
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=300
    )


def test_table_counts_present_names_per_module(tmp_path):
    names = tmp_path / "names.txt"
    names.write_text(
        "# a comment\n"
        "tf placeholder\ntf Session\ntf no_such_name\ntf compat\ntf NodeDef\n"
        "tf.nn relu\ntf.nn no_such_op\n"
        "tf.gfile Exists\ntf.gfile Walk\n"
        "tf.nosuchmodule thing\n"
    )
    out_json = tmp_path / "out" / "compat.json"
    out = _run("--names", str(names), "--out", str(out_json))
    assert out.returncode == 0, out.stderr
    table = json.loads(out_json.read_text())["modules"]
    assert table["tf"] == {"total": 5, "present": 4, "missing": ["no_such_name"], "stubs": []}
    assert (table["tf.nn"]["present"], table["tf.nn"]["missing"]) == (1, ["no_such_op"])
    assert table["tf.gfile"]["present"] == 2
    assert table["tf.nosuchmodule"] == {"total": 1, "present": 0, "missing": ["thing"], "stubs": []}
    assert "| `tf` | 5 | 4 | 80% |" in out.stdout
    assert "| all of these | 10 | 7 | 70% |" in out.stdout
    only = _run("--names", str(names), "--out", str(out_json), "--modules", "tf.nn")
    assert "| `tf.nn` | 2 | 1 | 50% |" in only.stdout and "`tf` |" not in only.stdout


def test_stubs_do_not_count(monkeypatch, tmp_path):
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import tf1_compat
    finally:
        sys.path.remove(str(SCRIPT.parent))

    def fake_op(x):
        """Not there yet."""
        raise NotImplementedError("later")

    def real_op(x):
        if x is None:
            raise NotImplementedError("no None")
        return x

    monkeypatch.setattr(tf, "fake_op", fake_op, raising=False)
    monkeypatch.setattr(tf, "real_op", real_op, raising=False)
    table = tf1_compat.check({"tf": ["fake_op", "real_op", "placeholder"]})
    assert table["tf"]["stubs"] == ["fake_op"] and table["tf"]["present"] == 2


def test_missing_names_file_says_so_and_exits_0(tmp_path):
    out = _run("--names", str(tmp_path / "absent.txt"), "--out", str(tmp_path / "x.json"))
    assert out.returncode == 0 and "no list of TF1 names" in out.stdout
    assert not (tmp_path / "x.json").exists()


def test_flowbook_has_no_not_implemented_stubs():
    """No public name of flowbook's TF1 namespaces is a function that only raises."""
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import tf1_compat
    finally:
        sys.path.remove(str(SCRIPT.parent))
    stubs = []
    for module in (tf, tf.nn, tf.train, tf.losses, tf.gfile, tf.logging, tf.test, tf.compat):
        for name in dir(module):
            if not name.startswith("_") and tf1_compat.is_stub(getattr(module, name, None)):
                stubs.append(f"{module.__name__}.{name}")
    assert not stubs
