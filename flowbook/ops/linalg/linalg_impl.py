"""``tf.linalg`` functions TensorFlow builds from other ops, or that flowbook builds from its ops.

No op types of their own: each function composes existing ops, so gradients
come from theirs and every device that runs those runs these.

- ``lu`` is Gaussian elimination with partial pivoting (the largest
  magnitude in the column, the first on ties, as LAPACK), unrolled over the
  static matrix size: step ``k`` swaps rows through a permutation matrix and
  eliminates below the pivot.  It returns TF's ``(lower_upper, perm)``: the
  unit lower factor under the diagonal and the upper factor on and above it,
  with ``input[perm] == L @ U``.  ``lu_reconstruct``, ``lu_solve`` and
  ``lu_matrix_inverse`` undo it with the permutation's one-hot matrix and two
  triangular solves; ``slogdet`` reads the sign and log magnitude off the
  factors (the permutation's sign is the determinant of its matrix).
- ``expm`` is scaling and squaring with a Padé approximant (Higham, 2005):
  degree 13 for float64, 7 for float32 and float16; the matrix is divided by
  ``2**s`` until its 1-norm is under the degree's threshold, and the result
  squared ``s`` times in a ``while_loop`` (per matrix of a batch, as TF).
- ``sqrtm`` is the Denman-Beavers iteration (``Y <- (Y + Z^-1) / 2``,
  ``Z <- (Z + Y^-1) / 2`` from ``A`` and ``I``; ``Y`` tends to the principal
  root) in a ``while_loop`` until ``Y`` stops changing; TF computes the same
  root through a Schur form.  ``logm`` takes eight such roots, sums the
  Gregory series of ``log(X) = 2 atanh((X - I)(X + I)^-1)`` to the 17th
  power, and multiplies by 256 (inverse scaling and squaring).
- ``pinv`` and ``matrix_rank`` follow TF: the SVD with singular values at or
  below ``rcond * max(s)`` (``tol``) dropped or uncounted.
- the tridiagonal functions take TF's three formats (``compact`` [..., 3, M]
  superdiagonal / diagonal / subdiagonal, ``sequence`` a tuple of those three,
  ``matrix``); ``tridiagonal_matmul`` multiplies by the diagonals shifted,
  ``tridiagonal_solve`` solves the dense matrix (no pivoting choice: LU with
  partial pivoting always), ``eigh_tridiagonal`` the dense Hermitian matrix.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default(), tf.Session() as s:
    ...     s.run(expm([[0.0, 0.0], [0.0, 0.0]])).tolist()
    [[1.0, 0.0], [0.0, 1.0]]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowbook.framework import dtypes
from flowbook.framework.graph import name_scope
from flowbook.framework.tensor import Tensor
from flowbook.ops.array import array_ops
from flowbook.ops.array.constant_op import convert_to_tensor
from flowbook.ops.array.fill_ops import one_hot
from flowbook.ops.array.select_v2_ops import where_v2
from flowbook.ops.array.selection_ops import boolean_mask
from flowbook.ops.control_flow.control_flow import while_loop
from flowbook.ops.linalg.linalg_decomp import self_adjoint_eig, svd
from flowbook.ops.linalg.linalg_ops import (
    matmul,
    matrix_determinant,
    matrix_inverse,
    matrix_solve,
    matrix_triangular_solve,
    norm,
)
from flowbook.ops.linalg.matrix_diag_ops import (
    eye,
    matrix_band_part,
    matrix_diag_part,
    matrix_set_diag,
    matrix_transpose,
)
from flowbook.ops.math import math_ops
from flowbook.ops.math.complex_ops import imag, real
from flowbook.ops.math.reduction_ops import argmax

__all__ = [
    "eigh_tridiagonal",
    "expm",
    "logm",
    "lu",
    "lu_matrix_inverse",
    "lu_reconstruct",
    "lu_solve",
    "matrix_rank",
    "normalize",
    "pinv",
    "slogdet",
    "sqrtm",
    "tridiagonal_matmul",
    "tridiagonal_solve",
]


def _mag(x: Tensor) -> Tensor:
    """``|x|`` element-wise; for complex ``x``, ``|re| + |im|`` (within a factor sqrt 2 of it)."""
    if x.dtype.is_complex:
        return math_ops.abs(real(x)) + math_ops.abs(imag(x))
    return math_ops.abs(x)


def _static_n(a: Tensor, what: str) -> int:
    shape = a.shape.as_list() if a.shape.ndims is not None else None
    if shape is None or shape[-1] is None:
        raise ValueError(f"{what} needs a statically known matrix size")
    return int(shape[-1])


def lu(input: Any, output_idx_type: Any = dtypes.int32, name: str | None = None) -> tuple:
    """TF's ``(lower_upper, perm)`` of each square matrix: ``input[perm] == L @ U``.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default(), tf.Session() as s:
    ...     s.run(lu([[1.0, 2.0], [3.0, 4.0]])[1]).tolist()
    [1, 0]
    """
    with name_scope(name, "Lu"):
        a = convert_to_tensor(input, name="input")
        n = _static_n(a, "lu")
        idx = np.arange(n)
        perm = math_ops.cast(array_ops.zeros_like(a[..., 0]), a.dtype) + idx.astype(a.dtype.np)
        for k in range(n):
            ek = (idx == k).astype(a.dtype.np)
            below = (idx > k).astype(a.dtype.np)
            col = math_ops.abs(a[..., :, k])
            p = argmax(
                col * (idx >= k).astype(col.dtype.np) - (idx < k).astype(col.dtype.np), axis=-1
            )
            ep = one_hot(p, n, dtype=a.dtype)
            swap = (
                np.eye(n, dtype=a.dtype.np)
                - np.outer(ek, ek)
                - ep[..., :, None] * ep[..., None, :]
                + ek[:, None] * ep[..., None, :]
                + ep[..., :, None] * ek[None, :]
            )
            a = matmul(swap, a)
            perm = array_ops.squeeze(matmul(swap, perm[..., :, None]), [-1])
            factor = a[..., :, k] / a[..., k : k + 1, k] * below
            row = a[..., k, :] * below
            a = a - factor[..., :, None] * row[..., None, :]
            a = a + (factor - a[..., :, k] * below)[..., :, None] * ek
        return a, math_ops.cast(perm, dtypes.as_dtype(output_idx_type))


def _perm_matrix(perm: Tensor, n: int, dtype: Any) -> Tensor:
    """``P`` with ``(P @ x)[i] == x[perm[i]]``."""
    return one_hot(perm, n, dtype=dtype)


def _factors(lower_upper: Tensor) -> tuple[Tensor, Tensor]:
    lower = matrix_set_diag(
        matrix_band_part(lower_upper, -1, 0), array_ops.ones_like(matrix_diag_part(lower_upper))
    )
    return lower, matrix_band_part(lower_upper, 0, -1)


def lu_reconstruct(
    lower_upper: Any, perm: Any, validate_args: bool = False, name: Any = None
) -> Tensor:
    """The matrix whose :func:`lu` is ``(lower_upper, perm)``."""
    with name_scope(name, "lu_reconstruct"):
        lu_t = convert_to_tensor(lower_upper, name="lower_upper")
        lower, upper = _factors(lu_t)
        p = _perm_matrix(perm, _static_n(lu_t, "lu_reconstruct"), lu_t.dtype)
        return matmul(p, matmul(lower, upper), transpose_a=True)


def lu_solve(
    lower_upper: Any, perm: Any, rhs: Any, validate_args: bool = False, name: Any = None
) -> Tensor:
    """X with ``A @ X == rhs``, given A's :func:`lu`."""
    with name_scope(name, "lu_solve"):
        lu_t = convert_to_tensor(lower_upper, name="lower_upper")
        p = _perm_matrix(perm, _static_n(lu_t, "lu_solve"), lu_t.dtype)
        lower, upper = _factors(lu_t)
        y = matrix_triangular_solve(lower, matmul(p, rhs), lower=True)
        return matrix_triangular_solve(upper, y, lower=False)


