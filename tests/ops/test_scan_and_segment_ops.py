"""The long tail (scans, segments...), checked against numpy as tables.

Every row is ``(id, build, reference)``: ``build()`` makes the tensor in a
fresh graph, ``reference()`` computes the same with numpy.  Each case checks
the value, the dtype, and that the runtime shape fits the static shape that
``infer`` promised.  TensorFlow's documented corner cases and the build-time
errors (naming the op and the line that made it) follow the tables.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import flowbook as fb
from flowbook.framework.tensor_shape import compatible
from flowbook.ops._builder import make1

RNG = np.random.default_rng(0)
A = RNG.standard_normal((3, 4)).astype(np.float32)
I5 = np.array([3, 1, 4, 1, 5], np.int32)
D = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]], np.float32)


def _exclusive(a, axis, identity):
    out = np.moveaxis(a, axis, 0)
    out = np.concatenate([np.full_like(out[:1], identity), out[:-1]])
    return np.moveaxis(out, 0, axis)


def _segments(data, ids, n, fn, empty):
    out = np.full((n, *data.shape[ids.ndim :]), empty, data.dtype)
    flat, rows = ids.ravel(), data.reshape((ids.size, *data.shape[ids.ndim :]))
    for s in range(n):
        if (flat == s).any():
            out[s] = fn(rows[flat == s], axis=0)
    return out


F32_MIN = -np.inf
SCAN_CASES = [
    ("cumsum_0", lambda: fb.cumsum(A), lambda: np.cumsum(A, 0)),
    ("cumsum_1", lambda: fb.cumsum(A, axis=1), lambda: np.cumsum(A, 1)),
    ("cumsum_neg", lambda: fb.cumsum(A, axis=-1), lambda: np.cumsum(A, 1)),
    ("cumsum_int", lambda: fb.cumsum(I5), lambda: np.cumsum(I5).astype(np.int32)),
    ("cumsum_rev", lambda: fb.cumsum(I5, reverse=True), lambda: np.cumsum(I5[::-1], dtype=np.int32)[::-1]),
    ("cumsum_excl", lambda: fb.cumsum(A, 1, exclusive=True),
     lambda: _exclusive(np.cumsum(A, 1), 1, 0)),
    ("cumsum_excl_rev", lambda: fb.cumsum(I5, exclusive=True, reverse=True),
     lambda: np.array([11, 10, 6, 5, 0], np.int32)),
    ("cumprod", lambda: fb.cumprod(A, 1), lambda: np.cumprod(A, 1)),
    ("cumprod_excl", lambda: fb.cumprod(I5, exclusive=True),
     lambda: np.array([1, 3, 3, 12, 12], np.int32)),
    ("cumprod_rev", lambda: fb.cumprod(A, 0, reverse=True), lambda: np.cumprod(A[::-1], 0)[::-1]),
    ("cumsum_empty", lambda: fb.cumsum(np.zeros((0, 2), np.float32), exclusive=True),
     lambda: np.zeros((0, 2), np.float32)),
]  # fmt: skip
IDS = np.array([0, 0, 2, 3], np.int32)
UIDS = np.array([2, -1, 0, 2], np.int32)
SEGMENT_CASES = [
    ("segment_sum", lambda: fb.segment_sum(D, IDS), lambda: _segments(D, IDS, 4, np.sum, 0)),
    ("segment_mean", lambda: fb.segment_mean(D, IDS), lambda: _segments(D, IDS, 4, np.mean, 0)),
    ("segment_max", lambda: fb.segment_max(D, IDS), lambda: _segments(D, IDS, 4, np.max, 0)),
    ("segment_min", lambda: fb.segment_min(D, IDS), lambda: _segments(D, IDS, 4, np.min, 0)),
    ("segment_prod", lambda: fb.segment_prod(D, IDS), lambda: _segments(D, IDS, 4, np.prod, 1)),
    ("segment_int_mean", lambda: fb.segment_mean([1, 2, 7], [0, 0, 1]),
     lambda: np.array([1, 7], np.int32)),
    ("useg_max", lambda: fb.unsorted_segment_max(D, UIDS, 3),
     lambda: _segments(D, UIDS, 3, np.max, F32_MIN)),
    ("useg_min", lambda: fb.unsorted_segment_min(D, UIDS, 3),
     lambda: _segments(D, UIDS, 3, np.min, np.inf)),
    ("useg_prod", lambda: fb.unsorted_segment_prod(D, UIDS, 3),
     lambda: _segments(D, UIDS, 3, np.prod, 1)),
    ("useg_mean", lambda: fb.unsorted_segment_mean(D, UIDS, 3),
     lambda: _segments(D, UIDS, 3, np.mean, 0)),
    ("useg_int_max", lambda: fb.unsorted_segment_max(I5, [1, 1, 0, 0, 1], 3),
     lambda: np.array([4, 5, np.iinfo(np.int32).min], np.int32)),
    ("useg_2d_ids", lambda: fb.unsorted_segment_min(D.reshape(2, 2, 2), [[0, 1], [1, 0]], 2),
     lambda: np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)),
]  # fmt: skip
P = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
ND = np.array([[1, 2], [0, 0], [1, 2]], np.int32)
INDEX_CASES = [
    ("gather_nd_entries", lambda: fb.gather_nd(P, [[1, 2, 3], [0, 1, 0]]),
     lambda: P[[1, 0], [2, 1], [3, 0]]),
    ("gather_nd_slices", lambda: fb.gather_nd(P, ND), lambda: P[ND[:, 0], ND[:, 1]]),
    ("gather_nd_batched", lambda: fb.gather_nd(P, [[[1]], [[0]]]), lambda: P[[[1], [0]]]),
    ("gather_nd_int64", lambda: fb.gather_nd(P, np.array([[1]], np.int64)), lambda: P[[1]]),
    ("scatter_nd_repeats", lambda: fb.scatter_nd([[1], [3], [1]], [9, 10, 11], [5]),
     lambda: np.array([0, 20, 0, 10, 0], np.int32)),
    ("scatter_nd_rows", lambda: fb.scatter_nd(ND, np.ones((3, 4), np.float32), [2, 3, 4]),
     lambda: np.add.at(z := np.zeros((2, 3, 4), np.float32), (ND[:, 0], ND[:, 1]), 1) or z),
    ("dynamic_stitch", lambda: fb.dynamic_stitch([[1, 3], [0, 2]], [[1.0, 2.0], [3.0, 4.0]]),
     lambda: np.array([3.0, 1.0, 4.0, 2.0], np.float32)),
    ("dynamic_stitch_later_wins", lambda: fb.dynamic_stitch([[0, 1], [1]], [[1, 2], [3]]),
     lambda: np.array([1, 3], np.int32)),
    ("dynamic_stitch_rows", lambda: fb.dynamic_stitch([0, [2, 1]], [D[:1][0], D[1:3]]),
     lambda: D[[0, 2, 1]]),
]  # fmt: skip
PARTS = np.array([[0, 2, 1], [2, 2, 0]], np.int32)
for _k in range(3):
    INDEX_CASES.append(
        (
            f"dynamic_partition_{_k}",
            lambda k=_k: fb.dynamic_partition(P, PARTS, 3)[k],
            lambda k=_k: P[k == PARTS],
        )
    )
TIES = np.array([[1.0, 3.0, 3.0, 2.0, 3.0], [5.0, 4.0, 4.0, 6.0, 4.0]], np.float32)
B = RNG.standard_normal((2, 4, 3)).astype(np.float32)
SEQ = np.arange(12).reshape(3, 4).astype(np.int32)
ORDER_CASES = [
    ("top_k_values", lambda: fb.nn.top_k(A, 2).values, lambda: -np.sort(-A, axis=1)[:, :2]),
    ("top_k_ties_lower_index_first", lambda: fb.nn.top_k(TIES, 3).indices,
     lambda: np.array([[1, 2, 4], [3, 0, 1]], np.int32)),
    ("math_top_k_int", lambda: fb.math.top_k(I5, 2)[0], lambda: np.array([5, 4], np.int32)),
    ("top_k_all", lambda: fb.nn.top_k(I5, 5).indices, lambda: np.array([4, 2, 0, 1, 3], np.int32)),
    ("sort", lambda: fb.sort(A), lambda: np.sort(A, axis=-1)),
    ("sort_desc_axis0", lambda: fb.sort(B, axis=0, direction="DESCENDING"),
     lambda: -np.sort(-B, axis=0)),
    ("sort_int", lambda: fb.sort(I5), lambda: np.sort(I5)),
    ("argsort", lambda: fb.argsort(B, axis=1),
     lambda: np.argsort(B, axis=1, kind="stable").astype(np.int32)),
    ("argsort_stable", lambda: fb.argsort(TIES[0]), lambda: np.array([0, 3, 1, 2, 4], np.int32)),
    ("in_top_k", lambda: fb.nn.in_top_k(TIES, [2, 1], 2),
     lambda: np.array([True, False])),
    ("in_top_k_boundary_ties", lambda: fb.math.in_top_k(TIES, [4, 2], 1),
     lambda: np.array([True, False])),
    ("in_top_k_bad_target", lambda: fb.nn.in_top_k(TIES, [7, -1], 5),
     lambda: np.array([False, False])),
    ("in_top_k_nan", lambda: fb.nn.in_top_k([[np.nan, 1.0]], [0], 2), lambda: np.array([False])),
    ("einsum_matmul", lambda: fb.einsum("ij,jk->ik", A, A.T), lambda: A @ A.T),
    ("einsum_implicit", lambda: fb.einsum("ba,bc", A, A), lambda: np.einsum("ba,bc", A, A)),
    ("einsum_trace", lambda: fb.einsum("ii", A[:3, :3]), lambda: np.trace(A[:3, :3])),
    ("einsum_batch", lambda: fb.einsum("bij,bjk->bik", B, B.transpose(0, 2, 1)),
     lambda: B @ B.transpose(0, 2, 1)),
    ("einsum_three", lambda: fb.einsum("i,ij,j->", A[:, 0], A, A[0]),
     lambda: np.einsum("i,ij,j->", A[:, 0], A, A[0])),
    ("tensordot_int", lambda: fb.tensordot(B, A, 1), lambda: np.tensordot(B, A, 1)),
    ("tensordot_pairs", lambda: fb.tensordot(B, B, [[0, 1], [0, 1]]),
     lambda: np.tensordot(B, B, [[0, 1], [0, 1]])),
    ("tensordot_outer", lambda: fb.tensordot(A[0], A[1], 0), lambda: np.multiply.outer(A[0], A[1])),
    ("reverse_sequence", lambda: fb.reverse_sequence(SEQ, [2, 4, 0], seq_axis=1),
     lambda: np.array([[1, 0, 2, 3], [7, 6, 5, 4], [8, 9, 10, 11]], np.int32)),
    ("reverse_sequence_tf1_names", lambda: fb.reverse_sequence(SEQ, [3, 1, 2, 2], seq_dim=0,
                                                               batch_dim=1),
     lambda: np.array([[8, 1, 6, 7], [4, 5, 2, 3], [0, 9, 10, 11]], np.int32)),
    ("sequence_mask", lambda: fb.sequence_mask([1, 3, 0], 4),
     lambda: np.arange(4) < np.array([[1], [3], [0]])),
    ("sequence_mask_default_len", lambda: fb.sequence_mask([[1], [2]], dtype=fb.float32),
     lambda: (np.arange(2) < np.array([[[1]], [[2]]])).astype(np.float32)),
    ("meshgrid_xy", lambda: fb.stack(fb.meshgrid([1, 2, 3], [4, 5])),
     lambda: np.stack(np.meshgrid([1, 2, 3], [4, 5])).astype(np.int32)),
    ("meshgrid_ij", lambda: fb.stack(fb.meshgrid([1, 2], [3, 4, 5], [6], indexing="ij")),
     lambda: np.stack(np.meshgrid([1, 2], [3, 4, 5], [6], indexing="ij")).astype(np.int32)),
    ("arg_max", lambda: fb.arg_max(A, 1), lambda: np.argmax(A, 1)),
    ("arg_min_int32", lambda: fb.arg_min(A, 0, output_type=fb.int32),
     lambda: np.argmin(A, 0).astype(np.int32)),
    ("select", lambda: fb.select(A > 0, A, -A), lambda: np.abs(A)),
    ("concat_old_order", lambda: fb.concat(1, [A, A]), lambda: np.concatenate([A, A], 1)),
]  # fmt: skip
CASES = SCAN_CASES + SEGMENT_CASES + INDEX_CASES + ORDER_CASES


@pytest.mark.parametrize("name,build,reference", CASES, ids=[c[0] for c in CASES])
def test_against_numpy(name, build, reference):
    with fb.Graph().as_default(), fb.Session() as s:
        t = build()
        got = s.run(t)
    want = np.asarray(reference())
    assert got.dtype == want.dtype, name
    assert compatible(t._shape, got.shape), (name, t._shape, got.shape)
    np.testing.assert_allclose(got, want, rtol=1e-5, err_msg=name)


def test_static_shapes():
    with fb.Graph().as_default():
        x = fb.placeholder(fb.float32, [None, 3])
        assert fb.cumsum(x, 1).shape.as_list() == [None, 3]
        assert fb.segment_sum(x, [0, 1, 1]).shape.as_list() == [2, 3]
        ids = fb.placeholder(fb.int32, [None])
        assert fb.segment_max(x, ids).shape.as_list() == [None, 3]
        assert fb.unsorted_segment_prod(x, ids, 7).shape.as_list() == [7, 3]


def _err(exc, pattern, fn):
    with fb.Graph().as_default(), pytest.raises(exc) as info:
        fn()
    assert re.search(pattern, str(info.value)), str(info.value)
    assert re.search(r"\(tests/ops/test_scan_and_segment_ops\.py:\d+\)", str(info.value)), str(
        info.value
    )


def test_build_errors_name_the_op_and_line():
    _err(ValueError, r"^Cumsum 'Cumsum'.*axis 2 is out of range", lambda: fb.cumsum(A, 2))
    _err(TypeError, r"^Cumprod .*DataType bool", lambda: fb.cumprod([True, False]))
    _err(
        TypeError,
        r"^Cumsum .*'axis' of 'Cumsum' Op has type float",
        lambda: fb.cumsum(A, fb.constant(1.0)),
    )
    _err(ValueError, r"^SegmentSum .*not increasing", lambda: fb.segment_sum(D, [0, 1, 0, 2]))
    _err(ValueError, r"^SegmentMax .*must be >= 0", lambda: fb.segment_max(D, [-1, 0, 0, 0]))
    _err(
        ValueError,
        r"^SegmentMean .*has 3 ids but data has 4 rows",
        lambda: fb.segment_mean(D, [0, 0, 1]),
    )
    _err(ValueError, r"^SegmentSum .*must be a vector", lambda: fb.segment_sum(D, [[0, 0]]))
    _err(
        TypeError,
        r"^SegmentMin .*DataType complex64",
        lambda: fb.segment_min(np.ones(2, np.complex64), [0, 0]),
    )
    _err(
        ValueError,
        r"^UnsortedSegmentMax .*prefix of the data shape",
        lambda: fb.unsorted_segment_max(D, [0, 1], 2),
    )


def test_index_build_errors_name_the_op_and_line():
    _err(ValueError, r"^GatherNd .*give 4 coordinates", lambda: fb.gather_nd(P, [[0, 0, 0, 0]]))
    _err(
        TypeError,
        r"^GatherNd .*'indices' of 'GatherNd' Op has type float",
        lambda: fb.gather_nd(P, fb.constant([[0.0]])),
    )
    _err(
        ValueError,
        r"^ScatterNd .*updates must have shape \[3,4\]",
        lambda: fb.scatter_nd(ND, np.ones((3, 5)), [2, 3, 4]),
    )
    _err(
        ValueError,
        r"^DynamicPartition .*prefix of data",
        lambda: fb.dynamic_partition(P, [0, 1, 0], 2),
    )
    _err(ValueError, r"^DynamicPartition .*at least 1", lambda: fb.dynamic_partition(P, [0], 0))
    _err(
        TypeError,
        r"^DynamicStitch .*data\[1\]' .* has type int32 that does not match",
        lambda: make1(
            "DynamicStitch",
            [fb.constant([0]), fb.constant([1]), fb.constant([1.0]), fb.constant([2])],
            {"N": 2},
        ),
    )


def test_order_and_einsum_build_errors():
    _err(ValueError, r"^TopKV2 .*at least k=6 columns", lambda: fb.nn.top_k(I5, 6))
    _err(TypeError, r"^TopKV2 .*DataType complex64", lambda: fb.nn.top_k(np.ones(2, np.complex64)))
    _err(ValueError, r"^InTopKV2 .*one row per target", lambda: fb.nn.in_top_k(TIES, [1], 1))
    _err(ValueError, r"^Einsum .*subscript 'j' is 4 and 3", lambda: fb.einsum("ij,jk->ik", A, A))
    _err(ValueError, r"^Einsum .*ellipses", lambda: fb.einsum("...i,i", A, A[0]))
    _err(ValueError, r"^Einsum .*subscripts 'ijk' say rank 3", lambda: fb.einsum("ijk", A))
    _err(ValueError, r"^Einsum .*has 1 operands, 2 inputs", lambda: fb.einsum("ij", A, A))
    _err(
        ValueError,
        r"^ReverseSequence .*seq_lengths has 2 entries",
        lambda: fb.reverse_sequence(SEQ, [1, 2], seq_axis=1),
    )
    _err(
        ValueError,
        r"^ReverseSequence .*must differ",
        lambda: fb.reverse_sequence(SEQ, [1, 2, 3], seq_axis=0),
    )
    with fb.Graph().as_default():
        with pytest.raises(ValueError, match="direction must be"):
            fb.sort(A, direction="UP")
        with pytest.raises(ValueError, match="indexing must be"):
            fb.meshgrid([1], [2], indexing="yx")
        with pytest.raises(ValueError, match="known rank"):
            fb.tensordot(fb.placeholder(fb.float32), A, 1)
        with pytest.raises(LookupError, match="repeated subscript"):
            x = fb.constant(A[:3, :3])
            fb.gradients(fb.einsum("ii", x), [x])


def test_reverse_sequence_lengths_checked_at_run_time():
    with fb.Graph().as_default(), fb.Session() as s:
        n = fb.placeholder(fb.int64, [3])
        with pytest.raises(fb.errors.InvalidArgumentError, match="must be in \\[0, 4\\]"):
            s.run(fb.reverse_sequence(SEQ, n, seq_axis=1), {n: [1, 5, 0]})


def test_static_shapes_of_order_ops():
    with fb.Graph().as_default():
        x = fb.placeholder(fb.float32, [None, 7])
        assert [t.shape.as_list() for t in fb.nn.top_k(x, 3)] == [[None, 3], [None, 3]]
        assert fb.nn.in_top_k(x, fb.placeholder(fb.int32, [None]), 2).shape.as_list() == [None]
        assert fb.einsum("bi,ij->bj", x, fb.zeros([7, 2])).shape.as_list() == [None, 2]
        assert fb.sequence_mask(fb.placeholder(fb.int32, [5]), 9).shape.as_list() == [5, 9]


def test_index_run_errors():
    with fb.Graph().as_default(), fb.Session() as s:
        i = fb.placeholder(fb.int32, [None, 2])
        with pytest.raises(fb.errors.InvalidArgumentError, match="index 3 in dimension 1"):
            s.run(fb.gather_nd(P, i), {i: [[0, 3]]})
        with pytest.raises(fb.errors.InvalidArgumentError, match="index -1 in dimension 0"):
            s.run(fb.scatter_nd(i, [1.0], [2, 3]), {i: [[-1, 0]]})
        p = fb.placeholder(fb.int32, [None])
        with pytest.raises(fb.errors.InvalidArgumentError, match="contain 2, which is not"):
            s.run(fb.dynamic_partition([1, 2], p, 2), {p: [0, 2]})


def test_variable_scatters():
    with fb.Graph().as_default(), fb.Session() as s:
        v = fb.Variable(np.zeros((4, 2), np.float32), name="v")
        s.run(v.initializer)
        got = s.run(fb.scatter_update(v, [3, 0], [[1, 2], [3, 4]]))
        assert got.tolist() == [[3, 4], [0, 0], [0, 0], [1, 2]]
        add = fb.scatter_add(v, [[1, 1], [1, 0]], np.ones((2, 2, 2), np.float32))
        assert s.run(add).tolist() == [[4, 5], [3, 3], [0, 0], [1, 2]]  # repeats add up
        assert s.run(fb.scatter_sub(v, 2, [5, 6])).tolist() == [[4, 5], [3, 3], [-5, -6], [1, 2]]
        assert s.run(v).tolist() == [[4, 5], [3, 3], [-5, -6], [1, 2]]  # the variable changed
        with pytest.raises(fb.errors.InvalidArgumentError, match="index 4 in dimension 0"):
            s.run(fb.scatter_add(v, [4], [[1, 1]]))
        assert s.run(v)[0].tolist() == [4, 5]  # a failed scatter leaves the value alone
        assert fb.gradients(add, [v])[0] is None
    with fb.Graph().as_default():
        v = fb.Variable([1.0, 2.0], name="w")
        _err_in(
            ValueError,
            r"^ScatterAdd .*updates must have shape indices.shape",
            lambda: fb.scatter_add(v, [0, 1], [1.0]),
        )
        with pytest.raises(TypeError, match="needs a Variable"):
            fb.scatter_update(fb.constant([1.0]), [0], [2.0])
        with fb.Session() as s, pytest.raises(fb.errors.FailedPreconditionError, match="w"):
            s.run(fb.scatter_update(v, [0], [5.0]))


def _err_in(exc, pattern, fn):
    with pytest.raises(exc) as info:
        fn()
    assert re.search(pattern, str(info.value)), str(info.value)


def test_sorted_ids_are_checked_at_run_time():
    with fb.Graph().as_default(), fb.Session() as s:
        ids = fb.placeholder(fb.int32, [None])
        t = fb.segment_sum(D, ids)
        assert s.run(t, {ids: [0, 0, 1, 1]}).tolist() == [[4.0, 6.0], [12.0, 14.0]]
        with pytest.raises(fb.errors.InvalidArgumentError, match="not increasing"):
            s.run(t, {ids: [1, 0, 1, 1]})
        with pytest.raises(fb.errors.InvalidArgumentError, match="is not < 2"):
            s.run(fb.unsorted_segment_max(D, ids, 2), {ids: [0, 2, 1, 1]})


def test_namespaces():
    for name in (
        "cumsum",
        "cumprod",
        "segment_sum",
        "unsorted_segment_mean",
        "gather_nd",
        "scatter_nd",
        "scatter_update",
        "dynamic_partition",
        "dynamic_stitch",
        "sort",
        "argsort",
        "einsum",
        "tensordot",
        "meshgrid",
        "sequence_mask",
        "reverse_sequence",
        "arg_max",
        "arg_min",
        "select",
    ):
        assert callable(getattr(fb, name)), name
    for name in (
        "cumsum",
        "cumprod",
        "segment_sum",
        "segment_mean",
        "segment_max",
        "segment_min",
        "segment_prod",
        "unsorted_segment_max",
        "unsorted_segment_min",
        "unsorted_segment_mean",
        "unsorted_segment_prod",
        "unsorted_segment_sum",
        "top_k",
        "in_top_k",
        "reduce_sum",
        "argmax",
    ):
        assert getattr(fb.math, name) is getattr(fb, name, getattr(fb.nn, name, None)), name
    assert fb.nn.top_k is fb.math.top_k and fb.nn.in_top_k is fb.math.in_top_k
