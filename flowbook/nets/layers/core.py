"""Dense, Dropout and Flatten layers and their functional forms (TF1's ``tf.layers``).

``dense`` is ``activation(matmul(x, kernel) + bias)`` with ``kernel`` of shape
``[in, units]`` (Glorot uniform unless given) and ``bias`` zeros; inputs of
rank 3 or more are multiplied along their last dimension.  ``dropout`` is
the identity unless ``training`` is True (or a boolean tensor that is true
in the run).  ``flatten`` keeps the batch dimension and flattens the rest.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     x = tf.placeholder(tf.float32, [None, 4])
    ...     h = tf.layers.dense(x, 8, activation=tf.nn.relu)
    ...     y = tf.layers.dense(h, 2)
    ...     h.name, [v.name for v in tf.trainable_variables()][2:]
    ('dense/Relu:0', ['dense_1/kernel:0', 'dense_1/bias:0'])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowbook.framework.tensor import Tensor
from flowbook.nets.layers.base import Layer
from flowbook.ops.array import array_ops
from flowbook.ops.math import math_ops
from flowbook.ops.nn.conv_ops import bias_add
from flowbook.ops.nn.loss_ops import dropout as nn_dropout
from flowbook.variables import initializers


class Dense(Layer):
    """A densely connected layer: ``activation(inputs @ kernel + bias)``.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     tf.layers.Dense(5, name="fc")(tf.zeros([2, 3])).shape.as_list()
    [2, 5]
    """

    def __init__(
        self,
        units: int,
        activation: Any = None,
        use_bias: bool = True,
        kernel_initializer: Any = None,
        bias_initializer: Any = None,
        kernel_regularizer: Any = None,
        bias_regularizer: Any = None,
        activity_regularizer: Any = None,
        kernel_constraint: Any = None,
        bias_constraint: Any = None,
        trainable: bool = True,
        name: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(trainable, name, activity_regularizer=activity_regularizer, **kwargs)
        self.units = int(units)
        self.activation = activation
        self.use_bias = use_bias
        self.kernel_initializer = kernel_initializer
        self.bias_initializer = bias_initializer or initializers.Zeros()
        self.kernel_regularizer, self.bias_regularizer = kernel_regularizer, bias_regularizer
        self.kernel_constraint, self.bias_constraint = kernel_constraint, bias_constraint

    def build(self, input_shape: Any) -> None:
        if not input_shape or input_shape[-1] is None:
            raise ValueError(
                "The last dimension of the inputs to `Dense` should be defined. Found `None`."
            )
        self.kernel = self.add_weight(
            "kernel",
            [input_shape[-1], self.units],
            None,
            self.kernel_initializer,
            self.kernel_regularizer,
            constraint=self.kernel_constraint,
        )
        self.bias = None
        if self.use_bias:
            self.bias = self.add_weight(
                "bias",
                [self.units],
                None,
                self.bias_initializer,
                self.bias_regularizer,
                constraint=self.bias_constraint,
            )

    def call(self, inputs: Tensor) -> Tensor:
        shape = inputs.get_shape().as_list()
        if len(shape) > 2:
            flat = array_ops.reshape(inputs, [-1, shape[-1]])
            out = math_ops.matmul(flat, self.kernel)
            dynamic = array_ops.shape(inputs)[:-1]
            out = array_ops.reshape(out, array_ops.concat([dynamic, [self.units]], 0))
            out.set_shape([*shape[:-1], self.units])
        else:
            out = math_ops.matmul(inputs, self.kernel)
        if self.bias is not None:
            out = bias_add(out, self.bias)
        return self.activation(out) if self.activation is not None else out


def dense(
    inputs: Any,
    units: int,
    activation: Any = None,
    use_bias: bool = True,
    kernel_initializer: Any = None,
    bias_initializer: Any = None,
    kernel_regularizer: Any = None,
    bias_regularizer: Any = None,
    activity_regularizer: Any = None,
    kernel_constraint: Any = None,
    bias_constraint: Any = None,
    trainable: bool = True,
    name: str | None = None,
    reuse: Any = None,
) -> Tensor:
    """Functional ``Dense``: ``dense(x, 10)`` makes ``dense/kernel`` and ``dense/bias``.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     tf.layers.dense(tf.zeros([2, 3]), 4).name
    'dense/BiasAdd:0'
    """
    layer = Dense(
        units,
        activation,
        use_bias,
        kernel_initializer,
        bias_initializer,
        kernel_regularizer,
        bias_regularizer,
        activity_regularizer,
        kernel_constraint,
        bias_constraint,
        trainable,
        name,
        _scope=name,
        _reuse=reuse,
    )
    return layer(inputs)


class Dropout(Layer):
    """Drop each input element with probability ``rate`` when training (scaling the rest).

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     tf.layers.Dropout(0.5)(tf.ones([3])).op.type
    'Identity'
    """

    def __init__(
        self,
        rate: float = 0.5,
        noise_shape: Any = None,
        seed: int | None = None,
        name: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(name=name, **kwargs)
        self.rate, self.noise_shape, self.seed = rate, noise_shape, seed

    def call(self, inputs: Tensor, training: Any = False) -> Tensor:
        if training is False or training is None:
            return array_ops.identity(inputs)
        dropped = nn_dropout(inputs, noise_shape=self.noise_shape, seed=self.seed, rate=self.rate)
        if training is True:
            return dropped
        return select(training, dropped, inputs)


def select(flag: Any, when_true: Tensor, when_false: Tensor) -> Tensor:
    """``when_true`` if the boolean scalar tensor ``flag`` is true in the run, else ``when_false``.

    Both sides are computed (flowbook has no ``cond`` yet); the choice is a
    multiply by 0 or 1, so gradients flow into the side chosen only.
    """
    m = math_ops.cast(flag, when_true.dtype)
    return math_ops.add(when_true * m, when_false * (1.0 - m))


def dropout(
    inputs: Any,
    rate: float = 0.5,
    noise_shape: Any = None,
    seed: int | None = None,
    training: Any = False,
    name: str | None = None,
) -> Tensor:
    """Functional ``Dropout``; note ``training`` is False by default, as in TF1.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default(), tf.Session() as s:
    ...     y = tf.layers.dropout(tf.ones([1000]), 0.5, training=True, seed=1)
    ...     sorted(set(s.run(y).tolist()))
    [0.0, 2.0]
    """
    return Dropout(rate, noise_shape, seed, name)(inputs, training=training)


class Flatten(Layer):
    """Flatten all dimensions but the first (the batch).

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     tf.layers.Flatten()(tf.placeholder(tf.float32, [None, 4, 4, 3])).shape.as_list()
    [None, 48]
    """

    def __init__(self, data_format: str = "channels_last", name: str | None = None, **kwargs: Any):
        super().__init__(name=name, **kwargs)
        self.data_format = data_format

    def call(self, inputs: Tensor) -> Tensor:
        shape = inputs.get_shape().as_list()
        if self.data_format == "channels_first" and len(shape) > 2:
            inputs = array_ops.transpose(inputs, [0, *range(2, len(shape)), 1])
            shape = inputs.get_shape().as_list()
        rest = shape[1:]
        if None not in rest:
            return array_ops.reshape(inputs, [-1, int(np.prod(rest))])
        batch = array_ops.shape(inputs)[0]
        return array_ops.reshape(inputs, array_ops.stack([batch, -1]))


def flatten(inputs: Any, name: str | None = None, data_format: str = "channels_last") -> Tensor:
    """Functional ``Flatten``.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     tf.layers.flatten(tf.zeros([2, 3, 4])).name
    'flatten/Reshape:0'
    """
    return Flatten(data_format, name)(inputs)
