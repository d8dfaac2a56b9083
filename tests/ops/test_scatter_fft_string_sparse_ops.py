"""TF1's long tail (the compatibility table): scatters, FFTs, strings, sparse, small names.

Three tables, each row checked against a numpy (or plain Python) reference:
``VALUES`` (what a function computes), ``GRADIENTS`` (the Jacobian the
registered or composed gradients build vs central finite differences) and
``ERRORS`` (bad input named clearly); then the behaviours a table cannot
show (stateful counters, templates reusing variables, feeding a sparse
placeholder, hash determinism).
"""

from __future__ import annotations

import base64

import numpy as np
import pytest

import flowbook as fb
from flowbook.autodiff.gradient_checker import compute_gradient_error
from flowbook.framework.errors import InvalidArgumentError, OutOfRangeError
from flowbook.ops.strings.string_ops import siphash24

RNG = np.random.default_rng(16)
A34 = RNG.standard_normal((3, 4))
Z8 = RNG.standard_normal(8) + 1j * RNG.standard_normal(8)
Z246 = RNG.standard_normal((2, 4, 6)) + 1j * RNG.standard_normal((2, 4, 6))
SP_I = [[0, 1], [1, 0], [1, 3], [2, 2]]
SP_V = [1.0, -2.0, 3.0, 4.0]
SP = fb.SparseTensor(SP_I, SP_V, [3, 4])
SP64 = fb.SparseTensor(SP_I, np.array(SP_V), [3, 4])
DENSE = np.zeros((3, 4))
for (r, c), v in zip(SP_I, SP_V):
    DENSE[r, c] = v


def _scatter_var(fn, init, *args):
    v = fb.Variable(np.asarray(init))
    return fn(v, *args), [v.initializer]


def _np_rows(init, idx, upd, f):
    out = np.array(init, dtype=np.result_type(np.asarray(init), np.asarray(upd)))
    for i, u in zip(idx, upd):
        out[i] = f(out[i], u)
    return out


def _levenshtein(a, b):
    d = np.arange(len(b) + 1)
    for i, x in enumerate(a, 1):
        prev, d[0] = d.copy(), i
        for j, y in enumerate(b, 1):
            d[j] = min(prev[j] + 1, d[j - 1] + 1, prev[j - 1] + (x != y))
    return int(d[-1])


