"""Reading a checkpoint that may be damaged or hostile: DataLossError, never a crash.

:func:`read_checkpoint` reads both formats: TensorFlow's V2 (``<prefix>.index``
and its data file) through ``tensor_bundle``, whose reader is bounded and
checked in the same way, and flowbook's ``.npz``, described below.

A checkpoint (``checkpoint_utils``) is a zip archive of ``.npy`` entries plus
an ``__index__`` entry.  Students copy checkpoints around, cut them short,
and hand each other files; whatever the bytes, :func:`read_checkpoint`
returns the variables or raises ``DataLossError`` naming the file and the
entry.  It does not use ``np.load``: numpy would allocate whatever an npy
header claims (a header saying 10^12 elements is a MemoryError, or worse)
before finding the data missing.  Instead, for each entry:

1. **The zip entry.**  Stored or deflated only (no encryption, no other
   compression); its compressed bytes must fit in the file as it is on disk;
   a stored entry's size is its compressed size; a deflated one may not claim
   more than :data:`MAX_DEFLATE_RATIO` times its compressed size (what
   deflate can reach).  So every size below is bounded by the file's size.
2. **The npy header**, parsed by a regular expression for exactly what numpy
   writes (no ``eval``): version 1-3, header at most :data:`MAX_HEADER`
   bytes, a plain dtype (bool, integers, floats, complex, bytes) -- never
   ``object``, so nothing is ever unpickled -- and a shape of non-negative
   dimensions.
3. **Sizes before memory.**  elements x itemsize (Python ints: no overflow)
   must equal the bytes the entry holds after its header.  Only then is the
   array allocated, and filled chunk by chunk; reading to the end makes
   zipfile check the entry's CRC.

The index is then checked field by field (a dict with the right format and
version, a list of entries each with a string name and key, a known dtype and
a list of non-negative int dims; unique names; keys that exist), and each
array against its entry's dtype and shape.

    >>> import os, tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "bad.npz")
    >>> _ = open(p, "wb").write(b"PK not really a zip")
    >>> try:
    ...     read_checkpoint(p[:-4])
    ... except DataLossError as e:
    ...     print(type(e).__name__, p in str(e))
    DataLossError True
"""

from __future__ import annotations

import collections
import contextlib
import json
import math
import os
import re
import struct
import zipfile
import zlib
from collections.abc import Iterator
from typing import Any

import numpy as np

from flowbook.framework import dtypes
from flowbook.framework.errors import DataLossError, NotFoundError
from flowbook.train import tensor_bundle
from flowbook.train.checkpoint_management import data_path, is_v2

FORMAT = "flowbook-checkpoint"
VERSION = 1
INDEX_KEY = "__index__"

MAX_HEADER = 10_000  # npy header bytes (numpy's own default limit)
MAX_DEFLATE_RATIO = 1100  # deflate cannot expand data more than ~1032 times
MAX_NDIM = 32  # numpy allows 64; flowbook's checkpoints never come near
_CHUNK = 1 << 24  # bytes read at a time into the array
_MAGIC = b"\x93NUMPY"
_HEADER = re.compile(
    r"\{'descr': *'(?P<descr>[<>|=]?[biufcS]\d{1,6})', *"
    r"'fortran_order': *(?P<fortran>True|False), *"
    r"'shape': *\((?P<shape>(?: *\d{1,20} *,)*(?: *\d{1,20} *)?)\),? *\} *\n?"
)
_READ_ERRORS = (  # what zipfile, zlib and struct raise on damaged data
    OSError,
    EOFError,
    ValueError,
    zipfile.BadZipFile,
    zlib.error,
    struct.error,
    TypeError,
    NotImplementedError,
    RuntimeError,
    OverflowError,
)
_DTYPE_NAMES = {d.name for d in dtypes.ALL}


def _loss(path: str, entry: str | None, why: str) -> DataLossError:
    where = f"checkpoint {path}" + (f", entry {entry}" if entry else "")
    return DataLossError(
        None,
        None,
        f"Unable to read {where}: {why}. The file is damaged (cut short while copying?) "
        "or was not written by flowbook's Saver.",
    )


@contextlib.contextmanager
def _reading(path: str, entry: str | None) -> Iterator[None]:
    """Turn the errors of damaged data into DataLossError naming ``path`` and ``entry``."""
    try:
        yield
    except DataLossError:
        raise
    except RecursionError as e:  # before RuntimeError, which it is
        raise _loss(path, entry, f"nested too deeply ({e})") from None
    except _READ_ERRORS as e:
        raise _loss(path, entry, f"{type(e).__name__}: {str(e).rstrip('.')}") from None


