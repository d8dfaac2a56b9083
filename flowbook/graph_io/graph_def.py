"""GraphDef export and import: flowbook graphs as TensorFlow's protocol buffers.

The messages are TensorFlow's own (``GraphDef``, ``NodeDef``, ``AttrValue``,
``TensorProto``...), taken from the copies the ``tensorboard`` package ships,
so a file written here opens in TensorBoard or TensorFlow, and a frozen graph
written by TensorFlow imports here.  The protobuf modules are imported inside
the functions, so ``import flowbook`` stays fast.  ``Graph.as_graph_def``
reaches :func:`as_graph_def` through ``flowbook.framework.hooks`` (the graph module is
below this one), and :func:`import_graph_def` reaches
``flowbook.graph_io.graph_def_import`` (above this one) the same way.

Export (:func:`to_graph_def`) writes one NodeDef per op, in creation order
(a topological order): inputs as ``"op"``/``"op:1"``, control inputs as
``"^op"``, attrs converted by their Python type (DType, shape tuple, ndarray,
bool, int, float, str, list).  flowbook does not store TensorFlow's
polymorphic type attrs (``T``, ``Tidx``...); each op's row says which attr
takes the dtype of which input (``OpDef.type_attrs``), so TensorFlow's
importer accepts the file; its output count (``num_outputs``) and the kinds
of attrs whose names mislead (``attr_kinds``) come from the row too.
Control-flow and stack nodes are then put in TensorFlow's exact form
(``Merge``'s ``N``, no ``T`` where TF's op has none, the loop gradient's
stacks as ``StackV2`` on resource handles): ``flowbook.graph_io.tf_control_flow``.

:func:`op_def` builds TensorFlow's ``OpDef`` message of a registered op type
from its registry record (``Operation.op_def`` reaches it through
``flowbook.framework.hooks``), once per type: arg names (TensorFlow's output
names from a small table and its naming rules for cwise ops and variable
updates), each arg's fixed dtype or type attr, ``number_attr`` on a variadic
input, ``is_ref`` on a variable's reference, and the attrs with their kinds and
the defaults the op's ``infer`` declares.  A GraphDef never holds a reference
dtype (``float32_ref``): attrs are written as the value type, as TensorFlow does.

Before an import, a GraphDef in TensorFlow 2's functional form (``While``,
``If``, calls, bodies in its ``library``) is lowered to TensorFlow 1's frames
(``flowbook.graph_io.function_lowering``), and the stacks flowbook's export
rewrote are put back as flowbook's ops.

Import (:func:`import_graph_def`) is in three steps, and only the last one
touches the caller's graph:

1. parse and validate every NodeDef (registered type, inputs that exist,
   attrs that convert) and sort them topologically (cycles are an error);
2. build the whole graph once in a scratch Graph, so every shape or dtype
   error (``infer``) is found with nothing yet in the real graph;
3. build it in the default graph under the name scope ``name``; should that
   still fail, the ops made so far are removed and the graph's name table
   and version are put back.

Every error is a ValueError naming the node.

    >>> import flowbook as fb
    >>> g = fb.Graph()
    >>> with g.as_default():
    ...     _ = fb.add(fb.constant(1.0, name="a"), 2.0, name="sum")
    >>> type_attrs("Add"), type_attrs("ConcatV2")
    ({'T': 0}, {'T': 0, 'Tidx': -1})
"""

from __future__ import annotations

import inspect
import os
from typing import Any

import numpy as np

from flowbook.framework import dtypes, hooks, registry
from flowbook.framework.dtypes import DType
from flowbook.framework.tensor import Operation, Tensor
from flowbook.platform.files import atomic_write

# dtype name -> TensorFlow's DataType enum value (types.proto)
DT_ENUM: dict[str, int] = {
    "float32": 1, "float64": 2, "int32": 3, "uint8": 4, "int16": 5, "int8": 6, "string": 7,
    "complex64": 8, "int64": 9, "bool": 10, "uint16": 17, "complex128": 18, "float16": 19,
}  # fmt: skip
_ENUM_DT: dict[int, DType] = {v: dtypes.as_dtype(k) for k, v in DT_ENUM.items()}
# the reference types (float32_ref...): their value type's enum + 100, as in types.proto; a
# GraphDef's attrs never hold one (TensorFlow writes a ref variable's dtype as DT_FLOAT)
DT_ENUM.update({k + "_ref": v + 100 for k, v in list(DT_ENUM.items())})


