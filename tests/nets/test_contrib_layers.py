"""tf.contrib.layers: contrib's names and defaults over tf.layers, initializers, regularizers."""

from __future__ import annotations

import math

import numpy as np
import pytest

import flowbook as tf

F32 = np.float32
RNG = np.random.RandomState(1)
layers = tf.contrib.layers


def _run(fetches, feed=None):
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        return s.run(fetches, feed)


def _names(collection=tf.GraphKeys.GLOBAL_VARIABLES):
    return [v.name for v in tf.get_collection(collection)]


def _fc_twice():
    h = layers.fully_connected(tf.zeros([2, 3]), 4)
    y = layers.fully_connected(h, 2, activation_fn=None)
    return _names(tf.GraphKeys.MODEL_VARIABLES), [h.name, y.name]


def _conv_flatten():
    c = layers.conv2d(tf.zeros([1, 5, 5, 2]), 4, 3)
    f = layers.flatten(c)
    return _names(), [c.name, f.name, c.shape.as_list()]


def _batch_norms():
    a = layers.batch_norm(tf.zeros([4, 3]))
    layers.batch_norm(tf.zeros([4, 3]), scale=True, scope="bn")
    ups = [t.op.name for t in tf.get_collection(tf.GraphKeys.UPDATE_OPS)]
    return _names(), [a.name, *ups]


def _scoped_reuse():
    layers.fully_connected(tf.zeros([2, 3]), 4, scope="fc")
    y = layers.fully_connected(tf.zeros([2, 3]), 4, scope="fc", reuse=True)
    return _names(), [y.name]


NAMES = [
    ("fully_connected", _fc_twice,
     ["fully_connected/weights:0", "fully_connected/biases:0", "fully_connected_1/weights:0",
      "fully_connected_1/biases:0"],
     ["fully_connected/Relu:0", "fully_connected_1/BiasAdd:0"]),
    ("conv_flatten", _conv_flatten, ["Conv/weights:0", "Conv/biases:0"],
     ["Conv/Relu:0", "Flatten/flatten/Reshape:0", [1, 5, 5, 4]]),
    ("batch_norm", _batch_norms,
     ["BatchNorm/beta:0", "BatchNorm/moving_mean:0", "BatchNorm/moving_variance:0",
      "bn/gamma:0", "bn/beta:0", "bn/moving_mean:0", "bn/moving_variance:0"],
     # "_1": the layer's scope object opened name scope BatchNorm/BatchNorm, and names are
     # uniquified case-insensitively, as in TF
     ["BatchNorm/batchnorm_1/add_1:0", "BatchNorm/AssignMovingAvg", "BatchNorm/AssignMovingAvg_1",
      "bn/AssignMovingAvg", "bn/AssignMovingAvg_1"]),
    ("scoped_reuse", _scoped_reuse, ["fc/weights:0", "fc/biases:0"], ["fc_1/Relu:0"]),
]  # fmt: skip


@pytest.mark.parametrize(
    "build,variables,outputs", [r[1:] for r in NAMES], ids=[r[0] for r in NAMES]
)
def test_names_as_tensorflow_gives_them(build, variables, outputs):
    assert build() == (variables, outputs)


def test_fully_connected_numbers_and_collections():
    x = RNG.randn(3, 4).astype(F32)
    w = RNG.randn(4, 2).astype(F32)
    y = layers.fully_connected(
        x,
        2,
        weights_initializer=tf.constant_initializer(w),
        biases_initializer=tf.constant_initializer(0.5),
        variables_collections={"weights": ["my_weights"]},
        outputs_collections="outs",
    )
    np.testing.assert_allclose(_run(y), np.maximum(x @ w + 0.5, 0), rtol=1e-5)
    assert _names("my_weights") == ["fully_connected/weights:0"]
    assert tf.get_collection("outs") == [y]
    assert len(tf.trainable_variables()) == 2


def test_normalizer_fn_replaces_the_biases():
    y = layers.fully_connected(
        tf.ones([4, 3]), 2, normalizer_fn=layers.batch_norm, normalizer_params={"is_training": True}
    )
    assert _names() == [
        "fully_connected/weights:0",
        "fully_connected/BatchNorm/beta:0",
        "fully_connected/BatchNorm/moving_mean:0",
        "fully_connected/BatchNorm/moving_variance:0",
    ]
    assert y.shape.as_list() == [4, 2]


def test_batch_norm_updates_collections_none_runs_updates_with_the_output():
    x = RNG.randn(6, 2).astype(F32)
    y = layers.batch_norm(x, updates_collections=None, decay=0.5)
    assert tf.get_collection(tf.GraphKeys.UPDATE_OPS) == []
    mean = tf.global_variables("BatchNorm/moving_mean")[0]
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        s.run(y)
        np.testing.assert_allclose(s.run(mean), 0.5 * x.mean(axis=0), rtol=1e-5)


def test_batch_norm_not_training_uses_moving_statistics():
    x = RNG.randn(6, 2).astype(F32)
    y = layers.batch_norm(x, is_training=False)
    np.testing.assert_allclose(_run(y), x / math.sqrt(1.001), rtol=1e-5)


