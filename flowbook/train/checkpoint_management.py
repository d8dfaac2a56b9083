"""Checkpoint bookkeeping: the ``checkpoint`` state file, ``latest_checkpoint``, atomic writes.

A checkpoint is named by its *prefix*, as in TensorFlow (``dir/model.ckpt-100``).
Its files are TensorFlow's format V2, ``<prefix>.index`` and
``<prefix>.data-00000-of-00001`` (``tensor_bundle``; what Saver writes by
default, and what TensorFlow reads), or flowbook's single file
``<prefix>.npz`` (``checkpoint_utils``; ``write_version=SaverDef.V1``).  When
both exist, V2 is read.  Next to them the Saver keeps the state file
``dir/checkpoint``, in TF's text format::

    model_checkpoint_path: "model.ckpt-100"
    all_model_checkpoint_paths: "model.ckpt-90"
    all_model_checkpoint_paths: "model.ckpt-100"

Paths inside the directory are written relative to it (so the directory can
move); relative paths read back are joined to the directory, as TF does.

Every file is written by ``flowbook.platform.files.atomic_write``: a temporary file in
the same directory, fsynced, then ``os.replace``d over the target, so a crash
mid-write leaves the old file whole (and the next save sweeps up the temp file).

Reading the state file is forgiving where TensorFlow's is: a file that cannot
be read, is not UTF-8 text, is too large to be a state file, or has a line
that does not parse is logged as a warning naming it and ignored
(``get_checkpoint_state`` returns None).  One that parses but names no
``model_checkpoint_path`` is a ValueError naming the file, as in TF.

    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> latest_checkpoint(d) is None
    True
"""

from __future__ import annotations

import json
import logging
import os
import re

from flowbook.platform.files import atomic_write

_log = logging.getLogger("flowbook")
SUFFIX = ".npz"  # the data file of an npz checkpoint <prefix> is <prefix>.npz
INDEX_SUFFIX = ".index"  # a V2 checkpoint <prefix> has <prefix>.index and its data files
MAX_STATE_BYTES = 1 << 24  # a larger "checkpoint" file is not a state file Saver wrote
_LINE = re.compile(r'^\s*(\w+)\s*:\s*"(.*)"\s*$')  # key: "value" in TF's text format


class CheckpointState:
    """What the ``checkpoint`` file says: the latest checkpoint and all the kept ones."""

    def __init__(self, model_checkpoint_path: str, all_model_checkpoint_paths: list[str]) -> None:
        self.model_checkpoint_path = model_checkpoint_path  # the latest prefix
        self.all_model_checkpoint_paths = all_model_checkpoint_paths  # oldest first

    def __repr__(self) -> str:
        return (
            f"CheckpointState(model_checkpoint_path={self.model_checkpoint_path!r}, "
            f"all_model_checkpoint_paths={self.all_model_checkpoint_paths!r})"
        )


def data_path(prefix: str) -> str:
    """The file holding checkpoint ``prefix`` (a path that already ends in .npz is kept)."""
    prefix = os.fspath(prefix)
    if prefix.endswith(SUFFIX) and os.path.isfile(prefix):
        return prefix
    return prefix + SUFFIX


def index_path(prefix: str) -> str:
    """The index file of V2 checkpoint ``prefix``: ``<prefix>.index``."""
    return os.fspath(prefix) + INDEX_SUFFIX


def is_v2(prefix: str) -> bool:
    """Whether ``prefix`` names a V2 checkpoint (its ``.index`` file exists)."""
    return os.path.isfile(index_path(prefix))


def checkpoint_files(prefix: str) -> list[str]:
    """The files of checkpoint ``prefix`` that exist: V2 index and data files, and/or the npz.

    >>> import tempfile
    >>> checkpoint_files(os.path.join(tempfile.mkdtemp(), "m"))
    []
    """
    prefix = os.fspath(prefix)
    directory, base = os.path.split(prefix)
    try:
        names = os.listdir(directory or ".")
    except OSError:
        return []
    data = re.compile(re.escape(base) + r"\.data-\d{5}-of-\d{5}")
    found = [n for n in names if n in (base + INDEX_SUFFIX, base + SUFFIX) or data.fullmatch(n)]
    return sorted(os.path.join(directory, n) for n in found)


def checkpoint_exists(checkpoint_prefix: str) -> bool:
    """Whether a checkpoint with this prefix was written (V2 or npz)."""
    return is_v2(checkpoint_prefix) or os.path.isfile(data_path(checkpoint_prefix))


