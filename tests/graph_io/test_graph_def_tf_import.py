"""GraphDefs written by TensorFlow with control flow: imported and run with its values.

``tests/fixtures/tf_control_flow/v1_grads.pb`` is TensorFlow 1's form (control
flow v1): loops of Enter/Merge/Switch/NextIteration/Exit, a nested loop, a
cond, a cond inside a loop, and ``tf.gradients`` of each, whose loop
gradients keep the forward values on ``StackV2`` stacks.  ``v1_grads.json``
holds what TensorFlow computed for two feeds (``make_v1_grad_fixtures.py``
writes both).
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np
import pytest

pytest.importorskip("tensorboard")

import flowbook as tf
from flowbook.framework.errors import InvalidArgumentError
from flowbook.graph_io import graph_def as gdef
from flowbook.ops._builder import make1

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures", "tf_control_flow")


def _load(name: str) -> tuple[Any, dict[str, Any]]:
    with open(os.path.join(FIXTURES, f"{name}.pb"), "rb") as f:
        gd = gdef.parse_graph_def(f.read())
    with open(os.path.join(FIXTURES, f"{name}.json")) as f:
        return gd, json.load(f)


def _imported(gd: Any) -> Any:
    g = tf.Graph()
    with g.as_default():
        tf.import_graph_def(gd, name="")
    return g


@pytest.mark.parametrize("case", [0, 1])
def test_v1_loops_and_conds_with_gradients(case: int) -> None:
    gd, expected = _load("v1_grads")
    want = expected["cases"][case]
    g = _imported(gd)
    with tf.Session(graph=g) as s:
        got = s.run(expected["fetches"], {f"{k}:0": v for k, v in want["feed"].items()})
    for name, value, ref in zip(expected["fetches"], got, want["values"]):
        np.testing.assert_allclose(value, ref, rtol=1e-5, atol=1e-6, err_msg=name)


def test_v1_gradient_uses_resource_stacks() -> None:
    gd, _ = _load("v1_grads")
    types = {n.op for n in gd.node}
    assert {"StackV2", "StackPushV2", "StackPopV2"} <= types


def test_v1_gradient_exports_back_in_tf_form() -> None:
    """Imported and exported again, every node still matches TensorFlow's OpDef."""
    from tests.graph_io.test_graph_def_tf_export import check_against_tf

    gd, _ = _load("v1_grads")
    assert check_against_tf(_imported(gd).as_graph_def()) == []


def test_stack_v2_max_size_and_close() -> None:
    with tf.Graph().as_default(), tf.Session() as s:
        h = make1("StackV2", (tf.constant(1),), {"elem_type": tf.float32, "stack_name": "s"})
        p1 = make1("StackPushV2", (h, tf.constant(1.0)), {"swap_memory": False})
        with tf.control_dependencies([p1]):
            p2 = make1("StackPushV2", (h, tf.constant(2.0)), {"swap_memory": False})
        with pytest.raises(InvalidArgumentError, match="max_size"):
            s.run(p2)
        with tf.control_dependencies([p1]):
            close = tf.get_default_graph().create_op("StackCloseV2", (h,))
        with tf.control_dependencies([close]):
            pop = make1("StackPopV2", (h,), {"elem_type": tf.float32})
        with pytest.raises(InvalidArgumentError, match="empty"):
            s.run(pop)


# ---------------------------------------------------------------- TensorFlow 2's forms
@pytest.mark.parametrize("case", [0, 1])
def test_tf_function_loops_conds_and_calls(case: int) -> None:
    """StatelessWhile, StatelessIf and PartitionedCall, lowered to frames, compute TF's values."""
    gd, expected = _load("v2_functions")
    assert {"StatelessWhile", "StatelessIf", "PartitionedCall"} <= {n.op for n in gd.node}
    want = expected["cases"][case]
    g = _imported(gd)
    assert not {"StatelessWhile", "StatelessIf", "PartitionedCall"} & {
        op.type for op in g.get_operations()
    }
    with tf.Session(graph=g) as s:
        got = s.run(expected["fetches"], {f"{k}:0": v for k, v in want["feed"].items()})
    for name, value, ref in zip(expected["fetches"], got, want["values"]):
        np.testing.assert_allclose(value, ref, rtol=1e-5, atol=1e-6, err_msg=name)


def test_resource_variables_with_v2_control_flow() -> None:
    """VarHandleOp variables, a While and an If reading them, a training step, assign_add/sub."""
    gd, expected = _load("v2_resource_vars")
    assert {"VarHandleOp", "While", "If", "ResourceApplyGradientDescent"} <= {n.op for n in gd.node}
    g = _imported(gd)
    feed = {"x:0": expected["feed"]["x"]}
    with tf.Session(graph=g) as s:
        assert not s.run("out_w_ready:0")
        with pytest.raises(tf.errors.FailedPreconditionError):
            s.run("out_w:0")
        s.run(expected["init"])
        for key, step in (("values", None), ("values_after_bump", expected["bump"])):
            if step is not None:
                s.run(step, feed)
            got = s.run(expected["fetches"], feed)
            for name, value, ref in zip(expected["fetches"], got, expected[key]):
                np.testing.assert_allclose(value, ref, rtol=1e-5, err_msg=f"{key} {name}")


