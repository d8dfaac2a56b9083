"""``Saver``: save variables to checkpoints and restore them (TF1's ``tf.train.Saver``).

``save(sess, "dir/model.ckpt", global_step=100)`` fetches every variable's
value in ``sess`` and writes TensorFlow's checkpoint format V2,
``dir/model.ckpt-100.index`` and ``dir/model.ckpt-100.data-00000-of-00001``
(``checkpoint_utils``, ``tensor_bundle``: TensorFlow restores it, and flowbook
restores TensorFlow's), or with ``write_version=SaverDef.V1`` flowbook's single
``dir/model.ckpt-100.npz``; then it records it in ``dir/checkpoint``
(``checkpoint_management``) and deletes checkpoints beyond ``max_to_keep``.
It returns the prefix ``dir/model.ckpt-100``, which ``restore`` takes, as does
``latest_checkpoint("dir")``.

``restore`` reads either format, the whole checkpoint first, and checks it against the Saver's
variables -- every name present, every dtype and shape equal -- and only then
assigns, in one ``Session.run``, so a bad checkpoint changes nothing.  The
assigning is done by ops built once, when the Saver is built (under the name
scope ``save``): per variable a placeholder and an ``Assign`` from it, grouped
into ``save/restore_all``.  Restoring feeds the placeholders, so any number of
restores add nothing to the graph.

State, per Saver:
``_vars``: {checkpoint name: the variable's VariableV2 output}, in name order;
``_feeds``: {checkpoint name: its placeholder}; ``_restore_op``: the group;
``_last_checkpoints``: [(prefix, time saved)], oldest first, at most max_to_keep.

TensorFlow's own saving ops are built too (format V2), under the names TF1
gives them, for a graph that TensorFlow (or flowbook) imports from a MetaGraph:
``save/Const`` (the filename, a ``PlaceholderWithDefault``), ``save/SaveV2``
and ``save/control_dependency``, ``save/RestoreV2`` and one ``Assign`` per
variable grouped into ``save/restore_all`` (the fed group above is then
``save/restore_fed``).  :meth:`Saver.as_saver_def` names them in a ``SaverDef``,
and ``save`` writes ``<prefix>.meta`` with it (``write_meta_graph=False``: not).
A Saver made from a ``SaverDef`` (``tf.train.import_meta_graph`` makes one)
runs the graph's ops by those names instead, as TensorFlow does.

    >>> import os, tempfile, flowbook as fb
    >>> d = tempfile.mkdtemp()
    >>> with fb.Graph().as_default():
    ...     w = fb.Variable([1.0, 2.0], name="w")
    ...     saver = fb.train.Saver()
    ...     with fb.Session() as s:
    ...         _ = s.run(w.initializer)
    ...         path = saver.save(s, os.path.join(d, "model.ckpt"), global_step=3)
    ...     with fb.Session() as s:
    ...         saver.restore(s, fb.train.latest_checkpoint(d)); s.run(w).tolist()
    [1.0, 2.0]
    >>> os.path.basename(path)
    'model.ckpt-3'
"""

from __future__ import annotations

import contextlib
import numbers
import os
import time
from typing import Any

import numpy as np

from flowbook.framework.errors import InvalidArgumentError, NotFoundError
from flowbook.framework.graph import GraphKeys, get_default_graph
from flowbook.framework.tensor import Operation, Tensor
from flowbook.framework.tensor_shape import compatible, fmt, num_elements
from flowbook.graph_io import meta_graph
from flowbook.ops._builder import make, make1
from flowbook.ops.array.constant_op import constant, placeholder
from flowbook.ops.array.placeholder_ops import placeholder_with_default
from flowbook.ops.control_flow.control_flow_ops import group
from flowbook.ops.io.save_restore_ops import lend_bundle_io
from flowbook.ops.state import state_ops
from flowbook.train import checkpoint_management as cm
from flowbook.train import training_util
from flowbook.train.checkpoint_utils import read_checkpoint, write_checkpoint
from flowbook.train.tensor_bundle import read_bundle, write_bundle

lend_bundle_io(read_bundle, write_bundle)  # the SaveV2/RestoreV2 kernels read and write bundles


def _saver_pb() -> Any:
    from tensorboard.compat.proto import saver_pb2  # slow to import: on first use

    return saver_pb2


