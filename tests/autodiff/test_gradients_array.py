"""Gradients of the array ops: a table checked against central finite differences.

Every row is ``(id, build, x)``: ``build`` takes a float64 placeholder and
returns the tensor to differentiate; ``compute_gradient_error`` compares the
Jacobian the registered gradients build with the numerical one.  Each row runs
with the placeholder's shape fully known, with unknown dims and with an
unknown rank, so the gradients must work from dynamic shapes.  The table must
cover every differentiable op of the array modules, and every op those modules
register must declare its gradient.
"""

from __future__ import annotations

import numpy as np
import pytest

import flowbook as fb
from flowbook.autodiff.gradient_checker import compute_gradient_error
from flowbook.framework.registry import NOT_DIFFERENTIABLE, OPS
from flowbook.ops._builder import make1

MODULES = (
    "flowbook.ops.array.shape_ops",
    "flowbook.ops.array.transpose_ops",
    "flowbook.ops.array.concat_ops",
    "flowbook.ops.array.fill_ops",
    "flowbook.ops.array.selection_ops",
    "flowbook.ops.array.slicing",
    "flowbook.ops.array.tile_pad_ops",
    "flowbook.ops.random.random_ops",
    "flowbook.ops.array.constant_op",
    "flowbook.ops.state.state_ops",
    "flowbook.ops.control_flow.control_flow_ops",
    "flowbook.ops.math.broadcast_grad",
    "flowbook.ops.nn.norm_ops",
    "flowbook.ops.random.candidate_sampling_ops",
    "flowbook.ops.math.scan_ops",
    "flowbook.ops.math.segment_ops",
    "flowbook.ops.state.scatter_ops",
    "flowbook.ops.array.partition_ops",
    "flowbook.ops.math.sort_ops",
    "flowbook.ops.linalg.einsum_ops",
    "flowbook.ops.array.sequence_ops",
    "flowbook.ops.array.space_ops",
    "flowbook.ops.nn.depthwise_ops",
    "flowbook.ops.linalg.matrix_diag_ops",
    "flowbook.ops.linalg.linalg_ops",
    "flowbook.ops.array.broadcast_ops",
    "flowbook.ops.array.set_ops",
    "flowbook.ops.debugging.assert_ops",
    "flowbook.ops.debugging.script_ops",
    "flowbook.ops.array.select_v2_ops",
    "flowbook.ops.array.identity_ops",
    "flowbook.ops.linalg.linalg_decomp",
    "flowbook.ops.image.patch_ops",
    "flowbook.ops.array.placeholder_ops",
    "flowbook.ops.random.multinomial_ops",
    "flowbook.ops.math.counting_ops",
)
# declared in the modules above, covered by other tables: the matrix products and inverses
# (test_gradients_math) and the scatters into variables and tensors (tests/ops)
ELSEWHERE = {"BatchMatMulV2", "MatMul", "MatrixDeterminant", "MatrixInverse", "Qr"} | {
    f"{kind}{how}"
    for kind, hows in (
        ("Scatter", ("Div", "Max", "Min", "Mul")),
        ("ScatterNd", ("Add", "Sub", "Update")),
        ("TensorScatter", ("Add", "Max", "Min", "Sub", "Update")),
    )
    for how in hows
}
MODULE_OPS = {
    n for n, d in OPS.items() if d.kernel is not None and d.kernel.__module__ in MODULES
} - ELSEWHERE

RNG = np.random.default_rng(0)
X23 = RNG.standard_normal((2, 3))
X34 = RNG.standard_normal((3, 4))
X234 = RNG.standard_normal((2, 3, 4))
X5 = RNG.standard_normal(5)
X131 = RNG.standard_normal((1, 3, 1))
X2236 = RNG.standard_normal((2, 2, 3, 6))
C23 = np.arange(6.0).reshape(2, 3)
X2466 = RNG.standard_normal((2, 4, 6, 6))
F3 = RNG.standard_normal((2, 3, 6, 2))  # a depthwise filter over 6 channels, multiplier 2
W3 = RNG.standard_normal((2, 2, 6, 3))


