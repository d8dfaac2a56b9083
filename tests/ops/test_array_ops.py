"""Array, slicing and random ops: a table checked against numpy, static shapes, errors.

Every table row is ``(id, build, reference, inputs)``: ``build`` takes the
inputs as tensors and returns a tensor or a list of them, ``reference`` takes
them as arrays.  Each row runs twice: on constants (the static shape must be
fully known and equal the result's) and on placeholders of unknown dims (the
static shape must be compatible with the result's).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flowbook as fb
from flowbook.framework.errors import InvalidArgumentError
from flowbook.framework.registry import OPS
from flowbook.framework.tensor_shape import compatible
from flowbook.ops.array.array_ops import slice_helper
from flowbook.ops.array.constant_op import constant_value

ARRAY_MODULES = (
    "flowbook.ops.array.shape_ops",
    "flowbook.ops.array.transpose_ops",
    "flowbook.ops.array.concat_ops",
    "flowbook.ops.array.fill_ops",
    "flowbook.ops.array.selection_ops",
    "flowbook.ops.array.slicing",
    "flowbook.ops.array.tile_pad_ops",
    "flowbook.ops.random.random_ops",
)
# declared beside the ops whose gradients build them; test_gradients_array covers them
GRADIENT_HELPERS = {
    "ConcatOffset",
    "InvertPermutation",
    "MirrorPadGrad",
    "StridedSliceGrad",
    "UnsortedSegmentSum",
}
ARRAY_OPS = {
    n for n, d in OPS.items() if d.kernel is not None and d.kernel.__module__ in ARRAY_MODULES
} - GRADIENT_HELPERS

A23 = np.arange(6, dtype=np.float32).reshape(2, 3)
A234 = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
I5 = np.array([3, 0, 4, 1, 1], dtype=np.int32)
V6 = np.arange(6, dtype=np.int64)
MASK = np.array([True, False, True])
MASK23 = np.array([[True, False, True], [False, True, True]])


def _np_split(a, sizes, axis):
    return np.split(a, np.cumsum(sizes)[:-1], axis=axis)


def _np_one_hot(i, depth, axis=-1, on=1.0, off=0.0, dtype=np.float32):
    out = np.where(i[..., None] == np.arange(depth), on, off).astype(dtype)
    return np.moveaxis(out, -1, axis)


def _np_set_diag(x, d):
    out = x.copy()
    i = np.arange(min(x.shape[-2:]))
    out[..., i, i] = d
    return out


def _np_band(x, lo, up):
    i, j = np.indices(x.shape[-2:])
    return np.where(((lo < 0) | (i - j <= lo)) & ((up < 0) | (j - i <= up)), x, 0).astype(x.dtype)


def _np_lse(x, axis, keepdims=False):
    top = x.max(axis, keepdims=True)
    out = np.log(np.exp(x - top).sum(axis, keepdims=True)) + top
    return out if keepdims else out.squeeze(axis)


SPD = np.array([[4.0, 2.0, 0.5], [2.0, 3.0, 0.25], [0.5, 0.25, 2.0]])


CASES = [
    ("identity", lambda x: fb.identity(x), lambda x: x, [A23]),
    ("stop_gradient", lambda x: fb.stop_gradient(x), lambda x: x, [A23]),
    ("reshape", lambda x: fb.reshape(x, [3, -1]), lambda x: x.reshape(3, -1), [A23]),
    ("reshape_flat", lambda x: fb.reshape(x, [-1]), lambda x: x.ravel(), [A234]),
    ("reshape_scalar", lambda x: fb.reshape(x, []), lambda x: x.reshape(()), [np.ones([1, 1])]),
    ("transpose", lambda x: fb.transpose(x), lambda x: x.T, [A234]),
    ("transpose_perm", lambda x: fb.transpose(x, [1, 2, 0]), lambda x: x.transpose(1, 2, 0), [A234]),
    ("concat0", lambda x, y: fb.concat([x, y], 0), lambda x, y: np.concatenate([x, y]), [A23, A23 + 1]),
    (
        "concat_neg3",
        lambda x, y: fb.concat([x, y, x], -1),
        lambda x, y: np.concatenate([x, y, x], -1),
        [A23, np.ones([2, 1], np.float32)],
    ),
    ("concat_one", lambda x: fb.concat([x], 1), lambda x: x, [A23]),
    ("split3", lambda x: fb.split(x, 3, axis=1), lambda x: np.split(x, 3, 1), [A23]),
    (
        "splitv",
        lambda x: fb.split(x, [1, -1, 2], axis=2),
        lambda x: _np_split(x, [1, 1, 2], 2),
        [A234],
    ),
    ("slice", lambda x: fb.slice(x, [1, 0, 1], [1, -1, 2]), lambda x: x[1:2, :, 1:3], [A234]),
    (
        "strided_slice",
        lambda x: fb.strided_slice(x, [0, 2], [2, 0], [1, -1], shrink_axis_mask=1),
        lambda x: x[0, 2:0:-1],
        [A23],
    ),
    ("getitem", lambda x: slice_helper(x, (-1, None, Ellipsis, slice(1, None, 2))), lambda x: x[-1, None, ..., 1::2], [A234]),
    ("shape", lambda x: fb.shape(x), lambda x: np.array(x.shape, np.int32), [A234]),
    ("shape64", lambda x: fb.shape(x, out_type=fb.int64), lambda x: np.array(x.shape), [A23]),
    ("rank", lambda x: fb.rank(x), lambda x: np.int32(x.ndim), [A234]),
    ("size", lambda x: fb.size(x), lambda x: np.int32(x.size), [A234]),
    ("expand_dims", lambda x: fb.expand_dims(x, 1), lambda x: x[:, None], [A23]),
    ("expand_dims_neg", lambda x: fb.expand_dims(x, dim=-1), lambda x: x[..., None], [A23]),
    ("squeeze", lambda x: fb.squeeze(x), lambda x: x.squeeze(), [np.ones([1, 2, 1, 3])]),
    ("squeeze_axis", lambda x: fb.squeeze(x, [2]), lambda x: x.squeeze(2), [np.ones([1, 2, 1, 3])]),
    ("stack", lambda x, y: fb.stack([x, y]), lambda x, y: np.stack([x, y]), [A23, A23 * 2]),
    ("stack_axis", lambda x, y: fb.pack([x, y], axis=-1), lambda x, y: np.stack([x, y], -1), [A23, A23]),
    ("unstack", lambda x: fb.unstack(x, 2), lambda x: list(x), [A234]),
    ("unstack_axis", lambda x: fb.unstack(x, 4, axis=2), lambda x: list(np.moveaxis(x, 2, 0)), [A234]),
    ("gather", lambda x, i: fb.gather(x, i), lambda x, i: x[i], [A234[:, 0], np.array([1, 0, 1])]),
    ("gather_axis", lambda x, i: fb.gather(x, i, axis=2), lambda x, i: x[:, :, i], [A234, np.array([3, 0, 2])]),
    ("gather_2d", lambda x, i: fb.gather(x, i), lambda x, i: x[i], [A23.T, np.array([[2, 0], [1, 1]])]),
    ("one_hot", lambda i: fb.one_hot(i, 5), lambda i: _np_one_hot(i, 5), [I5]),
    ("one_hot_axis0", lambda i: fb.one_hot(i, 5, axis=0), lambda i: _np_one_hot(i, 5, 0), [I5]),
    (
        "one_hot_values",
        lambda i: fb.one_hot(i, 4, on_value=7, off_value=-1),
        lambda i: _np_one_hot(i, 4, on=7, off=-1, dtype=np.int32),
        [np.array([[0, 3], [5, -1]], np.int32)],
    ),
    ("tile", lambda x: fb.tile(x, [2, 1, 3]), lambda x: np.tile(x, [2, 1, 3]), [A234]),
    ("pad", lambda x: fb.pad(x, [[1, 0], [2, 3]]), lambda x: np.pad(x, [[1, 0], [2, 3]]), [A23]),
    (
        "pad_value",
        lambda x: fb.pad(x, [[1, 1], [0, 1]], constant_values=9),
        lambda x: np.pad(x, [[1, 1], [0, 1]], constant_values=9),
        [A23],
    ),
    (
        "pad_reflect",
        lambda x: fb.pad(x, [[1, 1], [2, 2]], "REFLECT"),
        lambda x: np.pad(x, [[1, 1], [2, 2]], "reflect"),
        [A23],
    ),
    (
        "pad_symmetric",
        lambda x: fb.pad(x, [[2, 2], [0, 3]], mode="symmetric"),
        lambda x: np.pad(x, [[2, 2], [0, 3]], "symmetric"),
        [A23],
    ),
    ("fill", lambda v: fb.fill([2, 3], v), lambda v: np.full([2, 3], v), [np.float64(2.5)]),
    ("zeros_like", lambda x: fb.zeros_like(x), np.zeros_like, [A23]),
    ("ones_like", lambda x: fb.ones_like(x), np.ones_like, [V6]),
    ("ones_like_dtype", lambda x: fb.ones_like(x, dtype=fb.int32), lambda x: np.ones(x.shape, np.int32), [A23]),
    ("range_data", lambda lim: fb.range(lim), lambda lim: np.arange(lim, dtype=np.int32), [np.int32(7)]),
    ("where", lambda c: fb.where(c), lambda c: np.argwhere(c), [MASK23]),
    ("select", lambda c, x, y: fb.where(c, x, y), np.where, [MASK23, A23, -A23]),
    ("select_vec", lambda c, x, y: fb.where(c, x, y), lambda c, x, y: np.where(c[:, None], x, y), [MASK[:2], A23, -A23]),
    ("reverse", lambda x: fb.reverse(x, [0, -1]), lambda x: x[::-1, :, ::-1], [A234]),
    ("boolean_mask", lambda x, m: fb.boolean_mask(x, m), lambda x, m: x[m], [A23.T, MASK]),
    ("boolean_mask_2d", lambda x, m: fb.boolean_mask(x, m), lambda x, m: x[m], [A234[:, :, 0], MASK23]),
    ("boolean_mask_axis", lambda x, m: fb.boolean_mask(x, m, axis=1), lambda x, m: x[:, m], [A234, MASK]),
    # the top-level tf.* names: diagonals, bands, solves
    ("matrix_diag", fb.matrix_diag, lambda d: d[..., None] * np.eye(3, dtype=d.dtype), [A23]),
    ("matrix_diag_part", fb.matrix_diag_part, lambda x: np.diagonal(x, 0, -2, -1), [A234]),
    ("matrix_set_diag", fb.matrix_set_diag, _np_set_diag, [A234, -A23]),
    ("matrix_band_part", fb.matrix_band_part, _np_band, [A234, np.int64(1), np.int64(0)]),
    ("matrix_band_all", fb.matrix_band_part, _np_band, [A234, np.int64(-1), np.int64(2)]),
    ("diag", fb.diag, lambda d: np.diag(d.ravel()).reshape(2, 3, 2, 3), [A23]),
    ("diag_part", fb.diag_part, lambda x: np.diagonal(x.reshape(6, 6)).reshape(2, 3), [np.arange(36.0).reshape(2, 3, 2, 3)]),
    ("trace", fb.trace, lambda x: np.trace(x, 0, -2, -1), [A234]),
    ("cholesky", fb.cholesky, np.linalg.cholesky, [SPD]),
    ("matrix_solve", fb.matrix_solve, np.linalg.solve, [SPD, SPD[..., :2]]),
    ("matrix_solve_adj", lambda m, r: fb.matrix_solve(m, r, adjoint=True), lambda m, r: np.linalg.solve(m.T, r), [SPD + np.eye(3)[::-1], SPD[:, :1]]),
    ("tri_solve", fb.matrix_triangular_solve, lambda m, r: np.linalg.solve(np.tril(m), r), [SPD + 9, SPD]),
    ("tri_solve_upper", lambda m, r: fb.matrix_triangular_solve(m, r, lower=False), lambda m, r: np.linalg.solve(np.triu(m), r), [SPD + 9, SPD]),
    ("cross", fb.cross, np.cross, [A23, A23[::-1] ** 2]),
    ("linspace", fb.linspace, lambda a, b, n: np.linspace(a, b, n, dtype=np.float32), [np.float32(-1), np.float32(2), np.int32(7)]),
    ("linspace_1", fb.lin_space, lambda a, b, n: np.array([a]), [np.float64(3), np.float64(5), np.int32(1)]),
    ("broadcast_to", lambda x: fb.broadcast_to(x, [4, 2, 3]), lambda x: np.broadcast_to(x, (4, 2, 3)), [A23]),
    ("broadcast_to_1", lambda x: fb.broadcast_to(x, [3, 4]), lambda x: np.broadcast_to(x, (3, 4)), [A23[:, :1].T[:, :1]]),
    ("broadcast_args", fb.broadcast_dynamic_shape, lambda a, b: np.array(np.broadcast_shapes(tuple(a), tuple(b)), a.dtype), [np.array([2, 1, 3], np.int32), np.array([4, 1], np.int32)]),
    ("roll", lambda x: fb.roll(x, [1, -2], [0, 2]), lambda x: np.roll(x, (1, -2), (0, 2)), [A234]),
    ("roll_flat", lambda x: fb.roll(x, 4, 0), lambda x: np.roll(x, 4, 0), [V6]),
    ("unique", lambda x: list(fb.unique(x)), lambda x: [np.array([3, 0, 4, 1], np.int32), np.array([0, 1, 2, 3, 3], np.int32)], [I5]),
    ("unique_counts", lambda x: list(fb.unique_with_counts(x, fb.int64)), lambda x: [np.array([3, 0, 4, 1], np.int32), np.array([0, 1, 2, 3, 3]), np.array([1, 1, 1, 2])], [I5]),
    ("setdiff1d", lambda x, y: list(fb.setdiff1d(x, y)), lambda x, y: [np.array([3, 0, 4], np.int32), np.array([0, 1, 2], np.int32)], [I5, I5[3:]]),
    ("unique_float", lambda x: list(fb.unique(x, fb.int64)), lambda x: [np.float32([2, 1]), np.array([0, 1, 0])], [np.float32([2, 1, 2])]),
    ("setdiff1d_float", lambda x, y: list(fb.setdiff1d(x, y, fb.int64)), lambda x, y: [np.float32([2, 2]), np.array([0, 2])], [np.float32([2, 1, 2]), np.float32([1])]),
    ("where_v2", fb.where_v2, np.where, [MASK[:2, None], A23[:1], -A23[:, :1]]),
    ("where_v2_scalar", lambda c, y: fb.where_v2(c, 7.0, y), lambda c, y: np.where(c, np.float32(7), y), [MASK, A23]),
    ("with_default", lambda x: fb.placeholder_with_default(x, [None, 3]), lambda x: x, [A23]),
    ("bincount", lambda x: fb.bincount(x, minlength=7), lambda x: np.bincount(x, minlength=7).astype(np.int32), [I5]),
    ("bincount_w", lambda x, w: fb.bincount(x, w, maxlength=3, dtype=fb.float32), lambda x, w: np.bincount(x, w)[:3].astype(np.float32), [I5, A23.ravel()[:5]]),
    ("histogram", lambda v, r: fb.histogram_fixed_width(v, r, 4), lambda v, r: np.histogram(np.clip(v, 0, 5.99), 4, (0, 6))[0].astype(np.int32), [A234.ravel() - 3, np.float32([0, 6])]),
    ("searchsorted", fb.searchsorted, lambda s, v: np.stack([np.searchsorted(a, b) for a, b in zip(s, v)]).astype(np.int32), [A23, A23[::-1] - 0.5]),
    ("searchsorted_right", lambda s, v: fb.searchsorted(s, v, "right", fb.int64), lambda s, v: np.searchsorted(s, v, "right"), [V6, V6[::-1] - 1]),
    ("unravel_index", fb.unravel_index, lambda i, d: np.stack(np.unravel_index(i, d)).astype(np.int32), [I5, np.int32([2, 3])]),
    ("unravel_index64", fb.unravel_index, lambda i, d: np.stack(np.unravel_index(i, d)), [V6, np.int64([3, 2])]),
    ("count_nonzero", lambda x: fb.count_nonzero(x, 1), lambda x: np.count_nonzero(x, 1).astype(np.int64), [A234]),
    ("count_nonzero_bool", lambda m: fb.count_nonzero(m, dtype=fb.int32), lambda m: np.int32(np.count_nonzero(m)), [MASK23]),
    ("logsumexp", lambda x: fb.reduce_logsumexp(x * 100, [0, 2]), lambda x: _np_lse(x * 100, (0, 2)), [A234]),
    ("logsumexp_keep", lambda x: fb.reduce_logsumexp(x, 1, keepdims=True), lambda x: _np_lse(x, 1, True), [A234]),
]  # fmt: skip

DATA_DEPENDENT = {
    "unique",
    "unique_counts",
    "setdiff1d",
    "unique_float",
    "bincount",
    "bincount_w",
    "histogram",
    "with_default",  # its static shape is the declared [?, 3]
    "setdiff1d_float",
    "where",
    "boolean_mask",
    "boolean_mask_2d",
    "boolean_mask_axis",
}  # shapes: [?, ...]

# builders with no tensor inputs: (id, build, expected value)
SOURCES = [
    ("zeros", lambda: fb.zeros([2, 3]), np.zeros([2, 3], np.float32)),
    ("zeros_big", lambda: fb.zeros([40, 30], fb.int64), np.zeros([40, 30], np.int64)),
    ("ones", lambda: fb.ones((3,), dtype=fb.float64), np.ones(3)),
    ("ones_big", lambda: fb.ones([1000]), np.ones(1000, np.float32)),
    ("ones_tensor_shape", lambda: fb.ones(fb.constant([2, 2])), np.ones([2, 2], np.float32)),
    ("zeros_like_dtype", lambda: fb.zeros_like(fb.ones([2]), dtype=fb.bool), np.zeros(2, bool)),
    ("range5", lambda: fb.range(5), np.arange(5, dtype=np.int32)),
    ("range_step", lambda: fb.range(1, 10, 3), np.arange(1, 10, 3, dtype=np.int32)),
    ("range_down", lambda: fb.range(10, 0, -2), np.arange(10, 0, -2, dtype=np.int32)),
    ("range_float", lambda: fb.range(5.0), np.arange(5, dtype=np.float32)),
    (
        "range_tenth",
        lambda: fb.range(0, 1, 0.1),
        np.arange(0, 1, np.float32(0.1), dtype=np.float32),
    ),
    ("range_dtype", lambda: fb.range(3, dtype=fb.float64), np.arange(3, dtype=np.float64)),
    ("range_empty", lambda: fb.range(3, 3), np.arange(0, dtype=np.int32)),
    ("stack_python", lambda: fb.stack([[1, 2], [3, 4]]), np.array([[1, 2], [3, 4]], np.int32)),
    ("stack_mixed", lambda: fb.stack([fb.constant(1.5), 2]), np.array([1.5, 2], np.float32)),
    ("fill_dynamic", lambda: fb.fill(fb.shape(fb.zeros([2, 1])), 3), np.full([2, 1], 3, np.int32)),
]


def run(fetches, feed=None):
    with fb.Session() as s:
        return s.run(fetches, feed)


def _as_list(x):
    return list(x) if isinstance(x, list | tuple) else [x]


def _check(tensors, got, want, exact_shapes):
    tensors, got, want = _as_list(tensors), _as_list(got), _as_list(want)
    assert len(got) == len(want) == len(tensors)
    for t, g, w in zip(tensors, got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype == t.dtype.np, (t, g.dtype, w.dtype)
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-6)
        if exact_shapes:
            assert t._shape == g.shape, f"{t} static {t._shape} runtime {g.shape}"
        else:
            assert compatible(t._shape, g.shape), f"{t} static {t._shape} runtime {g.shape}"


@pytest.mark.parametrize("name,build,ref,inputs", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("how", ["const", "placeholder"])
def test_op_table(name, build, ref, inputs, how):
    with fb.Graph().as_default():
        if how == "const":
            args = [fb.constant(a) for a in inputs]
            feed = None
        else:
            args = [fb.placeholder(fb.as_dtype(a.dtype), [None] * np.ndim(a)) for a in inputs]
            feed = dict(zip(args, inputs))
        out = build(*args)
        exact = how == "const" and name not in DATA_DEPENDENT
        _check(out, run(out, feed), ref(*inputs), exact_shapes=exact)


@pytest.mark.parametrize("name,build,want", SOURCES, ids=[c[0] for c in SOURCES])
def test_sources(name, build, want):
    with fb.Graph().as_default():
        out = build()
        _check(out, run(out), want, exact_shapes=True)


def test_table_covers_every_op():
    seen = set()
    with fb.Graph().as_default() as g:
        for _, build, _, inputs in CASES:
            build(*[fb.constant(a) for a in inputs])
        for _, build, _ in SOURCES:
            build()
        seen = {op.type for op in g.get_operations()}
    random_ops = {
        "RandomUniform",
        "RandomStandardNormal",
        "TruncatedNormal",
        "RandomUniformInt",
        "RandomShuffle",
    }
    assert ARRAY_OPS - random_ops <= seen, sorted(ARRAY_OPS - random_ops - seen)
    assert random_ops <= ARRAY_OPS


def test_kernels_bind_directly():
    """Kernels run from the registry alone, on plain arrays."""
    k = OPS["Reshape"].bound_kernel(np, {})
    assert k(A23, np.array([3, 2], np.int32)).shape == (3, 2)
    rng = np.random.default_rng(0)
    k = OPS["RandomUniform"].bound_kernel(
        np, {"dtype": fb.float16, "seed": 0, "seed2": 0, "rng": rng}
    )
    assert k(np.array([4], np.int32)).dtype == np.float16


# ------------------------------------------------------------ static shapes
def _static(build, *placeholder_shapes, dtype=fb.float32):
    with fb.Graph().as_default():
        args = [fb.placeholder(dtype, s) for s in placeholder_shapes]
        out = build(*args)
        return [t._shape for t in out] if isinstance(out, list) else out._shape


STATIC = [
    ("reshape_mnist", lambda x: fb.reshape(x, [-1, 28, 28, 1]), [[None, 784]], (None, 28, 28, 1)),
    ("reshape_known", lambda x: fb.reshape(x, [-1, 2]), [[3, 4]], (6, 2)),
    ("reshape_dynamic", lambda x: fb.reshape(x, fb.stack([fb.shape(x)[0], 10])), [[None, 2, 5]], (None, 10)),
    ("reshape_unknown_rank", lambda x: fb.reshape(x, [2, -1]), [None], (2, None)),
    ("concat", lambda x, y: fb.concat([x, y], 1), [[None, 3], [2, None]], (2, None)),
    ("concat_known", lambda x, y: fb.concat([x, y], 0), [[None, 3], [2, None]], (None, 3)),
    ("concat_unknown_rank", lambda x, y: fb.concat([x, y], 0), [None, [2, 3]], (None, 3)),
    ("stack", lambda x, y: fb.stack([x, y], 1), [[None, 3], [4, None]], (4, 2, 3)),
    ("transpose", lambda x: fb.transpose(x), [[None, 3, 4]], (4, 3, None)),
    ("transpose_unknown_rank", lambda x: fb.transpose(x, [1, 0]), [None], (None, None)),
    ("slice_rest", lambda x: fb.slice(x, [1, 1], [-1, 2]), [[None, 5]], (None, 2)),
    ("getitem", lambda x: x[:, 1:4, 0], [[None, 5, 6]], (None, 3)),
    ("getitem_ellipsis", lambda x: x[..., None, -1], [[None, 5, 6]], (None, 5, 1)),
    ("getitem_unknown_rank", lambda x: x[0], [None], None),
    ("split", lambda x: fb.split(x, 2, 1), [[None, 6]], [(None, 3), (None, 3)]),
    ("splitv", lambda x: fb.split(x, [2, -1], 1), [[None, 6]], [(None, 2), (None, 4)]),
    ("unstack", lambda x: fb.unstack(x, axis=1), [[None, 2]], [(None,), (None,)]),
    ("gather", lambda x: fb.gather(x, fb.placeholder(fb.int32, [None])), [[5, 3]], (None, 3)),
    ("shape", lambda x: fb.shape(x), [[None, 3]], (2,)),
    ("shape_unknown_rank", lambda x: fb.shape(x), [None], (None,)),
    ("expand_dims", lambda x: fb.expand_dims(x, -1), [[None, 3]], (None, 3, 1)),
    ("squeeze_unknown", lambda x: fb.squeeze(x), [[None, 1]], None),
    ("squeeze_axis_unknown", lambda x: fb.squeeze(x, [0]), [[None, 3]], (3,)),
    ("tile", lambda x: fb.tile(x, [2, 3]), [[None, 4]], (None, 12)),
    ("pad", lambda x: fb.pad(x, [[1, 1], [2, 0]]), [[None, 4]], (None, 6)),
    ("one_hot", lambda x: fb.one_hot(fb.cast(x, fb.int32), 10), [[None]], (None, 10)),
    ("fill_dynamic", lambda x: fb.fill(fb.shape(x), 0.0), [[None, 2]], (None, 2)),
    ("zeros_like", lambda x: fb.zeros_like(x), [[None, 2]], (None, 2)),
    ("where", lambda x: fb.where(x > 0), [[None, 2]], (None, 2)),
    ("boolean_mask", lambda x: fb.boolean_mask(x, x[:, 0] > 0), [[None, 3]], (None, 3)),
    ("range_dynamic", lambda x: fb.range(fb.size(x)), [[None]], (None,)),
    ("random", lambda x: fb.random_normal(fb.shape(x)), [[None, 4]], (None, 4)),
]  # fmt: skip


@pytest.mark.parametrize("name,build,shapes,want", STATIC, ids=[c[0] for c in STATIC])
def test_static_shapes(name, build, shapes, want):
    assert _static(build, *shapes) == want


def test_shape_of_known_shape_is_constant():
    assert constant_value(fb.shape(fb.zeros([2, 3]))).tolist() == [2, 3]
    x = fb.placeholder(fb.float32, [None, 3])
    assert constant_value(fb.shape(x)) is None
    assert int(constant_value(fb.rank(x))) == 2


def test_graph_names_follow_tensorflow():
    fb.reshape(fb.zeros([2, 3]), [3, 2])
    x = fb.constant(A234)
    x[0]
    fb.concat([x, x], 0)
    names = [op.name for op in fb.get_default_graph().get_operations()]
    assert names[:3] == ["zeros", "Reshape/shape", "Reshape"]
    assert "strided_slice/stack" in names and "strided_slice" in names
    assert "concat/axis" in names and "concat" in names


# ------------------------------------------------------------------ slicing
@st.composite
def index_keys(draw):
    ndim = draw(st.integers(1, 4))
    shape = tuple(draw(st.lists(st.integers(0, 5), min_size=ndim, max_size=ndim)))
    bound = st.one_of(st.none(), st.integers(-7, 7))
    part = st.one_of(
        st.integers(-6, 5),
        st.builds(
            slice, bound, bound, st.one_of(st.none(), st.sampled_from([-3, -2, -1, 1, 2, 3]))
        ),
        st.none(),
    )
    key = draw(st.lists(part, max_size=ndim + 1))
    if draw(st.booleans()):
        key.insert(draw(st.integers(0, len(key))), Ellipsis)
    return shape, tuple(key)


@settings(max_examples=150, deadline=None)
@given(index_keys())
def test_getitem_matches_numpy(case):
    shape, key = case
    a = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    try:
        want = a[key]
    except IndexError:
        with pytest.raises((ValueError, InvalidArgumentError)), fb.Graph().as_default():
            t = fb.constant(a)[key]
            run(t)
        return
    with fb.Graph().as_default():
        t = fb.constant(a)[key]
        assert t._shape == want.shape
        got = run(t)
        p = fb.placeholder(fb.int32, [None] * a.ndim)
        t2 = p[key]
        got2 = run(t2, {p: a})
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got2, want)
    assert compatible(t2._shape, want.shape)


def test_getitem_with_tensor_index():
    x = fb.constant(A234)
    i = fb.placeholder(fb.int32, [])
    y = x[i, 1:]
    assert y._shape == (2, 4)
    np.testing.assert_array_equal(run(y, {i: 1}), A234[1, 1:])
    with pytest.raises(TypeError, match="valid indices"):
        x[1.5]
    with pytest.raises(TypeError, match="valid indices"):
        x[True]


# ------------------------------------------------------------------- errors
ERRORS = [
    ("reshape_count", lambda: fb.reshape(fb.zeros([2, 3]), [4, 2]), "Reshape 'Reshape'.*6 elements.*8 elements"),
    ("reshape_minus", lambda: fb.reshape(fb.zeros([2, 3]), [4, -1]), "Reshape.*not a multiple of 4"),
    ("reshape_two_minus", lambda: fb.reshape(fb.zeros([2, 3]), [-1, -1]), "only one dimension may be -1"),
    ("concat_rank", lambda: fb.concat([fb.zeros([2, 3]), fb.zeros([2, 3, 1])], 0), "ConcatV2 'concat'.*same rank"),
    ("concat_dims", lambda: fb.concat([fb.zeros([2, 3]), fb.zeros([2, 4])], 0), "ConcatV2.*Dimension 1"),
    ("concat_axis", lambda: fb.concat([fb.zeros([2]), fb.zeros([2])], 1), "axis 1 is out of range"),
    ("transpose_perm", lambda: fb.transpose(fb.zeros([2, 3]), [0, 0]), "Transpose 'transpose'.*permutation"),
    ("transpose_len", lambda: fb.transpose(fb.zeros([2, 3]), [0, 1, 2]), "rank 2"),
    ("squeeze", lambda: fb.squeeze(fb.zeros([2, 3]), [1]), "Squeeze 'Squeeze'.*dim\\[1\\]"),
    ("split", lambda: fb.split(fb.zeros([2, 5]), 2, 1), "Split 'split'.*divisible by 2"),
    ("splitv", lambda: fb.split(fb.zeros([2, 5]), [1, 2], 1), "SplitV.*add up to"),
    ("slice", lambda: fb.slice(fb.zeros([4]), [2], [3]), "Slice 'Slice'.*size\\[0\\]"),
    ("index", lambda: fb.zeros([4, 2])[4], "StridedSlice 'strided_slice'.*out of bounds"),
    ("index_rank", lambda: fb.zeros([4])[0, 0], "StridedSlice.*Index out of range"),
    ("stride0", lambda: fb.zeros([4])[::0], "strides must be non-zero"),
    ("stack", lambda: fb.stack([fb.zeros([2]), fb.zeros([3])]), "Pack 'stack'.*must match"),
    ("expand_dims", lambda: fb.expand_dims(fb.zeros([2]), 3), "ExpandDims.*out of range"),
    ("unstack", lambda: fb.unstack(fb.placeholder(fb.float32, [None])), "Cannot infer num"),
    ("tile", lambda: fb.tile(fb.zeros([2]), [1, 2]), "Tile 'Tile'.*one entry per dimension"),
    ("pad_reflect", lambda: fb.pad(fb.zeros([2]), [[2, 0]], "REFLECT"), "MirrorPad.*at most 1"),
    ("pad_rows", lambda: fb.pad(fb.zeros([2]), [[1, 1], [1, 1]]), "one row per dimension"),
    ("range_delta", lambda: fb.range(0, 5, 0), "Range 'range'.*delta != 0"),
    ("range_order", lambda: fb.range(5, 1), "start <= limit"),
    ("fill_scalar", lambda: fb.fill([2], [1, 2]), "Fill.*scalar"),
    ("gather_axis", lambda: fb.gather(fb.zeros([2]), [0], axis=1), "GatherV2.*out of range"),
    ("select", lambda: fb.where([True, False, True], fb.zeros([2]), fb.zeros([2])), "Select.*condition"),
    ("boolean_mask", lambda: fb.boolean_mask(fb.zeros([2, 3]), [True, False, True]), "does not fit"),
    ("uniform_int", lambda: fb.random_uniform([2], 5, 3, dtype=fb.int32), "minval < maxval"),
    ("uniform_int_max", lambda: fb.random_uniform([2], dtype=fb.int32), "Must specify maxval"),
]  # fmt: skip

TYPE_ERRORS = [
    (
        "concat_dtype",
        lambda: fb.concat([fb.zeros([2]), fb.zeros([2], fb.int32)], 0),
        "values\\[1\\]",
    ),
    ("reshape_shape_float", lambda: fb.reshape(fb.zeros([2]), fb.constant([2.0])), "int32, int64"),
    ("range_mixed", lambda: fb.range(fb.constant(1), 2.5, dtype=fb.int32), "Expected int32"),
    ("normal_int", lambda: fb.random_normal([2], dtype=fb.int32), "float dtype"),
]


@pytest.mark.parametrize("name,build,match", ERRORS, ids=[c[0] for c in ERRORS])
def test_build_errors(name, build, match):
    with fb.Graph().as_default(), pytest.raises(ValueError, match=match):
        build()


@pytest.mark.parametrize("name,build,match", TYPE_ERRORS, ids=[c[0] for c in TYPE_ERRORS])
def test_build_type_errors(name, build, match):
    with fb.Graph().as_default(), pytest.raises((TypeError, ValueError), match=match):
        build()


def test_build_error_names_the_line():
    with pytest.raises(ValueError, match=r"test_array_ops\.py:\d+"):
        fb.reshape(fb.zeros([2, 3]), [5])


RUNTIME_ERRORS = [
    ("reshape", lambda p: fb.reshape(p, [4, 2]), np.zeros([2, 3], np.float32), "6 values"),
    ("gather", lambda p: fb.gather(fb.zeros([3]), fb.cast(p, fb.int32)), np.array([0.0, 3.0], np.float32), "not in"),
    ("index", lambda p: p[5], np.zeros([3], np.float32), "out of bounds"),
    ("slice", lambda p: fb.slice(p, [1], [5]), np.zeros([3], np.float32), "within dimension"),
    ("split", lambda p: fb.split(p, 2), np.zeros([3], np.float32), "not divisible"),
]  # fmt: skip


@pytest.mark.parametrize(
    "name,build,value,match", RUNTIME_ERRORS, ids=[c[0] for c in RUNTIME_ERRORS]
)
def test_runtime_errors(name, build, value, match):
    with fb.Graph().as_default():
        p = fb.placeholder(fb.float32, [None] * value.ndim)
        out = build(p)
        with pytest.raises(InvalidArgumentError, match=match):
            run(out, {p: value})


# ------------------------------------------------------------------- random
RANDOM = [
    ("uniform", lambda s: fb.random_uniform([50, 4], seed=s), fb.float32),
    ("uniform_range", lambda s: fb.random_uniform([200], -3, 5, dtype=fb.float64, seed=s), fb.float64),
    ("uniform_half", lambda s: fb.random_uniform([7], dtype=fb.float16, seed=s), fb.float16),
    ("uniform_int", lambda s: fb.random_uniform([3, 3], 2, 9, dtype=fb.int32, seed=s), fb.int32),
    ("uniform_int64", lambda s: fb.random_uniform([5], -4, 4, dtype=fb.int64, seed=s), fb.int64),
    ("normal", lambda s: fb.random_normal([20, 5], 3.0, 0.5, seed=s), fb.float32),
    ("truncated", lambda s: fb.truncated_normal([4000], -1.0, 2.0, seed=s), fb.float32),
    ("truncated64", lambda s: fb.truncated_normal([2, 300], dtype=fb.float64, seed=s), fb.float64),
    ("shuffle", lambda s: fb.random_shuffle(fb.range(30), seed=s), fb.int32),
    ("scalar", lambda s: fb.random_normal([], seed=s), fb.float32),
    ("multinomial", lambda s: fb.multinomial([[0.0, 1.0, 2.0]] * 4, 50, seed=s), fb.int64),
    ("categorical", lambda s: fb.random.categorical([[1.0, 1.0]], 9, fb.int32, seed=s), fb.int32),
]  # fmt: skip


@pytest.mark.parametrize("name,build,dtype", RANDOM, ids=[c[0] for c in RANDOM])
def test_random_seeded_repeats_across_sessions(name, build, dtype):
    with fb.Graph().as_default():
        t = build(7)
        other = build(8)
        assert t.dtype is dtype
        with fb.Session() as s:
            first, first_other = s.run([t, other])
            again = s.run(t)
        second = run(t)
    first, second = np.asarray(first), np.asarray(second)
    assert first.dtype == dtype.np and first.shape == t._shape
    np.testing.assert_array_equal(first, second)
    if first.size > 1:
        assert not np.array_equal(first, first_other)
        assert not np.array_equal(first, again)


def test_random_distributions():
    u = fb.random_uniform([10000], -2.0, 3.0, seed=1)
    ui = fb.random_uniform([10000], 2, 6, dtype=fb.int64, seed=1)
    n = fb.random_normal([10000], 5.0, 2.0, seed=1)
    t = fb.truncated_normal([10000], 5.0, 2.0, seed=1)
    sh = fb.random_shuffle(fb.constant(A234), seed=1)
    u, ui, n, t, sh = run([u, ui, n, t, sh])
    assert u.min() >= -2.0 and u.max() < 3.0 and abs(u.mean() - 0.5) < 0.1
    assert set(np.unique(ui)) == {2, 3, 4, 5}
    assert abs(n.mean() - 5.0) < 0.1 and abs(n.std() - 2.0) < 0.1 and np.abs(n - 5).max() > 4
    assert np.abs(t - 5.0).max() <= 4.0 and abs(t.mean() - 5.0) < 0.1
    assert sorted(map(tuple, sh.reshape(2, -1))) == sorted(map(tuple, A234.reshape(2, -1)))


def test_random_shape_from_tensor():
    shape = fb.placeholder(fb.int32, [2])
    t = fb.random_uniform(shape, seed=2)
    assert t._shape == (None, None)
    assert run(t, {shape: [3, 2]}).shape == (3, 2)
    assert fb.random_normal(fb.stack([fb.constant(4), 2]))._shape == (4, 2)


def test_random_seed_rules():
    g = fb.get_default_graph()
    fb.random_uniform([2])
    op = g.get_operation_by_name("random_uniform/RandomUniform")
    assert (op.attrs["seed"], op.attrs["seed2"]) == (0, 0)
    fb.random_uniform([2], seed=5)
    op = g.get_operation_by_name("random_uniform_1/RandomUniform")
    assert (op.attrs["seed"], op.attrs["seed2"]) == (fb.random_ops.DEFAULT_GRAPH_SEED, 5)
    fb.set_random_seed(42)
    count = len(g.get_operations()) + 3  # shape, min and max come first
    fb.random_uniform([2])
    op = g.get_operation_by_name("random_uniform_2/RandomUniform")
    assert (op.attrs["seed"], op.attrs["seed2"]) == (42, count)
    fb.set_random_seed(0)
    assert fb.get_seed(0) == (0, 2**31 - 1)


def test_graph_seed_repeats_the_whole_program():
    def program():
        with fb.Graph().as_default() as g:
            g.seed = 3
            a = fb.random_normal([4])
            b = fb.random_normal([4])
            return run([a, b])

    (a1, b1), (a2, b2) = program(), program()
    np.testing.assert_array_equal(a1, a2)
    np.testing.assert_array_equal(b1, b2)
    assert not np.array_equal(a1, b1)
