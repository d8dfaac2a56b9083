"""tf.layers: TF1's variable and op names, numbers against numpy, reuse, losses, updates, training."""

from __future__ import annotations

import numpy as np
import pytest

import flowbook as tf
from flowbook.autodiff import gradient_checker

F32 = np.float32
RNG = np.random.RandomState(0)


def _init(values):
    """An initializer giving exactly ``values`` (float32)."""
    return tf.constant_initializer(np.asarray(values, F32))


def _run(fetches, feed=None):
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        return s.run(fetches, feed)


def _var_names():
    return [v.name for v in tf.global_variables()]


# ------------------------------------------------------------------- names
def _two_dense():
    h = tf.layers.dense(tf.zeros([2, 3]), 4, activation=tf.nn.relu)
    y = tf.layers.dense(h, 2)
    return _var_names(), [h.name, y.name]


def _conv_family():
    x = tf.zeros([1, 8, 8, 2])
    a = tf.layers.conv2d(x, 3, 3)
    b = tf.layers.conv2d_transpose(a, 2, 3)
    c = tf.layers.conv1d(tf.zeros([1, 8, 2]), 3, 3)
    return _var_names(), [a.name, b.shape.as_list(), c.shape.as_list()]


def _batch_norms():
    tf.layers.batch_normalization(tf.zeros([2, 3]), training=True)
    tf.layers.batch_normalization(tf.zeros([2, 3]))
    ups = [t.op.name for t in tf.get_collection(tf.GraphKeys.UPDATE_OPS)]
    return _var_names(), ups


def _named_and_reused():
    a = tf.layers.dense(tf.zeros([2, 3]), 4, name="fc")
    b = tf.layers.dense(tf.zeros([2, 3]), 4, name="fc", reuse=True)
    return _var_names(), [a.name, b.name]


def _layer_object_twice():
    layer = tf.layers.Dense(4)
    a, b = layer(tf.zeros([2, 3])), layer(tf.zeros([5, 3]))
    return _var_names(), [a.name, b.name, layer.name]


def _in_variable_scope():
    with tf.variable_scope("model"):
        y = tf.layers.dense(tf.zeros([2, 3]), 4)
        tf.layers.dense(y, 1)
    with tf.variable_scope("model", reuse=True):
        z = tf.layers.dense(tf.zeros([2, 3]), 4)
    return _var_names(), [y.name, z.name]


def _pools_and_friends():
    x = tf.zeros([1, 4, 4, 2])
    return [], [
        tf.layers.max_pooling2d(x, 2, 2).name,
        tf.layers.average_pooling2d(x, 2, 2).name,
        tf.layers.flatten(x).name,
        tf.layers.dropout(x).name,
        tf.layers.max_pooling1d(tf.zeros([1, 6, 2]), 2, 2).shape.as_list(),
    ]


NAMES = [
    ("two_dense", _two_dense,
     ["dense/kernel:0", "dense/bias:0", "dense_1/kernel:0", "dense_1/bias:0"],
     ["dense/Relu:0", "dense_1/BiasAdd:0"]),
    ("conv_family", _conv_family,
     ["conv2d/kernel:0", "conv2d/bias:0", "conv2d_transpose/kernel:0",
      "conv2d_transpose/bias:0", "conv1d/kernel:0", "conv1d/bias:0"],
     ["conv2d/BiasAdd:0", [1, 8, 8, 2], [1, 6, 3]]),
    ("batch_norms", _batch_norms,
     [f"batch_normalization{s}/{v}:0" for s in ("", "_1")
      for v in ("gamma", "beta", "moving_mean", "moving_variance")],
     ["batch_normalization/AssignMovingAvg", "batch_normalization/AssignMovingAvg_1"]),
    ("named_and_reused", _named_and_reused, ["fc/kernel:0", "fc/bias:0"],
     ["fc/BiasAdd:0", "fc_1/BiasAdd:0"]),
    ("layer_object_twice", _layer_object_twice, ["dense/kernel:0", "dense/bias:0"],
     ["dense/BiasAdd:0", "dense/BiasAdd_1:0", "dense"]),
    ("in_variable_scope", _in_variable_scope,
     ["model/dense/kernel:0", "model/dense/bias:0", "model/dense_1/kernel:0",
      "model/dense_1/bias:0"],
     ["model/dense/BiasAdd:0", "model_1/dense/BiasAdd:0"]),
    ("pools_and_friends", _pools_and_friends, [],
     ["max_pooling2d/MaxPool:0", "average_pooling2d/AvgPool:0", "flatten/Reshape:0",
      "dropout/Identity:0", [1, 3, 2]]),
]  # fmt: skip