# (id, build -> (fetch, init ops) or fetch, numpy reference)
VALUES = [
    ("scatter_mul_repeats", lambda: _scatter_var(fb.scatter_mul, [1.0, 2.0, 3.0], [2, 0, 2], [2.0, 5.0, 3.0]),
     _np_rows([1.0, 2.0, 3.0], [2, 0, 2], [2.0, 5.0, 3.0], np.multiply)),
    ("scatter_div", lambda: _scatter_var(fb.scatter_div, [[8.0, 4.0], [1.0, 2.0]], [0, 0], [[2.0, 2.0], [2.0, 4.0]]),
     _np_rows([[8.0, 4.0], [1.0, 2.0]], [0, 0], [[2.0, 2.0], [2.0, 4.0]], np.divide)),
    ("scatter_min", lambda: _scatter_var(fb.scatter_min, [5, 5, 5], [1, 1, 2], [7, 3, 9]),
     _np_rows([5, 5, 5], [1, 1, 2], [7, 3, 9], np.minimum)),
    ("scatter_max", lambda: _scatter_var(fb.scatter_max, [5, 5, 5], [0, 0, 1], [7, 9, 1]),
     _np_rows([5, 5, 5], [0, 0, 1], [7, 9, 1], np.maximum)),
    ("scatter_nd_update", lambda: _scatter_var(fb.scatter_nd_update, A34, [[0, 1], [2, 3]], [10.0, 20.0]),
     np.where(np.isin(np.arange(12).reshape(3, 4), [1, 11]), [[0, 10, 0, 0], [0] * 4, [0, 0, 0, 20]], A34)),
    ("scatter_nd_add_rows", lambda: _scatter_var(fb.scatter_nd_add, A34, [[1], [1]], np.ones((2, 4))),
     A34 + np.array([[0] * 4, [2] * 4, [0] * 4])),
    ("scatter_nd_sub", lambda: _scatter_var(fb.scatter_nd_sub, A34, [[2, 0]], [1.5]),
     A34 - np.eye(3, 4, -2) * 1.5),
    ("batch_scatter_update", lambda: _scatter_var(fb.batch_scatter_update, [[1, 2, 3], [4, 5, 6]], [[2, 0], [1, 1]], [[7, 8], [9, 9]]),
     [[8, 2, 7], [4, 9, 6]]),
    ("tensor_scatter_update", lambda: fb.tensor_scatter_nd_update(A34, [[0], [2]], np.ones((2, 4))),
     np.where([[1], [0], [1]], 1.0, A34)),
    ("tensor_scatter_add_repeats", lambda: fb.tensor_scatter_add([1, 2, 3], [[1], [1]], [5, 6]), [1, 13, 3]),
    ("tensor_scatter_sub", lambda: fb.tensor_scatter_sub([1, 2, 3], [[0]], [5]), [-4, 2, 3]),
    ("tensor_scatter_min", lambda: fb.tensor_scatter_nd_min(A34, [[1, 1]], [-9.0]),
     np.where(np.eye(3, 4, 0, bool) & (np.arange(3)[:, None] == 1), -9.0, A34)),
    ("tensor_scatter_max", lambda: fb.tensor_scatter_nd_max([[0, 0], [0, 0]], [[0, 1], [0, 1]], [3, -1]), [[0, 3], [0, 0]]),
    ("fft", lambda: fb.fft(Z8), np.fft.fft(Z8)),
    ("ifft", lambda: fb.ifft(Z8), np.fft.ifft(Z8)),
    ("fft2d", lambda: fb.fft2d(Z246), np.fft.fft2(Z246)),
    ("ifft2d", lambda: fb.ifft2d(Z246), np.fft.ifft2(Z246)),
    ("fft3d", lambda: fb.fft3d(Z246), np.fft.fftn(Z246)),
    ("ifft3d", lambda: fb.ifft3d(Z246), np.fft.ifftn(Z246)),
    ("fft_complex64", lambda: fb.fft(Z8.astype(np.complex64)), np.fft.fft(Z8).astype(np.complex64)),
    ("fftnd_pad_crop", lambda: fb.fftnd(Z246, [3, 8], [0, 2]), np.fft.fftn(Z246, [3, 8], (0, 2))),
    ("ifftnd", lambda: fb.ifftnd(Z246, axes=[1]), np.fft.ifft(Z246, axis=1)),
    ("rfft", lambda: fb.spectral.rfft(A34), np.fft.rfft(A34)),
    ("rfft_length", lambda: fb.signal.rfft(A34, [6]), np.fft.rfft(A34, 6)),
    ("rfft2d", lambda: fb.spectral.rfft2d(A34), np.fft.rfft2(A34)),
    ("irfft", lambda: fb.spectral.irfft(np.fft.rfft(A34)), np.fft.irfft(np.fft.rfft(A34))),
    ("irfft_odd", lambda: fb.spectral.irfft(np.fft.rfft(A34, 5), [5]), np.fft.irfft(np.fft.rfft(A34, 5), 5)),
    ("irfft2d", lambda: fb.spectral.irfft2d(np.fft.rfft2(A34), [3, 4]), A34),
    ("string_join", lambda: fb.string_join([["a", "b"], "c"], "/"), [b"a/c", b"b/c"]),
    ("string_strip", lambda: fb.string_strip(["\t x y \n"]), [b"x y"]),
    ("substr_negative", lambda: fb.substr(["abcdef"], -3, 2), [b"de"]),
    ("substr_elementwise", lambda: fb.substr(["abcd", "wxyz"], [0, 2], [1, 5]), [b"a", b"yz"]),
    ("encode_base64", lambda: fb.encode_base64(["\xff\xfe", "ab"]), [base64.urlsafe_b64encode("\xff\xfe".encode()).rstrip(b"="), b"YWI"]),
    ("encode_base64_pad", lambda: fb.encode_base64(["ab"], pad=True), [b"YWI="]),
    ("decode_base64", lambda: fb.decode_base64(["aGk_", "YWI="]), [b"hi?", b"ab"]),
    ("regex_replace_once", lambda: fb.regex_replace(["aaa"], "a", "b", replace_global=False), [b"baa"]),
    ("regex_groups", lambda: fb.regex_replace(["2024-05"], r"(\d+)-(\d+)", r"\2/\1"), [b"05/2024"]),
    ("reduce_join_all", lambda: fb.reduce_join([["a", "b"], ["c", "d"]]), b"abcd"),
    ("reduce_join_axis0_keep", lambda: fb.reduce_join([["a", "b"], ["c", "d"]], 0, True, "+"), [[b"a+c", b"b+d"]]),
    ("string_to_number", lambda: fb.string_to_number(["3", "-1e3"], fb.float64), [3.0, -1000.0]),
    ("string_to_int", lambda: fb.string_to_number(["42"], fb.int32), np.array([42], np.int32)),
    ("as_string_int", lambda: fb.as_string([7, -12]), [b"7", b"-12"]),
    ("as_string_float", lambda: fb.as_string([0.5]), [b"0.500000"]),
    ("as_string_scientific", lambda: fb.as_string([1234.5], precision=1, scientific=True), [b"1.2e+03"]),
    ("strings_lower_upper", lambda: fb.strings.lower(fb.strings.upper(["aB"])), [b"ab"]),
    ("strings_length", lambda: fb.strings.length(["", "abc"]), np.array([0, 3], np.int32)),
    ("sparse_to_dense", lambda: fb.sparse_tensor_to_dense(SP), DENSE),
    ("sparse_to_dense_default", lambda: fb.sparse.to_dense(SP, -1.0), np.where(DENSE != 0, DENSE, -1.0)),
    ("sparse_to_dense_matrix", lambda: fb.sparse_to_dense(SP_I, [3, 4], SP_V), DENSE),
    ("sparse_reduce_sum", lambda: fb.sparse_reduce_sum(SP, 1), DENSE.sum(1)),
    ("sparse_reduce_sum_keep", lambda: fb.sparse_reduce_sum(SP, 0, keepdims=True), DENSE.sum(0, keepdims=True)),
    ("sparse_reduce_max", lambda: fb.sparse_reduce_max(SP, 1), [1.0, 3.0, 4.0]),
    ("sparse_dense_matmul", lambda: fb.sparse_tensor_dense_matmul(SP, A34.T), DENSE @ A34.T),
    ("sparse_dense_matmul_adj", lambda: fb.sparse_tensor_dense_matmul(SP, A34, adjoint_a=True), DENSE.T @ A34),
    ("sparse_dense_matmul_adj_b", lambda: fb.sparse.matmul(SP, A34, adjoint_b=True), DENSE @ A34.T),
    ("sparse_matmul", lambda: fb.sparse_matmul(A34, A34, transpose_b=True), A34 @ A34.T),
    ("sparse_segment_sum", lambda: fb.sparse_segment_sum(A34, [2, 0, 2], [0, 0, 1]), np.stack([A34[2] + A34[0], A34[2]])),
    ("sparse_segment_sum_n", lambda: fb.sparse_segment_sum(A34, [1], [2], num_segments=4), np.stack([0 * A34[0], 0 * A34[0], A34[1], 0 * A34[0]])),
    ("sparse_segment_mean", lambda: fb.sparse_segment_mean(A34, [0, 1, 2], [0, 0, 0]), A34.mean(0, keepdims=True)),
    ("sparse_segment_mean_n", lambda: fb.sparse_segment_mean(A34, [0, 1], [1, 1], num_segments=2), np.stack([0 * A34[0], A34[:2].mean(0)])),
    ("sparse_segment_sqrt_n", lambda: fb.sparse_segment_sqrt_n(A34, [0, 1], [0, 0]), (A34[:2].sum(0) / np.sqrt(2))[None]),
    ("sparse_add_dense", lambda: fb.sparse_add(SP, A34.astype(np.float32)), DENSE + A34),
    ("sparse_add_then_dense", lambda: fb.sparse.to_dense(fb.sparse_add(SP, fb.SparseTensor([[0, 0], [0, 1]], [5.0, -1.0], [3, 4]))), DENSE + np.array([[5, -1, 0, 0], [0] * 4, [0] * 4])),
    ("sparse_add_threshold", lambda: fb.sparse_add(SP, fb.SparseTensor([[0, 1]], [-1.0], [3, 4]), 1e-9).indices, [[1, 0], [1, 3], [2, 2]]),
    ("sparse_maximum", lambda: fb.sparse.to_dense(fb.sparse_maximum(SP, fb.SparseTensor([[1, 0], [0, 0]], [-5.0, -1.0], [3, 4]))),
     np.where(np.arange(12).reshape(3, 4) == 4, -2.0, np.maximum(DENSE, 0))),
    ("sparse_minimum", lambda: fb.sparse.to_dense(fb.sparse_minimum(SP, fb.SparseTensor([[1, 0], [0, 0]], [-5.0, -1.0], [3, 4]))),
     np.where(np.arange(12).reshape(3, 4) == 4, -5.0, np.minimum(DENSE, 0)) - np.eye(3, 4) * [[1], [0], [0]]),
    ("sparse_reorder", lambda: fb.sparse_reorder(fb.SparseTensor([[2, 0], [0, 3], [0, 1]], [1, 2, 3], [3, 4])).values, [3, 2, 1]),
    ("sparse_reshape", lambda: fb.sparse.to_dense(fb.sparse_reshape(SP, [-1, 6])), DENSE.reshape(2, 6)),
    ("sparse_transpose", lambda: fb.sparse.to_dense(fb.sparse_transpose(SP)), DENSE.T),
    ("sparse_concat", lambda: fb.sparse.to_dense(fb.sparse_concat(1, [SP, SP])), np.concatenate([DENSE, DENSE], 1)),
    ("sparse_concat_expand", lambda: fb.sparse.to_dense(fb.sparse_concat(0, [SP, fb.SparseTensor([[0, 4]], [9.0], [1, 5])], expand_nonconcat_dim=True)),
     np.concatenate([np.pad(DENSE, [[0, 0], [0, 1]]), [[0, 0, 0, 0, 9.0]]])),
    ("sparse_slice", lambda: fb.sparse.to_dense(fb.sparse_slice(SP, [1, 1], [5, 3])), DENSE[1:, 1:]),
    ("sparse_split", lambda: [fb.sparse.to_dense(p) for p in fb.sparse_split(sp_input=SP, num_split=3, axis=1)],
     [DENSE[:, :2], DENSE[:, 2:3], DENSE[:, 3:]]),
    ("sparse_retain", lambda: fb.sparse_retain(SP, [True, False, False, True]).values, [1.0, 4.0]),
    ("sparse_fill_empty_rows", lambda: fb.sparse.to_dense(fb.sparse_fill_empty_rows(fb.SparseTensor([[1, 2]], [3.0], [3, 4]), 7.0)[0]),
     [[7, 0, 0, 0], [0, 0, 3, 0], [7, 0, 0, 0]]),
    ("sparse_to_indicator", lambda: fb.sparse_to_indicator(fb.SparseTensor([[0, 0], [1, 0], [1, 1]], [3, 0, 3], [2, 2]), 4),
     [[False, False, False, True], [True, False, False, True]]),
    ("sparse_merge", lambda: fb.sparse.to_dense(fb.sparse_merge(fb.SparseTensor([[0, 0], [0, 1]], [4, 1], [1, 2]), fb.SparseTensor([[0, 0], [0, 1]], [0.5, 2.0], [1, 2]), 5)),
     [[0, 2.0, 0, 0, 0.5]]),
    ("sparse_reset_shape", lambda: fb.sparse_reset_shape(SP).dense_shape, [3, 4]),
    ("sparse_reset_shape_tight", lambda: fb.sparse_reset_shape(fb.SparseTensor([[0, 1]], [1], [5, 5])).dense_shape, [1, 2]),
    ("sparse_softmax", lambda: fb.sparse.to_dense(fb.sparse_softmax(SP)),
     np.where(DENSE != 0, [[1.0], [0], [1.0]] + [[0], [1], [0]] * np.exp(DENSE) / (np.exp(-2) + np.exp(3)), 0)),
    ("edit_distance", lambda: fb.edit_distance(fb.SparseTensor([[0, 0], [0, 1], [1, 0]], ["a", "b", "x"], [2, 2]),
                                               fb.SparseTensor([[0, 0], [0, 1], [0, 2], [2, 0]], ["a", "c", "b", "y"], [3, 3])),
     np.array([_levenshtein("ab", "acb") / 3, np.inf, 1.0], np.float32)),
    ("edit_distance_raw", lambda: fb.edit_distance(fb.SparseTensor([[0, 0, 0], [0, 0, 1]], [1, 2], [1, 1, 2]),
                                                   fb.SparseTensor([[0, 0, 0]], [2], [1, 1, 1]), normalize=False),
     np.array([[1.0]], np.float32)),
    ("batch_gather", lambda: fb.batch_gather(np.arange(24).reshape(2, 3, 4), [[2, 0], [1, 1]]),
     np.take_along_axis(np.arange(24).reshape(2, 3, 4), np.array([[2, 0], [1, 1]])[..., None], 1)),
    ("batch_gather_2_batch_dims", lambda: fb.batch_gather(np.arange(24).reshape(2, 3, 4), [[[3], [0], [1]], [[2], [2], [0]]]),
     np.take_along_axis(np.arange(24).reshape(2, 3, 4), np.array([[[3], [0], [1]], [[2], [2], [0]]]), 2)),
    ("parallel_stack", lambda: fb.parallel_stack([A34, A34]), np.stack([A34, A34])),
    ("switch_case_default", lambda: fb.switch_case(fb.constant(-1), [lambda: 1.0, lambda: 2.0]), 2.0),
    ("guarantee_const", lambda: fb.guarantee_const(A34), A34),
    ("linalg_matvec", lambda: fb.linalg.matvec(A34, np.ones(4)), A34.sum(1)),
    ("linalg_adjoint", lambda: fb.linalg.adjoint(Z246[0]), Z246[0].conj().T),
    ("linalg_logdet", lambda: fb.linalg.logdet(A34 @ A34.T + np.eye(3)), np.linalg.slogdet(A34 @ A34.T + np.eye(3))[1]),
    ("manip_roll", lambda: fb.manip.roll(A34, [1], [1]), np.roll(A34, 1, 1)),
]  # fmt: skip


