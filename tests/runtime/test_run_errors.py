"""Errors a student reads: run-time shape clashes in the op's own terms, unknown names with the
nearest ones offered.

A kernel fed shapes that clash only at run time (placeholders of unknown
dimensions) fails with what the op's build-time check says of the actual
shapes, under the op, its type and the line that wrote it; the graph and the
variables are as they were.  A name the graph lacks raises a short error that
offers the nearest op names, with no internal exception chained to it.
"""

from __future__ import annotations

import traceback

import numpy as np
import pytest

import flowbook as tf
from flowbook.runtime.op_errors import op_error

HERE = "test_run_errors.py:"
F32 = np.float32

# (id, the failing op's type, build(a, b) -> tensor, a's value, b's value, what the message says)
RUN_ERRORS = [
    ("matmul", "MatMul", lambda a, b: tf.matmul(a, b), np.ones((32, 3)), np.ones((4, 2)),
     "inner dimensions differ (3 vs 4), a[32,3] @ b[4,2]"),
    ("matmul_transposed", "MatMul", lambda a, b: tf.matmul(a, b, transpose_b=True), np.ones((32, 3)),
     np.ones((2, 4)), "inner dimensions differ (3 vs 4), a[32,3] @ b[2,4]^T"),
    ("batch_matmul", "BatchMatMulV2", lambda a, b: tf.matmul(a, b), np.ones((2, 3, 4)),
     np.ones((2, 5, 6)), "inner dimensions differ (4 vs 5), a[2,3,4] @ b[2,5,6]"),
    ("add", "Add", lambda a, b: a + b, np.ones((32, 3)), np.ones((4, 2)),
     "but are 32 and 4 for shapes [32,3] and [4,2]"),
    ("mul", "Mul", lambda a, b: tf.multiply(a, b), np.ones((2, 3)), np.ones((2, 2)),
     "but are 3 and 2 for shapes [2,3] and [2,2]"),
    ("squared_difference", "SquaredDifference", lambda a, b: tf.squared_difference(a, b), np.ones((2, 3)),
     np.ones((5, 3)), "for shapes [2,3] and [5,3]"),
    ("concat", "ConcatV2", lambda a, b: tf.concat([a, b], 0), np.ones((32, 3)), np.ones((4, 2)),
     "Dimension 1 must be equal in all inputs (concatenating on axis 0), got shapes [32,3], [4,2]"),
    ("reshape", "Reshape", lambda a, b: tf.reshape(a, [5, -1]) + b, np.ones((3, 3)), np.ones(()),
     "Input to reshape is a tensor with 9 values"),
    ("conv2d", "Conv2D", lambda a, b: tf.nn.conv2d(a, b, [1, 1, 1, 1], "SAME"),
     np.ones((1, 5, 5, 3)), np.ones((3, 3, 4, 8)), "input depth 3 does not match filter in_channels 4"),
]  # fmt: skip


@pytest.mark.parametrize(
    "name,op_type,build,a_value,b_value,says", RUN_ERRORS, ids=[c[0] for c in RUN_ERRORS]
)
def test_run_time_shape_errors_say_what_the_build_time_check_says(
    name, op_type, build, a_value, b_value, says
):
    with tf.Graph().as_default() as g:
        a = tf.placeholder(tf.float32, [None] * a_value.ndim, name="a")
        b = tf.placeholder(tf.float32, [None] * b_value.ndim, name="b")
        v = tf.Variable(1.0, name="v")
        out = build(a, b)
        step = tf.assign_add(v, tf.reduce_sum(out))  # an update that waits for the failing op
        failing = next(op for op in g.get_operations() if op.type == op_type)
        ops, version = g.get_operations(), g.version
        with tf.Session() as s:
            s.run(v.initializer)
            for _ in range(2):  # the first run and the next one, whichever path each takes
                with pytest.raises(tf.errors.InvalidArgumentError) as e:
                    s.run(step, {a: a_value.astype(F32), b: b_value.astype(F32)})
                message = str(e.value)
                assert says in message
                assert message.startswith(f"{failing.type} '{failing.name}' (")
                assert HERE in message
                assert "gufunc" not in message and "could not be broadcast" not in message
                assert e.value.op is failing
            assert s.run(v) == 1.0  # the update never ran
        assert g.get_operations() == ops and g.version == version


@pytest.mark.parametrize("opt_level", [tf.OptimizerOptions.L1, tf.OptimizerOptions.L0])
def test_a_broadcast_clash_after_good_runs_reads_the_same(opt_level):
    """The run after good ones takes the straight line (compiled): the op's check words the
    clash all the same."""
    config = tf.ConfigProto(
        graph_options=tf.GraphOptions(optimizer_options=tf.OptimizerOptions(opt_level=opt_level))
    )
    with tf.Graph().as_default(), tf.Session(config=config) as s:
        a = tf.placeholder(tf.float32, [None, None])
        b = tf.placeholder(tf.float32, [None, None])
        y = tf.exp(a) * 2.0 + b
        for _ in range(4):
            s.run(y, {a: np.ones((2, 3)), b: np.ones((2, 3))})
        for _ in range(2):
            with pytest.raises(tf.errors.InvalidArgumentError) as e:
                s.run(y, {a: np.ones((2, 3)), b: np.ones((4, 2))})
            assert "for shapes [2,3] and [4,2]" in str(e.value)
            assert str(e.value).startswith(f"{y.op.type} '{y.op.name}' (") and HERE in str(e.value)


