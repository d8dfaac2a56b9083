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
shape), which the rearranging functions below use to reorder, merge and
reshape.  ``sparse_reduce_max`` reduces over the values present only
(a position with none gives the dtype's lowest value, as TF).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     sp = fb.SparseTensor([[0, 1], [1, 0]], [5.0, 7.0], [2, 3])
    ...     s.run(fb.sparse_tensor_to_dense(sp)).tolist()
    [[0.0, 5.0, 0.0], [7.0, 0.0, 0.0]]

Sparse tensors are rearranged (add, concat, reorder, reshape, slice, split,
softmax, edit distance) with dense ops on the three parts too, with each
entry's *linear id* (its row-major position in the dense shape) standing for
its index: ``sparse_reorder`` sorts by it, ``sparse_add`` (and
``sparse_maximum``/``minimum``) take the union of two index sets with
``unique`` and add with ``UnsortedSegmentSum`` before sorting, and
``sparse_reshape`` unravels the ids in the new shape.  Results come out in
TF's canonical row-major order; the gradients with respect to ``values``
come from the dense ops.  ``sparse_softmax`` is the softmax of the values
present along the last dim (max-shifted per row).

``EditDistance`` is a host kernel (Levenshtein distance between the
sequences grouped by all but the last index coordinate), as TensorFlow's:
an output of shape ``max(hypothesis, truth).dense_shape[:-1]``, divided by
the truth's length when ``normalize`` (inf where only the hypothesis has a
sequence, 1 where only the truth has one).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     a = fb.SparseTensor([[0, 1]], [1.0], [2, 2]); b = fb.SparseTensor([[0, 0], [0, 1]], [2.0, 3.0], [2, 2])
    ...     got = s.run(fb.sparse_add(a, b))
    ...     got.indices.tolist(), got.values.tolist()
    ([[0, 0], [0, 1]], [2.0, 4.0])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowbook.framework import dtypes
from flowbook.framework.graph import name_scope
from flowbook.framework.registry import NOT_DIFFERENTIABLE, Out, op
from flowbook.framework.tensor import Tensor
from flowbook.ops._builder import make1
from flowbook.ops.array import array_ops
from flowbook.ops.array.constant_op import convert_to_tensor, placeholder
from flowbook.ops.array.set_ops import unique
from flowbook.ops.array.shape_ops import stop_gradient
from flowbook.ops.io.example_ops import SparseTensor
from flowbook.ops.math import math_ops
from flowbook.ops.math.scan_ops import cumprod
from flowbook.ops.math.segment_ops import segment_mean, segment_sum, unsorted_segment_max
from flowbook.ops.math.sort_ops import argsort
from flowbook.ops.state.scatter_ops import scatter_nd

