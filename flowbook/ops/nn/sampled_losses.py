"""Sampled losses for many classes: ``nce_loss`` and ``sampled_softmax_loss``.

Both score each example against its ``num_true`` true classes and
``num_sampled`` classes drawn by a candidate sampler (log-uniform by default,
``unique=True``, ``range_max=num_classes``), written as TF1 writes them:

1. one ``embedding_lookup`` of the weights and biases of the true and the
   sampled ids together (``weights`` may be a list of shards);
2. ``true_logits[b, t] = inputs[b] . w[labels[b, t]] + bias[labels[b, t]]``,
   ``sampled_logits[b, s] = inputs[b] . w[sampled[s]] + bias[sampled[s]]``;
3. ``remove_accidental_hits``: a sampled class equal to one of the row's true
   classes gets ``-FLT_MAX`` added to its logit (TF adds it through a
   ``SparseToDense`` of the hits; here the same mask is built densely with
   ``equal`` and ``reduce_any``);
4. both logits minus ``log(expected_count)`` from the sampler;
5. the labels: ``1 / num_true`` for each true class, 0 for the sampled ones.

``nce_loss`` is the sum over the row of the sigmoid cross-entropies (default
``remove_accidental_hits=False``), ``sampled_softmax_loss`` the softmax
cross-entropy of the row (default ``True``).  The sampler's outputs are
behind ``stop_gradient``; gradients reach ``weights``, ``biases`` (dense, see
``embedding_ops``) and ``inputs``.

    >>> import flowbook as fb
    >>> w, b = fb.zeros([10, 3]), fb.zeros([10])
    >>> loss = fb.nn.nce_loss(w, b, [[1], [2]], fb.ones([2, 3]), num_sampled=4, num_classes=10)
    >>> loss.shape.as_list()
    [2]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowbook.framework import dtypes
from flowbook.framework.graph import name_scope
from flowbook.framework.tensor import Tensor
from flowbook.ops._builder import tensor
from flowbook.ops.array import array_ops
from flowbook.ops.math import math_ops
from flowbook.ops.nn.embedding_ops import embedding_lookup
from flowbook.ops.nn.loss_ops import (
    sigmoid_cross_entropy_with_logits,
    softmax_cross_entropy_with_logits_v2,
)
from flowbook.ops.random.candidate_sampling_ops import log_uniform_candidate_sampler

__all__ = ["nce_loss", "sampled_softmax_loss"]

_FLT_MAX = float(np.finfo(np.float32).max)  # TF's weight of an accidental hit is -FLT_MAX


def _split_rows(t: Tensor, n: Any) -> tuple[Tensor, Tensor]:
    """(the first ``n`` rows of ``t``, the rest); ``n`` a Python int or a [1] tensor."""
    if isinstance(n, int):
        return t[:n], t[n:]
    return t[: n[0]], t[n[0] :]


def _hits(labels: Tensor, sampled: Tensor) -> Tensor:
    """[batch, num_sampled] bool: sampled[s] is one of row b's true classes."""
    same = math_ops.equal(array_ops.expand_dims(labels, 2), array_ops.reshape(sampled, [1, 1, -1]))
    return math_ops.reduce_any(same, axis=1)


