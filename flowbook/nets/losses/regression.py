"""The regression losses of ``tf.losses``: squared, absolute, log, Huber, hinge, cosine, pairwise.

Each is one per-element formula of ``labels`` and ``predictions`` (both cast
to float32) put through :func:`flowbook.nets.losses.reduction.regression_loss`, which
weights, reduces and collects it as every ``tf.losses`` function does.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     float(s.run(mean_squared_error([1.0, 2.0], [1.0, 4.0])))
    2.0
"""

from __future__ import annotations

from typing import Any

from flowbook.framework.graph import GraphKeys
from flowbook.framework.tensor import Tensor
from flowbook.nets.losses.reduction import Reduction, float_pair, regression_loss, weighted_loss
from flowbook.ops.array import array_ops
from flowbook.ops.array.constant_op import convert_to_tensor
from flowbook.ops.math import math_ops

__all__ = [
    "absolute_difference",
    "cosine_distance",
    "hinge_loss",
    "huber_loss",
    "log_loss",
    "mean_pairwise_squared_error",
    "mean_squared_error",
]

_SUM_NZ = Reduction.SUM_BY_NONZERO_WEIGHTS  # TF1's default reduction
_LOSSES = GraphKeys.LOSSES


def _squared_error(y: Tensor, p: Tensor) -> Tensor:
    return math_ops.squared_difference(p, y)


def _absolute_error(y: Tensor, p: Tensor) -> Tensor:
    return math_ops.abs(math_ops.subtract(p, y))


def mean_squared_error(
    labels: Any,
    predictions: Any,
    weights: Any = 1.0,
    scope: str | None = None,
    loss_collection: str | None = _LOSSES,
    reduction: str = _SUM_NZ,
) -> Tensor:
    """``(predictions - labels) ** 2``, weighted and reduced (by default: the mean)."""
    rest = (weights, scope, loss_collection, reduction)
    return regression_loss("mean_squared_error", _squared_error, labels, predictions, *rest)


def absolute_difference(
    labels: Any,
    predictions: Any,
    weights: Any = 1.0,
    scope: str | None = None,
    loss_collection: str | None = _LOSSES,
    reduction: str = _SUM_NZ,
) -> Tensor:
    """``|predictions - labels|``, weighted and reduced (by default: the mean)."""
    rest = (weights, scope, loss_collection, reduction)
    return regression_loss("absolute_difference", _absolute_error, labels, predictions, *rest)


def log_loss(
    labels: Any,
    predictions: Any,
    weights: Any = 1.0,
    epsilon: float = 1e-7,
    scope: str | None = None,
    loss_collection: str | None = _LOSSES,
    reduction: str = _SUM_NZ,
) -> Tensor:
    """Binary cross-entropy of probabilities: ``-y log(p + eps) - (1 - y) log(1 - p + eps)``."""

    def f(y: Tensor, p: Tensor) -> Tensor:
        positive = math_ops.multiply(y, math_ops.log(p + epsilon))
        return -positive - math_ops.multiply((1 - y), math_ops.log(1 - p + epsilon))

    rest = (weights, scope, loss_collection, reduction)
    return regression_loss("log_loss", f, labels, predictions, *rest)


def huber_loss(
    labels: Any,
    predictions: Any,
    weights: Any = 1.0,
    delta: float = 1.0,
    scope: str | None = None,
    loss_collection: str | None = _LOSSES,
    reduction: str = _SUM_NZ,
) -> Tensor:
    """Quadratic for errors up to ``delta``, linear beyond: ``0.5 q**2 + delta (|e| - q)``."""

    def f(y: Tensor, p: Tensor) -> Tensor:
        abs_error = math_ops.abs(math_ops.subtract(p, y))
        quadratic = math_ops.minimum(abs_error, delta)
        linear = math_ops.subtract(abs_error, quadratic)
        return math_ops.add(
            math_ops.multiply(0.5, math_ops.multiply(quadratic, quadratic)),
            math_ops.multiply(delta, linear),
        )

    rest = (weights, scope, loss_collection, reduction)
    return regression_loss("huber_loss", f, labels, predictions, *rest)


