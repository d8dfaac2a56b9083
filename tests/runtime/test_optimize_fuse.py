"""The fusion pass (flowbook/runtime/optimize/fuse.py) and its ops (flowbook/ops/nn/fused_ops.py):
what it fuses, what it must leave alone, and that fused runs give the written plan's bits."""

from __future__ import annotations

import numpy as np
import pytest

import flowbook as tf
from flowbook.ops.state.training_ops import apply_gradient_descent
from flowbook.runtime.optimize.optimizer import PASSES, optimize
from tests.runtime.test_optimize import AS_WRITTEN, mlp_step, optimised_plans, same_bits

SPECIAL = np.array([[-0.0, 0.0, 1.5, -2.0], [np.nan, np.inf, -np.inf, 3.0]], np.float32)


def run_both(fetches, feed, n=3):
    """Each fetch's value, optimised and as written (the last of ``n`` runs), and the plans."""
    with tf.Session() as on, tf.Session(config=AS_WRITTEN) as off:
        for _ in range(n):
            got, want = on.run(fetches, feed), off.run(fetches, feed)
        return got, want, optimised_plans(on)


# each: a [2, 4] float32 tensor -> (a chain to fuse, the fused op type made of it)
CHAINS = [
    ("matmul+bias+relu", lambda x: tf.nn.relu(tf.matmul(x, tf.ones([4, 3])) + tf.constant([1.0, -1.0, 0.0])),
     "_FusedMatMul"),
    ("matmul^T+bias_add", lambda x: tf.nn.bias_add(tf.matmul(x, x, transpose_b=True), [1.0, 2.0]),
     "_FusedMatMul"),
    ("mul-sub-max", lambda x: tf.maximum(x * 2.0 - 1.0, -3.0), "_FusedElementwise"),
    ("scalar on the left", lambda x: 3.0 * (0.5 + x), "_FusedElementwise"),
    ("div-min", lambda x: tf.minimum(x / 3.0, x), "_FusedElementwise"),
    ("sum+mul", lambda x: tf.reduce_sum(x, 0) * [1.0, 2.0, 3.0, 4.0], "_FusedSum"),
    ("sum over no axes", lambda x: tf.reduce_sum(x * 1.0, []) + 0.0, "_FusedElementwise"),
    ("relu grad", lambda x: tf.gradients(tf.reduce_sum(tf.nn.relu(x) * x), x)[0], None),
]  # fmt: skip


@pytest.mark.parametrize("build, kind", [c[1:] for c in CHAINS], ids=[c[0] for c in CHAINS])
def test_fused_chains_give_the_written_bits_special_values_included(build, kind):
    x = tf.placeholder(tf.float32, [None, 4], name="x")
    y = build(x)
    got, want, plans = run_both(y, {x: SPECIAL})
    assert same_bits(got, want)
    (plan,) = plans
    fused = [op.type for op in plan.ops if op.type.startswith("_Fused")]
    assert kind is None or kind in fused  # None: the bits are the point (nothing left to fuse)
    assert not any(op.type == "Sum" for op in plan.ops)  # over no axes: removed (optimize.py)


def test_the_mlp_step_runs_fused_ops_and_names_what_they_replaced():
    g, feed, train, _ = mlp_step()
    with g.as_default(), tf.Session() as s:
        s.run(tf.global_variables_initializer())
        written = s.prepare(train, feed).plan
    opt = optimize(written, tuple(np.shape(v) for v in feed.values()), PASSES)
    types = [op.type for op in opt.plan.ops]
    assert {"_FusedMatMul", "_FusedSparseSoftmaxCrossEntropyWithLogits", "_FusedSum"} <= set(types)
    assert types.count("ApplyGradientDescent") == 3 and "Mul" not in types
    xent = next(op for op in opt.plan.ops if op.type.endswith("CrossEntropyWithLogits"))
    assert xent.attrs["with_loss"] is False  # nothing reads the loss in a bare train step
    assert opt.origin["Relu"] == ("MatMul", "add", "Relu")
    written_names = {op.name for op in written.ops}
    assert all(set(names) <= written_names for names in opt.origin.values())
    assert set(opt.origin) == {op.name for op in opt.plan.ops}
    assert (
        "Add 'add': fused into _FusedMatMul 'Relu' (MatMul 'MatMul', Add 'add', Relu 'Relu': "
        "one kernel)." in opt.notes
    )
    assert all(
        op.name not in g._ops or g._ops[op.name] is op or op.type.startswith("_Fused")
        for op in opt.plan.ops
    )
    assert not any(op.type.startswith("_Fused") for op in g.get_operations())


