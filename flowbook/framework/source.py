"""Where an op was created: the user's file or notebook cell and line.

Every op records the first stack frame outside the flowbook package when it
is built (``capture``, a few frame hops, cheap enough for every op): its file,
line and function name (TF1's ``Operation.traceback`` is built from them).  The
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

import ast
import functools
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

    __slots__ = ("cell", "file", "function", "line")

    def __init__(self, file: str, line: int, cell: Any = None, function: str = "") -> None:
        self.file = file  # the code's filename (a temporary file for a notebook cell)
        self.line = line  # 1-based line within that file or cell
        self.cell = cell  # the Cell run that created it, when the notebook extension runs
        self.function = function  # the enclosing function's name ("<module>" at top level)

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

    def statement(self) -> tuple[int, str]:
        """The first line of the statement the site's line belongs to, and its text, stripped.

        A call spread over lines (``loss = tf.reduce_mean(`` / ``tf.square(y - t))``) is one
        statement: its ops all say the statement starts on the first line.  The innermost
        simple statement counts (a loop's body line, not the loop); (line, its text) where
        the source cannot be read or parsed.

        >>> capture().statement()[1].startswith(">>> ")  # doctest: +SKIP
        """
        start = _statement_starts("".join(linecache.getlines(self.file))).get(self.line, self.line)
        return start, linecache.getline(self.file, start).strip()

    def __repr__(self) -> str:
        return f"Site({self.describe()!r})"


UNKNOWN = Site("<unknown>", 0)

_COMPOUND = (
    ast.For, ast.AsyncFor, ast.While, ast.If, ast.With, ast.AsyncWith, ast.Try, ast.TryStar,
    ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Match,
)  # fmt: skip


@functools.lru_cache(maxsize=128)
def _statement_starts(source: str) -> dict[int, int]:
    """Each line of ``source`` inside a simple statement -> that statement's first line.

    >>> _statement_starts("x = f(1,\\n      2)\\ny = 3\\n")
    {1: 1, 2: 1, 3: 3}
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return {}
    starts: dict[int, int] = {}
    spans = sorted(
        (
            (s.lineno, s.end_lineno or s.lineno)
            for s in ast.walk(tree)
            if isinstance(s, ast.stmt) and not isinstance(s, _COMPOUND)
        ),
        key=lambda span: span[0] - span[1],  # widest first: inner statements overwrite
    )
    for first, last in spans:
        for line in range(first, last + 1):
            starts[line] = first
    return starts


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
    code = frame.f_code
    return Site(code.co_filename, frame.f_lineno, current_cell, code.co_name)


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
