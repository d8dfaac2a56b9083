"""``eye``, ``norm`` and the errors of the diagonal and solve ops (``tf.*`` names).

Values of the ops themselves are rows of ``test_ops_array`` (against numpy,
also on the simulated GPU) and their gradients rows of ``test_gradients_array``.
"""

from __future__ import annotations

import numpy as np
import pytest

import flowbook as tf

X = np.array([[[3.0, -4.0, 1.0], [0.5, 2.0, -2.0]], [[1.0, 1.0, 1.0], [-6.0, 0.0, 2.0]]])


def run(t, feed=None):
    with tf.Session() as s:
        return s.run(t, feed)


@pytest.mark.parametrize(
    "args,want",
    [
        ((3,), np.eye(3, dtype=np.float32)),
        ((2, 3), np.eye(2, 3, dtype=np.float32)),
        ((3, 2), np.eye(3, 2, dtype=np.float32)),
        ((2, None, [4]), np.broadcast_to(np.eye(2, dtype=np.float32), (4, 2, 2))),
        ((lambda: tf.constant(2), 3), np.eye(2, 3, dtype=np.float32)),
    ],
)
def test_eye(args, want):
    with tf.Graph().as_default():
        args = [a() if callable(a) else a for a in args]  # tensors: built in the test's graph
        np.testing.assert_array_equal(run(tf.eye(*args)), want)


def test_eye_dtype():
    with tf.Graph().as_default():
        assert run(tf.eye(2, dtype=tf.int64)).dtype == np.int64


@pytest.mark.parametrize(
    "kw,ref",
    [
        ({}, lambda x: np.linalg.norm(x.ravel())),
        ({"axis": 2}, lambda x: np.linalg.norm(x, axis=2)),
        ({"ord": 1, "axis": -1}, lambda x: np.linalg.norm(x, 1, axis=-1)),
        ({"ord": np.inf, "axis": 1}, lambda x: np.linalg.norm(x, np.inf, axis=1)),
        ({"ord": 3, "axis": 0}, lambda x: np.linalg.norm(x, 3, axis=0)),
        ({"ord": "fro", "axis": [1, 2]}, lambda x: np.linalg.norm(x, "fro", axis=(1, 2))),
        ({"ord": 1, "axis": [1, 2]}, lambda x: np.linalg.norm(x, 1, axis=(1, 2))),
        ({"ord": np.inf, "axis": [1, 2]}, lambda x: np.linalg.norm(x, np.inf, axis=(1, 2))),
        ({"axis": 2, "keepdims": True}, lambda x: np.linalg.norm(x, axis=2, keepdims=True)),
        ({"axis": 2, "keep_dims": True}, lambda x: np.linalg.norm(x, axis=2, keepdims=True)),
    ],
)
def test_norm_matches_numpy(kw, ref):
    with tf.Graph().as_default():
        t = tf.norm(tf.constant(X), **kw)
        got = run(t)
        np.testing.assert_allclose(got, ref(X), rtol=1e-12)
        assert t.shape.as_list() == list(np.shape(got))


@pytest.mark.parametrize("kw", [{"ord": "fro"}, {"ord": -1}, {"ord": 2, "axis": [0, 1]}])
def test_norm_refuses_unsupported_orders(kw):
    with tf.Graph().as_default(), pytest.raises(ValueError, match="not supported"):
        tf.norm(tf.constant(X), **kw)


def test_matrix_transpose_of_unknown_rank():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64)
        got = run(tf.matrix_transpose(x), {x: X})
    np.testing.assert_array_equal(got, X.transpose(0, 2, 1))


BUILD_ERRORS = [
    ("cholesky_square", lambda: tf.cholesky(tf.zeros([2, 3])), "square"),
    ("solve_rows", lambda: tf.matrix_solve(tf.zeros([3, 3]), tf.zeros([2, 1])), "same number"),
    ("solve_rank", lambda: tf.matrix_solve(tf.zeros([3, 3]), tf.zeros([3])), "at least rank 2"),
    ("diag_part_shape", lambda: tf.diag_part(tf.zeros([2, 3])), r"\[D1..Dk, D1..Dk\]"),
    ("set_diag", lambda: tf.matrix_set_diag(tf.zeros([2, 3]), [1.0]), "diagonals of input"),
    ("band_scalar", lambda: tf.matrix_band_part(tf.zeros([2, 2]), [1, 2], 0), "scalar"),
    ("matrix_diag_rank", lambda: tf.matrix_diag(tf.constant(1.0)), "at least rank 1"),
    ("cross_3", lambda: tf.cross(tf.zeros([2]), tf.zeros([2])), "3 as its last"),
]


@pytest.mark.parametrize("name,build,match", BUILD_ERRORS, ids=[b[0] for b in BUILD_ERRORS])
def test_build_errors_name_the_op_and_line(name, build, match):
    with tf.Graph().as_default(), pytest.raises(ValueError, match=match) as e:
        build()
    assert "test_linalg_errors.py:" in str(e.value)


@pytest.mark.parametrize(
    "build,match",
    [
        (lambda x: tf.cholesky(x), "Cholesky decomposition was not successful"),
        (lambda x: tf.matrix_solve(x, tf.ones([2, 1])), "not invertible"),
    ],
)
def test_runtime_errors_name_the_op(build, match):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2, 2])
        t = build(x)
        with pytest.raises(tf.errors.InvalidArgumentError, match=match) as e:
            run(t, {x: [[1.0, 2.0], [2.0, 4.0]]})
    assert t.op.name in str(e.value)