def test_a_fetched_loss_is_computed_by_the_fused_cross_entropy_bit_for_bit():
    g, feed, train, loss = mlp_step()
    with g.as_default():
        init = tf.global_variables_initializer()
    with tf.Session(graph=g) as on, tf.Session(graph=g, config=AS_WRITTEN) as off:
        on.run(init), off.run(init)
        for _ in range(4):
            assert same_bits(on.run([train, loss], feed)[1], off.run([train, loss], feed)[1])
        plans = optimised_plans(on)
    xents = [op for p in plans for op in p.ops if op.type.endswith("CrossEntropyWithLogits")]
    assert any(op.attrs["with_loss"] for op in xents)


def test_a_bad_label_in_a_fused_run_names_the_written_op():
    g, feed, train, _ = mlp_step()
    with g.as_default(), tf.Session() as s:
        s.run(tf.global_variables_initializer())
        for _ in range(3):
            s.run(train, feed)
        assert any(op.type.startswith("_Fused") for p in optimised_plans(s) for op in p.ops)
        y = g.get_tensor_by_name("y:0")
        for label in (7, -1, 10):
            bad = {**feed, y: np.full(16, label)}
            with pytest.raises(tf.errors.InvalidArgumentError, match=f"label value of {label} "):
                s.run(train, bad)


def test_fetched_or_shared_links_and_stateful_ops_are_not_fused():
    x = tf.placeholder(tf.float32, [None, 4], name="x")
    m = tf.matmul(x, tf.ones([4, 4]), name="m")
    a = tf.add(m, 1.0, name="a")  # fetched: stays
    r = tf.nn.relu(a, name="r")
    b = tf.multiply(r, 2.0, name="b")
    c, d = b + 1.0, b - 1.0  # b read twice: the chain stops at b
    v = tf.Variable(tf.zeros([4]), name="v")
    up = tf.assign_add(v, tf.reduce_sum(x, 0) * 2.0)
    got, want, (plan,) = run_both([a, c, d], {x: SPECIAL})
    for p, q in zip(got, want):
        assert same_bits(p, q)
    names = {op.name for op in plan.ops}
    assert "a" in names and ("b" in names or "r" in names)
    with tf.Session() as s:
        s.run(v.initializer)
        for _ in range(3):
            s.run(up, {x: np.ones((2, 4), np.float32)})
        (plan,) = optimised_plans(s)
        assert "AssignAdd" in {op.type for op in plan.ops}
        assert s.run(v).tolist() == [12.0, 12.0, 12.0, 12.0]


def test_opt_level_l0_fuses_nothing():
    x = tf.placeholder(tf.float32, [None, 4])
    y = tf.nn.relu(tf.matmul(x, tf.ones([4, 2])) + 1.0)
    with tf.Session(config=AS_WRITTEN) as s:
        for _ in range(3):
            s.run(y, {x: SPECIAL})
        assert optimised_plans(s) == []


