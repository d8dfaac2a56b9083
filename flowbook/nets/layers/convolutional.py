"""Convolution and pooling layers (TF1's ``tf.layers``), channels-last.

Kernels have TF's layouts: ``conv2d`` ``[kh, kw, in, filters]``, ``conv1d``
``[k, in, filters]`` (run as a 2-D convolution of height 1, as TF does),
``conv2d_transpose`` ``[kh, kw, filters, in]`` with the output size TF's
``deconv_output_length`` gives: ``in * stride``, plus ``max(k - stride, 0)``
for ``'valid'``.  Pooling windows and strides are ints or tuples; 1-D
pooling runs as 2-D on a width-1 image.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     x = tf.placeholder(tf.float32, [None, 28, 28, 1])
    ...     h = tf.layers.conv2d(x, 32, 5, padding="same", activation=tf.nn.relu)
    ...     p = tf.layers.max_pooling2d(h, 2, 2)
    ...     h.name, p.shape.as_list(), tf.trainable_variables()[0].shape.as_list()
    ('conv2d/Relu:0', [None, 14, 14, 32], [5, 5, 1, 32])
"""

from __future__ import annotations

from typing import Any

from flowbook.framework.graph import name_scope
from flowbook.framework.tensor import Tensor
from flowbook.nets.layers.base import Layer, channels_last, padding_of, pair
from flowbook.ops.array import array_ops
from flowbook.ops.nn.conv_ops import bias_add, conv2d, conv2d_transpose
from flowbook.ops.nn.pool_ops import avg_pool, max_pool
from flowbook.variables import initializers


