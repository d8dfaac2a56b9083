"""``tf.linalg.LinearOperator`` and its common subclasses: matrices known by their structure.

An operator stands for a (batch of) ``[..., M, N]`` matrix without always
building it.  Pure Python over existing ops: every method returns tensors
built from the operator's own tensors, so gradients come from those ops.

The base class holds the generic (dense) path: ``to_dense`` is the one
method a subclass must give, and ``matmul``, ``solve``, ``determinant``,
``log_abs_determinant``, ``diag_part`` and ``trace`` fall back to the dense
matrix (``matrix_solve``, ``matrix_determinant``, ``slogdet``).  A subclass
overrides what its structure makes cheap: a diagonal multiplies and solves
element-wise and its determinant is a product; a triangular one solves by
substitution; a composition chains its factors' products and solves and
multiplies their determinants; an inversion swaps ``matmul`` and ``solve``;
an adjoint flips the ``adjoint`` flags; a Householder reflection is its own
inverse with determinant -1; a tridiagonal one uses ``tridiagonal_matmul``
and ``tridiagonal_solve``; a block diagonal or block lower triangular one
multiplies its diagonal blocks' determinants; a circulant one is built from
the inverse DFT of its spectrum, whose product is its determinant.  ``adjoint()``, ``inverse()`` and ``cholesky()`` return
operators; ``shape`` is the static shape (unknown dims ``None``).

``conjugate_gradient`` (``tf.linalg.experimental``) solves with an operator's
``matvec`` in a ``while_loop``, as TF's.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default(), tf.Session() as s:
    ...     op = LinearOperatorDiag([2.0, 4.0])
    ...     s.run([op.determinant(), op.solve([[2.0], [2.0]])])[1].tolist()
    [[1.0], [0.5]]
"""

from __future__ import annotations

import collections
from typing import Any

import numpy as np

from flowbook.framework import dtypes
from flowbook.framework.graph import name_scope
from flowbook.framework.tensor import Tensor
from flowbook.framework.tensor_shape import TensorShape
from flowbook.ops.array import array_ops
from flowbook.ops.array.constant_op import convert_to_tensor
from flowbook.ops.array.fill_ops import one_hot
from flowbook.ops.array.selection_ops import gather
from flowbook.ops.array.tile_pad_ops import pad
from flowbook.ops.control_flow.control_flow import while_loop
from flowbook.ops.linalg.linalg_impl import slogdet, tridiagonal_matmul, tridiagonal_solve
from flowbook.ops.linalg.linalg_ops import (
    cholesky,
    matmul,
    matrix_determinant,
    matrix_solve,
    matrix_triangular_solve,
)
from flowbook.ops.linalg.matrix_diag_ops import (
    eye,
    matrix_band_part,
    matrix_diag,
    matrix_diag_part,
    matrix_transpose,
)
from flowbook.ops.math import math_ops
from flowbook.ops.math.complex_ops import real
from flowbook.ops.math.fft_ops import ifft

__all__ = [
    "CGState",
    "LinearOperator",
    "LinearOperatorAdjoint",
    "LinearOperatorBlockDiag",
    "LinearOperatorBlockLowerTriangular",
    "LinearOperatorCirculant",
    "LinearOperatorComposition",
    "LinearOperatorDiag",
    "LinearOperatorFullMatrix",
    "LinearOperatorHouseholder",
    "LinearOperatorIdentity",
    "LinearOperatorInversion",
    "LinearOperatorKronecker",
    "LinearOperatorLowRankUpdate",
    "LinearOperatorLowerTriangular",
    "LinearOperatorPermutation",
    "LinearOperatorScaledIdentity",
    "LinearOperatorToeplitz",
    "LinearOperatorTridiag",
    "LinearOperatorZeros",
    "conjugate_gradient",
]


def _adj(x: Tensor) -> Tensor:
    return matrix_transpose(x, conjugate=True)


