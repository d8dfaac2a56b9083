"""The checkpoint file: named arrays in one ``.npz``, readable without pickle.

``<prefix>.npz`` is a numpy zip archive written with ``allow_pickle=False``:
the arrays are stored under keys ``t0``, ``t1``...; the key ``__index__``
holds a small JSON document (as uint8 bytes) that maps each variable name to
its key, dtype and shape::

    {"format": "flowbook-checkpoint", "version": 1,
     "variables": [{"name": "W", "key": "t0", "dtype": "float32", "shape": [64, 10]}, ...]}

Keeping the index inside the one file makes a checkpoint a single atomic
write.  String variables are stored as fixed-width bytes (numpy ``S``).

    >>> import os, tempfile, numpy as np
    >>> prefix = os.path.join(tempfile.mkdtemp(), "model.ckpt")
    >>> write_checkpoint(prefix, {"W": np.ones((2, 2), np.float32)})
    >>> list_variables(prefix)
    [('W', [2, 2])]
"""

from __future__ import annotations

import json
import os
import zipfile
from typing import Any

import numpy as np

from flowbook import dtypes
from flowbook.errors import DataLossError, NotFoundError
from flowbook.files import atomic_write
from flowbook.train.checkpoint_management import data_path, latest_checkpoint

FORMAT = "flowbook-checkpoint"
VERSION = 1
INDEX_KEY = "__index__"


def _dtype_name(value: np.ndarray) -> str:
    if value.dtype.kind in "OSU":
        return "string"
    return dtypes.as_dtype(value.dtype).name


def write_checkpoint(prefix: str, values: dict[str, Any]) -> None:
    """Write ``{variable name: array}`` to ``<prefix>.npz``, atomically."""
    arrays: dict[str, np.ndarray] = {}
    entries = []
    for i, (name, value) in enumerate(values.items()):
        arr = np.asarray(value)
        dtype = _dtype_name(arr)
        if dtype == "string":
            arr = np.array(
                [x.encode() if isinstance(x, str) else bytes(x) for x in arr.reshape(-1)],
                dtype=bytes,
            ).reshape(arr.shape)
        key = f"t{i}"
        arrays[key] = arr
        entries.append({"name": name, "key": key, "dtype": dtype, "shape": list(arr.shape)})
    index = {"format": FORMAT, "version": VERSION, "variables": entries}
    arrays[INDEX_KEY] = np.frombuffer(json.dumps(index).encode(), dtype=np.uint8)
    atomic_write(data_path(prefix), lambda f: np.savez(f, allow_pickle=False, **arrays))


def read_index(path: str, archive: Any) -> list[dict[str, Any]]:
    """The index entries of an open archive; DataLossError if it is not a flowbook checkpoint."""
    try:
        index = json.loads(bytes(archive[INDEX_KEY]).decode())
        if index.get("format") != FORMAT:
            raise ValueError(f"format is {index.get('format')!r}")
        if index.get("version", 0) > VERSION:
            raise ValueError(f"version {index['version']} is newer than this flowbook reads")
        return list(index["variables"])
    except (KeyError, ValueError, TypeError) as e:
        raise DataLossError(None, None, f"{path} is not a flowbook checkpoint: {e}") from None


def read_checkpoint(prefix: str) -> dict[str, np.ndarray]:
    """All ``{variable name: array}`` of checkpoint ``prefix`` (strings come back as objects)."""
    path = data_path(prefix)
    if not os.path.isfile(path):
        raise NotFoundError(None, None, f"Checkpoint {prefix} not found: no file {path}")
    try:
        with np.load(path, allow_pickle=False) as archive:
            out: dict[str, np.ndarray] = {}
            for entry in read_index(path, archive):
                arr = archive[entry["key"]]
                if entry["dtype"] == "string":
                    arr = arr.astype(object)
                out[entry["name"]] = arr
            return out
    except (OSError, zipfile.BadZipFile, ValueError, KeyError, EOFError) as e:
        raise DataLossError(None, None, f"Unable to read checkpoint {path}: {e}") from None


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
