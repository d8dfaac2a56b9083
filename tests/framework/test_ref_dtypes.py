"""TF1's reference dtypes: ``float32_ref`` and its twins, beside the value types.

A ref dtype is the type of a reference variable's tensor in TensorFlow 1; it
holds the numpy dtype and predicates of its value type, is a distinct object,
and converts both ways (``base_dtype``, ``_as_ref``).  A GraphDef never holds
one: TensorFlow writes a variable's ``dtype`` and ``T`` attrs as the value type.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import flowbook as tf
from flowbook.framework import dtypes
from flowbook.graph_io import graph_def as gdef


@pytest.mark.parametrize("base", dtypes.ALL, ids=lambda d: d.name)
def test_every_type_has_its_ref_twin(base):
    ref = base._as_ref
    assert ref.name == base.name + "_ref" and getattr(tf, ref.name) is ref
    assert ref.is_ref_dtype and not base.is_ref_dtype
    assert ref.base_dtype is base and base.base_dtype is base and ref._as_ref is ref
    assert ref.as_numpy_dtype is base.as_numpy_dtype and ref.np == base.np
    assert ref != base and ref is not base
    assert tf.as_dtype(ref.name) is ref and tf.as_dtype(base.np) is base  # numpy: the value type
    assert pickle.loads(pickle.dumps(ref)) is ref
    assert (ref.is_floating, ref.is_integer, ref.size) == (
        base.is_floating,
        base.is_integer,
        base.size,
    )
    assert gdef.DT_ENUM[ref.name] == gdef.DT_ENUM[base.name] + 100  # types.proto's DT_*_REF


def test_tf1_names():
    assert tf.float32_ref.name == "float32_ref" and repr(tf.float32_ref) == "tf.float32_ref"
    assert tf.float32_ref != tf.float32 and tf.float32_ref.base_dtype == tf.float32
    assert tf.half_ref is tf.float16_ref and tf.double_ref is tf.float64_ref
    assert tf.float32_ref.as_numpy_dtype is np.float32


def test_compatibility_follows_tensorflow():
    # a value type accepts its ref (a variable where a value is wanted), not the reverse
    assert tf.float32.is_compatible_with(tf.float32_ref)
    assert not tf.float32_ref.is_compatible_with(tf.float32)
    assert tf.float32_ref.is_compatible_with("float32_ref")
    assert not tf.float32.is_compatible_with(tf.int32_ref)


def test_graph_def_writes_value_types_where_tensorflow_does():
    g = tf.Graph()
    with g.as_default():
        tf.zeros([2], dtype=tf.float32_ref, name="z")  # a ref dtype given as an attr
        v = tf.Variable([1.0, 2.0], name="v")
        tf.assign(v, [3.0, 4.0], name="set")
    nodes = {n.name: n for n in g.as_graph_def().node}
    assert nodes["v"].attr["dtype"].type == gdef.DT_ENUM["float32"]
    assert nodes["set"].attr["T"].type == gdef.DT_ENUM["float32"]
    assert all(
        a.type < 100
        for n in nodes.values()
        for a in n.attr.values()
        if a.WhichOneof("value") == "type"
    )


def test_assign_and_variable_op_defs_mark_their_refs():
    proto = gdef.op_def("Assign")
    assert [a.is_ref for a in proto.input_arg] == [True, False] and proto.output_arg[0].is_ref
    assert gdef.op_def("VariableV2").output_arg[0].is_ref
    assert not any(a.is_ref for a in gdef.op_def("AssignVariableOp").input_arg)