def _tf_save_ops(variables: dict[str, Tensor]) -> tuple[Tensor, Tensor, Operation]:
    """TF1's save and restore ops for ``variables`` in the current name scope:
    (filename tensor, save tensor, restore op)."""
    names, refs = list(variables), list(variables.values())
    filename = placeholder_with_default(
        constant("model", name="filename/input"), shape=(), name="filename"
    )
    filename = placeholder_with_default(filename, shape=(), name="Const")
    dtypes = [r.dtype for r in refs]
    specs = [
        constant(names, name="SaveV2/tensor_names"),
        constant([""] * len(names), name="SaveV2/shape_and_slices"),
    ]
    save = make("SaveV2", (filename, *specs, *refs), {"dtypes": dtypes}, name="SaveV2")
    with get_default_graph().control_dependencies([save]):
        saved = make1("Identity", (filename,), name="control_dependency")
    specs = [
        constant(names, name="RestoreV2/tensor_names"),
        constant([""] * len(names), name="RestoreV2/shape_and_slices"),
    ]
    restored = make("RestoreV2", (filename, *specs), {"dtypes": dtypes}, name="RestoreV2").outputs
    assigns = [
        state_ops.assign(ref, value, validate_shape=ref._shape is not None, name="Assign").op
        for ref, value in zip(refs, restored)
    ]
    return filename, saved, group(*assigns, name="restore_all")


def _name_of(v: Any) -> str:
    return v.op.name


def _var_map(var_list: Any, graph: Any) -> dict[str, Tensor]:
    """{checkpoint name: VariableV2 output} for a list or dict of variables."""
    if var_list is None:
        var_list = graph.get_collection(GraphKeys.GLOBAL_VARIABLES) + graph.get_collection(
            "saveable_objects"
        )
    items = list(var_list.items()) if isinstance(var_list, dict) else [(None, v) for v in var_list]
    out: dict[str, Tensor] = {}
    for name, v in items:
        try:
            ref = state_ops._ref(v)
        except TypeError:
            raise TypeError(
                f"Saver can only save and restore variables (fb.Variable), got {v!r}"
            ) from None
        name = name if name is not None else _name_of(v)
        if name in out:
            raise ValueError(f"At least two variables have the same name: {name}")
        out[name] = ref
    return dict(sorted(out.items()))


