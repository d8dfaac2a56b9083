"""Decompositions and least squares: Svd and SelfAdjointEigV2, cholesky_solve, matrix_solve_ls.

``Svd`` always has three outputs (s, u, v), as TF's does; with
``compute_uv=False`` u and v are empty.  It declares no gradient
(NOT_DIFFERENTIABLE), as in TF1.  ``SelfAdjointEigV2`` gives the ascending
eigenvalues e and, with ``compute_v``, the eigenvectors v of each Hermitian
matrix, reading its lower triangle only (as LAPACK does); its gradient is
the classic formula ``v (diag(ge) + F * (v^H gv)) v^H`` with
``F[i, j] = 1 / (e[j] - e[i])`` off the diagonal, folded onto the lower
triangle the op read.  ``cholesky_solve`` and ``matrix_solve_ls`` compose
solves as TF1 does (least squares by the regularised normal equations, the
short side chosen from the static shape), so their gradients come free.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.self_adjoint_eigvals([[2.0, 1.0], [1.0, 2.0]])).round(6).tolist()
    [1.0, 3.0]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowbook.framework import dtypes
from flowbook.framework.graph import name_scope
from flowbook.framework.registry import (
    NOT_DIFFERENTIABLE,
    Out,
    op,
)
from flowbook.framework.tensor import Operation, Tensor
from flowbook.ops._builder import make, tensor
from flowbook.ops.array import array_ops
from flowbook.ops.linalg.linalg_ops import (
    _adjoint,
    _cubic_heavy,
    _matrix_dims,
    _square_infer,
    cholesky,
    matmul,
    matrix_triangular_solve,
)
from flowbook.ops.linalg.matrix_diag_ops import (
    eye,
    matrix_band_part,
    matrix_diag,
    matrix_diag_part,
    matrix_set_diag,
    matrix_transpose,
)
from flowbook.ops.math.elementwise_ops import add, multiply, reciprocal, subtract

__all__ = ["cholesky_solve", "matrix_solve_ls", "self_adjoint_eig", "self_adjoint_eigvals", "svd"]


def _real(dt: Any) -> Any:
    return dtypes.as_dtype(np.empty(0, dt.np).real.dtype) if dt.is_complex else dt


def _svd_infer(a: Tensor, compute_uv: bool = True, full_matrices: bool = False) -> list[Out]:
    s = _matrix_dims("input", a._shape, False)
    if s is None:
        return [Out(_real(a.dtype), None), Out(a.dtype, None), Out(a.dtype, None)]
    *batch, m, n = s
    k = None if m is None or n is None else min(m, n)
    if not compute_uv:
        return [Out(_real(a.dtype), (*batch, k)), Out(a.dtype, (0,)), Out(a.dtype, (0,))]
    cu, cv = (m, n) if full_matrices else (k, k)
    return [
        Out(_real(a.dtype), (*batch, k)),
        Out(a.dtype, (*batch, m, cu)),
        Out(a.dtype, (*batch, n, cv)),
    ]


def _svd(xp: Any, a: Any, compute_uv: bool = True, full_matrices: bool = False) -> tuple:
    if not compute_uv:
        empty = xp.zeros((0,), a.dtype)
        return xp.linalg.svd(a, compute_uv=False), empty, empty
    u, s, vh = xp.linalg.svd(a, full_matrices=full_matrices)
    return s, u, _adjoint(xp, vh)


def _eig_infer(a: Tensor, compute_v: bool = True) -> list[Out]:
    s = _square_infer("SelfAdjointEigV2", a, True).shape
    e = None if s is None else s[:-1]
    return [Out(_real(a.dtype), e), Out(a.dtype, s if compute_v else (0,))]


def _eig(xp: Any, a: Any, compute_v: bool = True) -> tuple:
    if not compute_v:
        return xp.linalg.eigvalsh(a), xp.zeros((0,), a.dtype)
    e, v = xp.linalg.eigh(a)
    return e, v


op(
    "Svd",
    ("input",),
    ("compute_uv", "full_matrices"),
    _svd_infer,
    _svd,
    heavy=_cubic_heavy,
    grad=NOT_DIFFERENTIABLE,
    num_outputs=3,
)


def _eig_grad(op: Operation, ge: Tensor, gv: Tensor) -> Tensor:
    """``v (diag(ge) + F * (v^H gv)) v^H``, folded onto the lower triangle the op read."""
    if op.attrs.get("compute_v", True):
        e, v = op.outputs
        inner = matrix_diag(ge)
        gap = subtract(array_ops.expand_dims(e, -2), array_ops.expand_dims(e, -1))
        n = array_ops.shape(e)[-1]
        f = matrix_set_diag(reciprocal(add(gap, eye(n, dtype=e.dtype))), array_ops.zeros_like(e))
        inner = add(inner, multiply(f, matmul(v, gv, adjoint_a=True)))
    else:  # eigenvalues only: the vectors are computed again
        e, v = make("SelfAdjointEigV2", (op.inputs[0],), {"compute_v": True}).outputs
        inner = matrix_diag(ge)
    grad = matmul(matmul(v, inner), v, adjoint_b=True)
    grad = matrix_band_part(add(grad, matrix_transpose(grad, conjugate=True)), -1, 0)
    return matrix_set_diag(grad, multiply(matrix_diag_part(grad), 0.5))


op(
    "SelfAdjointEigV2",
    ("input",),
    ("compute_v",),
    _eig_infer,
    _eig,
    heavy=_cubic_heavy,
    num_outputs=2,
    grad=_eig_grad,
)


# ----------------------------------------------------------------- wrappers
def svd(
    tensor_: Any, full_matrices: bool = False, compute_uv: bool = True, name: str | None = None
) -> Any:
    """The singular values s (descending) of each matrix, and with ``compute_uv`` also u and v,
    ``a == u @ diag(s) @ v^H``: returns ``(s, u, v)``, or s alone.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.svd([[3.0, 0.0], [0.0, -4.0]], compute_uv=False)).tolist()
    [4.0, 3.0]
    """
    attrs = {"compute_uv": compute_uv, "full_matrices": full_matrices}
    s, u, v = make("Svd", (tensor(tensor_),), attrs, name=name).outputs
    return (s, u, v) if compute_uv else s


def self_adjoint_eig(tensor_: Any, name: str | None = None) -> tuple[Tensor, Tensor]:
    """The eigenvalues (ascending) and eigenvectors (columns) of each Hermitian matrix.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     e, v = s.run(fb.self_adjoint_eig([[2.0, 0.0], [0.0, 1.0]]))
    >>> e.tolist(), abs(v).tolist()
    ([1.0, 2.0], [[0.0, 1.0], [1.0, 0.0]])
    """
    e, v = make("SelfAdjointEigV2", (tensor(tensor_),), {"compute_v": True}, name=name).outputs
    return e, v


def self_adjoint_eigvals(tensor_: Any, name: str | None = None) -> Tensor:
    """The eigenvalues (ascending) of each Hermitian matrix.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.self_adjoint_eigvals([[1.0, 0.0], [0.0, 5.0]])).tolist()
    [1.0, 5.0]
    """
    return make("SelfAdjointEigV2", (tensor(tensor_),), {"compute_v": False}, name=name).outputs[0]


def cholesky_solve(chol: Any, rhs: Any, name: str | None = None) -> Tensor:
    """X with A @ X == rhs, given ``chol``, the Cholesky factor of A: two triangular solves.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.cholesky_solve([[2.0, 0.0], [0.0, 1.0]], [[4.0], [1.0]])).tolist()
    [[1.0], [1.0]]
    """
    with name_scope(name, "cholesky_solve", [chol, rhs]):
        c = tensor(chol)
        y = matrix_triangular_solve(c, tensor(rhs, dtype=c.dtype), lower=True)
        return matrix_triangular_solve(c, y, lower=True, adjoint=True)


def matrix_solve_ls(
    matrix: Any, rhs: Any, l2_regularizer: float = 0.0, fast: bool = True, name: str | None = None
) -> Tensor:
    """The X minimising ``|matrix @ X - rhs|^2 + l2_regularizer * |X|^2`` for each batch member,
    by the normal equations (on the short side of ``matrix``, known from its static shape).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.matrix_solve_ls([[1.0], [1.0]], [[1.0], [3.0]])).tolist()
    [[2.0]]
    """
    if not fast:
        raise NotImplementedError("matrix_solve_ls: only fast=True (the normal equations)")
    with name_scope(name, "matrix_solve_ls", [matrix, rhs]):
        a = tensor(matrix)
        b = tensor(rhs, dtype=a.dtype)
        s = a._shape
        wide = s is not None and s[-2] is not None and s[-1] is not None and s[-2] < s[-1]
        gram = matmul(a, a, adjoint_b=True) if wide else matmul(a, a, adjoint_a=True)
        n = array_ops.shape(gram)[-1]
        gram = add(gram, multiply(eye(n, dtype=a.dtype), l2_regularizer))
        chol = cholesky(gram)
        if wide:  # under-determined: X = A^H (A A^H + l I)^-1 b
            return matmul(a, cholesky_solve(chol, b), adjoint_a=True)
        return cholesky_solve(chol, matmul(a, b, adjoint_a=True))
