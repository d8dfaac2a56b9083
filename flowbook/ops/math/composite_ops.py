"""TF1's ``tf.math`` functions that are compositions of ops flowbook already has.

Nothing here declares a kernel: ``xlogy``, ``xdivy``, ``xlog1py`` and
``multiply_no_nan`` replace the operand that would give NaN with a harmless
one *before* the arithmetic (``where_v2``), so both the value and the
gradient are 0 where TF's are; the statistics, ``polyval`` (Horner's rule),
``cumulative_logsumexp`` (shifted by the stopped maximum along the axis),
``unsorted_segment_sqrt_n`` and ``confusion_matrix`` (a ``scatter_nd`` of
ones) are built from the wrappers, so their gradients come for free.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.math.xlogy([0.0, 2.0], [0.0, 1.0])).tolist()
    [0.0, 0.0]
"""

from __future__ import annotations

from typing import Any

from flowbook.framework import dtypes
from flowbook.framework.graph import name_scope
from flowbook.framework.tensor import Tensor
from flowbook.ops._builder import operands, tensor
from flowbook.ops.array import array_ops
from flowbook.ops.array.cast_ops import cast
from flowbook.ops.array.select_v2_ops import where_v2
from flowbook.ops.array.selection_ops import unsorted_segment_sum
from flowbook.ops.array.transpose_ops import transpose
from flowbook.ops.math.complex_ops import real
from flowbook.ops.math.elementwise_ops import (
    add,
    conj,
    div_no_nan,
    equal,
    exp,
    log,
    log1p,
    maximum,
    multiply,
    negative,
    realdiv,
    sqrt,
    square,
    subtract,
)
from flowbook.ops.math.reduction_ops import add_n, reduce_max, reduce_mean, reduce_sum
from flowbook.ops.math.scan_ops import cumsum
from flowbook.ops.math.sort_ops import top_k
from flowbook.ops.state.scatter_ops import scatter_nd

__all__ = [
    "accumulate_n",
    "approx_max_k",
    "approx_min_k",
    "confusion_matrix",
    "cumulative_logsumexp",
    "multiply_no_nan",
    "polyval",
    "reciprocal_no_nan",
    "reduce_euclidean_norm",
    "reduce_std",
    "reduce_variance",
    "unsorted_segment_sqrt_n",
    "xdivy",
    "xlog1py",
    "xlogy",
]


def _where_x_zero(x: Tensor, y: Tensor, safe: float) -> Tensor:
    """``y``, with ``safe`` wherever ``x`` is 0 (broadcast to both)."""
    zero = equal(x, array_ops.zeros_like(x))
    return where_v2(zero, array_ops.ones_like(y) * safe, y)


def xlogy(x: Any, y: Any, name: str | None = None) -> Tensor:
    """x * log(y), and 0 wherever x is 0 (even where y is 0).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.math.xlogy([0.0, 2.0], [0.0, 1.0])).tolist()
    [0.0, 0.0]
    """
    with name_scope(name, "xlogy"):
        x, y = operands(x, y)
        return multiply(x, log(_where_x_zero(x, y, 1.0)))


def xlog1py(x: Any, y: Any, name: str | None = None) -> Tensor:
    """x * log1p(y), and 0 wherever x is 0.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.math.xlog1py([0.0, 1.0], [-1.0, 0.0])).tolist()
    [0.0, 0.0]
    """
    with name_scope(name, "xlog1py"):
        x, y = operands(x, y)
        return multiply(x, log1p(_where_x_zero(x, y, 0.0)))


def xdivy(x: Any, y: Any, name: str | None = None) -> Tensor:
    """x / y, and 0 wherever x is 0 (even where y is 0).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.math.xdivy([0.0, 3.0], [0.0, 2.0])).tolist()
    [0.0, 1.5]
    """
    with name_scope(name, "xdivy"):
        x, y = operands(x, y)
        return realdiv(x, _where_x_zero(x, y, 1.0))


def multiply_no_nan(x: Any, y: Any, name: str | None = None) -> Tensor:
    """x * y, and 0 wherever y is 0 (even where x is inf or NaN).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.math.multiply_no_nan([float("inf"), 2.0], [0.0, 3.0])).tolist()
    [0.0, 6.0]
    """
    with name_scope(name, "multiply_no_nan"):
        x, y = operands(x, y)
        return multiply(_where_x_zero(y, x, 0.0), y)