@pytest.mark.parametrize(
    "build,variables,outputs", [r[1:] for r in NAMES], ids=[r[0] for r in NAMES]
)
def test_names_as_tensorflow_gives_them(build, variables, outputs):
    assert build() == (variables, outputs)


def test_kernel_shapes():
    tf.layers.conv2d(tf.zeros([1, 8, 8, 2]), 5, (3, 4))
    tf.layers.conv2d_transpose(tf.zeros([1, 4, 4, 5]), 6, 3)
    tf.layers.conv1d(tf.zeros([1, 8, 2]), 7, 3)
    tf.layers.dense(tf.zeros([1, 9]), 3)
    shapes = [v.shape.as_list() for v in tf.trainable_variables() if "kernel" in v.name]
    assert shapes == [[3, 4, 2, 5], [3, 3, 6, 5], [3, 2, 7], [9, 3]]


# ------------------------------------------------------------- numbers
def np_conv2d(x, k, stride, padding):
    """Cross-correlation, NHWC x HWIO, TF's SAME/VALID padding."""
    n, h, w, _ = x.shape
    kh, kw, _, o = k.shape
    if padding == "SAME":
        oh, ow = -(-h // stride), -(-w // stride)
        ph = max((oh - 1) * stride + kh - h, 0)
        pw = max((ow - 1) * stride + kw - w, 0)
        x = np.pad(x, ((0, 0), (ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2), (0, 0)))
    else:
        oh, ow = (h - kh) // stride + 1, (w - kw) // stride + 1
    out = np.zeros((n, oh, ow, o))
    for i in range(oh):
        for j in range(ow):
            patch = x[:, i * stride : i * stride + kh, j * stride : j * stride + kw, :]
            out[:, i, j, :] = np.tensordot(patch, k, axes=([1, 2, 3], [0, 1, 2]))
    return out


def np_conv2d_transpose_valid(x, k, stride):
    """Each input pixel scatters ``k[:, :, :, c] * x`` into the output (VALID padding)."""
    n, h, w, _ = x.shape
    kh, kw, o, _ = k.shape
    out = np.zeros((n, (h - 1) * stride + kh, (w - 1) * stride + kw, o))
    for i in range(h):
        for j in range(w):
            contrib = np.tensordot(x[:, i, j, :], k, axes=([1], [3]))  # n, kh, kw, o
            out[:, i * stride : i * stride + kh, j * stride : j * stride + kw, :] += contrib
    return out


X4 = RNG.randn(2, 6, 6, 3).astype(F32)
K4 = RNG.randn(3, 3, 3, 4).astype(F32)
B4 = RNG.randn(4).astype(F32)
X2 = RNG.randn(5, 3).astype(F32)
K2 = RNG.randn(3, 4).astype(F32)


def _relu(v):
    return np.maximum(v, 0)


NUMBERS = [
    ("dense", lambda: tf.layers.dense(X2, 4, kernel_initializer=_init(K2),
                                      bias_initializer=_init(B4)),
     X2 @ K2 + B4),
    ("dense_relu_3d", lambda: tf.layers.dense(np.stack([X2, X2]), 4, tf.nn.relu,
                                              kernel_initializer=_init(K2)),
     _relu(np.stack([X2, X2]) @ K2)),
    ("conv2d_same_stride2", lambda: tf.layers.conv2d(X4, 4, 3, 2, "same",
                                                     kernel_initializer=_init(K4),
                                                     bias_initializer=_init(B4)),
     np_conv2d(X4, K4, 2, "SAME") + B4),
    ("conv2d_valid", lambda: tf.layers.conv2d(X4, 4, 3, kernel_initializer=_init(K4)),
     np_conv2d(X4, K4, 1, "VALID")),
    ("conv1d", lambda: tf.layers.conv1d(X4[:, 0], 4, 3, kernel_initializer=_init(K4[0])),
     np_conv2d(X4[:, :1], K4[:1], 1, "VALID")[:, 0]),
    ("conv2d_transpose", lambda: tf.layers.conv2d_transpose(
        X4, 2, 3, 2, kernel_initializer=_init(K4[:, :, :2, :3])),
     np_conv2d_transpose_valid(X4, K4[:, :, :2, :3], 2)),
    ("max_pooling2d", lambda: tf.layers.max_pooling2d(X4, 2, 2),
     X4.reshape(2, 3, 2, 3, 2, 3).max(axis=(2, 4))),
    ("average_pooling2d", lambda: tf.layers.average_pooling2d(X4, 3, 3),
     X4.reshape(2, 2, 3, 2, 3, 3).mean(axis=(2, 4))),
    ("max_pooling1d", lambda: tf.layers.max_pooling1d(X4[:, 0], 3, 3),
     X4[:, 0].reshape(2, 2, 3, 3).max(axis=2)),
    ("average_pooling1d", lambda: tf.layers.average_pooling1d(X4[:, 0], 2, 2),
     X4[:, 0].reshape(2, 3, 2, 3).mean(axis=2)),
    ("flatten", lambda: tf.layers.flatten(X4), X4.reshape(2, -1)),
    ("dropout_not_training", lambda: tf.layers.dropout(X2, 0.9), X2),
]  # fmt: skip


@pytest.mark.parametrize("build,expected", [r[1:] for r in NUMBERS], ids=[r[0] for r in NUMBERS])
def test_values_against_numpy(build, expected):
    got = _run(build())
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_dropout_training_keeps_with_probability_and_scales():
    x = tf.ones([100000])
    on = tf.layers.dropout(x, rate=0.25, training=True, seed=3)
    flag = tf.placeholder(tf.bool, [])
    maybe = tf.layers.dropout(x, rate=0.25, training=flag, seed=3)
    a, b, c = _run([on, maybe, tf.layers.dropout(x, 0.25, training=False)], {flag: False})
    assert set(np.unique(a)) == {F32(0), F32(1 / 0.75)}
    assert (a == 0).mean() == pytest.approx(0.25, abs=0.01)
    assert (b == 1).all() and (c == 1).all()
    assert (_run(maybe, {flag: True}) == 0).mean() == pytest.approx(0.25, abs=0.01)


def test_flatten_unknown_batch():
    x = tf.placeholder(tf.float32, [None, 2, None])
    y = tf.layers.flatten(x)
    assert y.shape.as_list() == [None, None]
    assert _run(y, {x: np.zeros((3, 2, 5), F32)}).shape == (3, 10)


# ------------------------------------------------------------- batch norm
def _bn_expected(x, axes, gamma, beta, eps):
    mean, var = x.mean(axis=axes, keepdims=True), x.var(axis=axes, keepdims=True)
    return gamma * (x - mean) / np.sqrt(var + eps) + beta, mean.ravel(), var.ravel()


@pytest.mark.parametrize("shape", [(8, 3), (4, 5, 5, 3)], ids=["2d", "4d_fused"])
def test_batch_norm_training_output_and_moving_averages(shape):
    x = (RNG.randn(*shape) * 2 + 1).astype(F32)
    gamma, beta = RNG.rand(3).astype(F32) + 0.5, RNG.randn(3).astype(F32)
    y = tf.layers.batch_normalization(
        x,
        momentum=0.9,
        epsilon=1e-3,
        training=True,
        gamma_initializer=_init(gamma),
        beta_initializer=_init(beta),
    )
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    moving = [v for v in tf.global_variables() if "moving" in v.name]
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        out, _ = s.run([y, updates])
        mm, mv = s.run(moving)
    axes = tuple(range(len(shape) - 1))
    expected, mean, var = _bn_expected(x.astype(np.float64), axes, gamma, beta, 1e-3)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)
    n = x.size / 3
    batch_var = var * n / (n - 1) if len(shape) == 4 else var  # TF's fused kernel: Bessel
    np.testing.assert_allclose(mm, 0.9 * 0 + 0.1 * mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mv, 0.9 * 1 + 0.1 * batch_var, rtol=1e-5)


