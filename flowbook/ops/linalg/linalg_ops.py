"""Matrix ops: MatMul, BatchMatMulV2, MatrixInverse, MatrixDeterminant, Qr, and the solvers.

Each op's ``infer`` checks ranks and inner or square dimensions when the
graph is built, so ``matmul(x[32,784], w[100,10])`` fails at the line that
wrote it.  The kernels are one ``xp`` call each; they are ``heavy`` (run on
the executor's thread pool, where numpy releases the GIL) once the static
flop count reaches 2**18, or when it is unknown.  ``math_ops`` re-exports the
wrappers.  Each op's gradient (TF's ``_MatMulGrad``, ``_BatchMatMulV2``,
``_MatrixInverseGrad``, ``_MatrixDeterminantGrad``) follows its registration.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.matmul(fb.placeholder(fb.float32, [None, 784]), fb.zeros([784, 10])).shape.as_list()
    [None, 10]

Cholesky, MatrixSolve, MatrixTriangularSolve and Cross, with ``norm``, follow.
Each is one ``xp.linalg`` call (a triangular solve is a solve of the
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

from flowbook.framework import dtypes
from flowbook.framework.dtypes import DType
from flowbook.framework.errors import InvalidArgumentError
from flowbook.framework.graph import name_scope
from flowbook.framework.registry import (
    NOT_DIFFERENTIABLE,
    Fusion,
    Out,
    op,
)
from flowbook.framework.tensor import Operation, Tensor
from flowbook.framework.tensor_shape import Shape, broadcast, fmt, num_elements
from flowbook.ops import _builder
from flowbook.ops._builder import make, make1, operands, same_dtype, tensor
from flowbook.ops.array import array_ops
from flowbook.ops.linalg.matrix_diag_ops import (
    eye,
    matrix_band_part,
    matrix_diag_part,
    matrix_set_diag,
    matrix_transpose,
)
from flowbook.ops.math.elementwise import INEXACT, NUMBER, REAL, check_dtype
from flowbook.ops.math.elementwise_ops import abs, add, conj, multiply, negative, pow, sqrt
from flowbook.ops.math.reduction_ops import reduce_max, reduce_sum

__all__ = [
    "cholesky",
    "cross",
    "matmul",
    "matrix_determinant",
    "matrix_inverse",
    "matrix_solve",
    "matrix_triangular_solve",
    "norm",
    "qr",
]

_HEAVY_FLOPS = 1 << 18  # below this many multiply-adds a kernel runs inline


def _matmul_heavy(op: Any) -> bool:
    """Heavy when batch * m * n * k reaches 2**18, or is unknown."""
    a, out = op.inputs[0]._shape, num_elements(op.outputs[0]._shape)
    if a is None or out is None:
        return True
    k = a[-2] if op.attrs.get("transpose_a") or op.attrs.get("adj_x") else a[-1]
    return k is None or out * k >= _HEAVY_FLOPS


def _cubic_heavy(op: Any) -> bool:
    """Heavy when batch * n**3 reaches 2**18, or is unknown."""
    a = op.inputs[0]._shape
    n = num_elements(a)
    return n is None or n * a[-1] >= _HEAVY_FLOPS  # type: ignore[index]


def _matrix_dims(name: str, shape: Shape, rank2: bool) -> Shape:
    if shape is None:
        return (None, None) if rank2 else None
    if len(shape) < 2 or (rank2 and len(shape) != 2):
        want = "rank 2" if rank2 else "at least rank 2"
        raise ValueError(f"Shape must be {want} but is rank {len(shape)}: {name}{fmt(shape)}")
    return shape


def _matmul_shape(op_type: str, a: Tensor, b: Tensor, ta: bool, tb: bool) -> tuple[DType, Shape]:
    dt = same_dtype(op_type, ("a", "b") if op_type == "MatMul" else ("x", "y"), a, b)
    check_dtype(dt, NUMBER, "a")
    sa = _matrix_dims("a", a._shape, op_type == "MatMul")
    sb = _matrix_dims("b", b._shape, op_type == "MatMul")
    if sa is None or sb is None:
        return dt, None
    m, k1 = (sa[-1], sa[-2]) if ta else (sa[-2], sa[-1])
    k2, n = (sb[-1], sb[-2]) if tb else (sb[-2], sb[-1])
    if k1 is not None and k2 is not None and k1 != k2:
        raise ValueError(
            f"inner dimensions differ ({k1} vs {k2}), "
            f"a{fmt(sa)}{'^T' if ta else ''} @ b{fmt(sb)}{'^T' if tb else ''}"
        )
    return dt, (*broadcast(sa[:-2], sb[:-2]), m, n)  # type: ignore[misc]


def _matmul_infer(
    a: Tensor, b: Tensor, transpose_a: bool = False, transpose_b: bool = False, **_: Any
) -> Out:
    return Out(*_matmul_shape("MatMul", a, b, transpose_a, transpose_b))


def _matmul_bind(xp: Any, transpose_a: bool = False, transpose_b: bool = False, **_: Any) -> Any:
    if not (transpose_a or transpose_b):
        return xp.matmul
    return lambda a, b: xp.matmul(a.T if transpose_a else a, b.T if transpose_b else b)


def _batch_matmul_infer(
    x: Tensor, y: Tensor, adj_x: bool = False, adj_y: bool = False, **_: Any
) -> Out:
    return Out(*_matmul_shape("BatchMatMulV2", x, y, adj_x, adj_y))


def _adjoint(xp: Any, x: Any) -> Any:
    x = xp.swapaxes(x, -1, -2)
    return xp.conj(x) if x.dtype.kind == "c" else x


def _batch_matmul(xp: Any, x: Any, y: Any, adj_x: bool = False, adj_y: bool = False) -> Any:
    return xp.matmul(_adjoint(xp, x) if adj_x else x, _adjoint(xp, y) if adj_y else y)


def _mm(op_type: str, a: Tensor, b: Tensor, ta: bool, tb: bool) -> Tensor:
    flags = ("transpose_a", "transpose_b") if op_type == "MatMul" else ("adj_x", "adj_y")
    return make1(op_type, (a, b), dict(zip(flags, (ta, tb))))


def _matmul_grads(op_type: str, g: Tensor, a: Tensor, b: Tensor, ta: bool, tb: bool) -> tuple:
    """TF's _MatMulGrad: (da, db) of a @ b with a and b possibly transposed."""
    if not ta and not tb:
        return _mm(op_type, g, b, False, True), _mm(op_type, a, g, True, False)
    if not ta and tb:
        return _mm(op_type, g, b, False, False), _mm(op_type, g, a, True, False)
    if ta and not tb:
        return _mm(op_type, b, g, False, True), _mm(op_type, a, g, False, False)
    return _mm(op_type, b, g, True, True), _mm(op_type, g, a, True, True)


