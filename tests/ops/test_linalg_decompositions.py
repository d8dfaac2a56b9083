"""Decompositions, least squares, hessians and moving_average_variables."""

from __future__ import annotations

import numpy as np
import pytest

import flowbook as tf

RNG = np.random.default_rng(3)
A = RNG.standard_normal((2, 4, 3))
SPD = A[0].T @ A[0] + np.eye(3)


@pytest.mark.parametrize("a", [A, A.swapaxes(-1, -2), A[0]], ids=["tall", "wide", "single"])
@pytest.mark.parametrize("full", [False, True])
def test_svd_matches_numpy(a, full):
    with tf.Graph().as_default(), tf.Session() as s:
        out = tf.svd(a, full_matrices=full)
        assert [o.shape.as_list() for o in out] == [list(x.shape) for x in s.run(out)]
        sv, u, v = s.run(out)
        sv_only = s.run(tf.svd(a, compute_uv=False))
    np.testing.assert_allclose(sv, np.linalg.svd(a, compute_uv=False))
    np.testing.assert_allclose(sv_only, sv)
    k = sv.shape[-1]
    back = (u[..., :k] * sv[..., None, :]) @ np.swapaxes(v[..., :k], -1, -2)
    np.testing.assert_allclose(back, a, atol=1e-12)


def test_svd_declares_no_gradient():
    x = tf.constant(A[0])
    assert tf.gradients(tf.reduce_sum(tf.svd(x, compute_uv=False)), x) == [None]


def test_self_adjoint_eig_matches_numpy():
    with tf.Graph().as_default(), tf.Session() as s:
        e, v = s.run(tf.self_adjoint_eig(SPD))
        ev = s.run(tf.self_adjoint_eigvals(np.stack([SPD, 2 * SPD])))
    np.testing.assert_allclose(e, np.linalg.eigvalsh(SPD))
    np.testing.assert_allclose(SPD @ v, v * e, atol=1e-12)
    np.testing.assert_allclose(ev, np.linalg.eigvalsh(np.stack([SPD, 2 * SPD])))


def test_cholesky_solve_matches_numpy():
    b = RNG.standard_normal((3, 2))
    with tf.Graph().as_default(), tf.Session() as s:
        got = s.run(tf.cholesky_solve(np.linalg.cholesky(SPD), b))
    np.testing.assert_allclose(got, np.linalg.solve(SPD, b))


@pytest.mark.parametrize("shape", [(5, 3), (2, 5, 3), (3, 5)])
@pytest.mark.parametrize("l2", [0.0, 0.5])
def test_matrix_solve_ls_matches_numpy(shape, l2):
    m = RNG.standard_normal(shape)
    b = RNG.standard_normal((*shape[:-1], 2))
    n = shape[-1]
    with tf.Graph().as_default(), tf.Session() as s:
        got = s.run(tf.matrix_solve_ls(m, b, l2_regularizer=l2))
    mt = np.swapaxes(m, -1, -2)
    if shape[-2] < n and l2 == 0.0:  # the minimum-norm solution
        want = np.linalg.pinv(m) @ b
    else:
        want = np.linalg.solve(mt @ m + l2 * np.eye(n), mt @ b)
    np.testing.assert_allclose(got, want, atol=1e-10)


def test_hessians_match_the_analytic_second_derivatives():
    x0 = np.array([[1.0, 2.0], [0.5, -1.0]])
    with tf.Graph().as_default(), tf.Session() as s:
        x = tf.constant(x0)
        y = tf.constant(3.0)
        h, hy = tf.hessians(tf.reduce_sum(x**3) + x[0, 0] * x[1, 1], [x, y])
        got = s.run(h)
    want = np.zeros((2, 2, 2, 2))
    for i in range(2):
        for j in range(2):
            want[i, j, i, j] = 6 * x0[i, j]
    want[0, 0, 1, 1] = want[1, 1, 0, 0] = 1.0
    assert hy is None and h.shape.as_list() == [2, 2, 2, 2]
    np.testing.assert_allclose(got, want)


def test_hessians_need_a_static_shape():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None])
        with pytest.raises(ValueError, match="static shape"):
            tf.hessians(tf.reduce_sum(x * x), x)


def test_moving_average_variables_are_the_averaged_ones():
    with tf.Graph().as_default():
        v, w = tf.Variable(1.0, name="v"), tf.Variable(2.0, name="w")
        assert tf.moving_average_variables() == []
        tf.train.ExponentialMovingAverage(0.9).apply([w])
        assert tf.moving_average_variables() == [w] and v not in tf.moving_average_variables()