def _fetch(built):
    fetch, init = built if isinstance(built, tuple) else (built, [])
    with fb.Session() as s:
        s.run(init)
        return s.run(fetch)


@pytest.mark.parametrize("build,want", [r[1:] for r in VALUES], ids=[r[0] for r in VALUES])
def test_values_match_the_reference(build, want):
    with fb.Graph().as_default():
        got = _fetch(build())
    if isinstance(want, list) and want and isinstance(got, list):
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-9)
        return
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    if want.dtype.kind in "OSU":
        assert got.tolist() == want.tolist()
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-9)
        if want.dtype in (np.int32, np.float32, np.complex64):
            assert got.dtype == want.dtype


def _cx(x):
    return fb.complex(x, x * 0.5 - 1.0)


def _parts(z):
    return fb.concat([fb.real(z), fb.imag(z)], -1)


X8 = RNG.standard_normal(8)
X246 = RNG.standard_normal((2, 4, 6))
IDX = [[0, 1], [2, 3], [0, 1]]

# (id, build(x) -> y, x0): d y / d x by the graph's gradients vs finite differences
GRADIENTS = [
    ("tensor_scatter_update_tensor", lambda x: fb.tensor_scatter_nd_update(x, [[0, 1], [2, 3]], [1.0, 2.0]), A34),
    ("tensor_scatter_update_updates", lambda x: fb.tensor_scatter_nd_update(fb.constant(A34), [[0, 1], [2, 3]], x[:2]), X8),
    ("tensor_scatter_add", lambda x: fb.tensor_scatter_nd_add(x, IDX, x[0, :3] * 2.0), A34),
    ("tensor_scatter_sub_rows", lambda x: fb.tensor_scatter_nd_sub(x, [[1]], x[:1] ** 2), A34),
    ("tensor_scatter_min", lambda x: fb.tensor_scatter_nd_min(x, [[0, 0], [1, 2]], x[2, :2] - 5.0), A34),
    ("tensor_scatter_max", lambda x: fb.tensor_scatter_nd_max(x, [[0, 0], [1, 2]], x[2, 2:] + 5.0), A34),
    ("fft", lambda x: _parts(fb.fft(_cx(x))), X8),
    ("ifft", lambda x: _parts(fb.ifft(_cx(x))), X8),
    ("fft2d", lambda x: _parts(fb.fft2d(_cx(x))), X246),
    ("ifft2d", lambda x: _parts(fb.ifft2d(_cx(x))), X246),
    ("fft3d", lambda x: _parts(fb.fft3d(_cx(x))), X246),
    ("ifft3d", lambda x: _parts(fb.ifft3d(_cx(x))), X246),
    ("fftnd_padded", lambda x: _parts(fb.fftnd(_cx(x), [3, 8], [0, 2])), X246),
    ("rfft", lambda x: _parts(fb.spectral.rfft(x)), X8),
    ("irfft", lambda x: fb.spectral.irfft(fb.spectral.rfft(x) * 2.0), X8),
    ("sparse_dense_matmul_b", lambda x: fb.sparse_tensor_dense_matmul(SP64, fb.transpose(x)), A34),
    ("sparse_dense_matmul_adjoint", lambda x: fb.sparse_tensor_dense_matmul(SP64, x, adjoint_a=True), A34),
    ("sparse_dense_matmul_values", lambda x: fb.sparse_tensor_dense_matmul(fb.SparseTensor(SP_I, x[:4], [3, 4]), A34.T), X8),
    ("sparse_to_dense", lambda x: fb.sparse_tensor_to_dense(fb.SparseTensor(SP_I, x[:4], [3, 4])), X8),
    ("sparse_reduce_sum", lambda x: fb.sparse_reduce_sum(fb.SparseTensor(SP_I, x[:4] ** 2, [3, 4]), 0), X8),
    ("sparse_softmax", lambda x: fb.sparse_softmax(fb.SparseTensor(SP_I, x[:4], [3, 4])).values, X8),
    ("sparse_add", lambda x: fb.sparse_add(fb.SparseTensor(SP_I, x[:4], [3, 4]), fb.SparseTensor([[1, 0]], x[4:5], [3, 4])).values, X8),
    ("sparse_segment_mean", lambda x: fb.sparse_segment_mean(x, [0, 2, 2], [0, 0, 1]), A34),
    ("sparse_segment_sqrt_n", lambda x: fb.sparse_segment_sqrt_n(x, [0, 1, 2], [0, 1, 1]), A34),
    ("batch_gather", lambda x: fb.batch_gather(x, [[1, 1], [0, 3], [2, 2]]), A34),
]  # fmt: skip