def type_attrs(op_type: str) -> dict[str, int]:
    """TF-only type attrs of an op type, as its row declares them (``OpDef.type_attrs``):
    ``{"T": 0}`` (input 0's dtype) unless it says otherwise."""
    od = registry.OPS.get(op_type)
    if od is None or od.type_attrs is None:
        return {"T": 0}
    return od.type_attrs


# attrs TensorFlow writes that flowbook neither stores nor needs (dropped on import)
_TF_ONLY = frozenset(
    {"explicit_paddings", "Truncate", "container", "shared_name", "U", "grad_a", "grad_b"}
)
_TUPLE_ATTRS = frozenset({"ksize", "strides", "dilations", "shape"})


def op_attr_kind(op_type: str, name: str) -> str:
    """:func:`attr_kind` of an op's attr, unless its row says (``OpDef.attr_kinds``).

    >>> op_attr_kind("PyFunc", "Tout"), op_attr_kind("RandomStandardNormal", "Tout")
    ('list(type)', 'type')
    """
    od = registry.OPS.get(op_type)
    return (od.attr_kinds.get(name) if od is not None else None) or attr_kind(name)


def attr_kind(name: str) -> str:
    """The OpDef attr type of a flowbook attr, guessed from TensorFlow's naming.

    >>> attr_kind("strides"), attr_kind("padding"), attr_kind("keep_dims"), attr_kind("alpha")
    ('list(int)', 'string', 'bool', 'float')
    """
    if name in (
        "dtype",
        "SrcT",
        "DstT",
        "out_type",
        "output_type",
        "Tout",
        "Tidx",
        "Targmax",
        "out_idx",
    ):
        return "type"
    if name == "shape":
        return "shape"
    if name == "value":
        return "tensor"
    if name in ("padding", "data_format", "mode", "message", "template", "output_stream"):
        return "string"
    if name == "placeholder":
        return "string"
    if name in ("sep", "end", "token"):
        return "string"
    if name in ("ksize", "strides", "dilations", "squeeze_dims"):
        return "list(int)"
    if name == "equation":
        return "string"
    if name in ("exclusive", "reverse", "sorted", "include_batch_in_index", "lower"):
        return "bool"
    if name.startswith(("transpose", "adj", "keep", "use_", "validate")) or name == "unique":
        return "bool"
    if name in ("alpha", "beta", "bias", "epsilon"):
        return "float"
    return "int"


def _pb() -> Any:
    """The protobuf modules, imported on first use (``tensorboard`` ships them)."""
    from tensorboard.compat.proto import attr_value_pb2, graph_pb2, op_def_pb2, versions_pb2  # lazy

    return attr_value_pb2, graph_pb2, op_def_pb2, versions_pb2


# ------------------------------------------------------------------ export
def _shape_proto(shape: Any, proto: Any) -> Any:
    proto.SetInParent()  # a scalar shape () is a set, empty TensorShapeProto
    if shape is None:
        proto.unknown_rank = True
    else:
        for d in shape:
            proto.dim.add(size=-1 if d is None else int(d))
    return proto


# the TensorProto field holding one value of a dtype, for splats
_SPLAT_FIELDS = {
    "float32": "float_val", "float64": "double_val", "int32": "int_val", "int16": "int_val",
    "int8": "int_val", "uint8": "int_val", "int64": "int64_val", "bool": "bool_val",
}  # fmt: skip


def _tensor_proto(value: Any, proto: Any) -> Any:
    arr = np.asarray(value)
    dt = dtypes.of_value(arr)
    proto.dtype = DT_ENUM[dt.name]
    _shape_proto(arr.shape, proto.tensor_shape)
    splat = arr.size > 1 and not any(arr.strides)  # one value broadcast (an imported splat)
    values = arr.reshape(-1)[:1] if splat else arr.reshape(-1)
    if dt.name == "string":
        proto.string_val.extend(v if isinstance(v, bytes) else str(v).encode() for v in values)
    elif splat and dt.name in _SPLAT_FIELDS:  # TF's compact form: one value, repeated
        getattr(proto, _SPLAT_FIELDS[dt.name]).append(values[0].item())
    else:
        proto.tensor_content = np.ascontiguousarray(arr, dt.np.newbyteorder("<")).tobytes()
    return proto


