"""MetaGraphDefs: a GraphDef with its collections, its Saver's description and some facts.

TF1 keeps a model's graph in a ``MetaGraphDef`` (``<prefix>.meta`` beside a
checkpoint, and one per tag set inside a SavedModel): the ``graph_def``, the
``saver_def`` (the names of the Saver's filename tensor and its save and
restore ops), a ``meta_info_def`` (tags, the version that wrote it) and the
``collection_def``: each graph collection as TensorFlow stores it,

- ``node_list``: names of ops (``train_op``) or tensors (``x:0``);
- ``bytes_list``: a variable collection's ``VariableDef`` messages, or raw bytes;
- ``int64_list`` / ``float_list``: numbers.

This module is the format's half: :func:`build_meta_graph_def` writes a graph
(devices cleared, or only the ops under ``export_scope`` with the scope taken
off their names), :func:`read_meta_graph_def` / :func:`write_meta_graph_def`
move it through files (binary or text; a damaged file is a ``ValueError``
naming it), and :func:`import_meta_graph_def` imports one into the default
graph under an ``import_scope`` and restores its collections.  Variables are
a layer up (``flowbook.train.meta_graph`` turns ``VariableDef`` entries back
into variables and builds the Saver); here a variable is anything with the
attributes of ``flowbook.Variable``, and a variable collection comes back as
its ``VariableDef`` messages, for the caller to rebuild.

The messages are TensorFlow's, from ``tensorboard.compat.proto``.

    >>> import flowbook as fb
    >>> g = fb.Graph()
    >>> with g.as_default():
    ...     x = fb.placeholder(fb.float32, name="x")
    ...     fb.add_to_collection("outputs", fb.identity(x * 2.0, name="y"))
    >>> mg = build_meta_graph_def(g)
    >>> list(mg.collection_def["outputs"].node_list.value)
    ['y:0']
    >>> with fb.Graph().as_default() as h:
    ...     _ = import_meta_graph_def(mg, import_scope="m")
    ...     [t.name for t in h.get_collection("outputs")]
    ['m/y:0']
"""

from __future__ import annotations

import os
from typing import Any

from google.protobuf import text_format
from google.protobuf.message import DecodeError

from flowbook.framework.graph import get_default_graph
from flowbook.framework.tensor import Operation, Tensor
from flowbook.graph_io.graph_def import import_graph_def, to_graph_def
from flowbook.platform.files import atomic_write

__all__ = [
    "VARIABLE_COLLECTIONS",
    "build_meta_graph_def",
    "import_meta_graph_def",
    "read_meta_graph_def",
    "variable_def",
    "write_meta_graph_def",
]

# the collections TensorFlow stores as VariableDef messages in a bytes_list
VARIABLE_COLLECTIONS = frozenset(
    {
        "variables",
        "local_variables",
        "model_variables",
        "trainable_variables",
        "moving_average_variables",
        "global_step",
        "metric_variables",
        "concatenated_variables",
        "trainable_resource_variables",
    }
)
TF_VERSION = "1.15.5"  # the TensorFlow version written in meta_info_def: flowbook's API is TF1's


def _pb() -> Any:
    from tensorboard.compat.proto import meta_graph_pb2  # slow to import: on first use

    return meta_graph_pb2


def _variable_pb() -> Any:
    from tensorboard.compat.proto import variable_pb2

    return variable_pb2


# ------------------------------------------------------------------ names
def _strip(name: str, scope: str | None) -> str | None:
    """``name`` without ``scope/`` (None when outside it); a leading ``^`` kept."""
    if not scope:
        return name
    caret = "^" if name.startswith("^") else ""
    bare = name[len(caret) :]
    if not bare.startswith(scope + "/"):
        return None
    return caret + bare[len(scope) + 1 :]


def _add_scope(name: str, scope: str | None) -> str:
    return f"{scope}/{name}" if scope else name


def _is_variable(v: Any) -> bool:
    return hasattr(v, "initializer") and hasattr(v, "_variable") and hasattr(v, "_snapshot")