# --------------------------------------------------------- ApplyGradientDescent
@pytest.mark.parametrize("shape", [(), (3,), (2, 3)])
def test_apply_gradient_descent_equals_assign_sub_of_the_product(shape):
    rng = np.random.default_rng(len(shape))
    start = rng.standard_normal(shape).astype(np.float32)
    grad = rng.standard_normal(shape).astype(np.float32)
    with tf.Graph().as_default(), tf.Session() as s:
        v, w = tf.Variable(start), tf.Variable(start)
        lr = tf.constant(0.1)
        ours = apply_gradient_descent(v, lr, grad)
        ref = tf.assign_sub(w, tf.constant(grad) * lr)
        s.run([v.initializer, w.initializer])
        for _ in range(3):
            a, b = s.run([ours, ref])
            assert same_bits(a, b) and a.dtype == np.float32
        assert ours.op.type == "ApplyGradientDescent"
        with pytest.raises(ValueError, match="same shape"):
            apply_gradient_descent(v, lr, np.zeros((7,), np.float32))


def test_apply_gradient_descent_refuses_a_fed_delta_of_another_shape_naming_the_op():
    with tf.Graph().as_default(), tf.Session() as s:
        v = tf.Variable(np.ones(3, np.float32), name="v")
        d = tf.placeholder(tf.float32, name="d")
        step = apply_gradient_descent(v, 0.5, d, name="step")
        s.run(v.initializer)
        with pytest.raises(tf.errors.InvalidArgumentError, match="step"):
            s.run(step, {d: np.ones(4, np.float32)})
        assert s.run(v).tolist() == [1.0, 1.0, 1.0]


def test_gradient_descent_emits_tensorflows_op_and_names():
    with tf.Graph().as_default() as g:
        w = tf.Variable([1.0, 2.0], name="w")
        tf.train.GradientDescentOptimizer(0.5).minimize(tf.reduce_sum(w * w))
    names = {op.name: op.type for op in g.get_operations()}
    assert names["GradientDescent/update_w/ApplyGradientDescent"] == "ApplyGradientDescent"
    assert "AssignSub" not in names.values()


# --------------------------------------------------------- convolution and pooling chains
def _images(seed: int, shape=(2, 6, 6, 2)) -> np.ndarray:
    """Images with ties (repeated values), zeros, -0.0 and negatives: what ReLU and max_pool
    meet in a CNN."""
    rng = np.random.default_rng(seed)
    x = rng.integers(-2, 3, shape).astype(np.float32) * 0.5
    x.flat[::7] = -0.0
    return x


def _conv(x, channels=3):
    f = tf.constant(np.random.default_rng(9).standard_normal((3, 3, 2, channels)), tf.float32)
    return tf.nn.conv2d(x, f, [1, 1, 1, 1], "SAME")


def _relu_pool_grad(ksize, strides, padding):
    def build(x):
        h = tf.nn.relu(_conv(x) + tf.constant([0.5, -0.5, 0.0]))
        p = tf.nn.max_pool(h, ksize, strides, padding)
        return tf.gradients(tf.reduce_sum(p * tf.sin(p + 1.0)), x)[0]

    return build


# each: a [2, 6, 6, 2] float32 tensor -> (what to fetch, the fused op types it must run)
CONV_CHAINS = [
    ("conv+bias_add+relu", lambda x: tf.nn.relu(tf.nn.bias_add(_conv(x), [1.0, -1.0, 0.0])),
     {"_FusedConv2D"}),
    ("conv+add", lambda x: _conv(x) + tf.constant([1.0, -1.0, 0.0]), {"_FusedConv2D"}),
    ("relu pool grad 2x2/2", _relu_pool_grad([1, 2, 2, 1], [1, 2, 2, 1], "VALID"),
     {"_FusedConv2D", "_FusedMaxPoolGrad"}),
    ("relu pool grad 3x3/2 SAME", _relu_pool_grad([1, 3, 3, 1], [1, 2, 2, 1], "SAME"),
     {"_FusedMaxPoolGrad"}),
    ("relu pool grad 3x3/3", _relu_pool_grad([1, 3, 3, 1], [1, 3, 3, 1], "VALID"),
     {"_FusedMaxPoolGrad"}),
]  # fmt: skip