def _set_attr(attr: Any, value: Any) -> None:
    """Fill an AttrValue from a Python attr value, by the value's type."""
    if isinstance(value, DType):
        attr.type = DT_ENUM[value.base_dtype.name]
    elif isinstance(value, bool | np.bool_):
        attr.b = bool(value)
    elif isinstance(value, int | np.integer):
        attr.i = int(value)
    elif isinstance(value, float | np.floating):
        attr.f = float(value)
    elif isinstance(value, str | bytes):
        attr.s = value.encode() if isinstance(value, str) else value
    elif isinstance(value, np.ndarray):
        _tensor_proto(value, attr.tensor)
    elif isinstance(value, list | tuple):
        _set_list(attr.list, value)
    else:
        raise TypeError(f"can't write attr value {value!r} of type {type(value).__name__}")


def _set_list(lst: Any, value: list | tuple) -> None:
    """Fill an AttrValue's list from a Python list, item by item."""
    lst.SetInParent()
    for v in value:
        if isinstance(v, DType):
            lst.type.append(DT_ENUM[v.base_dtype.name])
        elif isinstance(v, bool | np.bool_):
            lst.b.append(bool(v))
        elif isinstance(v, int | np.integer):
            lst.i.append(int(v))
        elif isinstance(v, float | np.floating):
            lst.f.append(float(v))
        elif isinstance(v, str | bytes):
            lst.s.append(v.encode() if isinstance(v, str) else v)
        elif v is None or isinstance(v, tuple):  # a shape (None: unknown rank)
            _shape_proto(v, lst.shape.add())
        else:
            raise TypeError(f"can't write list item {v!r} of type {type(v).__name__}")


def _input_name(t: Tensor) -> str:
    return t.op.name if t.value_index == 0 else f"{t.op.name}:{t.value_index}"


def _node_def(op: Operation, node: Any) -> None:
    node.name, node.op, node.device = op.name, op.type, op.device or ""
    node.input.extend([_input_name(t) for t in op.inputs])
    node.input.extend(f"^{c.name}" for c in op.control_inputs)
    drop = op._opdef.tf_implicit  # attrs TF's op lacks, at the value they have there
    for key, value in op.attrs.items():
        if value is None and op_attr_kind(op.type, key) == "shape":
            _shape_proto(None, node.attr[key].shape)
        elif isinstance(value, tuple) and op_attr_kind(op.type, key) == "shape":
            _shape_proto(value, node.attr[key].shape)
        elif key == "output_stream" and not isinstance(value, str):
            # a Python object (a StringIO, a logger) cannot travel in a GraphDef: it is
            # written as TF writes an unnamed stream, and prints to stdout once imported
            node.attr[key].s = b"stdout"
        elif value is not None and not (key in drop and drop[key] == value):
            try:
                _set_attr(node.attr[key], value)
            except TypeError as e:
                raise TypeError(f"{op.type} '{op.name}': attr '{key}': {e}") from None
    for key, index in type_attrs(op.type).items():
        if key not in op.attrs and op.inputs:
            node.attr[key].type = DT_ENUM[op.inputs[index].dtype.base_dtype.name]
    count = op._opdef.count_attr
    if count is not None and count not in op.attrs:  # the tensors of its one variadic input
        node.attr[count].i = len(op.inputs) - (len(op._opdef.inputs) - 1)


def to_graph_def(graph: Any) -> Any:
    """The GraphDef proto of a flowbook Graph (ops in creation order).

    >>> import flowbook as fb
    >>> g = fb.Graph()
    >>> with g.as_default():
    ...     _ = fb.constant(1.0, name="a") * 2.0
    >>> [(n.name, n.op, list(n.input)) for n in to_graph_def(g).node][-1]
    ('mul', 'Mul', ['a', 'mul/y'])
    """
    from flowbook.graph_io import tf_control_flow  # lazy: it imports this module

    _, graph_pb2, _, _ = _pb()
    gd = graph_pb2.GraphDef()
    gd.versions.producer = 27  # TF 1.x era GraphDef version
    ops = graph.get_operations()
    handles = tf_control_flow.handle_tensors(ops)  # stack handles: DT_RESOURCE to TensorFlow
    taken = {op.name for op in ops}
    for op in ops:
        node = gd.node.add()
        _node_def(op, node)
        tf_control_flow.to_tf_form(op, node, gd, handles, taken)
    return gd


