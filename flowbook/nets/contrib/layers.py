"""``tf.contrib.layers``' common corners, thin wrappers over :mod:`flowbook.nets.layers`.

Each wrapper opens ``variable_scope(scope, default_name)`` (``fully_connected``,
``Conv``, ``BatchNorm``) with a custom getter that renames ``kernel`` and
``bias`` to contrib's ``weights`` and ``biases`` and files every variable in
``MODEL_VARIABLES`` too, then runs the core layer inside that scope, so the
names are TensorFlow's: ``fully_connected/weights:0``, ``Conv/biases:0``,
``BatchNorm/moving_mean:0``.  Contrib's defaults differ from ``tf.layers``':
a ReLU activation, Xavier weights, ``'SAME'`` padding for conv2d, and
``batch_norm`` with ``scale=False``, ``decay=0.999`` and ``is_training=True``.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     y = tf.contrib.layers.fully_connected(tf.zeros([2, 3]), 4)
    ...     y.name, [v.name for v in tf.model_variables()]
    ('fully_connected/Relu:0', ['fully_connected/weights:0', 'fully_connected/biases:0'])
"""

from __future__ import annotations

import math
import numbers
from typing import Any

from flowbook.framework import dtypes
from flowbook.framework.graph import (
    GraphKeys,
    add_to_collection,
    get_collection,
    get_collection_ref,
    name_scope,
)
from flowbook.framework.tensor import Tensor
from flowbook.nets.layers.convolutional import Conv2D
from flowbook.nets.layers.core import Dense
from flowbook.nets.layers.core import flatten as core_flatten
from flowbook.nets.layers.normalization import BatchNormalization
from flowbook.ops.array.constant_op import convert_to_tensor
from flowbook.ops.control_flow.control_flow_ops import with_dependencies
from flowbook.ops.math import math_ops
from flowbook.ops.nn.loss_ops import l2_loss
from flowbook.ops.nn.nn_ops import relu
from flowbook.ops.random import random_ops
from flowbook.variables import initializers
from flowbook.variables.variable_scope import variable_scope
from flowbook.variables.variables import Variable

WEIGHTS = "weights"  # TF's GraphKeys.WEIGHTS, read by apply_regularization
_RENAME = {"kernel": "weights", "bias": "biases"}
_ZEROS = initializers.Zeros()  # contrib's default biases_initializer (None: no biases)


def _model_variable_getter(getter: Any, name: str, *args: Any, **kwargs: Any) -> Variable:
    """contrib's getter: ``kernel``/``bias`` renamed, the variable also in MODEL_VARIABLES."""
    head, _, short = name.rpartition("/")
    if short in _RENAME:
        name = f"{head}/{_RENAME[short]}" if head else _RENAME[short]
    collections = list(kwargs.get("collections") or [GraphKeys.GLOBAL_VARIABLES])
    kwargs["collections"] = [*collections, GraphKeys.MODEL_VARIABLES]
    return getter(name, *args, **kwargs)


def _collect(variable: Variable | None, collections: Any, key: str) -> None:
    """Add ``variable`` to ``variables_collections`` (a list, or a dict by ``weights``/``biases``)."""
    if variable is None or not collections:
        return
    names = collections.get(key, []) if isinstance(collections, dict) else collections
    for name in [names] if isinstance(names, str) else names:
        if variable not in get_collection(name):
            add_to_collection(name, variable)


def _outputs(outputs: Tensor, collections: Any) -> Tensor:
    for name in [collections] if isinstance(collections, str) else collections or ():
        add_to_collection(name, outputs)
    return outputs


def _finish(
    layer: Any,
    outputs: Tensor,
    activation_fn: Any,
    normalizer_fn: Any,
    normalizer_params: Any,
    variables_collections: Any,
    outputs_collections: Any,
) -> Tensor:
    _collect(layer.kernel, variables_collections, "weights")
    _collect(layer.bias, variables_collections, "biases")
    if normalizer_fn is not None:
        outputs = normalizer_fn(outputs, **(normalizer_params or {}))
    if activation_fn is not None:
        outputs = activation_fn(outputs)
    return _outputs(outputs, outputs_collections)


