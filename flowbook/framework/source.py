"""Where an op was created: the user's file or notebook cell and line.

Every op records the first stack frame outside the flowbook package when it
is built (``capture``, a few frame hops, cheap enough for every op).  The
frame's filename is only turned into words when a message needs it
(``Site.describe``): a notebook cell's file is shown as ``cell [4], line 2``
using IPython's map from cell files to execution counts, anything else as
``file.py:12``.

While a notebook cell runs, the notebook extension (``flowbook.notebook``)
sets the module-level ``current_cell`` to a :class:`Cell` (the front end's
cell id and the run's ``In [n]``), and ``capture`` stores it in every site it
makes: that is how each op knows the cell run that created it.  Outside a
notebook it stays None, and capture pays one global read for it.

    >>> site = capture(); site.line > 0
    True
"""

from __future__ import annotations

import linecache
import os
import sys
from dataclasses import dataclass
from typing import Any

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # flowbook/


@dataclass(slots=True)
class Cell:
    """One run of a notebook cell: which cell, and its ``In [n]`` number.

    Mutable on purpose: the notebook extension settles ``execution_count`` when the
    cell ends (IPython 8 and 9 count a cell at different moments), and every op
    the run created sees the settled number through the one shared object.

    >>> Cell("5f3c-a1", 4).execution_count
    4
    """

    id: str  # the front end's cell id, or "sha1:<hex>" of the source when it sends none
    execution_count: int | None  # the In [n] of this run


current_cell: Cell | None = None  # the cell now running (set by flowbook.notebook), else None


def set_current_cell(cell: Cell | None) -> None:
    """Make ``cell`` the one new sites record (None: no cell is running).

    >>> set_current_cell(Cell("c1", 1)); capture().cell
    Cell(id='c1', execution_count=1)
    >>> set_current_cell(None); capture().cell is None
    True
    """
    global current_cell
    current_cell = cell


class Site:
    """A creation site: filename, line, and (in a notebook) the cell.

    >>> Site("model.py", 12).describe()
    'model.py:12'
    """

    __slots__ = ("cell", "file", "line")

    def __init__(self, file: str, line: int, cell: Any = None) -> None:
        self.file = file  # the code's filename (a temporary file for a notebook cell)
        self.line = line  # 1-based line within that file or cell
        self.cell = cell  # the Cell run that created it, when the notebook extension runs

    def execution_count(self) -> int | None:
        """The ``In [n]`` number of the cell this site is in, if it is a cell."""
        ip = _ipython()
        if ip is None:
            return None
        number = getattr(ip.compile, "_filename_map", {}).get(self.file)
        return number if isinstance(number, int) else None

    def describe(self) -> str:
        """``cell [4], line 2`` in a notebook, ``path/file.py:12`` elsewhere."""
        count = self.execution_count()
        if count is not None:
            return f"cell [{count}], line {self.line}"
        if self.file.startswith("<"):
            return f"{self.file}, line {self.line}"
        return f"{_short(self.file)}:{self.line}"

    def source_line(self) -> str:
        """The text of the line, stripped, or '' if it cannot be read."""
        return linecache.getline(self.file, self.line).strip()

    def __repr__(self) -> str:
        return f"Site({self.describe()!r})"


UNKNOWN = Site("<unknown>", 0)


def capture(skip: int = 1) -> Site:
    """The first frame outside flowbook, above the caller's ``skip`` frames."""
    try:
        frame = sys._getframe(skip)
    except ValueError:
        return UNKNOWN
    while frame is not None and frame.f_code.co_filename.startswith(_PKG_DIR):
        frame = frame.f_back
    if frame is None:
        return UNKNOWN
    return Site(frame.f_code.co_filename, frame.f_lineno, current_cell)


def _short(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return rel if not rel.startswith("..") else path


def _ipython() -> Any:
    mod = sys.modules.get("IPython")
    if mod is None:
        return None
    try:
        return mod.get_ipython()
    except Exception:
        return None