@pytest.mark.parametrize("build,x0", [r[1:] for r in GRADIENTS], ids=[r[0] for r in GRADIENTS])
def test_gradients_match_finite_differences(build, x0):
    with fb.Graph().as_default():
        x = fb.placeholder(fb.float64, x0.shape)
        y = build(x)
        with fb.Session() as s:
            y0 = s.run(y, {x: x0})
            err = compute_gradient_error(x, x0.shape, y, y0.shape, x_init_value=x0, session=s)
    assert err < 1e-6


ERRORS = [
    ("fft_real_input", lambda: fb.fft([1.0, 2.0]), TypeError, "complex64 or complex128"),
    ("fft2d_rank", lambda: fb.fft2d(fb.constant([1j])), ValueError, "rank >= 2"),
    ("string_split_numbers", lambda: fb.string_split(fb.constant([1.0])), (TypeError, ValueError), "string"),
    ("string_strip_numbers", lambda: fb.string_strip(fb.constant([1])), (TypeError, ValueError), "string"),
    ("tensor_scatter_shape", lambda: fb.tensor_scatter_nd_update(A34, [[0]], [1.0]), ValueError, "updates must have shape"),
    ("scatter_nd_update_dtype", lambda: fb.scatter_nd_update(fb.Variable([1.0]), [[0]], ["a"]), (TypeError, ValueError), "float32|string|convert"),
    ("count_up_to_float", lambda: fb.count_up_to(fb.Variable(1.0), 3), TypeError, "int32 or int64"),
    ("switch_case_float_index", lambda: fb.switch_case(1.0, [lambda: 1]), TypeError, "int32"),
    ("hash_strong_key", lambda: fb.string_to_hash_bucket_strong(["a"], 3, [1]), ValueError, "two ints"),
    ("batch_gather_scalar", lambda: fb.batch_gather([1, 2], 0), ValueError, "rank >= 1"),
    ("make_template_getter", lambda: fb.make_template("t", len, custom_getter_=len), ValueError, "custom_getter_"),
]  # fmt: skip