class _Archive:
    """An open checkpoint zip whose entries are read as arrays with every size checked."""

    def __init__(self, path: str, zf: zipfile.ZipFile, size: int) -> None:
        self.path = path  # the .npz file, for messages
        self.zip = zf  # the open archive
        self.size = size  # bytes of the file on disk: the bound of every size claimed

    def array(self, key: str, entry: str) -> np.ndarray:
        """The array stored under ``key`` (``entry`` describes it in messages)."""
        info = self._info(key, entry)
        with _reading(self.path, entry), self.zip.open(info) as f:
            dtype, shape, fortran, header_len = self._header(f, entry)
            held = info.file_size - header_len
            count = math.prod(shape)
            nbytes = count * dtype.itemsize
            if nbytes != held:
                raise _loss(
                    self.path,
                    entry,
                    f"its header claims shape {shape} of {dtype.name} ({nbytes} bytes) "
                    f"but the entry holds {held} bytes of data",
                )
            flat = np.empty(count, dtype)
            self._fill(f, flat.view(np.uint8) if nbytes else None, entry)
            arr = flat.reshape(shape, order="F" if fortran else "C")
        return arr if arr.dtype.isnative else arr.astype(arr.dtype.newbyteorder("="))

    def _info(self, key: str, entry: str) -> zipfile.ZipInfo:
        try:
            info = self.zip.getinfo(f"{key}.npy")
        except KeyError:
            raise _loss(self.path, entry, f"there is no '{key}.npy' in the archive") from None
        if info.flag_bits & 0x1:
            raise _loss(self.path, entry, "it is encrypted")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise _loss(self.path, entry, f"unsupported compression {info.compress_type}")
        if info.header_offset + info.compress_size > self.size:
            raise _loss(
                self.path,
                entry,
                f"it claims {info.compress_size} bytes at offset {info.header_offset} "
                f"but the file has {self.size} bytes",
            )
        stored = info.compress_type == zipfile.ZIP_STORED
        limit = info.compress_size * (1 if stored else MAX_DEFLATE_RATIO) + (0 if stored else 64)
        if info.file_size > limit:
            raise _loss(
                self.path,
                entry,
                f"it claims {info.file_size} bytes from {info.compress_size} compressed",
            )
        return info

    def _header(self, f: Any, entry: str) -> tuple[np.dtype, tuple[int, ...], bool, int]:
        """(dtype, shape, fortran order, bytes before the data) of an npy stream."""
        magic = f.read(8)
        if len(magic) != 8 or not magic.startswith(_MAGIC) or magic[6] not in (1, 2, 3):
            raise _loss(self.path, entry, f"not an npy array (it starts {magic[:8]!r})")
        size_format = "<H" if magic[6] == 1 else "<I"
        raw = f.read(struct.calcsize(size_format))
        if len(raw) != struct.calcsize(size_format):
            raise _loss(self.path, entry, "its npy header is cut short")
        (length,) = struct.unpack(size_format, raw)
        if length > MAX_HEADER:
            raise _loss(self.path, entry, f"its npy header claims {length} bytes")
        text = f.read(length)
        m = _HEADER.fullmatch(text.decode("latin-1").rstrip(" ").rstrip("\n").rstrip(" "))
        if len(text) != length or m is None:
            raise _loss(self.path, entry, f"bad npy header {text[:120]!r}")
        dtype = np.dtype(m["descr"])
        shape = tuple(int(d) for d in m["shape"].replace(" ", "").split(",") if d)
        if dtype.itemsize == 0 or len(shape) > MAX_NDIM or any(d >= 2**62 for d in shape):
            raise _loss(self.path, entry, f"unusable npy header {text[:120]!r}")
        return dtype, shape, m["fortran"] == "True", 8 + len(raw) + length

    def _fill(self, f: Any, out: np.ndarray | None, entry: str) -> None:
        """Read the rest of ``f`` into the bytes ``out``; it must fit exactly."""
        done = 0
        total = 0 if out is None else len(out)
        while done < total:
            data = f.read(min(_CHUNK, total - done))
            if not data:
                raise _loss(self.path, entry, f"its data ends after {done} of {total} bytes")
            assert out is not None
            out[done : done + len(data)] = np.frombuffer(data, np.uint8)
            done += len(data)
        if f.read(1):  # also makes zipfile check the CRC
            raise _loss(self.path, entry, "it holds more data than its header says")


