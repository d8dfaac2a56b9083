"""``tf.gfile`` and ``tf.io.gfile``: TensorFlow's file API, for local files.

TensorFlow routes file access through its own layer so that one call works
on local disks, GCS or HDFS.  flowbook reads and writes local files only,
with Python's ``os``/``shutil``, and keeps TensorFlow's contract:

- **both naming styles** live in this one module: TF1's ``tf.gfile`` names
  (``GFile``, ``Open``, ``FastGFile``, ``Exists``, ``MakeDirs``, ``MkDir``,
  ``ListDirectory``, ``Glob``, ``Remove``, ``Rename``, ``Copy``,
  ``DeleteRecursively``, ``IsDirectory``, ``Stat``, ``Walk``) and TF2's
  ``tf.io.gfile`` names (``exists``, ``makedirs``, ``mkdir``, ``listdir``,
  ``glob``, ``remove``, ``rename``, ``copy``, ``rmtree``, ``isdir``,
  ``stat``, ``walk``, ``join``); ``tf.gfile`` and ``tf.io.gfile`` are both
  this module;
- **TensorFlow's errors**: a missing file is ``errors.NotFoundError``, a
  target that exists (``MkDir``, ``Rename``/``Copy`` without ``overwrite``)
  ``AlreadyExistsError``, a denied access ``PermissionDeniedError``, reading
  a directory ``FailedPreconditionError`` -- every ``OSError`` is translated
  by :func:`_tf_errors`, naming the path;
- **GFile opens lazily**, as TensorFlow's does: constructing one touches
  nothing, and a missing file is reported at the first read.  Text modes
  (``"r"``, ``"w"``, ``"a"``) read ``str`` as UTF-8 with no newline
  translation; binary modes (``"rb"``...) read ``bytes``; ``write`` takes
  either in any mode.

TensorBoard's event writer looks for ``tensorflow`` and then calls
``tf.io.gfile.makedirs`` and ``tf.io.gfile.GFile(path, "wb")``: with
``flowbook.tf1``'s alias active those land here.

    >>> import os, tempfile
    >>> d = join(tempfile.mkdtemp(), "runs", "1")
    >>> MakeDirs(d)
    >>> with GFile(join(d, "notes.txt"), "w") as f:
    ...     _ = f.write("hello\\n")
    >>> ListDirectory(d), Stat(join(d, "notes.txt")).length
    (['notes.txt'], 6)
"""

from __future__ import annotations

import contextlib
import glob as _glob
import os
import shutil
from collections.abc import Iterator
from typing import IO, Any, NamedTuple

from flowbook.framework import errors

_MODES = {"r", "rb", "w", "wb", "a", "ab", "r+", "rb+", "r+b", "w+", "wb+", "w+b", "a+", "ab+"}
_OS_ERRORS: tuple[tuple[type[OSError], type[errors.OpError]], ...] = (
    (FileNotFoundError, errors.NotFoundError),
    (FileExistsError, errors.AlreadyExistsError),
    (PermissionError, errors.PermissionDeniedError),
    (IsADirectoryError, errors.FailedPreconditionError),
    (NotADirectoryError, errors.FailedPreconditionError),
)


@contextlib.contextmanager
def _tf_errors(path: Any) -> Iterator[None]:
    """Turn an ``OSError`` raised inside into TensorFlow's error class, naming ``path``."""
    try:
        yield
    except OSError as e:
        cls = next((tf for py, tf in _OS_ERRORS if isinstance(e, py)), errors.UnknownError)
        raise cls(None, None, f"{os.fspath(path)}: {e.strerror or e}") from e


def _not_found(path: Any, what: str = "No such file or directory") -> errors.OpError:
    return errors.NotFoundError(None, None, f"{os.fspath(path)}: {what}")


def _already_exists(path: Any) -> errors.OpError:
    return errors.AlreadyExistsError(None, None, f"{os.fspath(path)}: file already exists")