@pytest.mark.parametrize("build,exc,match", [r[1:] for r in ERRORS], ids=[r[0] for r in ERRORS])
def test_bad_input_is_a_clear_error(build, exc, match):
    with fb.Graph().as_default(), pytest.raises(exc, match=match):
        build()


RUN_ERRORS = [
    ("string_to_number", lambda: fb.string_to_number(["1x"]), "could not correctly convert string: 1x"),
    ("decode_base64", lambda: fb.decode_base64(["a"]), "Invalid base64"),
    ("substr_pos", lambda: fb.substr(["ab"], 5, 1), "pos 5 out of range"),
    ("scatter_index", lambda: _scatter_var(fb.scatter_mul, [1, 2], [2], [3]), r"index 2 in dimension 0 is not in \[0, 2\)"),
    ("scatter_nd_index", lambda: fb.tensor_scatter_nd_add([1, 2], [[-1]], [3]), "index -1"),
    ("random_crop_too_big", lambda: fb.random_crop(A34, [4, 4]), "value.shape >= size"),
]  # fmt: skip


@pytest.mark.parametrize("build,match", [r[1:] for r in RUN_ERRORS], ids=[r[0] for r in RUN_ERRORS])
def test_bad_values_fail_the_run_naming_the_op(build, match):
    with fb.Graph().as_default(), pytest.raises(InvalidArgumentError, match=match):
        _fetch(build())