@contextlib.contextmanager
def _open(path: str) -> Iterator[_Archive]:
    with _reading(path, None):
        size = os.path.getsize(path)
        zf = zipfile.ZipFile(path)
    with zf:
        yield _Archive(path, zf, size)


def _check_entry(path: str, e: Any, i: int, keys: set[str]) -> dict[str, Any]:
    """Index entry ``i``, checked: name, key, dtype and shape of the right types."""
    where = f"'{INDEX_KEY}' (variable #{i})"
    if not isinstance(e, dict):
        raise _loss(path, where, f"expected an object, found {type(e).__name__}")
    name = e.get("name")
    if not isinstance(name, str):
        raise _loss(path, where, f"the name is {name!r}, not a string")
    where = f"'{INDEX_KEY}' (variable '{name}')"
    key, dtype, shape = e.get("key"), e.get("dtype"), e.get("shape")
    if not isinstance(key, str) or key == INDEX_KEY or key not in keys:
        raise _loss(path, where, f"the key {key!r} names no array of the archive")
    if not isinstance(dtype, str) or (dtype != "string" and dtype not in _DTYPE_NAMES):
        raise _loss(path, where, f"unknown dtype {dtype!r}")
    if (
        not isinstance(shape, list)
        or len(shape) > MAX_NDIM
        or not all(type(d) is int and d >= 0 for d in shape)
    ):
        raise _loss(path, where, f"the shape {shape!r} is not a list of sizes")
    return {"name": name, "key": key, "dtype": dtype, "shape": shape}


def read_index(path: str, archive: _Archive) -> list[dict[str, Any]]:
    """The index entries of an open archive, every field checked; else DataLossError."""
    where = f"'{INDEX_KEY}'"
    raw = archive.array(INDEX_KEY, where)
    if raw.dtype != np.uint8 or raw.ndim != 1:
        raise _loss(path, where, f"expected bytes, found {raw.dtype.name} of shape {raw.shape}")
    with _reading(path, where):
        index = json.loads(raw.tobytes().decode("utf-8"))
    if not isinstance(index, dict) or index.get("format") != FORMAT:
        got = index.get("format") if isinstance(index, dict) else type(index).__name__
        raise _loss(path, where, f"not a flowbook checkpoint index (format {got!r})")
    version = index.get("version", 0)
    if type(version) is not int or version > VERSION:
        raise _loss(path, where, f"version {version!r} is not one this flowbook reads")
    entries = index.get("variables")
    if not isinstance(entries, list):
        raise _loss(path, where, f"'variables' is {type(entries).__name__}, not a list")
    keys = {n[: -len(".npy")] for n in archive.zip.namelist() if n.endswith(".npy")}
    checked = [_check_entry(path, e, i, keys) for i, e in enumerate(entries)]
    counts = collections.Counter(e["name"] for e in checked)
    twice = sorted(n for n, k in counts.items() if k > 1)
    if twice:
        raise _loss(path, where, f"variables named more than once: {twice}")
    return checked


def _matches(arr: np.ndarray, entry: dict[str, Any]) -> bool:
    if list(arr.shape) != entry["shape"]:
        return False
    if entry["dtype"] == "string":
        return arr.dtype.kind == "S"
    return arr.dtype == np.dtype(dtypes.as_dtype(entry["dtype"]).as_numpy_dtype)


def read_checkpoint(prefix: str) -> dict[str, np.ndarray]:
    """All ``{variable name: array}`` of checkpoint ``prefix`` (strings come back as objects).

    A V2 checkpoint (``<prefix>.index``) is read if there is one, else
    ``<prefix>.npz``.  NotFoundError if there is neither; DataLossError, naming
    the file and the entry, for anything wrong inside it.
    """
    if is_v2(prefix):
        reader = tensor_bundle.read_bundle(prefix)
        return {name: reader.get(name) for name in reader}
    path = data_path(prefix)
    if not os.path.isfile(path):
        raise NotFoundError(None, None, f"Checkpoint {prefix} not found: no file {path}")
    out: dict[str, np.ndarray] = {}
    with _open(path) as archive:
        for entry in read_index(path, archive):
            where = f"'{entry['key']}' (variable '{entry['name']}')"
            arr = archive.array(entry["key"], where)
            if not _matches(arr, entry):
                raise _loss(
                    path,
                    where,
                    f"the index says {entry['dtype']} {entry['shape']}, "
                    f"the array is {arr.dtype.name} {list(arr.shape)}",
                )
            out[entry["name"]] = arr.astype(object) if entry["dtype"] == "string" else arr
    return out