@pytest.mark.parametrize(
    "build, kinds", [c[1:] for c in CONV_CHAINS], ids=[c[0] for c in CONV_CHAINS]
)
@pytest.mark.parametrize("seed", [0, 1])
def test_conv_and_pool_chains_fuse_and_give_the_written_bits(build, kinds, seed):
    x = tf.placeholder(tf.float32, [None, 6, 6, 2], name="x")
    got, want, (plan,) = run_both(build(x), {x: _images(seed)})
    assert same_bits(got, want)
    assert kinds <= {op.type for op in plan.ops}
    for op in plan.ops:  # the plan's own MaxPool made each pool gradient's orig_output
        assert op.type != "_FusedMaxPoolGrad" or op.attrs.get("pooled") is True


def test_the_rewrite_says_a_pool_gradient_reads_its_maxima():
    x = tf.placeholder(tf.float32, [None, 6, 6, 2], name="x")
    dx = _relu_pool_grad([1, 2, 2, 1], [1, 2, 2, 1], "VALID")(x)
    feed = {x: _images(0)}
    with tf.Session() as s:
        written = s.prepare(dx, feed).plan
    opt = optimize(written, tuple(np.shape(v) for v in feed.values()), PASSES)
    said = [n for n in opt.notes if "maximum read from its MaxPool's output" in n]
    assert len(said) == 1 and said[0].startswith("MaxPoolGrad ")


@pytest.mark.parametrize("made_by", ["fed", "other window"])
def test_a_pool_grad_reads_maxima_only_from_its_own_pool(made_by):
    """``pooled`` (maxima read from orig_output) only where this plan's MaxPool of the same
    input and window made it: not when it is fed, nor made by a pool of another window."""
    from flowbook.ops.nn.activation_grads import activation_grad

    x = tf.placeholder(tf.float32, [None, 6, 6, 2], name="x")
    h = tf.nn.relu(_conv(x))
    ksize = [1, 2, 2, 1] if made_by == "fed" else [1, 3, 3, 1]
    y = tf.nn.max_pool(h, ksize, [1, 3, 3, 1], "VALID")
    g = tf.get_default_graph()
    grad = tf.placeholder(tf.float32, [None, 2, 2, 3], name="g")
    attrs = {"ksize": [1, 2, 2, 1], "strides": [1, 3, 3, 1], "padding": "VALID"}
    back = g.create_op("MaxPoolGrad", [h, y, grad], attrs=attrs).outputs[0]
    r = activation_grad("ReluGrad", back, h)
    feed = {x: _images(4), grad: np.ones((2, 2, 2, 3), np.float32)}
    if made_by == "fed":  # a fed orig_output that is not the maximum: only a shape, as TF
        feed[y] = np.full((2, 2, 2, 3), 7.0, np.float32)
    got, want, (plan,) = run_both(r, feed)
    assert same_bits(got, want)
    (fused,) = [op for op in plan.ops if op.type == "_FusedMaxPoolGrad"]
    assert fused.attrs["pooled"] is False