def test_count_up_to_counts_then_stops():
    with fb.Graph().as_default(), fb.Session() as s:
        v = fb.Variable(0, dtype=fb.int64)
        c = fb.count_up_to(v, 2)
        s.run(v.initializer)
        assert [int(s.run(c)), int(s.run(c))] == [0, 1]
        with pytest.raises(OutOfRangeError, match="Reached limit of 2"):
            s.run(c)
        assert int(s.run(v)) == 2


def test_make_template_shares_variables_and_names_scopes():
    with fb.Graph().as_default(), fb.Session() as s:
        dense = fb.make_template("dense", lambda x: fb.matmul(x, fb.get_variable("w", [2, 2])))
        a, b = dense(np.ones((1, 2), np.float32)), dense(np.ones((1, 2), np.float32))
        other = fb.make_template("dense", lambda: fb.get_variable("w", []))
        other()
        names = [v.name for v in fb.global_variables()]
        assert names == ["dense/w:0", "dense_1/w:0"]
        s.run(fb.global_variables_initializer())
        np.testing.assert_array_equal(*s.run([a, b]))
        assert dense.variable_scope_name == "dense"


def test_sparse_placeholder_is_fed_by_a_sparse_value():
    with fb.Graph().as_default(), fb.Session() as s:
        sp = fb.sparse_placeholder(fb.float32, shape=[None, 3])
        total = fb.sparse_tensor_dense_matmul(sp, np.eye(3, dtype=np.float32))
        got = s.run(total, {sp: fb.SparseTensorValue([[0, 2], [1, 1]], [2.0, 3.0], [2, 3])})
        assert got.tolist() == [[0, 0, 2], [0, 3, 0]]
        fed = s.run(sp, {sp: ([[0, 0]], [1.0], [1, 3])})
        assert isinstance(fed, fb.SparseTensorValue) and fed.dense_shape.tolist() == [1, 3]


