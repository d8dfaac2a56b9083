"""The skeleton under every ``tf.losses`` function: weights, reductions, the ``LOSSES`` collection.

Every loss computes per-element losses (cross-entropy, squared error...)
and hands them to :func:`compute_weighted_loss`, which multiplies by
``weights`` (a scalar or a tensor broadcastable to the losses), reduces them
as ``reduction`` says and adds the result to the ``LOSSES`` collection.
:func:`weighted_loss` is that path for a loss function: check the inputs,
build the per-element losses in the loss's name scope, weight and reduce.

The default reduction, ``SUM_BY_NONZERO_WEIGHTS``, divides the weighted sum by
the number of elements whose weight is not zero, so with ``weights=1.0`` it is
the mean over all elements.  Divisions by a count of zero give 0 (TF's
``div_no_nan``); no gradient flows into the count.  As in TF, losses are
computed in float32 and cast back to the input's dtype.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     float(s.run(compute_weighted_loss([1.0, 2.0, 3.0], [1.0, 0.0, 1.0])))
    2.0
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flowbook.framework import dtypes
from flowbook.framework.graph import GraphKeys, add_to_collection, name_scope
from flowbook.framework.tensor import Tensor
from flowbook.framework.tensor_shape import fmt, num_elements
from flowbook.ops.array import array_ops
from flowbook.ops.array.constant_op import convert_to_tensor
from flowbook.ops.math import math_ops

__all__ = ["Reduction", "add_loss", "compute_weighted_loss", "regression_loss", "weighted_loss"]


class Reduction:
    """How ``compute_weighted_loss`` reduces the weighted losses (TF1's names and values).

    >>> Reduction.SUM_BY_NONZERO_WEIGHTS
    'weighted_sum_by_nonzero_weights'
    """

    NONE = "none"  # no reduction: the weighted losses, shaped like the inputs
    SUM = "weighted_sum"  # sum of weighted losses
    SUM_OVER_BATCH_SIZE = "weighted_sum_over_batch_size"  # ... divided by the number of elements
    MEAN = "weighted_mean"  # ... divided by the sum of the weights
    SUM_BY_NONZERO_WEIGHTS = "weighted_sum_by_nonzero_weights"  # ... by the nonzero weights
    SUM_OVER_NONZERO_WEIGHTS = SUM_BY_NONZERO_WEIGHTS

    @classmethod
    def all(cls) -> tuple[str, ...]:
        return (
            cls.NONE,
            cls.SUM,
            cls.MEAN,
            cls.SUM_OVER_BATCH_SIZE,
            cls.SUM_OVER_NONZERO_WEIGHTS,
            cls.SUM_BY_NONZERO_WEIGHTS,
        )

    @classmethod
    def validate(cls, key: str) -> None:
        if key not in cls.all():
            raise ValueError(f"Invalid Reduction Key {key}.")


# ------------------------------------------------------------- the reduction
def is_python_number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _check_weights(weights: Tensor, losses: Tensor) -> None:
    """ValueError unless ``weights`` is a scalar or has the losses' rank with dims 1 or equal."""
    ws, ls = weights._shape, losses._shape
    if ws is None or ls is None or len(ws) == 0:
        return
    ok = len(ws) == len(ls) and all(w in (1, None) or v in (None, w) for w, v in zip(ws, ls))
    if not ok:
        raise ValueError(
            f"weights can not be broadcast to values. values.rank={len(ls)}. "
            f"weights.rank={len(ws)}. values.shape={fmt(ls)}. weights.shape={fmt(ws)}."
        )


def _num_elements(losses: Tensor) -> Any:
    """The number of loss elements: a Python int when the shape is known, else a tensor."""
    n = num_elements(losses._shape)
    if n is not None:
        return n
    with name_scope(None, "num_elements") as scope:
        return math_ops.cast(array_ops.size(losses, name=scope), dtypes.float32)


def _num_present(losses: Tensor, weights: Any, weights_t: Tensor) -> Any:
    """How many loss elements have a nonzero weight."""
    if is_python_number(weights) and weights != 0:
        return _num_elements(losses)
    with name_scope(None, "num_present") as scope:
        present = array_ops.where(
            math_ops.equal(weights_t, 0.0),
            array_ops.zeros_like(weights_t),
            array_ops.ones_like(weights_t),
        )
        present = present * array_ops.ones_like(losses)  # broadcast to the losses
        return math_ops.reduce_sum(present, name=scope)


def _safe_div(total: Tensor, num: Any, is_count: bool) -> Tensor:
    """``total / num``, or 0 where ``num`` is 0 (TF's div_no_nan); no gradient through ``num``."""
    if is_python_number(num):
        if num:
            return math_ops.truediv(total, float(num), name="value")
        return math_ops.multiply(total, 0.0, name="value")
    num = array_ops.stop_gradient(num)
    if is_count:  # a count is 0 or >= 1: max(count, 1) only changes 0/0, to 0/1
        return math_ops.truediv(total, math_ops.maximum(num, 1.0), name="value")
    nonzero = math_ops.not_equal(num, 0.0)
    safe = array_ops.where(nonzero, num, array_ops.ones_like(num))
    return math_ops.multiply(
        math_ops.truediv(total, safe), math_ops.cast(nonzero, dtypes.float32), name="value"
    )


def compute_weighted_loss(
    losses: Any,
    weights: Any = 1.0,
    scope: str | None = None,
    loss_collection: str | None = GraphKeys.LOSSES,
    reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS,
) -> Tensor:
    """``losses * weights`` reduced as ``reduction`` says, added to ``loss_collection``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     float(s.run(fb.losses.compute_weighted_loss([1.0, 2.0, 3.0], [1.0, 0.0, 1.0])))
    2.0
    """
    Reduction.validate(reduction)
    with name_scope(scope, "weighted_loss"):
        losses = convert_to_tensor(losses)
        input_dtype = losses.dtype
        losses = math_ops.cast(losses, dtypes.float32)
        weights_t = math_ops.cast(convert_to_tensor(weights), dtypes.float32)
        _check_weights(weights_t, losses)
        weighted = math_ops.multiply(losses, weights_t)
        if reduction == Reduction.NONE:
            loss = weighted
        else:
            total = math_ops.reduce_sum(weighted)
            if reduction == Reduction.MEAN:
                num = math_ops.reduce_sum(array_ops.ones_like(losses) * weights_t)
                loss = _safe_div(total, num, is_count=False)
            elif reduction == Reduction.SUM_BY_NONZERO_WEIGHTS:
                loss = _safe_div(total, _num_present(losses, weights, weights_t), is_count=True)
            elif reduction == Reduction.SUM_OVER_BATCH_SIZE:
                loss = _safe_div(total, _num_elements(losses), is_count=True)
            else:
                loss = total
        loss = math_ops.cast(loss, input_dtype)
        add_loss(loss, loss_collection)
        return loss


def add_loss(loss: Tensor, loss_collection: str | None = GraphKeys.LOSSES) -> None:
    """Add ``loss`` to ``loss_collection`` (nothing when it is None)."""
    if loss_collection:
        add_to_collection(loss_collection, loss)


def check_not_none(**args: Any) -> None:
    for name, value in args.items():
        if value is None:
            raise ValueError(f"{name} must not be None.")


def float_pair(labels: Any, predictions: Any) -> tuple[Tensor, Tensor]:
    predictions = math_ops.cast(convert_to_tensor(predictions), dtypes.float32)
    labels = math_ops.cast(convert_to_tensor(labels), dtypes.float32)
    predictions.get_shape().assert_is_compatible_with(labels.get_shape())
    return labels, predictions


def weighted_loss(
    name: str,
    inputs: dict[str, Any],
    per_element: Callable[..., Tensor],
    weights: Any,
    scope: str | None,
    loss_collection: str | None,
    reduction: str,
) -> Tensor:
    """Every loss's skeleton: check ``inputs``, then per-element losses weighted and reduced.

    ``per_element(*inputs)`` builds the losses inside the loss's name scope and
    returns them with the weights to use (some losses squeeze the weights).
    """
    check_not_none(**inputs)
    with name_scope(scope, name) as scope:
        losses, weights = per_element(*inputs.values(), weights)
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def regression_loss(
    name: str, f: Callable[[Tensor, Tensor], Tensor], labels: Any, predictions: Any, *rest: Any
) -> Tensor:
    """A loss ``f(labels, predictions)`` of the two as float32, through the skeleton."""

    def per_element(labels: Any, predictions: Any, weights: Any) -> tuple[Tensor, Any]:
        return f(*float_pair(labels, predictions)), weights

    return weighted_loss(name, {"labels": labels, "predictions": predictions}, per_element, *rest)
