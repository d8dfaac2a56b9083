"""Starting from a checkpoint, and a few more ``tf.train`` names.

``init_from_checkpoint(ckpt, assignment_map)`` and ``warm_start(ckpt, ...)``
make chosen variables *initialise* from a checkpoint instead of from their
initial values: as TensorFlow does, they replace each variable's
initializer, so ``global_variables_initializer()`` built afterwards loads
them (build it after calling these).  TensorFlow's new initializer restores
from the file when it runs; flowbook's reads the value when the function is
called and holds it as a constant in the graph -- the same value unless the
checkpoint file changes in between.

``assignment_map`` takes TensorFlow's forms: ``{"ckpt_scope/": "scope/"}``
(every checkpoint variable under the scope onto the graph variable of the
same name under ``scope/``; ``"/"`` is the checkpoint's root),
``{"ckpt/name": "graph/name"}`` and ``{"ckpt/name": variable}``.
``warm_start`` picks variables by regex (a string: trainable variables; a
list: global variables, or the variables themselves), renames them with
``var_name_to_prev_var_name``, and remaps embedding rows with a
:class:`VocabInfo`: row ``i`` of the new variable takes the old row of the
same word in ``old_vocab`` (its first ``old_vocab_size`` lines), other rows
and the ``num_oov_buckets`` rows after the vocabulary take
``backup_initializer``'s values (zeros when None).

``summary_iterator(path)`` yields the ``Event`` protos of an event file;
``generate_checkpoint_state_proto`` builds the ``CheckpointState`` that
``update_checkpoint_state`` writes; ``SessionCreator`` is the interface
``ChiefSessionCreator`` implements; ``GlobalStepWaiterHook`` holds a
worker's runs until the global step reaches a value.
"""

from __future__ import annotations

import abc
import importlib
import re
import time
from collections.abc import Iterator
from typing import Any, NamedTuple

import numpy as np

from flowbook.framework.graph import get_collection, name_scope
from flowbook.framework.graph_keys import GraphKeys
from flowbook.graph_io.tfrecord import tf_record_iterator
from flowbook.ops.array.constant_op import constant
from flowbook.ops.array.selection_ops import where
from flowbook.ops.state import state_ops
from flowbook.train import training_util
from flowbook.train.checkpoint_management import CheckpointState
from flowbook.train.checkpoint_utils import list_variables, load_variable
from flowbook.train.monitored_session import ChiefSessionCreator
from flowbook.train.session_run_hook import SessionRunHook

__all__ = [
    "GlobalStepWaiterHook",
    "SessionCreator",
    "VocabInfo",
    "generate_checkpoint_state_proto",
    "init_from_checkpoint",
    "summary_iterator",
    "warm_start",
]


def _override(var: Any, value: Any, source: str) -> None:
    """Make ``var``'s initializer assign ``value`` (numpy array or tensor) instead."""
    if isinstance(value, np.ndarray):
        want = var.shape.as_list()
        if list(value.shape) != want:
            raise ValueError(
                f"Shape of variable {var.op.name} ({want}) doesn't match with shape of "
                f"tensor {source} ({list(value.shape)}) from checkpoint reader."
            )
    with name_scope(var.op.name + "/"):
        init = (
            value
            if not isinstance(value, np.ndarray)
            else constant(value.astype(var.dtype.np), name="checkpoint_value")
        )
        var._initial_value = init
        var._initializer_op = state_ops.assign(var, init, name="restore_from_checkpoint").op


def _graph_variables(collection: str = GraphKeys.GLOBAL_VARIABLES) -> dict[str, Any]:
    return {v.op.name: v for v in get_collection(collection)}


def init_from_checkpoint(ckpt_dir_or_file: str, assignment_map: dict) -> None:
    """Initialise variables from a checkpoint's tensors (see the module for ``assignment_map``)."""
    saved = dict(list_variables(ckpt_dir_or_file))
    graph_vars = _graph_variables()
    for ckpt_name, target in assignment_map.items():
        if not isinstance(target, str):
            _override(target, load_variable(ckpt_dir_or_file, ckpt_name), ckpt_name)
            continue
        if ckpt_name.endswith("/") or ckpt_name == "/":
            prefix = "" if ckpt_name == "/" else ckpt_name
            scope = "" if target in ("", "/") else target.rstrip("/") + "/"
            for name in saved:
                if name.startswith(prefix) and scope + name[len(prefix) :] in graph_vars:
                    var = graph_vars[scope + name[len(prefix) :]]
                    _override(var, load_variable(ckpt_dir_or_file, name), name)
            continue
        if ckpt_name not in saved:
            raise ValueError(f"Tensor {ckpt_name} is not found in {ckpt_dir_or_file} checkpoint")
        name = target[:-2] if target.endswith(":0") else target
        if name not in graph_vars:
            raise ValueError(f"Variable {target} is not found in the graph")
        _override(graph_vars[name], load_variable(ckpt_dir_or_file, ckpt_name), ckpt_name)