def reciprocal_no_nan(x: Any, name: str | None = None) -> Tensor:
    """1 / x, and 0 wherever x is 0.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.math.reciprocal_no_nan([0.0, 4.0])).tolist()
    [0.0, 0.25]
    """
    with name_scope(name, "reciprocal_no_nan"):
        x = tensor(x)
        return div_no_nan(array_ops.ones_like(x), x)


def reduce_variance(
    input_tensor: Any, axis: Any = None, keepdims: bool = False, name: str | None = None
) -> Tensor:
    """The (population) variance over ``axis``: mean of |x - mean(x)|**2.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.math.reduce_variance([[1.0, 3.0], [5.0, 9.0]], axis=1)).tolist()
    [1.0, 4.0]
    """
    with name_scope(name, "reduce_variance"):
        x = tensor(input_tensor)
        dev = subtract(x, reduce_mean(x, axis, keepdims=True))
        sq = real(multiply(dev, conj(dev))) if x.dtype.is_complex else square(dev)
        return reduce_mean(sq, axis, keepdims=keepdims)


def reduce_std(
    input_tensor: Any, axis: Any = None, keepdims: bool = False, name: str | None = None
) -> Tensor:
    """The (population) standard deviation over ``axis``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.math.reduce_std([[1.0, 3.0], [5.0, 9.0]], axis=1)).tolist()
    [1.0, 2.0]
    """
    with name_scope(name, "reduce_std"):
        return sqrt(reduce_variance(input_tensor, axis, keepdims))


def reduce_euclidean_norm(
    input_tensor: Any, axis: Any = None, keepdims: bool = False, name: str | None = None
) -> Tensor:
    """sqrt(sum(|x|**2)) over ``axis``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.math.reduce_euclidean_norm([[3.0, 4.0]], axis=1)).tolist()
    [5.0]
    """
    with name_scope(name, "reduce_euclidean_norm"):
        x = tensor(input_tensor)
        sq = real(multiply(x, conj(x))) if x.dtype.is_complex else square(x)
        return sqrt(reduce_sum(sq, axis, keepdims))


def accumulate_n(
    inputs: Any, shape: Any = None, tensor_dtype: Any = None, name: str | None = None
) -> Tensor:
    """The element-wise sum of a list of tensors (TF1's second name for ``add_n``).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.math.accumulate_n([[1, 2], [3, 4]])).tolist()
    [4, 6]
    """
    return add_n(inputs, name=name or "AccumulateN")


def polyval(coeffs: Any, x: Any, name: str | None = None) -> Tensor:
    """coeffs[0] * x**(n-1) + ... + coeffs[n-1], by Horner's rule (highest power first).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.math.polyval([1.0, 0.0, -2.0], [2.0, 3.0])).tolist()
    [2.0, 7.0]
    """
    with name_scope(name, "polyval"):
        x = tensor(x)
        if not list(coeffs):
            return array_ops.zeros_like(x)
        p = array_ops.zeros_like(x) + cast(tensor(coeffs[0]), x.dtype)
        for c in list(coeffs)[1:]:
            p = add(multiply(p, x), cast(tensor(c), x.dtype))
        return p


def cumulative_logsumexp(
    x: Any, axis: int = 0, exclusive: bool = False, reverse: bool = False, name: str | None = None
) -> Tensor:
    """log(cumsum(exp(x))) along ``axis``, shifted by the axis maximum (no overflow).

    The shift is the maximum along the whole axis, so a running value more
    than ~700 (float64; ~85 for float32) below it underflows to -inf.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.math.cumulative_logsumexp([1000.0, 1000.0])).round(3).tolist()
    [1000.0, 1000.6929931640625]
    """
    with name_scope(name, "cumulative_logsumexp"):
        x = tensor(x)
        raw = reduce_max(x, axis, keepdims=True)
        finite = equal(subtract(raw, raw), array_ops.zeros_like(raw))  # not inf, not NaN
        top = array_ops.stop_gradient(where_v2(finite, raw, array_ops.zeros_like(raw)))
        summed = cumsum(exp(subtract(x, top)), axis, exclusive=exclusive, reverse=reverse)
        return add(log(summed), top)


