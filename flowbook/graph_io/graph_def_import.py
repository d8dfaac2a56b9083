"""``import_graph_def``: a GraphDef's nodes become ops of the default graph.

The design is in ``flowbook.graph_io.graph_def``'s docstring: validate and sort every
node first, build the whole graph in a scratch Graph (so ``infer`` errors
surface with the real graph untouched), then build it for real under the
name scope ``name``.  AttrValues become flowbook's Python values (DType,
shape tuple or None, ndarray, bool, int, float, str, list); TensorFlow's
polymorphic type attrs and a few TF-only ones are dropped.

This module sits above ``flowbook.framework.graph`` (it builds ops in one) and above
``flowbook.graph_io.graph_def`` (export and parsing); ``graph_def.import_graph_def``,
the public name, reaches down here through ``flowbook.framework.hooks``, which this
module fills when it is imported.

    >>> from tensorboard.compat.proto import attr_value_pb2
    >>> attr_value(attr_value_pb2.AttrValue(s=b"SAME"), "padding", "node 'conv'")
    'SAME'
"""

from __future__ import annotations

import contextlib
import math
from typing import Any

import numpy as np

from flowbook.framework import graph_edit, hooks, registry
from flowbook.framework.devices import DeviceSpec
from flowbook.framework.graph import Graph, get_default_graph
from flowbook.framework.limits import check_claim
from flowbook.framework.tensor import Operation, Tensor
from flowbook.graph_io import graph_def as gdef
from flowbook.graph_io import tf_control_flow
from flowbook.graph_io.function_lowering import lower_functions

_VAL_FIELDS = (
    "float_val",
    "double_val",
    "int_val",
    "int64_val",
    "bool_val",
    "half_val",
    "scomplex_val",
    "dcomplex_val",
    "uint32_val",
    "uint64_val",
)


def _dtype(enum: int, where: str) -> Any:
    dt = gdef._ENUM_DT.get(enum if enum < 100 else enum - 100)  # _REF types read as values
    if dt is None:
        raise ValueError(f"{where}: unsupported DataType enum {enum}")
    return dt


def _shape(proto: Any, where: str) -> tuple[int | None, ...] | None:
    if proto.unknown_rank:
        return None
    dims = tuple(int(d.size) for d in proto.dim)
    if any(d < -1 for d in dims):
        raise ValueError(f"{where}: shape {list(dims)} has a dimension below -1 (-1 is unknown)")
    return tuple(None if d == -1 else d for d in dims)


_ZERO = {"string": b""}


def tensor_value(proto: Any, where: str) -> np.ndarray:
    """The ndarray a TensorProto holds (tensor_content, or the typed ``*_val`` fields).

    The size the proto claims is checked against the claims budget
    (:func:`flowbook.framework.limits.check_claim`) before anything is allocated, and a
    tensor given by one value (TensorFlow's compact form of a splat, such as
    ``zeros``) is kept as a read-only broadcast of that value: a Const of
    shape [20000, 20000] from one ``float_val`` costs nothing until a kernel
    computes with it.
    """
    dt = _dtype(proto.dtype, where)
    shape = _shape(proto.tensor_shape, where)
    if shape is None or any(d is None for d in shape):
        raise ValueError(f"{where}: a constant tensor needs a fully known shape")
    is_str = dt.name == "string"
    itemsize = np.dtype(object).itemsize if is_str else dt.np.itemsize
    check_claim(where, shape, itemsize, dt.name)
    size = math.prod(shape)
    if is_str:
        raw: Any = [bytes(v) for v in proto.string_val]  # string tensors hold bytes, as TF's
    elif proto.tensor_content:
        np_dt = dt.np.newbyteorder("<")
        if len(proto.tensor_content) != size * np_dt.itemsize:
            raise ValueError(
                f"{where}: tensor_content has {len(proto.tensor_content)} bytes, "
                f"shape {list(shape)} of {dt.name} needs {size * np_dt.itemsize}"
            )
        return np.frombuffer(proto.tensor_content, np_dt).astype(dt.np).reshape(shape)
    else:
        name = next((f for f in _VAL_FIELDS if len(getattr(proto, f))), None)
        raw = getattr(proto, name) if name else []
        if name in ("scomplex_val", "dcomplex_val"):
            raw = [complex(re, im) for re, im in zip(raw[0::2], raw[1::2])]
    if len(raw) > size:
        raise ValueError(f"{where}: {len(raw)} values for shape {list(shape)}")
    if is_str:
        flat = np.empty(len(raw), dtype=object)
        flat[:] = raw
    elif name == "half_val":
        flat = np.array(raw, np.uint16).view(np.float16)
    else:
        flat = np.array(raw, dtype=dt.np)
    if len(flat) == size:
        return flat.astype(dt.np, copy=False).reshape(shape)
    fill = flat[-1] if len(flat) else _ZERO.get(dt.name, 0)  # TF repeats the last value
    if len(flat) <= 1:  # a splat: one value, broadcast (read-only, nothing allocated)
        return np.broadcast_to(np.asarray(fill, dtype=dt.np), shape)
    rest = np.full(size - len(flat), fill, dtype=flat.dtype)
    return np.concatenate([flat, rest]).astype(dt.np, copy=False).reshape(shape)