def fully_connected(
    inputs: Any,
    num_outputs: int,
    activation_fn: Any = relu,
    normalizer_fn: Any = None,
    normalizer_params: dict | None = None,
    weights_initializer: Any = None,
    weights_regularizer: Any = None,
    biases_initializer: Any = _ZEROS,
    biases_regularizer: Any = None,
    reuse: Any = None,
    variables_collections: Any = None,
    outputs_collections: Any = None,
    trainable: bool = True,
    scope: Any = None,
) -> Tensor:
    """A dense layer with contrib's names and defaults (ReLU, Xavier weights).

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     tf.contrib.layers.fully_connected(tf.zeros([1, 2]), 3, None, scope="fc").name
    'fc/BiasAdd:0'
    """
    with variable_scope(
        scope, "fully_connected", [inputs], reuse=reuse, custom_getter=_model_variable_getter
    ) as sc:
        layer = Dense(
            num_outputs,
            None,
            normalizer_fn is None and biases_initializer is not None,
            weights_initializer or xavier_initializer(),
            biases_initializer,
            weights_regularizer,
            biases_regularizer,
            trainable=trainable,
            name=sc.name,
            _scope=sc,
            _reuse=reuse,
        )
        outputs = layer.apply(inputs)
        return _finish(
            layer,
            outputs,
            activation_fn,
            normalizer_fn,
            normalizer_params,
            variables_collections,
            outputs_collections,
        )


def conv2d(
    inputs: Any,
    num_outputs: int,
    kernel_size: Any,
    stride: Any = 1,
    padding: str = "SAME",
    data_format: str | None = None,
    rate: Any = 1,
    activation_fn: Any = relu,
    normalizer_fn: Any = None,
    normalizer_params: dict | None = None,
    weights_initializer: Any = None,
    weights_regularizer: Any = None,
    biases_initializer: Any = _ZEROS,
    biases_regularizer: Any = None,
    reuse: Any = None,
    variables_collections: Any = None,
    outputs_collections: Any = None,
    trainable: bool = True,
    scope: Any = None,
) -> Tensor:
    """A 2-D convolution with contrib's names and defaults (``Conv/weights``, SAME, ReLU).

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     tf.contrib.layers.conv2d(tf.zeros([1, 5, 5, 2]), 4, 3).name
    'Conv/Relu:0'
    """
    if data_format not in (None, "NHWC"):
        raise NotImplementedError("contrib.layers.conv2d: only data_format='NHWC' is supported")
    with variable_scope(
        scope, "Conv", [inputs], reuse=reuse, custom_getter=_model_variable_getter
    ) as sc:
        layer = Conv2D(
            num_outputs,
            kernel_size,
            stride,
            padding,
            "channels_last",
            rate,
            None,
            normalizer_fn is None and biases_initializer is not None,
            weights_initializer or xavier_initializer(),
            biases_initializer,
            weights_regularizer,
            biases_regularizer,
            trainable=trainable,
            name=sc.name,
            _scope=sc,
            _reuse=reuse,
        )
        outputs = layer.apply(inputs)
        return _finish(
            layer,
            outputs,
            activation_fn,
            normalizer_fn,
            normalizer_params,
            variables_collections,
            outputs_collections,
        )


convolution2d = conv2d


def flatten(inputs: Any, outputs_collections: Any = None, scope: str | None = None) -> Tensor:
    """Flatten all but the batch dimension, in name scope ``Flatten``.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     tf.contrib.layers.flatten(tf.zeros([2, 3, 4])).name
    'Flatten/flatten/Reshape:0'
    """
    with name_scope(scope, "Flatten"):
        return _outputs(core_flatten(inputs), outputs_collections)


