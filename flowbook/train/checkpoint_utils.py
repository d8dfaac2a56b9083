"""Writing checkpoints: TensorFlow's format V2 (the default) or one ``.npz``; listing them.

``write_checkpoint(prefix, values)`` writes TensorFlow's V2 files
``<prefix>.index`` and ``<prefix>.data-00000-of-00001`` (``tensor_bundle``),
which TensorFlow reads.  With ``write_version=1`` (``SaverDef.V1``) it writes
flowbook's own format instead: ``<prefix>.npz`` is a numpy zip archive written with ``allow_pickle=False``:
the arrays are stored under keys ``t0``, ``t1``...; the key ``__index__``
holds a small JSON document (as uint8 bytes) that maps each variable name to
its key, dtype and shape::

    {"format": "flowbook-checkpoint", "version": 1,
     "variables": [{"name": "W", "key": "t0", "dtype": "float32", "shape": [64, 10]}, ...]}

Keeping the index inside the one file makes an npz checkpoint a single atomic
write (``flowbook.platform.files.atomic_write``: the file appears whole or not at all,
with the mode the umask gives a new file).  String variables are stored as
fixed-width bytes (numpy ``S``).  A V2 checkpoint is two atomic writes, the
data file first, so an index never names missing data.  Reading, which must survive damaged and
hostile files, is ``checkpoint_reader``'s job.

    >>> import os, tempfile, numpy as np
    >>> prefix = os.path.join(tempfile.mkdtemp(), "model.ckpt")
    >>> write_checkpoint(prefix, {"W": np.ones((2, 2), np.float32)})
    >>> list_variables(prefix)
    [('W', [2, 2])]
"""

from __future__ import annotations

import contextlib
import json
import os
from typing import Any

import numpy as np

from flowbook.framework import dtypes
from flowbook.framework.errors import NotFoundError
from flowbook.platform.files import atomic_write
from flowbook.train.checkpoint_management import checkpoint_files, data_path, latest_checkpoint
from flowbook.train.checkpoint_reader import FORMAT, INDEX_KEY, VERSION, read_checkpoint
from flowbook.train.tensor_bundle import write_bundle

V1 = 1  # SaverDef.V1: write_version that writes flowbook's .npz
V2 = 2  # SaverDef.V2: TensorFlow's format V2, the default

__all__ = ["list_variables", "load_variable", "read_checkpoint", "write_checkpoint"]


def _dtype_name(value: np.ndarray) -> str:
    if value.dtype.kind in "OSU":
        return "string"
    return dtypes.as_dtype(value.dtype).name


def _as_bytes(name: str, x: Any) -> bytes:
    """A string variable's element as bytes; anything else is refused (``bytes(5)`` is 5 NULs)."""
    if isinstance(x, bytes):
        return x
    if isinstance(x, str):
        return x.encode()
    raise TypeError(
        f"variable '{name}' is a string variable but holds {type(x).__name__} {x!r}: "
        "only str and bytes can be saved"
    )


def _checked(name: str, value: Any) -> np.ndarray:
    """``value`` as an array; a string variable's elements as bytes, checked."""
    arr = np.asarray(value)
    if arr.dtype.kind not in "OSU":
        return arr
    return np.array([_as_bytes(name, x) for x in arr.reshape(-1)], dtype=bytes).reshape(arr.shape)


def write_checkpoint(prefix: str, values: dict[str, Any], write_version: int = V2) -> None:
    """Write ``{variable name: array}`` as checkpoint ``prefix``: V2 files, or ``.npz`` with V1."""
    if write_version == V2:
        write_bundle(prefix, {name: _checked(name, v) for name, v in values.items()})
        with contextlib.suppress(FileNotFoundError):  # an older npz of the same prefix
            os.remove(data_path(prefix))
        return
    arrays: dict[str, np.ndarray] = {}
    entries = []
    for i, (name, value) in enumerate(values.items()):
        arr = _checked(name, value)
        key = f"t{i}"
        arrays[key] = arr
        entries.append(
            {"name": name, "key": key, "dtype": _dtype_name(arr), "shape": list(arr.shape)}
        )
    index = {"format": FORMAT, "version": VERSION, "variables": entries}
    arrays[INDEX_KEY] = np.frombuffer(json.dumps(index).encode(), dtype=np.uint8)
    atomic_write(data_path(prefix), lambda f: np.savez(f, allow_pickle=False, **arrays))
    for path in checkpoint_files(prefix):  # an older V2 checkpoint would be read first
        if path != data_path(prefix):
            os.remove(path)


def _resolve(ckpt_dir_or_file: str) -> str:
    path = os.fspath(ckpt_dir_or_file)
    if os.path.isdir(path):
        latest = latest_checkpoint(path)
        if latest is None:
            raise ValueError(
                f"Couldn't find 'checkpoint' file or checkpoints in given directory {path}"
            )
        return latest
    return path


def list_variables(ckpt_dir_or_file: str) -> list[tuple[str, list[int]]]:
    """``[(name, shape), ...]`` of a checkpoint (or the latest one in a directory), by name."""
    values = read_checkpoint(_resolve(ckpt_dir_or_file))
    return sorted((name, list(v.shape)) for name, v in values.items())


def load_variable(ckpt_dir_or_file: str, name: str) -> np.ndarray:
    """The saved value of variable ``name`` (a trailing ``:0`` is ignored)."""
    if name.endswith(":0"):
        name = name[:-2]
    values = read_checkpoint(_resolve(ckpt_dir_or_file))
    if name not in values:
        raise NotFoundError(None, None, f"Key {name} not found in checkpoint {ckpt_dir_or_file}")
    return values[name]