@pytest.mark.parametrize("mask_by, fused", [("pooled", True), ("other", False)])
def test_a_pool_grad_fuses_only_with_the_relu_grad_masked_by_the_pooled_tensor(mask_by, fused):
    from flowbook.ops.nn.activation_grads import activation_grad

    x = tf.placeholder(tf.float32, [None, 6, 6, 2], name="x")
    h = tf.nn.relu(_conv(x))
    p = tf.nn.max_pool(h, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
    (dh,) = tf.gradients(tf.reduce_sum(p * p), h)
    assert dh.op.type == "MaxPoolGrad"
    other = tf.nn.relu(tf.concat([x, x * 2.0 - 1.0, x], -1)[..., 1:4])
    r = activation_grad("ReluGrad", dh, h if mask_by == "pooled" else other)
    got, want, (plan,) = run_both(r, {x: _images(3)})
    assert same_bits(got, want)
    assert ("_FusedMaxPoolGrad" in {op.type for op in plan.ops}) is fused


POOL_GEOMETRIES = [
    ((1, 2, 2, 1), (1, 2, 2, 1), "VALID", (2, 4, 4, 3)),  # tiles the input
    ((1, 2, 2, 1), (1, 3, 3, 1), "VALID", (2, 5, 5, 3)),  # disjoint, cells left over
    ((1, 3, 3, 1), (1, 2, 2, 1), "SAME", (2, 5, 5, 3)),  # overlapping, padded
]


@pytest.mark.parametrize("ksize,strides,padding,shape", POOL_GEOMETRIES)
@pytest.mark.parametrize("relu_input", [True, False])
def test_max_pool_grad_relu_is_relu_grad_after_it_with_special_gradients(
    ksize, strides, padding, shape, relu_input
):
    from flowbook.framework.registry import OPS

    attrs = {"ksize": ksize, "strides": strides, "padding": padding}
    x = _images(4, shape)
    if relu_input:  # dead windows: maxima of 0
        x = np.maximum(x, 0)
    x[0, 0, 0, 0] = np.nan
    y = OPS["MaxPool"].kernel(np, x, **attrs)
    grad = np.random.default_rng(5).standard_normal(y.shape).astype(np.float32)
    fused = OPS["_FusedMaxPoolGrad"].bound_kernel(np, {**attrs, "fused_ops": ["ReluGrad"]})
    pooled = OPS["_FusedMaxPoolGrad"].bound_kernel(
        np, {**attrs, "fused_ops": ["ReluGrad"], "pooled": True}
    )
    with np.errstate(all="ignore"):
        for special in (None, np.inf, np.nan, -0.0, -np.inf):
            if special is not None:
                grad[0, 0, 1] = grad[1, 1, 0] = special
            want = OPS["ReluGrad"].kernel(np, OPS["MaxPoolGrad"].kernel(np, x, y, grad, **attrs), x)
            assert same_bits(fused(x, y, grad), want)
            assert same_bits(pooled(x, y, grad), want)


def test_max_pool_grad_then_relu_grad_give_tensorflow_s_bits():
    """Observed in TensorFlow 2.21 (raw ops, CPU): MaxPoolGrad adds each window's gradient into
    zeros at its first maximum; ReluGrad multiplies by ``features > 0`` (-0.0, NaN)."""
    from flowbook.framework.registry import OPS

    attrs = {"ksize": (1, 1, 2, 1), "strides": (1, 1, 2, 1), "padding": "VALID"}
    x = np.array([0.0, 0.0, -1.0, -2.0, 3.0, 1.0], np.float32).reshape(1, 1, 6, 1)
    y = OPS["MaxPool"].kernel(np, x, **attrs)
    grad = np.array([-5.0, np.inf, -0.0], np.float32).reshape(1, 1, 3, 1)
    with np.errstate(all="ignore"):
        pool = OPS["MaxPoolGrad"].kernel(np, x, y, grad, **attrs)
        relu = OPS["ReluGrad"].kernel(np, pool, x)
        fused = OPS["_FusedMaxPoolGrad"].bound_kernel(np, {**attrs, "fused_ops": ["ReluGrad"]})
        got = fused(x, y, grad)
    assert pool.ravel().tolist()[0] == -5.0 and np.isinf(pool.ravel()[2])
    assert not np.signbit(pool.ravel()[4])  # 0.0 + -0.0
    assert np.signbit(relu.ravel()[0]) and relu.ravel()[0] == 0  # -5 * 0
    assert np.isnan(relu.ravel()[2])  # inf * 0
    assert not np.signbit(relu.ravel()[[1, 3, 4, 5]]).any()
    assert same_bits(got, relu)


def test_a_sum_over_no_axes_keeps_negative_zero_as_tensorflow_and_is_removed():
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    y = tf.reduce_sum(x, [], name="s") * 1.0
    feed = {x: np.array([[-0.0, 1.0]], np.float32)}
    got, want, plans = run_both(y, feed)
    assert np.signbit(got[0, 0]) and np.signbit(want[0, 0])  # TF copies what it reduces nothing of
    assert "s" not in {op.name for op in plans[0].ops}