def batch_norm(
    inputs: Any,
    decay: float = 0.999,
    center: bool = True,
    scale: bool = False,
    epsilon: float = 0.001,
    activation_fn: Any = None,
    param_initializers: dict | None = None,
    param_regularizers: dict | None = None,
    updates_collections: Any = GraphKeys.UPDATE_OPS,
    is_training: Any = True,
    reuse: Any = None,
    variables_collections: Any = None,
    outputs_collections: Any = None,
    trainable: bool = True,
    fused: bool | None = None,
    scope: Any = None,
) -> Tensor:
    """Batch normalization with contrib's names and defaults (no ``gamma``, decay 0.999).

    ``updates_collections=None`` runs the moving-average updates with the
    output (as control dependencies) instead of collecting them.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     y = tf.contrib.layers.batch_norm(tf.zeros([4, 3]))
    ...     [v.name for v in tf.global_variables()]
    ['BatchNorm/beta:0', 'BatchNorm/moving_mean:0', 'BatchNorm/moving_variance:0']
    """
    inits, regs = param_initializers or {}, param_regularizers or {}
    with variable_scope(
        scope, "BatchNorm", [inputs], reuse=reuse, custom_getter=_model_variable_getter
    ) as sc:
        layer = BatchNormalization(
            -1,
            decay,
            epsilon,
            center,
            scale,
            inits.get("beta"),
            inits.get("gamma"),
            inits.get("moving_mean"),
            inits.get("moving_variance"),
            regs.get("beta"),
            regs.get("gamma"),
            fused=fused,
            trainable=trainable,
            name=sc.name,
            _scope=sc,
            _reuse=reuse,
        )
        outputs = layer.apply(inputs, training=is_training)
        for key in ("beta", "gamma", "moving_mean", "moving_variance"):
            _collect(getattr(layer, key), variables_collections, key)
        if updates_collections != GraphKeys.UPDATE_OPS and layer.updates:
            _remove_from(GraphKeys.UPDATE_OPS, layer.updates)
            if updates_collections is None:  # run the updates with the output
                outputs = with_dependencies(layer.updates, outputs)
            else:
                for u in layer.updates:
                    add_to_collection(updates_collections, u)
        if activation_fn is not None:
            outputs = activation_fn(outputs)
        return _outputs(outputs, outputs_collections)


def _remove_from(key: str, items: list[Any]) -> None:
    ref = get_collection_ref(key)
    ref[:] = [x for x in ref if not any(x is item for item in items)]


# ------------------------------------------------------------ initializers
def variance_scaling_initializer(
    factor: float = 2.0,
    mode: str = "FAN_IN",
    uniform: bool = False,
    seed: int | None = None,
    dtype: Any = dtypes.float32,
) -> Any:
    """contrib's variance scaling: ``n`` the fan ``mode`` names; uniform in ``±sqrt(3 factor / n)``
    or truncated normal with stddev ``sqrt(1.3 factor / n)``.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     tf.contrib.layers.variance_scaling_initializer()([3, 4]).op.name
    'truncated_normal'
    """
    if not dtypes.as_dtype(dtype).is_floating:
        raise TypeError("Cannot create initializer for non-floating point type.")
    if mode not in ("FAN_IN", "FAN_OUT", "FAN_AVG"):
        raise TypeError(f"Unknown mode {mode} [FAN_IN, FAN_OUT, FAN_AVG]")

    def _initializer(shape: Any, dtype: Any = dtype, partition_info: Any = None) -> Tensor:
        dt = dtypes.as_dtype(dtype)
        if not dt.is_floating:
            raise TypeError("Cannot create initializer for non-floating point type.")
        dims = [int(d) for d in shape]
        fan_in = float(dims[-2] if len(dims) > 1 else dims[-1]) if dims else 1.0
        fan_out = float(dims[-1]) if dims else 1.0
        for d in dims[:-2]:
            fan_in, fan_out = fan_in * d, fan_out * d
        n = {"FAN_IN": fan_in, "FAN_OUT": fan_out, "FAN_AVG": (fan_in + fan_out) / 2.0}[mode]
        if uniform:
            limit = math.sqrt(3.0 * factor / n)
            return random_ops.random_uniform(dims, -limit, limit, dt, seed=seed)
        return random_ops.truncated_normal(dims, 0.0, math.sqrt(1.3 * factor / n), dt, seed=seed)

    return _initializer