def _flags(op: Operation, *names: str) -> list[bool]:
    return [bool(op.attrs.get(n, False)) for n in names]


def _matmul_grad(op: Operation, g: Tensor) -> tuple:
    a, b = (conj(t) for t in op.inputs)  # MatMul only transposes: conjugate here, as TF does
    return _matmul_grads("MatMul", g, a, b, *_flags(op, "transpose_a", "transpose_b"))


op(
    "MatMul",
    ("a", "b"),
    ("transpose_a", "transpose_b"),
    _matmul_infer,
    lambda xp, a, b, **attrs: _matmul_bind(xp, **attrs)(a, b),
    bind=_matmul_bind,
    heavy=_matmul_heavy,
    fusion=Fusion(head="_FusedMatMul"),
    grad=_matmul_grad,
)


def _batch_matmul_grad(op: Operation, g: Tensor) -> tuple:
    """As MatMul's (adj_x and adj_y conjugate), summed over broadcast batch dims."""
    x, y = op.inputs
    gx, gy = _matmul_grads("BatchMatMulV2", g, x, y, *_flags(op, "adj_x", "adj_y"))
    sx, sy = x._shape, y._shape
    if sx is not None and sy is not None:
        if len(sx) <= 2 and len(sy) <= 2:
            return gx, gy
        if None not in sx[:-2] and sx[:-2] == sy[:-2]:
            return gx, gy
    return _batch_sum(gx, x, y, 0), _batch_sum(gy, y, x, 1)


op(
    "BatchMatMulV2",
    ("x", "y"),
    ("adj_x", "adj_y"),
    _batch_matmul_infer,
    _batch_matmul,
    heavy=_matmul_heavy,
    grad=_batch_matmul_grad,
)