def unsorted_segment_sqrt_n(
    data: Any, segment_ids: Any, num_segments: Any, name: str | None = None
) -> Tensor:
    """Each segment's sum divided by sqrt(its number of entries) (empty segments give 0).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.math.unsorted_segment_sqrt_n([3.0, 5.0, 4.0], [0, 0, 2], 3)).tolist()
    [5.656854152679443, 0.0, 4.0]
    """
    with name_scope(name, "UnsortedSegmentSqrtN"):
        data = tensor(data)
        total = unsorted_segment_sum(data, segment_ids, num_segments)
        count = unsorted_segment_sum(array_ops.ones_like(data), segment_ids, num_segments)
        return realdiv(total, sqrt(maximum(count, array_ops.ones_like(count))))


def confusion_matrix(
    labels: Any,
    predictions: Any,
    num_classes: Any = None,
    weights: Any = None,
    dtype: Any = dtypes.int32,
    name: str | None = None,
) -> Tensor:
    """counts[i, j]: how many examples of label i were predicted j (or their summed weights).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.math.confusion_matrix([0, 1, 1], [0, 1, 0])).tolist()
    [[1, 0], [1, 1]]
    """
    with name_scope(name, "confusion_matrix"):
        labels = cast(tensor(labels), dtypes.int64)
        predictions = cast(tensor(predictions), dtypes.int64)
        if num_classes is None:
            top = maximum(reduce_max(labels), reduce_max(predictions))
            num_classes = add(top, tensor(1, dtype=dtypes.int64))
        n = cast(tensor(num_classes), dtypes.int64)
        indices = array_ops.stack([labels, predictions], axis=1)
        dt = dtypes.as_dtype(dtype)
        ones = cast(array_ops.ones_like(labels), dt)
        updates = ones if weights is None else cast(tensor(weights), dt)
        return scatter_nd(indices, updates, array_ops.stack([n, n]))


def _top_k_along(x: Tensor, k: int, dim: int) -> tuple[Tensor, Tensor]:
    """top_k along ``dim`` (moved last and back, when it is not already last)."""
    rank = x.get_shape().ndims
    if rank is None:
        raise ValueError("approx_max_k/approx_min_k need the operand's rank to be known")
    dim = dim % rank
    if dim == rank - 1:
        values, indices = top_k(x, k)
        return values, indices
    perm = [*range(dim), *range(dim + 1, rank), dim]
    back = [*range(dim), rank - 1, *range(dim, rank - 1)]
    values, indices = top_k(transpose(x, perm), k)
    return transpose(values, back), transpose(indices, back)


def approx_max_k(
    operand: Any,
    k: int,
    reduction_dimension: int = -1,
    recall_target: float = 0.95,
    reduction_input_size_override: int = -1,
    aggregate_to_topk: bool = True,
    name: str | None = None,
) -> tuple[Tensor, Tensor]:
    """The ``k`` largest values along a dimension and their indices.

    TF's TPU kernel is approximate (recall >= ``recall_target``); this one is
    exact, so its recall is 1 and ``recall_target`` changes nothing.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.math.approx_max_k([[3.0, 1.0, 2.0]], 2)[1]).tolist()
    [[0, 2]]
    """
    with name_scope(name, "ApproxTopK"):
        return _top_k_along(tensor(operand), k, reduction_dimension)


def approx_min_k(
    operand: Any,
    k: int,
    reduction_dimension: int = -1,
    recall_target: float = 0.95,
    reduction_input_size_override: int = -1,
    aggregate_to_topk: bool = True,
    name: str | None = None,
) -> tuple[Tensor, Tensor]:
    """The ``k`` smallest values along a dimension and their indices (exact; see approx_max_k).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.math.approx_min_k([[3.0, 1.0, 2.0]], 2)[0]).tolist()
    [[1.0, 2.0]]
    """
    with name_scope(name, "ApproxTopK"):
        values, indices = _top_k_along(negative(tensor(operand)), k, reduction_dimension)
        return negative(values), indices
