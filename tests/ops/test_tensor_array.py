"""tf.TensorArray: its methods against numpy, TF's errors, gradients, loops, GraphDefs."""

from __future__ import annotations

import numpy as np
import pytest

import flowbook as tf
from flowbook.framework.errors import InvalidArgumentError

X = np.arange(12, dtype=np.float32).reshape(4, 3) / 4 - 1  # four elements of shape [3]


def _ta(**kw):
    kw.setdefault("size", 4)
    return tf.TensorArray(tf.float32, **kw)


# (id, build(x) -> tensor, numpy reference(x))
METHODS = [
    ("unstack-stack", lambda x: _ta().unstack(x).stack(), lambda x: x),
    ("write-read", lambda x: _ta().write(2, x[1]).read(2), lambda x: x[1]),
    ("chained-writes", lambda x: _ta(size=2).write(1, x[0]).write(0, x[3]).stack(),
     lambda x: x[[3, 0]]),
    ("scatter-gather", lambda x: _ta().scatter([3, 0, 1, 2], x).gather([0, 3, 1]),
     lambda x: x[[1, 0, 2]]),
    ("gather-repeats", lambda x: _ta().unstack(x).gather([2, 2, 0]), lambda x: x[[2, 2, 0]]),
    ("split-concat", lambda x: _ta(size=3, infer_shape=False).split(tf.reshape(x, [12]), [5, 0, 7]).concat(),
     lambda x: x.reshape(12)),
    ("split-read", lambda x: _ta(size=2, infer_shape=False).split(x, [1, 3]).read(1), lambda x: x[1:]),
    ("concat-rows", lambda x: _ta(size=2, infer_shape=False).write(0, x[:1]).write(1, x[1:]).concat(),
     lambda x: x),
    ("split-equal", lambda x: _ta(size=2).split(x, [2, 2]).read(1), lambda x: x[2:]),
    ("size", lambda x: _ta(size=7).size(), lambda x: np.int32(7)),
    ("dynamic-grows", lambda x: _ta(size=0, dynamic_size=True).write(5, x[0]).size(),
     lambda x: np.int32(6)),
    ("dynamic-stack", lambda x: _ta(size=1, dynamic_size=True).unstack(x).stack(), lambda x: x),
    ("identity", lambda x: _ta().unstack(x).identity().read(3), lambda x: x[3]),
    ("empty-stack-known-shape", lambda x: _ta(size=0, element_shape=[3]).stack(),
     lambda x: np.zeros((0, 3), np.float32)),
    ("read-twice", lambda x: (lambda t: t.read(1) + t.read(1))(_ta().unstack(x)),
     lambda x: 2 * x[1]),
]  # fmt: skip


@pytest.mark.parametrize("build,ref", [m[1:] for m in METHODS], ids=[m[0] for m in METHODS])
def test_methods_agree_with_numpy(build, ref):
    with tf.Graph().as_default(), tf.Session() as s:
        x = tf.placeholder(tf.float32, [4, 3])
        got = s.run(build(x), {x: X})
    want = ref(X)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    np.testing.assert_array_equal(got, want)


def test_static_shapes_follow_the_writes():
    with tf.Graph().as_default():
        ta = tf.TensorArray(tf.float32, size=4)
        assert ta.element_shape.ndims is None
        ta2 = ta.write(0, tf.zeros([2, 3]))
        assert ta.element_shape.as_list() == [2, 3]  # shared by every object of one array
        assert ta2.read(1).shape.as_list() == [2, 3]
        assert ta2.stack().shape.as_list() == [None, 2, 3]
        assert ta2.gather([0, 1]).shape.as_list() == [2, 2, 3]
        assert ta2.concat().shape.as_list() == [None, 3]
        assert ta2.flow.dtype == tf.float32 and ta2.handle.dtype == tf.string
        assert ta2.dtype == tf.float32 and ta2.handle is ta.handle and ta2.flow is not ta.flow


# ------------------------------------------------------------------ errors
def _fed(shape=(None,)):
    return tf.placeholder(tf.float32, list(shape))