class LinearOperator:
    """A (batch of) matrix known through its methods; subclasses give :meth:`_to_dense`."""

    def __init__(
        self,
        dtype: Any,
        is_non_singular: bool | None = None,
        is_self_adjoint: bool | None = None,
        is_positive_definite: bool | None = None,
        is_square: bool | None = None,
        name: str | None = None,
        graph_parents: Any = None,
        parameters: Any = None,
    ) -> None:
        self._dtype = dtypes.as_dtype(dtype)
        self.is_non_singular = is_non_singular
        self.is_self_adjoint = is_self_adjoint
        self.is_positive_definite = is_positive_definite
        self._is_square = is_square
        self._name = name or type(self).__name__
        self.parameters = dict(parameters or {})

    # the structure: subclasses give _to_dense, and _shape when it is cheaper than the dense one
    def _to_dense(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} gives no dense matrix")

    def _shape(self) -> TensorShape:
        return self.to_dense().shape

    @property
    def dtype(self) -> dtypes.DType:
        return self._dtype

    @property
    def name(self) -> str:
        return self._name

    @property
    def shape(self) -> TensorShape:
        return TensorShape(self._shape())

    @property
    def batch_shape(self) -> TensorShape:
        return TensorShape(self.shape.as_list()[:-2])

    @property
    def tensor_rank(self) -> int:
        return self.shape.ndims

    @property
    def range_dimension(self) -> Any:
        return self.shape.as_list()[-2]

    @property
    def domain_dimension(self) -> Any:
        return self.shape.as_list()[-1]

    @property
    def is_square(self) -> bool | None:
        if self._is_square is not None:
            return self._is_square
        m, n = self.range_dimension, self.domain_dimension
        return None if m is None or n is None else m == n

    @property
    def H(self) -> LinearOperator:
        return self.adjoint()

    def shape_tensor(self, name: str = "shape_tensor") -> Tensor:
        return array_ops.shape(self.to_dense(), name=name)

    def to_dense(self, name: str = "to_dense") -> Tensor:
        with name_scope(self._name), name_scope(name):
            return self._to_dense()

    # the generic (dense) algebra
    def _matmul(self, x: Tensor, adjoint: bool, adjoint_arg: bool) -> Tensor:
        return matmul(self.to_dense(), x, adjoint_a=adjoint, adjoint_b=adjoint_arg)

    def _solve(self, rhs: Tensor, adjoint: bool, adjoint_arg: bool) -> Tensor:
        return matrix_solve(self.to_dense(), _adj(rhs) if adjoint_arg else rhs, adjoint=adjoint)

    def _determinant(self) -> Tensor:
        return matrix_determinant(self.to_dense())

    def _log_abs_determinant(self) -> Tensor:
        return slogdet(self.to_dense())[1]

    def _diag_part(self) -> Tensor:
        return matrix_diag_part(self.to_dense())

    def matmul(
        self, x: Any, adjoint: bool = False, adjoint_arg: bool = False, name: str = "matmul"
    ) -> Any:
        """``op @ x`` (``op^H`` when ``adjoint``; ``x^H`` when ``adjoint_arg``); ``x`` may be an operator."""
        if isinstance(x, LinearOperator):
            left = self.adjoint() if adjoint else self
            right = x.adjoint() if adjoint_arg else x
            return LinearOperatorComposition([left, right])
        with name_scope(self._name), name_scope(name):
            return self._matmul(convert_to_tensor(x, dtype=self.dtype), adjoint, adjoint_arg)

    def __matmul__(self, other: Any) -> Any:
        return self.matmul(other)

    def matvec(self, x: Any, adjoint: bool = False, name: str = "matvec") -> Tensor:
        col = array_ops.expand_dims(convert_to_tensor(x, dtype=self.dtype), -1)
        return array_ops.squeeze(self.matmul(col, adjoint=adjoint, name=name), [-1])

    def solve(
        self, rhs: Any, adjoint: bool = False, adjoint_arg: bool = False, name: str = "solve"
    ) -> Tensor:
        """X with ``op @ X == rhs`` (``op^H`` when ``adjoint``)."""
        with name_scope(self._name), name_scope(name):
            return self._solve(convert_to_tensor(rhs, dtype=self.dtype), adjoint, adjoint_arg)

    def solvevec(self, rhs: Any, adjoint: bool = False, name: str = "solvevec") -> Tensor:
        col = array_ops.expand_dims(convert_to_tensor(rhs, dtype=self.dtype), -1)
        return array_ops.squeeze(self.solve(col, adjoint=adjoint, name=name), [-1])

    def determinant(self, name: str = "det") -> Tensor:
        with name_scope(self._name), name_scope(name):
            return self._determinant()

    def log_abs_determinant(self, name: str = "log_abs_det") -> Tensor:
        with name_scope(self._name), name_scope(name):
            return self._log_abs_determinant()

    def diag_part(self, name: str = "diag_part") -> Tensor:
        with name_scope(self._name), name_scope(name):
            return self._diag_part()

    def trace(self, name: str = "trace") -> Tensor:
        return math_ops.reduce_sum(self.diag_part(), axis=-1, name=name)

    def add_to_tensor(self, x: Any, name: str = "add_to_tensor") -> Tensor:
        return math_ops.add(self.to_dense(), convert_to_tensor(x, dtype=self.dtype), name=name)

    def adjoint(self, name: str = "adjoint") -> LinearOperator:
        return self if self.is_self_adjoint else LinearOperatorAdjoint(self)

    def inverse(self, name: str = "inverse") -> LinearOperator:
        return LinearOperatorInversion(self)

    def cholesky(self, name: str = "cholesky") -> LinearOperator:
        return LinearOperatorLowerTriangular(cholesky(self.to_dense()), is_non_singular=True)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} shape={self.shape} dtype={self.dtype.name}>"


