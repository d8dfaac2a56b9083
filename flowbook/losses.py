"""``fb.losses``: TF1's ``tf.losses``: per-example losses, weighted and reduced to one number.

Every loss function computes per-element losses (cross-entropy, squared
error...) and hands them to ``compute_weighted_loss``, which multiplies by
``weights`` (a scalar or a tensor broadcastable to the losses), reduces them
as ``reduction`` says and adds the result to the ``LOSSES`` collection, where
``get_losses()`` and ``get_total_loss()`` find it.

The default reduction, ``SUM_BY_NONZERO_WEIGHTS``, divides the weighted sum by
the number of elements whose weight is not zero, so with ``weights=1.0`` it is
the mean over all elements.  Divisions by a count of zero give 0 (TF's
``div_no_nan``); no gradient flows into the count.  As in TF, losses are
computed in float32 and cast back to the input's dtype.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     loss = fb.losses.mean_squared_error([1.0, 2.0], [1.0, 4.0])
    ...     float(s.run(loss)), loss.name, len(fb.losses.get_losses())
    (2.0, 'mean_squared_error/value:0', 1)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flowbook import dtypes
from flowbook.graph import GraphKeys, add_to_collection, get_collection, name_scope
from flowbook.ops import array_ops, math_ops
from flowbook.ops.constant_op import convert_to_tensor
from flowbook.ops.loss_ops import (
    sigmoid_cross_entropy_with_logits,
    softmax_cross_entropy_with_logits_v2,
    sparse_softmax_cross_entropy_with_logits,
)
from flowbook.tensor import Tensor
from flowbook.tensor_shape import fmt, num_elements

__all__ = [
    "Reduction",
    "absolute_difference",
    "add_loss",
    "compute_weighted_loss",
    "get_losses",
    "get_regularization_loss",
    "get_regularization_losses",
    "get_total_loss",
    "huber_loss",
    "log_loss",
    "mean_squared_error",
    "sigmoid_cross_entropy",
    "softmax_cross_entropy",
    "sparse_softmax_cross_entropy",
]


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
def _is_python_number(x: Any) -> bool:
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
    if _is_python_number(weights) and weights != 0:
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
    if _is_python_number(num):
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


# --------------------------------------------------------------- the losses
def _check_not_none(**args: Any) -> None:
    for name, value in args.items():
        if value is None:
            raise ValueError(f"{name} must not be None.")


def _float_pair(labels: Any, predictions: Any) -> tuple[Tensor, Tensor]:
    predictions = math_ops.cast(convert_to_tensor(predictions), dtypes.float32)
    labels = math_ops.cast(convert_to_tensor(labels), dtypes.float32)
    predictions.get_shape().assert_is_compatible_with(labels.get_shape())
    return labels, predictions


def _squeeze_last(t: Tensor) -> Tensor:
    return array_ops.squeeze(t, [-1])


def _rank(t: Any) -> int | None:
    shape = getattr(t, "_shape", None)
    return None if shape is None else len(shape)


def _weighted(
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
    _check_not_none(**inputs)
    with name_scope(scope, name) as scope:
        losses, weights = per_element(*inputs.values(), weights)
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


_SUM_NZ = Reduction.SUM_BY_NONZERO_WEIGHTS  # TF1's default reduction
_LOSSES = GraphKeys.LOSSES


def sparse_softmax_cross_entropy(
    labels: Any,
    logits: Any,
    weights: Any = 1.0,
    scope: str | None = None,
    loss_collection: str | None = _LOSSES,
    reduction: str = _SUM_NZ,
) -> Tensor:
    """Cross-entropy of ``logits`` [batch, classes] against integer class ``labels`` [batch].

    Labels shaped [batch, 1] (and weights shaped [batch, 1]) are squeezed, as in TF.
    """

    def per_element(labels: Any, logits: Any, weights: Any) -> tuple[Tensor, Any]:
        logits = convert_to_tensor(logits)
        labels = convert_to_tensor(labels)
        lr, gr = _rank(labels), _rank(logits)
        if lr is not None and gr is not None and lr == gr and labels._shape[-1] in (1, None):
            labels = _squeeze_last(labels)
            lr -= 1
        if not _is_python_number(weights):
            weights = convert_to_tensor(weights)
            wr = _rank(weights)
            if lr is not None and wr is not None and wr - lr == 1:
                weights = _squeeze_last(weights)
        xent = sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=logits, name="xentropy"
        )
        return xent, weights

    inputs = {"labels": labels, "logits": logits}
    name = "sparse_softmax_cross_entropy_loss"
    return _weighted(name, inputs, per_element, weights, scope, loss_collection, reduction)


def softmax_cross_entropy(
    onehot_labels: Any,
    logits: Any,
    weights: Any = 1.0,
    label_smoothing: float = 0,
    scope: str | None = None,
    loss_collection: str | None = _LOSSES,
    reduction: str = _SUM_NZ,
) -> Tensor:
    """Cross-entropy of ``logits`` against one-hot (or probability) labels, both [batch, classes].

    ``label_smoothing`` s replaces the labels by ``labels * (1 - s) + s / classes``.
    """

    def per_element(onehot_labels: Any, logits: Any, weights: Any) -> tuple[Tensor, Any]:
        logits = convert_to_tensor(logits)
        onehot_labels = math_ops.cast(convert_to_tensor(onehot_labels), logits.dtype)
        logits.get_shape().assert_is_compatible_with(onehot_labels.get_shape())
        if label_smoothing > 0:
            classes = math_ops.cast(array_ops.shape(onehot_labels)[-1], logits.dtype)
            smooth_positives = 1.0 - label_smoothing
            smooth_negatives = convert_to_tensor(label_smoothing, dtype=logits.dtype) / classes
            onehot_labels = onehot_labels * smooth_positives + smooth_negatives
        onehot_labels = array_ops.stop_gradient(onehot_labels, name="labels_stop_gradient")
        xent = softmax_cross_entropy_with_logits_v2(
            labels=onehot_labels, logits=logits, name="xentropy"
        )
        return xent, weights

    inputs = {"onehot_labels": onehot_labels, "logits": logits}
    name = "softmax_cross_entropy_loss"
    return _weighted(name, inputs, per_element, weights, scope, loss_collection, reduction)


def sigmoid_cross_entropy(
    multi_class_labels: Any,
    logits: Any,
    weights: Any = 1.0,
    label_smoothing: float = 0,
    scope: str | None = None,
    loss_collection: str | None = _LOSSES,
    reduction: str = _SUM_NZ,
) -> Tensor:
    """Element-wise logistic loss of ``logits`` against 0/1 labels of the same shape."""

    def per_element(labels: Any, logits: Any, weights: Any) -> tuple[Tensor, Any]:
        logits = convert_to_tensor(logits)
        labels = math_ops.cast(convert_to_tensor(labels), logits.dtype)
        logits.get_shape().assert_is_compatible_with(labels.get_shape())
        if label_smoothing > 0:
            labels = labels * (1 - label_smoothing) + 0.5 * label_smoothing
        xent = sigmoid_cross_entropy_with_logits(labels=labels, logits=logits, name="xentropy")
        return xent, weights

    inputs = {"multi_class_labels": multi_class_labels, "logits": logits}
    name = "sigmoid_cross_entropy_loss"
    return _weighted(name, inputs, per_element, weights, scope, loss_collection, reduction)


def _regression(
    name: str, f: Callable[[Tensor, Tensor], Tensor], labels: Any, predictions: Any, *rest: Any
) -> Tensor:
    """A loss ``f(labels, predictions)`` of the two as float32, through the skeleton."""

    def per_element(labels: Any, predictions: Any, weights: Any) -> tuple[Tensor, Any]:
        return f(*_float_pair(labels, predictions)), weights

    return _weighted(name, {"labels": labels, "predictions": predictions}, per_element, *rest)


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
    return _regression("mean_squared_error", _squared_error, labels, predictions, *rest)


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
    return _regression("absolute_difference", _absolute_error, labels, predictions, *rest)


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
    return _regression("log_loss", f, labels, predictions, *rest)


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
    return _regression("huber_loss", f, labels, predictions, *rest)


# ------------------------------------------------------------ collections
def add_loss(loss: Tensor, loss_collection: str | None = GraphKeys.LOSSES) -> None:
    """Add ``loss`` to ``loss_collection`` (nothing when it is None)."""
    if loss_collection:
        add_to_collection(loss_collection, loss)


def get_losses(scope: str | None = None, loss_collection: str = GraphKeys.LOSSES) -> list[Any]:
    """The losses in ``loss_collection``, optionally only those under name scope ``scope``."""
    return get_collection(loss_collection, scope)


def get_regularization_losses(scope: str | None = None) -> list[Any]:
    return get_collection(GraphKeys.REGULARIZATION_LOSSES, scope)


def get_regularization_loss(
    scope: str | None = None, name: str = "total_regularization_loss"
) -> Tensor:
    """The sum of the regularization losses, or 0.0 when there are none."""
    losses = get_regularization_losses(scope)
    if losses:
        return math_ops.add_n(losses, name=name)
    return convert_to_tensor(0.0, name=name)


def get_total_loss(
    add_regularization_losses: bool = True, name: str = "total_loss", scope: str | None = None
) -> Tensor:
    """The sum of the collected losses (and regularization losses); ValueError if none."""
    losses = get_losses(scope=scope)
    if add_regularization_losses:
        losses += get_regularization_losses(scope=scope)
    if not losses:
        raise ValueError("No losses to sum: no loss was added to the LOSSES collection.")
    return math_ops.add_n(losses, name=name)