def attr_value(attr: Any, key: str, where: str) -> Any:
    """The flowbook Python value of one AttrValue."""
    kind = attr.WhichOneof("value")
    if kind == "type":
        return _dtype(attr.type, where)
    if kind == "shape":
        return _shape(attr.shape, where)
    if kind == "tensor":
        return tensor_value(attr.tensor, where)
    if kind == "s":
        return attr.s.decode("utf-8")
    if kind in ("b", "i", "f"):
        return getattr(attr, kind)
    if kind == "list":
        lst = attr.list
        items: list[Any] = (
            list(lst.i)
            or list(lst.f)
            or [s.decode() for s in lst.s]
            or list(lst.b)
            or [_dtype(t, where) for t in lst.type]
            or [_shape(s, where) for s in lst.shape]
        )
        return tuple(items) if key in gdef._TUPLE_ATTRS else items
    raise ValueError(f"{where}: attr '{key}' has an unsupported kind {kind!r}")


def _parse_input(text: str) -> tuple[str, int, bool]:
    """``"a:1"`` -> ("a", 1, False); ``"^a"`` -> ("a", -1, True)."""
    if text.startswith("^"):
        return text[1:], -1, True
    name, sep, idx = text.rpartition(":")
    if sep and idx.isdigit():
        return name, int(idx), False
    return text, 0, False


# attrs TensorFlow writes whose default is what flowbook's op does: accepted at that value
_TF_DEFAULT_ONLY = {"incompatible_shape_error": True}  # Equal, NotEqual: shapes must broadcast


def _check_default(node: Any, key: str, where: str) -> None:
    value = attr_value(node.attr[key], key, where)
    if value != _TF_DEFAULT_ONLY[key]:
        raise ValueError(
            f"{where}: attr '{key}' = {value!r} is not supported (flowbook's {node.op} does "
            f"what {key} = {_TF_DEFAULT_ONLY[key]!r} does)"
        )


def _attrs(node: Any, opdef: Any) -> dict[str, Any]:
    where = f"node '{node.name}' ({node.op})"
    drop = set(gdef.type_attrs(node.op)) | gdef._TF_ONLY
    attrs: dict[str, Any] = {}
    for key in node.attr:
        if key.startswith("_") or (key in drop and key not in opdef.attrs):
            continue
        if key not in opdef.attrs:
            if key in ("T", "N", "Tidx", "Tshape", "Tperm", "Index", "TI", "Tlabels"):
                continue  # a type/length attr TF writes for an op flowbook lists without it
            if key in _TF_DEFAULT_ONLY:
                _check_default(node, key, where)
                continue
            raise ValueError(f"{where}: unknown attr '{key}' (the op takes {list(opdef.attrs)})")
        want = _KINDS.get(gdef.op_attr_kind(node.op, key))
        kind = node.attr[key].WhichOneof("value")
        if want is not None and kind != want and not (want == "shape" and kind is None):
            raise ValueError(f"{where}: attr '{key}' must be a {want}, the GraphDef gives {kind}")
        try:
            attrs[key] = attr_value(node.attr[key], key, where)
        except ValueError:
            raise
        except Exception as e:  # a malformed value
            raise ValueError(f"{where}: bad attr '{key}': {e}") from None
    missing = [a for a in opdef.attrs if a not in attrs]
    defaults = gdef.infer_defaults(node.op)
    for a in missing:
        if a == "N" and any(i.startswith("*") for i in opdef.inputs):
            continue
        if a in opdef.tf_implicit:
            attrs[a] = opdef.tf_implicit[a]
        elif a not in defaults and a not in ("use_cudnn_on_gpu", "seed", "seed2"):
            if a == "shape" and node.op == "Placeholder":
                attrs[a] = None
                continue
            raise ValueError(f"{where}: missing attr '{a}'")
    return attrs