def _flags(kwargs: dict[str, Any]) -> dict[str, Any]:
    keys = ("is_non_singular", "is_self_adjoint", "is_positive_definite", "is_square", "name")
    return {k: kwargs[k] for k in keys if k in kwargs}


class LinearOperatorFullMatrix(LinearOperator):
    """A dense ``matrix`` [..., M, N]: every method on the matrix itself."""

    def __init__(self, matrix: Any, **kwargs: Any) -> None:
        self._matrix = convert_to_tensor(matrix, name="matrix")
        super().__init__(self._matrix.dtype, **_flags(kwargs))

    def _to_dense(self) -> Tensor:
        return self._matrix

    def _shape(self) -> TensorShape:
        return self._matrix.shape


class LinearOperatorLowerTriangular(LinearOperator):
    """The lower triangle of ``tril`` [..., N, N] (the rest is not read): solves by substitution."""

    def __init__(self, tril: Any, **kwargs: Any) -> None:
        self._tril = convert_to_tensor(tril, name="tril")
        super().__init__(self._tril.dtype, **{"is_square": True, **_flags(kwargs)})

    def _to_dense(self) -> Tensor:
        return matrix_band_part(self._tril, -1, 0)

    def _shape(self) -> TensorShape:
        return self._tril.shape

    def _solve(self, rhs: Tensor, adjoint: bool, adjoint_arg: bool) -> Tensor:
        rhs = _adj(rhs) if adjoint_arg else rhs
        return matrix_triangular_solve(self._tril, rhs, lower=True, adjoint=adjoint)

    def _diag_part(self) -> Tensor:
        return matrix_diag_part(self._tril)

    def _determinant(self) -> Tensor:
        return math_ops.reduce_prod(self._diag_part(), axis=-1)

    def _log_abs_determinant(self) -> Tensor:
        return math_ops.reduce_sum(math_ops.log(math_ops.abs(self._diag_part())), axis=-1)


class LinearOperatorDiag(LinearOperator):
    """The diagonal matrix of ``diag`` [..., N]: element-wise products and solves."""

    def __init__(self, diag: Any, **kwargs: Any) -> None:
        self._diag = convert_to_tensor(diag, name="diag")
        super().__init__(self._diag.dtype, **{"is_square": True, **_flags(kwargs)})

    def _shape(self) -> TensorShape:
        dims = self._diag.shape.as_list()
        return TensorShape([*dims, dims[-1]])

    def _to_dense(self) -> Tensor:
        return matrix_diag(self._diag)

    def _scale(self, adjoint: bool) -> Tensor:
        d = math_ops.conj(self._diag) if adjoint and self._diag.dtype.is_complex else self._diag
        return array_ops.expand_dims(d, -1)

    def _matmul(self, x: Tensor, adjoint: bool, adjoint_arg: bool) -> Tensor:
        return self._scale(adjoint) * (_adj(x) if adjoint_arg else x)

    def _solve(self, rhs: Tensor, adjoint: bool, adjoint_arg: bool) -> Tensor:
        return (_adj(rhs) if adjoint_arg else rhs) / self._scale(adjoint)

    def _diag_part(self) -> Tensor:
        return self._diag

    def _determinant(self) -> Tensor:
        return math_ops.reduce_prod(self._diag, axis=-1)

    def _log_abs_determinant(self) -> Tensor:
        return math_ops.reduce_sum(math_ops.log(math_ops.abs(self._diag)), axis=-1)

    def inverse(self, name: str = "inverse") -> LinearOperator:
        return LinearOperatorDiag(1.0 / self._diag)