def xavier_initializer(uniform: bool = True, seed: int | None = None, dtype: Any = dtypes.float32):
    """Glorot's initializer in contrib's form: ``variance_scaling_initializer(1.0, "FAN_AVG")``.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     tf.contrib.layers.xavier_initializer()([3, 4]).op.name
    'random_uniform'
    """
    return variance_scaling_initializer(1.0, "FAN_AVG", uniform, seed, dtype)


xavier_initializer_conv2d = xavier_initializer


# ------------------------------------------------------------ regularizers
def _checked_scale(scale: Any) -> bool:
    """False when ``scale`` is 0 (the regularizer adds nothing); TF's errors for bad ones."""
    if isinstance(scale, numbers.Integral):
        raise ValueError(f"scale cannot be an integer: {scale}")
    if isinstance(scale, numbers.Real):
        if scale < 0.0:
            raise ValueError(f"Setting a scale less than 0 on a regularizer: {scale:g}.")
        return scale != 0.0
    return True


def l2_regularizer(scale: float, scope: str | None = None) -> Any:
    """``weights -> scale * sum(weights ** 2) / 2`` (``scale * l2_loss(weights)``).

    >>> import flowbook as tf
    >>> with tf.Graph().as_default(), tf.Session() as s:
    ...     float(s.run(tf.contrib.layers.l2_regularizer(0.1)(tf.constant([3.0, 4.0]))))
    1.25
    """
    if not _checked_scale(scale):
        return lambda _: None

    def l2(weights: Any) -> Tensor:
        with name_scope(scope, "l2_regularizer") as name:
            w = convert_to_tensor(weights)
            my_scale = convert_to_tensor(scale, dtype=w.dtype, name="scale")
            return math_ops.multiply(my_scale, l2_loss(w), name=name)

    return l2


def l1_regularizer(scale: float, scope: str | None = None) -> Any:
    """``weights -> scale * sum(|weights|)``.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default(), tf.Session() as s:
    ...     float(s.run(tf.contrib.layers.l1_regularizer(0.5)(tf.constant([3.0, -4.0]))))
    3.5
    """
    if not _checked_scale(scale):
        return lambda _: None

    def l1(weights: Any) -> Tensor:
        with name_scope(scope, "l1_regularizer") as name:
            w = convert_to_tensor(weights)
            my_scale = convert_to_tensor(scale, dtype=w.dtype, name="scale")
            total = math_ops.reduce_sum(math_ops.abs(w))
            return math_ops.multiply(my_scale, total, name=name)

    return l1


def apply_regularization(regularizer: Any, weights_list: list | None = None) -> Tensor:
    """The sum of ``regularizer`` over ``weights_list`` (or the WEIGHTS collection), collected
    in REGULARIZATION_LOSSES.
    """
    weights_list = weights_list or get_collection(WEIGHTS)
    if not weights_list:
        raise ValueError("No weights to regularize.")
    with name_scope("get_regularization_penalty") as scope:
        penalties = [regularizer(w) for w in weights_list]
        penalties = [p if p is not None else convert_to_tensor(0.0) for p in penalties]
        for p in penalties:
            if p.get_shape().ndims != 0:
                raise ValueError(
                    "regularizer must return a scalar Tensor instead of a Tensor "
                    f"with rank {p.get_shape().ndims}."
                )
        total = math_ops.add_n(penalties, name=scope)
    add_to_collection(GraphKeys.REGULARIZATION_LOSSES, total)
    return total