class _Conv(Layer):
    """What the convolution layers share: settings, kernel and bias, activation."""

    rank = 2

    def __init__(
        self,
        filters: int,
        kernel_size: Any,
        strides: Any = 1,
        padding: str = "valid",
        data_format: str = "channels_last",
        dilation_rate: Any = 1,
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
        channels_last(data_format, type(self).__name__)
        self.filters = int(filters)
        self.kernel_size = pair(kernel_size, self.rank, "kernel_size")
        self.strides = pair(strides, self.rank, "strides")
        self.padding = padding_of(padding)
        self.dilation_rate = pair(dilation_rate, self.rank, "dilation_rate")
        self.activation, self.use_bias = activation, use_bias
        self.kernel_initializer = kernel_initializer
        self.bias_initializer = bias_initializer or initializers.Zeros()
        self.kernel_regularizer, self.bias_regularizer = kernel_regularizer, bias_regularizer
        self.kernel_constraint, self.bias_constraint = kernel_constraint, bias_constraint

    def _kernel_shape(self, channels: int) -> list[int]:
        return [*self.kernel_size, channels, self.filters]

    def build(self, input_shape: Any) -> None:
        if not input_shape or len(input_shape) != self.rank + 2:
            raise ValueError(
                f"Input to {type(self).__name__} should have rank {self.rank + 2}, "
                f"got shape {input_shape}"
            )
        if input_shape[-1] is None:
            raise ValueError("The channel dimension of the inputs should be defined. Found `None`.")
        self.kernel = self.add_weight(
            "kernel",
            self._kernel_shape(input_shape[-1]),
            None,
            self.kernel_initializer,
            self.kernel_regularizer,
            constraint=self.kernel_constraint,
        )
        self.bias = None
        if self.use_bias:
            self.bias = self.add_weight(
                "bias",
                [self.filters],
                None,
                self.bias_initializer,
                self.bias_regularizer,
                constraint=self.bias_constraint,
            )

    def _finish(self, out: Tensor) -> Tensor:
        if self.bias is not None:
            out = bias_add(out, self.bias)
        return self.activation(out) if self.activation is not None else out


class Conv2D(_Conv):
    """2-D convolution layer: ``activation(conv2d(inputs, kernel) + bias)``.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     tf.layers.Conv2D(4, 3, strides=2)(tf.zeros([1, 9, 9, 2])).shape.as_list()
    [1, 4, 4, 4]
    """

    def call(self, inputs: Tensor) -> Tensor:
        out = conv2d(
            inputs,
            self.kernel,
            [1, *self.strides, 1],
            self.padding,
            dilations=[1, *self.dilation_rate, 1],
        )
        return self._finish(out)


class Conv1D(_Conv):
    """1-D convolution layer over ``[batch, length, channels]``.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     tf.layers.Conv1D(4, 3)(tf.zeros([2, 10, 3])).shape.as_list()
    [2, 8, 4]
    """

    rank = 1

    def call(self, inputs: Tensor) -> Tensor:
        with name_scope("conv1d"):
            x = array_ops.expand_dims(inputs, 1)
            k = array_ops.expand_dims(self.kernel, 0)
            out = conv2d(
                x,
                k,
                [1, 1, self.strides[0], 1],
                self.padding,
                dilations=[1, 1, self.dilation_rate[0], 1],
            )
            out = array_ops.squeeze(out, [1])
        return self._finish(out)


class Conv2DTranspose(_Conv):
    """Transposed 2-D convolution ("deconvolution"); kernel ``[kh, kw, filters, in]``.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     x = tf.placeholder(tf.float32, [None, 7, 7, 8])
    ...     tf.layers.Conv2DTranspose(4, 3, strides=2, padding="same")(x).shape.as_list()
    [None, 14, 14, 4]
    """

    def _kernel_shape(self, channels: int) -> list[int]:
        return [*self.kernel_size, self.filters, channels]

    def _out_length(self, length: Any, k: int, s: int) -> Any:
        if length is None:
            return None
        return length * s + (max(k - s, 0) if self.padding == "VALID" else 0)

    def call(self, inputs: Tensor) -> Tensor:
        if self.dilation_rate != (1, 1):
            raise NotImplementedError("Conv2DTranspose: dilation_rate other than 1")
        static = inputs.get_shape().as_list()
        dynamic = array_ops.shape(inputs)
        (kh, kw), (sh, sw) = self.kernel_size, self.strides
        dims = []
        for i, k, s in ((1, kh, sh), (2, kw, sw)):
            dims.append(self._out_length(static[i] if static[i] is not None else dynamic[i], k, s))
        output_shape = array_ops.stack([dynamic[0], dims[0], dims[1], self.filters])
        out = conv2d_transpose(inputs, self.kernel, output_shape, [1, sh, sw, 1], self.padding)
        known = [d if isinstance(d, int) else None for d in dims]
        out.set_shape([static[0], *known, self.filters])
        return self._finish(out)


def _conv_fn(cls: type[_Conv], summary: str, example: str, value: str) -> Any:
    """The functional form of a convolution layer class (``tf.layers.conv2d``...)."""

    def fn(
        inputs: Any,
        filters: int,
        kernel_size: Any,
        strides: Any = 1,
        padding: str = "valid",
        data_format: str = "channels_last",
        dilation_rate: Any = 1,
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
        layer = cls(
            filters,
            kernel_size,
            strides,
            padding,
            data_format,
            dilation_rate,
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

    fn.__name__ = fn.__qualname__ = example.split("(")[0]
    fn.__doc__ = f"""{summary}

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     tf.layers.{example}
    {value}
    """
    return fn


conv1d = _conv_fn(
    Conv1D,
    "Functional ``Conv1D``.",
    "conv1d(tf.zeros([2, 10, 3]), 4, 3).shape.as_list()",
    "[2, 8, 4]",
)
conv2d_layer = _conv_fn(
    Conv2D,
    "Functional ``Conv2D``: variables ``conv2d/kernel``, ``conv2d/bias``.",
    "conv2d(tf.zeros([1, 5, 5, 2]), 3, 3).name",
    "'conv2d/BiasAdd:0'",
)
conv2d_transpose_layer = _conv_fn(
    Conv2DTranspose,
    "Functional ``Conv2DTranspose``.",
    "conv2d_transpose(tf.zeros([1, 4, 4, 2]), 3, 3, 2).shape.as_list()",
    "[1, 9, 9, 3]",
)


class _Pooling(Layer):
    """Max or average pooling over ``rank`` spatial dims (channels last)."""

    rank, op = 2, staticmethod(max_pool)

    def __init__(
        self,
        pool_size: Any,
        strides: Any,
        padding: str = "valid",
        data_format: str = "channels_last",
        name: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(name=name, **kwargs)
        channels_last(data_format, type(self).__name__)
        self.pool_size = pair(pool_size, self.rank, "pool_size")
        self.strides = pair(strides, self.rank, "strides")
        self.padding = padding_of(padding)

    def call(self, inputs: Tensor) -> Tensor:
        if self.rank == 2:
            k, s = [1, *self.pool_size, 1], [1, *self.strides, 1]
            return self.op(inputs, k, s, self.padding)
        x = array_ops.expand_dims(inputs, 2)
        k, s = [1, self.pool_size[0], 1, 1], [1, self.strides[0], 1, 1]
        return array_ops.squeeze(self.op(x, k, s, self.padding), [2])


class MaxPooling2D(_Pooling):
    """The maximum of each window.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     tf.layers.MaxPooling2D(2, 2)(tf.zeros([1, 4, 4, 3])).name
    'max_pooling2d/MaxPool:0'
    """


class AveragePooling2D(_Pooling):
    """The mean of each window (padding not counted).

    >>> AveragePooling2D(2, 2).pool_size
    (2, 2)
    """

    op = staticmethod(avg_pool)


class MaxPooling1D(_Pooling):
    """1-D max pooling over ``[batch, length, channels]``.

    >>> MaxPooling1D(3, 1).strides
    (1,)
    """

    rank = 1


class AveragePooling1D(_Pooling):
    """1-D average pooling over ``[batch, length, channels]``.

    >>> AveragePooling1D(2, 2).rank
    1
    """

    rank, op = 1, staticmethod(avg_pool)


def _pool_fn(cls: type[_Pooling]) -> Any:
    def fn(
        inputs: Any,
        pool_size: Any,
        strides: Any,
        padding: str = "valid",
        data_format: str = "channels_last",
        name: str | None = None,
    ) -> Tensor:
        return cls(pool_size, strides, padding, data_format, name)(inputs)

    fn.__name__ = fn.__qualname__ = cls.__name__.lower().replace("pooling", "_pooling")
    fn.__doc__ = f"Functional ``{cls.__name__}``: ``{fn.__name__}(inputs, pool_size, strides)``."
    return fn


max_pooling1d = _pool_fn(MaxPooling1D)
max_pooling2d = _pool_fn(MaxPooling2D)
average_pooling1d = _pool_fn(AveragePooling1D)
average_pooling2d = _pool_fn(AveragePooling2D)
