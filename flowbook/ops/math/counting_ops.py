"""Counting and searching: Bincount, HistogramFixedWidth, LowerBound/UpperBound
(``searchsorted``) and UnravelIndex.

Their outputs are integers, so none is differentiable (as in TF).  Bincount's
``size`` and HistogramFixedWidth's ``nbins`` are read on the host; TF1's
``bincount`` works the size out in the graph (the largest value plus one,
kept within ``minlength``/``maxlength``), as TF does.  The search ops take
each row of ``sorted_inputs`` with the same row of ``values`` (both 2-D;
``searchsorted`` reshapes N-d arguments to rows and back).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.searchsorted([[1, 3, 5]], [[0, 3, 6]], side="right")).tolist()
    [[0, 2, 3]]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowbook.framework import dtypes
from flowbook.framework.graph import name_scope
from flowbook.framework.registry import NOT_DIFFERENTIABLE, Out, op
from flowbook.framework.tensor import Tensor
from flowbook.framework.tensor_shape import compatible, fmt
from flowbook.ops._builder import make1, same_dtype, tensor
from flowbook.ops.array import array_ops
from flowbook.ops.array.cast_ops import cast
from flowbook.ops.math.elementwise import REAL, check_dtype
from flowbook.ops.math.elementwise_ops import add, maximum, minimum
from flowbook.ops.math.reduction_ops import reduce_max

__all__ = ["bincount", "histogram_fixed_width", "searchsorted", "unravel_index"]

_IDX = frozenset({dtypes.int32, dtypes.int64})


def _bincount(xp: Any, arr: Any, size: Any, weights: Any) -> Any:
    n = int(size)
    if n < 0:
        raise ValueError(f"size must be non-negative, got {n}")
    if arr.size and int(arr.min()) < 0:
        raise ValueError("arr must be non-negative")
    flat = arr.ravel()
    keep = flat < n
    w = None if weights.size == 0 else weights.ravel()[keep]
    out = xp.bincount(flat[keep], weights=w, minlength=n)[:n]
    return out.astype(weights.dtype)


def _bincount_infer(arr: Tensor, size: Tensor, weights: Tensor) -> Out:
    check_dtype(arr.dtype, frozenset({dtypes.int32}), "arr")
    check_dtype(weights.dtype, REAL, "weights")
    return Out(weights.dtype, (None,))


def _histogram(xp: Any, values: Any, value_range: Any, nbins: Any, dtype: Any) -> Any:
    n = int(nbins)
    if n <= 0:
        raise ValueError(f"nbins should be a positive number, but got '{n}'")
    lo, hi = value_range[0], value_range[1]
    scaled = (values.ravel().astype(xp.float64) - lo) / (hi - lo) * n
    bins = xp.clip(xp.floor(scaled), 0, n - 1).astype(xp.int64)  # outliers go to the ends
    return xp.bincount(bins, minlength=n).astype(dtype.np)


def _histogram_infer(values: Tensor, value_range: Tensor, nbins: Tensor, dtype: Any) -> Out:
    same_dtype("HistogramFixedWidth", ("values", "value_range"), values, value_range)
    check_dtype(values.dtype, REAL, "values")
    if not compatible(value_range._shape, (2,)):
        raise ValueError(f"value_range must have shape [2], got {fmt(value_range._shape)}")
    return Out(dtype, (None,))


def _search(side: str) -> Any:
    def kernel(xp: Any, sorted_inputs: Any, values: Any, out_type: Any) -> Any:
        rows = [xp.searchsorted(s, v, side=side) for s, v in zip(sorted_inputs, values)]
        if not rows:
            return xp.zeros(values.shape, out_type.np)
        return xp.stack(rows).astype(out_type.np)

    return kernel


def _search_infer(sorted_inputs: Tensor, values: Tensor, out_type: Any) -> Out:
    same_dtype("LowerBound", ("sorted_inputs", "values"), sorted_inputs, values)
    check_dtype(out_type, _IDX, "out_type")
    for name, t in (("sorted_inputs", sorted_inputs), ("values", values)):
        if t._shape is not None and len(t._shape) != 2:
            raise ValueError(f"{name} must be 2-D, got {name}{fmt(t._shape)}")
    return Out(out_type, values._shape)


def _unravel_infer(indices: Tensor, dims: Tensor) -> Out:
    dt = same_dtype("UnravelIndex", ("indices", "dims"), indices, dims)
    check_dtype(dt, _IDX, "indices")
    s, d = indices._shape, dims._shape
    n = None if d is None else d[0]
    return Out(dt, None if s is None else (n, *s))


def _unravel(xp: Any, indices: Any, dims: Any) -> Any:
    shape = tuple(int(v) for v in np.ravel(dims))
    total = int(np.prod(shape))
    if indices.size and (int(indices.min()) < 0 or int(indices.max()) >= total):
        raise ValueError(f"index out of range for dims {list(shape)}")
    return xp.stack(xp.unravel_index(indices, shape)).astype(indices.dtype)


op(
    "Bincount",
    ("arr", "size", "weights"),
    (),
    _bincount_infer,
    _bincount,
    host_inputs=(1,),
    grad=NOT_DIFFERENTIABLE,
)
op(
    "HistogramFixedWidth",
    ("values", "value_range", "nbins"),
    ("dtype",),
    _histogram_infer,
    _histogram,
    host_inputs=(2,),
    grad=NOT_DIFFERENTIABLE,
)
op(
    "LowerBound",
    ("sorted_inputs", "values"),
    ("out_type",),
    _search_infer,
    _search("left"),
    host_inputs=(),
    grad=NOT_DIFFERENTIABLE,
)
op(
    "UpperBound",
    ("sorted_inputs", "values"),
    ("out_type",),
    _search_infer,
    _search("right"),
    host_inputs=(),
    grad=NOT_DIFFERENTIABLE,
)
op(
    "UnravelIndex",
    ("indices", "dims"),
    (),
    _unravel_infer,
    _unravel,
    host_inputs=(1,),
    grad=NOT_DIFFERENTIABLE,
)


def bincount(
    arr: Any,
    weights: Any = None,
    minlength: Any = None,
    maxlength: Any = None,
    dtype: Any = dtypes.int32,
) -> Tensor:
    """How often each value 0, 1, ... occurs in the non-negative int32 ``arr`` (or the sum of
    its ``weights``); the length is the largest value plus one, within min/maxlength.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.bincount([1, 1, 3], minlength=5)).tolist()
    [0, 2, 0, 1, 0]
    """
    with name_scope(None, "bincount", [arr, weights]):
        a = tensor(arr, dtype=dtypes.int32)
        padded = array_ops.concat([array_ops.reshape(a, [-1]), [-1]], 0)  # empty arr: size 0
        size = add(reduce_max(padded), 1)
        if minlength is not None:
            size = maximum(size, tensor(minlength, dtype=dtypes.int32))
        if maxlength is not None:
            size = minimum(size, tensor(maxlength, dtype=dtypes.int32))
        dt = dtypes.as_dtype(dtype)
        w = tensor(np.zeros(0, dt.np)) if weights is None else cast(tensor(weights), dt)
        return make1("Bincount", (a, size, w))


def histogram_fixed_width(
    values: Any,
    value_range: Any,
    nbins: Any = 100,
    dtype: Any = dtypes.int32,
    name: str | None = None,
) -> Tensor:
    """Counts of ``values`` in ``nbins`` equal bins spanning ``value_range``; values outside the
    range count in the first or last bin.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.histogram_fixed_width([-1.0, 0.0, 1.5, 2.0, 5.0], [0.0, 5.0], 5)).tolist()
    [2, 1, 1, 0, 1]
    """
    v = tensor(values)
    attrs = {"dtype": dtypes.as_dtype(dtype)}
    r, n = tensor(value_range, dtype=v.dtype), tensor(nbins, dtype=dtypes.int32)
    return make1("HistogramFixedWidth", (v, r, n), attrs, name=name)


def searchsorted(
    sorted_sequence: Any,
    values: Any,
    side: str = "left",
    out_type: Any = dtypes.int32,
    name: str | None = None,
) -> Tensor:
    """Where each of ``values`` would go in ``sorted_sequence`` (along the last dim, row by row)
    to keep it sorted: before equal values (``side="left"``) or after them (``"right"``).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.searchsorted([1.0, 2.0, 4.0], [2.0, 3.0])).tolist()
    [1, 2]
    """
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right', got {side!r}")
    op_type = "LowerBound" if side == "left" else "UpperBound"
    with name_scope(name, "searchsorted", [sorted_sequence, values]) as scope:
        seq = tensor(sorted_sequence)
        v = tensor(values, dtype=seq.dtype)
        attrs = {"out_type": dtypes.as_dtype(out_type)}
        if seq._shape is not None and len(seq._shape) == 2 and v._shape and len(v._shape) == 2:
            return make1(op_type, (seq, v), attrs, name=scope)
        rows = lambda t: array_ops.reshape(t, [-1, array_ops.shape(t)[-1]])
        out = make1(op_type, (rows(seq), rows(v)), attrs)
        return array_ops.reshape(out, array_ops.shape(v), name=scope)


def unravel_index(indices: Any, dims: Any, name: str | None = None) -> Tensor:
    """The coordinates of flat ``indices`` in an array of shape ``dims``, one row per dim.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.unravel_index([5, 7], [3, 4])).tolist()
    [[1, 1], [1, 3]]
    """
    i = tensor(indices)
    return make1("UnravelIndex", (i, tensor(dims, dtype=i.dtype)), name=name)