class GFile:
    """A file, opened lazily; TF's ``tf.gfile.GFile`` / ``tf.io.gfile.GFile``.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "b.bin")
    >>> with GFile(path, "wb") as f:
    ...     _ = f.write(b"\\x00\\x01")
    >>> GFile(path, "rb").read(), GFile(path, "rb").size()
    (b'\\x00\\x01', 2)
    """

    def __init__(self, name: Any, mode: str = "r") -> None:
        if mode not in _MODES:
            raise errors.InvalidArgumentError(
                None, None, f"GFile mode must be one of {sorted(_MODES)}, got {mode!r}"
            )
        self.name = os.fspath(name)  # the path, as given
        self.mode = mode  # the mode, as given
        self._binary = "b" in mode
        self._file: IO[Any] | None = None  # opened at first use
        self._closed = False

    def _f(self) -> IO[Any]:
        if self._closed:
            raise ValueError(f"I/O operation on closed GFile {self.name!r}")
        if self._file is None:
            with _tf_errors(self.name):
                if self._binary:
                    self._file = open(self.name, self.mode)  # noqa: SIM115 (closed by close())
                else:
                    self._file = open(self.name, self.mode, encoding="utf-8", newline="")  # noqa: SIM115
        return self._file

    def _convert(self, data: Any) -> Any:
        if self._binary:
            return data.encode("utf-8") if isinstance(data, str) else bytes(data)
        return data.decode("utf-8") if isinstance(data, bytes | bytearray) else str(data)

    def read(self, n: int = -1) -> Any:
        """Up to ``n`` bytes (characters in text mode); all that is left with ``n=-1``."""
        with _tf_errors(self.name):
            return self._f().read(n)

    def readline(self) -> Any:
        with _tf_errors(self.name):
            return self._f().readline()

    def readlines(self) -> list[Any]:
        with _tf_errors(self.name):
            return self._f().readlines()

    def write(self, data: Any) -> int:
        """Write ``str`` or ``bytes`` (converted as UTF-8 to the file's mode)."""
        with _tf_errors(self.name):
            return self._f().write(self._convert(data))

    def seek(self, offset: int = 0, whence: int = 0) -> int:
        with _tf_errors(self.name):
            return self._f().seek(offset, whence)

    def tell(self) -> int:
        with _tf_errors(self.name):
            return self._f().tell()

    def size(self) -> int:
        """The file's length in bytes."""
        self.flush()
        return stat(self.name).length

    def flush(self) -> None:
        if self._file is not None and not self._closed:
            with _tf_errors(self.name):
                self._file.flush()

    def close(self) -> None:
        if self._file is not None and not self._closed:
            with _tf_errors(self.name):
                self._file.close()
        self._closed = True

    @property
    def closed(self) -> bool:
        return self._closed

    def seekable(self) -> bool:
        return True

    def __iter__(self) -> Iterator[Any]:
        return iter(self.readline, "" if not self._binary else b"")

    def __next__(self) -> Any:
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    def __enter__(self) -> GFile:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<GFile {self.name!r} mode {self.mode!r}>"


class FileStatistics(NamedTuple):
    """What :func:`stat` returns: ``length`` in bytes, ``mtime_nsec``, ``is_directory``."""

    length: int
    mtime_nsec: int
    is_directory: bool


def exists(path: Any) -> bool:
    """Whether ``path`` names a file or directory.

    >>> exists("/"), exists("/no/such/path")
    (True, False)
    """
    return os.path.exists(path)


def isdir(path: Any) -> bool:
    """Whether ``path`` is a directory.

    >>> isdir("/")
    True
    """
    return os.path.isdir(path)


def makedirs(path: Any) -> None:
    """Create ``path`` and its missing parents; an existing directory is fine."""
    with _tf_errors(path):
        os.makedirs(path, exist_ok=True)


def mkdir(path: Any) -> None:
    """Create the directory ``path``: ``AlreadyExistsError`` if it exists, ``NotFoundError``
    if its parent does not.
    """
    with _tf_errors(path):
        os.mkdir(path)


def listdir(path: Any) -> list[str]:
    """The names in directory ``path`` (sorted; ``NotFoundError`` if it is not a directory)."""
    if not os.path.isdir(path):
        raise _not_found(path, "not a directory, or missing")
    with _tf_errors(path):
        return sorted(os.listdir(path))


