"""Writing files whole, atomically: the one writer every file flowbook writes goes through.

Checkpoints and their ``checkpoint`` state file, ``write_graph`` and
``Profile.save_trace`` all call :func:`atomic_write`, which never lets a
reader (or a later run) see half a file:

1. **Temp file beside the target.**  The content goes to
   ``.<name>.<host>.<pid>.<token>.flowbook-tmp`` in the target's directory
   (same file system, so the rename below is atomic).  It is created with
   ``os.open(..., O_CREAT | O_EXCL, 0o666)``, so the kernel applies the umask
   exactly as for any new file: the final file gets ``0o666 & ~umask`` (a
   checkpoint in a class's shared folder is readable by the class), and an
   overwrite gets that mode again -- the old file's mode is not kept.
2. **fsync, then** ``os.replace`` over the target, then fsync the directory
   so the rename itself survives a power cut.  Readers see the old file or
   the new one.
3. **A full disk is TensorFlow's error.**  When a write, the fsync or the
   rename fails for want of space (``ENOSPC``, or ``EDQUOT``: a quota), the
   temp file is removed, the previous file is left as it was, and
   ``ResourceExhaustedError`` "no space left on device writing <path>" is
   raised (the ``OSError`` as its ``__cause__``), as TensorFlow raises it.
   Other ``OSError`` s propagate unchanged.
4. **No temp file outlives its writer.**  Any exception (KeyboardInterrupt
   included) removes the temp file before it propagates.  A process killed
   outright (``kill -9``, a crashed kernel) cannot clean up, so every write
   first sweeps its directory for *stale* temp files and removes them.  A
   temp file is stale when its name says it belongs to this machine and its
   process is gone (or is this process, which is not writing it now), or when
   it has not been touched for :data:`STALE_AFTER_S` seconds (a writer on
   another machine sharing the folder, or a reused pid).  Temp files of live
   writers -- other threads, other processes -- are left alone.

State: :data:`_writing` is the set of temp paths this process is writing
now, guarded by :data:`_lock`; nothing else is kept between calls.

TensorBoard event files are not written whole: TensorBoard's own writer
appends records and flushes them as training runs (a crash loses at most the
unflushed tail, which TensorBoard's reader skips), so they do not come here.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "notes.txt")
    >>> atomic_write(path, "hello\\n") == path
    True
    >>> open(path).read()
    'hello\\n'
    >>> [n for n in os.listdir(os.path.dirname(path)) if is_temp_name(n)]
    []
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import threading
import time
from collections.abc import Callable
from typing import IO, Any

from flowbook.framework import errors

TEMP_SUFFIX = ".flowbook-tmp"  # every temp file of atomic_write ends so
STALE_AFTER_S = 3600.0  # a temp file untouched this long is abandoned, whoever wrote it
_NAME_ROOM = 100  # characters of the target's name kept in its temp file's name
_DISK_FULL = frozenset(
    code for code in (errno.ENOSPC, getattr(errno, "EDQUOT", None)) if code is not None
)  # errnos that mean the file system has no room (for this user)

_lock = threading.Lock()
_writing: set[str] = set()  # absolute temp paths this process is writing now; never stale


def _host() -> str:
    """This machine's name, as it appears in temp names (letters, digits and '-')."""
    name = os.uname().nodename if hasattr(os, "uname") else os.environ.get("COMPUTERNAME", "")
    return re.sub(r"[^A-Za-z0-9-]", "-", name)[:32] or "host"


_HOST = _host()


def temp_name(target_name: str) -> str:
    """A fresh temp file name for writing ``target_name`` (a file name, not a path).

    >>> n = temp_name("model.ckpt.npz")
    >>> n.startswith(".model.ckpt.npz.") and is_temp_name(n)
    True
    """
    token = os.urandom(6).hex()
    return f".{target_name[:_NAME_ROOM]}.{_HOST}.{os.getpid()}.{token}{TEMP_SUFFIX}"


