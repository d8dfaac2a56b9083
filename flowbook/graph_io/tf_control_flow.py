"""TensorFlow's form of control-flow and stack nodes, for GraphDef export.

flowbook declares the whitepaper's control-flow primitives and its loop
gradient's stacks with fewer attrs than TensorFlow's registry gives them, and
its loop gradient uses TF1's first stack ops (``Stack``/``StackPush``/
``StackPop``, whose handle is a string ref TensorFlow 2 no longer passes
between frames).  :func:`to_tf_form` rewrites one exported NodeDef so that
TensorFlow's importer accepts it and its executor computes the same values:

- ``Merge``/``RefMerge`` count their inputs in ``N``;
- ops whose TensorFlow OpDef has no ``T`` (``LoopCond``, ``Any``, ``All``,
  ``StackPop``...) lose the ``T`` the export derives from their first input;
- ``Stack`` becomes ``StackV2``, whose ``max_size`` input (-1, no cap) is a
  new Const node beside it, with the Stack's control inputs, so it lives in
  the same frame; ``StackPush``/``StackPop`` become ``StackPushV2``/
  ``StackPopV2`` (``T`` is the pushed element's dtype);
- a stack handle is a ``DT_RESOURCE`` tensor to TensorFlow, so the ops that
  forward one (the Enter that takes it into a loop, an Identity...) write
  ``T`` as ``DT_RESOURCE``: :func:`handle_tensors` finds those tensors.

A GraphDef TensorFlow wrote imports as it is: flowbook declares the
``StackV2`` family (``flowbook.ops.control_flow.resource_stack_ops``) on the
same run-time stacks, and drops ``T``/``N`` as it drops every polymorphic
attr.  So that flowbook's own graphs come back exactly as they were, the
rewritten stack nodes carry the attr ``_flowbook_type`` (their flowbook op
type; empty on the ``max_size`` Const, which only the export makes), which
TensorFlow ignores as it ignores every attr named with a leading underscore,
and :func:`from_tf_form` undoes the rewrite before an import.

    >>> import flowbook as fb
    >>> from flowbook.graph_io.graph_def import to_graph_def
    >>> g = fb.Graph()
    >>> with g.as_default():
    ...     y = fb.cond(fb.constant(True), lambda: fb.constant(1.0), lambda: fb.constant(2.0))
    >>> merge = next(n for n in to_graph_def(g).node if n.op == "Merge")
    >>> merge.attr["N"].i, sorted(merge.attr)
    (2, ['N', 'T'])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowbook.graph_io.graph_def import DT_ENUM, _tensor_proto

DT_RESOURCE = 20  # TensorFlow's DataType enum value of a resource handle

# op types whose NodeDef counts its (variadic) inputs in an attr TensorFlow requires
COUNT_ATTRS: dict[str, str] = {"Merge": "N", "RefMerge": "N"}
# op types whose TensorFlow OpDef has no ``T``: the one the export derives is dropped
NO_T: frozenset[str] = frozenset(
    {"LoopCond", "Any", "All", "Stack", "StackPop", "StackV2", "StackPopV2", "StackCloseV2"}
)
# flowbook's stack ops -> TensorFlow's resource-handle ones
STACK_V2: dict[str, str] = {
    "Stack": "StackV2",
    "StackPush": "StackPushV2",
    "StackPop": "StackPopV2",
}
# ops that pass their first input on unchanged (a handle stays a handle through them)
FORWARDING: frozenset[str] = frozenset(
    {
        "Identity", "Enter", "RefEnter", "Exit", "RefExit", "Switch", "RefSwitch",
        "Merge", "RefMerge", "NextIteration", "RefNextIteration",
    }
)  # fmt: skip
_HANDLE_MAKERS = frozenset({"Stack", "StackV2"})
MARK = "_flowbook_type"  # on a rewritten node: the flowbook op type it was ("": export-only)


def handle_tensors(ops: list[Any]) -> set[str]:
    """Names of the tensors holding a stack handle, among ``ops`` (in creation order).

    >>> handle_tensors([])
    set()
    """
    handles: set[str] = set()
    for op in ops:
        if op.type in _HANDLE_MAKERS or (
            op.type in FORWARDING and op.inputs and op.inputs[0].name in handles
        ):
            handles.update(t.name for t in op.outputs)
    return handles


def to_tf_form(op: Any, node: Any, graph_def: Any, handles: set[str], taken: set[str]) -> None:
    """Rewrite ``node`` (the NodeDef just written for ``op``) into TensorFlow's form.

    A node that needs a new neighbour (``StackV2``'s ``max_size``) gets it
    appended to ``graph_def``, named apart from the names in ``taken``
    (which it then joins).

    >>> from tensorboard.compat.proto import graph_pb2
    >>> gd = graph_pb2.GraphDef()
    >>> node = gd.node.add(name="c", op="LoopCond")
    >>> node.attr["T"].type = 10
    >>> class Op:  # what to_tf_form reads of an Operation
    ...     type, name, inputs, outputs, control_inputs = "LoopCond", "c", (), (), ()
    >>> to_tf_form(Op(), node, gd, set(), set())
    >>> sorted(node.attr)
    []
    """
    if op.type in COUNT_ATTRS:
        node.attr[COUNT_ATTRS[op.type]].i = len(op.inputs)
    if op.type in FORWARDING and op.inputs and op.inputs[0].name in handles:
        node.attr["T"].type = DT_RESOURCE
    if op.type == "Stack":
        _stack_v2(op, node, graph_def, taken)
    elif op.type == "StackPush":
        node.attr["T"].type = DT_ENUM[op.inputs[1].dtype.name]
    if op.type in STACK_V2:
        node.attr[MARK].s = op.type.encode()
        node.op = STACK_V2[op.type]
    if node.op in NO_T and "T" in node.attr:
        del node.attr["T"]


def _stack_v2(op: Any, node: Any, graph_def: Any, taken: set[str]) -> None:
    """A ``StackV2`` takes its ``max_size`` from a Const made beside it (-1: no cap)."""
    name, k = f"{op.name}/max_size", 0
    while name in taken:
        k += 1
        name = f"{op.name}/max_size_{k}"
    taken.add(name)
    const = graph_def.node.add(name=name, op="Const", device=node.device)
    const.input.extend(f"^{c.name}" for c in op.control_inputs)
    const.attr["dtype"].type = DT_ENUM["int32"]
    const.attr[MARK].s = b""
    _tensor_proto(np.array(-1, np.int32), const.attr["value"].tensor)
    controls = [i for i in node.input if i.startswith("^")]
    del node.input[:]
    node.input.extend([name, *controls])


def from_tf_form(graph_def: Any) -> Any:
    """``graph_def`` with the stack nodes flowbook's export rewrote put back as flowbook's ops
    (itself when it has none): a marked ``StackV2`` is a ``Stack`` again, without the
    ``max_size`` Const the export made for it.

    >>> from tensorboard.compat.proto import graph_pb2
    >>> gd = graph_pb2.GraphDef()
    >>> from_tf_form(gd) is gd
    True
    """
    if not any(MARK in n.attr for n in graph_def.node):
        return graph_def
    out = type(graph_def)()
    out.CopyFrom(graph_def)
    del out.node[:]
    for src in graph_def.node:
        kind = src.attr[MARK].s.decode() if MARK in src.attr else None
        if kind == "":
            continue  # made by the export alone (a StackV2's max_size)
        node = out.node.add()
        node.CopyFrom(src)
        if kind is None:
            continue
        del node.attr[MARK]
        node.op = kind
        if kind == "Stack":  # no max_size: only its control inputs stay
            controls = [i for i in node.input if i.startswith("^")]
            del node.input[:]
            node.input.extend(controls)
    return out
