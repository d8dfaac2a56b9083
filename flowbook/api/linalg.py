"""``tf.linalg``: TF1's matrix functions under their ``tf.linalg`` names.

Most names here are other names for ops flowbook declares elsewhere
(``matrix_determinant`` is ``det``, ``self_adjoint_eig`` is ``eigh``...),
plus ``adjoint``, ``matvec`` and ``logdet`` built from them; the functions
TF composes (``lu`` and its inverses, ``slogdet``, ``pinv``, ``expm``, the
tridiagonal ones...) come from :mod:`flowbook.ops.linalg.linalg_impl` and the
``LinearOperator`` classes from :mod:`flowbook.ops.linalg.linear_operator`.
``experimental`` holds ``conjugate_gradient``.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default(), tf.Session() as s:
    ...     float(s.run(tf.linalg.det([[2.0, 0.0], [0.0, 3.0]])))
    6.0
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from flowbook.api.nn import l2_normalize
from flowbook.framework.graph import name_scope
from flowbook.framework.tensor import Tensor
from flowbook.ops.array import array_ops
from flowbook.ops.linalg import linear_operator as _lo
from flowbook.ops.linalg.einsum_ops import einsum, tensordot
from flowbook.ops.linalg.linalg_decomp import cholesky_solve, svd
from flowbook.ops.linalg.linalg_decomp import matrix_solve_ls as lstsq
from flowbook.ops.linalg.linalg_decomp import self_adjoint_eig as eigh
from flowbook.ops.linalg.linalg_decomp import self_adjoint_eigvals as eigvalsh
from flowbook.ops.linalg.linalg_impl import (
    eigh_tridiagonal,
    expm,
    logm,
    lu,
    lu_matrix_inverse,
    lu_reconstruct,
    lu_solve,
    matrix_rank,
    normalize,
    pinv,
    slogdet,
    sqrtm,
    tridiagonal_matmul,
    tridiagonal_solve,
)
from flowbook.ops.linalg.linalg_ops import cholesky, cross, matmul, norm, qr
from flowbook.ops.linalg.linalg_ops import matrix_determinant as det
from flowbook.ops.linalg.linalg_ops import matrix_inverse as inv
from flowbook.ops.linalg.linalg_ops import matrix_solve as solve
from flowbook.ops.linalg.linalg_ops import matrix_triangular_solve as triangular_solve
from flowbook.ops.linalg.linear_operator import *  # noqa: F403  (the LinearOperator classes)
from flowbook.ops.linalg.linear_operator import conjugate_gradient
from flowbook.ops.linalg.matrix_diag_ops import diag as tensor_diag
from flowbook.ops.linalg.matrix_diag_ops import diag_part as tensor_diag_part
from flowbook.ops.linalg.matrix_diag_ops import eye, matrix_transpose, trace
from flowbook.ops.linalg.matrix_diag_ops import matrix_band_part as band_part
from flowbook.ops.linalg.matrix_diag_ops import matrix_diag as diag
from flowbook.ops.linalg.matrix_diag_ops import matrix_diag_part as diag_part
from flowbook.ops.linalg.matrix_diag_ops import matrix_set_diag as set_diag
from flowbook.ops.linalg.matrix_diag_ops import matrix_transpose as transpose
from flowbook.ops.math import math_ops
from flowbook.ops.math.clip_ops import global_norm
from flowbook.ops.math.complex_ops import real

__all__ = [
    *(n for n in _lo.__all__ if n.startswith("LinearOperator")),
    "adjoint",
    "band_part",
    "cholesky",
    "cholesky_solve",
    "cross",
    "det",
    "diag",
    "diag_part",
    "eigh",
    "eigh_tridiagonal",
    "eigvalsh",
    "einsum",
    "experimental",
    "expm",
    "eye",
    "global_norm",
    "inv",
    "l2_normalize",
    "logdet",
    "logm",
    "lstsq",
    "lu",
    "lu_matrix_inverse",
    "lu_reconstruct",
    "lu_solve",
    "matmul",
    "matrix_rank",
    "matrix_transpose",
    "matvec",
    "norm",
    "normalize",
    "pinv",
    "qr",
    "set_diag",
    "slogdet",
    "solve",
    "sqrtm",
    "svd",
    "tensor_diag",
    "tensor_diag_part",
    "tensordot",
    "trace",
    "transpose",
    "triangular_solve",
    "tridiagonal_matmul",
    "tridiagonal_solve",
]

_ = (einsum, l2_normalize, global_norm, tensordot)  # tf.linalg keeps these names

experimental = SimpleNamespace(conjugate_gradient=conjugate_gradient)  # tf.linalg.experimental


def adjoint(matrix: Any, name: str | None = None) -> Tensor:
    """The conjugate transpose of the innermost two dims."""
    return transpose(matrix, conjugate=True, name=name or "adjoint")


def matvec(
    a: Any, b: Any, transpose_a: bool = False, adjoint_a: bool = False, name: str | None = None
) -> Tensor:
    """``a @ b`` for a (batch of) matrix ``a`` and vector ``b``."""
    with name_scope(name, "MatVec"):
        col = array_ops.expand_dims(b, -1)
        return array_ops.squeeze(matmul(a, col, transpose_a=transpose_a, adjoint_a=adjoint_a), [-1])


def logdet(matrix: Any, name: str | None = None) -> Tensor:
    """log(det(matrix)) of a Hermitian positive definite matrix, through its Cholesky factor."""
    with name_scope(name, "logdet"):
        chol = cholesky(matrix)
        return 2.0 * math_ops.reduce_sum(math_ops.log(real(diag_part(chol))), [-1])