def as_graph_def(graph: Any, from_version: int | None = None, add_shapes: bool = False) -> Any:
    """``Graph.as_graph_def()``: the graph as a GraphDef proto (arguments as in TF1)."""
    gd = to_graph_def(graph)
    if add_shapes:
        for node in gd.node:
            op = graph.get_operation_by_name(node.name)
            for t in op.outputs:
                _shape_proto(t.shape, node.attr["_output_shapes"].list.shape.add())
    return gd


def write_graph(graph_or_graph_def: Any, logdir: str, name: str, as_text: bool = True) -> str:
    """Write a Graph or GraphDef to ``logdir/name`` (text or binary); returns the path.

    The file is written whole (``flowbook.platform.files.atomic_write``): a crash or an
    error mid-write leaves the previous file as it was.
    """
    gd = graph_or_graph_def
    if not hasattr(gd, "SerializeToString"):
        gd = to_graph_def(gd)
    os.makedirs(logdir, exist_ok=True)
    path = os.path.join(logdir, name)
    if as_text:
        from google.protobuf import text_format  # lazy: protobuf is slow to import

        content: bytes | str = text_format.MessageToString(gd)
    else:
        content = gd.SerializeToString()
    return atomic_write(path, content)


def read_graph_def(path: str) -> Any:
    """Read a GraphDef file written in binary or text form."""
    with open(path, "rb") as f:
        data = f.read()
    try:
        return parse_graph_def(data)
    except ValueError:
        from google.protobuf import text_format  # lazy: protobuf is slow to import

        _, graph_pb2, _, _ = _pb()
        try:
            return text_format.Parse(data.decode("utf-8"), graph_pb2.GraphDef())
        except (text_format.ParseError, UnicodeDecodeError) as e:
            raise ValueError(f"{path}: neither a binary nor a text GraphDef: {e}") from None


# TensorFlow's output arg names where they are not "output" (``output_i`` for several)
# and no rule below gives them
_OUTPUT_NAMES: dict[str, tuple[str, ...]] = {
    "MatMul": ("product",), "VariableV2": ("ref",), "VarHandleOp": ("resource",),
    "Switch": ("output_false", "output_true"), "RefSwitch": ("output_false", "output_true"),
    "Merge": ("output", "value_index"), "RefMerge": ("output", "value_index"),
    "SoftmaxCrossEntropyWithLogits": ("loss", "backprop"),
    "SparseSoftmaxCrossEntropyWithLogits": ("loss", "backprop"),
    "Relu": ("activations",), "Relu6": ("activations",), "Elu": ("activations",),
    "Selu": ("activations",), "LeakyRelu": ("activations",), "Softmax": ("softmax",),
    "LogSoftmax": ("logsoftmax",), "IsVariableInitialized": ("is_initialized",),
    "VarIsInitializedOp": ("is_initialized",), "ReadVariableOp": ("value",),
    "CountUpTo": ("output",),
}  # fmt: skip
# args of a fixed dtype, which no type attr gives: (op type, arg name) -> dtype name
_FIXED_ARGS: dict[tuple[str, str], str] = {
    ("Switch", "pred"): "bool", ("RefSwitch", "pred"): "bool",
    ("Merge", "value_index"): "int32", ("RefMerge", "value_index"): "int32",
    ("IsVariableInitialized", "is_initialized"): "bool",
    ("VarIsInitializedOp", "is_initialized"): "bool",
}  # fmt: skip
# attrs that type an op's outputs, looked for (as kind "type") before the input type "T"
_OUTPUT_TYPE_ATTRS = ("out_type", "DstT", "Tout", "output_type", "dtype")
# type attrs of index inputs, int32 unless set (TensorFlow's default for them)
_INDEX_TYPE_ATTRS = frozenset({"Tidx", "Tshape", "Tpaddings", "Tmultiples", "Tperm"})
DT_RESOURCE = 20  # types.proto's DT_RESOURCE: a resource handle
_OP_DEFS: dict[str, tuple[registry.OpDef, Any]] = {}  # op type -> (its record, its message)