def test_two_sessions_hold_two_values() -> None:
    gd, expected = _load("v2_resource_vars")
    g = _imported(gd)
    with tf.Session(graph=g) as a, tf.Session(graph=g) as b:
        a.run(expected["init"])
        b.run(expected["init"])
        a.run(expected["bump"], {"x:0": expected["feed"]["x"]})
        assert a.run("out_c:0") != b.run("out_c:0") == 0.5


def _call_graph(fn_name: str, library_name: str) -> Any:
    """A GraphDef calling ``fn_name`` on a Const, its library holding ``library_name``."""
    from tensorboard.compat.proto import graph_pb2

    gd = graph_pb2.GraphDef()
    gd.node.add(name="c", op="Const").attr["dtype"].type = 1
    gd.node[0].attr["value"].tensor.dtype = 1
    gd.node[0].attr["value"].tensor.float_val.append(2.0)
    gd.node[0].attr["value"].tensor.tensor_shape.SetInParent()
    call = gd.node.add(name="call", op="PartitionedCall", input=["c"])
    call.attr["f"].func.name = fn_name
    fn = gd.library.function.add()
    fn.signature.name = library_name
    fn.signature.input_arg.add(name="a", type=1)
    fn.signature.output_arg.add(name="out", type=1)
    body = fn.node_def.add(name="twice", op="AddV2", input=["a", "a"])
    body.attr["T"].type = 1
    fn.ret["out"] = "twice:z:0"
    gd.node.add(name="y", op="Identity", input=["call:0"]).attr["T"].type = 1
    return gd


def test_a_call_is_inlined() -> None:
    g = _imported(_call_graph("double", "double"))
    assert g.get_operation_by_name("call/twice").type == "AddV2"
    with tf.Session(graph=g) as s:
        assert s.run("y:0") == 4.0


def test_a_missing_function_is_named() -> None:
    with pytest.raises(ValueError, match=r"function 'double'.*not in the GraphDef's library"):
        _imported(_call_graph("double", "other"))


def test_a_recursive_function_is_refused() -> None:
    gd = _call_graph("double", "double")
    fn = gd.library.function[0]
    inner = fn.node_def.add(name="again", op="PartitionedCall", input=["twice:z:0"])
    inner.attr["f"].func.name = "double"
    fn.ret["out"] = "again:output:0"
    with pytest.raises(ValueError, match="nested deeper"):
        _imported(gd)


def test_attrs_tensorflow_writes_for_a_classifier_import():
    """TF 2.21 writes Tlabels on SparseSoftmaxCrossEntropyWithLogits and
    incompatible_shape_error on Equal: a classifier's meta graph has both."""
    from flowbook.graph_io import graph_def as gd_module

    g = tf.Graph()
    with g.as_default():
        logits = tf.placeholder(tf.float32, [None, 3], name="logits")
        labels = tf.placeholder(tf.int64, [None], name="labels")
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
        tf.equal(tf.argmax(logits, 1), labels, name="hit")
    gd = gd_module.to_graph_def(g)
    for node in gd.node:
        if node.op == "SparseSoftmaxCrossEntropyWithLogits":
            node.attr["Tlabels"].type = 9  # DT_INT64
        if node.op == "Equal":
            node.attr["incompatible_shape_error"].b = True
    with tf.Graph().as_default() as g2:
        tf.import_graph_def(gd, name="")
        with tf.Session() as s:
            hit = s.run("hit:0", {"logits:0": [[0.0, 2.0, 1.0]], "labels:0": [1]})
    assert hit.tolist() == [True]
    for node in gd.node:
        if node.op == "Equal":
            node.attr["incompatible_shape_error"].b = False
    with tf.Graph().as_default(), pytest.raises(ValueError, match="incompatible_shape_error"):
        tf.import_graph_def(gd, name="")
    assert g2.get_operation_by_name("hit").type == "Equal"


def test_a_node_with_a_junk_device_is_refused_at_import_and_the_graph_is_unchanged():
    from flowbook.graph_io import graph_def as gd_module

    g = tf.Graph()
    with g.as_default():
        tf.constant(1.0, name="a") + 2.0
    gd = gd_module.to_graph_def(g)
    gd.node[0].device = "junk"
    with tf.Graph().as_default() as target:
        tf.constant(0.0, name="before")
        with pytest.raises(ValueError, match=r"node 'a' \(Const\): bad device: .*'junk'"):
            tf.import_graph_def(gd, name="")
        assert [op.name for op in target.get_operations()] == ["before"]
