"""Small ``tf.nn`` helpers composed from existing ops: statistics, swish, loss scaling.

No new op types: each function is TensorFlow's formula written with
flowbook's ops, so gradients come from those ops.

- ``sufficient_statistics`` -> ``normalize_moments``: moments in two steps
  (count, sum of ``x - shift``, sum of squares), as distributed code splits them;
- ``weighted_moments``: the mean and variance under frequency weights;
- ``zero_fraction``, ``swish``/``silu``, ``batch_norm_with_global_normalization``;
- ``compute_average_loss``/``scale_regularization_loss`` for one replica.

    >>> import flowbook as fb
    >>> with fb.Session() as s:
    ...     s.run(fb.nn.zero_fraction([0.0, 1.0, 0.0, 2.0])).item()
    0.5
"""

from __future__ import annotations

from typing import Any

from flowbook.framework import dtypes
from flowbook.framework.graph import name_scope
from flowbook.framework.tensor import Tensor
from flowbook.ops._builder import tensor
from flowbook.ops.array import array_ops
from flowbook.ops.math import math_ops
from flowbook.ops.nn.norm_ops import batch_normalization

__all__ = [
    "batch_norm_with_global_normalization",
    "compute_average_loss",
    "normalize_moments",
    "scale_regularization_loss",
    "silu",
    "sufficient_statistics",
    "swish",
    "weighted_moments",
    "zero_fraction",
]


def zero_fraction(value: Any, name: str | None = None) -> Tensor:
    """The fraction of entries of ``value`` that are zero, a float32 scalar.

    >>> import flowbook as fb
    >>> with fb.Session() as s:
    ...     s.run(fb.nn.zero_fraction([[0, 3], [0, 0]])).item()
    0.75
    """
    with name_scope(name, "zero_fraction"):
        v = tensor(value, name="value")
        zero = math_ops.equal(v, tensor(0, dtype=v.dtype))
        return math_ops.reduce_mean(math_ops.cast(zero, dtypes.float32))


def swish(features: Any, beta: float = 1.0, name: str | None = None) -> Tensor:
    """``features * sigmoid(beta * features)`` (also called SiLU).

    >>> import flowbook as fb
    >>> with fb.Session() as s:
    ...     s.run(fb.nn.swish(0.0)).item()
    0.0
    """
    with name_scope(name, "swish"):
        x = tensor(features, name="features")
        return x * math_ops.sigmoid(x * beta if beta != 1.0 else x)


silu = swish


def _axes(axes: Any) -> list[int]:
    return [int(axes)] if isinstance(axes, int) else [int(a) for a in axes]


def sufficient_statistics(
    x: Any,
    axes: Any,
    shift: Any = None,
    keep_dims: bool | None = None,
    name: str | None = None,
    keepdims: bool | None = None,
) -> tuple[Tensor, Tensor, Tensor, Tensor | None]:
    """(count, sum of ``x - shift``, sum of its squares, shift) over ``axes``.

    >>> import flowbook as fb
    >>> with fb.Session() as s:
    ...     c, m, v, _ = fb.nn.sufficient_statistics([[1.0, 2.0], [3.0, 4.0]], [0])
    ...     [a.tolist() for a in s.run([c, m, v])]
    [2.0, [4.0, 6.0], [10.0, 20.0]]
    """
    keep = bool(keepdims if keep_dims is None else keep_dims)
    ax = _axes(axes)
    with name_scope(name, "sufficient_statistics"):
        t = tensor(x, name="x")
        s = t._shape
        if s is not None and all(s[a] is not None for a in ax):
            n = 1
            for a in ax:
                n *= s[a]
            count = tensor(float(n), dtype=t.dtype, name="count")
        else:
            dims = array_ops.gather(array_ops.shape(t), ax)
            count = math_ops.cast(math_ops.reduce_prod(dims), t.dtype, name="count")
        if shift is not None:
            shift = tensor(shift, dtype=t.dtype, name="shift")
            t = t - shift
        m_ss = math_ops.reduce_sum(t, ax, keepdims=keep, name="mean_ss")
        v_ss = math_ops.reduce_sum(math_ops.square(t), ax, keepdims=keep, name="var_ss")
        return count, m_ss, v_ss, shift