def test_batch_norm_inference_uses_moving_statistics_and_makes_no_updates():
    x = RNG.randn(6, 2).astype(F32)
    y = tf.layers.batch_normalization(
        x,
        epsilon=0.01,
        moving_mean_initializer=_init([1.0, -1.0]),
        moving_variance_initializer=_init([4.0, 0.25]),
    )
    assert tf.get_collection(tf.GraphKeys.UPDATE_OPS) == []
    expected = (x - [1.0, -1.0]) / np.sqrt(np.array([4.0, 0.25]) + 0.01)
    np.testing.assert_allclose(_run(y), expected, rtol=1e-5)


def test_batch_norm_training_tensor_and_axis_1():
    x = RNG.randn(4, 3, 2, 2).astype(F32)
    flag = tf.placeholder(tf.bool, [])
    y = tf.layers.batch_normalization(x, axis=1, training=flag, center=False, scale=False)
    assert _var_names() == [
        "batch_normalization/moving_mean:0",
        "batch_normalization/moving_variance:0",
    ]
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    mm, mv = tf.global_variables()
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        train_out, _ = s.run([y, updates], {flag: True})
        assert s.run(mm).tolist() == pytest.approx((0.01 * x.mean(axis=(0, 2, 3))).tolist())
        before = s.run([mm, mv])
        infer_out, _ = s.run([y, updates], {flag: False})
        after = s.run([mm, mv])
    np.testing.assert_array_equal(after[0], before[0])  # not training: the averages stay
    np.testing.assert_array_equal(after[1], before[1])
    expected, _, _ = _bn_expected(x.astype(np.float64), (0, 2, 3), 1.0, 0.0, 1e-3)
    np.testing.assert_allclose(train_out, expected, rtol=1e-4, atol=1e-5)
    mean, var = (b.reshape(1, 3, 1, 1) for b in before)
    np.testing.assert_allclose(infer_out, (x - mean) / np.sqrt(var + 1e-3), rtol=1e-5)


