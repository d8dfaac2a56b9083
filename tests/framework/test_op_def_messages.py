"""``Operation.op_def`` is TensorFlow's ``OpDef`` message, built from flowbook's registry.

The messages are compared with TensorFlow 2.21's own (``tests/fixtures/tf_op_defs_view.json``,
written as ``tests/fixtures/tf_op_defs_view.md`` says) for the ops a TF1 program meets
most: the same input and output args, in order, with the same fixed dtype, type attr,
count attr and reference flag, and the same attrs with the same kinds.  Where flowbook's
registry does not hold what TensorFlow's OpDef has, :data:`MISSING_ATTRS` and
:data:`MISSING_DEFAULTS` list it, with the reason.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import flowbook as tf
from flowbook.framework.registry import OPS
from flowbook.graph_io import graph_def as gdef

TF_OP_DEFS = json.loads(
    (Path(__file__).resolve().parents[1] / "fixtures" / "tf_op_defs_view.json").read_text()
)

# attrs TensorFlow's op has that flowbook's does not take (``graph_def._TF_ONLY``: dropped
# on import, never needed to run the op)
MISSING_ATTRS = {
    "MatMul": {"grad_a", "grad_b"},  # TF's hints for its own gradient kernels
    "VariableV2": {"container", "shared_name"},  # flowbook's variables live in the session
    "Conv2D": {"explicit_paddings"},  # padding="EXPLICIT" is not supported
}
# defaults TensorFlow declares that flowbook's registry does not know (its ``infer`` takes
# the attr through ``**_`` or has no default), and the one it knows and TF has none of
MISSING_DEFAULTS = {
    ("Placeholder", "shape"),  # the wrapper passes the shape always
    ("Assign", "use_locking"),  # read by no kernel: flowbook's updates are atomic per run
    ("Conv2D", "use_cudnn_on_gpu"),
    ("Conv2D", "dilations"),  # infer's None stands for TF's [1, 1, 1, 1]
    ("ApplyGradientDescent", "use_locking"),
}
# ops that update a variable through a ref input: TensorFlow leaves them unmarked (the ref
# orders them), flowbook's registry marks them stateful (never folded, merged or pruned)
STATEFUL_HERE = {"Assign", "ApplyGradientDescent"}
EXTRA_DEFAULTS = {("Enter", "frame_name")}  # flowbook's infer defaults it to ""


def _arg(a):
    out = {"name": a.name}
    if a.type:
        out["type"] = a.type
    for key in ("type_attr", "number_attr", "type_list_attr"):
        if getattr(a, key):
            out[key] = getattr(a, key)
    if a.is_ref:
        out["is_ref"] = True
    return out


@pytest.mark.parametrize("op_type", sorted(TF_OP_DEFS), ids=str)
def test_op_def_matches_tensorflow(op_type):
    want, got = TF_OP_DEFS[op_type], gdef.op_def(op_type)
    assert got.name == op_type
    assert got.is_stateful == (want["is_stateful"] or op_type in STATEFUL_HERE)
    assert [_arg(a) for a in got.input_arg] == want["input_arg"]
    assert [_arg(a) for a in got.output_arg] == want["output_arg"]
    tf_attrs = {a["name"]: a for a in want["attr"]}
    attrs = {a.name: a for a in got.attr}
    assert set(attrs) == set(tf_attrs) - MISSING_ATTRS.get(op_type, set())
    for name, attr in attrs.items():
        assert attr.type == tf_attrs[name]["type"], name
        has = attr.HasField("default_value")
        expected = "default_value" in tf_attrs[name]
        if (op_type, name) in MISSING_DEFAULTS:
            assert expected and not has, name
        elif (op_type, name) in EXTRA_DEFAULTS:
            assert has and not expected, name
        else:
            assert has == expected, name


def test_defaults_are_tensorflows_values():
    from google.protobuf import json_format

    for op_type, name in [("MatMul", "transpose_a"), ("Sum", "Tidx"), ("Conv2D", "data_format")]:
        attr = next(a for a in gdef.op_def(op_type).attr if a.name == name)
        want = next(a for a in TF_OP_DEFS[op_type]["attr"] if a["name"] == name)
        assert json_format.MessageToDict(attr.default_value) == want["default_value"]


def test_operation_op_def_is_the_message_and_opdef_the_record():
    with tf.Graph().as_default():
        v = tf.Variable(tf.zeros([2]), name="v")
        x = tf.placeholder(tf.float32, [2])
        y = tf.matmul(tf.reshape(x, [1, 2]), tf.reshape(v, [2, 1]))
        ops = [y.op, v.op, x.op]
    for op in ops:
        assert op.op_def.name == op.type and op._opdef is OPS[op.type]
        assert op.op_def is gdef.op_def(op.type)  # built once per type, shared
    assert [a.name for a in y.op.op_def.output_arg] == ["product"]
    assert v.op.op_def.output_arg[0].is_ref


@pytest.mark.parametrize("op_type", sorted(OPS), ids=str)
def test_every_registered_op_has_a_message(op_type):
    proto = gdef.op_def(op_type)
    od = OPS[op_type]
    assert [a.name for a in proto.input_arg] == [i.lstrip("*") for i in od.inputs]
    attrs = {a.name for a in proto.attr}
    for arg in (*proto.input_arg, *proto.output_arg):  # every attr an arg names is declared
        for ref in (arg.type_attr, arg.number_attr, arg.type_list_attr):
            assert not ref or ref in attrs, (arg.name, ref)
        assert bool(arg.type) != bool(arg.type_attr or arg.type_list_attr), arg.name