# ------------------------------------------------------------ initializers
INITS = [
    # (factor, mode, uniform, shape) -> contrib's formula
    (2.0, "FAN_IN", False, [300, 200]),
    (1.0, "FAN_AVG", True, [3, 3, 16, 32]),
    (1.0, "FAN_OUT", True, [100, 400]),
    (2.0, "FAN_AVG", False, [5, 5, 4, 8]),
]


@pytest.mark.parametrize("factor,mode,uniform,shape", INITS)
def test_contrib_variance_scaling_formula(factor, mode, uniform, shape):
    t = layers.variance_scaling_initializer(factor, mode, uniform, seed=2)(shape)
    fan_in = shape[-2] * np.prod(shape[:-2])
    fan_out = shape[-1] * np.prod(shape[:-2])
    n = {"FAN_IN": fan_in, "FAN_OUT": fan_out, "FAN_AVG": (fan_in + fan_out) / 2}[mode]
    g = tf.get_default_graph()
    if uniform:
        param, const = math.sqrt(3 * factor / n), g.get_tensor_by_name("random_uniform/max:0")
    else:
        param = math.sqrt(1.3 * factor / n)
        const = g.get_tensor_by_name("truncated_normal/stddev:0")
    value, got = _run([t, const])
    assert got == F32(param)
    bound = param if uniform else 2 * param
    assert np.abs(value).max() <= bound * (1 + 1e-6) and value.std() > param / 3


def test_xavier_is_fan_avg():
    a = layers.xavier_initializer(seed=1)([20, 30])
    b = layers.variance_scaling_initializer(1.0, "FAN_AVG", True, seed=1)([20, 30])
    np.testing.assert_array_equal(*_run([a, b]))


# ------------------------------------------------------------ regularizers
def test_regularizers_numbers_names_and_collection():
    w = np.array([[1.0, -2.0], [3.0, 0.5]], F32)
    v = tf.get_variable("w", initializer=w, regularizer=layers.l2_regularizer(0.1))
    l1 = layers.l1_regularizer(0.25, scope="my_l1")(v)
    (reg,) = tf.losses.get_regularization_losses()
    assert reg.name == "w/Regularizer/l2_regularizer:0" and l1.name == "my_l1:0"
    reg_v, l1_v = _run([reg, l1])
    assert reg_v == pytest.approx(0.1 * (w**2).sum() / 2) and l1_v == pytest.approx(0.25 * 6.5)
    assert layers.l2_regularizer(0.0)(v) is None
    total = layers.apply_regularization(layers.l1_regularizer(1.0), [v, v])
    assert _run(total) == pytest.approx(13.0)


ERRORS = [
    ("int_scale", lambda: layers.l2_regularizer(1), ValueError, "scale cannot be an integer: 1"),
    ("negative", lambda: layers.l1_regularizer(-0.5), ValueError,
     "Setting a scale less than 0 on a regularizer: -0.5."),
    ("mode", lambda: layers.variance_scaling_initializer(mode="FAN_SUM"), TypeError,
     "Unknown mode FAN_SUM [FAN_IN, FAN_OUT, FAN_AVG]"),
    ("int_dtype", lambda: layers.xavier_initializer(dtype=tf.int32), TypeError,
     "Cannot create initializer for non-floating point type."),
    ("no_weights", lambda: layers.apply_regularization(layers.l2_regularizer(0.1)), ValueError,
     "No weights to regularize."),
    ("fc_exists", lambda: [layers.fully_connected(tf.zeros([1, 2]), 2, scope="fc")
                           for _ in range(2)], ValueError,
     "Variable fc/weights already exists, disallowed."),
]  # fmt: skip


@pytest.mark.parametrize("build,kind,message", [r[1:] for r in ERRORS], ids=[r[0] for r in ERRORS])
def test_errors(build, kind, message):
    with pytest.raises(kind) as info:
        build()
    assert str(info.value).startswith(message), str(info.value)


def test_a_small_contrib_model_trains():
    images = RNG.randn(32, 6, 6, 1).astype(F32)
    labels = images[:, :3].mean(axis=(1, 2, 3)) > images[:, 3:].mean(axis=(1, 2, 3))
    x = tf.placeholder(tf.float32, [None, 6, 6, 1])
    y = tf.placeholder(tf.int64, [None])
    h = layers.conv2d(
        x, 4, 3, normalizer_fn=layers.batch_norm, weights_regularizer=layers.l2_regularizer(1e-4)
    )
    logits = layers.fully_connected(layers.flatten(h), 2, activation_fn=None)
    loss = tf.losses.sparse_softmax_cross_entropy(y, logits) + tf.losses.get_regularization_loss()
    grads = tf.gradients(loss, tf.trainable_variables())
    assert len(grads) == 4 and all(g is not None for g in grads)
    with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
        train = tf.train.AdamOptimizer(0.02).minimize(loss)
    feed = {x: images, y: labels.astype(np.int64)}
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        first = s.run(loss, feed)
        for _ in range(60):
            s.run(train, feed)
        assert s.run(loss, feed) < first * 0.5