# ------------------------------------------------------- losses and errors
def test_regularizers_add_losses_once_per_variable():
    def reg(w):
        return tf.reduce_sum(tf.abs(w))

    x = tf.zeros([2, 3])
    tf.layers.dense(
        x,
        2,
        kernel_initializer=_init(np.ones((3, 2))),
        kernel_regularizer=reg,
        bias_regularizer=reg,
        name="fc",
    )
    tf.layers.dense(x, 2, kernel_regularizer=reg, name="fc", reuse=True)
    losses = tf.losses.get_regularization_losses()
    assert [t.name.split("/Regularizer")[0] for t in losses] == ["fc/kernel", "fc/bias"]
    assert _run(tf.losses.get_regularization_loss()) == pytest.approx(6.0)


def test_activity_regularizer():
    tf.layers.dense(
        tf.ones([2, 3]),
        2,
        kernel_initializer=tf.ones_initializer(),
        activity_regularizer=tf.reduce_sum,
    )
    (loss,) = tf.losses.get_regularization_losses()
    assert loss.name.startswith("dense/ActivityRegularizer/") and _run(loss) == 12.0


ERRORS = [
    ("same_name_twice", lambda: [tf.layers.dense(tf.zeros([1, 2]), 2, name="fc")
                                 for _ in range(2)], ValueError,
     "Variable fc/kernel already exists, disallowed."),
    ("unknown_last_dim", lambda: tf.layers.dense(tf.placeholder(tf.float32, [None, None]), 2),
     ValueError, "The last dimension of the inputs to `Dense` should be defined. Found `None`."),
    ("bad_padding", lambda: tf.layers.conv2d(tf.zeros([1, 4, 4, 1]), 2, 3, padding="full"),
     ValueError, "The `padding` argument must be one of 'valid', 'same'"),
    ("channels_first", lambda: tf.layers.Conv2D(2, 3, data_format="channels_first"),
     NotImplementedError, "Conv2D: only data_format='channels_last'"),
    ("conv_rank", lambda: tf.layers.conv2d(tf.zeros([4, 4, 1]), 2, 3), ValueError,
     "Input to Conv2D should have rank 4"),
    ("reuse_missing", lambda: tf.layers.dense(tf.zeros([1, 2]), 2, name="new", reuse=True),
     ValueError, "Variable new/kernel does not exist"),
]  # fmt: skip


@pytest.mark.parametrize("build,kind,message", [r[1:] for r in ERRORS], ids=[r[0] for r in ERRORS])
def test_errors(build, kind, message):
    with pytest.raises(kind) as info:
        build()
    assert str(info.value).startswith(message), str(info.value)


