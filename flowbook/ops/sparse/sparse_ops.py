"""TF1's sparse tensors: placeholders, conversions, reductions, products, segment sums.

flowbook's ``SparseTensor`` is TF's three tensors in a namedtuple
(``indices`` int64 [n, rank], ``values`` [n], ``dense_shape`` int64 [rank];
see ``example_ops``); a fetched one comes back as the same namedtuple of
arrays (``SparseTensorValue``), and ``sparse_placeholder`` makes three
placeholders that a ``SparseTensorValue`` (or a 3-tuple) feeds.

Every function here is built from flowbook's dense ops, so each has the
gradients those ops have (with respect to ``values`` and dense operands, as
TensorFlow's): ``sparse_tensor_to_dense`` is a ``ScatterNd`` (TF refuses
repeated indices when ``validate_indices``; here repeats add up),
``sparse_tensor_dense_matmul`` gathers ``b``'s rows by column index, scales
them by the values and sums them per row (``UnsortedSegmentSum``), and
``sparse_segment_*`` gather then segment-reduce, as TF defines them.
Positions are handled as *linear ids* (``indices . strides`` of the dense
shape), which ``flowbook.ops.sparse.sparse_more`` uses to reorder, merge and
reshape.  ``sparse_reduce_max`` reduces over the values present only
(a position with none gives the dtype's lowest value, as TF).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     sp = fb.SparseTensor([[0, 1], [1, 0]], [5.0, 7.0], [2, 3])
    ...     s.run(fb.sparse_tensor_to_dense(sp)).tolist()
    [[0.0, 5.0, 0.0], [7.0, 0.0, 0.0]]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowbook.framework import dtypes
from flowbook.framework.graph import name_scope
from flowbook.framework.tensor import Tensor
from flowbook.ops.array import array_ops
from flowbook.ops.array.constant_op import convert_to_tensor, placeholder
from flowbook.ops.io.example_ops import SparseTensor
from flowbook.ops.math import math_ops
from flowbook.ops.math.scan_ops import cumprod
from flowbook.ops.math.segment_ops import segment_mean, segment_sum
from flowbook.ops.state.scatter_ops import scatter_nd

__all__ = [
    "sparse_matmul",
    "sparse_placeholder",
    "sparse_reduce_max",
    "sparse_reduce_sum",
    "sparse_segment_mean",
    "sparse_segment_sqrt_n",
    "sparse_segment_sum",
    "sparse_tensor_dense_matmul",
    "sparse_tensor_to_dense",
    "sparse_to_dense",
]


def as_sparse(sp: Any, name: str = "SparseTensor") -> SparseTensor:
    """``sp``'s three parts as tensors (indices and shape int64)."""
    if not isinstance(sp, SparseTensor):
        raise TypeError(f"Expected a SparseTensor, got {type(sp).__name__}")
    i = convert_to_tensor(sp.indices, dtype=dtypes.int64, name="indices")
    v = convert_to_tensor(sp.values, name="values")
    s = convert_to_tensor(sp.dense_shape, dtype=dtypes.int64, name="dense_shape")
    return SparseTensor(i, v, s)


def strides(dense_shape: Tensor) -> Tensor:
    """Row-major strides of a shape: ``[d1*d2*..., ..., d_last, 1]``."""
    return cumprod(dense_shape, exclusive=True, reverse=True)


def linear_ids(sp: SparseTensor) -> Tensor:
    """Each entry's row-major position in the dense shape (int64 [n])."""
    return math_ops.reduce_sum(sp.indices * strides(sp.dense_shape), 1)


def unravel(ids: Tensor, dense_shape: Tensor) -> Tensor:
    """Linear ids back to indices [n, rank] for ``dense_shape``."""
    st = strides(dense_shape)
    return math_ops.floormod(math_ops.floordiv(ids[:, None], st[None, :]), dense_shape[None, :])


