"""TF1's ``tf.saved_model``: ``simple_save``, ``builder.SavedModelBuilder`` and ``loader.load``.

Saving writes the session's variables with a ``Saver`` (a V2 checkpoint at
``<export_dir>/variables/variables``), copies the assets the graph's
``asset_filepaths`` collection names into ``assets/``, and adds one
``MetaGraphDef`` per tag set (the Saver's ``SaverDef``, the signatures) to the
``SavedModel`` message (``flowbook.graph_io.saved_model``) written by ``save``.
Loading picks the MetaGraph with the tags asked for, imports it
(``tf.train.import_meta_graph``), restores the variables by its Saver (the
graph's own restore op) and runs the ``main_op`` / ``legacy_init_op`` if it
has one; it returns the MetaGraphDef.

    >>> import os, tempfile, flowbook as fb
    >>> d = os.path.join(tempfile.mkdtemp(), "model")
    >>> with fb.Graph().as_default():
    ...     x = fb.placeholder(fb.float32, [None], name="x")
    ...     w = fb.Variable(3.0, name="w")
    ...     with fb.Session() as s:
    ...         s.run(w.initializer)
    ...         simple_save(s, d, {"x": x}, {"y": fb.multiply(x, w, name="y")})
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     mg = loader.load(s, [tag_constants.SERVING], d)
    ...     s.run(mg.signature_def["serving_default"].outputs["y"].name, {"x:0": [1.0, 2.0]}).tolist()
    [3.0, 6.0]
"""

from __future__ import annotations

import os
import shutil
from types import SimpleNamespace
from typing import Any

from flowbook.framework.graph import get_default_graph
from flowbook.graph_io import meta_graph as meta_graph_format
from flowbook.graph_io import saved_model as fmt
from flowbook.graph_io.saved_model import (
    build_signature_def,
    build_tensor_info,
    classification_signature_def,
    get_tensor_from_tensor_info,
    predict_signature_def,
    regression_signature_def,
    signature_constants,
    tag_constants,
)
from flowbook.train.meta_graph import import_meta_graph
from flowbook.train.saver import Saver

__all__ = [
    "builder",
    "constants",
    "load",
    "loader",
    "signature_constants",
    "signature_def_utils",
    "simple_save",
    "tag_constants",
    "utils",
]

MAIN_OP_KEY = "saved_model_main_op"
LEGACY_INIT_OP_KEY = "legacy_init_op"
ASSETS_KEY = "saved_model_assets"


def _variables_prefix(export_dir: str) -> str:
    return os.path.join(export_dir, fmt.VARIABLES_DIRECTORY, fmt.VARIABLES_FILENAME)


class SavedModelBuilder:
    """Builds a SavedModel in ``export_dir`` (which must not exist yet)."""

    def __init__(self, export_dir: str) -> None:
        export_dir = os.fspath(export_dir)
        if os.path.exists(export_dir):
            if os.listdir(export_dir):
                raise AssertionError(
                    f"Export directory already exists, and isn't empty. Please choose a different export directory, or delete all the contents of the specified directory: {export_dir}"
                )
        else:
            os.makedirs(export_dir)
        self._export_dir = export_dir
        self._proto = fmt.SavedModel(saved_model_schema_version=fmt.SCHEMA_VERSION)
        self._has_variables = False

    def _add(
        self,
        saver: Saver | None,
        tags: list[str],
        signature_def_map: dict | None,
        main_op: Any,
        clear_devices: bool,
    ) -> None:
        graph = get_default_graph()
        if main_op is not None:
            graph.clear_collection(MAIN_OP_KEY)
            graph.add_to_collection(MAIN_OP_KEY, main_op)
        proto = meta_graph_format.build_meta_graph_def(
            graph,
            saver_def=saver.as_saver_def() if saver is not None else None,
            clear_devices=clear_devices,
        )
        proto.meta_info_def.tags.extend(tags)
        for key, sig in (signature_def_map or {}).items():
            proto.signature_def[key].CopyFrom(sig)
        self._proto.meta_graphs.add().CopyFrom(proto)

    def _copy_assets(self, assets_collection: list | None) -> None:
        for asset in assets_collection or []:
            src = asset if isinstance(asset, str | bytes) else None
            if src is None:
                continue
            src = src.decode() if isinstance(src, bytes) else src
            folder = os.path.join(self._export_dir, fmt.ASSETS_DIRECTORY)
            os.makedirs(folder, exist_ok=True)
            shutil.copy(src, os.path.join(folder, os.path.basename(src)))

    def add_meta_graph_and_variables(
        self,
        sess: Any,
        tags: list[str],
        signature_def_map: dict | None = None,
        assets_collection: list | None = None,
        legacy_init_op: Any = None,
        clear_devices: bool = False,
        main_op: Any = None,
        strip_default_attrs: bool = False,
        saver: Saver | None = None,
    ) -> None:
        """Save ``sess``'s variables and add the graph's MetaGraph under ``tags``."""
        if self._has_variables:
            raise AssertionError(
                "Graph state including variables and assets has already been saved. Please invoke `add_meta_graph()` instead."
            )
        os.makedirs(os.path.join(self._export_dir, fmt.VARIABLES_DIRECTORY), exist_ok=True)
        saver = saver or Saver(allow_empty=True, write_version=2)
        saver.save(
            sess, _variables_prefix(self._export_dir), write_meta_graph=False, write_state=False
        )
        self._copy_assets(assets_collection)
        self._add(saver, list(tags), signature_def_map, main_op or legacy_init_op, clear_devices)
        self._has_variables = True

    def add_meta_graph(
        self,
        tags: list[str],
        signature_def_map: dict | None = None,
        assets_collection: list | None = None,
        legacy_init_op: Any = None,
        clear_devices: bool = False,
        main_op: Any = None,
        strip_default_attrs: bool = False,
        saver: Saver | None = None,
    ) -> None:
        """Add another MetaGraph (the default graph) under ``tags``; the variables are the
        ones saved by :meth:`add_meta_graph_and_variables`."""
        if not self._has_variables:
            raise AssertionError(
                "Graph state including variables and assets has not been saved yet. Please invoke `add_meta_graph_and_variables()` first."
            )
        saver = saver or Saver(allow_empty=True, write_version=2)
        self._add(saver, list(tags), signature_def_map, main_op or legacy_init_op, clear_devices)

    def save(self, as_text: bool = False) -> str:
        """Write ``saved_model.pb`` (``.pbtxt`` with ``as_text``); returns its path."""
        return fmt.write_saved_model(self._proto, self._export_dir, as_text=as_text)