class VocabInfo(NamedTuple):
    """How to remap a warm-started embedding's rows from an old vocabulary file to a new one."""

    new_vocab: str
    new_vocab_size: int
    num_oov_buckets: int
    old_vocab: str
    old_vocab_size: int = -1
    backup_initializer: Any = None
    axis: int = 0


def _words(path: str, limit: int) -> list[str]:
    with open(path, encoding="utf-8") as f:
        words = [line.rstrip("\n") for line in f]
    return words if limit < 0 else words[:limit]


def _remapped(var: Any, old: np.ndarray, info: VocabInfo) -> Any:
    """The new initial value: old rows of words both vocabularies hold, backup values elsewhere."""
    axis = info.axis
    moved = np.moveaxis(old, axis, 0)
    shape = var.shape.as_list()
    rows = info.new_vocab_size + info.num_oov_buckets
    if shape[axis] != rows:
        raise ValueError(
            f"{var.op.name}: dim {axis} is {shape[axis]}, but the vocabulary gives "
            f"{info.new_vocab_size} + {info.num_oov_buckets} OOV buckets = {rows} rows"
        )
    position = {w: k for k, w in enumerate(_words(info.old_vocab, info.old_vocab_size))}
    new_words = _words(info.new_vocab, info.new_vocab_size)
    out_shape = (rows, *np.delete(np.array(shape), axis))
    values = np.zeros(out_shape, var.dtype.np)
    found = np.zeros(rows, bool)
    for i, w in enumerate(new_words[: info.new_vocab_size]):
        if w in position and position[w] < moved.shape[0]:
            values[i], found[i] = moved[position[w]], True
    values = np.moveaxis(values, 0, axis)
    if info.backup_initializer is None:
        return values
    mask_shape = [1] * len(shape)
    mask_shape[axis] = rows
    backup = info.backup_initializer(shape, dtype=var.dtype)
    return where(np.broadcast_to(found.reshape(mask_shape), shape), values, backup)


def warm_start(
    ckpt_to_initialize_from: str,
    vars_to_warm_start: Any = ".*",
    var_name_to_vocab_info: dict | None = None,
    var_name_to_prev_var_name: dict | None = None,
) -> None:
    """Initialise the chosen variables from a checkpoint (renamed, vocabularies remapped)."""
    if isinstance(vars_to_warm_start, str) or vars_to_warm_start is None:
        pattern = vars_to_warm_start or ".*"
        chosen = [
            v
            for n, v in _graph_variables(GraphKeys.TRAINABLE_VARIABLES).items()
            if re.match(pattern, n)
        ]
    else:
        graph_vars = _graph_variables()
        chosen = []
        for item in vars_to_warm_start:
            if isinstance(item, str):
                chosen += [
                    v for n, v in graph_vars.items() if re.match(item, n) and v not in chosen
                ]
            elif item not in chosen:
                chosen.append(item)
    vocab = var_name_to_vocab_info or {}
    renames = var_name_to_prev_var_name or {}
    for var in chosen:
        name = var.op.name
        prev = renames.get(name, name)
        old = load_variable(ckpt_to_initialize_from, prev)
        if name in vocab:
            _override(var, _remapped(var, old, vocab[name]), prev)
        else:
            _override(var, old, prev)


def summary_iterator(path: str) -> Iterator[Any]:
    """The ``Event`` protos of an event file, in order (TensorBoard's messages)."""
    event_pb2 = importlib.import_module("tensorboard.compat.proto.event_pb2")
    for record in tf_record_iterator(path):
        yield event_pb2.Event.FromString(record)


def generate_checkpoint_state_proto(
    save_dir: str,
    model_checkpoint_path: str,
    all_model_checkpoint_paths: list[str] | None = None,
    all_model_checkpoint_timestamps: Any = None,
    last_preserved_timestamp: Any = None,
) -> CheckpointState:
    """The ``CheckpointState`` naming the latest checkpoint and the kept ones (latest last)."""
    paths = list(all_model_checkpoint_paths or [])
    if not paths or paths[-1] != model_checkpoint_path:
        paths.append(model_checkpoint_path)
    return CheckpointState(model_checkpoint_path, paths)


class SessionCreator(abc.ABC):
    """The interface of the objects that make a ``MonitoredSession``'s session."""

    @abc.abstractmethod
    def create_session(self) -> Any:
        """A new session (initialised or restored)."""


SessionCreator.register(ChiefSessionCreator)


class GlobalStepWaiterHook(SessionRunHook):
    """Holds each run until the global step reaches ``wait_until_step`` (polling its value)."""

    def __init__(self, wait_until_step: int, poll_seconds: float = 0.5) -> None:
        self._wait_until_step = int(wait_until_step)
        self._poll = poll_seconds
        self._done = self._wait_until_step <= 0

    def begin(self) -> None:
        self._step = training_util.get_global_step()
        if self._step is None:
            raise RuntimeError("Global step should be created to use GlobalStepWaiterHook.")

    def before_run(self, run_context: Any) -> None:
        while not self._done:
            if int(run_context.session.run(self._step)) >= self._wait_until_step:
                self._done = True
            else:
                time.sleep(self._poll)
