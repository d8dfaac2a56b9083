"""Short tracebacks for errors raised from flowbook, shown in the notebook.

A shape error raised while building, or a kernel error raised by the
executor, sits under a dozen frames of flowbook's own machinery (graph,
session, plan, executor, a compiled plan).  None of them helps a student.
The extension registers :func:`handler` with IPython's ``set_custom_exc`` for
``OpError``, ``ValueError`` and ``TypeError``; for an error that comes from
flowbook it shows:

- the user's frames only (notebook cells and the user's own files; flowbook,
  the standard library, installed packages and IPython are left out);
- the error class and message;
- for an ``OpError``, ``created at cell [n], line k: <source>``: the line that
  built the op that failed, which is usually where the fix goes.

"From flowbook" means an ``OpError``, or a ValueError/TypeError whose
innermost frame outside installed libraries (numpy...) is in the flowbook
package: a ValueError from the user's own code, or from a library the user
called directly, gets IPython's normal traceback, and so does everything under
``%xmode Verbose``.

    >>> import flowbook as fb
    >>> try:
    ...     fb.matmul(fb.ones([2, 3]), fb.ones([2, 3]))
    ... except ValueError as e:
    ...     err, tb = e, e.__traceback__
    >>> is_from_flowbook(err, tb), is_from_flowbook(ValueError("mine"), None)
    (True, False)
"""

from __future__ import annotations

import functools
import linecache
import os
import sys
from types import TracebackType
from typing import Any

from flowbook.framework.errors import OpError
from flowbook.framework.source import _PKG_DIR, Site
from flowbook.runtime.codegen.compile import PLAN_FILENAME as _PLAN_FILE

EXCEPTIONS: tuple[type[BaseException], ...] = (OpError, ValueError, TypeError)  # set_custom_exc's

_RED, _RESET = "\x1b[0;31m", "\x1b[0m"


def handler(
    shell: Any, etype: type, value: BaseException, tb: TracebackType | None, tb_offset: Any = None
) -> None:
    """IPython custom-exception handler: short traceback for flowbook's, normal for others."""
    mode = getattr(getattr(shell, "InteractiveTB", None), "mode", "")
    if mode == "Verbose" or not is_from_flowbook(value, tb):
        shell.showtraceback((etype, value, tb), tb_offset=tb_offset)
        return None
    shell._get_exc_info((etype, value, tb))  # stores sys.last_* for %debug and %tb
    shell._showtraceback(etype, value, short_traceback(value, tb))
    if getattr(shell, "call_pdb", False):
        shell.debugger(force=True)
    return None


def is_from_flowbook(value: BaseException, tb: TracebackType | None) -> bool:
    """Whether ``value`` is an OpError, or was raised from inside flowbook (see module doc)."""
    if isinstance(value, OpError):
        return True
    for filename, _ in reversed(_frames(tb)):
        if _is_flowbook(filename):
            return True
        if not _is_library(filename):
            return False  # user code raised it (or called a library that did)
    return False


def short_traceback(value: BaseException, tb: TracebackType | None) -> list[str]:
    """The lines shown: the user's frames, ``Class: message``, and the op's creating line.

    >>> short_traceback(ValueError("bad"), None)[-1].endswith("ValueError\\x1b[0m: bad")
    True
    """
    lines = [
        "Traceback (most recent call last; flowbook's own frames hidden, %xmode Verbose shows them):"
    ]
    for filename, lineno in _frames(tb):
        if _is_user(filename):
            site = Site(filename, lineno)
            lines.append(f"  {site.describe()}")
            text = linecache.getline(filename, lineno).strip()
            if text:
                lines.append(f"    {text}")
    lines.append(f"{_RED}{type(value).__name__}{_RESET}: {value}")
    op = getattr(value, "op", None) if isinstance(value, OpError) else None
    site = getattr(op, "site", None)
    if site is not None and site.line:
        text = site.source_line()
        lines.append(f"  created at {site.describe()}" + (f": {text}" if text else ""))
    return lines


def _frames(tb: TracebackType | None) -> list[tuple[str, int]]:
    frames = []
    while tb is not None:
        frames.append((tb.tb_frame.f_code.co_filename, tb.tb_lineno))
        tb = tb.tb_next
    return frames


def _is_flowbook(filename: str) -> bool:
    return filename.startswith(_PKG_DIR) or filename == _PLAN_FILE


def _is_library(filename: str) -> bool:
    if filename.startswith("<"):
        return not _is_cell(filename)
    return filename.startswith(_library_dirs()) or f"{os.sep}site-packages{os.sep}" in filename


@functools.cache
def _library_dirs() -> tuple[str, ...]:
    """stdlib, purelib, platlib: frames there are never the user's."""
    import sysconfig  # lazy: only a traceback needs it, and import flowbook stays fast

    return tuple(
        {os.path.abspath(p) + os.sep for k, p in sysconfig.get_paths().items() if "lib" in k}
    )


def _is_user(filename: str) -> bool:
    return not _is_flowbook(filename) and not _is_library(filename)


def _is_cell(filename: str) -> bool:
    ip = sys.modules.get("IPython")
    shell = ip.get_ipython() if ip is not None else None
    return shell is not None and filename in getattr(shell.compile, "_filename_map", {})