def hinge_loss(
    labels: Any,
    logits: Any,
    weights: Any = 1.0,
    scope: str | None = None,
    loss_collection: str | None = _LOSSES,
    reduction: str = _SUM_NZ,
) -> Tensor:
    """``max(0, 1 - y * logits)`` with labels 0/1 read as y = -1/+1, weighted and reduced.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     float(s.run(hinge_loss([0.0, 1.0], [-2.0, 0.5])))  # (0 + 0.5) / 2
    0.25
    """

    def f(y: Tensor, z: Tensor) -> Tensor:
        signs = math_ops.subtract(math_ops.multiply(2.0, y), 1.0)
        return math_ops.maximum(math_ops.subtract(1.0, math_ops.multiply(signs, z)), 0.0)

    rest = (weights, scope, loss_collection, reduction)
    return regression_loss("hinge_loss", f, labels, logits, *rest)


def cosine_distance(
    labels: Any,
    predictions: Any,
    axis: int | None = None,
    weights: Any = 1.0,
    scope: str | None = None,
    loss_collection: str | None = _LOSSES,
    reduction: str = _SUM_NZ,
    dim: int | None = None,
) -> Tensor:
    """``1 - sum(labels * predictions, axis)`` for unit-normalised inputs, weighted and reduced.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     round(float(s.run(cosine_distance([[1.0, 0.0]], [[0.6, 0.8]], axis=1))), 6)
    0.4
    """
    if dim is not None:
        if axis is not None:
            raise ValueError("Cannot specify both 'axis' and 'dim'")
        axis = dim
    if axis is None:
        raise ValueError("You must specify 'axis'.")

    def f(y: Tensor, p: Tensor) -> Tensor:
        dot = math_ops.reduce_sum(math_ops.multiply(p, y), axis, keepdims=True)
        return math_ops.subtract(1.0, dot)

    rest = (weights, scope, loss_collection, reduction)
    return regression_loss("cosine_distance_loss", f, labels, predictions, *rest)


def mean_pairwise_squared_error(
    labels: Any,
    predictions: Any,
    weights: Any = 1.0,
    scope: str | None = None,
    loss_collection: str | None = _LOSSES,
) -> Tensor:
    """The mean of ``((p_i - p_j) - (y_i - y_j))**2`` over pairs within each example, weighted.

    TF1's formula per example over its ``n`` present elements, with ``d = p - y``:
    ``2 * sum(d**2) / (n - 1) - 2 * sum(d)**2 / (n * (n - 1))``, times the
    example's weight, summed over the batch (0 where nothing is present).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     round(float(s.run(mean_pairwise_squared_error([[0.0, 0.0, 0.0]], [[1.0, 2.0, 4.0]]))), 4)
    4.6667
    """

    def per_element(y: Any, p: Any, w: Any) -> tuple[Tensor, Any]:
        y, p = float_pair(y, p)
        diffs = math_ops.subtract(p, y)
        rank = len(diffs._shape) if diffs._shape is not None else None
        if rank is None or rank < 2:
            raise ValueError(
                f"labels and predictions need rank >= 2 (a batch of examples), got {rank}"
            )
        axes = list(range(1, rank))
        w_t = math_ops.cast(convert_to_tensor(w), diffs.dtype)
        if w_t._shape is not None and len(w_t._shape) == 1:  # one weight per example
            w_t = array_ops.reshape(w_t, [-1] + [1] * (rank - 1))
        present = math_ops.multiply(
            array_ops.ones_like(diffs), math_ops.cast(math_ops.not_equal(w_t, 0.0), diffs.dtype)
        )
        n = math_ops.reduce_sum(present, axes, keepdims=True)
        term1 = 2.0 * math_ops.div_no_nan(
            math_ops.reduce_sum(math_ops.square(diffs), axes, keepdims=True), n - 1.0
        )
        sum_diff = math_ops.reduce_sum(diffs, axes, keepdims=True)
        term2 = 2.0 * math_ops.div_no_nan(math_ops.square(sum_diff), n * (n - 1.0))
        return math_ops.multiply(math_ops.subtract(term1, term2), w_t), 1.0

    return weighted_loss(
        "mean_pairwise_squared_error",
        {"labels": labels, "predictions": predictions},
        per_element,
        weights,
        scope,
        loss_collection,
        Reduction.SUM,
    )