def _dw_backprop_input(dy):
    return fb.nn.depthwise_conv2d_native_backprop_input([2, 2, 3, 6], F3, dy, [1, 2, 1, 1], "SAME")


def _dw_backprop_filter(x):
    dy = fb.constant(RNG.standard_normal((2, 1, 3, 12)))
    return fb.nn.depthwise_conv2d_native_backprop_filter(x, F3.shape, dy, [1, 2, 1, 1], "SAME")


X33 = RNG.standard_normal((3, 3))
X2323 = RNG.standard_normal((2, 3, 2, 3))
I3 = np.eye(3)
PATCH_ATTRS = {"ksizes": [1, 2, 2, 1], "strides": [1, 2, 2, 1], "rates": [1, 1, 1, 1]}
PATCH_ATTRS["padding"] = "VALID"
SPD3 = X33 @ X33.T + 3 * np.eye(3)
COND = np.array([[True, False, True], [False, False, True]])


ZERO5 = np.array([1.0, 0.0, 1.0, 0.0, 0.0])  # segment 0 has one zero, segment 1 two
PADS = [[1, 0], [1, 1]]
REFLECT = {"mode": "REFLECT"}


def _strided_slice_grad(dy):
    """The helper op itself: ``dy`` scattered into zeros[4, 7] at ``[1::2, 6:0:-2]``."""
    shape, begin, end, strides = (fb.constant(v) for v in ([4, 7], [1, 6], [0, 0], [2, -2]))
    masks = {"begin_mask": 0, "end_mask": 1, "ellipsis_mask": 0}
    masks.update(new_axis_mask=0, shrink_axis_mask=0)
    return make1("StridedSliceGrad", [shape, begin, end, strides, dy], masks)


