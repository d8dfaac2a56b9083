"""More linear algebra: Cholesky, MatrixSolve, MatrixTriangularSolve and Cross, with ``norm``.

Each op is one ``xp.linalg`` call (a triangular solve is a solve of the
matrix's triangle, as numpy has no triangular solver), its ``infer`` checks
square and matching dims where the graph is built, and a singular or
non-positive-definite input raises InvalidArgumentError when it runs.  The
gradients are TF's formulas, written with this package's ops: a solve's is
another solve with the adjoint matrix; Cholesky's is built from a
triangular solve of the factor, as in TF's ``_CholeskyGrad``.  ``norm``
composes reductions as TF1 does (euclidean, 1, inf, any p, and the
Frobenius, 1 and inf norms of matrices).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.matrix_solve([[2.0, 0.0], [0.0, 4.0]], [[2.0], [2.0]])).tolist()
    [[1.0], [0.5]]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowbook.framework.errors import InvalidArgumentError
from flowbook.framework.graph import name_scope
from flowbook.framework.registry import OpDef, Out, register, register_gradient
from flowbook.framework.tensor import Operation, Tensor
from flowbook.framework.tensor_shape import broadcast, fmt
from flowbook.ops import _builder
from flowbook.ops._builder import make1, same_dtype, tensor
from flowbook.ops.array import array_ops
from flowbook.ops.linalg.linalg_ops import _adjoint, _cubic_heavy, _square_infer, matmul
from flowbook.ops.linalg.matrix_diag_ops import (
    eye,
    matrix_band_part,
    matrix_diag_part,
    matrix_set_diag,
    matrix_transpose,
)
from flowbook.ops.math.elementwise import REAL, check_dtype
from flowbook.ops.math.elementwise_ops import abs, add, conj, multiply, negative, pow, sqrt
from flowbook.ops.math.reduction_ops import reduce_max, reduce_sum

__all__ = ["cholesky", "cross", "matrix_solve", "matrix_triangular_solve", "norm"]


def _cholesky(xp: Any, input: Any) -> Any:
    try:
        return xp.linalg.cholesky(input)
    except np.linalg.LinAlgError:
        raise InvalidArgumentError(
            None, None, "Cholesky decomposition was not successful. The input might not be valid."
        ) from None


def _triangle(xp: Any, matrix: Any, lower: bool) -> Any:
    return xp.tril(matrix) if lower else xp.triu(matrix)


def _solve(xp: Any, matrix: Any, rhs: Any, adjoint: bool = False) -> Any:
    try:
        return xp.linalg.solve(_adjoint(xp, matrix) if adjoint else matrix, rhs)
    except np.linalg.LinAlgError:
        raise InvalidArgumentError(None, None, "Input matrix is not invertible.") from None


def _triangular_solve(
    xp: Any, matrix: Any, rhs: Any, lower: bool = True, adjoint: bool = False
) -> Any:
    return _solve(xp, _triangle(xp, matrix, lower), rhs, adjoint)


def _solve_infer(op_type: str, matrix: Tensor, rhs: Tensor) -> Out:
    dt = same_dtype(op_type, ("matrix", "rhs"), matrix, rhs)
    sq = _square_infer(op_type, matrix, True).shape
    r = rhs._shape
    if r is not None and len(r) < 2:
        raise ValueError(f"rhs must be at least rank 2, got rhs{fmt(r)}")
    if sq is None or r is None:
        return Out(dt, None)
    if sq[-1] is not None and r[-2] is not None and sq[-1] != r[-2]:
        raise ValueError(f"matrix{fmt(sq)} and rhs{fmt(r)} must have the same number of rows")
    return Out(dt, (*broadcast(sq[:-2], r[:-2]), sq[-1] if r[-2] is None else r[-2], r[-1]))  # type: ignore[misc]


def _cross_infer(a: Tensor, b: Tensor) -> Out:
    dt = same_dtype("Cross", ("a", "b"), a, b)
    check_dtype(dt, REAL, "a")
    for name, s in (("a", a._shape), ("b", b._shape)):
        if s is not None and (len(s) < 1 or s[-1] not in (None, 3)):
            raise ValueError(f"{name}{fmt(s)} must have 3 as its last dimension")
    if a._shape is not None and b._shape is not None and len(a._shape) != len(b._shape):
        raise ValueError(f"a{fmt(a._shape)} and b{fmt(b._shape)} must have the same shape")
    return Out(dt, a._shape if a._shape is not None else b._shape)


register(
    OpDef(
        "Cholesky",
        ("input",),
        (),
        lambda x, **_: _square_infer("Cholesky", x, True),
        _cholesky,
        heavy=_cubic_heavy,
    )
)
register(
    OpDef(
        "MatrixSolve",
        ("matrix", "rhs"),
        ("adjoint",),
        lambda m, r, **_: _solve_infer("MatrixSolve", m, r),
        _solve,
        heavy=_cubic_heavy,
    )
)
register(
    OpDef(
        "MatrixTriangularSolve",
        ("matrix", "rhs"),
        ("lower", "adjoint"),
        lambda m, r, **_: _solve_infer("MatrixTriangularSolve", m, r),
        _triangular_solve,
        heavy=_cubic_heavy,
    )
)
register(OpDef("Cross", ("a", "b"), (), _cross_infer, lambda xp, a, b: xp.cross(a, b)))


@register_gradient("MatrixSolve")
def _matrix_solve_grad(op: Operation, g: Tensor) -> tuple[Tensor, Tensor]:
    """TF's: grad_rhs = solve(A^H, g); grad_A = -grad_rhs c^H (transposed for adjoint)."""
    a, c, adj = op.inputs[0], op.outputs[0], bool(op.attrs.get("adjoint"))
    grad_b = matrix_solve(a, g, adjoint=not adj)
    if adj:
        return negative(matmul(c, grad_b, adjoint_b=True)), grad_b
    return negative(matmul(grad_b, c, adjoint_b=True)), grad_b