def _check_device(node: Any) -> None:
    """A node's device is TensorFlow's device syntax (``/job:ps/task:0/device:CPU:0``)."""
    if node.device:
        try:
            DeviceSpec.from_string(node.device)
        except ValueError as e:
            raise ValueError(f"node '{node.name}' ({node.op}): bad device: {e}") from None


def _check_arity(node: Any, opdef: Any) -> None:
    """A node gives as many data inputs as its op takes (any number past a ``*`` input)."""
    given = sum(1 for text in node.input if not text.startswith("^"))
    fixed = [i for i in opdef.inputs if not i.startswith("*")]
    variadic = len(fixed) < len(opdef.inputs)
    if given < len(fixed) or (given > len(fixed) and not variadic):
        takes = f"{'at least ' if variadic else ''}{len(fixed)}"
        names = ", ".join(i.lstrip("*") for i in opdef.inputs) or "none"
        raise ValueError(
            f"node '{node.name}' ({node.op}): takes {takes} inputs ({names}), "
            f"the GraphDef gives {given}"
        )


# the AttrValue kind each attr must have, where flowbook's attr names say it for sure
_KINDS = {"type": "type", "shape": "shape", "tensor": "tensor"}


def _validate(gd: Any, input_map: dict[str, Any]) -> list[tuple[Any, Any, dict[str, Any]]]:
    """Check every node and return (node, opdef, attrs) in a topological order."""
    nodes: dict[str, Any] = {}
    for node in gd.node:
        if not node.name:
            raise ValueError(f"A node of type '{node.op}' has an empty name")
        if node.name in nodes:
            raise ValueError(f"Duplicate node name in GraphDef: '{node.name}'")
        nodes[node.name] = node
    checked: dict[str, tuple[Any, Any, dict[str, Any]]] = {}
    for node in gd.node:
        opdef = registry.OPS.get(node.op)
        if opdef is None:
            raise ValueError(
                f"node '{node.name}': Op type not registered '{node.op}' in flowbook "
                f"(op types that import: {len(registry.OPS)} registered ones)"
            )
        for text in node.input:
            src, idx, _ = _parse_input(text)
            if src not in nodes and f"{src}:{max(idx, 0)}" not in input_map:
                raise ValueError(
                    f"node '{node.name}': input '{text}' is not a node of the GraphDef"
                )
        _check_arity(node, opdef)
        _check_device(node)
        checked[node.name] = (node, opdef, _attrs(node, opdef))
    order: list[tuple[Any, Any, dict[str, Any]]] = []
    state: dict[str, int] = {}  # 1 = on the stack, 2 = done
    for root in nodes:
        stack = [(root, iter(nodes[root].input))]
        if state.get(root):
            continue
        state[root] = 1
        while stack:
            name, it = stack[-1]
            for text in it:
                src = _parse_input(text)[0]
                if src not in nodes or _back_edge(nodes[name], nodes[src]):
                    continue
                if state.get(src) == 1:
                    raise ValueError(
                        f"GraphDef has a cycle: node '{name}' reaches itself via '{src}'"
                    )
                if not state.get(src):
                    state[src] = 1
                    stack.append((src, iter(nodes[src].input)))
                    break
            else:
                stack.pop()
                state[name] = 2
                order.append(checked[name])
    return order


_MERGES = ("Merge", "RefMerge")
_NEXT = ("NextIteration", "RefNextIteration")


def _back_edge(node: Any, src: Any) -> bool:
    """Whether ``src`` -> ``node`` is a loop's back edge (NextIteration into its Merge)."""
    return node.op in _MERGES and src.op in _NEXT


def _build(graph: Any, order: list, input_map: dict[str, Any], prefix: str) -> dict[str, Any]:
    """Create the ops in ``graph``; returns node name -> Operation.

    A loop's Merge is made before the NextIteration that feeds it (the back
    edge): it takes its other input in that place until the loop is closed.
    """
    made: dict[str, Operation] = {}
    back: list[tuple[str, int, str, int]] = []  # (merge, input position, NextIteration, output)
    for node, _opdef, attrs in order:
        inputs: list[Tensor] = []
        controls: list[Operation] = []
        for text in node.input:
            src, idx, is_control = _parse_input(text)
            if is_control:
                controls.append(made[src]) if src in made else None
                continue
            key = f"{src}:{idx}"
            if key in input_map:
                inputs.append(input_map[key])
                continue
            if src not in made and node.op in _MERGES:
                back.append((node.name, len(inputs), src, idx))
                inputs.append(None)  # type: ignore[arg-type]
                continue
            outs = made[src].outputs
            if idx >= len(outs):
                raise ValueError(
                    f"node '{node.name}': input '{text}': '{src}' has only {len(outs)} outputs"
                )
            inputs.append(outs[idx])
        if None in inputs:  # a Merge waiting for its NextIteration: its live input stands in
            stand_in = next(t for t in inputs if t is not None)
            inputs = [stand_in if t is None else t for t in inputs]
        try:
            op = graph.create_op(
                node.op,
                inputs,
                dict(attrs),
                name=f"{prefix}{node.name}/",
                control_inputs=controls or None,
            )
        except (ValueError, TypeError, KeyError) as e:
            raise ValueError(f"node '{node.name}' ({node.op}): {e}") from None
        if node.device:
            op.device = node.device
        made[node.name] = op
    for merge, k, src, idx in back:  # close the loops
        op = made[merge]
        op.inputs = tuple(made[src].outputs[idx] if j == k else t for j, t in enumerate(op.inputs))
    if back:
        graph._version += 1
    return made