def sparse_placeholder(dtype: Any, shape: Any = None, name: str | None = None) -> SparseTensor:
    """Three placeholders a ``SparseTensorValue`` feeds: ``sess.run(..., {sp: value})``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     sp = fb.sparse_placeholder(fb.float32)
    ...     value = fb.SparseTensorValue([[0, 0], [1, 2]], [1.0, 2.0], [2, 3])
    ...     float(s.run(fb.sparse_reduce_sum(sp), {sp: value}))
    3.0
    """
    with name_scope(name, "SparseTensor") as scope:
        rank = None if shape is None else len(shape)
        values = placeholder(dtype, [None], name=scope + "values")
        indices = placeholder(dtypes.int64, [None, rank], name=scope + "indices")
        if shape is not None and all(d is not None and d != -1 for d in shape):
            dense_shape = convert_to_tensor(list(shape), dtype=dtypes.int64, name="shape")
        else:
            dense_shape = placeholder(dtypes.int64, [rank], name=scope + "shape")
        return SparseTensor(indices, values, dense_shape)


def sparse_tensor_to_dense(
    sp_input: Any, default_value: Any = 0, validate_indices: bool = True, name: str | None = None
) -> Tensor:
    """The dense tensor: ``values`` at ``indices``, ``default_value`` elsewhere."""
    with name_scope(name, "SparseToDense"):
        sp = as_sparse(sp_input)
        dense = scatter_nd(sp.indices, sp.values, sp.dense_shape)
        if isinstance(default_value, int | float) and default_value == 0:
            return dense
        mark = scatter_nd(
            sp.indices,
            array_ops.ones_like(sp.values, dtype=dtypes.int32),
            math_ops.cast(sp.dense_shape, dtypes.int32),
        )
        fill = convert_to_tensor(default_value, dtype=sp.values.dtype)
        return array_ops.where(math_ops.greater(mark, 0), dense, array_ops.zeros_like(dense) + fill)


def sparse_to_dense(
    sparse_indices: Any,
    output_shape: Any,
    sparse_values: Any,
    default_value: Any = 0,
    validate_indices: bool = True,
    name: str | None = None,
) -> Tensor:
    """A dense tensor from indices (a vector, or a matrix of coordinates) and values.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.sparse_to_dense([0, 2], [4], 1, default_value=-1)).tolist()
    [1, -1, 1, -1]
    """
    with name_scope(name, "SparseToDense"):
        i = convert_to_tensor(sparse_indices, dtype=dtypes.int64)
        if i.shape.ndims in (0, 1):
            i = array_ops.reshape(i, [-1, 1])
        v = convert_to_tensor(sparse_values)
        if v.shape.ndims == 0:
            v = array_ops.fill(array_ops.shape(i)[:1], v)
        shape = array_ops.reshape(convert_to_tensor(output_shape, dtype=dtypes.int64), [-1])
        return sparse_tensor_to_dense(SparseTensor(i, v, shape), default_value)


def sparse_reduce_sum(
    sp_input: Any,
    axis: Any = None,
    keepdims: Any = None,
    reduction_axes: Any = None,
    keep_dims: Any = None,
) -> Tensor:
    """The sum of a SparseTensor over ``axis`` (all axes when None), a dense result."""
    axes = reduction_axes if axis is None else axis
    keep = bool(keepdims if keepdims is not None else keep_dims)
    with name_scope(None, "SparseReduceSum"):
        return math_ops.reduce_sum(sparse_tensor_to_dense(sp_input), axes, keepdims=keep)


def sparse_reduce_max(
    sp_input: Any,
    axis: Any = None,
    keepdims: Any = None,
    reduction_axes: Any = None,
    keep_dims: Any = None,
) -> Tensor:
    """The maximum over the *present* values along ``axis`` (the lowest value where none are).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     sp = fb.SparseTensor([[0, 0], [0, 2], [1, 1]], [-3.0, -1.0, 4.0], [2, 3])
    ...     s.run(fb.sparse_reduce_max(sp, 1)).tolist()
    [-1.0, 4.0]
    """
    axes = reduction_axes if axis is None else axis
    keep = bool(keepdims if keepdims is not None else keep_dims)
    with name_scope(None, "SparseReduceMax"):
        sp = as_sparse(sp_input)
        t = sp.values.dtype
        lowest = -np.inf if t.is_floating else np.iinfo(t.np).min
        dense = sparse_tensor_to_dense(sp, lowest)
        return math_ops.reduce_max(dense, axes, keepdims=keep)