def test_string_split_skips_empty_pieces_unless_told():
    with fb.Graph().as_default(), fb.Session() as s:
        kept = s.run(fb.string_split(["a,,b", "c"], ",", skip_empty=False))
        dropped = s.run(fb.string_split(["a,,b", ""], ","))
    assert kept.values.tolist() == [b"a", b"", b"b", b"c"]
    assert kept.indices.tolist() == [[0, 0], [0, 1], [0, 2], [1, 0]]
    assert kept.dense_shape.tolist() == [2, 3]
    assert dropped.values.tolist() == [b"a", b"b"] and dropped.dense_shape.tolist() == [2, 2]


def test_hash_buckets_are_deterministic_and_in_range():
    words = ["the", "cat", "sat", "on", "the", "mat"]
    with fb.Graph().as_default(), fb.Session() as s:
        fast = s.run(fb.string_to_hash_bucket_fast(words, 7))
        plain = s.run(fb.string_to_hash_bucket(words, 7))
        strong = s.run(fb.string_to_hash_bucket_strong(words, 7, [1, 2]))
        again = s.run(fb.strings.to_hash_bucket_fast(words, 7))
    for got in (fast, plain, strong):
        assert got.dtype == np.int64 and got.min() >= 0 and got.max() < 7
        assert got[0] == got[4]
    np.testing.assert_array_equal(fast, again)
    assert len(set(fast.tolist())) > 1