def op_def(op_type: str) -> Any:
    """TensorFlow's ``OpDef`` message of a registered op type (``Operation.op_def``).

    Built from the registry record on first use and kept until the type is registered
    again: arg names, their dtype or type attr (``number_attr`` for a variadic input,
    ``is_ref`` for a variable's reference), the attrs with their kinds and the defaults
    the op's ``infer`` declares.

    >>> [a.name for a in op_def("MatMul").input_arg], op_def("MatMul").is_stateful
    (['a', 'b'], False)
    >>> [(a.name, a.is_ref) for a in op_def("Assign").input_arg]
    [('ref', True), ('value', False)]
    """
    od = registry.get(op_type)
    cached = _OP_DEFS.get(op_type)
    if cached is not None and cached[0] is od:
        return cached[1]
    proto = _build_op_def(od)
    _OP_DEFS[op_type] = (od, proto)
    return proto


def _build_op_def(od: registry.OpDef) -> Any:
    _, _, op_def_pb2, _ = _pb()
    proto = op_def_pb2.OpDef(name=od.name, is_stateful=od.stateful, summary=od.doc[:80])
    attr = _type_list(od)
    if attr is not None:  # IdentityN: as many outputs as the list has types
        proto.input_arg.add(name=od.inputs[0].lstrip("*"), type_list_attr=attr)
        proto.output_arg.add(name="output", type_list_attr=attr)
        proto.attr.add(name=attr, type="list(type)")
        return proto
    t_attrs = type_attrs(od.name)
    by_input = {(i if i >= 0 else len(od.inputs) + i): k for k, i in t_attrs.items() if k != "T"}
    for index, name in enumerate(od.inputs):
        arg = proto.input_arg.add(name=name.lstrip("*"))
        if name.startswith("*"):
            arg.number_attr = od.count_attr or "N"
        _type_arg(od, arg, by_input.get(index, "T" if "T" in t_attrs else None))
        if index in od.ref_inputs:
            if name == "resource" or od.name.startswith("Resource"):
                arg.ClearField("type_attr")
                arg.type = DT_RESOURCE
            else:
                arg.is_ref = True
    out_attr = _output_type_attr(od, t_attrs)
    for name in _output_names(od):
        arg = proto.output_arg.add(name=name)
        if od.name == "VarHandleOp":
            arg.type = DT_RESOURCE
            continue
        _type_arg(od, arg, out_attr)
        arg.is_ref = name in ("ref", "output_ref") or (name == "out" and bool(od.ref_inputs))
    _add_attrs(od, proto, t_attrs)
    return proto


def _type_arg(od: registry.OpDef, arg: Any, attr: str | None) -> None:
    """Give an arg its fixed dtype, else its type attr (float32 when the row names none)."""
    fixed = _FIXED_ARGS.get((od.name, arg.name))
    if fixed is not None:
        arg.type = DT_ENUM[fixed]
    elif attr is not None:
        arg.type_attr = attr
    else:
        arg.type = DT_ENUM["float32"]


def _output_names(od: registry.OpDef) -> tuple[str, ...]:
    """TensorFlow's output arg names: its table, then its naming of variable updates, cwise ops."""
    if od.name in _OUTPUT_NAMES:
        return _OUTPUT_NAMES[od.name]
    n = od.num_outputs
    if n == 1 and od.ref_inputs and od.inputs[0] == "ref":
        return ("output_ref",)  # Assign, AssignAdd, ScatterUpdate...
    if n == 1 and od.name.startswith("Apply"):
        return ("out",)
    if n == 1 and od.inputs == ("x", "y"):
        return ("z",)  # binary element-wise ops
    if n == 1 and od.inputs == ("x",):
        return ("y",)  # unary element-wise ops
    return ("output",) if n == 1 else tuple(f"output_{i}" for i in range(max(n, 0)))