@register_gradient("MatrixTriangularSolve")
def _triangular_solve_grad(op: Operation, g: Tensor) -> tuple[Tensor, Tensor]:
    """As MatrixSolve's, the matrix's gradient kept to the triangle the solve read."""
    a, c = op.inputs[0], op.outputs[0]
    lower, adj = bool(op.attrs.get("lower", True)), bool(op.attrs.get("adjoint"))
    grad_b = matrix_triangular_solve(a, g, lower=lower, adjoint=not adj)
    if adj:
        grad_a = negative(matmul(c, grad_b, adjoint_b=True))
    else:
        grad_a = negative(matmul(grad_b, c, adjoint_b=True))
    band = (-1, 0) if lower else (0, -1)
    return matrix_band_part(grad_a, *band), grad_b


@register_gradient("Cholesky")
def _cholesky_grad(op: Operation, g: Tensor) -> Tensor:
    """TF's: with L^-1 from a triangular solve, P = tril(L^H g) with its diagonal halved,
    grad = L^-H P L^-1, symmetrised and halved."""
    l = op.outputs[0]  # noqa: E741
    n = array_ops.shape(l)[-1]
    l_inv = matrix_triangular_solve(l, eye(n, dtype=l.dtype), lower=True)
    middle = matmul(l, g, adjoint_a=True)
    middle = matrix_set_diag(middle, multiply(matrix_diag_part(middle), 0.5))
    middle = matrix_band_part(middle, -1, 0)
    grad = matmul(matmul(l_inv, middle, adjoint_a=True), l_inv)
    return multiply(add(grad, matrix_transpose(grad, conjugate=True)), 0.5)


@register_gradient("Cross")
def _cross_grad(op: Operation, g: Tensor) -> tuple[Tensor, Tensor]:
    a, b = op.inputs
    return cross(b, g), cross(g, a)


# ----------------------------------------------------------------- wrappers
def cholesky(input: Any, name: str | None = None) -> Tensor:
    """The lower-triangular L with L @ L^H == input, for each Hermitian positive-definite matrix.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.cholesky([[4.0, 2.0], [2.0, 2.0]])).tolist()
    [[2.0, 0.0], [1.0, 1.0]]
    """
    return make1("Cholesky", (tensor(input),), name=name)


