"""``tf.nn``'s sparse corners: embeddings of sparse ids, CTC greedy decoding, accidental hits.

- ``embedding_lookup_sparse(params, sp_ids, sp_weights, combiner)``: each
  row of the SparseTensor ``sp_ids`` looks up its ids' embeddings
  (``embedding_lookup``, sharded params too, each distinct id once) and
  combines them, weighted by ``sp_weights``' values when given: ``"sum"``,
  ``"mean"`` (divided by the row's total weight) or ``"sqrtn"`` (by the
  square root of its sum of squared weights) -- TF's segment-op formulas, so
  the gradients reach ``params`` and the weights.  Rows with no ids are
  absent past the last id's row, as in TF, and give 0 between rows with
  ids (0/0, NaN, for a weighted mean or sqrtn, as TF 1.15 computes).
- ``safe_embedding_lookup_sparse`` first drops negative ids (and weights
  <= 0), gives each empty row ``default_id`` (or zeros), and keeps
  ``sp_ids``' leading dims: the output is ``dense_shape[:-1] + [dim]``.
- ``ctc_greedy_decoder`` (a host kernel, ``CTCGreedyDecoder``) takes the
  best class per step within each sequence's length, merges repeats
  (``merge_repeated``) and drops the blank (the last class): a SparseTensor
  of labels and ``-sum(best logits)`` per sequence.  ``collapse_repeated``
  merges repeated labels of padded label rows.
- ``compute_accidental_hits`` finds sampled candidates equal to a true
  class (for sampled losses) and ``all_candidate_sampler`` "samples" every
  class, with expected counts of 1.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     ids = fb.SparseTensor([[0, 0], [0, 1], [1, 0]], [0, 2, 1], [2, 2])
    ...     params = fb.constant([[1.0], [10.0], [100.0]])
    ...     s.run(fb.nn.embedding_lookup_sparse(params, ids, None, combiner="sum")).tolist()
    [[101.0], [10.0]]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowbook.framework import dtypes
from flowbook.framework.graph import name_scope
from flowbook.framework.registry import NOT_DIFFERENTIABLE, Out, op
from flowbook.framework.tensor import Tensor
from flowbook.ops._builder import make
from flowbook.ops.array import array_ops
from flowbook.ops.array.constant_op import convert_to_tensor
from flowbook.ops.array.set_ops import unique
from flowbook.ops.io.example_ops import SparseTensor
from flowbook.ops.math import math_ops
from flowbook.ops.math.scan_ops import cumsum
from flowbook.ops.math.segment_ops import segment_sum
from flowbook.ops.nn.embedding_ops import embedding_lookup
from flowbook.ops.sparse.sparse_ops import (
    as_sparse,
    sparse_fill_empty_rows,
    sparse_reshape,
    sparse_retain,
)
from flowbook.ops.state.scatter_ops import gather_nd, scatter_nd

__all__ = [
    "all_candidate_sampler",
    "collapse_repeated",
    "compute_accidental_hits",
    "ctc_greedy_decoder",
    "embedding_lookup_sparse",
    "safe_embedding_lookup_sparse",
]


def embedding_lookup_sparse(
    params: Any,
    sp_ids: Any,
    sp_weights: Any,
    partition_strategy: str = "mod",
    name: str | None = None,
    combiner: str | None = None,
    max_norm: Any = None,
) -> Tensor:
    """Per row of ``sp_ids``: its ids' embeddings combined (``sum``, ``mean``, ``sqrtn``)."""
    combiner = combiner or "mean"
    if combiner not in ("sum", "mean", "sqrtn"):
        raise ValueError(f"combiner must be one of 'mean', 'sqrtn' or 'sum', got {combiner!r}")
    with name_scope(name, "embedding_lookup_sparse"):
        ids = as_sparse(sp_ids)
        segments = math_ops.cast(ids.indices[:, 0], dtypes.int32)
        distinct, where_in = unique(ids.values)
        rows = embedding_lookup(params, distinct, partition_strategy, max_norm=max_norm)
        rows = array_ops.gather(rows, where_in)
        if sp_weights is None:
            weights = array_ops.ones_like(ids.values, dtype=rows.dtype)
        else:
            weights = math_ops.cast(as_sparse(sp_weights).values, rows.dtype)
        rank = rows.shape.ndims or 2
        column = array_ops.reshape(weights, [-1] + [1] * (rank - 1))
        total = segment_sum(rows * column, segments)
        if combiner == "sum":
            return total
        if combiner == "mean":
            scale = segment_sum(weights, segments)
        else:
            scale = math_ops.sqrt(segment_sum(weights * weights, segments))
        if sp_weights is None:  # TF's sparse_segment_mean/sqrt_n: an empty row gives 0, not 0/0
            scale = math_ops.maximum(scale, array_ops.ones_like(scale))
        return total / array_ops.reshape(scale, [-1] + [1] * (rank - 1))