def lu_matrix_inverse(
    lower_upper: Any, perm: Any, validate_args: bool = False, name: Any = None
) -> Tensor:
    """The inverse of the matrix whose :func:`lu` is ``(lower_upper, perm)``."""
    with name_scope(name, "lu_matrix_inverse"):
        lu_t = convert_to_tensor(lower_upper, name="lower_upper")
        ident = eye(_static_n(lu_t, "lu_matrix_inverse"), dtype=lu_t.dtype)
        return lu_solve(lu_t, perm, ident + array_ops.zeros_like(lu_t))


def slogdet(input: Any, name: str | None = None) -> tuple[Tensor, Tensor]:
    """``(sign, log|det|)`` of each square matrix (real), through its :func:`lu`.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default(), tf.Session() as s:
    ...     [v.tolist() for v in s.run(slogdet(np.array([[0.0, 2.0], [3.0, 0.0]])))]
    [-1.0, 1.791759469228055]
    """
    with name_scope(name, "LogMatrixDeterminant"):
        a = convert_to_tensor(input, name="input")
        lower_upper, perm = lu(a)
        d = matrix_diag_part(lower_upper)
        perm_sign = matrix_determinant(_perm_matrix(perm, _static_n(a, "slogdet"), a.dtype))
        sign = perm_sign * math_ops.reduce_prod(math_ops.sign(d), axis=-1)
        return sign, math_ops.reduce_sum(math_ops.log(math_ops.abs(d)), axis=-1)