class LinearOperatorScaledIdentity(LinearOperator):
    """``multiplier`` (a scalar per batch member) times the ``num_rows`` identity."""

    def __init__(self, num_rows: int, multiplier: Any, **kwargs: Any) -> None:
        self._num_rows = int(num_rows)
        self._multiplier = convert_to_tensor(multiplier, name="multiplier")
        super().__init__(self._multiplier.dtype, **{"is_square": True, **_flags(kwargs)})

    def _shape(self) -> TensorShape:
        return TensorShape([*self._multiplier.shape.as_list(), self._num_rows, self._num_rows])

    def _m(self, adjoint: bool = False) -> Tensor:
        m = self._multiplier
        m = math_ops.conj(m) if adjoint and m.dtype.is_complex else m
        return m[..., None, None]

    def _to_dense(self) -> Tensor:
        return self._m() * eye(self._num_rows, dtype=self.dtype)

    def _matmul(self, x: Tensor, adjoint: bool, adjoint_arg: bool) -> Tensor:
        return self._m(adjoint) * (_adj(x) if adjoint_arg else x)

    def _solve(self, rhs: Tensor, adjoint: bool, adjoint_arg: bool) -> Tensor:
        return (_adj(rhs) if adjoint_arg else rhs) / self._m(adjoint)

    def _diag_part(self) -> Tensor:
        return self._multiplier[..., None] * array_ops.ones([self._num_rows], self.dtype)

    def _determinant(self) -> Tensor:
        return math_ops.pow(self._multiplier, math_ops.cast(self._num_rows, self.dtype))

    def _log_abs_determinant(self) -> Tensor:
        return self._num_rows * math_ops.log(math_ops.abs(self._multiplier))


class LinearOperatorIdentity(LinearOperatorScaledIdentity):
    """The ``num_rows`` identity (a batch of them with ``batch_shape``)."""

    def __init__(
        self, num_rows: int, batch_shape: Any = None, dtype: Any = dtypes.float32, **kwargs: Any
    ) -> None:
        ones = np.ones(tuple(batch_shape or ()), dtypes.as_dtype(dtype).np)
        flags = {"is_self_adjoint": True, "is_positive_definite": True, "is_non_singular": True}
        super().__init__(num_rows, ones, **{**flags, **_flags(kwargs)})

    def _matmul(self, x: Tensor, adjoint: bool, adjoint_arg: bool) -> Tensor:
        x = _adj(x) if adjoint_arg else x
        return x if not self.batch_shape.as_list() else x * self._m()

    def _solve(self, rhs: Tensor, adjoint: bool, adjoint_arg: bool) -> Tensor:
        return self._matmul(rhs, adjoint, adjoint_arg)


class LinearOperatorZeros(LinearOperator):
    """The ``num_rows`` x ``num_columns`` zero matrix (a batch with ``batch_shape``)."""

    def __init__(
        self,
        num_rows: int,
        num_columns: int | None = None,
        batch_shape: Any = None,
        dtype: Any = dtypes.float32,
        **kwargs: Any,
    ) -> None:
        self._dims = [*(batch_shape or ()), int(num_rows), int(num_columns or num_rows)]
        super().__init__(dtype, **{"is_self_adjoint": True, **_flags(kwargs)})

    def _shape(self) -> TensorShape:
        return TensorShape(self._dims)

    def _to_dense(self) -> Tensor:
        return array_ops.zeros(self._dims, self.dtype)

    def _determinant(self) -> Tensor:
        return array_ops.zeros(self._dims[:-2], self.dtype)

    def _log_abs_determinant(self) -> Tensor:
        return math_ops.log(self._determinant())


class LinearOperatorAdjoint(LinearOperator):
    """The adjoint of ``operator``: its methods with the ``adjoint`` flag flipped."""

    def __init__(self, operator: LinearOperator, **kwargs: Any) -> None:
        self.operator = operator
        super().__init__(operator.dtype, **{"is_square": operator.is_square, **_flags(kwargs)})

    def _shape(self) -> TensorShape:
        dims = self.operator.shape.as_list()
        return TensorShape([*dims[:-2], dims[-1], dims[-2]])

    def _to_dense(self) -> Tensor:
        return _adj(self.operator.to_dense())

    def _matmul(self, x: Tensor, adjoint: bool, adjoint_arg: bool) -> Tensor:
        return self.operator.matmul(x, adjoint=not adjoint, adjoint_arg=adjoint_arg)

    def _solve(self, rhs: Tensor, adjoint: bool, adjoint_arg: bool) -> Tensor:
        return self.operator.solve(rhs, adjoint=not adjoint, adjoint_arg=adjoint_arg)

    def _determinant(self) -> Tensor:
        return math_ops.conj(self.operator.determinant())

    def _log_abs_determinant(self) -> Tensor:
        return self.operator.log_abs_determinant()

    def adjoint(self, name: str = "adjoint") -> LinearOperator:
        return self.operator