def safe_embedding_lookup_sparse(
    embedding_weights: Any,
    sparse_ids: Any,
    sparse_weights: Any = None,
    combiner: str = "mean",
    default_id: Any = None,
    name: str | None = None,
    partition_strategy: str = "div",
    max_norm: Any = None,
) -> Tensor:
    """``embedding_lookup_sparse`` that drops invalid ids and fills empty rows.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     ids = fb.SparseTensor([[0, 0], [0, 1], [2, 0]], [1, -1, 0], [3, 2])
    ...     s.run(fb.nn.safe_embedding_lookup_sparse(fb.constant([[1.0], [3.0]]), ids)).tolist()
    [[3.0], [0.0], [1.0]]
    """
    with name_scope(name, "embedding_lookup"):
        ids = as_sparse(sparse_ids)
        outer = ids.dense_shape[:-1]
        flat_shape = array_ops.stack([math_ops.reduce_prod(outer), ids.dense_shape[-1]])
        ids = sparse_reshape(ids, flat_shape)
        weights = (
            None
            if sparse_weights is None
            else sparse_reshape(as_sparse(sparse_weights), flat_shape)
        )
        keep = math_ops.greater_equal(ids.values, 0)
        if weights is not None:
            keep = math_ops.logical_and(keep, math_ops.greater(weights.values, 0))
            weights = sparse_retain(weights, keep)
        ids = sparse_retain(ids, keep)
        ids, empty = sparse_fill_empty_rows(ids, default_id or 0)
        if weights is not None:
            weights, _ = sparse_fill_empty_rows(weights, 1.0)
        out = embedding_lookup_sparse(
            embedding_weights,
            ids,
            weights,
            partition_strategy,
            combiner=combiner,
            max_norm=max_norm,
        )
        if default_id is None:
            filled = array_ops.reshape(empty, [-1] + [1] * ((out.shape.ndims or 2) - 1))
            out = out * math_ops.cast(math_ops.logical_not(filled), out.dtype)  # empty rows: 0
        dim = array_ops.shape(out)[1:]
        return array_ops.reshape(
            out, array_ops.concat([math_ops.cast(outer, dtypes.int32), dim], 0)
        )


# ---------------------------------------------------------- CTC greedy decoder
def _greedy_infer(
    inputs: Tensor, sequence_length: Tensor, merge_repeated: bool, blank_index: int
) -> list[Out]:
    s = inputs._shape
    if s is not None and len(s) != 3:
        raise ValueError(f"inputs must be [max_time, batch, classes], got shape {list(s)}")
    batch = None if s is None else s[1]
    return [
        Out(dtypes.int64, (None, 2)),
        Out(dtypes.int64, (None,)),
        Out(dtypes.int64, (2,)),
        Out(inputs.dtype, (batch, 1)),
    ]


def _greedy(
    xp: Any, inputs: Any, sequence_length: Any, merge_repeated: bool, blank_index: int
) -> Any:
    x = np.asarray(inputs)
    blank = blank_index if blank_index >= 0 else x.shape[2] + blank_index
    best, neg = x.argmax(2), -np.take_along_axis(x, x.argmax(2)[..., None], 2)[..., 0]
    rows, score = [], np.zeros((x.shape[1], 1), x.dtype)
    for b in range(x.shape[1]):
        n = int(sequence_length[b])
        score[b, 0] = neg[:n, b].sum()
        labels, prev = [], -1
        for c in best[:n, b].tolist():
            if c != blank and not (merge_repeated and c == prev):
                labels.append(c)
            prev = c
        rows.append(labels)
    indices = [(b, t) for b, labels in enumerate(rows) for t in range(len(labels))]
    values = [c for labels in rows for c in labels]
    shape = [x.shape[1], max((len(r) for r in rows), default=0)]
    return (
        np.asarray(indices, np.int64).reshape(-1, 2),
        np.asarray(values, np.int64),
        np.asarray(shape, np.int64),
        score,
    )


op(
    "CTCGreedyDecoder",
    ("inputs", "sequence_length"),
    infer=_greedy_infer,
    attrs=("merge_repeated", "blank_index"),
    kernel=_greedy,
    host_only=True,
    grad=NOT_DIFFERENTIABLE,
)


