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

from typing import Any

from flowbook.framework.graph import GraphKeys, get_collection
from flowbook.framework.tensor import Tensor
from flowbook.nets.losses.reduction import (
    Reduction,
    add_loss,
    compute_weighted_loss,
    is_python_number,
    weighted_loss,
)
from flowbook.nets.losses.regression import (
    absolute_difference,
    cosine_distance,
    hinge_loss,
    huber_loss,
    log_loss,
    mean_pairwise_squared_error,
    mean_squared_error,
)
from flowbook.ops.array import array_ops
from flowbook.ops.array.constant_op import convert_to_tensor
from flowbook.ops.math import math_ops
from flowbook.ops.nn.loss_ops import (
    sigmoid_cross_entropy_with_logits,
    softmax_cross_entropy_with_logits_v2,
    sparse_softmax_cross_entropy_with_logits,
)

__all__ = [
    "Reduction",
    "absolute_difference",
    "add_loss",
    "compute_weighted_loss",
    "cosine_distance",
    "get_losses",
    "get_regularization_loss",
    "get_regularization_losses",
    "get_total_loss",
    "hinge_loss",
    "huber_loss",
    "log_loss",
    "mean_pairwise_squared_error",
    "mean_squared_error",
    "sigmoid_cross_entropy",
    "softmax_cross_entropy",
    "sparse_softmax_cross_entropy",
]


def _squeeze_last(t: Tensor) -> Tensor:
    return array_ops.squeeze(t, [-1])


def _rank(t: Any) -> int | None:
    shape = getattr(t, "_shape", None)
    return None if shape is None else len(shape)


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
        if not is_python_number(weights):
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
    return weighted_loss(name, inputs, per_element, weights, scope, loss_collection, reduction)


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
    return weighted_loss(name, inputs, per_element, weights, scope, loss_collection, reduction)


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
    return weighted_loss(name, inputs, per_element, weights, scope, loss_collection, reduction)


# ------------------------------------------------------------ collections
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