# (id, build(v) -> fetch, v's value, error regex)
RUN_ERRORS = [
    ("read-unwritten", lambda v: _ta().write(0, v).read(1), [1.0],
     r"index 1 because it has not yet been written to"),
    ("write-twice", lambda v: _ta().write(0, v).write(0, v).stack(), [1.0],
     r"index 0 because it has already been written to"),
    ("write-out-of-range", lambda v: _ta(size=2).write(2, v).stack(), [1.0],
     r"Tried to write to index 2 but array is not resizeable and size is: 2"),
    ("write-negative", lambda v: _ta(size=0, dynamic_size=True).write(-1, v).size(), [1.0],
     r"Tried to write to index -1"),
    ("read-out-of-range", lambda v: _ta(size=2).write(0, v).read(5), [1.0],
     r"Tried to read from index 5 but array size is: 2"),
    ("shape-mismatch", lambda v: _ta(size=2).write(0, v[:1]).write(1, v).stack(), [1.0, 2.0],
     r"value shape is \[2\] which is incompatible with the TensorArray's inferred element "
     r"shape: \[1\]"),
    ("element-shape-declared", lambda v: _ta(size=1, element_shape=[3]).write(0, v).stack(),
     [1.0, 2.0], r"incompatible with the TensorArray's inferred element shape: \[3\]"),
    ("stack-ragged", lambda v: _ta(size=2, infer_shape=False).write(0, v).write(1, v[:1]).stack(),
     [1.0, 2.0], r"inconsistent shapes. Index 0 has shape: \[2\] but index 1 has shape: \[1\]"),
    ("ragged-split", lambda v: _ta(size=2).split(v, [1, 1]).stack(), [1.0, 2.0, 3.0],
     r"Expected sum of lengths to be equal to values.shape\[0\]"),
    ("ragged-with-infer-shape", lambda v: _ta(size=2).split(v, [1, 2]).concat(), [1.0, 2.0, 3.0],
     r"value shape is \[2\] which is incompatible with .*element shape: \[1\]"),
    ("stack-empty-unknown", lambda v: _ta(size=0).stack() + tf.reduce_sum(v), [1.0],
     r"size zero, but element shape <unknown> is not fully defined"),
    ("scatter-lengths", lambda v: _ta().scatter([0, 1, 2], v).stack(), [1.0, 2.0],
     r"Expected len\(indices\) == values.shape\[0\], but saw: 3 vs. 2"),
    ("split-lengths", lambda v: _ta().split(v, [1, 2]).concat(), [1.0, 2.0],
     r"sum of lengths is 3"),
]  # fmt: skip


@pytest.mark.parametrize(
    "build,value,match", [e[1:] for e in RUN_ERRORS], ids=[e[0] for e in RUN_ERRORS]
)
def test_run_time_errors_are_tensorflows_and_name_the_op_and_line(build, value, match):
    with tf.Graph().as_default(), tf.Session() as s:
        v = _fed()
        out = build(v)
        with pytest.raises(InvalidArgumentError, match=match) as err:
            s.run(out, {v: value})
    message = str(err.value)
    assert "TensorArray" in message and "test_tensor_array.py" in message, message


def test_an_error_names_the_failing_op():
    with tf.Graph().as_default(), tf.Session() as s:
        ta = _ta(tensor_array_name="acts").write(0, [1.0])
        r = ta.read(3, name="late_read")
        with pytest.raises(InvalidArgumentError) as err:
            s.run(r)
    assert err.value.op is r.op
    assert "TensorArrayReadV3 'late_read'" in str(err.value)
    assert "TensorArray acts: Could not read from TensorArray index 3" in str(err.value)


def test_a_closed_array_cannot_be_used():
    with tf.Graph().as_default(), tf.Session() as s:
        ta = _ta().write(0, [1.0])
        close = ta.close()
        with tf.control_dependencies([close]):
            n = ta.size()
        with pytest.raises(InvalidArgumentError, match="has already been closed"):
            s.run(n)


