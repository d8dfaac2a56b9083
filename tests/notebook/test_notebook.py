"""The live notebook, Python side: cells own their ops, re-runs replace them, short tracebacks.

Three layers:

- ``Graph._remove_ops`` and the stale check, on plain graphs (no IPython);
- the extension in an in-process IPython shell (fast, exact outputs);
- a real kernel driven by nbclient, cell by cell as a user clicks them, both
  with the cell ids JupyterLab sends and without (the source-hash fallback),
  and a kernel started from the repository's ``Flowbook (Python 3)`` kernelspec.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest
from nbclient import NotebookClient

import flowbook as fb
from flowbook.framework.errors import FailedPreconditionError
from flowbook.framework.graph_keys import GraphKeys
from flowbook.framework.source import Cell, capture, set_current_cell
from flowbook.notebook import extension, tracebacks

ROOT = Path(__file__).resolve().parents[2]
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def names(ops):
    return sorted(op.name for op in ops)


# ------------------------------------------------------------ Graph._remove_ops
def build_layer():
    """What a cell might build: a scope, a variable, a matmul."""
    x = fb.placeholder(fb.float32, [None, 2], name="x")
    with fb.name_scope("layer1"):
        w = fb.Variable(fb.ones([2, 2]), name="w")
        y = fb.matmul(x, w)
    return x, w, y


def test_remove_ops_frees_names_so_a_rebuild_gets_the_same_ones(fresh_graph):
    g = fresh_graph
    build_layer()
    first = [op.name for op in g.get_operations()]
    g._remove_ops(g.get_operations())
    assert len(g) == 0
    build_layer()
    assert [op.name for op in g.get_operations()] == first
    assert not any(re.search(r"_\d+(/|$)", n) for n in first)


def test_remove_ops_lowers_the_uniquifier_of_a_suffixed_name(fresh_graph):
    g = fresh_graph
    a = fb.constant(1.0)  # "Const", one cell
    b = fb.constant(2.0)  # "Const_1", another cell
    assert (a.op.name, b.op.name) == ("Const", "Const_1")
    g._remove_ops([b.op])
    assert fb.constant(3.0).op.name == "Const_1"  # the other cell's re-run
    g._remove_ops([a.op])
    assert fb.constant(4.0).op.name == "Const"
    assert fb.constant(5.0).op.name == "Const_2"  # a genuinely new one skips the taken Const_1


def test_remove_ops_keeps_a_scope_that_other_ops_still_use(fresh_graph):
    g = fresh_graph
    with fb.name_scope("layer1"):
        keep = fb.constant(1.0, name="keep")
    with fb.name_scope("layer1/"):
        gone = fb.constant(2.0, name="gone")
    g._remove_ops([gone.op])
    with fb.name_scope("layer1"):  # "layer1" is still taken by layer1/keep
        again = fb.constant(3.0, name="gone")
    assert keep.op.name == "layer1/keep" and again.op.name == "layer1_1/gone"


def test_remove_ops_bumps_the_version_and_skips_ops_not_in_the_graph(fresh_graph):
    g = fresh_graph
    c = fb.constant(1.0)
    v = g.version
    assert g._remove_ops([c.op]) == {c.op}
    assert g.version == v + 1
    assert g._remove_ops([c.op]) == set()  # already gone: nothing changes
    assert g.version == v + 1


def test_remove_ops_cleans_collections(fresh_graph):
    g = fresh_graph
    _, w, y = build_layer()
    other = fb.Variable(0.0, name="other")
    fb.add_to_collection("mine", y)
    fb.add_to_collection("mine", y.op)
    ref = g.get_collection_ref(GraphKeys.GLOBAL_VARIABLES)
    assert w in ref
    g._remove_ops([op for op in g.get_operations() if op.name.startswith(("x", "layer1"))])
    assert fb.global_variables() == [other] and ref == [other]  # same list object, cleaned
    assert fb.trainable_variables() == [other]
    assert g.get_collection("mine") == []


def test_consumers_of_removed_ops_are_stale_until_their_cell_reruns(fresh_graph):
    g = fresh_graph
    a = fb.constant(1.0, name="a")
    b = fb.multiply(a, 2.0, name="b")  # another cell, reads a
    c = fb.add(b, 1.0, name="c")  # reads b: stale through it
    with fb.control_dependencies([a.op]):
        fb.no_op(name="d")  # control input only
    unrelated = fb.constant(5.0, name="unrelated")
    g._remove_ops([a.op])
    assert names(g.stale_ops()) == ["b", "c", "d"]
    fb.constant(1.0, name="a")  # the re-run of a's cell
    assert names(g.stale_ops()) == ["b", "c", "d"]
    g._remove_ops([b.op, b.op.inputs[1].op, c.op, c.op.inputs[1].op])  # b's cell re-runs
    assert names(g.stale_ops()) == ["d"]
    assert unrelated.op not in g.stale_ops()


def test_running_a_stale_op_names_it_its_cell_and_the_rerun(fresh_graph):
    g = fresh_graph
    set_current_cell(Cell("cell-a", 1))
    a = fb.constant(1.0, name="a")
    set_current_cell(Cell("cell-b", 2))
    b = fb.multiply(a, 2.0, name="b")
    c = fb.add(b, 1.0, name="c")
    set_current_cell(None)
    g._remove_ops([a.op], by=Cell("cell-a", 3))
    new_a = fb.constant(10.0, name="a")
    with fb.Session() as s:
        with pytest.raises(FailedPreconditionError) as e:
            s.run(c)
        assert e.value.op is b.op
        message = str(e.value)
        assert "Mul 'b'" in message and "is stale" in message
        assert (
            "its input 'a' (made by cell [1]) was replaced when that cell ran again, as cell [3]"
            in message
        )
        assert "Re-run cell [2]" in message
        assert float(s.run(c, {a: 4.0})) == 9.0  # fed: the removed op is not needed
        assert float(s.run(new_a)) == 10.0
        with pytest.raises(
            FailedPreconditionError,
            match=r"'a'.* was replaced when that cell ran again, as cell \[3\]",
        ):
            s.run(a)  # an old Python reference to the removed tensor


def test_a_recreated_variable_is_uninitialised_in_an_existing_session(fresh_graph):
    g = fresh_graph
    v = fb.Variable(1.0, name="v")
    s = fb.Session()
    s.run(v.initializer)
    assert float(s.run(v)) == 1.0
    g._remove_ops([op for op in g.get_operations() if op.name.startswith("v")])
    v2 = fb.Variable(2.0, name="v")
    assert v2.op.name == "v" and fb.global_variables() == [v2]
    with pytest.raises(FailedPreconditionError, match="uninitialized value v"):
        s.run(v2)
    s.run(fb.global_variables_initializer())
    assert float(s.run(v2)) == 2.0
    s.close()


def test_capture_records_the_current_cell():
    assert capture().cell is None
    set_current_cell(Cell("abc", 7))
    try:
        op = fb.constant(1.0).op
    finally:
        set_current_cell(None)
    assert op.site.cell == Cell("abc", 7)
    assert op.site.cell.id == "abc" and op.site.cell.execution_count == 7
    assert fb.constant(2.0).op.site.cell is None


# --------------------------------------------------------------- CellTracker
def info(source, cell_id=None):
    return SimpleNamespace(raw_cell=source, cell_id=cell_id, store_history=True)


def run_cell(tracker, shell, source, cell_id=None, body=None):
    shell.execution_count += 1
    tracker.pre_run_cell(info(source, cell_id))
    try:
        return body() if body else None
    finally:
        tracker.post_run_cell()


def test_tracker_replaces_a_reruns_ops_and_survives_a_graph_reset():
    shell = SimpleNamespace(execution_count=0)
    tracker = extension.CellTracker(shell)
    run_cell(tracker, shell, "a", "c1", lambda: fb.constant(1.0, name="a"))
    y = run_cell(
        tracker, shell, "y", "c2", lambda: fb.get_default_graph().get_tensor_by_name("a:0") * 2.0
    )
    run_cell(tracker, shell, "a", "c1", lambda: fb.constant(1.0, name="a"))
    g = fb.get_default_graph()
    assert [op.name for op in g.get_operations()] == ["mul/y", "mul", "a"]
    assert names(g.stale_ops()) == ["mul"]
    assert g.get_operation_by_name("a").site.cell == Cell("c1", 3)
    assert [op.name for op in tracker.ops_of("c2")] == ["mul/y", "mul"]
    assert y.op.site.cell == Cell("c2", 2)
    run_cell(tracker, shell, "reset", "c3", fb.reset_default_graph)
    run_cell(
        tracker, shell, "a", "c1", lambda: fb.constant(1.0, name="a")
    )  # new graph: nothing to remove
    assert [op.name for op in fb.get_default_graph().get_operations()] == ["a"]
    fb.reset_default_graph()  # outside any cell
    run_cell(tracker, shell, "a", "c1", lambda: fb.constant(1.0, name="a"))
    assert [op.name for op in fb.get_default_graph().get_operations()] == ["a"]


def test_tracker_falls_back_to_the_source_hash_without_cell_ids():
    shell = SimpleNamespace(execution_count=0)
    tracker = extension.CellTracker(shell)
    for _ in range(3):
        run_cell(tracker, shell, "b = tf.constant(1.0)", None, lambda: fb.constant(1.0))
    ops = fb.get_default_graph().get_operations()
    key = "sha1:" + hashlib.sha1(b"b = tf.constant(1.0)").hexdigest()[:16]
    assert [op.name for op in ops] == ["Const"] and ops[0].site.cell == Cell(key, 3)


class CountingShell:
    """A shell that counts cells as IPython 8 (after ``pre_run_cell``) or 9 (before it) does."""

    def __init__(self, counts_before_pre: bool) -> None:
        self.execution_count = 1
        self.counts_before_pre = counts_before_pre
        self.tracker: extension.CellTracker | None = None

    def run_cell(self, source, body=lambda: None, cell_id=None):
        count = self.execution_count
        if self.counts_before_pre:
            self.execution_count += 1
        if self.tracker is not None:
            self.tracker.pre_run_cell(info(source, cell_id))
        if self.tracker is None and source == "%load_ext flowbook":
            self.tracker = extension.CellTracker(self)  # what load_ipython_extension sets up
            self.tracker.count_seen = self.execution_count
        try:
            return body()
        finally:
            if not self.counts_before_pre:
                self.execution_count += 1
            self.tracker.post_run_cell(SimpleNamespace(execution_count=count))


@pytest.mark.parametrize("loaded_in_a_cell", [True, False], ids=["load_ext", "kernelspec"])
@pytest.mark.parametrize("counts_before_pre", [False, True], ids=["ipython8", "ipython9"])
def test_cells_get_their_in_number_whichever_order_ipython_counts(
    counts_before_pre, loaded_in_a_cell
):
    shell = CountingShell(counts_before_pre)
    if loaded_in_a_cell:
        shell.run_cell("%load_ext flowbook")  # In [1]
    else:  # the kernelspec loads it before the first cell
        shell.tracker = extension.CellTracker(shell)
    first = shell.run_cell("a", lambda: fb.constant(1.0, name="a"), "c1")
    second = shell.run_cell("b", lambda: fb.constant(2.0, name="b"), "c2")
    offset = 1 if loaded_in_a_cell else 0
    assert first.op.site.cell == Cell("c1", 1 + offset)
    assert second.op.site.cell == Cell("c2", 2 + offset)
    if loaded_in_a_cell:  # learnt before any op: right while the cell runs, not only after it
        seen = []
        shell.run_cell(
            "c", lambda: seen.append(fb.constant(3.0, name="c").op.site.cell.execution_count)
        )
        assert seen == [4]


def test_a_cell_that_builds_on_a_removed_tensor_is_marked_stale():
    shell = SimpleNamespace(execution_count=0)
    tracker = extension.CellTracker(shell)
    env = {}
    run_cell(tracker, shell, "x", "c1", lambda: env.update(x=fb.constant(1.0, name="x")))
    run_cell(tracker, shell, "x", "c1", lambda: None)  # edited: builds nothing now
    run_cell(tracker, shell, "y", "c2", lambda: env.update(y=env["x"] + 1.0))  # old reference
    assert env["y"].op in fb.get_default_graph().stale_ops()


# ------------------------------------------------------ in-process IPython shell
@pytest.fixture
def shell(tmp_path, monkeypatch):
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    ip = InteractiveShell.instance(config=config)
    ip.run_cell("%load_ext flowbook", store_history=True)
    yield ip
    ip.run_cell("%unload_ext flowbook")
    InteractiveShell.clear_instance()
    set_current_cell(None)


def test_extension_loads_once_and_unloads_cleanly(shell):
    assert "flowbook" in shell.extension_manager.loaded
    tracker = extension.tracker_for(shell)
    assert tracker is not None and shell.custom_exceptions == tracebacks.EXCEPTIONS
    fb.load_ipython_extension(shell)  # a second load (e.g. kernelspec + %load_ext) is a no-op
    assert shell.events.callbacks["pre_run_cell"].count(tracker.pre_run_cell) == 1
    fb.unload_ipython_extension(shell)
    assert tracker.pre_run_cell not in shell.events.callbacks["pre_run_cell"]
    assert shell.custom_exceptions == ()
    fb.load_ipython_extension(shell)  # so the fixture's %unload_ext finds it


def test_reload_ext_keeps_which_cell_made_which_ops(shell):
    cell = "import flowbook as tf\na = tf.constant(1.0, name='a')"
    shell.run_cell(cell, store_history=True)
    shell.run_cell("%reload_ext flowbook", store_history=True)
    shell.run_cell(cell, store_history=True)
    assert [op.name for op in fb.get_default_graph().get_operations()] == ["a"]


def test_extension_in_ipython_rerun_and_short_traceback(shell, capsys):
    shell.run_cell(
        "import flowbook as tf\nx = tf.constant(2.0, name='x')\ny = x * 3.0", store_history=True
    )
    cell = "z = tf.matmul(tf.ones([2, 3]), tf.ones([2, 3]))"
    shell.run_cell(cell, store_history=True)
    capsys.readouterr()
    shell.run_cell(
        "import flowbook as tf\nx = tf.constant(2.0, name='x')\ny = x * 3.0", store_history=True
    )
    g = fb.get_default_graph()
    assert names(g.get_operations()) == ["mul", "mul/y", "ones", "ones_1", "x"]
    assert (
        g.get_operation_by_name("mul").site.cell.execution_count == 4
    )  # In [1] loaded the extension
    result = shell.run_cell(cell, store_history=True)
    assert isinstance(result.error_in_exec, ValueError)
    out = ANSI.sub("", capsys.readouterr().out)
    assert "flowbook's own frames hidden" in out and "MatMul" in out
    assert "cell [5], line 1" in out and cell in out
    assert "flowbook/framework/graph.py" not in out and "flowbook/ops" not in out
    shell.run_cell("int('x')", store_history=True)
    out = ANSI.sub("", capsys.readouterr().out)
    assert "invalid literal" in out and "frames hidden" not in out  # IPython's own traceback


# ------------------------------------------------------- a real kernel (nbclient)
class LiveNotebook:
    """A kernel running a notebook's cells one at a time, in any order, as a user would.

    With ``cell_ids`` each execute request carries the cell's id in its
    metadata, as JupyterLab sends it; without, the kernel sees none (nbclient).
    """

    def __init__(self, sources, tmp_path, cell_ids=True, kernel_name="python3", allow_errors=False):
        self.nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
        self.client = NotebookClient(
            self.nb,
            timeout=120,
            kernel_name=kernel_name,
            allow_errors=allow_errors,
            resources={"metadata": {"path": str(tmp_path)}},
        )
        self.cell_ids = cell_ids
        self.current_id = None

    def __enter__(self):
        self._setup = self.client.setup_kernel()
        self._setup.__enter__()
        if self.cell_ids:
            kc = self.client.kc

            def execute(
                code,
                silent=False,
                store_history=True,
                user_expressions=None,
                allow_stdin=None,
                stop_on_error=True,
            ):
                content = {
                    "code": code, "silent": silent, "store_history": store_history,
                    "user_expressions": user_expressions or {}, "allow_stdin": False,
                    "stop_on_error": stop_on_error,
                }  # fmt: skip
                msg = kc.session.msg(
                    "execute_request", content, metadata={"cellId": self.current_id}
                )
                kc.shell_channel.send(msg)
                return msg["header"]["msg_id"]

            kc.execute = execute
        return self

    def __exit__(self, *exc):
        self._setup.__exit__(*exc)

    def key(self, i):
        """The key the extension gives cell ``i``: its id, or the hash of its source."""
        if self.cell_ids:
            return self.nb.cells[i].id
        return "sha1:" + hashlib.sha1(self.nb.cells[i].source.encode()).hexdigest()[:16]

    def run(self, i):
        cell = self.nb.cells[i]
        cell.outputs = []
        self.current_id = cell.id
        self.client.execute_cell(cell, i)
        return cell

    def stdout(self, i):
        cell = self.run(i)
        return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")

    def json(self, i):
        return json.loads(self.stdout(i).strip().splitlines()[-1])

    def error(self, i):
        cell = self.run(i)
        errors = [o for o in cell.outputs if o.output_type == "error"]
        assert errors, f"cell {i} raised nothing: {cell.outputs}"
        return errors[0], ANSI.sub("", "\n".join(errors[0].traceback))


MODEL = """import json
import flowbook as tf
a = tf.constant(1.0, name="a")
b = tf.constant(2.0)
with tf.name_scope("layer1"):
    y = tf.multiply(a, b)
    w = tf.Variable(3.0, name="w")"""
DEPENDENT = "z = y * 2.0\nzz = z + 1.0"
SUMMARY = """g = tf.get_default_graph()
print(json.dumps({
    "ops": [op.name for op in g.get_operations()],
    "stale": sorted(op.name for op in g.stale_ops()),
    "cells": {op.name: [op.site.cell.id, op.site.cell.execution_count] for op in g.get_operations() if op.site.cell},
    "variables": [v.op.name for v in tf.global_variables()],
}))"""
SESSION = """sess = tf.Session()
sess.run(tf.global_variables_initializer())
print(json.dumps({"w": float(sess.run(w)), "zz": float(sess.run(zz))}))"""
PROBE = """out = {}
try:
    sess.run(zz)