def glob(pattern: Any) -> list[str]:
    """The paths matching ``pattern`` (``*``, ``?``, ``[...]``), sorted; ``[]`` if none.

    >>> glob("/no/such/dir/*.txt")
    []
    """
    patterns = [pattern] if isinstance(pattern, str | bytes | os.PathLike) else list(pattern)
    found: set[str] = set()
    for p in patterns:
        found.update(_glob.glob(os.fsdecode(p)))
    return sorted(found)


def remove(path: Any) -> None:
    """Delete the file ``path`` (``NotFoundError`` if missing)."""
    with _tf_errors(path):
        os.remove(path)


def rename(oldname: Any, newname: Any, overwrite: bool = False) -> None:
    """Move ``oldname`` to ``newname``; ``AlreadyExistsError`` if it exists and not ``overwrite``."""
    if not os.path.exists(oldname):
        raise _not_found(oldname)
    if not overwrite and os.path.exists(newname):
        raise _already_exists(newname)
    with _tf_errors(oldname):
        os.replace(oldname, newname)


def copy(oldpath: Any, newpath: Any, overwrite: bool = False) -> None:
    """Copy the file ``oldpath`` to ``newpath``; ``AlreadyExistsError`` as :func:`rename`."""
    if not overwrite and os.path.exists(newpath):
        raise _already_exists(newpath)
    with _tf_errors(oldpath):
        shutil.copyfile(oldpath, newpath)


def rmtree(path: Any) -> None:
    """Delete the directory ``path`` and all it holds (``NotFoundError`` if missing)."""
    if not os.path.exists(path):
        raise _not_found(path)
    with _tf_errors(path):
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.remove(path)


def stat(path: Any) -> FileStatistics:
    """``FileStatistics(length, mtime_nsec, is_directory)`` of ``path``."""
    with _tf_errors(path):
        st = os.stat(path)
    return FileStatistics(st.st_size, st.st_mtime_ns, os.path.isdir(path))


def walk(
    top: Any, topdown: bool = True, onerror: Any = None
) -> Iterator[tuple[str, list[str], list[str]]]:
    """``(dirname, subdirs, files)`` for ``top`` and every directory below it (sorted names);
    nothing if ``top`` is missing.
    """
    top = os.fspath(top)
    try:
        names = listdir(top)
    except errors.NotFoundError as e:
        if onerror is not None:
            onerror(e)
        return
    dirs = [n for n in names if os.path.isdir(os.path.join(top, n))]
    files = sorted(set(names) - set(dirs))
    if topdown:
        yield top, dirs, files
    for d in dirs:
        yield from walk(os.path.join(top, d), topdown, onerror)
    if not topdown:
        yield top, dirs, files


def join(path: Any, *paths: Any) -> str:
    """``os.path.join`` (TF's ``tf.io.gfile.join``).

    >>> join("logs", "run1", "events")
    'logs/run1/events'
    """
    return os.path.join(path, *paths)


def get_registered_schemes() -> list[str]:
    """The URL schemes flowbook's gfile reads: only local paths (``""`` and ``"file"``)."""
    return ["", "file"]


def _walk_tf1(top: Any, in_order: bool = True) -> Iterator[tuple[str, list[str], list[str]]]:
    """TF1's ``Walk(top, in_order=True)``: :func:`walk` with ``topdown`` named ``in_order``."""
    return walk(top, topdown=in_order)


# TF1's names (tf.gfile)
Open = FastGFile = GFile
Exists, IsDirectory, MakeDirs, MkDir, ListDirectory = exists, isdir, makedirs, mkdir, listdir
Glob, Remove, Rename, Copy, DeleteRecursively = glob, remove, rename, copy, rmtree
Stat, Walk = stat, _walk_tf1

__all__ = [
    "Copy",
    "DeleteRecursively",
    "Exists",
    "FastGFile",
    "FileStatistics",
    "GFile",
    "Glob",
    "IsDirectory",
    "ListDirectory",
    "MakeDirs",
    "MkDir",
    "Open",
    "Remove",
    "Rename",
    "Stat",
    "Walk",
    "copy",
    "exists",
    "get_registered_schemes",
    "glob",
    "isdir",
    "join",
    "listdir",
    "makedirs",
    "mkdir",
    "remove",
    "rename",
    "rmtree",
    "stat",
    "walk",
]