CASES = [
    ("identity", lambda x: fb.identity(x), X23),
    ("reshape", lambda x: fb.reshape(x, [3, -1]), X23),
    ("reshape_flat", lambda x: fb.reshape(x, [-1]), X234),
    ("reshape_dynamic", lambda x: fb.reshape(x, fb.stack([fb.size(x)])), X23),
    ("transpose_perm", lambda x: fb.transpose(x, [1, 2, 0]), X234),
    ("transpose_default", lambda x: fb.transpose(x), X234),
    ("expand_dims", lambda x: fb.expand_dims(x, -1), X23),
    ("expand_dims_0", lambda x: fb.expand_dims(x, 0), X5),
    ("squeeze_all", lambda x: fb.squeeze(x), X131),
    ("squeeze_axis", lambda x: fb.squeeze(x, [0]), X131),
    ("concat_1", lambda x: fb.concat([x, fb.constant(C23), x], 1), X23),
    ("concat_neg", lambda x: fb.concat([fb.constant(C23), x], -2), X23),
    ("concat_one", lambda x: make1("ConcatV2", [x, fb.constant(0)], {"N": 1}), X23),
    ("stack", lambda x: fb.stack([x, fb.constant(C23)], axis=1), X23),
    ("stack_last", lambda x: fb.stack([x, x, x], axis=-1), X23),
    ("tile", lambda x: fb.tile(x, [2, 3]), X23),
    ("tile_ones", lambda x: fb.tile(x, [1, 2, 1]), X234),
    ("pad", lambda x: fb.pad(x, [[1, 2], [0, 1]]), X23),
    ("pad_v2", lambda x: fb.pad(x, [[0, 1], [2, 0]], constant_values=3.0), X23),
    ("pad_int64", lambda x: fb.pad(x, np.array([[1, 0], [0, 2]], np.int64)), X23),
    ("mirror_reflect", lambda x: fb.pad(x, [[1, 2], [3, 1]], mode="REFLECT"), X34),
    ("mirror_symmetric", lambda x: fb.pad(x, [[3, 2], [0, 4]], mode="SYMMETRIC"), X34),
    ("fill", lambda x: fb.fill([2, 3], x), np.array(1.5)),
    ("split", lambda x: fb.split(x, 3, axis=1)[1], X23),
    ("split_all", lambda x: fb.stack(fb.split(x, 2, axis=-1)), X234),
    ("splitv", lambda x: fb.split(x, [1, -1, 1], axis=1)[1], X34),
    ("unstack", lambda x: fb.unstack(x, num=3, axis=1)[2], X23),
    ("unstack_all", lambda x: fb.concat(fb.unstack(x, num=2), 0), X23),
    ("gather_repeats", lambda x: fb.gather(x, [3, 0, 3, 3, 1]), X5),
    ("gather_rows", lambda x: fb.gather(x, [[2, 0], [2, 2]]), X34),
    ("gather_axis1", lambda x: fb.gather(x, [[2, 0], [2, 2]], axis=1), X234),
    ("gather_last", lambda x: fb.gather(x, [3, 3, 0], axis=-1), X234),
    ("gather_scalar", lambda x: fb.gather(x, 1, axis=1), X234),
    ("boolean_mask", lambda x: fb.boolean_mask(x, COND), X23),
    ("reverse", lambda x: fb.reverse(x, [0, -1]), X234),
    ("select_t", lambda x: fb.where(COND, x, fb.constant(C23)), X23),
    ("select_e", lambda x: fb.where(COND, fb.constant(C23), x), X23),
    ("select_vector", lambda x: fb.where([True, False], x, x[::-1]), X23),
    ("slice", lambda x: fb.slice(x, [1, 0], [2, -1]), X34),
    ("slice_int64", lambda x: fb.slice(x, np.array([0, 1, 1], np.int64), [-1, 1, 2]), X234),
    ("getitem_steps", lambda x: x[1:, ::2], X34),
    ("getitem_reverse", lambda x: x[::-1, -2], X34),
    ("getitem_neg_step", lambda x: x[-1:0:-2, 3:0:-2], X34),
    ("getitem_ellipsis", lambda x: x[..., 1], X234),
    ("getitem_newaxis", lambda x: x[:, fb.newaxis, 1:3], X34),
    ("getitem_all", lambda x: x[fb.newaxis, ..., ::-2, None], X234),
    ("getitem_clamped", lambda x: x[1:50:2], X5),
    ("getitem_scalar", lambda x: x[0, -1], X23),
    ("getitem_tensor", lambda x: x[fb.constant(1), 1:], X34),
    ("strided_slice_masks", lambda x: fb.strided_slice(x, [0, 3], [0, 0], [1, -1], 1, 2), X34),
    ("invert_perm_transpose", lambda x: fb.transpose(x, fb.invert_permutation([2, 0, 1])), X234),
    ("segment_sum", lambda x: fb.unsorted_segment_sum(x, [2, 0, -1, 2, 1], 4), X5),
    ("segment_sum_rows", lambda x: fb.unsorted_segment_sum(x, [1, 1, 0], 2), X34),
    ("strided_slice_grad", lambda x: _strided_slice_grad(x), X23),
    ("lrn", lambda x: fb.nn.lrn(x, 2, 1.5, 0.7, 0.75), X2236),
    ("mirror_pad_grad", lambda x: make1("MirrorPadGrad", [x, fb.constant(PADS)], REFLECT), X34),
    # the long tail: scans, segments
    ("cumsum", lambda x: fb.cumsum(x, axis=1), X23),
    ("cumsum_excl_rev", lambda x: fb.cumsum(x, -1, exclusive=True, reverse=True), X234),
    ("cumprod", lambda x: fb.cumprod(x, axis=0), X34),
    ("cumprod_excl_rev", lambda x: fb.cumprod(x, 1, exclusive=True, reverse=True), X34),
    ("seg_sum", lambda x: fb.segment_sum(x, [0, 0, 2]), X34),
    ("seg_mean", lambda x: fb.segment_mean(x, [0, 1, 1]), X34),
    ("seg_max", lambda x: fb.segment_max(x, [0, 0, 0, 1, 1]), X5),
    ("seg_min", lambda x: fb.segment_min(x, [0, 0, 1]), X34),
    ("seg_max_ties", lambda x: fb.segment_max(fb.round(x * 0) + x[:1], [0, 0, 1, 1, 1]), X5),
    ("seg_prod", lambda x: fb.segment_prod(x, [0, 0, 1, 1, 1]), X5),
    ("seg_prod_zeros", lambda x: fb.segment_prod(x * ZERO5, [0, 0, 1, 1, 2]), X5),
    ("useg_max", lambda x: fb.unsorted_segment_max(x, [1, -1, 0], 2), X34),
    ("useg_min", lambda x: fb.unsorted_segment_min(x, [[0, 1, 0], [-1, 1, 2]], 3), X234),
    ("useg_prod", lambda x: fb.unsorted_segment_prod(x, [2, 0, 2, -1, 2], 3), X5),
    ("useg_mean", lambda x: fb.unsorted_segment_mean(x, [1, 1, 0], 2), X34),
    # scatters, n-d gathers, partitions
    ("gather_nd", lambda x: fb.gather_nd(x, [[1, 2], [0, 0], [1, 2]]), X23),
    ("gather_nd_slices", lambda x: fb.gather_nd(x, [[[1]], [[0]]]), X234),
    ("scatter_nd", lambda x: fb.scatter_nd([[1], [3], [1]], x[:3], [4]), X5),
    ("scatter_nd_rows", lambda x: fb.scatter_nd([[0, 2], [0, 2]], x[:2], [2, 3, 4]), X34),
    ("dynamic_partition", lambda x: fb.dynamic_partition(x, [2, 0, 2], 3)[2], X34),
    ("dynamic_partition_2d", lambda x: fb.dynamic_partition(x, [[1, 0, 1], [1, 1, 0]], 2)[0], X234),
    ("dynamic_stitch", lambda x: fb.dynamic_stitch([[3, 0], [1, 2, 4]], [x[:2], x[2:]]), X5),
    ("dynamic_stitch_rows", lambda x: fb.dynamic_stitch([[1], [0, 2]], [x[:1], x[1:]]), X34),
    # ordering, einsum, sequences
    ("top_k", lambda x: fb.nn.top_k(x, 2).values, X234),
    ("top_k_vector", lambda x: fb.nn.top_k(x, 5).values, X5),
    # sort along another axis and tensordot need a known rank: reshape gives it back
    ("sort_axis0", lambda x: fb.sort(fb.reshape(x, [3, 4]), 0, direction="DESCENDING"), X34),
    ("einsum_matmul", lambda x: fb.einsum("ij,jk->ik", x, fb.constant(X34)), X23),
    ("einsum_square", lambda x: fb.einsum("ij,kj", x, x), X23),
    ("einsum_summed", lambda x: fb.einsum("ijk,j->i", x, fb.constant(X5[:3])), X234),
    ("einsum_outer", lambda x: fb.einsum("i,j->ij", x, fb.constant(X5[:2])), X5),
    ("tensordot", lambda x: fb.tensordot(fb.reshape(x, [2, 3]), X34, [[1], [0]]), X23),
    ("reverse_sequence", lambda x: fb.reverse_sequence(x, [3, 1, 2], seq_axis=1), X34),
    ("reverse_sequence_b1", lambda x: fb.reverse_sequence(x, [2, 0, 1], 0, batch_axis=1), X234),
    ("meshgrid", lambda x: fb.meshgrid(x, fb.constant(X5[:2]))[0], X5),
    # spatial moves and depthwise conv (one input differentiated at a time)
    ("space_to_batch_nd", lambda x: fb.space_to_batch_nd(x, [2, 3], [[1, 1], [2, 1]]), X2236),
    ("batch_to_space_nd", lambda x: fb.batch_to_space_nd(x, [1, 2], [[0, 1], [1, 0]]), X2236),
    ("space_to_batch_1d", lambda x: fb.space_to_batch_nd(x, [2], [[0, 1]]), X234),
    ("space_to_depth", lambda x: fb.nn.space_to_depth(x, 2), X2466),
    ("depth_to_space", lambda x: fb.nn.depth_to_space(x, 2), X2236[:, :, :, :4]),
    ("depthwise", lambda x: fb.nn.depthwise_conv2d_native(x, F3, [1, 2, 1, 1], "SAME"), X2236),
    ("depthwise_rate", lambda x: fb.nn.depthwise_conv2d(x, F3, [1] * 4, "SAME", rate=2), X2466),
    ("depthwise_bi", lambda x: _dw_backprop_input(x), RNG.standard_normal((2, 1, 3, 12))),
    ("depthwise_bf", lambda x: _dw_backprop_filter(x), X2236),
    ("atrous_conv2d", lambda x: fb.nn.atrous_conv2d(x, W3[..., :6, :], 2, "SAME"), X2236),
    ("conv1d", lambda x: fb.nn.conv1d(x, W3[0, :, :4, :], 2, "VALID"), X234),
    # the top-level tf.* names: diagonals, bands, solves
    ("matrix_diag", lambda x: fb.matrix_diag(x), X23),
    ("matrix_diag_part", lambda x: fb.matrix_diag_part(x), X234),
    ("matrix_set_diag", lambda x: fb.matrix_set_diag(x, fb.constant(C23[0, :2] + 9)), X23),
    ("matrix_set_diag_d", lambda x: fb.matrix_set_diag(fb.constant(X234), x), X23),
    ("matrix_band_part", lambda x: fb.matrix_band_part(x, 1, 0), X234),
    ("diag", lambda x: fb.diag(x), X23),
    ("diag_part", lambda x: fb.diag_part(x), X2323),
    ("trace", lambda x: fb.trace(x), X234),
    ("matrix_transpose", lambda x: fb.matrix_transpose(x), X234),
    ("cholesky", lambda x: fb.cholesky(fb.matmul(x, x, transpose_b=True) + 3 * I3), X33),
    ("matrix_solve", lambda x: fb.matrix_solve(x + 3 * I3, X34), X33),
    ("matrix_solve_rhs", lambda x: fb.matrix_solve(X33 + 3 * I3, x, adjoint=True), X34),
    ("tri_solve", lambda x: fb.matrix_triangular_solve(x + 3 * I3, X34), X33),
    ("tri_solve_up_adj", lambda x: fb.matrix_triangular_solve(x + 3 * I3, X34, False, True), X33),
    ("tri_solve_rhs", lambda x: fb.matrix_triangular_solve(X33 + 3 * I3, x), X34),
    ("cross", lambda x: fb.cross(x, fb.constant(X23[::-1])), X23),
    ("norm", lambda x: fb.norm(x), X234),
    ("norm_p3_axis", lambda x: fb.norm(x, 3, axis=1, keepdims=True), X234),
    ("norm_fro", lambda x: fb.norm(x, "fro", axis=[0, 2]), X234),
    ("norm_1_matrix", lambda x: fb.norm(x, 1, axis=[-2, -1]), X2236),
    ("broadcast_to", lambda x: fb.broadcast_to(x, [4, 2, 3]), X23),
    ("broadcast_to_ones", lambda x: fb.broadcast_to(x, [2, 3, 3]), X131),
    ("roll", lambda x: fb.roll(x, [1, -5], [0, 2]), X234),
    ("logsumexp", lambda x: fb.reduce_logsumexp(x, [0, 2]), X234),
    ("logsumexp_all", lambda x: fb.reduce_logsumexp(x * 50), X23),
    ("log_sigmoid", lambda x: fb.log_sigmoid(x), X23),
    ("where_v2_t", lambda x: fb.where_v2(COND, x[:1], fb.constant(C23)), X23),
    ("where_v2_e", lambda x: fb.where_v2([[True], [False]], fb.constant(C23), x), X5[:3]),
    # identities and repeat
    ("ensure_shape", lambda x: fb.ensure_shape(x, [2, None]), X23),
    ("identity_n", lambda x: fb.identity_n([x, x * 2])[1], X23),
    ("repeat", lambda x: fb.repeat(x, [2, 0, 3], axis=1), X23),
    ("repeat_flat", lambda x: fb.repeat(x, 2), X23),
    # decompositions and least squares (eigenvectors squared: their sign is arbitrary)
    ("eigvals", lambda x: fb.self_adjoint_eigvals(x), X33),
    ("eig_values", lambda x: fb.self_adjoint_eig(x)[0], X33),
    ("eig_vectors", lambda x: fb.self_adjoint_eig(x)[1] ** 2, X33),
    ("cholesky_solve", lambda x: fb.cholesky_solve(fb.cholesky(SPD3), x), X34),
    ("solve_ls_tall", lambda x: fb.matrix_solve_ls(x, X34.T[:, :2], 0.1), X34.T),
    (
        "patches",
        lambda x: fb.extract_image_patches(x, [1, 2, 3, 1], [1, 2, 1, 1], [1, 1, 2, 1], "VALID"),
        X2466,
    ),
    (
        "patches_same",
        lambda x: fb.extract_image_patches(x, [1, 2, 2, 1], [1, 2, 3, 1], [1, 2, 1, 1], "SAME"),
        X2236,
    ),
    (
        "patches_grad",
        lambda x: make1("ExtractImagePatchesGrad", [x, fb.constant([2, 2, 3, 6])], PATCH_ATTRS),
        X2236[:, :1, :1, :].repeat(4, -1),
    ),
    ("solve_ls_wide", lambda x: fb.matrix_solve_ls(x, X23.T[:2], 0.1), X23),
]


