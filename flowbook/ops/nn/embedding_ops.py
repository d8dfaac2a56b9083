"""Embedding lookups: rows of a parameter tensor, or of a list of shards, by id.

``embedding_lookup(params, ids)`` is ``gather(params, ids)`` when ``params``
is one tensor or variable.  When it is a list of ``P`` shards (TF's
partitioned variables), id ``i`` lives in one shard at one row, by the
``partition_strategy``:

- ``"mod"``: shard ``i % P``, row ``i // P``;
- ``"div"``: the ids split in contiguous blocks; with ``N`` rows in all,
  ``q, r = divmod(N, P)``, the first ``r`` shards hold ``q + 1`` ids each,
  the rest ``q``.

TF routes each id to its shard with ``DynamicPartition`` and puts the rows
back with ``DynamicStitch``; flowbook has neither, so each shard is looked
up for every id (ids of other shards read its row 0) and ``where`` keeps the
rows of the ids it holds; the sum over shards is the answer.  It costs ``P``
gathers instead of one, and needs no new op.  ``max_norm`` clips each
looked-up embedding to that L2 norm, as TF's does.

Gradients: flowbook has no ``IndexedSlices``, so the gradient into
``params`` (or each shard) is ``GatherV2``'s dense gradient: a tensor of
the shard's shape, zero except at the looked-up rows, where the gradients
of repeated ids add up (what TF's ``IndexedSlices`` sums to when made dense).

    >>> import flowbook as fb
    >>> shards = [fb.constant([[0.0], [2.0]]), fb.constant([[1.0], [3.0]])]  # "mod": ids 0,2 | 1,3
    >>> with fb.Session() as s:
    ...     s.run(fb.nn.embedding_lookup(shards, [3, 0, 2])).ravel().tolist()
    [3.0, 0.0, 2.0]
"""

from __future__ import annotations

from typing import Any

from flowbook.framework import dtypes
from flowbook.framework.graph import name_scope
from flowbook.framework.tensor import Tensor
from flowbook.ops._builder import tensor
from flowbook.ops.array import array_ops
from flowbook.ops.math import math_ops
from flowbook.ops.math.clip_ops import clip_by_norm

__all__ = ["embedding_lookup"]


def _shards(params: Any) -> list[Tensor]:
    if params is None:
        raise ValueError("Need at least one param")
    if isinstance(params, list | tuple):
        if not params:
            raise ValueError("Need at least one param")
        return [tensor(p, name="params") for p in params]
    return [tensor(params, name="params")]


def _rows(shards: list[Tensor], dtype: dtypes.DType) -> Any:
    """The number of ids in all: a Python int when every shard's first dim is known."""
    dims = [None if p._shape is None or not p._shape else p._shape[0] for p in shards]
    if all(d is not None for d in dims):
        return sum(dims)
    return math_ops.add_n([array_ops.shape(p, out_type=dtype)[0] for p in shards])


def _route(ids: Tensor, shards: list[Tensor], strategy: str) -> tuple[Tensor, Tensor]:
    """(the shard of each id, its row in that shard), both shaped like ``ids``."""
    n = len(shards)
    if strategy == "mod":
        return math_ops.floormod(ids, n), math_ops.floordiv(ids, n)
    if strategy != "div":
        raise ValueError(f"Unrecognized partition strategy: {strategy}")
    total = _rows(shards, ids.dtype)
    per = math_ops.floordiv(total, n) if isinstance(total, Tensor) else total // n
    extras = math_ops.floormod(total, n) if isinstance(total, Tensor) else total % n
    per, extras = tensor(per, dtype=ids.dtype), tensor(extras, dtype=ids.dtype)
    big = math_ops.add(per, 1)  # the first ``extras`` shards hold one id more
    shard = math_ops.maximum(
        math_ops.floordiv(ids, big), math_ops.floordiv(math_ops.subtract(ids, extras), per)
    )
    in_big = math_ops.less(shard, extras)
    row = array_ops.where(
        in_big, math_ops.floormod(ids, big), math_ops.floormod(math_ops.subtract(ids, extras), per)
    )
    return shard, row


def _clip(result: Tensor, ids: Tensor, max_norm: Any) -> Tensor:
    """Each embedding (the dims after the ids' dims) clipped to L2 norm ``max_norm``."""
    if max_norm is None:
        return result
    if ids._shape is not None and result._shape is not None:
        axes: Any = list(range(len(ids._shape), len(result._shape)))
    else:
        axes = math_ops.range(array_ops.rank(ids), array_ops.rank(result))
    return clip_by_norm(result, max_norm, axes=axes)


def embedding_lookup(
    params: Any,
    ids: Any,
    partition_strategy: str = "mod",
    name: str | None = None,
    validate_indices: bool = True,
    max_norm: Any = None,
) -> Tensor:
    """The rows of ``params`` (a tensor, a variable, or a list of shards) at ``ids``.

    The result has shape ``ids.shape + params.shape[1:]``; ``validate_indices``
    is ignored, as in TF1.

    >>> import flowbook as fb
    >>> emb = fb.Variable([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]])
    >>> rows = fb.nn.embedding_lookup(emb, [[2], [0]])
    >>> with fb.Session() as s:
    ...     s.run(emb.initializer)
    ...     s.run(rows).tolist()
    [[[2.0, 2.0]], [[0.0, 0.0]]]
    """
    with name_scope(name, "embedding_lookup"):
        shards = _shards(params)
        ids = tensor(ids, name="ids")
        if not ids.dtype.is_integer:
            raise TypeError(f"ids must be int32 or int64, got {ids.dtype.name}")
        if len(shards) == 1:
            return _clip(array_ops.gather(shards[0], ids), ids, max_norm)
        flat = array_ops.reshape(ids, [-1])
        shard, row = _route(flat, shards, partition_strategy)
        zero_rows = array_ops.zeros_like(row)
        parts = []
        for i, p in enumerate(shards):
            mine = math_ops.equal(shard, i)
            rows = array_ops.gather(p, array_ops.where(mine, row, zero_rows))
            parts.append(array_ops.where(mine, rows, array_ops.zeros_like(rows)))
        found = math_ops.add_n(parts)
        inner = array_ops.shape(shards[0])[1:]
        shape = array_ops.concat([array_ops.shape(ids), inner], 0)
        result = array_ops.reshape(found, shape)
        return _clip(result, ids, max_norm)