class LinearOperatorInversion(LinearOperator):
    """The inverse of ``operator``: its ``solve`` multiplies and its ``matmul`` solves."""

    def __init__(self, operator: LinearOperator, **kwargs: Any) -> None:
        self.operator = operator
        super().__init__(operator.dtype, **{"is_square": True, **_flags(kwargs)})

    def _shape(self) -> TensorShape:
        return self.operator.shape

    def _to_dense(self) -> Tensor:
        n = self.operator.shape.as_list()[-1]
        ident = eye(n, dtype=self.dtype) + array_ops.zeros_like(self.operator.to_dense())
        return self.operator.solve(ident)

    def _matmul(self, x: Tensor, adjoint: bool, adjoint_arg: bool) -> Tensor:
        return self.operator.solve(x, adjoint=adjoint, adjoint_arg=adjoint_arg)

    def _solve(self, rhs: Tensor, adjoint: bool, adjoint_arg: bool) -> Tensor:
        return self.operator.matmul(rhs, adjoint=adjoint, adjoint_arg=adjoint_arg)

    def _determinant(self) -> Tensor:
        return 1.0 / self.operator.determinant()

    def _log_abs_determinant(self) -> Tensor:
        return -self.operator.log_abs_determinant()

    def inverse(self, name: str = "inverse") -> LinearOperator:
        return self.operator


class LinearOperatorComposition(LinearOperator):
    """``operators[0] @ operators[1] @ ...``: products and solves chained, determinants multiplied."""

    def __init__(self, operators: Any, **kwargs: Any) -> None:
        self.operators = list(operators)
        if not self.operators:
            raise ValueError("LinearOperatorComposition needs at least one operator")
        super().__init__(self.operators[0].dtype, **_flags(kwargs))

    def _shape(self) -> TensorShape:
        first, last = self.operators[0].shape.as_list(), self.operators[-1].shape.as_list()
        return TensorShape([*first[:-1], last[-1]])

    def _to_dense(self) -> Tensor:
        out = self.operators[-1].to_dense()
        for operator in reversed(self.operators[:-1]):
            out = operator.matmul(out)
        return out

    def _matmul(self, x: Tensor, adjoint: bool, adjoint_arg: bool) -> Tensor:
        ops = self.operators if adjoint else self.operators[::-1]
        out = ops[0].matmul(x, adjoint=adjoint, adjoint_arg=adjoint_arg)
        for operator in ops[1:]:
            out = operator.matmul(out, adjoint=adjoint)
        return out

    def _solve(self, rhs: Tensor, adjoint: bool, adjoint_arg: bool) -> Tensor:
        ops = self.operators[::-1] if adjoint else self.operators
        out = ops[0].solve(rhs, adjoint=adjoint, adjoint_arg=adjoint_arg)
        for operator in ops[1:]:
            out = operator.solve(out, adjoint=adjoint)
        return out

    def _determinant(self) -> Tensor:
        out = self.operators[0].determinant()
        for operator in self.operators[1:]:
            out = out * operator.determinant()
        return out

    def _log_abs_determinant(self) -> Tensor:
        return math_ops.add_n([o.log_abs_determinant() for o in self.operators])


class LinearOperatorKronecker(LinearOperator):
    """The Kronecker product of ``operators`` (dense algebra on the product)."""

    def __init__(self, operators: Any, **kwargs: Any) -> None:
        self.operators = list(operators)
        super().__init__(self.operators[0].dtype, **_flags(kwargs))

    def _shape(self) -> TensorShape:
        dims = [o.shape.as_list() for o in self.operators]
        m = int(np.prod([d[-2] for d in dims]))
        n = int(np.prod([d[-1] for d in dims]))
        return TensorShape([*dims[0][:-2], m, n])

    def _to_dense(self) -> Tensor:
        out = self.operators[0].to_dense()
        for operator in self.operators[1:]:
            b = operator.to_dense()
            (m, n), (p, q) = out.shape.as_list()[-2:], b.shape.as_list()[-2:]
            prod = out[..., :, None, :, None] * b[..., None, :, None, :]
            batch = array_ops.shape(prod)[:-4]
            out = array_ops.reshape(prod, array_ops.concat([batch, [m * p, n * q]], 0))
        return out

    def _determinant(self) -> Tensor:  # det(A (x) B) = det(A)^q det(B)^n, A n x n, B q x q
        out, n = self.operators[0].determinant(), self.operators[0].shape.as_list()[-1]
        for operator in self.operators[1:]:
            q = operator.shape.as_list()[-1]
            out = math_ops.pow(out, float(q)) * math_ops.pow(operator.determinant(), float(n))
            n *= q
        return out