def _batch_sum(grad: Tensor, x: Tensor, other: Tensor, which: int) -> Tensor:
    """``grad`` summed over the batch dims along which ``x`` was broadcast, shaped like ``x``."""
    gs, xs = grad._shape, x._shape
    if gs is not None and xs is not None and None not in gs and None not in xs:
        lead = len(gs) - len(xs)
        axes = list(range(lead))
        axes += [lead + i for i, d in enumerate(xs[:-2]) if d == 1 and gs[lead + i] != 1]
        summed = reduce_sum(grad, axis=axes) if axes else grad
        return summed if summed._shape == xs else array_ops.reshape(summed, list(xs))
    sx, so = array_ops.shape(x), array_ops.shape(other)
    pair = (sx[:-2], so[:-2]) if which == 0 else (so[:-2], sx[:-2])
    axes = make("BroadcastGradientArgs", pair).outputs[which]
    return array_ops.reshape(reduce_sum(grad, axis=axes), sx)


def matmul(
    a: Any,
    b: Any,
    transpose_a: bool = False,
    transpose_b: bool = False,
    adjoint_a: bool = False,
    adjoint_b: bool = False,
    a_is_sparse: bool = False,
    b_is_sparse: bool = False,
    name: str | None = None,
) -> Tensor:
    """The matrix product a @ b; inputs of rank > 2 multiply as batches of matrices.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.matmul([[1.0, 2.0]], [[3.0], [4.0]])).tolist()
    [[11.0]]
    """
    if (transpose_a and adjoint_a) or (transpose_b and adjoint_b):
        raise ValueError("Only one of transpose and adjoint can be True for each input.")
    a, b = operands(a, b)
    ta, tb = transpose_a or adjoint_a, transpose_b or adjoint_b
    ra, rb = a._shape, b._shape
    if ra is not None and rb is not None and len(ra) <= 2 and len(rb) <= 2:
        if a.dtype.is_complex:  # MatMul only transposes: conjugate for an adjoint
            a, b = (conj(a) if adjoint_a else a), (conj(b) if adjoint_b else b)
        attrs = {"transpose_a": ta, "transpose_b": tb}
        return make1("MatMul", (a, b), attrs, name=name)
    if a.dtype.is_complex:  # BatchMatMulV2's adj_x also conjugates: undo it for a transpose
        a, b = (conj(a) if transpose_a else a), (conj(b) if transpose_b else b)
    return make1("BatchMatMulV2", (a, b), {"adj_x": ta, "adj_y": tb}, name=name or "MatMul")


def _square_infer(name: str, x: Tensor, keep: bool) -> Out:
    check_dtype(x.dtype, INEXACT - {dtypes.float16}, "input")
    s = _matrix_dims("input", x._shape, False)
    if s is None:
        return Out(x.dtype, None)
    if s[-1] is not None and s[-2] is not None and s[-1] != s[-2]:
        raise ValueError(f"{name} needs square matrices, got input{fmt(s)}")
    return Out(x.dtype, s if keep else s[:-2])


def _matrix_inverse(xp: Any, x: Any, adjoint: bool = False) -> Any:
    try:
        return xp.linalg.inv(_adjoint(xp, x) if adjoint else x)
    except np.linalg.LinAlgError:
        raise InvalidArgumentError(None, None, "Input is not invertible.") from None


def _matrix_inverse_grad(op: Operation, g: Tensor) -> Tensor:
    """TF's: -A^-H g A^-H (adjoints swapped for adjoint=True)."""
    ainv, adj = op.outputs[0], bool(op.attrs.get("adjoint"))
    inner = matmul(g, ainv, adjoint_a=adj, adjoint_b=not adj)
    return negative(matmul(ainv, inner, adjoint_a=not adj))


op(
    "MatrixInverse",
    ("input",),
    ("adjoint",),
    lambda x, **_: _square_infer("MatrixInverse", x, True),
    _matrix_inverse,
    heavy=_cubic_heavy,
    grad=_matrix_inverse_grad,
)


def _matrix_determinant_grad(op: Operation, g: Tensor) -> Tensor:
    """TF's: g * det(A) * A^-H, per matrix."""
    a, det = op.inputs[0], op.outputs[0]
    multipliers = array_ops.expand_dims(array_ops.expand_dims(multiply(g, det), -1), -1)
    return multiply(multipliers, matrix_inverse(a, adjoint=True))


