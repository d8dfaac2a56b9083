"""Reading and watching checkpoints from outside a Saver (TF1's ``load_checkpoint``,
``NewCheckpointReader``, ``checkpoints_iterator``, ``get_checkpoint_mtimes``,
``remove_checkpoint``).

A ``CheckpointReader`` reads the whole checkpoint once, V2 or npz, through
the checked reader of ``checkpoint_reader`` (a damaged file is a
DataLossError), and answers from memory.  ``checkpoints_iterator`` polls a directory's
``checkpoint`` file and yields each new latest checkpoint, ending after
``timeout`` seconds without one (or when ``timeout_fn`` says so).

    >>> import os, tempfile, flowbook as fb
    >>> d = tempfile.mkdtemp()
    >>> with fb.Graph().as_default():
    ...     w = fb.Variable([1.0, 2.0], name="w")
    ...     with fb.Session() as s:
    ...         _ = s.run(w.initializer)
    ...         _ = fb.train.Saver().save(s, os.path.join(d, "m.ckpt"))
    >>> r = load_checkpoint(d)
    >>> r.get_variable_to_shape_map(), r.has_tensor("w"), r.get_tensor("w").tolist()
    ({'w': [2]}, True, [1.0, 2.0])
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator

import numpy as np

from flowbook.framework.errors import NotFoundError
from flowbook.train.checkpoint_management import (
    checkpoint_exists,
    checkpoint_files,
    checkpoint_mtime,
    latest_checkpoint,
)
from flowbook.train.checkpoint_reader import read_checkpoint
from flowbook.train.checkpoint_utils import _resolve


class CheckpointReader:
    """The variables of one checkpoint: ``get_tensor``, ``has_tensor``, shape and dtype maps."""

    def __init__(self, prefix: str) -> None:
        self._prefix = prefix  # the checkpoint read
        self._values = read_checkpoint(prefix)  # {name: array}, read once

    def get_tensor(self, tensor_str: str) -> np.ndarray:
        """The saved value of ``tensor_str`` (a trailing ``:0`` is ignored)."""
        name = tensor_str[:-2] if tensor_str.endswith(":0") else tensor_str
        if name not in self._values:
            raise NotFoundError(None, None, f"Key {name} not found in checkpoint {self._prefix}")
        return self._values[name]

    def has_tensor(self, tensor_str: str) -> bool:
        return tensor_str in self._values

    def get_variable_to_shape_map(self) -> dict[str, list[int]]:
        return {name: list(v.shape) for name, v in sorted(self._values.items())}

    def get_variable_to_dtype_map(self) -> dict[str, np.dtype]:
        return {name: v.dtype for name, v in sorted(self._values.items())}

    def debug_string(self) -> bytes:
        """One line per variable: ``name (dtype) [shape]``."""
        lines = [f"{n} ({v.dtype}) {list(v.shape)}" for n, v in sorted(self._values.items())]
        return ("\n".join(lines) + "\n").encode()


def NewCheckpointReader(filepattern: str) -> CheckpointReader:
    """A ``CheckpointReader`` of the checkpoint with prefix ``filepattern``."""
    if not checkpoint_exists(filepattern):
        raise NotFoundError(
            None, None, f"Unsuccessful TensorSliceReader constructor: {filepattern}"
        )
    return CheckpointReader(filepattern)


def load_checkpoint(ckpt_dir_or_file: str) -> CheckpointReader:
    """A reader of a checkpoint, or of the latest checkpoint in a directory."""
    return NewCheckpointReader(_resolve(ckpt_dir_or_file))


def get_checkpoint_mtimes(checkpoint_prefixes: list[str]) -> list[float]:
    """The modification times of the checkpoints that exist, in order (missing ones skipped)."""
    out = []
    for prefix in checkpoint_prefixes:
        if checkpoint_exists(prefix):
            out.append(checkpoint_mtime(prefix))
    return out


def remove_checkpoint(
    checkpoint_prefix: str, checkpoint_format_version: int = 2, meta_graph_suffix="meta"
):
    """Delete the files of checkpoint ``checkpoint_prefix`` (V2 and npz, and any meta graph)."""
    meta = f"{checkpoint_prefix}.{meta_graph_suffix}"
    for path in [*checkpoint_files(checkpoint_prefix), meta]:
        if os.path.isfile(path):
            os.remove(path)


def checkpoints_iterator(
    checkpoint_dir: str,
    min_interval_secs: float = 0,
    timeout: float | None = None,
    timeout_fn: Callable[[], bool] | None = None,
) -> Iterator[str]:
    """Yield each new latest checkpoint of ``checkpoint_dir``, at most one per
    ``min_interval_secs``; stop after ``timeout`` seconds with no new one, unless
    ``timeout_fn()`` returns False (keep waiting).
    """
    last: str | None = None
    while True:
        deadline = None if timeout is None else time.time() + timeout
        new = None
        while new is None:
            latest = latest_checkpoint(checkpoint_dir)
            if latest is not None and latest != last:
                new = latest
            elif deadline is not None and time.time() > deadline:
                break
            else:
                time.sleep(min(1.0, max(timeout or 1.0, 0.01)) / 10)
        if new is None:
            if timeout_fn is None or timeout_fn():
                return
            continue
        start = time.time()
        last = new
        yield new
        wait = start + min_interval_secs - time.time()
        if wait > 0:
            time.sleep(wait)