class LinearOperatorBlockDiag(LinearOperator):
    """Square ``operators`` on the diagonal of one matrix: determinants multiplied."""

    def __init__(self, operators: Any, **kwargs: Any) -> None:
        self.operators = list(operators)
        super().__init__(self.operators[0].dtype, **{"is_square": True, **_flags(kwargs)})

    def _shape(self) -> TensorShape:
        dims = [o.shape.as_list() for o in self.operators]
        return TensorShape([*dims[0][:-2], sum(d[-2] for d in dims), sum(d[-1] for d in dims)])

    def _to_dense(self) -> Tensor:
        total = self.shape.as_list()[-1]
        rows, at = [], 0
        for operator in self.operators:
            block = operator.to_dense()
            width = block.shape.as_list()[-1]
            batch = [[0, 0]] * (block.shape.ndims - 1)
            rows.append(pad(block, [*batch, [at, total - at - width]]))
            at += width
        return array_ops.concat(rows, -2)

    def _determinant(self) -> Tensor:
        out = self.operators[0].determinant()
        for operator in self.operators[1:]:
            out = out * operator.determinant()
        return out

    def _log_abs_determinant(self) -> Tensor:
        return math_ops.add_n([o.log_abs_determinant() for o in self.operators])


class LinearOperatorBlockLowerTriangular(LinearOperator):
    """Blocks ``operators[i][j]`` (row ``i`` has ``i + 1``), zeros above: the diagonal blocks'
    determinants multiplied."""

    def __init__(self, operators: Any, **kwargs: Any) -> None:
        self.operators = [list(row) for row in operators]
        super().__init__(self.operators[0][0].dtype, **{"is_square": True, **_flags(kwargs)})

    def _shape(self) -> TensorShape:
        dims = [row[-1].shape.as_list() for row in self.operators]
        return TensorShape([*dims[0][:-2], sum(d[-2] for d in dims), sum(d[-1] for d in dims)])

    def _to_dense(self) -> Tensor:
        total = self.shape.as_list()[-1]
        rows = []
        for row in self.operators:
            dense = array_ops.concat([o.to_dense() for o in row], -1)
            width = dense.shape.as_list()[-1]
            batch = [[0, 0]] * (dense.shape.ndims - 1)
            rows.append(pad(dense, [*batch, [0, total - width]]))
        return array_ops.concat(rows, -2)

    def _determinant(self) -> Tensor:
        out = self.operators[0][0].determinant()
        for row in self.operators[1:]:
            out = out * row[-1].determinant()
        return out

    def _log_abs_determinant(self) -> Tensor:
        return math_ops.add_n([row[-1].log_abs_determinant() for row in self.operators])


class LinearOperatorCirculant(LinearOperator):
    """The circulant matrix with eigenvalues ``spectrum`` [..., N] (its DFT diagonalises it):
    column 0 is ``ifft(spectrum)``, entry ``(i, j)`` is its ``(i - j) mod N``; the determinant is
    the product of ``spectrum``.  ``input_output_dtype`` real keeps the real part."""

    def __init__(
        self, spectrum: Any, input_output_dtype: Any = dtypes.complex64, **kwargs: Any
    ) -> None:
        self._spectrum = convert_to_tensor(spectrum, name="spectrum")
        super().__init__(input_output_dtype, **{"is_square": True, **_flags(kwargs)})

    def _shape(self) -> TensorShape:
        dims = self._spectrum.shape.as_list()
        return TensorShape([*dims, dims[-1]])

    def _out(self, x: Tensor) -> Tensor:
        return math_ops.cast(real(x) if not self.dtype.is_complex else x, self.dtype)

    def _to_dense(self) -> Tensor:
        n = self.shape.as_list()[-1]
        spectrum = self._spectrum
        if not spectrum.dtype.is_complex:
            complex_dt = dtypes.complex128 if spectrum.dtype == dtypes.float64 else dtypes.complex64
            spectrum = math_ops.cast(spectrum, complex_dt)
        i, j = np.indices((n, n))
        return self._out(gather(ifft(spectrum), ((i - j) % n).astype(np.int32), axis=-1))

    def _determinant(self) -> Tensor:
        return self._out(math_ops.reduce_prod(self._spectrum, axis=-1))

    def _log_abs_determinant(self) -> Tensor:
        s = self._spectrum
        mag = math_ops.sqrt(real(s * math_ops.conj(s))) if s.dtype.is_complex else math_ops.abs(s)
        return math_ops.cast(math_ops.reduce_sum(math_ops.log(mag), axis=-1), self.dtype)