op(
    "MatrixDeterminant",
    ("input",),
    (),
    lambda x, **_: _square_infer("MatrixDeterminant", x, False),
    lambda xp, x: xp.linalg.det(x),
    heavy=_cubic_heavy,
    grad=_matrix_determinant_grad,
)


def matrix_inverse(input: Any, adjoint: bool = False, name: str | None = None) -> Tensor:
    """The inverse of each square matrix in the last two dims.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.matrix_inverse([[2.0, 0.0], [0.0, 4.0]])).tolist()
    [[0.5, 0.0], [0.0, 0.25]]
    """
    return make1("MatrixInverse", (tensor(input),), {"adjoint": adjoint}, name=name)


def matrix_determinant(input: Any, name: str | None = None) -> Tensor:
    """The determinant of each square matrix in the last two dims.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     float(s.run(fb.matrix_determinant([[2.0, 1.0], [1.0, 3.0]])))
    5.0
    """
    return make1("MatrixDeterminant", (tensor(input),), name=name)


def _qr_infer(x: Tensor, full_matrices: bool = False) -> list[Out]:
    check_dtype(x.dtype, INEXACT - {dtypes.float16}, "input")
    s = _matrix_dims("input", x._shape, False)
    if s is None:
        return [Out(x.dtype, None), Out(x.dtype, None)]
    m, n = s[-2], s[-1]
    k = m if full_matrices or m is None or n is None else min(m, n)
    return [Out(x.dtype, (*s[:-2], m, k)), Out(x.dtype, (*s[:-2], k, n))]


op(
    "Qr",
    ("input",),
    ("full_matrices",),
    _qr_infer,
    lambda xp, x, full_matrices=False: tuple(
        xp.linalg.qr(x, mode="complete" if full_matrices else "reduced")
    ),
    heavy=lambda op: True,
    grad=NOT_DIFFERENTIABLE,
)


def qr(input: Any, full_matrices: bool = False, name: str | None = None) -> tuple[Tensor, Tensor]:
    """``(q, r)`` with ``q`` orthonormal columns and ``r`` upper triangular, ``q @ r == input``.

    >>> import flowbook as fb, numpy as np
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     q, r = s.run(fb.qr([[3.0, 1.0], [4.0, 2.0]]))
    >>> bool(np.allclose(q @ r, [[3, 1], [4, 2]]))
    True
    """
    op = make("Qr", (tensor(input),), {"full_matrices": full_matrices}, name=name)
    return op.outputs[0], op.outputs[1]


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


def _matrix_solve_grad(op: Operation, g: Tensor) -> tuple[Tensor, Tensor]:
    """TF's: grad_rhs = solve(A^H, g); grad_A = -grad_rhs c^H (transposed for adjoint)."""
    a, c, adj = op.inputs[0], op.outputs[0], bool(op.attrs.get("adjoint"))
    grad_b = matrix_solve(a, g, adjoint=not adj)
    if adj:
        return negative(matmul(c, grad_b, adjoint_b=True)), grad_b
    return negative(matmul(grad_b, c, adjoint_b=True)), grad_b


op(
    "MatrixSolve",
    ("matrix", "rhs"),
    ("adjoint",),
    lambda m, r, **_: _solve_infer("MatrixSolve", m, r),
    _solve,
    heavy=_cubic_heavy,
    grad=_matrix_solve_grad,
)


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


op(
    "MatrixTriangularSolve",
    ("matrix", "rhs"),
    ("lower", "adjoint"),
    lambda m, r, **_: _solve_infer("MatrixTriangularSolve", m, r),
    _triangular_solve,
    heavy=_cubic_heavy,
    grad=_triangular_solve_grad,
)


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


op(
    "Cholesky",
    ("input",),
    (),
    lambda x, **_: _square_infer("Cholesky", x, True),
    _cholesky,
    heavy=_cubic_heavy,
    grad=_cholesky_grad,
)


def _cross_grad(op: Operation, g: Tensor) -> tuple[Tensor, Tensor]:
    a, b = op.inputs
    return cross(b, g), cross(g, a)


op("Cross", ("a", "b"), (), _cross_infer, lambda xp, a, b: xp.cross(a, b), grad=_cross_grad)


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