def test_strong_hash_is_tensorflows_siphash():
    # SipHash-2-4's reference vectors (key 00..0f): the empty message and 00..0e
    key = (0x0706050403020100, 0x0F0E0D0C0B0A0908)
    assert siphash24(*key, b"") == 0x726FDB47DD0E0E31
    assert siphash24(*key, bytes(range(15))) == 0xA129CA6149BE45E5
    with fb.Graph().as_default(), fb.Session() as s:  # TensorFlow's documented example
        assert s.run(fb.string_to_hash_bucket_strong(["Hello", "TF"], 3, [1, 2])).tolist() == [2, 0]


def test_scopes_of_old_and_new_spellings():
    with fb.Graph().as_default():
        with fb.device("/cpu:0"):
            a = fb.constant(1.0, name="a")
        with fb.device("/gpu:0"), fb.colocate_with(a):
            b = a * 2.0
        with fb.device("/gpu:0"), fb.colocate_with(a, ignore_existing=True):
            c = a * 3.0
        assert b.device == "/device:CPU:0" and c.device == "/device:CPU:0"
        with fb.op_scope([a], "outer"), fb.variable_op_scope([a], "vs"):
            w = fb.get_variable("w", [1])
            d = fb.identity(a)
        assert w.name == "vs/w:0" and d.op.name == "outer/vs/Identity"
        gate = fb.no_op()
        with fb.control_dependencies([gate]):
            inside = fb.identity(a)
            with fb.init_scope():
                lifted = fb.identity(a)
        assert inside.op.control_inputs == [gate] and lifted.op.control_inputs == []


def test_random_crop_is_a_window_of_the_input():
    x = np.arange(30).reshape(5, 6)
    with fb.Graph().as_default(), fb.Session() as s:
        crop = fb.random_crop(x, [2, 3], seed=3)
        windows = {tuple(s.run(crop).ravel()) for _ in range(20)}
    every = {tuple(x[i : i + 2, j : j + 3].ravel()) for i in range(4) for j in range(4)}
    assert windows <= every and len(windows) > 1


def test_py_function_arguments_answer_numpy():
    with fb.Graph().as_default(), fb.Session() as s:
        y = fb.py_function(lambda a, b: a.numpy() + b.numpy(), [1.0, 2.0], fb.float32)
        assert float(s.run(y)) == 3.0


def test_small_names():
    assert fb.VERSION.startswith("1.") and fb.version.VERSION == fb.VERSION
    assert fb.GRAPH_DEF_VERSION == 27 and fb.GRAPH_DEF_VERSION_MIN_CONSUMER == 0
    with fb.Graph().as_default() as g:
        assert g.as_graph_def().versions.producer == fb.GRAPH_DEF_VERSION
        assert fb.is_symbolic_tensor(fb.constant(1.0)) and not fb.is_symbolic_tensor(1.0)
        sp = fb.convert_to_tensor_or_sparse_tensor(SP)
        assert sp is SP
        assert fb.convert_to_tensor_or_indexed_slices([1, 2]).dtype == fb.int32
        init = fb.tables_initializer()
        assert init.type == "NoOp" and fb.initialize_all_tables is fb.tables_initializer
        assert fb.initializers.tables_initializer is fb.tables_initializer
        assert fb.DeviceSpec.from_string("/gpu:1").device_index == 1
        x = fb.constant(2.0)
        g1 = fb.gradients(fb.recompute_grad(lambda t: t**3)(x), x)[0]
        grads = fb.gradients(fb.square(x), x, aggregation_method=fb.AggregationMethod.ADD_N)
        with fb.Session() as s:
            assert s.run([g1, grads[0]]) == [12.0, 4.0]
        y = fb.grad_pass_through(fb.round)(x + 0.7)
        with fb.Session() as s:
            assert s.run([y, fb.gradients(y, x)[0]]) == [3.0, 1.0]
        assert fb.manip.tile is fb.tile and fb.linalg.inv is fb.matrix_inverse