class LinearOperatorPermutation(LinearOperator):
    """The permutation matrix of ``perm``: row ``i`` has its one in column ``perm[i]``."""

    def __init__(self, perm: Any, dtype: Any = dtypes.float32, **kwargs: Any) -> None:
        self._perm = convert_to_tensor(perm, name="perm")
        super().__init__(dtype, **{"is_square": True, "is_non_singular": True, **_flags(kwargs)})

    def _shape(self) -> TensorShape:
        dims = self._perm.shape.as_list()
        return TensorShape([*dims, dims[-1]])

    def _to_dense(self) -> Tensor:
        return one_hot(self._perm, self.shape.as_list()[-1], dtype=self.dtype)

    def _solve(self, rhs: Tensor, adjoint: bool, adjoint_arg: bool) -> Tensor:
        return self._matmul(rhs, not adjoint, adjoint_arg)  # orthogonal: the inverse is P^T


class LinearOperatorHouseholder(LinearOperator):
    """The reflection ``I - 2 v v^H / (v^H v)`` about ``reflection_axis`` v: its own inverse."""

    def __init__(self, reflection_axis: Any, **kwargs: Any) -> None:
        self._v = convert_to_tensor(reflection_axis, name="reflection_axis")
        flags = {"is_square": True, "is_self_adjoint": True, "is_non_singular": True}
        super().__init__(self._v.dtype, **{**flags, **_flags(kwargs)})

    def _shape(self) -> TensorShape:
        dims = self._v.shape.as_list()
        return TensorShape([*dims, dims[-1]])

    def _to_dense(self) -> Tensor:
        v = self._v[..., :, None]
        scale = 2.0 / math_ops.reduce_sum(self._v * math_ops.conj(self._v), axis=-1)
        n = self.shape.as_list()[-1]
        return eye(n, dtype=self.dtype) - scale[..., None, None] * matmul(v, v, adjoint_b=True)

    def _solve(self, rhs: Tensor, adjoint: bool, adjoint_arg: bool) -> Tensor:
        return self._matmul(rhs, adjoint, adjoint_arg)

    def _determinant(self) -> Tensor:
        return -array_ops.ones_like(self._v[..., 0])

    def _log_abs_determinant(self) -> Tensor:
        return array_ops.zeros_like(self._v[..., 0])


class LinearOperatorTridiag(LinearOperator):
    """A tridiagonal matrix in TF's ``diagonals_format`` (``compact``, ``sequence``, ``matrix``)."""

    def __init__(self, diagonals: Any, diagonals_format: str = "compact", **kwargs: Any) -> None:
        if diagonals_format == "sequence":
            self._diagonals = [convert_to_tensor(d) for d in diagonals]
            ref = self._diagonals[1]
        else:
            self._diagonals = convert_to_tensor(diagonals, name="diagonals")
            ref = (
                self._diagonals[..., 0, :]
                if diagonals_format == "compact"
                else self._diagonals[..., 0]
            )
        self._format = diagonals_format
        self._ref = ref
        super().__init__(ref.dtype, **{"is_square": True, **_flags(kwargs)})

    def _shape(self) -> TensorShape:
        dims = self._ref.shape.as_list()
        return TensorShape([*dims, dims[-1]])

    def _to_dense(self) -> Tensor:
        n = self.shape.as_list()[-1]
        ident = eye(n, dtype=self.dtype) + array_ops.zeros_like(self._ref[..., None])
        return tridiagonal_matmul(self._diagonals, ident, self._format)

    def _matmul(self, x: Tensor, adjoint: bool, adjoint_arg: bool) -> Tensor:
        if adjoint:
            return super()._matmul(x, adjoint, adjoint_arg)
        return tridiagonal_matmul(self._diagonals, _adj(x) if adjoint_arg else x, self._format)

    def _solve(self, rhs: Tensor, adjoint: bool, adjoint_arg: bool) -> Tensor:
        if adjoint:
            return super()._solve(rhs, adjoint, adjoint_arg)
        return tridiagonal_solve(self._diagonals, _adj(rhs) if adjoint_arg else rhs, self._format)