def normalize(
    tensor: Any, ord: Any = "euclidean", axis: Any = None, name: str | None = None
) -> tuple:
    """``(tensor / norm, norm)``, the norm kept in its reduced dims (TF's)."""
    with name_scope(name, "normalize"):
        x = convert_to_tensor(tensor, name="tensor")
        n = math_ops.cast(norm(x, ord=ord, axis=axis, keepdims=True), x.dtype)
        return x / n, n


def _eps(dtype: dtypes.DType) -> float:
    return float(np.finfo(dtype.np).eps)  # complex dtypes: numpy gives their parts' eps


def matrix_rank(a: Any, tol: Any = None, validate_args: bool = False, name: Any = None) -> Tensor:
    """The number of singular values above ``tol`` (default ``eps * max(M, N) * max(s)``).

    >>> import flowbook as tf
    >>> with tf.Graph().as_default(), tf.Session() as s:
    ...     int(s.run(matrix_rank([[1.0, 2.0], [2.0, 4.0]])))
    1
    """
    with name_scope(name, "matrix_rank"):
        x = convert_to_tensor(a, name="a")
        s = svd(x, compute_uv=False)
        if tol is None:
            m = math_ops.cast(math_ops.reduce_max(array_ops.shape(x)[-2:]), s.dtype)
            tol = _eps(s.dtype) * m * math_ops.reduce_max(s, axis=-1, keepdims=True)
        return math_ops.reduce_sum(math_ops.cast(s > tol, dtypes.int64), axis=-1)


def pinv(a: Any, rcond: Any = None, validate_args: bool = False, name: Any = None) -> Tensor:
    """The Moore-Penrose pseudo-inverse, by SVD (values at or below ``rcond * max(s)`` dropped).

    >>> import flowbook as tf
    >>> with tf.Graph().as_default(), tf.Session() as s:
    ...     s.run(pinv([[2.0, 0.0], [0.0, 0.0]])).tolist()
    [[0.5, 0.0], [0.0, 0.0]]
    """
    with name_scope(name, "pinv"):
        x = convert_to_tensor(a, name="a")
        s, u, v = svd(x, full_matrices=False, compute_uv=True)
        if rcond is None:
            m = math_ops.cast(math_ops.reduce_max(array_ops.shape(x)[-2:]), s.dtype)
            rcond = 10.0 * m * _eps(s.dtype)
        cutoff = rcond * math_ops.reduce_max(s, axis=-1, keepdims=True)
        kept = where_v2(s > cutoff, s, np.array(np.inf, s.dtype.np))
        return matmul(v / math_ops.cast(kept[..., None, :], x.dtype), u, adjoint_b=True)


_PADE = {
    7: (
        3.925724783138660,
        (17297280.0, 8648640.0, 1995840.0, 277200.0, 25200.0, 1512.0, 56.0, 1.0),
    ),
    13: (
        5.371920351148152,
        (
            64764752532480000.0,
            32382376266240000.0,
            7771770303897600.0,
            1187353796428800.0,
            129060195264000.0,
            10559470521600.0,
            670442572800.0,
            33522128640.0,
            1323241920.0,
            40840800.0,
            960960.0,
            16380.0,
            182.0,
            1.0,
        ),
    ),
}


