"""``tf.layers``' 3-D layers: ``Conv3D``, ``MaxPooling3D``, ``AveragePooling3D`` and their functions.

They share the 2-D layers' settings and variable names (``conv3d/kernel``
``[kd, kh, kw, in, filters]``, ``conv3d/bias``) and run ``tf.nn.conv3d``,
``max_pool3d`` and ``avg_pool3d`` (``flowbook.ops.nn.nn_3d``) over
``[batch, depth, height, width, channels]``.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     y = tf.layers.conv3d(tf.zeros([1, 4, 5, 5, 2]), 3, 3, padding="same")
    ...     y.shape.as_list(), [v.name for v in tf.global_variables()]
    ([1, 4, 5, 5, 3], ['conv3d/kernel:0', 'conv3d/bias:0'])
"""

from __future__ import annotations

from flowbook.framework.tensor import Tensor
from flowbook.nets.layers.convolutional import _Conv, _conv_fn, _pool_fn, _Pooling
from flowbook.ops.nn.nn_3d import avg_pool3d, conv3d, max_pool3d

__all__ = [
    "AveragePooling3D",
    "Conv3D",
    "MaxPooling3D",
    "average_pooling3d",
    "conv3d_layer",
    "max_pooling3d",
]


class Conv3D(_Conv):
    """3-D convolution layer: ``activation(conv3d(inputs, kernel) + bias)``.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     tf.layers.Conv3D(2, 3, strides=2)(tf.zeros([1, 7, 7, 7, 1])).shape.as_list()
    [1, 3, 3, 3, 2]
    """

    rank = 3

    def call(self, inputs: Tensor) -> Tensor:
        out = conv3d(
            inputs,
            self.kernel,
            [1, *self.strides, 1],
            self.padding,
            dilations=[1, *self.dilation_rate, 1],
        )
        return self._finish(out)


class _Pooling3D(_Pooling):
    rank = 3

    def call(self, inputs: Tensor) -> Tensor:
        k, s = [1, *self.pool_size, 1], [1, *self.strides, 1]
        return self.op(inputs, k, s, self.padding)


class MaxPooling3D(_Pooling3D):
    """The maximum of each 3-D window.

    >>> MaxPooling3D(2, 2).pool_size
    (2, 2, 2)
    """

    op = staticmethod(max_pool3d)


class AveragePooling3D(_Pooling3D):
    """The mean of each 3-D window (padding not counted).

    >>> AveragePooling3D(2, 1).strides
    (1, 1, 1)
    """

    op = staticmethod(avg_pool3d)


conv3d_layer = _conv_fn(
    Conv3D,
    "Functional ``Conv3D``: variables ``conv3d/kernel``, ``conv3d/bias``.",
    "conv3d(tf.zeros([1, 3, 4, 4, 2]), 5, 2).shape.as_list()",
    "[1, 2, 3, 3, 5]",
)
max_pooling3d = _pool_fn(MaxPooling3D)
average_pooling3d = _pool_fn(AveragePooling3D)