def variable_def(v: Any, export_scope: str | None = None) -> Any:
    """The ``VariableDef`` message of a flowbook Variable (None when outside ``export_scope``).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     d = variable_def(fb.Variable(1.0, name="w"))
    >>> d.variable_name, d.snapshot_name, d.initializer_name, d.trainable
    ('w:0', 'w/read:0', 'w/Assign', True)
    """
    names = [v.name, v.initial_value.name, v.initializer.name, v.value().name]
    stripped = [_strip(n, export_scope) for n in names]
    if None in stripped:
        return None
    var_name, init_value, init_op, snapshot = stripped
    return _variable_pb().VariableDef(
        variable_name=var_name,
        initial_value_name=init_value,
        initializer_name=init_op,
        snapshot_name=snapshot,
        trainable=bool(v.trainable),
    )


# -------------------------------------------------------------- exporting
def _graph_def(graph: Any, graph_def: Any, export_scope: str | None, clear_devices: bool) -> Any:
    gd = to_graph_def(graph) if graph_def is None else graph_def
    out = type(gd)()
    out.CopyFrom(gd)
    if export_scope:
        del out.node[:]
        for node in gd.node:
            if _strip(node.name, export_scope) is None:
                continue
            new = out.node.add()
            new.CopyFrom(node)
            new.name = _strip(node.name, export_scope) or ""
            inputs = [_strip(i, export_scope) for i in node.input]
            if None in inputs:
                raise ValueError(
                    f"export_scope '{export_scope}': node '{node.name}' takes an input from "
                    f"outside the scope ({[i for i in node.input if _strip(i, export_scope) is None]})"
                )
            del new.input[:]
            new.input.extend(i for i in inputs if i is not None)
    if clear_devices:
        for node in out.node:
            node.device = ""
    return out


def _collection_def(proto: Any, key: str, items: list[Any], export_scope: str | None) -> None:
    """Add one collection to a MetaGraphDef, as TF stores it; items of other kinds are left out."""
    if key in VARIABLE_COLLECTIONS or all(_is_variable(v) for v in items):
        defs = [variable_def(v, export_scope) for v in items if _is_variable(v)]
        serialized = [d.SerializeToString() for d in defs if d is not None]
        if serialized:
            proto.collection_def[key].bytes_list.value.extend(serialized)
        return
    if all(isinstance(v, Tensor | Operation) for v in items):
        names = [_strip(v.name, export_scope) for v in items]
        if any(n is not None for n in names):
            proto.collection_def[key].node_list.value.extend(n for n in names if n is not None)
    elif all(isinstance(v, bool | int) and not isinstance(v, bool) for v in items):
        proto.collection_def[key].int64_list.value.extend(items)
    elif all(isinstance(v, float) for v in items):
        proto.collection_def[key].float_list.value.extend(items)
    elif all(isinstance(v, bytes | str) for v in items):
        values = [v.encode() if isinstance(v, str) else v for v in items]
        proto.collection_def[key].bytes_list.value.extend(values)


def build_meta_graph_def(
    graph: Any = None,
    graph_def: Any = None,
    meta_info_def: Any = None,
    saver_def: Any = None,
    collection_list: list[str] | None = None,
    export_scope: str | None = None,
    clear_devices: bool = False,
) -> Any:
    """The ``MetaGraphDef`` of ``graph`` (the default graph), as TF1's ``export_meta_graph``.

    Collections of other kinds of objects (queue runners, savers...) are left out,
    as TensorFlow leaves out the ones it cannot write.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default() as g:
    ...     _ = fb.constant(1.0, name="a")
    >>> build_meta_graph_def(g).graph_def.node[0].name
    'a'
    """
    graph = get_default_graph() if graph is None else graph
    proto = _pb().MetaGraphDef()
    if meta_info_def is not None:
        proto.meta_info_def.CopyFrom(meta_info_def)
    if not proto.meta_info_def.tensorflow_version:
        proto.meta_info_def.tensorflow_version = TF_VERSION
    if not proto.meta_info_def.tensorflow_git_version:
        proto.meta_info_def.tensorflow_git_version = "flowbook"
    proto.graph_def.CopyFrom(_graph_def(graph, graph_def, export_scope, clear_devices))
    if saver_def is not None:
        proto.saver_def.CopyFrom(saver_def)
    keys = graph.get_all_collection_keys() if collection_list is None else collection_list
    for key in sorted(k for k in keys if isinstance(k, str)):
        items = graph.get_collection(key)
        if items:
            _collection_def(proto, key, items, export_scope)
    return proto


