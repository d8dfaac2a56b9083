"""tf.linalg's composed functions and LinearOperators against TensorFlow 2's values.

The reference values are tests/fixtures/tf_linalg_random/tf_values.npz, written by
make_fixture.py there from the same numpy-drawn inputs as :func:`_inputs`.
"""

from pathlib import Path

import numpy as np
import pytest

import flowbook as tf

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "tf_linalg_random" / "tf_values.npz"
la = tf.linalg


def _inputs():
    rng = np.random.default_rng(0)
    names = ("A", "B", "D", "R", "d", "v", "K", "X")
    shapes = ((2, 4, 4), (2, 4, 3), (2, 3, 5), (2, 5, 2), 4, 4, (2, 2), (6, 2))
    x = {n: rng.standard_normal(s) for n, s in zip(names, shapes)}
    x["d"] = x["d"] + 3.0
    return x


def _operators(x):
    A = x["A"]
    ops = {
        "diag": la.LinearOperatorDiag(x["d"]),
        "full": la.LinearOperatorFullMatrix(A[0]),
        "tril": la.LinearOperatorLowerTriangular(A[0] + 4 * np.eye(4)),
        "house": la.LinearOperatorHouseholder(x["v"]),
        "perm": la.LinearOperatorPermutation([2, 0, 3, 1], dtype=tf.float64),
        "toeplitz": la.LinearOperatorToeplitz(x["v"], x["d"]),
        "kron": la.LinearOperatorKronecker(
            [la.LinearOperatorFullMatrix(x["K"]), la.LinearOperatorFullMatrix(x["K"] + 1)]
        ),
        "scaled": la.LinearOperatorScaledIdentity(4, np.float64(-2.5)),
    }
    ops["comp"] = la.LinearOperatorComposition([ops["full"], ops["diag"]])
    ops["block"] = la.LinearOperatorBlockDiag([ops["diag"], la.LinearOperatorFullMatrix(x["K"])])
    ops["lowrank"] = la.LinearOperatorLowRankUpdate(ops["diag"], A[1][:, :2], np.array([1.0, 2.0]))
    ops["blocktri"] = la.LinearOperatorBlockLowerTriangular(
        [
            [ops["full"]],
            [la.LinearOperatorFullMatrix(A[1][:2]), la.LinearOperatorFullMatrix(x["K"])],
        ]
    )
    spectrum = x["d"] + 1j * x["v"]
    ops["circ"] = la.LinearOperatorCirculant(spectrum, input_output_dtype=tf.complex128)
    return ops


def _flowbook_values(x):
    A, B, D, R = x["A"], x["B"], x["D"], x["R"]
    lu, p = la.lu(A)
    sign, logabs = la.slogdet(A)
    normed, nrm = la.normalize(B, axis=-1)
    spd = A[0] @ A[0].T + np.eye(4)
    out = {
        "lu": lu,
        "lu_p": p,
        "lu_solve": la.lu_solve(lu, p, B),
        "lu_inverse": la.lu_matrix_inverse(lu, p),
        "sign": sign,
        "logabs": logabs,
        "rank": la.matrix_rank(A),
        "pinv": la.pinv(B),
        "expm": la.expm(A),
        "expm32": la.expm(A.astype(np.float32) * 3),
        "tri_matmul": la.tridiagonal_matmul(D, R),
        "tri_solve": la.tridiagonal_solve(D, R),
        "eigh_tri": la.eigh_tridiagonal(A[0, 0], A[0, 1, :3]),
        "sqrtm": la.sqrtm(spd),
        "logm": la.logm(spd.astype(np.complex128) + 1j * A[1]),
        "normed": normed,
        "norm": nrm,
    }
    for k, o in _operators(x).items():
        n = o.shape[-1]
        rhs = x["X"][:n].astype(np.complex128 if k == "circ" else np.float64)
        out[f"{k}_dense"] = o.to_dense()
        out[f"{k}_det"] = o.determinant()
        out[f"{k}_logdet"] = o.log_abs_determinant()
        out[f"{k}_matmul"] = o.matmul(rhs)
        out[f"{k}_solve_adj"] = o.solve(rhs, adjoint=True)
    return out


def test_values_match_tensorflow():
    ref = np.load(FIXTURE)
    with tf.Graph().as_default(), tf.Session() as s:
        got = s.run(_flowbook_values(_inputs()))
    keys = {k.split("/", 1)[1] for k in ref.files if k.startswith("linalg/")}
    assert keys == set(got)
    for k in sorted(keys):
        want = ref[f"linalg/{k}"]
        tol = 1e-4 if want.dtype == np.float32 else 1e-9
        np.testing.assert_allclose(got[k], want, rtol=tol, atol=tol, err_msg=k)


def test_lu_reconstructs_and_ties_pick_the_first_row():
    a = np.array([[1.0, 2.0, 0.0], [-3.0, 1.0, 1.0], [3.0, 0.0, 2.0]])
    with tf.Graph().as_default(), tf.Session() as s:
        lu, p = la.lu(a)
        rec, perm = s.run([la.lu_reconstruct(lu, p), p])
    np.testing.assert_allclose(rec, a, atol=1e-12)
    assert perm.tolist() == [1, 0, 2]  # |-3| ties |3|: the first (TF's)


def test_matrix_transpose_and_experimental_cg():
    m = np.array([[4.0, 1.0], [1.0, 3.0]])
    with tf.Graph().as_default(), tf.Session() as s:
        t = la.matrix_transpose(np.arange(6.0).reshape(1, 2, 3))
        cg = la.experimental.conjugate_gradient(la.LinearOperatorFullMatrix(m), [1.0, 2.0])
        tv, x = s.run([t, cg.x])
    assert tv.shape == (1, 3, 2)
    np.testing.assert_allclose(x, np.linalg.solve(m, [1.0, 2.0]), rtol=1e-6)


def test_operator_algebra():
    with tf.Graph().as_default(), tf.Session() as s:
        d = la.LinearOperatorDiag([2.0, 4.0])
        ident = la.LinearOperatorIdentity(2)
        inv = d.inverse()
        comp = d @ ident
        assert d.shape.as_list() == [2, 2] and comp.shape.as_list() == [2, 2]
        out = s.run([inv.to_dense(), comp.to_dense(), d.adjoint().matvec([1.0, 1.0]), d.trace()])
    assert out[0].tolist() == [[0.5, 0.0], [0.0, 0.25]]
    assert out[1].tolist() == [[2.0, 0.0], [0.0, 4.0]]
    assert out[2].tolist() == [2.0, 4.0] and out[3] == 6.0


@pytest.mark.parametrize(
    "fn",
    [
        lambda a: la.slogdet(a)[1],
        lambda a: la.lu_solve(*la.lu(a), a[:, :1]),
        la.expm,
    ],
)
def test_gradients(fn):
    a0 = np.array([[2.0, 0.5, 0.1], [0.3, 1.5, -0.2], [0.1, 0.4, 1.0]])
    with tf.Graph().as_default(), tf.Session():
        a = tf.placeholder(tf.float64, [3, 3])
        y = fn(a)
        err = tf.test.compute_gradient_error(a, [3, 3], y, y.shape.as_list(), x_init_value=a0)
    assert err < 1e-6