__all__ = [
    "edit_distance",
    "sparse_add",
    "sparse_concat",
    "sparse_fill_empty_rows",
    "sparse_matmul",
    "sparse_maximum",
    "sparse_merge",
    "sparse_minimum",
    "sparse_placeholder",
    "sparse_reduce_max",
    "sparse_reduce_sum",
    "sparse_reorder",
    "sparse_reset_shape",
    "sparse_reshape",
    "sparse_retain",
    "sparse_segment_mean",
    "sparse_segment_sqrt_n",
    "sparse_segment_sum",
    "sparse_slice",
    "sparse_softmax",
    "sparse_split",
    "sparse_tensor_dense_matmul",
    "sparse_tensor_to_dense",
    "sparse_to_dense",
    "sparse_to_indicator",
    "sparse_transpose",
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


def _sorted(ids: Tensor, values: Tensor, dense_shape: Tensor) -> SparseTensor:
    order = argsort(ids)
    return SparseTensor(
        unravel(array_ops.gather(ids, order), dense_shape),
        array_ops.gather(values, order),
        dense_shape,
    )


def sparse_reorder(sp_input: Any, name: str | None = None) -> SparseTensor:
    """The same SparseTensor with its entries in row-major order."""
    with name_scope(name, "SparseReorder"):
        sp = as_sparse(sp_input)
        return _sorted(linear_ids(sp), sp.values, sp.dense_shape)


def _union(a: SparseTensor, b: SparseTensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """(union ids, a's values on them, b's values on them (0 where absent), count)."""
    ids_a, ids_b = linear_ids(a), linear_ids(b)
    ids, pos = unique(array_ops.concat([ids_a, ids_b], 0))
    n = array_ops.size(ids)
    na = array_ops.size(ids_a)
    va = array_ops.unsorted_segment_sum(a.values, pos[:na], n)
    vb = array_ops.unsorted_segment_sum(b.values, pos[na:], n)
    return ids, va, vb, n


def sparse_add(a: Any, b: Any, threshold: Any = 0, thresh: Any = None) -> Any:
    """The sum of two SparseTensors (sparse), or of one and a dense tensor (dense).

    Entries whose sum has magnitude below ``threshold`` are dropped.
    """
    limit = threshold if thresh is None else thresh
    with name_scope(None, "SparseAdd"):
        if not isinstance(a, SparseTensor) or not isinstance(b, SparseTensor):
            sp, dense = (a, b) if isinstance(a, SparseTensor) else (b, a)
            return sparse_tensor_to_dense(sp) + convert_to_tensor(dense)
        a, b = as_sparse(a), as_sparse(b)
        ids, va, vb, _ = _union(a, b)
        total = va + vb
        keep = math_ops.greater_equal(math_ops.abs(total), math_ops.cast(limit, total.dtype))
        ids, total = array_ops.boolean_mask(ids, keep), array_ops.boolean_mask(total, keep)
        return _sorted(ids, total, a.dense_shape)


def _elementwise(a: Any, b: Any, fn: Any, name: str) -> SparseTensor:
    with name_scope(None, name):
        a, b = as_sparse(a), as_sparse(b)
        ids, va, vb, _ = _union(a, b)
        return _sorted(ids, fn(va, vb), a.dense_shape)


def sparse_maximum(sp_a: Any, sp_b: Any, name: str | None = None) -> SparseTensor:
    """The element-wise maximum over the union of the entries (absent entries are 0)."""
    return _elementwise(sp_a, sp_b, math_ops.maximum, name or "SparseSparseMaximum")


def sparse_minimum(sp_a: Any, sp_b: Any, name: str | None = None) -> SparseTensor:
    """The element-wise minimum over the union of the entries (absent entries are 0)."""
    return _elementwise(sp_a, sp_b, math_ops.minimum, name or "SparseSparseMinimum")


def sparse_concat(
    axis: int,
    sp_inputs: Any,
    name: str | None = None,
    expand_nonconcat_dim: bool = False,
    concat_dim: Any = None,
    expand_nonconcat_dims: Any = None,
) -> SparseTensor:
    """SparseTensors joined along ``axis`` (TF1's argument order: axis first).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     a = fb.SparseTensor([[0, 0]], [1], [2, 1]); b = fb.SparseTensor([[1, 0]], [2], [2, 2])
    ...     got = s.run(fb.sparse_concat(1, [a, b]))
    ...     got.indices.tolist(), got.dense_shape.tolist()
    ([[0, 0], [1, 1]], [2, 3])
    """
    axis = int(axis if concat_dim is None else concat_dim)
    expand = expand_nonconcat_dim or bool(expand_nonconcat_dims)
    with name_scope(name, "SparseConcat"):
        sps = [as_sparse(sp) for sp in sp_inputs]
        rank = sps[0].indices.shape.as_list()[1]
        if rank is None:
            rank = sps[0].dense_shape.shape.as_list()[0]
        axis %= rank
        hot = convert_to_tensor(np.eye(rank, dtype=np.int64)[axis])
        offset: Any = 0
        ids, values = [], []
        shapes = array_ops.stack([sp.dense_shape for sp in sps])
        out_shape = math_ops.reduce_max(shapes, 0) if expand else sps[0].dense_shape
        out_shape = out_shape * (1 - hot) + math_ops.reduce_sum(shapes[:, axis]) * hot
        for sp in sps:
            moved = SparseTensor(sp.indices + hot * offset, sp.values, out_shape)
            ids.append(linear_ids(moved))
            values.append(sp.values)
            offset = offset + sp.dense_shape[axis]
        return _sorted(array_ops.concat(ids, 0), array_ops.concat(values, 0), out_shape)


def sparse_reshape(sp_input: Any, shape: Any, name: str | None = None) -> SparseTensor:
    """The same entries in a dense shape of the same size (one dim may be -1)."""
    with name_scope(name, "SparseReshape"):
        sp = as_sparse(sp_input)
        want = convert_to_tensor(shape, dtype=dtypes.int64)
        total = math_ops.reduce_prod(sp.dense_shape)
        free = math_ops.equal(want, -1)
        known = math_ops.reduce_prod(array_ops.where(free, array_ops.ones_like(want), want))
        new_shape = array_ops.where(free, array_ops.zeros_like(want) + total // known, want)
        return SparseTensor(unravel(linear_ids(sp), new_shape), sp.values, new_shape)


def sparse_slice(sp_input: Any, start: Any, size: Any, name: str | None = None) -> SparseTensor:
    """The entries inside ``[start, start + size)``, shifted to start at 0."""
    with name_scope(name, "SparseSlice"):
        sp = as_sparse(sp_input)
        lo = convert_to_tensor(start, dtype=dtypes.int64)
        n = convert_to_tensor(size, dtype=dtypes.int64)
        inside = math_ops.logical_and(
            math_ops.greater_equal(sp.indices, lo), math_ops.less(sp.indices, lo + n)
        )
        keep = math_ops.reduce_all(inside, 1)
        out_shape = math_ops.maximum(math_ops.minimum(n, sp.dense_shape - lo), 0 * n)
        return SparseTensor(
            array_ops.boolean_mask(sp.indices, keep) - lo,
            array_ops.boolean_mask(sp.values, keep),
            out_shape,
        )


def sparse_split(
    keyword_required: Any = None,
    sp_input: Any = None,
    num_split: Any = None,
    axis: Any = None,
    name: str | None = None,
    split_dim: Any = None,
) -> list:
    """``num_split`` SparseTensors cut along ``axis`` (the first ones one longer if uneven).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     sp = fb.SparseTensor([[0, 0], [0, 2]], [1, 2], [1, 3])
    ...     [p.indices.tolist() for p in s.run(fb.sparse_split(sp_input=sp, num_split=2, axis=1))]
    [[[0, 0]], [[0, 0]]]
    """
    if keyword_required is not None:
        raise ValueError("sparse_split: pass sp_input, num_split and axis by keyword")
    axis = int(axis if split_dim is None else split_dim)
    with name_scope(name, "SparseSplit"):
        sp = as_sparse(sp_input)
        rank = sp.dense_shape.shape.as_list()[0]
        axis %= rank
        hot = convert_to_tensor(np.eye(rank, dtype=np.int64)[axis])
        dim = sp.dense_shape[axis]
        base, extra = dim // num_split, dim % num_split
        pieces, start = [], convert_to_tensor(0, dtype=dtypes.int64)
        for k in range(num_split):
            length = base + math_ops.cast(math_ops.less(np.int64(k), extra), dtypes.int64)
            size = sp.dense_shape * (1 - hot) + length * hot
            pieces.append(sparse_slice(sp, start * hot, size))
            start = start + length
        return pieces


def sparse_transpose(sp_input: Any, perm: Any = None, name: str | None = None) -> SparseTensor:
    """The SparseTensor with its dims permuted by ``perm`` (reversed when None)."""
    with name_scope(name, "SparseTranspose"):
        sp = as_sparse(sp_input)
        if perm is None:
            rank = sp.dense_shape.shape.as_list()[0]
            perm = list(range(rank - 1, -1, -1))
        p = convert_to_tensor(perm, dtype=dtypes.int32)
        moved = SparseTensor(
            array_ops.gather(sp.indices, p, axis=1), sp.values, array_ops.gather(sp.dense_shape, p)
        )
        return sparse_reorder(moved)


def sparse_retain(sp_input: Any, to_retain: Any) -> SparseTensor:
    """The entries where the bool vector ``to_retain`` is True."""
    with name_scope(None, "SparseRetain"):
        sp = as_sparse(sp_input)
        keep = convert_to_tensor(to_retain, dtype=dtypes.bool)
        return SparseTensor(
            array_ops.boolean_mask(sp.indices, keep),
            array_ops.boolean_mask(sp.values, keep),
            sp.dense_shape,
        )


def sparse_fill_empty_rows(sp_input: Any, default_value: Any, name: str | None = None) -> tuple:
    """(the SparseTensor with ``default_value`` at ``[r, 0, ...]`` of each empty row r, which rows).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     sp, empty = fb.sparse_fill_empty_rows(fb.SparseTensor([[1, 1]], [5], [3, 2]), -1)
    ...     got = s.run(sp); got.indices.tolist(), got.values.tolist(), s.run(empty).tolist()
    ([[0, 0], [1, 1], [2, 0]], [-1, 5, -1], [True, False, True])
    """
    with name_scope(name, "SparseFillEmptyRows"):
        sp = as_sparse(sp_input)
        n_rows = sp.dense_shape[0]
        ones = array_ops.ones_like(sp.indices[:, 0])
        empty = math_ops.equal(array_ops.unsorted_segment_sum(ones, sp.indices[:, 0], n_rows), 0)
        rows = array_ops.where(empty)
        width = array_ops.shape(sp.indices)[1] - 1
        pad = array_ops.zeros(array_ops.stack([array_ops.shape(rows)[0], width]), dtypes.int64)
        new_indices = array_ops.concat([math_ops.cast(rows, dtypes.int64), pad], 1)
        default = convert_to_tensor(default_value, dtype=sp.values.dtype)
        new_values = array_ops.fill(array_ops.shape(rows)[:1], default)
        both = SparseTensor(
            array_ops.concat([sp.indices, new_indices], 0),
            array_ops.concat([sp.values, new_values], 0),
            sp.dense_shape,
        )
        return sparse_reorder(both), empty


def _id_indices(sp_ids: SparseTensor, vocab_size: Any) -> tuple[Tensor, Tensor]:
    last = math_ops.cast(sp_ids.values, dtypes.int64)[:, None]
    indices = array_ops.concat([sp_ids.indices[:, :-1], last], 1)
    size = convert_to_tensor(vocab_size, dtype=dtypes.int64)
    return indices, array_ops.concat([sp_ids.dense_shape[:-1], array_ops.reshape(size, [1])], 0)


def sparse_to_indicator(sp_input: Any, vocab_size: Any, name: str | None = None) -> Tensor:
    """A dense bool tensor ``[..., vocab_size]``: True at each row's id values.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     sp = fb.SparseTensor([[0, 0], [0, 1], [1, 0]], [2, 0, 1], [2, 2])
    ...     s.run(fb.sparse_to_indicator(sp, 3)).tolist()
    [[True, False, True], [False, True, False]]
    """
    with name_scope(name, "SparseToIndicator"):
        sp = as_sparse(sp_input)
        indices, shape = _id_indices(sp, vocab_size)
        ones = array_ops.ones_like(sp.values, dtype=dtypes.int32)
        return math_ops.greater(sparse_tensor_to_dense(SparseTensor(indices, ones, shape)), 0)


def sparse_merge(
    sp_ids: Any,
    sp_values: Any,
    vocab_size: Any,
    name: str | None = None,
    already_sorted: bool = False,
) -> SparseTensor:
    """A SparseTensor ``[..., vocab_size]`` holding ``sp_values`` at each row's ids."""
    with name_scope(name, "SparseMerge"):
        ids, vals = as_sparse(sp_ids), as_sparse(sp_values)
        indices, shape = _id_indices(ids, vocab_size)
        merged = SparseTensor(indices, vals.values, shape)
        return merged if already_sorted else sparse_reorder(merged)


def sparse_reset_shape(sp_input: Any, new_shape: Any = None) -> SparseTensor:
    """The SparseTensor with a new dense shape (the tightest one holding its entries if None)."""
    with name_scope(None, "SparseResetShape"):
        sp = as_sparse(sp_input)
        if new_shape is None:
            floor = array_ops.zeros_like(sp.indices[:1]) - 1
            shape = math_ops.reduce_max(array_ops.concat([sp.indices, floor], 0), 0) + 1
        else:
            shape = convert_to_tensor(new_shape, dtype=dtypes.int64)
        return SparseTensor(sp.indices, sp.values, shape)


def sparse_softmax(sp_input: Any, name: str | None = None) -> SparseTensor:
    """The softmax of the values present along the last dim, per row; the same indices.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     sp = fb.SparseTensor([[0, 0], [0, 2], [1, 1]], [1.0, 1.0, 5.0], [2, 3])
    ...     s.run(fb.sparse_softmax(sp)).values.tolist()
    [0.5, 0.5, 1.0]
    """
    with name_scope(name, "SparseSoftmax"):
        sp = as_sparse(sp_input)
        rows_sp = SparseTensor(sp.indices[:, :-1], sp.values, sp.dense_shape[:-1])
        rows = linear_ids(rows_sp)
        n = math_ops.reduce_prod(sp.dense_shape[:-1])
        top = stop_gradient(unsorted_segment_max(sp.values, rows, n))
        e = math_ops.exp(sp.values - array_ops.gather(top, rows))
        total = array_ops.unsorted_segment_sum(e, rows, n)
        return SparseTensor(sp.indices, e / array_ops.gather(total, rows), sp.dense_shape)


# --------------------------------------------------------------- EditDistance
def _edit_infer(hi: Any, hv: Any, hs: Any, ti: Any, tv: Any, ts: Any, normalize: bool) -> Out:
    rank = hs._shape[0] if hs._shape is not None else None
    return Out(dtypes.float32, None if rank is None else (None,) * (rank - 1))


def _levenshtein(a: list, b: list) -> int:
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (x != y))
    return row[-1]


def _groups(indices: Any, values: Any) -> dict:
    out: dict = {}
    for idx, v in zip(np.asarray(indices).tolist(), np.asarray(values, dtype=object).tolist()):
        out.setdefault(tuple(idx[:-1]), []).append(v)
    return out


def _edit_distance(
    xp: Any, hi: Any, hv: Any, hs: Any, ti: Any, tv: Any, ts: Any, normalize: bool
) -> Any:
    shape = np.maximum(np.asarray(hs), np.asarray(ts))[:-1]
    out = np.zeros(tuple(int(d) for d in shape), np.float32)
    hyp, truth = _groups(hi, hv), _groups(ti, tv)
    for loc in set(hyp) | set(truth):
        h, t = hyp.get(loc, []), truth.get(loc, [])
        d = float(_levenshtein(h, t))
        if normalize:
            d = d / len(t) if t else np.inf
        out[loc] = d
    return out


op(
    "EditDistance",
    (
        "hypothesis_indices",
        "hypothesis_values",
        "hypothesis_shape",
        "truth_indices",
        "truth_values",
        "truth_shape",
    ),
    infer=_edit_infer,
    attrs=("normalize",),
    kernel=_edit_distance,
    host_only=True,
    grad=NOT_DIFFERENTIABLE,
)


def edit_distance(
    hypothesis: Any, truth: Any, normalize: bool = True, name: str = "edit_distance"
) -> Tensor:
    """Levenshtein distance between sequences of two SparseTensors (last dim: the sequence).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     h = fb.SparseTensor([[0, 0], [0, 1]], ["a", "b"], [1, 2])
    ...     t = fb.SparseTensor([[0, 0], [0, 1], [0, 2]], ["a", "c", "d"], [1, 3])
    ...     s.run(fb.edit_distance(h, t, normalize=False)).tolist()
    [2.0]
    """
    h, t = as_sparse(hypothesis), as_sparse(truth)
    attrs = {"normalize": bool(normalize)}
    return make1("EditDistance", [*h, *t], attrs, name=name)