def write_meta_graph_def(proto: Any, filename: str, as_text: bool = False) -> str:
    """Write a MetaGraphDef to ``filename`` (binary, or text format); returns the path."""
    folder = os.path.dirname(filename)
    if folder:
        os.makedirs(folder, exist_ok=True)
    text = text_format.MessageToString(proto) if as_text else proto.SerializeToString()
    atomic_write(filename, text)  # whole or not at all, as the checkpoint beside it
    return filename


def read_meta_graph_def(filename: str) -> Any:
    """A MetaGraphDef from a file, binary or text; ``ValueError`` naming the file if neither.

    >>> read_meta_graph_def("/no/such.meta")
    Traceback (most recent call last):
    OSError: File /no/such.meta does not exist.
    """
    if not os.path.isfile(filename):
        raise OSError(f"File {filename} does not exist.")
    with open(filename, "rb") as f:
        data = f.read()
    proto = _pb().MetaGraphDef()
    try:
        proto.ParseFromString(data)
        if proto.ListFields() or not data:
            return proto
    except (DecodeError, RuntimeError, ValueError):
        pass
    try:
        return text_format.Parse(data.decode("utf-8"), _pb().MetaGraphDef())
    except (text_format.ParseError, UnicodeDecodeError) as e:
        raise ValueError(f"{filename}: not a MetaGraphDef (neither binary nor text): {e}") from None


# -------------------------------------------------------------- importing
def _element(graph: Any, name: str, key: str) -> Any:
    try:
        return graph.as_graph_element(name)
    except (KeyError, ValueError) as e:
        raise ValueError(
            f"collection '{key}': {name!r} is not in the imported graph ({e})"
        ) from None


def _restore_collection(graph: Any, key: str, col: Any, scope: str | None) -> list[Any] | None:
    """Add one collection's entries to ``graph``; a variable collection's VariableDefs are
    returned instead, for the caller to make into variables."""
    kind = col.WhichOneof("kind")
    if kind == "node_list":
        for name in col.node_list.value:
            graph.add_to_collection(key, _element(graph, _add_scope(name, scope), key))
    elif kind == "bytes_list" and key in VARIABLE_COLLECTIONS:
        defs = []
        for data in col.bytes_list.value:
            d = _variable_pb().VariableDef()
            try:
                d.ParseFromString(data)
            except DecodeError as e:
                raise ValueError(f"collection '{key}': a damaged VariableDef ({e})") from None
            defs.append(d)
        return defs
    elif kind == "bytes_list":
        for data in col.bytes_list.value:
            graph.add_to_collection(key, data)
    elif kind in ("int64_list", "float_list"):
        for v in getattr(col, kind).value:
            graph.add_to_collection(key, v)
    return None


def import_meta_graph_def(
    meta_graph_def: Any,
    clear_devices: bool = False,
    import_scope: str | None = None,
    input_map: dict[str, Any] | None = None,
) -> dict[str, list[Any]]:
    """Import a MetaGraphDef's graph into the default graph (names under ``import_scope``)
    and its collections; returns {variable collection: [VariableDef]} for the caller.

    ``VariableDef`` names are as written (without ``import_scope``).
    """
    graph = get_default_graph()
    gd = meta_graph_def.graph_def
    if clear_devices:
        gd = _graph_def(graph, gd, None, True)
    import_graph_def(gd, input_map=input_map, name=import_scope or "")
    variables: dict[str, list[Any]] = {}
    for key in sorted(meta_graph_def.collection_def):
        defs = _restore_collection(graph, key, meta_graph_def.collection_def[key], import_scope)
        if defs is not None:
            variables[key] = defs
    return variables