def _pade(a: Tensor, ident: Tensor, degree: int) -> tuple[Tensor, Tensor]:
    """The odd (``u``) and even (``v``) parts of the degree's Padé numerator at ``a``."""
    b = _PADE[degree][1]
    a2 = matmul(a, a)
    a4 = matmul(a2, a2)
    a6 = matmul(a4, a2)
    if degree == 7:
        u = matmul(a, b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * ident)
        return u, b[6] * a6 + b[4] * a4 + b[2] * a2 + b[0] * ident
    inner = matmul(a6, b[13] * a6 + b[11] * a4 + b[9] * a2)
    u = matmul(a, inner + b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * ident)
    v = matmul(a6, b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2
    return u, v + b[0] * ident


def expm(input: Any, name: str | None = None) -> Tensor:
    """The matrix exponential of each square matrix (scaling and squaring, Padé)."""
    with name_scope(name, "matrix_exponential"):
        a = convert_to_tensor(input, name="input")
        degree = 13 if a.dtype in (dtypes.float64, dtypes.complex128) else 7
        theta = _PADE[degree][0]
        l1 = math_ops.reduce_max(math_ops.reduce_sum(_mag(a), axis=-2), axis=-1, keepdims=True)[
            ..., None
        ]
        rdt = l1.dtype
        log2 = math_ops.log(l1 / theta) / np.log(2.0).astype(rdt.np)
        squarings = math_ops.maximum(math_ops.ceil(log2), np.zeros((), rdt.np))
        scaled = a / math_ops.cast(math_ops.pow(np.asarray(2.0, rdt.np), squarings), a.dtype)
        ident = eye(_static_n(a, "expm"), dtype=a.dtype) + array_ops.zeros_like(a)
        u, v = _pade(scaled, ident, degree)
        result = matrix_solve(v - u, v + u)
        steps = math_ops.cast(math_ops.reduce_max(squarings), dtypes.int32)
        sq = math_ops.cast(squarings, dtypes.int32)

        def body(i: Tensor, r: Tensor) -> tuple:
            return i + 1, where_v2(i < sq, matmul(r, r), r)

        _, result = while_loop(lambda i, r: i < steps, body, [convert_to_tensor(0), result])
        return result


def sqrtm(input: Any, name: str | None = None) -> Tensor:
    """The principal square root of each square matrix (no eigenvalues on the closed negative axis).

    >>> import flowbook as tf
    >>> with tf.Graph().as_default(), tf.Session() as s:
    ...     s.run(sqrtm(np.array([[4.0, 0.0], [0.0, 9.0]]))).round(6).tolist()
    [[2.0, 0.0], [0.0, 3.0]]
    """
    with name_scope(name, "MatrixSquareRoot"):
        a = convert_to_tensor(input, name="input")
        ident = eye(_static_n(a, "sqrtm"), dtype=a.dtype) + array_ops.zeros_like(a)
        tol = 8 * _eps(a.dtype)

        def more(i: Tensor, y: Tensor, z: Tensor, change: Tensor) -> Tensor:
            return math_ops.logical_and(i < 100, change > tol)

        def step(i: Tensor, y: Tensor, z: Tensor, change: Tensor) -> list:
            y_new = 0.5 * (y + matrix_inverse(z))
            z_new = 0.5 * (z + matrix_inverse(y))
            diff = math_ops.reduce_max(_mag(y_new - y))
            size = math_ops.reduce_max(_mag(y_new))
            return [i + 1, y_new, z_new, math_ops.cast(diff / size, change.dtype)]

        start = [convert_to_tensor(0), a, ident, convert_to_tensor(np.inf, dtype=dtypes.float64)]
        return while_loop(more, step, start)[1]


def logm(input: Any, name: str | None = None) -> Tensor:
    """The principal logarithm of each square (complex) matrix, by inverse scaling and squaring."""
    with name_scope(name, "MatrixLogarithm"):
        x = convert_to_tensor(input, name="input")
        for _ in range(8):
            x = sqrtm(x)
        ident = eye(_static_n(x, "logm"), dtype=x.dtype) + array_ops.zeros_like(x)
        z = matmul(x - ident, matrix_inverse(x + ident))
        z2, term = matmul(z, z), z
        total = z
        for k in range(3, 18, 2):
            term = matmul(term, z2)
            total = total + term / float(k)
        return total * 512.0  # 2 * atanh, times 2**8 for the roots


def _diagonals(diagonals: Any, fmt_: str) -> tuple[Tensor, Tensor, Tensor]:
    """``(superdiagonal, diagonal, subdiagonal)``, each [..., M], from TF's formats."""
    if fmt_ == "sequence":
        sup, main, sub = (convert_to_tensor(d) for d in diagonals)
        return sup, main, sub
    d = convert_to_tensor(diagonals, name="diagonals")
    if fmt_ == "compact":
        return d[..., 0, :], d[..., 1, :], d[..., 2, :]
    if fmt_ == "matrix":
        zero = array_ops.zeros_like(d[..., :1, 0])
        sup = array_ops.concat([matrix_diag_part(d[..., :-1, 1:]), zero], -1)
        sub = array_ops.concat([zero, matrix_diag_part(d[..., 1:, :-1])], -1)
        return sup, matrix_diag_part(d), sub
    raise ValueError(f"Unrecognized diagonals_format: {fmt_}")


def _tri_matmul(sup: Tensor, main: Tensor, sub: Tensor, x: Tensor) -> Tensor:
    zero = array_ops.zeros_like(x[..., :1, :])
    up = array_ops.concat([x[..., 1:, :], zero], -2)  # row i: x[i + 1]
    down = array_ops.concat([zero, x[..., :-1, :]], -2)  # row i: x[i - 1]
    return main[..., :, None] * x + sup[..., :, None] * up + sub[..., :, None] * down


def tridiagonal_matmul(
    diagonals: Any, rhs: Any, diagonals_format: str = "compact", name: str | None = None
) -> Tensor:
    """The tridiagonal matrix ``diagonals`` times ``rhs`` [..., M, N].

    >>> import flowbook as tf
    >>> with tf.Graph().as_default(), tf.Session() as s:
    ...     s.run(tridiagonal_matmul([[1.0, 0.0], [2.0, 2.0], [0.0, 3.0]], [[1.0], [1.0]])).tolist()
    [[3.0], [5.0]]
    """
    with name_scope(name, "tridiagonal_matmul"):
        x = convert_to_tensor(rhs, name="rhs")
        if diagonals_format == "matrix":
            return matmul(diagonals, x)
        return _tri_matmul(*_diagonals(diagonals, diagonals_format), x)


def tridiagonal_solve(
    diagonals: Any,
    rhs: Any,
    diagonals_format: str = "compact",
    transpose_rhs: bool = False,
    conjugate_rhs: bool = False,
    name: str | None = None,
    partial_pivoting: bool = True,
    perturb_singular: bool = False,
) -> Tensor:
    """X with ``T @ X == rhs`` for the tridiagonal ``T``; ``rhs`` [..., M, K] or [..., M]."""
    with name_scope(name, "tridiagonal_solve"):
        sup, main, sub = _diagonals(diagonals, diagonals_format)
        x = convert_to_tensor(rhs, name="rhs")
        vector = x.shape.ndims is not None and x.shape.ndims == main.shape.ndims
        if vector:
            x = x[..., None]
        elif transpose_rhs:
            x = matrix_transpose(x)
        if conjugate_rhs:
            x = math_ops.conj(x)
        n = array_ops.shape(main)[-1]
        dense = _tri_matmul(
            sup, main, sub, eye(n, dtype=main.dtype) + array_ops.zeros_like(main[..., None])
        )
        out = matrix_solve(dense, x)
        return out[..., 0] if vector else out


def eigh_tridiagonal(
    alpha: Any,
    beta: Any,
    eigvals_only: bool = True,
    select: str = "a",
    select_range: Any = None,
    tol: Any = None,
    name: str | None = None,
) -> Any:
    """Eigenvalues (ascending; and vectors unless ``eigvals_only``) of the Hermitian tridiagonal
    matrix with diagonal ``alpha`` [n] and superdiagonal ``beta`` [n - 1].

    ``select``: ``'a'`` all, ``'i'`` indices ``select_range[0] .. [1]``, ``'v'`` values in
    ``(select_range[0], select_range[1]]``.
    """
    with name_scope(name, "eigh_tridiagonal"):
        main = convert_to_tensor(alpha, name="alpha")
        b = math_ops.cast(convert_to_tensor(beta, name="beta"), main.dtype)
        zero = array_ops.zeros_like(main[:1])
        sup = array_ops.concat([b, zero], 0)
        sub = array_ops.concat([zero, math_ops.conj(b)], 0)
        n = array_ops.shape(main)[0]
        w, v = self_adjoint_eig(_tri_matmul(sup, main, sub, eye(n, dtype=main.dtype)))
        if select == "i":
            lo, hi = select_range
            w, v = w[lo : hi + 1], v[:, lo : hi + 1]
        elif select == "v":
            keep = (w > select_range[0]) & (w <= select_range[1])
            w, v = boolean_mask(w, keep), matrix_transpose(boolean_mask(matrix_transpose(v), keep))
        elif select != "a":
            raise ValueError(f"Invalid select: {select!r}")
        return w if eigvals_only else (w, v)
