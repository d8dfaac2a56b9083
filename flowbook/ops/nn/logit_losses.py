"""Losses TF1 composes from existing ops: weighted sigmoid cross-entropy, log-Poisson.

Both are written as TF1's ``nn_impl.py`` documents them, so they get their
gradients from the ops they are built of:

- ``weighted_cross_entropy_with_logits``: with ``l = 1 + (pos_weight - 1) * z``,
  ``(1 - z) * x + l * (log(1 + exp(-|x|)) + max(-x, 0))``, stable for any ``x``;
- ``log_poisson_loss``: ``exp(c) - z * c`` for log-input ``c``; with
  ``compute_full_loss`` Stirling's term ``z * log(z) - z + 0.5 * log(2 * pi * z)``
  is added, except for ``0 <= z <= 1`` where it is zero.

    >>> import flowbook as fb
    >>> loss = fb.nn.log_poisson_loss(fb.constant([2.0]), fb.constant([0.0]))
    >>> with fb.Session() as s:
    ...     s.run(loss).tolist()
    [1.0]
"""

from __future__ import annotations

import math
from typing import Any

from flowbook.framework.graph import name_scope
from flowbook.framework.tensor import Tensor
from flowbook.framework.tensor_shape import compatible, fmt
from flowbook.ops._builder import tensor
from flowbook.ops.array import array_ops
from flowbook.ops.math import math_ops
from flowbook.ops.nn import nn_ops

__all__ = ["log_poisson_loss", "weighted_cross_entropy_with_logits"]


def _same_shape(fn: str, a: Tensor, b: Tensor) -> None:
    if not compatible(a._shape, b._shape):
        raise ValueError(
            f"{fn}: logits and targets must have the same shape "
            f"({fmt(a._shape)} vs {fmt(b._shape)})"
        )


def weighted_cross_entropy_with_logits(
    targets: Any, logits: Any, pos_weight: Any, name: str | None = None
) -> Tensor:
    """Sigmoid cross-entropy with the positive term weighted by ``pos_weight``.

    >>> import flowbook as fb
    >>> loss = fb.nn.weighted_cross_entropy_with_logits([1.0], [0.0], 3.0)
    >>> with fb.Session() as s:
    ...     round(float(s.run(loss)[0]), 4)  # 3 * log(2)
    2.0794
    """
    with name_scope(name, "logistic_loss") as scope:
        x = tensor(logits, name="logits")
        z = tensor(targets, dtype=x.dtype, name="targets")
        _same_shape("weighted_cross_entropy_with_logits", x, z)
        q = tensor(pos_weight, dtype=x.dtype, name="pos_weight")
        log_weight = math_ops.add(1.0, math_ops.multiply(math_ops.subtract(q, 1.0), z))
        softplus_neg_abs = math_ops.log1p(math_ops.exp(math_ops.negative(math_ops.abs(x))))
        tail = math_ops.add(softplus_neg_abs, nn_ops.relu(math_ops.negative(x)))
        return math_ops.add(
            math_ops.multiply(math_ops.subtract(1.0, z), x),
            math_ops.multiply(log_weight, tail),
            name=scope,
        )


def log_poisson_loss(
    targets: Any, log_input: Any, compute_full_loss: bool = False, name: str | None = None
) -> Tensor:
    """The negative log-likelihood of ``targets`` under a Poisson of rate ``exp(log_input)``.

    >>> import flowbook as fb
    >>> loss = fb.nn.log_poisson_loss([3.0], [0.5], compute_full_loss=True)
    >>> with fb.Session() as s:
    ...     round(float(s.run(loss)[0]), 4)
    1.9128
    """
    with name_scope(name, "log_poisson_loss") as scope:
        c = tensor(log_input, name="log_input")
        z = tensor(targets, dtype=c.dtype, name="targets")
        _same_shape("log_poisson_loss", c, z)
        result = math_ops.subtract(math_ops.exp(c), math_ops.multiply(c, z))
        if not compute_full_loss:
            return array_ops.identity(result, name=scope)
        stirling = math_ops.add(
            math_ops.subtract(math_ops.multiply(z, math_ops.log(z)), z),
            math_ops.multiply(0.5, math_ops.log(math_ops.multiply(2.0 * math.pi, z))),
        )
        ones = array_ops.ones_like(z)
        zeros = array_ops.zeros_like(z)
        small = math_ops.logical_and(math_ops.greater_equal(z, zeros), math_ops.less_equal(z, ones))
        return math_ops.add(result, array_ops.where(small, zeros, stirling), name=scope)