def ctc_greedy_decoder(
    inputs: Any, sequence_length: Any, merge_repeated: bool = True, blank_index: int | None = None
) -> tuple[list[SparseTensor], Tensor]:
    """Best path decoding: ([SparseTensor of labels], -sum of the best logits [batch, 1]).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     logits = fb.one_hot([[0], [0], [2], [1]], 3)  # time 4, batch 1, blank = class 2
    ...     (decoded,), _ = fb.nn.ctc_greedy_decoder(logits, [4])
    ...     s.run(decoded).values.tolist()
    [0, 1]
    """
    x = convert_to_tensor(inputs, name="inputs")
    lengths = convert_to_tensor(sequence_length, dtype=dtypes.int32, name="sequence_length")
    attrs = {
        "merge_repeated": bool(merge_repeated),
        "blank_index": -1 if blank_index is None else int(blank_index),
    }
    op = make("CTCGreedyDecoder", [x, lengths], attrs, name="CTCGreedyDecoder")
    i, v, s, score = op.outputs
    return [SparseTensor(i, v, s)], score


def collapse_repeated(labels: Any, seq_length: Any, name: str | None = None) -> tuple:
    """Repeated labels in each padded row merged into one: (labels, new lengths).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     out, n = fb.nn.collapse_repeated([[1, 1, 2, 2, 0], [3, 3, 3, 0, 0]], [4, 3])
    ...     s.run(out).tolist(), s.run(n).tolist()
    ([[1, 2], [3, 0]], [2, 1])
    """
    with name_scope(name, "collapse_repeated_labels"):
        x = convert_to_tensor(labels, name="labels")
        n = convert_to_tensor(seq_length, dtype=dtypes.int32, name="seq_length")
        width = array_ops.shape(x)[1]
        inside = math_ops.less(array_ops.range(width)[None, :], n[:, None])
        changed = math_ops.not_equal(x[:, 1:], x[:, :-1])
        first = array_ops.ones_like(x[:, :1], dtype=dtypes.bool)
        keep = math_ops.logical_and(array_ops.concat([first, changed], 1), inside)
        new_len = math_ops.reduce_sum(math_ops.cast(keep, dtypes.int32), 1)
        slot = cumsum(math_ops.cast(keep, dtypes.int32), 1) - 1
        where = array_ops.where(keep)
        rows = math_ops.cast(where[:, 0], dtypes.int32)
        coords = array_ops.stack([rows, gather_nd(slot, where)], 1)
        shape = array_ops.stack([array_ops.shape(x)[0], math_ops.reduce_max(new_len)])
        return scatter_nd(coords, gather_nd(x, where), shape), new_len


def compute_accidental_hits(
    true_classes: Any,
    sampled_candidates: Any,
    num_true: int,
    seed: Any = None,
    name: str | None = None,
) -> tuple:
    """(rows, sampled positions, -FLT_MAX weights) where a sampled candidate is a true class.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     i, ids, w = fb.nn.compute_accidental_hits([[1], [4]], [4, 1, 7], 1)
    ...     s.run(i).tolist(), s.run(ids).tolist()
    ([0, 1], [1, 0])
    """
    with name_scope(name, "ComputeAccidentalHits"):
        true = convert_to_tensor(true_classes, dtype=dtypes.int64)
        sampled = convert_to_tensor(sampled_candidates, dtype=dtypes.int64)
        hits = array_ops.where(math_ops.equal(true[:, :, None], sampled[None, None, :]))
        weights = array_ops.fill(array_ops.shape(hits)[:1], np.float32(-np.finfo(np.float32).max))
        return math_ops.cast(hits[:, 0], dtypes.int32), hits[:, 2], weights


def all_candidate_sampler(
    true_classes: Any,
    num_true: int,
    num_sampled: int,
    unique: bool,
    seed: Any = None,
    name: str | None = None,
) -> tuple:
    """Every class ``0 .. num_sampled - 1`` as the sample, each expected once.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     sampled, t, e = fb.nn.all_candidate_sampler([[2]], 1, 3, True)
    ...     s.run(sampled).tolist(), s.run(t).tolist()
    ([0, 1, 2], [[1.0]])
    """
    with name_scope(name, "AllCandidateSampler"):
        true = convert_to_tensor(true_classes, dtype=dtypes.int64)
        sampled = math_ops.cast(array_ops.range(num_sampled), dtypes.int64)
        true_expected = array_ops.ones_like(true, dtype=dtypes.float32)
        return sampled, true_expected, array_ops.ones([num_sampled], dtypes.float32)
