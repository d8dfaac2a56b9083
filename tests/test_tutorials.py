"""Every tutorial notebook runs top to bottom without an error (nbclient)."""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

pytestmark = pytest.mark.tutorials

TUTORIALS = sorted((Path(__file__).parent.parent / "tutorials").glob("*.ipynb"))


@pytest.mark.parametrize("path", TUTORIALS, ids=lambda p: p.name)
def test_tutorial_runs_top_to_bottom(path, tmp_path):
    shutil.copytree(path.parent / "data", tmp_path / "data")  # files the tutorials read
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=300,
        kernel_name=nb.metadata.kernelspec.name,  # "flowbook": the kernel the README opens them with
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()
    errors = [
        o
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
        if o.output_type == "error"
    ]
    assert not errors


@pytest.mark.parametrize("path", TUTORIALS, ids=lambda p: p.name)
def test_tutorials_open_with_the_flowbook_kernel_and_show_the_graph(path):
    nb = nbformat.read(path, as_version=4)
    assert nb.metadata.kernelspec.name == "flowbook"
    assert nb.metadata.kernelspec.display_name == "Flowbook (Python 3)"
    if path.name[:2] in ("01", "02", "03", "05"):
        assert any("tf.show(" in c.source for c in nb.cells if c.cell_type == "code")


def test_there_is_a_first_tutorial():
    assert any(p.name == "01_graphs_and_sessions.ipynb" for p in TUTORIALS)
