"""What the tutorial generators share: the cell makers, and writing a notebook for the kernel.

Each ``make_*.py`` beside this file lists its cells and calls ``write``; the
notebooks are committed.  Cell ids are numbered, not random, so writing a
notebook again changes only what its generator changed.
"""

from __future__ import annotations

from pathlib import Path

import nbformat as nbf

TUTORIALS = Path(__file__).resolve().parent.parent
KERNELSPEC = {"display_name": "Flowbook (Python 3)", "language": "python", "name": "flowbook"}

md, code = nbf.v4.new_markdown_cell, nbf.v4.new_code_cell


def write(name: str, cells: list) -> None:
    """Write ``cells`` as ``tutorials/<name>``, opening with the Flowbook kernel."""
    for i, cell in enumerate(cells):
        cell["id"] = f"cell-{i:02d}"
    nb = nbf.v4.new_notebook(cells=cells)
    nb["metadata"] = {"kernelspec": KERNELSPEC, "language_info": {"name": "python"}}
    nbf.write(nb, TUTORIALS / name)