def _output_type_attr(od: registry.OpDef, t_attrs: dict[str, int]) -> str | None:
    for name in _OUTPUT_TYPE_ATTRS:
        if name in od.attrs and op_attr_kind(od.name, name) == "type":
            return name
    return "T" if "T" in t_attrs else None


def _add_attrs(od: registry.OpDef, proto: Any, t_attrs: dict[str, int]) -> None:
    """The attr entries: the row's attrs, its type attrs, the count of a variadic input."""
    names = list(od.attrs) + [k for k in t_attrs if k not in od.attrs]
    count = od.count_attr or "N"
    if any(i.startswith("*") for i in od.inputs) and count not in names:
        names.append(count)
    defaults = infer_defaults(od.name)
    for name in names:
        kind = "type" if name in t_attrs else op_attr_kind(od.name, name)
        if kind == "int" and name in defaults:  # the name guess's fallback: the default knows
            kind = _VALUE_KINDS.get(type(defaults[name]), kind)
        entry = proto.attr.add(name=name, type=kind)
        if name == count and any(i.startswith("*") for i in od.inputs):
            entry.has_minimum, entry.minimum = True, 1
        if name in defaults:
            _set_default(entry, kind, defaults[name])
        elif name in _INDEX_TYPE_ATTRS and name in t_attrs:
            entry.default_value.type = DT_ENUM["int32"]


_VALUE_KINDS = {str: "string", bool: "bool", float: "float"}  # a default's Python type -> kind


def _set_default(entry: Any, kind: str, value: Any) -> None:
    """Write an attr's default as its kind holds it; a default of another kind is left out."""
    cast = {"bool": bool, "int": int, "float": float, "string": str}.get(kind)
    if kind == "shape" and (value is None or isinstance(value, tuple)):
        _shape_proto(value, entry.default_value.shape)
        return
    if value is None or (cast is None and kind not in ("type", "list(int)", "list(float)")):
        return
    try:
        if cast is not None and isinstance(value, bool | int | float | str):
            value = cast(value)
        _set_attr(entry.default_value, value)
    except (TypeError, KeyError, ValueError):
        entry.ClearField("default_value")


def _type_list(od: registry.OpDef) -> str | None:
    """The list(type) attr that types an op's variadic input and gives one output per entry
    (IdentityN's ``T``): an op of varying outputs, with such an attr."""
    if od.num_outputs != -1 or not od.inputs or not od.inputs[0].startswith("*"):
        return None
    return next((a for a, kind in od.attr_kinds.items() if kind == "list(type)"), None)


def parse_graph_def(graph_def: Any) -> Any:
    """A GraphDef from a proto or its serialized bytes; ValueError if it does not parse."""
    _, graph_pb2, _, _ = _pb()
    if isinstance(graph_def, bytes | bytearray | memoryview):
        from google.protobuf.message import DecodeError  # lazy: protobuf is slow to import

        gd = graph_pb2.GraphDef()
        try:
            gd.ParseFromString(bytes(graph_def))
        except (DecodeError, RuntimeError, ValueError) as e:
            raise ValueError(f"Invalid GraphDef: the bytes do not parse ({e})") from None
        return gd
    if not hasattr(graph_def, "node"):
        raise TypeError(f"graph_def must be a GraphDef proto, got {type(graph_def).__name__}")
    return graph_def


def infer_defaults(op_type: str) -> dict[str, Any]:
    """The attrs a registered op's ``infer`` has defaults for (missing ones may be omitted)."""
    try:
        sig = inspect.signature(registry.get(op_type).infer)
    except (TypeError, ValueError):
        return {}
    return {
        k: p.default for k, p in sig.parameters.items() if p.default is not inspect.Parameter.empty
    }


def import_graph_def(
    graph_def: Any,
    input_map: dict[str, Tensor] | None = None,
    return_elements: list[str] | None = None,
    name: str | None = "import",
    op_dict: Any = None,
    producer_op_list: Any = None,
) -> list[Any] | None:
    """TF1's ``tf.import_graph_def``; see ``flowbook.graph_io.graph_def_import`` (reached by a hook)."""
    return hooks.import_graph_def(
        graph_def, input_map, return_elements, name, op_dict, producer_op_list
    )


hooks.as_graph_def.fill(as_graph_def)
hooks.op_def_message.fill(op_def)
