"""``tf.sparse``: the sparse ops of ``tf.sparse_*`` under TF 1.15's shorter names.

The functions live in ``flowbook.ops.sparse.sparse_ops``
(built from dense ops on a SparseTensor's three parts); this module names
them as ``tf.sparse`` does: ``tf.sparse.to_dense`` is
``tf.sparse_tensor_to_dense``, ``tf.sparse.matmul`` is
``tf.sparse_tensor_dense_matmul``...

    >>> import flowbook as tf
    >>> with tf.Graph().as_default(), tf.Session() as s:
    ...     sp = tf.sparse.SparseTensor([[1]], [4.0], [3])
    ...     s.run(tf.sparse.to_dense(tf.sparse.add(sp, sp))).tolist()
    [0.0, 8.0, 0.0]
"""

from __future__ import annotations

from flowbook.ops.io.example_ops import SparseTensor, SparseTensorValue
from flowbook.ops.sparse.sparse_ops import (
    sparse_add,
    sparse_concat,
    sparse_fill_empty_rows,
    sparse_maximum,
    sparse_minimum,
    sparse_placeholder,
    sparse_reduce_max,
    sparse_reduce_sum,
    sparse_reorder,
    sparse_reset_shape,
    sparse_reshape,
    sparse_retain,
    sparse_segment_mean,
    sparse_segment_sqrt_n,
    sparse_segment_sum,
    sparse_slice,
    sparse_softmax,
    sparse_split,
    sparse_tensor_dense_matmul,
    sparse_tensor_to_dense,
    sparse_to_indicator,
    sparse_transpose,
)

__all__ = [
    "SparseTensor",
    "SparseTensorValue",
    "add",
    "concat",
    "fill_empty_rows",
    "matmul",
    "maximum",
    "minimum",
    "placeholder",
    "reduce_max",
    "reduce_sum",
    "reorder",
    "reset_shape",
    "reshape",
    "retain",
    "segment_mean",
    "segment_sqrt_n",
    "segment_sum",
    "slice",
    "softmax",
    "split",
    "to_dense",
    "to_indicator",
    "transpose",
]

add = sparse_add
concat = sparse_concat
fill_empty_rows = sparse_fill_empty_rows
matmul = sparse_tensor_dense_matmul
maximum = sparse_maximum
minimum = sparse_minimum
placeholder = sparse_placeholder
reduce_max = sparse_reduce_max
reduce_sum = sparse_reduce_sum
reorder = sparse_reorder
reset_shape = sparse_reset_shape
reshape = sparse_reshape
retain = sparse_retain
segment_mean = sparse_segment_mean
segment_sqrt_n = sparse_segment_sqrt_n
segment_sum = sparse_segment_sum
slice = sparse_slice
softmax = sparse_softmax
split = sparse_split
to_dense = sparse_tensor_to_dense
to_indicator = sparse_to_indicator
transpose = sparse_transpose
