"""``tf.nn.moments`` and ``tf.nn.batch_normalization``, built from existing ops as TF1 builds them.

``moments`` is the mean over ``axes`` and the mean squared difference from
it; the mean in the variance goes through ``stop_gradient`` (as in TF: the
variance's gradient with respect to the mean is zero at the mean, so the
gradient stays exact and the backward graph is smaller).  ``batch_normalization``
computes ``x * inv + (offset - mean * inv)`` with ``inv = scale /
sqrt(variance + epsilon)``, TensorFlow's arrangement of the formula.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default(), tf.Session() as s:
    ...     m, v = tf.nn.moments(tf.constant([1.0, 2.0, 3.0, 4.0]), axes=[0])
    ...     [float(a) for a in s.run([m, v])]
    [2.5, 1.25]
"""

from __future__ import annotations

from typing import Any

from flowbook import dtypes
from flowbook.graph import name_scope
from flowbook.ops import array_ops, math_ops
from flowbook.ops._builder import tensor
from flowbook.tensor import Tensor

__all__ = ["batch_normalization", "moments"]


def moments(
    x: Any,
    axes: Any,
    shift: Any = None,
    name: str | None = None,
    keep_dims: bool | None = None,
    keepdims: bool | None = None,
) -> tuple[Tensor, Tensor]:
    """``(mean, variance)`` of ``x`` over ``axes`` (the biased variance, as TF's).

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     m, v = tf.nn.moments(tf.zeros([8, 4, 4, 3]), [0, 1, 2])
    ...     m.shape.as_list(), v.op.name
    ([3], 'moments/Squeeze_1')
    """
    keep = bool(keepdims if keepdims is not None else keep_dims)
    with name_scope(name, "moments"):
        x = tensor(x, name="x")
        y = math_ops.cast(x, dtypes.float32) if x.dtype is dtypes.float16 else x
        axes = list(axes)
        mean = math_ops.reduce_mean(y, axes, keepdims=True, name="mean")
        deviation = math_ops.squared_difference(y, array_ops.stop_gradient(mean))
        variance = math_ops.reduce_mean(deviation, axes, keepdims=True, name="variance")
        if not keep:
            mean = array_ops.squeeze(mean, axes)
            variance = array_ops.squeeze(variance, axes)
        if x.dtype is dtypes.float16:
            return math_ops.cast(mean, x.dtype), math_ops.cast(variance, x.dtype)
        return mean, variance


def batch_normalization(
    x: Any,
    mean: Any,
    variance: Any,
    offset: Any,
    scale: Any,
    variance_epsilon: float,
    name: str | None = None,
) -> Tensor:
    """``scale * (x - mean) / sqrt(variance + variance_epsilon) + offset`` (either may be None).

    >>> import flowbook as tf
    >>> with tf.Graph().as_default(), tf.Session() as s:
    ...     y = tf.nn.batch_normalization([1.0, 3.0], 2.0, 1.0, 10.0, 2.0, 0.0)
    ...     s.run(y).tolist()
    [8.0, 12.0]
    """
    with name_scope(name, "batchnorm"):
        x = tensor(x)
        inv = math_ops.rsqrt(math_ops.add(tensor(variance, x.dtype), variance_epsilon))
        if scale is not None:
            inv = inv * tensor(scale, x.dtype)
        mean_t = tensor(mean, x.dtype)
        shift = -mean_t * inv if offset is None else tensor(offset, x.dtype) - mean_t * inv
        return x * inv + shift
