"""GraphDef export of control flow in TensorFlow's form: cond, while, their gradients.

Each graph is exported and every NodeDef is checked against TensorFlow's OpDef
of its op, as committed in ``tests/fixtures/tf_control_flow/tf_op_defs.json``
(written by ``make_tf_op_defs.py`` from TensorFlow's registry): the attrs are
exactly TensorFlow's (every required one, no unknown one, each of the right
kind), the data inputs are as many as the OpDef takes and of the dtypes it
takes (a stack handle is a resource).  The same GraphDefs, imported back into
flowbook, compute what the original graphs did.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

pytest.importorskip("tensorboard")

import flowbook as tf
from flowbook.graph_io import graph_def as gdef
from flowbook.graph_io.graph_def_import import tensor_value

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures", "tf_control_flow")
with open(os.path.join(FIXTURES, "tf_op_defs.json")) as _f:
    TF_OPS: dict[str, Any] = json.load(_f)

_KIND_FIELD = {
    "type": "type", "int": "i", "bool": "b", "string": "s", "float": "f",
    "shape": "shape", "tensor": "tensor",
}  # fmt: skip


def _cond(x: Any) -> list[Any]:
    return [tf.cond(x > 0, lambda: x * 2.0, lambda: x - 1.0)]


def _while(x: Any) -> list[Any]:
    return [tf.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, y * x), [0, 1.0])[1]]


def _nested(x: Any) -> list[Any]:
    def body(i: Any, y: Any) -> Any:
        _, z = tf.while_loop(lambda j, z: j < 2, lambda j, z: (j + 1, z * x), [0, y])
        return i + 1, z

    return [tf.while_loop(lambda i, y: i < 2, body, [0, 1.0])[1]]


def _cond_in_while(x: Any) -> list[Any]:
    def body(i: Any, y: Any) -> Any:
        return i + 1, tf.cond(y < 5.0, lambda: y * x, lambda: y + x)

    return [tf.while_loop(lambda i, y: i < 4, body, [0, 1.0])[1]]


def _any_all(x: Any) -> list[Any]:
    v = tf.stack([x, x * 2.0])
    return [
        tf.cond(tf.reduce_any(v > 1.0), lambda: x, lambda: -x)
        + tf.cast(tf.reduce_all(v > 0), tf.float32)
    ]


def _with_grad(build: Callable[[Any], list[Any]]) -> Callable[[Any], list[Any]]:
    def both(x: Any) -> list[Any]:
        (y,) = build(x)
        return [y, tf.gradients(y, x)[0]]

    return both


GRAPHS: dict[str, Callable[[Any], list[Any]]] = {
    "cond": _cond,
    "while": _while,
    "nested": _nested,
    "any_all": _any_all,
    "cond_grad": _with_grad(_cond),
    "while_grad": _with_grad(_while),
    "nested_grad": _with_grad(_nested),
    "cond_in_while_grad": _with_grad(_cond_in_while),
}


def _build(kind: str) -> tuple[Any, list[str]]:
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, shape=(), name="x")
        outs = GRAPHS[kind](x)
    return g, [t.name for t in outs]


def _arg_dtypes(node: Any, arg: dict[str, Any]) -> list[int]:
    """The DataType enums one OpDef arg stands for in ``node`` (several for a list)."""
    if "type_list_attr" in arg:
        return list(node.attr[arg["type_list_attr"]].list.type)
    dtype = arg["type"] or node.attr[arg["type_attr"]].type
    return [dtype] * (node.attr[arg["number_attr"]].i if "number_attr" in arg else 1)


def _check_attrs(node: Any, opdef: dict[str, Any]) -> list[str]:
    errors = []
    given = {k for k in node.attr if not k.startswith("_")}
    for name, spec in opdef["attrs"].items():
        if name not in given:
            if not spec["default"]:
                errors.append(f"{node.name} ({node.op}): missing attr '{name}'")
            continue
        kind = node.attr[name].WhichOneof("value")
        want = "list" if spec["type"].startswith("list") else _KIND_FIELD.get(spec["type"])
        if want is not None and kind != want:
            errors.append(f"{node.name} ({node.op}): attr '{name}' is {kind}, TF wants {want}")
    errors += [
        f"{node.name} ({node.op}): attr '{k}' unknown to TF" for k in given - set(opdef["attrs"])
    ]
    return errors


def check_against_tf(gd: Any) -> list[str]:
    """Every way the GraphDef's nodes differ from TensorFlow's OpDefs of their ops."""
    errors: list[str] = []
    outputs: dict[str, list[int]] = {}
    for node in gd.node:
        opdef = TF_OPS.get(node.op)
        if opdef is None:
            errors.append(f"{node.name}: op {node.op} missing from tf_op_defs.json")
            continue
        errors += _check_attrs(node, opdef)
        outputs[node.name] = [d for arg in opdef["outputs"] for d in _arg_dtypes(node, arg)]
    for node in gd.node:
        opdef = TF_OPS.get(node.op)
        if opdef is None:
            continue
        want = [d for arg in opdef["inputs"] for d in _arg_dtypes(node, arg)]
        data = [i for i in node.input if not i.startswith("^")]
        if len(data) != len(want):
            errors.append(f"{node.name} ({node.op}): {len(data)} inputs, TF takes {len(want)}")
            continue
        for text, dtype in zip(data, want):
            src, _, idx = text.partition(":")
            got = outputs.get(src, [])[int(idx or 0) :][:1]
            if got != [dtype]:
                errors.append(f"{node.name} ({node.op}): input '{text}' is {got}, TF takes {dtype}")
    return errors


@pytest.mark.parametrize("kind", sorted(GRAPHS))
def test_nodes_are_tf_op_defs(kind: str) -> None:
    g, _ = _build(kind)
    assert check_against_tf(g.as_graph_def()) == []


def test_gradient_stacks_are_resource_stacks() -> None:
    g, _ = _build("while_grad")
    nodes = {n.name: n for n in g.as_graph_def().node}
    types = {n.op for n in nodes.values()}
    assert {"StackV2", "StackPushV2", "StackPopV2"} <= types
    assert not types & {"Stack", "StackPush", "StackPop"}
    stack = next(n for n in nodes.values() if n.op == "StackV2")
    size = nodes[stack.input[0]]
    assert size.op == "Const" and tensor_value(size.attr["value"].tensor, "max_size") == -1
    assert stack.attr["elem_type"].type in (1, 3) and stack.attr["stack_name"].s
    handle_enters = [n for n in nodes.values() if n.op == "Enter" and n.attr["T"].type == 20]
    assert handle_enters and all(n.attr["frame_name"].s for n in handle_enters)


def test_merge_counts_its_inputs() -> None:
    g, _ = _build("cond_in_while_grad")
    merges = [n for n in g.as_graph_def().node if n.op == "Merge"]
    assert merges and all(n.attr["N"].i == len(n.input) for n in merges)


def test_a_stack_in_a_loop_takes_its_size_in_that_loop() -> None:
    """The max_size Const of a stack made inside a loop has the stack's control inputs."""
    g, _ = _build("nested_grad")
    nodes = {n.name: n for n in g.as_graph_def().node}
    inner = [n for n in nodes.values() if n.op == "StackV2" and n.input[1:]]
    assert inner
    for n in inner:
        assert list(nodes[n.input[0]].input) == list(n.input[1:])


@pytest.mark.parametrize("kind", sorted(GRAPHS))
def test_round_trip_computes_the_same(kind: str) -> None:
    g, names = _build(kind)
    gd = gdef.parse_graph_def(g.as_graph_def().SerializeToString())
    back = tf.Graph()
    with back.as_default():
        tf.import_graph_def(gd, name="")
    for xv in (1.5, -2.0):
        with tf.Session(graph=g) as s:
            want = s.run(names, {"x:0": xv})
        with tf.Session(graph=back) as s:
            got = s.run(names, {"x:0": xv})
        np.testing.assert_allclose(got, want, rtol=1e-6)
