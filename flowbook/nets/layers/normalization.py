"""Batch normalization (TF1's ``tf.layers.batch_normalization``).

Variables, in TF's order: ``gamma`` (if ``scale``), ``beta`` (if
``center``), then ``moving_mean`` and ``moving_variance`` (not trainable).
With ``training`` False the layer normalizes with the moving statistics and
makes no updates.  Otherwise it normalizes with the batch's mean and
(biased) variance over every axis but ``axis``, and adds two ops to
``GraphKeys.UPDATE_OPS``, ``AssignMovingAvg`` and ``AssignMovingAvg_1``:
``moving -= (moving - batch) * (1 - momentum)``.  Run them with the train
op, as in TF1::

    with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
        train = optimizer.minimize(loss)

For 4-D inputs normalized over the channels TensorFlow takes its fused
kernel (``fused=None``), whose batch variance for the moving average has
Bessel's correction ``n / (n - 1)``; flowbook computes with ordinary ops but
applies the same correction there, so the moving variances match TF's.  A
``training`` tensor selects between the two paths in the run (both are
built; the updates then move by zero when it is false).

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     y = tf.layers.batch_normalization(tf.zeros([4, 3]), training=True)
    ...     [v.name for v in tf.global_variables()], len(tf.get_collection(tf.GraphKeys.UPDATE_OPS))
    (['batch_normalization/gamma:0', 'batch_normalization/beta:0', 'batch_normalization/moving_mean:0', 'batch_normalization/moving_variance:0'], 2)
"""

from __future__ import annotations

from typing import Any

from flowbook.framework import dtypes
from flowbook.framework.tensor import Tensor
from flowbook.nets.layers.base import Layer, assign_moving_average
from flowbook.nets.layers.core import select
from flowbook.ops.array import array_ops
from flowbook.ops.math import math_ops
from flowbook.ops.nn.norm_ops import batch_normalization as nn_batch_normalization
from flowbook.ops.nn.norm_ops import moments
from flowbook.variables import initializers


