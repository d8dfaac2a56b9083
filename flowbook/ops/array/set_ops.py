"""Unique values and set differences of 1-d tensors: Unique, UniqueWithCounts and ListDiff.

Their outputs' lengths depend on the values, so ``infer`` says ``[?]``.
``Unique`` keeps TF's order: each value where it first occurs (not sorted,
as ``numpy.unique`` returns them), with ``idx`` mapping every input element
to its value's place in ``y``.  ``ListDiff`` (``setdiff1d``) keeps the
elements of ``x`` not in ``y``, in order, with their indices.  None is
differentiable (TF registers no gradient for them).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     y, idx = s.run(fb.unique([4, 1, 4, 2, 1]))
    >>> y.tolist(), idx.tolist()
    ([4, 1, 2], [0, 1, 0, 2, 1])
"""

from __future__ import annotations

from typing import Any, NamedTuple

from flowbook.framework import dtypes
from flowbook.framework.registry import NOT_DIFFERENTIABLE, Out, op
from flowbook.framework.tensor import Tensor
from flowbook.framework.tensor_shape import fmt
from flowbook.ops._builder import make, same_dtype, tensor
from flowbook.ops.math.elementwise import check_dtype

__all__ = ["setdiff1d", "unique", "unique_with_counts"]

_IDX = frozenset({dtypes.int32, dtypes.int64})


class UniqueOutput(NamedTuple):
    """``unique``'s result: the distinct values and each element's index into them."""

    y: Tensor
    idx: Tensor


class UniqueWithCountsOutput(NamedTuple):
    """``unique_with_counts``'s result: as ``unique``'s, and how often each value occurs."""

    y: Tensor
    idx: Tensor
    count: Tensor


class SetDiffOutput(NamedTuple):
    """``setdiff1d``'s result: the kept values and their indices in ``x``."""

    out: Tensor
    idx: Tensor


def _unique_in_order(xp: Any, x: Any, out_idx: Any) -> tuple[Any, Any, Any]:
    values, first, inverse, counts = xp.unique(
        x, return_index=True, return_inverse=True, return_counts=True
    )
    order = xp.argsort(first)  # the values by where they first occur (all distinct)
    place = xp.empty_like(order)
    place[order] = xp.arange(order.shape[0])
    idx = place[inverse.reshape(-1)].astype(out_idx.np)
    return values[order], idx, counts[order].astype(out_idx.np)


def _vector(name: str, t: Tensor) -> None:
    if t._shape is not None and len(t._shape) != 1:
        raise ValueError(f"{name} must be a vector, got {name}{fmt(t._shape)}")


def _unique_infer(x: Tensor, out_idx: Any = dtypes.int32, counts: bool = False) -> list[Out]:
    _vector("x", x)
    check_dtype(out_idx, _IDX, "out_idx")
    n = x._shape[0] if x._shape is not None else None
    outs = [Out(x.dtype, (None,)), Out(out_idx, (n,))]
    return [*outs, Out(out_idx, (None,))] if counts else outs


def _list_diff(xp: Any, x: Any, y: Any, out_idx: Any) -> tuple[Any, Any]:
    keep = ~xp.isin(x, y)
    return x[keep], xp.nonzero(keep)[0].astype(out_idx.np)


def _list_diff_infer(x: Tensor, y: Tensor, out_idx: Any = dtypes.int32) -> list[Out]:
    dt = same_dtype("ListDiff", ("x", "y"), x, y)
    _vector("x", x)
    _vector("y", y)
    check_dtype(out_idx, _IDX, "out_idx")
    return [Out(dt, (None,)), Out(out_idx, (None,))]


op(
    "Unique",
    ("x",),
    ("out_idx",),
    _unique_infer,
    lambda xp, x, out_idx=dtypes.int32: _unique_in_order(xp, x, out_idx)[:2],
    grad=NOT_DIFFERENTIABLE,
    num_outputs=2,
)
op(
    "UniqueWithCounts",
    ("x",),
    ("out_idx",),
    lambda x, out_idx=dtypes.int32: _unique_infer(x, out_idx, counts=True),
    _unique_in_order,
    grad=NOT_DIFFERENTIABLE,
    num_outputs=3,
)
op(
    "ListDiff",
    ("x", "y"),
    ("out_idx",),
    _list_diff_infer,
    _list_diff,
    grad=NOT_DIFFERENTIABLE,
    num_outputs=2,
)


def unique(x: Any, out_idx: Any = dtypes.int32, name: str | None = None) -> UniqueOutput:
    """The distinct values of a vector in first-seen order, and each element's index into them.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.unique([3, 3, 1]).y).tolist()
    [3, 1]
    """
    attrs = {"out_idx": dtypes.as_dtype(out_idx)}
    return UniqueOutput(*make("Unique", (tensor(x),), attrs, name=name).outputs)


def unique_with_counts(
    x: Any, out_idx: Any = dtypes.int32, name: str | None = None
) -> UniqueWithCountsOutput:
    """As :func:`unique`, with how many times each distinct value occurs.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.unique_with_counts([3, 3, 1]).count).tolist()
    [2, 1]
    """
    attrs = {"out_idx": dtypes.as_dtype(out_idx)}
    return UniqueWithCountsOutput(*make("UniqueWithCounts", (tensor(x),), attrs, name=name).outputs)


def setdiff1d(
    x: Any, y: Any, index_dtype: Any = dtypes.int32, name: str | None = None
) -> SetDiffOutput:
    """The elements of vector ``x`` that are not in ``y``, in order, and their indices in ``x``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     out, idx = s.run(fb.setdiff1d([1, 2, 3, 4], [2, 4]))
    >>> out.tolist(), idx.tolist()
    ([1, 3], [0, 2])
    """
    a = tensor(x)
    attrs = {"out_idx": dtypes.as_dtype(index_dtype)}
    op = make("ListDiff", (a, tensor(y, dtype=a.dtype)), attrs, name=name)
    return SetDiffOutput(*op.outputs)
