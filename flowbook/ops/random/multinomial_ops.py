"""Multinomial: draws of class indices from unnormalised log-probabilities (``tf.multinomial``,
``tf.random.categorical``).

A random op as those of :mod:`flowbook.ops.random.random_ops` (``resource="rng"``,
the seeds fixed when it is built by TF's rules), so two fresh sessions of a
seeded graph draw the same classes.  The kernel inverts the cumulative
distribution: the softmax of each row of ``logits`` (its maximum subtracted
first, so large logits do not overflow), then for each uniform draw the
number of cumulative probabilities below it.  ``num_samples`` is read on the
host.  Not differentiable, as in TF.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.multinomial([[-1e9, 0.0, -1e9]], 4, seed=1)).tolist()
    [[1, 1, 1, 1]]
"""

from __future__ import annotations

from typing import Any

from flowbook.framework import dtypes
from flowbook.framework.registry import NOT_DIFFERENTIABLE, Out, op
from flowbook.framework.tensor import Tensor
from flowbook.framework.tensor_shape import fmt
from flowbook.ops._builder import make1, tensor
from flowbook.ops.array.constant_op import constant_value
from flowbook.ops.math.elementwise import FLOAT, check_dtype
from flowbook.ops.random.random_ops import get_seed

__all__ = ["multinomial"]


def _infer(logits: Tensor, num_samples: Tensor, seed: int, seed2: int, output_dtype: Any) -> Out:
    check_dtype(logits.dtype, FLOAT, "logits")
    check_dtype(output_dtype, frozenset({dtypes.int32, dtypes.int64}), "output_dtype")
    s = logits._shape
    if s is not None and len(s) != 2:
        raise ValueError(f"logits must be 2-D [batch_size, num_classes], got logits{fmt(s)}")
    n = constant_value(num_samples)
    if n is not None and int(n) < 0:
        raise ValueError(f"num_samples must be >= 0, got {int(n)}")
    return Out(output_dtype, (None if s is None else s[0], None if n is None else int(n)))


def _multinomial(
    xp: Any, logits: Any, num_samples: Any, *, rng: Any, seed: int, seed2: int, output_dtype: Any
) -> Any:
    batch, classes = logits.shape
    if classes == 0:
        raise ValueError("logits has no classes to draw from")
    z = logits.astype(xp.float64)
    p = xp.exp(z - z.max(axis=1, keepdims=True))
    cdf = xp.cumsum(p, axis=1)
    u = rng.random((batch, int(num_samples))) * cdf[:, -1:]  # uniform on [0, total)
    drawn = (u[:, :, None] >= cdf[:, None, :]).sum(axis=2)
    return xp.minimum(drawn, classes - 1).astype(output_dtype.np)


op(
    "Multinomial",
    ("logits", "num_samples"),
    ("seed", "seed2", "output_dtype"),
    _infer,
    _multinomial,
    stateful=True,
    resource="rng",
    host_inputs=(1,),
    grad=NOT_DIFFERENTIABLE,
)


def multinomial(
    logits: Any,
    num_samples: Any,
    seed: int | None = None,
    name: str | None = None,
    output_dtype: Any = dtypes.int64,
) -> Tensor:
    """``num_samples`` class indices per row of ``logits`` ([batch, classes]), each drawn with
    probability softmax(logits).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.multinomial(fb.zeros([5, 3]), 7).shape.as_list()
    [5, 7]
    """
    s1, s2 = get_seed(seed)
    attrs = {"seed": s1 or 0, "seed2": s2 or 0, "output_dtype": dtypes.as_dtype(output_dtype)}
    n = tensor(num_samples, dtype=dtypes.int32)
    return make1("Multinomial", (tensor(logits), n), attrs, name=name)


def categorical(
    logits: Any,
    num_samples: Any,
    dtype: Any = None,
    seed: int | None = None,
    name: str | None = None,
) -> Tensor:
    """``tf.random.categorical``: :func:`multinomial` with the dtype argument named ``dtype``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.random.categorical([[0.0, 1.0]], 3, dtype=fb.int32).dtype
    tf.int32
    """
    return multinomial(logits, num_samples, seed, name, dtype or dtypes.int64)
