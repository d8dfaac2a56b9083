"""``tf.layers``: TF1's layers, as classes and as functions, with TF's variable names.

Each layer makes its variables with ``tf.get_variable`` inside a variable
scope named after it (``dense``, ``dense_1``, ``conv2d``...), so checkpoints
and GraphDefs line up with TensorFlow's; see :mod:`flowbook.nets.layers.base`.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     y = tf.layers.dense(tf.zeros([2, 3]), 4)
    ...     [v.name for v in tf.global_variables()]
    ['dense/kernel:0', 'dense/bias:0']
"""

from flowbook.nets.layers.base import InputSpec, Layer
from flowbook.nets.layers.convolutional import (
    AveragePooling1D,
    AveragePooling2D,
    Conv1D,
    Conv2D,
    Conv2DTranspose,
    MaxPooling1D,
    MaxPooling2D,
    average_pooling1d,
    average_pooling2d,
    conv1d,
    max_pooling1d,
    max_pooling2d,
)
from flowbook.nets.layers.convolutional import conv2d_layer as conv2d
from flowbook.nets.layers.convolutional import conv2d_transpose_layer as conv2d_transpose
from flowbook.nets.layers.core import Dense, Dropout, Flatten, dense, dropout, flatten
from flowbook.nets.layers.normalization import BatchNormalization, batch_normalization
from flowbook.nets.layers.separable import (
    SeparableConv1D,
    SeparableConv2D,
    separable_conv1d,
    separable_conv2d,
)
from flowbook.nets.layers.three_d import (
    AveragePooling3D,
    Conv3D,
    MaxPooling3D,
    average_pooling3d,
    max_pooling3d,
)
from flowbook.nets.layers.three_d import conv3d_layer as conv3d

__all__ = [
    "AveragePooling1D",
    "AveragePooling2D",
    "AveragePooling3D",
    "BatchNormalization",
    "Conv1D",
    "Conv2D",
    "Conv2DTranspose",
    "Conv3D",
    "Dense",
    "Dropout",
    "Flatten",
    "InputSpec",
    "Layer",
    "MaxPooling1D",
    "MaxPooling2D",
    "MaxPooling3D",
    "SeparableConv1D",
    "SeparableConv2D",
    "average_pooling1d",
    "average_pooling2d",
    "average_pooling3d",
    "batch_normalization",
    "conv1d",
    "conv2d",
    "conv2d_transpose",
    "conv3d",
    "dense",
    "dropout",
    "flatten",
    "max_pooling1d",
    "max_pooling2d",
    "max_pooling3d",
    "separable_conv1d",
    "separable_conv2d",
]