class Saver:
    """Saves and restores variables (TF1's ``tf.train.Saver``); see the module docstring."""

    def __init__(
        self,
        var_list: Any = None,
        reshape: bool = False,
        sharded: bool = False,
        max_to_keep: int | None = 5,
        keep_checkpoint_every_n_hours: float = 10000.0,
        name: str | None = None,
        restore_sequentially: bool = False,
        saver_def: Any = None,
        builder: Any = None,
        defer_build: bool = False,
        allow_empty: bool = False,
        write_version: int = 2,
        pad_step_number: bool = False,
        save_relative_paths: bool = False,
        filename: str | None = None,
    ) -> None:
        if builder is not None:
            raise NotImplementedError("flowbook's Saver takes no builder")
        self._saver_def = saver_def  # given: save and restore run the graph's ops it names
        if saver_def is not None:
            max_to_keep = saver_def.max_to_keep
            keep_checkpoint_every_n_hours = saver_def.keep_checkpoint_every_n_hours or 10000.0
            write_version = saver_def.version or 2
            sharded = saver_def.sharded
        self._var_list = var_list  # as given; read when the restore ops are built
        self._reshape = reshape  # restore a value of another shape with as many elements
        self._max_to_keep = max_to_keep  # checkpoints kept on disk; None or 0 keeps all
        self._keep_every_s = keep_checkpoint_every_n_hours * 3600.0
        self._next_checkpoint_time = time.time() + self._keep_every_s  # keep one older than this
        self._name = name  # name scope of the restore ops (default "save")
        self._allow_empty = allow_empty
        self._pad_step_number = pad_step_number  # model.ckpt-00000100
        self._filename = filename  # default save_path of save()
        self._write_version = int(write_version)  # SaverDef.V2 (TF's format) or V1 (.npz)
        self._last_checkpoints: list[tuple[str, float]] = []  # (prefix, time), oldest first
        self._to_delete: list[tuple[str, float]] = []  # fell off the list; deleted after saving
        self._graph = get_default_graph()
        self._vars: dict[str, Tensor] | None = None  # set by build()
        self._feeds: dict[str, Tensor] = {}
        self._restore_op: Operation | None = None
        self._sharded = sharded
        self._tf_ops: tuple[Tensor, Tensor, Operation] | None = None  # TF1's save/restore ops
        if not defer_build:
            self.build()

    def build(self) -> None:
        """Build the restore ops (done at construction unless ``defer_build``)."""
        if self._vars is not None:
            return
        if self._saver_def is not None:
            self._vars = {}
            return
        variables = _var_map(self._var_list, self._graph)
        if variables:
            self._graph = next(iter(variables.values())).graph
        elif not self._allow_empty:
            raise ValueError("No variables to save")
        graph = self._graph
        with (
            graph.as_default(),
            graph.control_dependencies(None),
            graph.name_scope(None),
            graph.name_scope(self._name or "save"),
        ):
            assigns = []
            for name, ref in variables.items():
                ph = placeholder(ref.dtype, shape=ref._shape, name="value")
                known = ref._shape is not None and None not in ref._shape
                assigns.append(state_ops.assign(ref, ph, validate_shape=known).op)
                self._feeds[name] = ph
            self._restore_op = group(*assigns, name="restore_fed")
            if variables and self._write_version == 2:
                self._tf_ops = _tf_save_ops(variables)
        self._vars = variables

    # ----------------------------------------------------------- SaverDef
    def as_saver_def(self) -> Any:
        """The ``SaverDef`` message naming this Saver's filename tensor, save tensor and
        restore op (TF1's names: ``save/Const:0``, ``save/control_dependency:0``,
        ``save/restore_all``), as a MetaGraph stores it.

        >>> import flowbook as fb
        >>> with fb.Graph().as_default():
        ...     _ = fb.Variable(1.0, name="w")
        ...     fb.train.Saver().as_saver_def().restore_op_name
        'save/restore_all'
        """
        self.build()
        if self._saver_def is not None:
            return self._saver_def
        pb = _saver_pb()
        proto = pb.SaverDef(
            max_to_keep=self._max_to_keep or 0,
            sharded=bool(self._sharded),
            keep_checkpoint_every_n_hours=self._keep_every_s / 3600.0,
            version=pb.SaverDef.V2 if self._write_version == 2 else pb.SaverDef.V1,
        )
        if self._tf_ops is not None:
            filename, saved, restore = self._tf_ops
            proto.filename_tensor_name = filename.name
            proto.save_tensor_name = saved.name
            proto.restore_op_name = restore.name
        return proto

    @property
    def saver_def(self) -> Any:
        """:meth:`as_saver_def`."""
        return self.as_saver_def()

    def export_meta_graph(
        self,
        filename: str | None = None,
        collection_list: list[str] | None = None,
        as_text: bool = False,
        export_scope: str | None = None,
        clear_devices: bool = False,
        clear_extraneous_savers: bool = False,
        strip_default_attrs: bool = False,
        save_debug_info: bool = False,
    ) -> Any:
        """Write (when ``filename`` is given) and return the graph's ``MetaGraphDef``,
        with this Saver's ``SaverDef``."""
        proto = meta_graph.build_meta_graph_def(
            self._graph,
            saver_def=self.as_saver_def(),
            collection_list=collection_list,
            export_scope=export_scope,
            clear_devices=clear_devices,
        )
        if filename:
            meta_graph.write_meta_graph_def(proto, filename, as_text=as_text)
        return proto

    # --------------------------------------------------------------- saving
    def save(
        self,
        sess: Any,
        save_path: str,
        global_step: Any = None,
        latest_filename: str | None = None,
        meta_graph_suffix: str = "meta",
        write_meta_graph: bool = True,
        write_state: bool = True,
        strip_default_attrs: bool = False,
        save_debug_info: bool = False,
    ) -> str:
        """Save the variables' values in ``sess``; returns the checkpoint prefix written.

        With ``global_step`` (an int, or a variable/tensor run in ``sess``) the
        prefix is ``save_path-<step>``.  With ``write_meta_graph`` (on, as in TF1) the graph
        goes to ``<prefix>.<meta_graph_suffix>`` too, which ``import_meta_graph`` reads.
        """
        self.build()
        self._check_session(sess)
        if latest_filename and os.path.split(latest_filename)[0]:
            raise ValueError("'latest_filename' must not contain path components")
        if save_path is None:
            save_path = self._filename
        if save_path is None:
            raise ValueError("save() needs a save_path, like 'checkpoints/model.ckpt'.")
        save_path = os.fspath(save_path)
        prefix = save_path
        if global_step is not None:
            if not isinstance(global_step, numbers.Integral):
                global_step = training_util.global_step(sess, global_step)
            step = int(global_step)
            prefix = f"{save_path}-{step:08d}" if self._pad_step_number else f"{save_path}-{step}"
        parent = os.path.dirname(save_path)
        if not os.path.isdir(parent or "."):
            raise ValueError(f"Parent directory of {save_path} doesn't exist, can't save.")
        self._write(sess, prefix)
        if write_meta_graph:
            self.export_meta_graph(f"{prefix}.{meta_graph_suffix}")
        if write_state:
            self._record(prefix)
            cm.update_checkpoint_state(
                parent, prefix, self.last_checkpoints, latest_filename=latest_filename
            )
            self._delete_old()
        return prefix

    def _write(self, sess: Any, prefix: str) -> None:
        if self._saver_def is not None:  # the graph's own save op, as TensorFlow runs it
            sd = self._saver_def
            sess.run(sd.save_tensor_name, {sd.filename_tensor_name: prefix})
            return
        assert self._vars is not None
        names = list(self._vars)
        values = sess.run([self._vars[n] for n in names]) if names else []
        write_checkpoint(prefix, dict(zip(names, values)), write_version=self._write_version)

    def _record(self, prefix: str) -> None:
        if not self._max_to_keep:
            return
        self._last_checkpoints = [(p, t) for p, t in self._last_checkpoints if p != prefix]
        self._last_checkpoints.append((prefix, time.time()))
        if len(self._last_checkpoints) > self._max_to_keep:
            self._to_delete.append(self._last_checkpoints.pop(0))

    def _delete_old(self) -> None:
        while self._to_delete:
            prefix, saved_at = self._to_delete.pop(0)
            if saved_at > self._next_checkpoint_time:  # keep_checkpoint_every_n_hours
                self._next_checkpoint_time += self._keep_every_s
                continue
            for path in [*cm.checkpoint_files(prefix), f"{prefix}.meta"]:
                with contextlib.suppress(FileNotFoundError):
                    os.remove(path)

    @property
    def last_checkpoints(self) -> list[str]:
        """The prefixes of the checkpoints not yet deleted, oldest first."""
        return [p for p, _ in self._last_checkpoints]

    def set_last_checkpoints_with_time(self, last_checkpoints_with_time: list[Any]) -> None:
        self._last_checkpoints = [(p, float(t)) for p, t in last_checkpoints_with_time]

    def recover_last_checkpoints(self, checkpoint_paths: list[str]) -> None:
        """Adopt existing checkpoints (e.g. ``get_checkpoint_state(d).all_model_checkpoint_paths``)
        so ``max_to_keep`` counts them.
        """
        found = []
        for p in checkpoint_paths:
            with contextlib.suppress(OSError):
                found.append((p, cm.checkpoint_mtime(p)))
        self.set_last_checkpoints_with_time(found)

    # ------------------------------------------------------------ restoring
    def restore(self, sess: Any, save_path: str) -> None:
        """Set the variables in ``sess`` to the values saved at prefix ``save_path``.

        NotFoundError if the checkpoint lacks some of the variables,
        InvalidArgumentError if a dtype or shape differs; either names every
        such variable, and no variable is changed.
        """
        self.build()
        if save_path is None:
            raise ValueError("Can't load save_path when it is None.")
        self._check_session(sess)
        save_path = os.fspath(save_path)
        if not cm.checkpoint_exists(save_path):
            raise ValueError(f"The passed save_path is not a valid checkpoint: {save_path}")
        if self._saver_def is not None:  # the graph's own restore op, as TensorFlow runs it
            sd = self._saver_def
            sess.run(sd.restore_op_name, {sd.filename_tensor_name: save_path})
            return
        feed = self._validated_feed(read_checkpoint(save_path), save_path)
        if feed:
            sess.run(self._restore_op, feed_dict=feed)

    def _validated_feed(self, saved: dict[str, np.ndarray], save_path: str) -> dict[Tensor, Any]:
        assert self._vars is not None
        missing = [n for n in self._vars if n not in saved]
        bad: list[str] = []
        feed: dict[Tensor, Any] = {}
        for name, ref in self._vars.items():
            if name in missing:
                continue
            value = saved[name]
            want = ref.dtype
            got = "string" if value.dtype == object else value.dtype.name
            if got != want.name:
                bad.append(f"'{name}': dtype {want.name} in the graph, {got} in the checkpoint")
                continue
            shape = ref._shape
            if not compatible(shape, value.shape):
                if self._reshape and shape is not None and num_elements(shape) == value.size:
                    value = value.reshape(shape)
                else:
                    bad.append(
                        f"'{name}': shape {fmt(shape)} in the graph, {fmt(value.shape)} in the "
                        "checkpoint"
                    )
                    continue
            feed[self._feeds[name]] = value
        where = f"checkpoint {save_path}"
        if missing:
            more = f"; also mismatched: {'; '.join(bad)}" if bad else ""
            raise NotFoundError(
                None,
                None,
                f"Restoring from checkpoint failed: {len(missing)} variable(s) not found in "
                f"{where}: {', '.join(repr(n) for n in missing)}{more}. Nothing was restored. "
                f"The checkpoint holds {sorted(saved)}; did the graph change since it was saved?",
            )
        if bad:
            raise InvalidArgumentError(
                None,
                None,
                f"Restoring from checkpoint failed: {len(bad)} variable(s) do not match {where}: "
                f"{'; '.join(bad)}. Nothing was restored.",
            )
        return feed

    def _check_session(self, sess: Any) -> None:
        if not hasattr(sess, "run"):
            raise TypeError(f"'sess' must be a Session; {sess}")
        graph = getattr(sess, "graph", None)
        if graph is not None and graph is not self._graph:
            raise ValueError(
                "The session runs another graph than the one this Saver was built in "
                "(was the Saver made before reset_default_graph() or under another Graph?)."
            )