def compute_sampled_logits(
    weights: Any,
    biases: Any,
    labels: Any,
    inputs: Any,
    num_sampled: int,
    num_classes: int,
    num_true: int = 1,
    sampled_values: Any = None,
    subtract_log_q: bool = True,
    remove_accidental_hits: bool = False,
    partition_strategy: str = "mod",
    name: str | None = None,
    seed: int | None = None,
) -> tuple[Tensor, Tensor]:
    """(logits, labels) ``[batch, num_true + num_sampled]`` of the sampled losses (steps 1-5).

    >>> import flowbook as fb
    >>> logits, labels = compute_sampled_logits(
    ...     fb.zeros([10, 3]), fb.zeros([10]), [[1]], fb.ones([1, 3]), 4, 10)
    >>> logits.shape.as_list(), labels.shape.as_list()
    ([1, 5], [1, 5])
    """
    with name_scope(name, "compute_sampled_logits"):
        inputs = tensor(inputs, name="inputs")
        labels = tensor(labels, name="labels")
        if labels.dtype is not dtypes.int64:
            labels = math_ops.cast(labels, dtypes.int64)
        if sampled_values is None:
            sampled_values = log_uniform_candidate_sampler(
                labels, num_true, num_sampled, True, num_classes, seed=seed
            )
        sampled, true_count, sampled_count = (
            array_ops.stop_gradient(tensor(v)) for v in sampled_values
        )
        sampled = math_ops.cast(sampled, dtypes.int64)
        labels_flat = array_ops.reshape(labels, [-1])
        all_ids = array_ops.concat([labels_flat, sampled], 0)
        n_flat = labels_flat._shape[0] if labels_flat._shape is not None else None
        n = n_flat if n_flat is not None else array_ops.shape(labels_flat)
        true_w, sampled_w = _split_rows(embedding_lookup(weights, all_ids, partition_strategy), n)
        true_b, sampled_b = _split_rows(embedding_lookup(biases, all_ids, partition_strategy), n)
        dim = array_ops.shape(true_w)[1:2]
        true_w = array_ops.reshape(true_w, array_ops.concat([[-1, num_true], dim], 0))
        rows = math_ops.multiply(array_ops.expand_dims(inputs, 1), true_w)
        true_logits = math_ops.add(
            math_ops.reduce_sum(rows, 2), array_ops.reshape(true_b, [-1, num_true])
        )
        sampled_logits = math_ops.add(
            math_ops.matmul(inputs, sampled_w, transpose_b=True), sampled_b
        )
        if remove_accidental_hits:
            hits = math_ops.cast(_hits(labels, sampled), sampled_logits.dtype)
            sampled_logits = math_ops.add(sampled_logits, math_ops.multiply(hits, -_FLT_MAX))
        if subtract_log_q:
            dt = true_logits.dtype
            true_logits = math_ops.subtract(
                true_logits, math_ops.log(math_ops.cast(true_count, dt))
            )
            sampled_logits = math_ops.subtract(
                sampled_logits, math_ops.log(math_ops.cast(sampled_count, dt))
            )
        logits = array_ops.concat([true_logits, sampled_logits], 1)
        true_labels = math_ops.divide(array_ops.ones_like(true_logits), float(num_true))
        out_labels = array_ops.concat([true_labels, array_ops.zeros_like(sampled_logits)], 1)
        return logits, out_labels


def nce_loss(
    weights: Any,
    biases: Any,
    labels: Any,
    inputs: Any,
    num_sampled: int,
    num_classes: int,
    num_true: int = 1,
    sampled_values: Any = None,
    remove_accidental_hits: bool = False,
    partition_strategy: str = "mod",
    name: str = "nce_loss",
) -> Tensor:
    """Noise-contrastive estimation loss per example ``[batch]`` (sigmoid cross-entropies).

    >>> import flowbook as fb
    >>> loss = fb.nn.nce_loss(fb.zeros([10, 3]), fb.zeros([10]), [[1]], fb.ones([1, 3]), 4, 10)
    >>> loss.dtype
    tf.float32
    """
    with name_scope(name, "nce_loss") as scope:
        logits, labels_out = compute_sampled_logits(
            weights,
            biases,
            labels,
            inputs,
            num_sampled,
            num_classes,
            num_true=num_true,
            sampled_values=sampled_values,
            subtract_log_q=True,
            remove_accidental_hits=remove_accidental_hits,
            partition_strategy=partition_strategy,
        )
        losses = sigmoid_cross_entropy_with_logits(labels=labels_out, logits=logits)
        return math_ops.reduce_sum(losses, 1, name=scope)


def sampled_softmax_loss(
    weights: Any,
    biases: Any,
    labels: Any,
    inputs: Any,
    num_sampled: int,
    num_classes: int,
    num_true: int = 1,
    sampled_values: Any = None,
    remove_accidental_hits: bool = True,
    partition_strategy: str = "mod",
    name: str = "sampled_softmax_loss",
    seed: int | None = None,
) -> Tensor:
    """Softmax cross-entropy per example ``[batch]`` over the true and the sampled classes.

    >>> import flowbook as fb
    >>> loss = fb.nn.sampled_softmax_loss(
    ...     fb.zeros([10, 3]), fb.zeros([10]), [[1]], fb.ones([1, 3]), 4, 10, seed=2)
    >>> loss.shape.as_list()
    [1]
    """
    with name_scope(name, "sampled_softmax_loss") as scope:
        logits, labels_out = compute_sampled_logits(
            weights,
            biases,
            labels,
            inputs,
            num_sampled,
            num_classes,
            num_true=num_true,
            sampled_values=sampled_values,
            subtract_log_q=True,
            remove_accidental_hits=remove_accidental_hits,
            partition_strategy=partition_strategy,
            seed=seed,
        )
        labels_out = array_ops.stop_gradient(labels_out, name="labels_stop_gradient")
        return array_ops.identity(
            softmax_cross_entropy_with_logits_v2(labels=labels_out, logits=logits), name=scope
        )
