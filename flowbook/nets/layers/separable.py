"""Depthwise-separable convolution layers (TF1's ``tf.layers.separable_conv1d/2d``).

A separable convolution filters each input channel on its own
(``depthwise_kernel`` ``[kh, kw, in, depth_multiplier]``) and then mixes the
channels with a 1x1 convolution (``pointwise_kernel``
``[1, 1, in * depth_multiplier, filters]``): far fewer weights than a full
``conv2d`` of the same window.  Variable names are TF's
(``separable_conv2d/depthwise_kernel``, ``.../pointwise_kernel``,
``.../bias``); 1-D runs as 2-D on a height-1 image, as TF does.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     y = tf.layers.separable_conv2d(tf.zeros([1, 8, 8, 3]), 6, 3, depth_multiplier=2)
    ...     y.shape.as_list(), [v.name for v in tf.trainable_variables()]
    ([1, 6, 6, 6], ['separable_conv2d/depthwise_kernel:0', 'separable_conv2d/pointwise_kernel:0', 'separable_conv2d/bias:0'])
"""

from __future__ import annotations

from typing import Any

from flowbook.framework.graph import name_scope
from flowbook.framework.tensor import Tensor
from flowbook.nets.layers.convolutional import _Conv
from flowbook.ops.array import array_ops
from flowbook.ops.nn.nn_conv import separable_conv2d as nn_separable_conv2d

__all__ = ["SeparableConv1D", "SeparableConv2D", "separable_conv1d", "separable_conv2d"]


class SeparableConv2D(_Conv):
    """Depthwise then pointwise 2-D convolution: ``activation(pointwise(depthwise(x)) + bias)``.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     tf.layers.SeparableConv2D(4, 3, padding="same")(tf.zeros([1, 5, 5, 2])).shape.as_list()
    [1, 5, 5, 4]
    """

    def __init__(
        self,
        filters: int,
        kernel_size: Any,
        strides: Any = 1,
        padding: str = "valid",
        data_format: str = "channels_last",
        dilation_rate: Any = 1,
        depth_multiplier: int = 1,
        activation: Any = None,
        use_bias: bool = True,
        depthwise_initializer: Any = None,
        pointwise_initializer: Any = None,
        bias_initializer: Any = None,
        depthwise_regularizer: Any = None,
        pointwise_regularizer: Any = None,
        bias_regularizer: Any = None,
        activity_regularizer: Any = None,
        trainable: bool = True,
        name: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            filters,
            kernel_size,
            strides,
            padding,
            data_format,
            dilation_rate,
            activation,
            use_bias,
            None,
            bias_initializer,
            None,
            bias_regularizer,
            activity_regularizer,
            None,
            None,
            trainable,
            name,
            **kwargs,
        )
        self.depth_multiplier = int(depth_multiplier)
        self.depthwise_initializer, self.pointwise_initializer = (
            depthwise_initializer,
            pointwise_initializer,
        )
        self.depthwise_regularizer, self.pointwise_regularizer = (
            depthwise_regularizer,
            pointwise_regularizer,
        )

    def build(self, input_shape: Any) -> None:
        if not input_shape or len(input_shape) != self.rank + 2 or input_shape[-1] is None:
            raise ValueError(
                f"Input to {type(self).__name__} should have rank {self.rank + 2} with a known "
                f"channel dimension, got shape {input_shape}"
            )
        channels = input_shape[-1]
        dw_shape = [*self.kernel_size, channels, self.depth_multiplier]
        pw_shape = [1] * self.rank + [channels * self.depth_multiplier, self.filters]
        self.depthwise_kernel = self.add_weight(
            "depthwise_kernel",
            dw_shape,
            None,
            self.depthwise_initializer,
            self.depthwise_regularizer,
        )
        self.pointwise_kernel = self.add_weight(
            "pointwise_kernel",
            pw_shape,
            None,
            self.pointwise_initializer,
            self.pointwise_regularizer,
        )
        self.bias = None
        if self.use_bias:
            self.bias = self.add_weight(
                "bias", [self.filters], None, self.bias_initializer, self.bias_regularizer
            )

    def call(self, inputs: Tensor) -> Tensor:
        out = nn_separable_conv2d(
            inputs,
            self.depthwise_kernel,
            self.pointwise_kernel,
            [1, *self.strides, 1],
            self.padding,
            rate=list(self.dilation_rate),
        )
        return self._finish(out)


class SeparableConv1D(SeparableConv2D):
    """Depthwise-separable 1-D convolution over ``[batch, length, channels]``.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     tf.layers.SeparableConv1D(4, 3)(tf.zeros([2, 10, 3])).shape.as_list()
    [2, 8, 4]
    """

    rank = 1

    def call(self, inputs: Tensor) -> Tensor:
        with name_scope("separable_conv1d"):
            x = array_ops.expand_dims(inputs, 1)
            dw = array_ops.expand_dims(self.depthwise_kernel, 0)
            pw = array_ops.expand_dims(self.pointwise_kernel, 0)
            out = nn_separable_conv2d(
                x,
                dw,
                pw,
                [1, 1, self.strides[0], 1],
                self.padding,
                rate=[1, self.dilation_rate[0]],
            )
            out = array_ops.squeeze(out, [1])
        return self._finish(out)


def _separable_fn(cls: type[SeparableConv2D], name: str) -> Any:
    """The functional form of a separable layer class."""

    def fn(
        inputs: Any,
        filters: int,
        kernel_size: Any,
        *args: Any,
        reuse: Any = None,
        name: str | None = None,
        **kwargs: Any,
    ) -> Tensor:
        layer = cls(filters, kernel_size, *args, name=name, _scope=name, _reuse=reuse, **kwargs)
        return layer(inputs)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Functional ``{cls.__name__}`` (TF1's ``tf.layers.{name}``)."
    return fn


separable_conv2d = _separable_fn(SeparableConv2D, "separable_conv2d")
separable_conv1d = _separable_fn(SeparableConv1D, "separable_conv1d")