def simple_save(
    session: Any, export_dir: str, inputs: dict, outputs: dict, legacy_init_op: Any = None
) -> None:
    """Save a model for serving: one MetaGraph tagged ``serve`` with the predict signature
    ``serving_default`` of ``inputs`` and ``outputs`` ({key: tensor})."""
    sig = {
        signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY: predict_signature_def(
            inputs, outputs
        )
    }
    b = SavedModelBuilder(export_dir)
    b.add_meta_graph_and_variables(
        session,
        [tag_constants.SERVING],
        signature_def_map=sig,
        legacy_init_op=legacy_init_op,
        clear_devices=True,
    )
    b.save()


def _pick(proto: Any, tags: list[str], export_dir: str) -> Any:
    want = set(tags)
    for mg in proto.meta_graphs:
        if set(mg.meta_info_def.tags) == want:
            return mg
    found = [list(mg.meta_info_def.tags) for mg in proto.meta_graphs]
    raise RuntimeError(
        f"MetaGraphDef associated with tags {sorted(want)} could not be found in SavedModel {export_dir}; it holds the tag sets {found}"
    )


def load(
    sess: Any,
    tags: list[str],
    export_dir: str,
    import_scope: str | None = None,
    **saver_kwargs: Any,
) -> Any:
    """Load the MetaGraph tagged ``tags`` from the SavedModel in ``export_dir`` into
    ``sess``'s graph, restore its variables and run its init op; returns the MetaGraphDef."""
    export_dir = os.fspath(export_dir)
    mg = _pick(fmt.read_saved_model(export_dir), list(tags), export_dir)
    with sess.graph.as_default():
        saver = import_meta_graph(mg, import_scope=import_scope, **saver_kwargs)
        prefix = _variables_prefix(export_dir)
        if saver is not None and os.path.exists(prefix + ".index"):
            saver.restore(sess, prefix)
        for key in (MAIN_OP_KEY, LEGACY_INIT_OP_KEY):
            ops = sess.graph.get_collection(key)
            if ops:
                sess.run(ops[0])
                break
    return mg


def maybe_saved_model_directory(export_dir: str) -> bool:
    """Whether ``export_dir`` holds a ``saved_model.pb`` or ``.pbtxt``."""
    return any(
        os.path.isfile(os.path.join(export_dir, f))
        for f in (fmt.SAVED_MODEL_FILENAME_PB, fmt.SAVED_MODEL_FILENAME_PBTXT)
    )


# tf.saved_model's sub-namespaces, as TF1 spelled them
builder = SimpleNamespace(SavedModelBuilder=SavedModelBuilder)
loader = SimpleNamespace(load=load, maybe_saved_model_directory=maybe_saved_model_directory)
utils = SimpleNamespace(
    build_tensor_info=build_tensor_info, get_tensor_from_tensor_info=get_tensor_from_tensor_info
)
signature_def_utils = SimpleNamespace(
    build_signature_def=build_signature_def,
    predict_signature_def=predict_signature_def,
    regression_signature_def=regression_signature_def,
    classification_signature_def=classification_signature_def,
)
constants = SimpleNamespace(
    SAVED_MODEL_SCHEMA_VERSION=fmt.SCHEMA_VERSION,
    SAVED_MODEL_FILENAME_PB=fmt.SAVED_MODEL_FILENAME_PB,
    SAVED_MODEL_FILENAME_PBTXT=fmt.SAVED_MODEL_FILENAME_PBTXT,
    VARIABLES_DIRECTORY=fmt.VARIABLES_DIRECTORY,
    VARIABLES_FILENAME=fmt.VARIABLES_FILENAME,
    ASSETS_DIRECTORY=fmt.ASSETS_DIRECTORY,
    MAIN_OP_KEY=MAIN_OP_KEY,
    LEGACY_INIT_OP_KEY=LEGACY_INIT_OP_KEY,
)
Builder = SavedModelBuilder