def test_build_time_errors():
    with tf.Graph().as_default():
        ta = _ta().write(0, tf.zeros([2]))
        with pytest.raises(ValueError, match=r"Inconsistent shapes: saw \[3\] but expected \[2\]"):
            ta.write(1, tf.zeros([3]))
        wrong_dtype = r"TensorArray dtype is float32 but Op is trying to write dtype int32.*test_"
        with pytest.raises(TypeError, match=wrong_dtype):
            ta.write(1, tf.constant([1, 2]))
        with pytest.raises(ValueError, match="Size must be provided"):
            tf.TensorArray(tf.float32)
        with pytest.raises(ValueError, match="flow must not be None"):
            tf.TensorArray(tf.float32, handle=ta.handle)
        with pytest.raises(TypeError, match="size must be an integer scalar"):
            tf.TensorArray(tf.float32, size=tf.constant([1, 2]))


def test_each_run_gets_a_new_array():
    with tf.Graph().as_default(), tf.Session() as s:
        v = _fed()
        out = _ta(size=1).write(0, v).read(0)
        assert s.run(out, {v: [1.0]}).tolist() == [1.0]
        assert s.run(out, {v: [2.0, 3.0]}).tolist() == [2.0, 3.0]  # no "written twice"


# --------------------------------------------------------------- gradients
def _numeric_grad(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[idx] = eps
        g[idx] = (f(x + d) - f(x - d)) / (2 * eps)
    return g


X64 = X.astype(np.float64)


def _ta64(**kw):
    kw.setdefault("size", 4)
    return tf.TensorArray(tf.float64, **kw)


# (id, build(x) -> a scalar); x is [4, 3] float64
GRADS = {
    "read-write": lambda x: tf.reduce_sum(_ta64().write(1, x[0] * x[1]).write(0, x[2]).read(1)),
    "unstack-read-twice": lambda x: tf.reduce_sum(
        (lambda t: tf.sin(t.read(3)) * t.read(3) + t.read(0))(_ta64().unstack(x))
    ),
    "unread-elements": lambda x: tf.reduce_sum(_ta64().unstack(x * x).read(2)),
    "scatter-gather": lambda x: tf.reduce_sum(
        _ta64().scatter([2, 0, 3, 1], tf.tanh(x)).gather([1, 1, 0]) ** 2
    ),
    "stack": lambda x: tf.reduce_sum(_ta64(size=2).write(1, x).write(0, x * 2.0).stack() ** 3),
    "split-concat": lambda x: tf.reduce_sum(
        tf.cos(_ta64(size=3, infer_shape=False).split(x, [1, 2, 1]).concat()) * x
    ),
    "concat-split": lambda x: tf.reduce_sum(
        _ta64(size=2, infer_shape=False).split(tf.reshape(x, [12]), [4, 8]).read(1) ** 2
    ),
}


@pytest.mark.parametrize("name", sorted(GRADS))
def test_gradients_equal_finite_differences(name):
    with tf.Graph().as_default(), tf.Session() as s:
        x = tf.placeholder(tf.float64, [4, 3])
        y = GRADS[name](x)
        (g,) = tf.gradients(y, x)
        got = s.run(g, {x: X64})
        want = _numeric_grad(lambda v: s.run(y, {x: v}), X64)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


def _rnn_with_arrays(x, w, steps):
    """h = tanh(h w + x_t), every h written to an output array: the dynamic_rnn pattern."""
    inputs = tf.TensorArray(x.dtype, size=steps).unstack(x)

    def body(t, h, out):
        h = tf.tanh(tf.matmul(h, w) + inputs.read(t))
        return t + 1, h, out.write(t, h)

    h0 = tf.zeros_like(x[0])
    _, h, out = tf.while_loop(
        lambda t, h, out: t < steps, body, [0, h0, tf.TensorArray(x.dtype, size=steps)]
    )
    return out.stack(), h


def test_loop_over_arrays_equals_the_unrolled_graph_and_finite_differences():
    rng = np.random.default_rng(3)
    xv, wv = rng.normal(size=(5, 2, 3)), rng.normal(size=(3, 3)) * 0.5
    with tf.Graph().as_default(), tf.Session() as s:
        x, w = tf.placeholder(tf.float64, [5, 2, 3]), tf.placeholder(tf.float64, [3, 3])
        outs, h = _rnn_with_arrays(x, w, 5)
        loss = tf.reduce_sum(outs**2) + tf.reduce_sum(h)
        u, unrolled = tf.zeros_like(x[0]), []
        for t in range(5):
            u = tf.tanh(tf.matmul(u, w) + x[t])
            unrolled.append(u)
        loss_u = tf.reduce_sum(tf.stack(unrolled) ** 2) + tf.reduce_sum(u)
        feed = {x: xv, w: wv}
        got = s.run(tf.gradients(loss, [x, w]), feed)
        want = s.run(tf.gradients(loss_u, [x, w]), feed)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-10)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-10)
        num_w = _numeric_grad(lambda v: s.run(loss, {x: xv, w: v}), wv)
        np.testing.assert_allclose(got[1], num_w, rtol=1e-6, atol=1e-8)