@pytest.mark.parametrize("name,build,x0", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("how", ["static", "dims", "rank"])
def test_gradient_matches_finite_differences(name, build, x0, how):
    with fb.Graph().as_default():
        shape = {"static": x0.shape, "dims": [None] * x0.ndim, "rank": None}[how]
        x = fb.placeholder(fb.float64, shape)
        y = build(x)
        with fb.Session() as s:
            y0 = s.run(y, {x: x0})
            err = compute_gradient_error(x, x0.shape, y, y0.shape, x_init_value=x0, session=s)
    assert err < 1e-6, f"{name}: Jacobians differ by {err}"


def test_tables_cover_every_differentiable_op():
    with fb.Graph().as_default() as g:
        for _, build, x0 in CASES:
            x = fb.placeholder(fb.float64, x0.shape)
            fb.gradients(build(x), [x])
        seen = {op.type for op in g.get_operations()}
    differentiable = {n for n in MODULE_OPS if callable(OPS[n].grad)}
    assert differentiable <= seen, sorted(differentiable - seen)


def test_every_op_declares_its_gradient():
    missing = sorted(n for n in MODULE_OPS if OPS[n].grad is None)
    assert not missing, f"no gradient declared for {missing}"
    for n in MODULE_OPS:
        assert OPS[n].grad is NOT_DIFFERENTIABLE or callable(OPS[n].grad), n
    stopped = {
        "StopGradient",
        "Shape",
        "Size",
        "Rank",
        "Range",
        "OneHot",
        "ZerosLike",
        "OnesLike",
        "Where",
        "Const",
        "Placeholder",
        "VariableV2",
        "Assign",
        "AssignAdd",
        "AssignSub",
        "IsVariableInitialized",
        "NoOp",
        "BroadcastGradientArgs",
        "RandomUniform",
        "RandomStandardNormal",
        "TruncatedNormal",
        "RandomUniformInt",
        "RandomShuffle",
        "InvertPermutation",
        "ConcatOffset",
        "LRNGrad",
        "LogUniformCandidateSampler",
        "UniformCandidateSampler",
        "ScatterUpdate",
        "ScatterAdd",
        "ScatterSub",
        "InTopKV2",
        "LinSpace",
        "BroadcastArgs",
        "Assert",
        "PlaceholderWithDefault",
        "Multinomial",
        "Bincount",
        "HistogramFixedWidth",
        "LowerBound",
        "UpperBound",
        "UnravelIndex",
        "PyFunc",
        "PyFuncStateless",
        "Unique",
        "UniqueWithCounts",
        "ListDiff",
        "Bitcast",
        "Svd",
    }
    assert stopped <= MODULE_OPS
    assert {n for n in MODULE_OPS if OPS[n].grad is NOT_DIFFERENTIABLE} == stopped


def _grad(y, x, grad_ys=None, feed=None):
    (g,) = fb.gradients(y, [x], grad_ys=grad_ys)
    with fb.Session() as s:
        return None if g is None else s.run(g, feed)


def test_gather_repeated_indices_add_up():
    x = fb.constant([1.0, 2.0, 3.0, 4.0])
    got = _grad(
        fb.gather(x, [[1, 1], [3, 1]]),
        x,
        grad_ys=[np.array([[1.0, 10.0], [100.0, 1000.0]], np.float32)],
    )
    assert got.tolist() == [0.0, 1011.0, 0.0, 100.0]


def test_stop_gradient_and_int_outputs_give_none():
    x = fb.placeholder(fb.float64, [2, 3])
    assert fb.gradients(fb.stop_gradient(x), [x]) == [None]
    assert fb.gradients(fb.shape(x), [x]) == [None]
    assert fb.gradients(fb.zeros_like(x), [x]) == [None]


def test_gradients_are_named_after_their_op():
    x = fb.placeholder(fb.float64, [None, 3])
    (g,) = fb.gradients(fb.transpose(x, name="t"), [x])
    assert g.op.name.startswith("gradients/t_grad/")
    assert g.shape.as_list() == [None, 3]


def test_static_shapes_survive_backprop():
    x = fb.placeholder(fb.float64, [4, 6])
    y = fb.concat([fb.tile(x[1:, ::2], [2, 1]), fb.pad(x, [[2, 0], [0, 0]])[:, 3:]], 1)
    (g,) = fb.gradients(y, [x])
    assert g.shape.as_list() == [4, 6]


def test_split_gradient_fills_unused_outputs_with_zeros():
    x = fb.constant(np.arange(6.0).reshape(2, 3))
    got = _grad(fb.split(x, 3, axis=1)[2], x)
    assert got.tolist() == [[0.0, 0.0, 1.0], [0.0, 0.0, 1.0]]


def test_helper_ops_run():
    with fb.Session() as s:
        assert s.run(fb.invert_permutation([3, 0, 2, 1])).tolist() == [1, 3, 2, 0]
        shapes = [fb.constant([2, 3]), fb.constant([2, 5])]
        offsets = make1("ConcatOffset", [fb.constant(-1), *shapes], {"N": 2}).op.outputs
        assert [o.tolist() for o in s.run(list(offsets))] == [[0, 0], [0, 3]]
        seg = fb.unsorted_segment_sum(np.ones((3, 2), np.float32), [0, 0, 2], 3)
        assert s.run(seg).tolist() == [[2.0, 2.0], [0.0, 0.0], [1.0, 1.0]]
    with (
        pytest.raises(fb.errors.InvalidArgumentError, match="not a permutation"),
        fb.Session() as s,
    ):
        s.run(fb.invert_permutation([0, 0]))


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_of_one_fed_index_keeps_the_static_shape(axis):
    params = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
    with fb.Graph().as_default(), fb.Session() as s:
        i = fb.placeholder(fb.int32, [])
        g = fb.gather(fb.constant(params), i, axis=axis)
        got = s.run(g, {i: 1})
        assert got.shape == tuple(g.shape.as_list())
        np.testing.assert_array_equal(got, np.take(params, 1, axis=axis))
        scalar = s.run(fb.gather(fb.constant(np.arange(5)), i), {i: 3})
        assert np.shape(scalar) == () and scalar == 3
        with pytest.raises(fb.errors.InvalidArgumentError, match="not in"):
            s.run(g, {i: 7})