class BatchNormalization(Layer):
    """Normalize each feature with batch statistics (training) or moving ones (inference).

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     bn = tf.layers.BatchNormalization(momentum=0.9)
    ...     bn(tf.zeros([2, 5]), training=True).shape.as_list(), len(bn.updates)
    ([2, 5], 2)
    """

    def __init__(
        self,
        axis: int = -1,
        momentum: float = 0.99,
        epsilon: float = 1e-3,
        center: bool = True,
        scale: bool = True,
        beta_initializer: Any = None,
        gamma_initializer: Any = None,
        moving_mean_initializer: Any = None,
        moving_variance_initializer: Any = None,
        beta_regularizer: Any = None,
        gamma_regularizer: Any = None,
        beta_constraint: Any = None,
        gamma_constraint: Any = None,
        renorm: bool = False,
        fused: bool | None = None,
        trainable: bool = True,
        name: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(trainable, name, **kwargs)
        if renorm:
            raise NotImplementedError("BatchNormalization: renorm=True is not supported yet")
        if not isinstance(axis, int):
            raise NotImplementedError("BatchNormalization: axis must be one int")
        self.axis, self.momentum, self.epsilon = axis, momentum, epsilon
        self.center, self.scale, self.fused = center, scale, fused
        self.beta_initializer = beta_initializer or initializers.Zeros()
        self.gamma_initializer = gamma_initializer or initializers.Ones()
        self.moving_mean_initializer = moving_mean_initializer or initializers.Zeros()
        self.moving_variance_initializer = moving_variance_initializer or initializers.Ones()
        self.beta_regularizer, self.gamma_regularizer = beta_regularizer, gamma_regularizer
        self.beta_constraint, self.gamma_constraint = beta_constraint, gamma_constraint

    def build(self, input_shape: Any) -> None:
        if not input_shape:
            raise ValueError(f"Input has undefined rank: {input_shape}")
        ndims = len(input_shape)
        axis = self.axis + ndims if self.axis < 0 else self.axis
        if not 0 <= axis < ndims:
            raise ValueError(f"Invalid axis: {self.axis} for an input of rank {ndims}")
        if input_shape[axis] is None:
            raise ValueError(f"Input has undefined `axis` dimension. Input shape: {input_shape}")
        self._axis, self._ndims = axis, ndims
        if self.dtype is None or not self.dtype.is_floating or self.dtype is dtypes.float16:
            self.dtype = dtypes.float32  # TF keeps float16 layers' statistics in float32
        shape = [input_shape[axis]]
        self.gamma = self.beta = None
        if self.scale:
            self.gamma = self.add_weight(
                "gamma",
                shape,
                None,
                self.gamma_initializer,
                self.gamma_regularizer,
                constraint=self.gamma_constraint,
            )
        if self.center:
            self.beta = self.add_weight(
                "beta",
                shape,
                None,
                self.beta_initializer,
                self.beta_regularizer,
                constraint=self.beta_constraint,
            )
        self.moving_mean = self.add_weight(
            "moving_mean", shape, None, self.moving_mean_initializer, trainable=False
        )
        self.moving_variance = self.add_weight(
            "moving_variance", shape, None, self.moving_variance_initializer, trainable=False
        )

    def _fused(self) -> bool:
        can = self._ndims == 4 and self._axis in (1, 3)
        return can if self.fused is None else bool(self.fused) and can

    def call(self, inputs: Tensor, training: Any = False) -> Tensor:
        axes = [i for i in range(self._ndims) if i != self._axis]
        bshape = [1] * self._ndims
        bshape[self._axis] = -1

        def shaped(v: Any) -> Any:
            if v is None or self._axis == self._ndims - 1:
                return v
            return array_ops.reshape(v, bshape)

        moving_mean, moving_var = self.moving_mean.value(), self.moving_variance.value()
        if training is False or training is None:
            mean, var = moving_mean, moving_var
        else:
            mean, var = moments(inputs, axes)
            self._add_updates(inputs, mean, var, training)
            if training is not True:
                mean, var = select(training, mean, moving_mean), select(training, var, moving_var)
        gamma = self.gamma.value() if self.gamma is not None else None
        beta = self.beta.value() if self.beta is not None else None
        return nn_batch_normalization(
            inputs, shaped(mean), shaped(var), shaped(beta), shaped(gamma), self.epsilon
        )

    def _add_updates(self, inputs: Tensor, mean: Tensor, var: Tensor, training: Any) -> None:
        decay: Any = 1.0 - self.momentum
        if training is not True:
            decay = math_ops.cast(training, mean.dtype) * decay
        if self._fused():  # TF's fused kernel hands the moving average n/(n-1) * variance
            n = math_ops.cast(array_ops.size(inputs), var.dtype) / math_ops.cast(
                array_ops.size(var), var.dtype
            )
            var = var * (n / math_ops.maximum(n - 1.0, 1.0))
        self.add_update(assign_moving_average(self.moving_mean, mean, decay))
        self.add_update(assign_moving_average(self.moving_variance, var, decay))


def batch_normalization(
    inputs: Any,
    axis: int = -1,
    momentum: float = 0.99,
    epsilon: float = 1e-3,
    center: bool = True,
    scale: bool = True,
    beta_initializer: Any = None,
    gamma_initializer: Any = None,
    moving_mean_initializer: Any = None,
    moving_variance_initializer: Any = None,
    beta_regularizer: Any = None,
    gamma_regularizer: Any = None,
    beta_constraint: Any = None,
    gamma_constraint: Any = None,
    training: Any = False,
    trainable: bool = True,
    name: str | None = None,
    reuse: Any = None,
    renorm: bool = False,
    fused: bool | None = None,
) -> Tensor:
    """Functional ``BatchNormalization``; ``training`` is False by default, as in TF1.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default(), tf.Session() as s:
    ...     y = tf.layers.batch_normalization(tf.constant([[1.0], [3.0]]), training=True)
    ...     s.run(tf.global_variables_initializer()); [round(float(v), 4) for v in s.run(y).ravel()]
    [-0.9995, 0.9995]
    """
    layer = BatchNormalization(
        axis,
        momentum,
        epsilon,
        center,
        scale,
        beta_initializer,
        gamma_initializer,
        moving_mean_initializer,
        moving_variance_initializer,
        beta_regularizer,
        gamma_regularizer,
        beta_constraint,
        gamma_constraint,
        renorm,
        fused,
        trainable,
        name,
        _scope=name,
        _reuse=reuse,
    )
    return layer(inputs, training=training)