def import_graph_def(
    graph_def: Any,
    input_map: dict[str, Tensor] | None = None,
    return_elements: list[str] | None = None,
    name: str | None = "import",
    op_dict: Any = None,
    producer_op_list: Any = None,
) -> list[Any] | None:
    """Import a GraphDef (proto or bytes) into the default graph, TF1's way.

    >>> import flowbook as fb
    >>> src = fb.Graph()
    >>> with src.as_default():
    ...     _ = fb.constant(3.0, name="a") * 2.0
    >>> with fb.Graph().as_default():
    ...     (t,) = import_graph_def(gdef.to_graph_def(src), return_elements=["mul:0"])
    ...     print(t.name, fb.Session().run(t))
    import/mul:0 6.0
    """
    gd = lower_functions(gdef.parse_graph_def(graph_def))  # While/If/calls: v1 frames
    gd = tf_control_flow.from_tf_form(gd)  # flowbook's own stacks back as flowbook's ops
    graph = get_default_graph()
    imap: dict[str, Tensor] = {}
    for key, t in (input_map or {}).items():
        full = key if ":" in key else f"{key}:0"
        if not isinstance(t, Tensor) or t.graph is not graph:
            raise ValueError(f"input_map['{key}'] must be a Tensor of the default graph")
        imap[full] = t
    order = _validate(gd, imap)
    names = {node.name for node, _, _ in order}
    unused = [k for k in imap if k.rpartition(":")[0] not in names]
    if unused:
        raise ValueError(f"Attempted to map inputs that were not found in graph_def: {unused}")
    for r in return_elements or ():
        if _parse_input(r)[0] not in names:
            raise ValueError(f"Requested return_element '{r}' not found in graph_def.")
    scratch = Graph()  # dry run: every infer error before the real graph changes
    with scratch.as_default():
        stand_ins = {
            k: scratch.create_op("Placeholder", [], {"dtype": t.dtype, "shape": _raw(t)}).outputs[0]
            for k, t in imap.items()
        }
        _build(scratch, order, stand_ins, "")
    return _build_for_real(graph, order, imap, name, return_elements)


def _raw(t: Tensor) -> tuple[int | None, ...] | None:
    shape = t.get_shape()
    return None if shape.ndims is None else tuple(shape.as_list())


def _build_for_real(
    graph: Any, order: list, imap: dict[str, Tensor], name: str | None, returns: Any
) -> list[Any] | None:
    names_before, version_before = dict(graph._names_in_use), graph._version
    made: dict[str, Operation] = {}
    try:
        with graph.name_scope(name) if name else contextlib.nullcontext("") as prefix:
            for node in (n for n, _, _ in order):
                if graph._ops.get(f"{prefix}{node.name}") is not None:
                    raise ValueError(f"node '{node.name}': '{prefix}{node.name}' already exists")
            made = _build(graph, order, imap, prefix)
    except Exception:
        graph_edit.remove_ops(graph, list(made.values()) or _ops_since(graph, version_before))
        graph._names_in_use.clear()
        graph._names_in_use.update(names_before)
        graph._version = version_before
        raise
    if returns is None:
        return None
    result: list[Any] = []
    for r in returns:
        src, idx, _ = _parse_input(r)
        op = made[src]
        result.append(op.outputs[idx] if ":" in r else op)
    return result


def _ops_since(graph: Any, version: int) -> list[Operation]:
    """Ops created after the graph was at ``version`` (only creations happen during import)."""
    n_new = graph._version - version
    return list(graph._ops.values())[-n_new:] if n_new > 0 else []


hooks.import_graph_def.fill(import_graph_def)
