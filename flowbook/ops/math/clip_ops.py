"""Clipping: by value, by norm, by global norm, by average norm; the global norm.

Every function is a composition of existing ops, written from TF1's
documented formulas, so the gradients come from those ops:

- ``clip_by_value(t, lo, hi)``: ``maximum(minimum(t, hi), lo)``;
- ``clip_by_norm(t, c, axes)``: ``t * c / maximum(l2norm(t, axes), c)``, with
  the norm of an all-zero ``t`` taken as 0 without a NaN in its gradient;
- ``global_norm(ts)``: ``sqrt(sum(sum(t ** 2) for t in ts))``, None entries skipped;
- ``clip_by_global_norm(ts, c)``: every ``t`` times ``c / max(global_norm, c)``
  (None entries stay None); a norm of inf or NaN makes every value NaN, as in TF;
- ``clip_by_average_norm(t, c)``: ``t * c / max(l2norm(t) / size(t), c)``.

    >>> import flowbook as fb
    >>> clipped, norm = fb.clip_by_global_norm([fb.constant([3.0, 4.0]), None], 1.0)
    >>> with fb.Session() as s:
    ...     s.run(clipped[0]).tolist(), float(s.run(norm))
    ([0.6000000238418579, 0.800000011920929], 5.0)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from flowbook.framework.graph import name_scope
from flowbook.framework.tensor import Tensor
from flowbook.ops._builder import tensor
from flowbook.ops.array import array_ops
from flowbook.ops.math import math_ops
from flowbook.ops.nn.loss_ops import l2_loss

__all__ = [
    "clip_by_average_norm",
    "clip_by_global_norm",
    "clip_by_norm",
    "clip_by_value",
    "global_norm",
]


def clip_by_value(
    t: Any, clip_value_min: Any, clip_value_max: Any, name: str | None = None
) -> Tensor:
    """``t`` with every value below ``clip_value_min`` or above ``clip_value_max`` clipped.

    >>> import flowbook as fb
    >>> with fb.Session() as s:
    ...     s.run(fb.clip_by_value([-2.0, 0.5, 3.0], -1.0, 1.0)).tolist()
    [-1.0, 0.5, 1.0]
    """
    with name_scope(name, "clip_by_value") as scope:
        t = tensor(t, name="t")
        lo = tensor(clip_value_min, dtype=t.dtype, name="clip_value_min")
        hi = tensor(clip_value_max, dtype=t.dtype, name="clip_value_max")
        return math_ops.maximum(math_ops.minimum(t, hi), lo, name=scope)


def _safe_norm(sum_sq: Tensor) -> Tensor:
    """sqrt(sum_sq), whose gradient is 0 (not NaN) where sum_sq is 0."""
    positive = math_ops.greater(sum_sq, 0.0)
    safe = array_ops.where(positive, sum_sq, array_ops.ones_like(sum_sq))
    return array_ops.where(positive, math_ops.sqrt(safe), sum_sq)


def clip_by_norm(t: Any, clip_norm: Any, axes: Any = None, name: str | None = None) -> Tensor:
    """``t * clip_norm / max(||t||, clip_norm)``, the L2 norm over ``axes`` (all by default).

    >>> import flowbook as fb
    >>> with fb.Session() as s:
    ...     s.run(fb.clip_by_norm([3.0, 4.0], 1.0)).tolist()
    [0.6000000238418579, 0.800000011920929]
    """
    with name_scope(name, "clip_by_norm") as scope:
        t = tensor(t, name="t")
        c = tensor(clip_norm, dtype=t.dtype, name="clip_norm")
        if isinstance(axes, tuple):
            axes = list(axes)
        sum_sq = math_ops.reduce_sum(math_ops.multiply(t, t), axes, keepdims=True)
        norm = _safe_norm(sum_sq)
        scaled = math_ops.multiply(t, c)
        return array_ops.identity(math_ops.divide(scaled, math_ops.maximum(norm, c)), name=scope)


def _present(t_list: Any, fn: str) -> list[Tensor | None]:
    if isinstance(t_list, str | Tensor) or not isinstance(t_list, Sequence):
        raise TypeError(f"{fn}: t_list should be a sequence, got {type(t_list).__name__}")
    return [None if t is None else tensor(t) for t in t_list]


def global_norm(t_list: Any, name: str | None = None) -> Tensor:
    """sqrt(sum of the squares of every value of every tensor); None entries are skipped.

    >>> import flowbook as fb
    >>> with fb.Session() as s:
    ...     float(s.run(fb.global_norm([fb.constant([3.0]), None, fb.constant([[4.0]])])))
    5.0
    """
    ts = [t for t in _present(t_list, "global_norm") if t is not None]
    with name_scope(name, "global_norm") as scope:
        if not ts:
            return array_ops.identity(tensor(0.0), name=scope)
        halves = [l2_loss(t) for t in ts]  # sum(t ** 2) / 2 each
        dtype = halves[0].dtype
        half = math_ops.reduce_sum(array_ops.stack([math_ops.cast(h, dtype) for h in halves]))
        return math_ops.sqrt(math_ops.multiply(half, 2.0), name=scope)


def clip_by_global_norm(
    t_list: Any, clip_norm: Any, use_norm: Any = None, name: str | None = None
) -> tuple[list[Tensor | None], Tensor]:
    """Scale every tensor by ``clip_norm / max(global_norm, clip_norm)``: (clipped list, norm).

    >>> import flowbook as fb
    >>> ts = [fb.constant([6.0]), fb.constant([8.0])]
    >>> clipped, norm = fb.clip_by_global_norm(ts, 5.0)
    >>> with fb.Session() as s:
    ...     [v.tolist() for v in s.run(clipped)], float(s.run(norm))
    ([[3.0], [4.0]], 10.0)
    """
    ts = _present(t_list, "clip_by_global_norm")
    with name_scope(name, "clip_by_global_norm"):
        norm = global_norm(ts) if use_norm is None else tensor(use_norm, name="use_norm")
        c = tensor(clip_norm, dtype=norm.dtype, name="clip_norm")
        finite_scale = math_ops.multiply(
            c, math_ops.minimum(math_ops.reciprocal(norm), math_ops.reciprocal(c))
        )
        # norm - norm is 0, or NaN where the norm is inf or NaN: then every value is NaN
        scale = math_ops.add(finite_scale, math_ops.subtract(norm, norm))
        clipped: list[Tensor | None] = []
        for i, t in enumerate(ts):
            if t is None:
                clipped.append(None)
                continue
            s = scale if t.dtype is scale.dtype else math_ops.cast(scale, t.dtype)
            clipped.append(array_ops.identity(math_ops.multiply(t, s), name=f"clip_{i}"))
        return clipped, norm


def clip_by_average_norm(t: Any, clip_norm: Any, name: str | None = None) -> Tensor:
    """``t * clip_norm / max(||t|| / size(t), clip_norm)``: clip by the L2 norm per element.

    >>> import flowbook as fb
    >>> with fb.Session() as s:
    ...     s.run(fb.clip_by_average_norm([3.0, 4.0], 2.0)).tolist()  # ||t|| / 2 = 2.5 > 2
    [2.4000000953674316, 3.200000047683716]
    """
    with name_scope(name, "clip_by_average_norm") as scope:
        t = tensor(t, name="t")
        c = tensor(clip_norm, dtype=t.dtype, name="clip_norm")
        n = math_ops.cast(array_ops.size(t), t.dtype)
        inv_norm = math_ops.rsqrt(math_ops.reduce_sum(math_ops.multiply(t, t)))
        factor = math_ops.minimum(math_ops.multiply(inv_norm, n), math_ops.reciprocal(c))
        return math_ops.multiply(t, math_ops.multiply(c, factor), name=scope)