@pytest.mark.parametrize("opt_level", [tf.OptimizerOptions.L1, tf.OptimizerOptions.L0])
def test_a_matmul_clash_on_the_compiled_straight_line_names_the_shapes(opt_level):
    config = tf.ConfigProto(
        graph_options=tf.GraphOptions(optimizer_options=tf.OptimizerOptions(opt_level=opt_level))
    )
    with tf.Graph().as_default(), tf.Session(config=config) as s:
        a = tf.placeholder(tf.float32, [None, None], name="a")
        b = tf.placeholder(tf.float32, [None, None], name="b")
        y = tf.nn.relu(tf.matmul(a, b, name="mm"))
        for _ in range(4):  # good runs: the next ones take the straight line
            s.run(y, {a: np.ones((2, 3)), b: np.ones((3, 2))})
        for _ in range(2):
            with pytest.raises(tf.errors.InvalidArgumentError) as e:
                s.run(y, {a: np.ones((32, 3)), b: np.ones((4, 2))})
            message = str(e.value)
            assert "inner dimensions differ (3 vs 4), a[32,3] @ b[4,2]" in message, message
            assert message.startswith("MatMul 'mm' (") and "gufunc" not in message


def test_a_clash_inside_a_compiled_loop_names_the_shapes_and_the_iteration():
    with tf.Graph().as_default():
        a = tf.placeholder(tf.float32, name="a")
        w = tf.placeholder(tf.float32, name="w")
        _, out = tf.while_loop(lambda i, x: i < 2, lambda i, x: (i + 1, tf.matmul(x, w)), [0, a])
        with tf.Session() as sess:
            feed = {a: np.ones((2, 3), F32), w: np.ones((4, 2), F32)}
            with pytest.raises(tf.errors.InvalidArgumentError) as info:
                sess.run(out, feed)
    message = str(info.value)
    assert "inner dimensions differ (3 vs 4), a[2,3] @ b[4,2]" in message, message
    assert "iteration 0" in message and "gufunc" not in message, message


def test_a_kernel_error_the_check_does_not_explain_keeps_the_kernels_words():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, None)
        y = tf.matmul(x, x)
        error = op_error(y.op, ValueError("something else"), args=[np.ones((2, 2))] * 2)
        assert str(error).endswith("ValueError: something else")
        assert type(error) is tf.errors.InvalidArgumentError
        error = op_error(y.op, ValueError("without values"))
        assert str(error).endswith("ValueError: without values")


# ------------------------------------------------------------------ unknown names
def _graph_with_y() -> tf.Graph:
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [2], name="x")
        tf.identity(x, name="y")
        tf.identity(x, name="y2")
        tf.identity(x, name="loss")
    return g


LOOKUPS = [
    ("tensor", lambda g: g.get_tensor_by_name("y3:0"),
     "The name 'y3:0' refers to a Tensor which does not exist. The operation, 'y3', does not "
     "exist in the graph. Did you mean: 'y', 'y2'?"),
    ("operation", lambda g: g.get_operation_by_name("y3"),
     "The name 'y3' refers to an Operation not in the graph. Did you mean: 'y', 'y2'?"),
    ("element", lambda g: g.as_graph_element("los:0"),
     "The operation, 'los', does not exist in the graph. Did you mean: 'loss'?"),
    ("bad_index", lambda g: g.get_tensor_by_name("y:1"),
     "The operation, 'y', exists but only has 1 outputs ('y:0')."),
    ("nothing_near", lambda g: g.get_tensor_by_name("zzz:0"),
     "The operation, 'zzz', does not exist in the graph."),
]  # fmt: skip


@pytest.mark.parametrize("name,lookup,says", LOOKUPS, ids=[c[0] for c in LOOKUPS])
def test_unknown_names_raise_a_short_key_error_offering_the_nearest(name, lookup, says):
    g = _graph_with_y()
    with pytest.raises(KeyError) as e:
        lookup(g)
    assert e.value.args[0].endswith(says)
    if name == "nothing_near":
        assert "Did you mean" not in e.value.args[0]
    assert e.value.__cause__ is None and e.value.__suppress_context__
    frames = traceback.extract_tb(e.value.__traceback__)
    assert sum(f.filename.endswith("graph.py") for f in frames) == 1  # raised by the lookup itself


def test_wrong_names_in_a_run_offer_the_nearest():
    g = _graph_with_y()
    with g.as_default(), tf.Session() as s:
        feed = {"x:0": [1.0, 2.0]}
        with pytest.raises(ValueError, match=r"Did you mean: 'y', 'y2'\?") as e:
            s.run("y3:0", feed)
        assert e.value.__cause__ is None and e.value.__suppress_context__
        with pytest.raises(TypeError, match=r"'xx:0'.*Did you mean: 'x'\?") as e:
            s.run("y:0", {"xx:0": [1.0, 2.0]})
        assert e.value.__cause__ is None and e.value.__suppress_context__
        assert s.run("y2:0", feed).tolist() == [1.0, 2.0]


class _EachOp(tf.Observer):
    """Watches every op: loops stay on the scheduler, not compiled."""

    def before_op(self, op):
        pass


def test_a_clash_inside_an_interpreted_loop_names_the_shapes_and_the_iteration():
    with tf.Graph().as_default():
        a = tf.placeholder(tf.float32, name="a")
        w = tf.placeholder(tf.float32, name="w")
        _, out = tf.while_loop(lambda i, x: i < 2, lambda i, x: (i + 1, tf.matmul(x, w)), [0, a])
        with tf.Session() as sess, tf.observe(_EachOp()):
            feed = {a: np.ones((2, 3), F32), w: np.ones((4, 2), F32)}
            with pytest.raises(tf.errors.InvalidArgumentError) as info:
                sess.run(out, feed)
    message = str(info.value)
    assert "inner dimensions differ (3 vs 4), a[2,3] @ b[4,2]" in message, message
    assert "iteration 0" in message and HERE in message, message
