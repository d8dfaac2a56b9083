"""``tf.train.export_meta_graph`` and ``tf.train.import_meta_graph``: a graph, its
collections and its Saver through a ``MetaGraphDef`` (``<prefix>.meta``).

The format's half (writing and reading the message, collections of names and
numbers) is ``flowbook.graph_io.meta_graph``; this module adds what needs the
layers above it: variables and the Saver.

Importing makes each ``VariableDef`` of a variable collection into a
``flowbook.Variable`` over the imported ops (its ``VariableV2``, ``Assign``
initializer and ``read`` snapshot), one object per variable however many
collections hold it.  The Saver returned is made from the MetaGraph's
``saver_def``: its ``restore`` runs the graph's own restore op (``RestoreV2``
and ``Assign``s, fed the checkpoint prefix), as TensorFlow does, so a graph
written by TensorFlow restores a TensorFlow checkpoint.  With no ``saver_def``
but some variables, a new ``Saver`` over them is made; with neither, None.

    >>> import os, tempfile, flowbook as fb
    >>> path = os.path.join(tempfile.mkdtemp(), "model.ckpt")
    >>> with fb.Graph().as_default():
    ...     w = fb.Variable([1.0, 2.0], name="w")
    ...     y = fb.multiply(w, 2.0, name="y")
    ...     with fb.Session() as s:
    ...         s.run(w.initializer)
    ...         _ = fb.train.Saver().save(s, path, write_meta_graph=True)
    >>> with fb.Graph().as_default() as g:
    ...     saver = import_meta_graph(path + ".meta")
    ...     with fb.Session() as s:
    ...         saver.restore(s, path)
    ...         s.run("y:0").tolist()
    [2.0, 4.0]
"""

from __future__ import annotations

from typing import Any

from flowbook.framework.graph import get_default_graph
from flowbook.graph_io import meta_graph
from flowbook.train.saver import Saver
from flowbook.variables.variables import Variable

__all__ = ["export_meta_graph", "import_meta_graph", "variable_from_def"]


def export_meta_graph(
    filename: str | None = None,
    meta_info_def: Any = None,
    graph_def: Any = None,
    saver_def: Any = None,
    collection_list: list[str] | None = None,
    as_text: bool = False,
    graph: Any = None,
    export_scope: str | None = None,
    clear_devices: bool = False,
    clear_extraneous_savers: bool = False,
    strip_default_attrs: bool = False,
    save_debug_info: bool = False,
    **kwargs: Any,
) -> Any:
    """The ``MetaGraphDef`` of ``graph`` (the default one), written to ``filename`` if given.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     _ = fb.Variable(1.0, name="w")
    ...     mg = export_meta_graph()
    >>> sorted(mg.collection_def)
    ['trainable_variables', 'variables']
    """
    proto = meta_graph.build_meta_graph_def(
        graph if graph is not None else get_default_graph(),
        graph_def=graph_def,
        meta_info_def=meta_info_def,
        saver_def=saver_def,
        collection_list=collection_list,
        export_scope=export_scope,
        clear_devices=clear_devices,
    )
    if filename:
        meta_graph.write_meta_graph_def(proto, filename, as_text=as_text)
    return proto


def variable_from_def(
    variable_def: Any, import_scope: str | None = None, graph: Any = None
) -> Variable:
    """A ``Variable`` over the ops a ``VariableDef`` names (imported under ``import_scope``)."""
    graph = get_default_graph() if graph is None else graph

    def find(name: str) -> Any:
        full = f"{import_scope}/{name}" if import_scope else name
        try:
            return graph.as_graph_element(full)
        except (KeyError, ValueError) as e:
            raise ValueError(f"VariableDef of '{variable_def.variable_name}': {e}") from None

    v = Variable.__new__(Variable)
    v._variable = find(variable_def.variable_name)
    v._initializer_op = find(variable_def.initializer_name)
    v._snapshot = find(variable_def.snapshot_name)
    v._initial_value = (
        find(variable_def.initial_value_name) if variable_def.initial_value_name else v._snapshot
    )
    v._trainable = bool(variable_def.trainable)
    return v


def _scoped_saver_def(saver_def: Any, scope: str | None) -> Any:
    if not scope:
        return saver_def
    out = type(saver_def)()
    out.CopyFrom(saver_def)
    for field in ("filename_tensor_name", "save_tensor_name", "restore_op_name"):
        setattr(out, field, f"{scope}/{getattr(saver_def, field)}")
    return out


def import_meta_graph(
    meta_graph_or_file: Any,
    clear_devices: bool = False,
    import_scope: str | None = None,
    input_map: dict[str, Any] | None = None,
    **kwargs: Any,
) -> Saver | None:
    """Import a MetaGraph (a ``MetaGraphDef`` or a file) into the default graph; returns its
    Saver (see the module docstring), or None when it has neither a ``saver_def`` nor variables.
    """
    if isinstance(meta_graph_or_file, str | bytes) or hasattr(meta_graph_or_file, "__fspath__"):
        proto = meta_graph.read_meta_graph_def(str(meta_graph_or_file))
    else:
        proto = meta_graph_or_file
    graph = get_default_graph()
    variable_defs = meta_graph.import_meta_graph_def(
        proto, clear_devices=clear_devices, import_scope=import_scope, input_map=input_map
    )
    made: dict[str, Variable] = {}
    for key, defs in variable_defs.items():
        for d in defs:
            if d.variable_name not in made:
                made[d.variable_name] = variable_from_def(d, import_scope, graph)
            graph.add_to_collection(key, made[d.variable_name])
    if proto.HasField("saver_def") and proto.saver_def.restore_op_name:
        return Saver(saver_def=_scoped_saver_def(proto.saver_def, import_scope))
    if made:
        return Saver()
    return None