def matrix_solve(matrix: Any, rhs: Any, adjoint: bool = False, name: str | None = None) -> Tensor:
    """X with matrix @ X == rhs (matrix^H @ X when ``adjoint``), for each matrix of the batch.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.matrix_solve([[1.0, 1.0], [0.0, 2.0]], [[3.0], [2.0]])).tolist()
    [[2.0], [1.0]]
    """
    m = tensor(matrix)
    return make1("MatrixSolve", (m, tensor(rhs, dtype=m.dtype)), {"adjoint": adjoint}, name=name)


def matrix_triangular_solve(
    matrix: Any, rhs: Any, lower: bool = True, adjoint: bool = False, name: str | None = None
) -> Tensor:
    """X with T @ X == rhs, T the lower (or upper) triangle of ``matrix``; the rest is not read.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.matrix_triangular_solve([[2.0, 9.0], [1.0, 1.0]], [[2.0], [2.0]])).tolist()
    [[1.0], [1.0]]
    """
    m = tensor(matrix)
    attrs = {"lower": lower, "adjoint": adjoint}
    return make1("MatrixTriangularSolve", (m, tensor(rhs, dtype=m.dtype)), attrs, name=name)


def cross(a: Any, b: Any, name: str | None = None) -> Tensor:
    """The cross product of 3-vectors (the last dim), pairwise.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.cross([1.0, 0.0, 0.0], [0.0, 1.0, 0.0])).tolist()
    [0.0, 0.0, 1.0]
    """
    x = tensor(a)
    return make1("Cross", (x, tensor(b, dtype=x.dtype)), name=name)


def _vector_norm(x: Tensor, ord: Any, axis: Any) -> Tensor:
    if ord in ("euclidean", 2, 2.0):
        return sqrt(reduce_sum(multiply(x, conj(x)), axis, keepdims=True))
    if ord in (1, 1.0):
        return reduce_sum(abs(x), axis, keepdims=True)
    if ord == np.inf:
        return reduce_max(abs(x), axis, keepdims=True)
    p = float(ord)
    return pow(reduce_sum(pow(abs(x), p), axis, keepdims=True), 1.0 / p)


def _matrix_norm(x: Tensor, ord: Any, axis: list[int]) -> Tensor:
    if ord in ("euclidean", "fro"):
        return sqrt(reduce_sum(multiply(x, conj(x)), axis, keepdims=True))
    rows, cols = axis
    if ord == np.inf:  # the largest row sum
        rows, cols = cols, rows
    return reduce_max(reduce_sum(abs(x), rows, keepdims=True), cols, keepdims=True)


def norm(
    tensor: Any,
    ord: Any = "euclidean",
    axis: Any = None,
    keepdims: bool | None = None,
    name: str | None = None,
    keep_dims: bool | None = None,
) -> Tensor:
    """The vector norm of ``tensor`` (all of it, or along ``axis``), or the matrix norm along a
    pair of axes: ``ord`` is ``'euclidean'``, ``'fro'``, 1, 2 (vectors), ``np.inf`` or any p > 0.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     float(s.run(fb.norm([3.0, 4.0]))), s.run(fb.norm([[1.0, -2.0]], ord=1, axis=1)).tolist()
    (5.0, [3.0])
    """
    keep = bool(keepdims if keepdims is not None else keep_dims)
    axes = None if axis is None else [axis] if isinstance(axis, int) else list(axis)
    matrix = axes is not None and len(axes) == 2
    ok = ("euclidean", "fro", 1, np.inf) if matrix else ("euclidean", 1, 2, np.inf)
    bad = ord in ("fro", "nuc") and not matrix
    if bad or not (ord in ok or (not matrix and isinstance(ord, int | float) and ord > 0)):
        raise ValueError(f"norm: ord {ord!r} is not supported for axis {axis!r}")
    with name_scope(name, "norm", [tensor]) as scope:
        x = _builder.tensor(tensor)
        out = _matrix_norm(x, ord, axes) if matrix else _vector_norm(x, ord, axes)  # type: ignore[arg-type]
        if keep:
            return array_ops.identity(out, name=scope)
        if axes:
            return array_ops.squeeze(out, axes, name=scope)
        return array_ops.reshape(out, [], name=scope)
