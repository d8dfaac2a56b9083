"""``tf.linalg``: TF1's matrix functions under their ``tf.linalg`` names.

Every name here is another name for an op flowbook declares elsewhere
(``matrix_determinant`` is ``det``, ``self_adjoint_eig`` is ``eigh``...),
plus ``adjoint``, ``matvec`` and ``logdet`` built from them.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default(), tf.Session() as s:
    ...     float(s.run(tf.linalg.det([[2.0, 0.0], [0.0, 3.0]])))
    6.0
"""

from __future__ import annotations

from typing import Any

from flowbook.api.nn import l2_normalize
from flowbook.framework.graph import name_scope
from flowbook.framework.tensor import Tensor
from flowbook.ops.array import array_ops
from flowbook.ops.linalg.einsum_ops import einsum, tensordot
from flowbook.ops.linalg.linalg_decomp import cholesky_solve, svd
from flowbook.ops.linalg.linalg_decomp import matrix_solve_ls as lstsq
from flowbook.ops.linalg.linalg_decomp import self_adjoint_eig as eigh
from flowbook.ops.linalg.linalg_decomp import self_adjoint_eigvals as eigvalsh
from flowbook.ops.linalg.linalg_ops import cholesky, cross, matmul, norm, qr
from flowbook.ops.linalg.linalg_ops import matrix_determinant as det
from flowbook.ops.linalg.linalg_ops import matrix_inverse as inv
from flowbook.ops.linalg.linalg_ops import matrix_solve as solve
from flowbook.ops.linalg.linalg_ops import matrix_triangular_solve as triangular_solve
from flowbook.ops.linalg.matrix_diag_ops import diag as tensor_diag
from flowbook.ops.linalg.matrix_diag_ops import diag_part as tensor_diag_part
from flowbook.ops.linalg.matrix_diag_ops import eye, trace
from flowbook.ops.linalg.matrix_diag_ops import matrix_band_part as band_part
from flowbook.ops.linalg.matrix_diag_ops import matrix_diag as diag
from flowbook.ops.linalg.matrix_diag_ops import matrix_diag_part as diag_part
from flowbook.ops.linalg.matrix_diag_ops import matrix_set_diag as set_diag
from flowbook.ops.linalg.matrix_diag_ops import matrix_transpose as transpose
from flowbook.ops.math import math_ops
from flowbook.ops.math.clip_ops import global_norm
from flowbook.ops.math.complex_ops import real

__all__ = [
    "adjoint",
    "band_part",
    "cholesky",
    "cholesky_solve",
    "cross",
    "det",
    "diag",
    "diag_part",
    "eigh",
    "eigvalsh",
    "einsum",
    "eye",
    "global_norm",
    "inv",
    "l2_normalize",
    "logdet",
    "lstsq",
    "matmul",
    "matvec",
    "norm",
    "qr",
    "set_diag",
    "solve",
    "svd",
    "tensor_diag",
    "tensor_diag_part",
    "tensordot",
    "trace",
    "transpose",
    "triangular_solve",
]

_ = (einsum, l2_normalize, global_norm, tensordot)  # tf.linalg keeps these names


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