# ------------------------------------------------------------- training
def test_gradients_reach_every_variable_and_training_lowers_the_loss():
    tf.set_random_seed(0)
    images = RNG.randn(16, 8, 8, 1).astype(F32)
    labels = (images.mean(axis=(1, 2, 3)) > 0).astype(np.int64)
    x = tf.placeholder(tf.float32, [None, 8, 8, 1])
    y = tf.placeholder(tf.int64, [None])
    training = tf.placeholder(tf.bool, [])
    h = tf.layers.conv2d(x, 4, 3, padding="same", activation=tf.nn.relu)
    h = tf.layers.batch_normalization(h, training=training)
    h = tf.layers.max_pooling2d(h, 2, 2)
    h = tf.layers.conv2d_transpose(h, 2, 2, 2)
    h = tf.layers.average_pooling2d(h, 2, 2)
    h = tf.layers.conv1d(tf.reshape(h, [-1, 16, 2]), 3, 3)
    h = tf.layers.dropout(tf.layers.flatten(h), 0.1, training=training)
    logits = tf.layers.dense(tf.layers.dense(h, 16, tf.nn.relu), 2)
    loss = tf.losses.sparse_softmax_cross_entropy(y, logits)
    variables = tf.trainable_variables()
    grads = tf.gradients(loss, variables)
    assert len(variables) == 12 and all(g is not None for g in grads)
    with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
        train = tf.train.AdamOptimizer(0.01).minimize(loss)
    feed = {x: images, y: labels, training: True}
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        first = s.run(loss, {x: images, y: labels, training: False})
        for _ in range(60):
            s.run(train, feed)
        last = s.run(loss, {x: images, y: labels, training: False})
        moving = s.run(tf.global_variables("batch_normalization/moving_mean")[0])
    assert last < first * 0.5
    assert np.abs(moving).sum() > 0  # the updates ran with the train op


# --------------------------------------------------- tf.nn.moments / batch_normalization
def test_nn_moments_and_batch_normalization_against_numpy():
    x = RNG.randn(4, 3, 5).astype(F32)
    m, v = tf.nn.moments(x, [0, 2])
    mk, vk = tf.nn.moments(x, [1], keep_dims=True)
    y = tf.nn.batch_normalization(x, 0.5, 2.0, 1.0, 3.0, 1e-3)
    m_v, v_v, mk_v, vk_v, y_v = _run([m, v, mk, vk, y])
    np.testing.assert_allclose(m_v, x.mean(axis=(0, 2)), rtol=1e-5)
    np.testing.assert_allclose(v_v, x.var(axis=(0, 2)), rtol=1e-5)
    assert mk_v.shape == vk_v.shape == (4, 1, 5)
    np.testing.assert_allclose(vk_v, x.var(axis=1, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(y_v, 3.0 * (x - 0.5) / np.sqrt(2.001) + 1.0, rtol=1e-5)


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_gradient_matches_finite_differences(training):
    x = tf.placeholder(tf.float64, [4, 3])
    y = tf.layers.batch_normalization(x, training=training, gamma_initializer=_init([1, 2, 3]))
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        err = gradient_checker.compute_gradient_error(
            x, [4, 3], y, [4, 3], x_init_value=RNG.randn(4, 3), session=s
        )
    assert err < 1e-6


def test_separable_conv2d_is_depthwise_then_pointwise():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 5, 5, 3)).astype(np.float32)
    dw = rng.standard_normal((3, 3, 3, 2)).astype(np.float32)
    pw = rng.standard_normal((1, 1, 6, 4)).astype(np.float32)
    y = tf.layers.separable_conv2d(
        tf.constant(x),
        4,
        3,
        depth_multiplier=2,
        depthwise_initializer=tf.constant_initializer(dw),
        pointwise_initializer=tf.constant_initializer(pw),
    )
    names = [v.name for v in tf.trainable_variables()]
    assert names == [
        "separable_conv2d/depthwise_kernel:0",
        "separable_conv2d/pointwise_kernel:0",
        "separable_conv2d/bias:0",
    ]
    depthwise = np.zeros((2, 3, 3, 6))
    for i in range(3):
        for j in range(3):
            patch = x[:, i : i + 3, j : j + 3, :]  # [b, 3, 3, c]
            depthwise[:, i, j] = np.einsum("bhwc,hwcm->bcm", patch, dw).reshape(2, 6)
    want = depthwise @ pw[0, 0]
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        np.testing.assert_allclose(s.run(y), want, rtol=1e-4, atol=1e-5)
    y1 = tf.layers.separable_conv1d(tf.zeros([2, 10, 3]), 4, 3, name="sep1")
    assert y1.shape.as_list() == [2, 8, 4]


def test_a_layer_with_an_input_spec_checks_its_inputs():
    layer = tf.layers.Dense(2, name="d")
    layer.input_spec = tf.layers.InputSpec(min_ndim=2, axes={-1: 3})
    assert layer(tf.zeros([4, 3])).shape.as_list() == [4, 2]
    with pytest.raises(
        ValueError, match=r"layer d .* expected axis -1 of input shape to have value 3"
    ):
        layer(tf.zeros([4, 5]))
    with pytest.raises(ValueError, match="expected min_ndim=2, found ndim=1"):
        layer(tf.zeros([3]))