def normalize_moments(
    counts: Any, mean_ss: Any, variance_ss: Any, shift: Any, name: str | None = None
) -> tuple[Tensor, Tensor]:
    """The mean and variance from :func:`sufficient_statistics`' sums.

    >>> import flowbook as fb
    >>> with fb.Session() as s:
    ...     [a.tolist() for a in s.run(fb.nn.normalize_moments(2.0, [4.0], [10.0], None))]
    [[2.0], [1.0]]
    """
    with name_scope(name, "normalize"):
        m_ss = tensor(mean_ss, name="mean_ss")
        divisor = math_ops.reciprocal(tensor(counts, dtype=m_ss.dtype), name="divisor")
        shifted = math_ops.multiply(m_ss, divisor, name="shifted_mean")
        mean = shifted if shift is None else math_ops.add(shifted, tensor(shift, m_ss.dtype))
        v = math_ops.multiply(tensor(variance_ss, m_ss.dtype), divisor)
        return mean, math_ops.subtract(v, math_ops.square(shifted), name="variance")


def weighted_moments(
    x: Any,
    axes: Any,
    frequency_weights: Any,
    name: str | None = None,
    keep_dims: bool | None = None,
    keepdims: bool | None = None,
) -> tuple[Tensor, Tensor]:
    """The mean and variance of ``x`` over ``axes``, each entry counted ``frequency_weights`` times.

    >>> import flowbook as fb
    >>> with fb.Session() as s:
    ...     [a.item() for a in s.run(fb.nn.weighted_moments([1.0, 3.0], [0], [3.0, 1.0]))]
    [1.5, 0.75]
    """
    keep = bool(keepdims if keep_dims is None else keep_dims)
    ax = _axes(axes)
    with name_scope(name, "weighted_moments"):
        t = tensor(x, name="x")
        w = tensor(frequency_weights, dtype=t.dtype, name="frequency_weights")
        total = math_ops.reduce_sum(w + array_ops.zeros_like(t), ax, keepdims=True)
        mean = math_ops.reduce_sum(w * t, ax, keepdims=True) / total
        dev = math_ops.squared_difference(t, array_ops.stop_gradient(mean))
        variance = math_ops.reduce_sum(w * dev, ax, keepdims=True) / total
        if not keep:
            mean, variance = array_ops.squeeze(mean, ax), array_ops.squeeze(variance, ax)
        return mean, variance


def compute_average_loss(
    per_example_loss: Any, sample_weight: Any = None, global_batch_size: Any = None
) -> Tensor:
    """The summed per-example loss over the global batch size (one replica: the batch).

    >>> import flowbook as fb
    >>> with fb.Session() as s:
    ...     s.run(fb.nn.compute_average_loss([1.0, 2.0, 3.0], global_batch_size=6)).item()
    1.0
    """
    with name_scope(None, "compute_average_loss"):
        loss = tensor(per_example_loss, name="per_example_loss")
        if sample_weight is not None:
            loss = loss * tensor(sample_weight, dtype=loss.dtype)
        if global_batch_size is None:
            n = math_ops.cast(array_ops.shape(loss)[0], loss.dtype)
        else:
            n = tensor(global_batch_size, dtype=loss.dtype)
        return math_ops.reduce_sum(loss) / n


def scale_regularization_loss(regularization_loss: Any) -> Tensor:
    """The regularization loss (summed when a list) divided by the replicas: one here.

    >>> import flowbook as fb
    >>> with fb.Session() as s:
    ...     s.run(fb.nn.scale_regularization_loss([1.0, 2.0])).item()
    3.0
    """
    if isinstance(regularization_loss, list | tuple):
        return math_ops.add_n([tensor(t) for t in regularization_loss])
    return math_ops.reduce_sum(tensor(regularization_loss))


def batch_norm_with_global_normalization(
    t: Any = None,
    m: Any = None,
    v: Any = None,
    beta: Any = None,
    gamma: Any = None,
    variance_epsilon: float | None = None,
    scale_after_normalization: bool | None = None,
    name: str | None = None,
    input: Any = None,
    mean: Any = None,
    variance: Any = None,
) -> Tensor:
    """TF1's old batch norm: ``(t - m) / sqrt(v + eps) * gamma + beta`` (gamma if asked).

    >>> import flowbook as fb
    >>> with fb.Session() as s:
    ...     s.run(fb.nn.batch_norm_with_global_normalization([3.0], [1.0], [4.0], [0.5], [2.0], 0.0, True)).tolist()
    [2.5]
    """
    x = input if t is None else t
    mu = mean if m is None else m
    var = variance if v is None else v
    if variance_epsilon is None or scale_after_normalization is None:
        raise TypeError("variance_epsilon and scale_after_normalization are required")
    scale = gamma if scale_after_normalization else None
    with name_scope(name, "batchnorm"):
        return batch_normalization(x, mu, var, beta, scale, variance_epsilon)