def sparse_tensor_dense_matmul(
    sp_a: Any, b: Any, adjoint_a: bool = False, adjoint_b: bool = False, name: str | None = None
) -> Tensor:
    """``dense(sp_a) @ b`` for a rank-2 SparseTensor, without making ``sp_a`` dense.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     sp = fb.SparseTensor([[0, 1], [1, 0]], [2.0, 3.0], [2, 2])
    ...     s.run(fb.sparse_tensor_dense_matmul(sp, [[1.0, 0.0], [0.0, 1.0]])).tolist()
    [[0.0, 2.0], [3.0, 0.0]]
    """
    with name_scope(name, "SparseTensorDenseMatMul"):
        sp = as_sparse(sp_a)
        dense = convert_to_tensor(b, dtype=sp.values.dtype, name="b")
        if adjoint_b:
            dense = array_ops.transpose(dense, conjugate=True)
        rows, cols = sp.indices[:, 0], sp.indices[:, 1]
        values, n_rows = sp.values, sp.dense_shape[0]
        if adjoint_a:
            rows, cols, n_rows = cols, rows, sp.dense_shape[1]
            values = math_ops.conj(values) if values.dtype.is_complex else values
        picked = array_ops.gather(dense, cols) * values[:, None]
        return array_ops.unsorted_segment_sum(picked, rows, n_rows)


def sparse_matmul(
    a: Any,
    b: Any,
    transpose_a: bool = False,
    transpose_b: bool = False,
    a_is_sparse: bool = False,
    b_is_sparse: bool = False,
    name=None,
) -> Tensor:
    """``matmul`` of two dense matrices (the ``*_is_sparse`` flags are TF's speed hints only)."""
    return math_ops.matmul(
        a, b, transpose_a=transpose_a, transpose_b=transpose_b, name=name or "SparseMatMul"
    )


def sparse_segment_sum(
    data: Any, indices: Any, segment_ids: Any, name: str | None = None, num_segments: Any = None
) -> Tensor:
    """``segment_sum(gather(data, indices), segment_ids)`` (unsorted with ``num_segments``).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.sparse_segment_sum([[1, 2], [3, 4], [5, 6]], [0, 2, 1], [0, 0, 1])).tolist()
    [[6, 8], [3, 4]]
    """
    with name_scope(name, "SparseSegmentSum"):
        rows = array_ops.gather(data, indices)
        if num_segments is not None:
            return array_ops.unsorted_segment_sum(rows, segment_ids, num_segments)
        return segment_sum(rows, segment_ids)


def _counts(segment_ids: Any, like: Tensor, num_segments: Any) -> Tensor:
    ids = convert_to_tensor(segment_ids)
    ones = array_ops.ones_like(ids, dtype=like.dtype)
    n = num_segments if num_segments is not None else math_ops.reduce_max(ids) + 1
    counts = array_ops.unsorted_segment_sum(ones, ids, n)
    counts = math_ops.maximum(counts, array_ops.ones_like(counts))
    rank = like.shape.ndims
    return array_ops.reshape(counts, [-1] + [1] * (rank - 1)) if rank else counts


def sparse_segment_mean(
    data: Any, indices: Any, segment_ids: Any, name: str | None = None, num_segments: Any = None
) -> Tensor:
    """The mean of ``gather(data, indices)`` per segment (an empty segment gives 0).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.sparse_segment_mean([[1.0], [3.0]], [0, 1], [0, 0])).tolist()
    [[2.0]]
    """
    with name_scope(name, "SparseSegmentMean"):
        rows = array_ops.gather(data, indices)
        if num_segments is None:
            return segment_mean(rows, segment_ids)
        total = array_ops.unsorted_segment_sum(rows, segment_ids, num_segments)
        return total / _counts(segment_ids, total, num_segments)


def sparse_segment_sqrt_n(
    data: Any, indices: Any, segment_ids: Any, name: str | None = None, num_segments: Any = None
) -> Tensor:
    """The sum of ``gather(data, indices)`` per segment divided by sqrt(its size).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.sparse_segment_sqrt_n([[3.0], [1.0]], [0, 1, 0, 1], [0, 0, 0, 0])).tolist()
    [[4.0]]
    """
    with name_scope(name, "SparseSegmentSqrtN"):
        total = sparse_segment_sum(data, indices, segment_ids, num_segments=num_segments)
        return total / math_ops.sqrt(_counts(segment_ids, total, num_segments))