def test_two_gradient_computations_get_their_own_gradient_arrays():
    with tf.Graph().as_default(), tf.Session() as s:
        x = tf.placeholder(tf.float64, [4, 3])
        ta = _ta64().unstack(x)
        y = tf.reduce_sum(ta.read(0) * ta.read(1))
        g1 = tf.gradients(y, x)[0]
        g2 = tf.gradients(3.0 * y, x)[0]
        a, b = s.run([g1, g2], {x: X64})
        np.testing.assert_allclose(b, 3.0 * a)
        np.testing.assert_allclose(a[0], X64[1])


def test_dynamic_size_array_in_a_loop_with_maximum_iterations():
    with tf.Graph().as_default(), tf.Session() as s:
        n = tf.placeholder(tf.int32, [])
        ta = tf.TensorArray(tf.int32, size=0, dynamic_size=True)
        _, ta = tf.while_loop(
            lambda i, ta: i < n,
            lambda i, ta: (i + 1, ta.write(i, i * i)),
            [0, ta],
            maximum_iterations=6,
        )
        assert isinstance(ta, tf.TensorArray)
        assert s.run(ta.stack(), {n: 4}).tolist() == [0, 1, 4, 9]
        assert s.run(ta.stack(), {n: 100}).tolist() == [0, 1, 4, 9, 16, 25]


def test_a_single_array_as_the_only_loop_variable():
    with tf.Graph().as_default(), tf.Session() as s:
        ta = tf.TensorArray(tf.float32, size=3)
        out = tf.while_loop(lambda ta: ta.size() > 99, lambda ta: ta, ta)
        assert isinstance(out, tf.TensorArray)
        assert s.run(out.size()) == 3


def test_an_array_loop_round_trips_through_graph_def():
    pytest.importorskip("tensorboard")
    from flowbook.graph_io import graph_def as gdef

    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [5, 2, 3], name="x")
        w = tf.constant(np.eye(3, dtype=np.float32) * 0.5)
        outs, _ = _rnn_with_arrays(x, w, 5)
        tf.identity(outs, name="outs")
        xv = np.random.default_rng(0).normal(size=(5, 2, 3)).astype(np.float32)
        with tf.Session() as s:
            want = s.run(outs, {x: xv})
    data = gdef.to_graph_def(g).SerializeToString()
    with tf.Graph().as_default() as g2, tf.Session() as s:
        gdef.import_graph_def(data, name="")
        np.testing.assert_allclose(s.run("outs:0", {"x:0": xv}), want, rtol=1e-6)
        ta_op = g2.get_operation_by_name("TensorArray")
        assert ta_op.type == "TensorArrayV3" and ta_op.get_attr("identical_element_shapes")


def test_cond_returns_arrays_written_in_either_branch():
    with tf.Graph().as_default(), tf.Session() as s:
        p = tf.placeholder(tf.bool, [])
        ta = tf.TensorArray(tf.float32, size=2).write(0, 1.0)
        out = tf.cond(p, lambda: ta.write(1, 2.0), lambda: ta.write(1, -2.0))
        assert isinstance(out, tf.TensorArray) and out.handle is ta.handle
        assert s.run(out.stack(), {p: True}).tolist() == [1.0, 2.0]
        assert s.run(out.stack(), {p: False}).tolist() == [1.0, -2.0]