class LinearOperatorLowRankUpdate(LinearOperator):
    """``base_operator + u diag(diag_update) v^H`` (v defaults to u; dense algebra)."""

    def __init__(
        self,
        base_operator: LinearOperator,
        u: Any,
        diag_update: Any = None,
        v: Any = None,
        **kwargs: Any,
    ) -> None:
        self.base_operator = base_operator
        self._u = convert_to_tensor(u, dtype=base_operator.dtype, name="u")
        self._v = (
            self._u if v is None else convert_to_tensor(v, dtype=base_operator.dtype, name="v")
        )
        self._d = (
            None
            if diag_update is None
            else convert_to_tensor(diag_update, dtype=base_operator.dtype)
        )
        super().__init__(base_operator.dtype, **_flags(kwargs))

    def _shape(self) -> TensorShape:
        return self.base_operator.shape

    def _to_dense(self) -> Tensor:
        u = self._u if self._d is None else self._u * self._d[..., None, :]
        return self.base_operator.to_dense() + matmul(u, self._v, adjoint_b=True)


class LinearOperatorToeplitz(LinearOperator):
    """The Toeplitz matrix with first column ``col`` and first row ``row`` (``row[0]`` unread)."""

    def __init__(self, col: Any, row: Any, **kwargs: Any) -> None:
        self._col = convert_to_tensor(col, name="col")
        self._row = convert_to_tensor(row, dtype=self._col.dtype, name="row")
        super().__init__(self._col.dtype, **{"is_square": True, **_flags(kwargs)})

    def _shape(self) -> TensorShape:
        dims = self._col.shape.as_list()
        return TensorShape([*dims, dims[-1]])

    def _to_dense(self) -> Tensor:
        n = self.shape.as_list()[-1]
        i, j = np.indices((n, n))
        index = np.where(i >= j, n + i - j, j - i).astype(np.int32)  # into [row, col]
        return gather(array_ops.concat([self._row, self._col], -1), index, axis=-1)


CGState = collections.namedtuple("CGState", ["i", "x", "r", "p", "gamma"])


def conjugate_gradient(
    operator: LinearOperator,
    rhs: Any,
    preconditioner: LinearOperator | None = None,
    x: Any = None,
    tol: float = 1e-5,
    max_iter: int = 20,
    name: str = "conjugate_gradient",
) -> CGState:
    """Solve ``operator @ x == rhs`` ([..., N]) for a Hermitian positive definite operator by
    (preconditioned) conjugate gradients, stopping when ``|r| <= tol * |rhs|`` or after
    ``max_iter`` steps; returns TF's ``CGState(i, x, r, p, gamma)``."""

    def dot(a: Tensor, b: Tensor) -> Tensor:
        return math_ops.reduce_sum(math_ops.conj(a) * b, axis=-1, keepdims=True)

    def precond(r: Tensor) -> Tensor:
        return r if preconditioner is None else preconditioner.matvec(r)

    with name_scope(name):
        b = convert_to_tensor(rhs, dtype=operator.dtype, name="rhs")
        x0 = array_ops.zeros_like(b) if x is None else convert_to_tensor(x, dtype=b.dtype)
        r0 = b - operator.matvec(x0)
        p0 = precond(r0)
        limit = tol * math_ops.sqrt(real(dot(b, b)))[..., 0]

        def cond(i: Tensor, x: Tensor, r: Tensor, p: Tensor, gamma: Tensor) -> Tensor:
            left = math_ops.sqrt(real(dot(r, r)))[..., 0] > limit
            return math_ops.logical_and(i < max_iter, math_ops.reduce_any(left))

        def body(i: Tensor, x: Tensor, r: Tensor, p: Tensor, gamma: Tensor) -> list:
            z = operator.matvec(p)
            alpha = gamma / dot(p, z)
            r_new = r - alpha * z
            q = precond(r_new)
            gamma_new = dot(r_new, q)
            return [i + 1, x + alpha * p, r_new, q + gamma_new / gamma * p, gamma_new]

        start = [convert_to_tensor(0, name="i"), x0, r0, p0, dot(r0, p0)]
        out = CGState(*while_loop(cond, body, start, maximum_iterations=max_iter))
        return CGState(out.i, out.x, out.r, out.p, out.gamma[..., 0])
