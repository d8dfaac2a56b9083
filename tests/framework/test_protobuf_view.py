"""What a TF1 program that prints each operation sees: NodeDef messages and tracebacks."""

from __future__ import annotations

from tensorboard.compat.proto import node_def_pb2

import flowbook as tf


def _small_graph() -> tf.Graph:
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        w = tf.Variable(tf.ones([2, 3]), name="w")
        y = tf.matmul(x, w, name="y")
        tf.add(y, 1.0, name="out")
    return g


def test_every_op_prints_its_node_def_and_traceback():
    g = _small_graph()
    for op in g.get_operations():
        node = op.node_def
        assert isinstance(node, node_def_pb2.NodeDef)
        assert (node.name, node.op) == (op.name, op.type)
        assert list(node.input) == [t.name.removesuffix(":0") for t in op.inputs]
        assert str(node).startswith(f'name: "{op.name}"')
        ((file, line, function, code),) = op.traceback
        assert file == __file__ and line > 0 and function == "_small_graph" and code


def test_node_def_attrs_are_tensorflow_s():
    g = _small_graph()
    matmul = g.get_operation_by_name("y").node_def
    assert matmul.attr["T"].type == 1  # DT_FLOAT
    assert matmul.attr["transpose_a"].b is False
    assert g.get_operation_by_name("x").node_def.attr["shape"].shape.dim[1].size == 2


def test_node_def_is_a_copy_and_follows_graph_edits():
    g = _small_graph()
    op = g.get_operation_by_name("out")
    op.node_def.name = "renamed"
    assert op.node_def.name == "out"
    with g.as_default():
        tf.identity(op.outputs[0], name="later")
    assert g.get_operation_by_name("later").node_def.input == ["out"]


def test_graph_def_prints_as_tensorflow_text():
    text = str(_small_graph().as_graph_def())
    assert 'node {\n  name: "x"\n  op: "Placeholder"' in text