def checkpoint_mtime(prefix: str) -> float:
    """When checkpoint ``prefix`` was written: its index's (V2) or npz's modification time."""
    return os.path.getmtime(index_path(prefix) if is_v2(prefix) else data_path(prefix))


def _state_path(checkpoint_dir: str, latest_filename: str | None) -> str:
    return os.path.join(os.fspath(checkpoint_dir), latest_filename or "checkpoint")


def _ignored(path: str, why: str) -> None:
    _log.warning(
        "%s: %s; Checkpoint ignored (the next Saver.save into that folder rewrites it)", path, why
    )


def _read_state_text(path: str) -> str | None:
    """The state file's text; None (logged) if it is missing, unreadable, huge or not UTF-8."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_STATE_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as e:
        _ignored(path, f"cannot be read: {e}")
        return None
    if len(data) > MAX_STATE_BYTES:
        _ignored(path, f"larger than {MAX_STATE_BYTES} bytes, so not a checkpoint state file")
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        _ignored(path, f"not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start})")
        return None


def get_checkpoint_state(
    checkpoint_dir: str, latest_filename: str | None = None
) -> CheckpointState | None:
    """The parsed ``checkpoint`` file of ``checkpoint_dir``, or None if there is none
    (or it cannot be read or parsed: that is logged as a warning naming it, as in TF).

    >>> import os, tempfile
    >>> d = tempfile.mkdtemp()
    >>> _ = open(os.path.join(d, "checkpoint"), "w").write('model_checkpoint_path: "m-1"\\n')
    >>> os.path.basename(get_checkpoint_state(d).model_checkpoint_path)
    'm-1'
    """
    path = _state_path(checkpoint_dir, latest_filename)
    text = _read_state_text(path)
    if text is None:
        return None
    latest = ""
    every: list[str] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        m = _LINE.match(line)
        if m is None:
            if re.match(r"^\s*\w+\s*:", line):  # a field we do not use (timestamps...)
                continue
            _ignored(f"{path}:{lineno}", f"cannot parse {line[:80]!r}")
            return None
        try:
            value = json.loads(f'"{m.group(2)}"')
        except ValueError:
            value = m.group(2)
        if "\0" in value:
            _ignored(f"{path}:{lineno}", f"a path with a NUL character: {line[:80]!r}")
            return None
        if m.group(1) == "model_checkpoint_path":
            latest = value
        elif m.group(1) == "all_model_checkpoint_paths":
            every.append(value)
    if not latest:
        raise ValueError(
            f"Invalid checkpoint state loaded from {path}: it names no model_checkpoint_path. "
            "Delete it (or save a checkpoint into that folder) to start afresh."
        )
    directory = os.fspath(checkpoint_dir)
    latest = latest if os.path.isabs(latest) else os.path.join(directory, latest)
    every = [p if os.path.isabs(p) else os.path.join(directory, p) for p in every]
    return CheckpointState(latest, every)


def update_checkpoint_state(
    save_dir: str,
    model_checkpoint_path: str,
    all_model_checkpoint_paths: list[str] | None = None,
    latest_filename: str | None = None,
) -> None:
    """Write ``save_dir/checkpoint`` naming ``model_checkpoint_path`` as the latest (atomically)."""
    every = list(all_model_checkpoint_paths or [])
    if not every or every[-1] != model_checkpoint_path:
        every.append(model_checkpoint_path)
    directory = os.path.abspath(os.fspath(save_dir) or ".")

    def rel(p: str) -> str:
        full = os.path.abspath(p)
        return os.path.relpath(full, directory) if os.path.dirname(full) == directory else full

    lines = [f"model_checkpoint_path: {_quote(rel(model_checkpoint_path))}"]
    lines += [f"all_model_checkpoint_paths: {_quote(rel(p))}" for p in every]
    text = "\n".join(lines) + "\n"
    atomic_write(_state_path(directory, latest_filename), lambda f: f.write(text.encode()))


def _quote(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


def latest_checkpoint(checkpoint_dir: str, latest_filename: str | None = None) -> str | None:
    """The prefix of the newest checkpoint in ``checkpoint_dir`` (for ``Saver.restore``), or None.

    It is read from the ``checkpoint`` file the Saver writes; None if there is
    no such file or the checkpoint it names is gone.
    """
    state = get_checkpoint_state(checkpoint_dir, latest_filename)
    if state is None or not state.model_checkpoint_path:
        return None
    if checkpoint_exists(state.model_checkpoint_path):
        return state.model_checkpoint_path
    _log.error("Couldn't match files for checkpoint %s", state.model_checkpoint_path)
    return None