except tf.errors.FailedPreconditionError as e:
    out["stale_error"] = str(e)
try:
    sess.run(w)
except tf.errors.FailedPreconditionError as e:
    out["uninitialized_error"] = str(e)
out["y"] = float(sess.run(y))
print(json.dumps(out))"""
FETCH = "print(json.dumps({'zz': float(sess.run(zz))}))"


@pytest.mark.parametrize("cell_ids", [True, False], ids=["cell-ids", "source-hash"])
def test_rerunning_a_cell_in_a_kernel_replaces_its_ops(tmp_path, cell_ids):
    sources = ["%load_ext flowbook", MODEL, DEPENDENT, SUMMARY, SESSION, PROBE, FETCH]
    with LiveNotebook(sources, tmp_path, cell_ids=cell_ids) as nb:
        for i in (0, 1, 2):  # In [1], [2], [3]
            nb.run(i)
        first = nb.json(3)  # In [4]
        assert nb.json(4) == {"w": 3.0, "zz": 5.0}  # In [5]
        nb.run(1)  # In [6]: the model cell again
        second = nb.json(3)  # In [7]
        probe = nb.json(5)  # In [8]
        nb.run(2)  # In [9]: the dependent cell again
        third = nb.json(3)  # In [10]
        fetched = nb.json(6)  # In [11]

    model_ops = [
        "a",
        "Const",
        "layer1/Mul",
        "layer1/w/initial_value",
        "layer1/w",
        "layer1/w/Assign",
        "layer1/w/read",
    ]
    assert first["ops"] == [*model_ops, "mul/y", "mul", "add/y", "add"]
    assert sorted(second["ops"]) == sorted([*first["ops"], "init"])  # same names after the re-run
    assert not [n for n in second["ops"] if re.search(r"_\d+(/|$)", n)]  # no _1 copies
    assert second["variables"] == ["layer1/w"]  # the re-created variable, listed once
    assert second["stale"] == ["add", "init", "mul"]  # built on the replaced ops
    assert first["cells"]["layer1/Mul"] == [nb.key(1), 2]  # cell id and execution count
    assert second["cells"]["layer1/Mul"] == [nb.key(1), 6]
    assert second["cells"]["mul"] == [nb.key(2), 3] and second["cells"]["init"] == [nb.key(4), 5]

    stale = probe["stale_error"]
    assert "Mul 'mul' (cell [3], line 1) is stale" in stale
    assert (
        "its input 'layer1/Mul' (made by cell [2]) was replaced when that cell ran again, as cell [6]"
        in stale
    )
    assert "Re-run cell [3]" in stale
    assert "uninitialized value layer1/w" in probe["uninitialized_error"]
    assert probe["y"] == 2.0

    assert third["stale"] == ["init"]  # the dependent cell ran again: fresh, on the new ops
    assert sorted(third["ops"]) == sorted(second["ops"])
    assert third["cells"]["mul"] == [nb.key(2), 9]
    assert fetched == {"zz": 5.0}


TB_CELLS = [
    "%load_ext flowbook\nimport flowbook as tf",
    'v = tf.Variable(1.0, name="v")\nout = v * 2.0',
    "with tf.Session() as s:\n    s.run(out)",
    "z = tf.matmul(tf.ones([2, 3]), tf.ones([2, 3]))",
    "int('x')",
    "def helper():\n    return tf.reshape(tf.ones([4]), [3])",
    "r = helper()",
]


def test_short_tracebacks_in_a_kernel(tmp_path):
    with LiveNotebook(TB_CELLS, tmp_path, allow_errors=True) as nb:
        nb.run(0)
        nb.run(1)  # In [2]
        run_error, run_tb = nb.error(2)  # In [3]
        build_error, build_tb = nb.error(3)  # In [4]
        plain_error, plain_tb = nb.error(4)  # In [5]
        nb.run(5)  # In [6]
        helper_error, helper_tb = nb.error(6)  # In [7]

    assert run_error.ename == "FailedPreconditionError"
    assert "frames hidden" in run_tb and "cell [3], line 2" in run_tb and "s.run(out)" in run_tb
    assert 'created at cell [2], line 1: v = tf.Variable(1.0, name="v")' in run_tb
    assert "FailedPreconditionError: VariableV2 'v'" in run_tb
    assert (
        "flowbook/runtime/executor.py" not in run_tb and "flowbook/runtime/session.py" not in run_tb
    )
    assert "<flowbook plan>" not in run_tb and "site-packages" not in run_tb

    assert build_error.ename == "ValueError" and "MatMul 'MatMul' (cell [4], line 1)" in build_tb
    assert (
        "cell [4], line 1\n    z = tf.matmul" in build_tb
        and "flowbook/framework/graph.py" not in build_tb
    )

    assert plain_error.ename == "ValueError" and "invalid literal" in plain_tb
    assert "frames hidden" not in plain_tb  # not flowbook's: IPython's normal traceback

    assert helper_error.ename == "ValueError" and "Reshape" in helper_tb
    assert "cell [7], line 1\n    r = helper()" in helper_tb  # the user's frames, both cells
    assert "cell [6], line 2\n    return tf.reshape" in helper_tb


# ---------------------------------------------------------------- kernelspec
def test_kernelspec_files():
    spec = json.loads((ROOT / "kernels" / "flowbook" / "kernel.json").read_text())
    assert spec["display_name"] == "Flowbook (Python 3)" and spec["language"] == "python"
    assert (
        spec["argv"][:3] == ["python", "-m", "ipykernel_launcher"]
        and "--ext=flowbook" in spec["argv"]
    )
    wheel = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hatch"]["build"][
        "targets"
    ]["wheel"]
    assert wheel["shared-data"]["kernels/flowbook"] == "share/jupyter/kernels/flowbook"


def test_kernel_from_the_flowbook_kernelspec_has_the_extension_loaded(tmp_path, monkeypatch):
    data_dir = tmp_path / "jupyter-data"
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(data_dir))
    # In a venv jupyter_core looks in the environment's share/jupyter first, where
    # `pip install` put its own copy of the kernelspec: the one under test is the user's.
    monkeypatch.setenv("JUPYTER_PREFER_ENV_PATH", "0")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "jupyter",
            "kernelspec",
            "install",
            "--user",
            str(ROOT / "kernels" / "flowbook"),
        ],
        check=True,
        capture_output=True,
        env=os.environ.copy(),
    )
    listing = subprocess.run(
        [sys.executable, "-m", "jupyter", "kernelspec", "list", "--json"],
        check=True,
        capture_output=True,
        text=True,
        env=os.environ.copy(),
    )
    found = json.loads(listing.stdout)["kernelspecs"]["flowbook"]
    assert Path(found["resource_dir"]) == data_dir / "kernels" / "flowbook"
    assert found["spec"]["display_name"] == "Flowbook (Python 3)"

    cells = [
        "print('flowbook' in get_ipython().extension_manager.loaded)",
        "import flowbook as tf\na = tf.constant(1.0, name='a')",
        "print([op.name for op in tf.get_default_graph().get_operations()])",
    ]
    with LiveNotebook(cells, tmp_path, kernel_name="flowbook") as nb:
        loaded = nb.stdout(0)
        nb.run(1)
        nb.run(1)  # re-run: replaced, no "a_1"
        ops = nb.stdout(2)
    assert loaded.strip() == "True"
    assert ops.strip() == "['a']"