def _parse(name: str) -> tuple[str, int] | None:
    """(host, pid) of a temp file name made by :func:`temp_name`, else None."""
    if not (name.startswith(".") and name.endswith(TEMP_SUFFIX)):
        return None
    parts = name[1 : -len(TEMP_SUFFIX)].rsplit(".", 3)
    if len(parts) != 4 or not parts[2].isdigit() or not parts[3]:
        return None
    return parts[1], int(parts[2])


def is_temp_name(name: str) -> bool:
    """Whether ``name`` (a file name) is a temp file of :func:`atomic_write`.

    >>> is_temp_name(".w.npz.box.12.a1b2.flowbook-tmp"), is_temp_name("w.npz")
    (True, False)
    """
    return _parse(name) is not None


def _alive(pid: int) -> bool:
    """Whether process ``pid`` exists on this machine (True when we cannot tell)."""
    if os.name == "nt":  # os.kill(pid, 0) would send CTRL_C there; rely on the age rule
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True  # someone else's live process (or a pid we cannot ask about)
    return True


def _is_stale(path: str, name: str, now: float) -> bool:
    parsed = _parse(name)
    if parsed is None:
        return False
    with _lock:
        if path in _writing:
            return False
    try:
        if now - os.stat(path).st_mtime > STALE_AFTER_S:
            return True
    except OSError:
        return False  # gone already
    host, pid = parsed
    if host != _HOST:
        return False
    return pid == os.getpid() or not _alive(pid)


def remove_stale_temps(directory: str) -> list[str]:
    """Delete the stale temp files of :func:`atomic_write` in ``directory``; returns their names.

    >>> import tempfile
    >>> remove_stale_temps(tempfile.mkdtemp())
    []
    """
    removed = []
    now = time.time()
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    for entry in entries:
        if entry.name.endswith(TEMP_SUFFIX) and _is_stale(entry.path, entry.name, now):
            with contextlib.suppress(OSError):
                os.unlink(entry.path)
                removed.append(entry.name)
    return removed


def _open_temp(directory: str, target_name: str) -> tuple[int, str]:
    """Create a new temp file for ``target_name`` in ``directory``: (fd, path)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    flags |= getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        tmp = os.path.join(directory, temp_name(target_name))
        try:
            fd = os.open(tmp, flags, 0o666)  # the umask applies, as for any new file
        except FileExistsError:
            continue
        with _lock:
            _writing.add(tmp)
        return fd, tmp
    raise FileExistsError(f"could not create a temp file for {target_name!r} in {directory}")


Content = bytes | bytearray | memoryview | str | Callable[[IO[bytes]], Any]


def atomic_write(path: str | os.PathLike[str], content: Content) -> str:
    """Write the file ``path`` whole (see the module docstring); returns ``path`` as a string.

    ``content`` is bytes, a str (written as UTF-8), or a function that writes
    to the binary file it is given (``lambda f: np.savez(f, **arrays)``).

    >>> import os, tempfile
    >>> p = atomic_write(os.path.join(tempfile.mkdtemp(), "a.bin"), lambda f: f.write(b"\\x01"))
    >>> open(p, "rb").read()
    b'\\x01'
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    remove_stale_temps(directory)
    fd, tmp = _open_temp(directory, os.path.basename(path))
    try:
        with os.fdopen(fd, "wb") as f:
            if callable(content):
                content(f)
            else:
                f.write(content.encode("utf-8") if isinstance(content, str) else content)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(e, OSError) and e.errno in _DISK_FULL:
            raise errors.ResourceExhaustedError(
                None, None, f"no space left on device writing {path} ({e.strerror})"
            ) from e
        raise
    finally:
        with _lock:
            _writing.discard(tmp)
    _fsync_dir(directory)
    return path


def _fsync_dir(directory: str) -> None:
    """Persist a rename on POSIX; a no-op where directories cannot be opened (Windows)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
