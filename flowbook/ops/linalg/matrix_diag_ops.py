"""Diagonals and bands of matrices: MatrixDiag, MatrixDiagPart, MatrixSetDiag, MatrixBandPart,
Diag and DiagPart, and TF1's functions built of them (``eye``, ``trace``, ``matrix_transpose``).

The kernels select with masks (``xp.where`` over an index grid) rather than
write into arrays, so one body serves numpy and CuPy.  Each op's gradient
is another op of this module, as in TF: MatrixDiag's is MatrixDiagPart,
MatrixSetDiag's splits the gradient into its off-diagonal and diagonal parts,
MatrixBandPart's is the same band of the gradient, Diag's is DiagPart.
``eye`` is ``matrix_diag`` of ones when square, else ``matrix_set_diag`` of
zeros, as TF1 builds it.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.matrix_band_part([[1, 2, 3], [4, 5, 6], [7, 8, 9]], 0, 1)).tolist()
    [[1, 2, 0], [0, 5, 6], [0, 0, 9]]
"""

from __future__ import annotations

from typing import Any

from flowbook.framework import dtypes
from flowbook.framework.graph import name_scope
from flowbook.framework.registry import Out, op
from flowbook.framework.tensor import Operation, Tensor
from flowbook.framework.tensor_shape import fmt
from flowbook.ops._builder import make1, same_dtype, tensor
from flowbook.ops.array import array_ops
from flowbook.ops.math.elementwise_ops import conj, minimum
from flowbook.ops.math.reduction_ops import reduce_sum

__all__ = [
    "diag",
    "diag_part",
    "eye",
    "matrix_band_part",
    "matrix_diag",
    "matrix_diag_part",
    "matrix_set_diag",
    "matrix_transpose",
    "trace",
]


def _rank_at_least(op_type: str, arg: str, shape: Any, k: int) -> None:
    if shape is not None and len(shape) < k:
        raise ValueError(f"{arg} must be at least rank {k}, got {arg}{fmt(shape)}")


def _min_dim(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else min(a, b)


def _grid(xp: Any, m: int, n: int) -> tuple[Any, Any]:
    """Row and column indices of an m x n matrix, shaped to broadcast."""
    return xp.arange(m)[:, None], xp.arange(n)[None, :]


# ------------------------------------------------------------------ kernels
def _matrix_diag(xp: Any, diagonal: Any) -> Any:
    n = diagonal.shape[-1]
    i, j = _grid(xp, n, n)
    return xp.where(i == j, diagonal[..., :, None], xp.zeros((), diagonal.dtype))


def _matrix_diag_part(xp: Any, input: Any) -> Any:
    return xp.diagonal(input, axis1=-2, axis2=-1).copy()


def _matrix_set_diag(xp: Any, input: Any, diagonal: Any) -> Any:
    m, n = input.shape[-2:]
    k = min(m, n)
    if k == 0:
        return input.copy()
    i, j = _grid(xp, m, n)
    by_column = xp.take(diagonal, xp.minimum(xp.arange(n), k - 1), axis=-1)
    return xp.where(i == j, by_column[..., None, :], input)


def _matrix_band_part(xp: Any, input: Any, num_lower: Any, num_upper: Any) -> Any:
    i, j = _grid(xp, *input.shape[-2:])
    keep = ((num_lower < 0) | (i - j <= num_lower)) & ((num_upper < 0) | (j - i <= num_upper))
    return xp.where(keep, input, xp.zeros((), input.dtype))


def _diag(xp: Any, diagonal: Any) -> Any:
    flat = diagonal.reshape(-1)
    return _matrix_diag(xp, flat).reshape(diagonal.shape * 2)


def _diag_part(xp: Any, input: Any) -> Any:
    half = input.shape[: input.ndim // 2]
    n = 1
    for d in half:
        n *= d
    return xp.diagonal(input.reshape(n, n)).reshape(half).copy()


# -------------------------------------------------------------------- infer
def _matrix_diag_infer(diagonal: Tensor) -> Out:
    s = diagonal._shape
    _rank_at_least("MatrixDiag", "diagonal", s, 1)
    return Out(diagonal.dtype, None if s is None else (*s, s[-1]))


def _matrix_diag_part_infer(input: Tensor) -> Out:
    s = input._shape
    _rank_at_least("MatrixDiagPart", "input", s, 2)
    return Out(input.dtype, None if s is None else (*s[:-2], _min_dim(s[-2], s[-1])))


def _matrix_set_diag_infer(input: Tensor, diagonal: Tensor) -> Out:
    dt = same_dtype("MatrixSetDiag", ("input", "diagonal"), input, diagonal)
    s, d = input._shape, diagonal._shape
    _rank_at_least("MatrixSetDiag", "input", s, 2)
    if s is not None and d is not None:
        want = (*s[:-2], _min_dim(s[-2], s[-1]))
        bad = len(d) != len(want) or any(
            a is not None and b is not None and a != b for a, b in zip(d, want)
        )
        if bad:
            raise ValueError(
                f"diagonal{fmt(d)} must have the shape {fmt(want)} of the "
                f"diagonals of input{fmt(s)}"
            )
    return Out(dt, s)


def _band_infer(input: Tensor, num_lower: Tensor, num_upper: Tensor) -> Out:
    _rank_at_least("MatrixBandPart", "input", input._shape, 2)
    for name, t in (("num_lower", num_lower), ("num_upper", num_upper)):
        if t._shape not in (None, ()):
            raise ValueError(f"{name} must be a scalar, got {name}{fmt(t._shape)}")
    return Out(input.dtype, input._shape)


def _diag_infer(diagonal: Tensor) -> Out:
    s = diagonal._shape
    return Out(diagonal.dtype, None if s is None else s * 2)


def _diag_part_infer(input: Tensor) -> Out:
    s = input._shape
    if s is None:
        return Out(input.dtype, None)
    half = len(s) // 2
    if len(s) % 2 or any(
        a is not None and b is not None and a != b for a, b in zip(s[:half], s[half:])
    ):
        raise ValueError(f"input must have the shape of [D1..Dk, D1..Dk], got {fmt(s)}")
    return Out(input.dtype, s[:half])


def _matrix_diag_grad(op: Operation, g: Tensor) -> Tensor:
    return matrix_diag_part(g)


op("MatrixDiag", ("diagonal",), (), _matrix_diag_infer, _matrix_diag, grad=_matrix_diag_grad)


def _matrix_diag_part_grad(op: Operation, g: Tensor) -> Tensor:
    return matrix_set_diag(array_ops.zeros_like(op.inputs[0]), g)


op(
    "MatrixDiagPart",
    ("input",),
    (),
    _matrix_diag_part_infer,
    _matrix_diag_part,
    grad=_matrix_diag_part_grad,
)


def _matrix_set_diag_grad(op: Operation, g: Tensor) -> tuple[Tensor, Tensor]:
    return matrix_set_diag(g, array_ops.zeros_like(op.inputs[1])), matrix_diag_part(g)


op(
    "MatrixSetDiag",
    ("input", "diagonal"),
    (),
    _matrix_set_diag_infer,
    _matrix_set_diag,
    grad=_matrix_set_diag_grad,
)


def _matrix_band_part_grad(op: Operation, g: Tensor) -> tuple[Tensor, None, None]:
    return matrix_band_part(g, op.inputs[1], op.inputs[2]), None, None


op(
    "MatrixBandPart",
    ("input", "num_lower", "num_upper"),
    (),
    _band_infer,
    _matrix_band_part,
    type_attrs={"T": 0, "Tindex": 1},
    grad=_matrix_band_part_grad,
)


def _diag_grad(op: Operation, g: Tensor) -> Tensor:
    return diag_part(g)


op("Diag", ("diagonal",), (), _diag_infer, _diag, grad=_diag_grad)


def _diag_part_grad(op: Operation, g: Tensor) -> Tensor:
    return diag(g)


op("DiagPart", ("input",), (), _diag_part_infer, _diag_part, grad=_diag_part_grad)


# ----------------------------------------------------------------- wrappers
def matrix_diag(diagonal: Any, name: str | None = None) -> Tensor:
    """Square matrices with ``diagonal``'s last dim on their diagonals, zeros elsewhere.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.matrix_diag([1, 2])).tolist()
    [[1, 0], [0, 2]]
    """
    return make1("MatrixDiag", (tensor(diagonal),), name=name)


def matrix_diag_part(input: Any, name: str | None = None) -> Tensor:
    """The main diagonal of each matrix in the last two dims.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.matrix_diag_part([[1, 2, 3], [4, 5, 6]])).tolist()
    [1, 5]
    """
    return make1("MatrixDiagPart", (tensor(input),), name=name)


def matrix_set_diag(input: Any, diagonal: Any, name: str | None = None) -> Tensor:
    """``input`` with the main diagonal of each matrix replaced by ``diagonal``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.matrix_set_diag([[1, 2], [3, 4]], [0, 0])).tolist()
    [[0, 2], [3, 0]]
    """
    x = tensor(input)
    return make1("MatrixSetDiag", (x, tensor(diagonal, dtype=x.dtype)), name=name)


def matrix_band_part(input: Any, num_lower: Any, num_upper: Any, name: str | None = None) -> Tensor:
    """Each matrix with everything outside its band zeroed: ``num_lower`` subdiagonals and
    ``num_upper`` superdiagonals kept (negative: all of them).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.matrix_band_part([[1, 2], [3, 4]], -1, 0)).tolist()
    [[1, 0], [3, 4]]
    """
    lo, up = tensor(num_lower, dtype=dtypes.int64), tensor(num_upper, dtype=dtypes.int64)
    return make1("MatrixBandPart", (tensor(input), lo, up), name=name)


def diag(diagonal: Any, name: str | None = None) -> Tensor:
    """A tensor of rank 2k with ``diagonal`` (rank k) on its diagonal: out[i.., i..] = d[i..].

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.diag([1.0, 2.0])).tolist()
    [[1.0, 0.0], [0.0, 2.0]]
    """
    return make1("Diag", (tensor(diagonal),), name=name)


def diag_part(input: Any, name: str | None = None) -> Tensor:
    """The diagonal of a tensor shaped [D1..Dk, D1..Dk], the inverse of :func:`diag`.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.diag_part([[1, 2], [3, 4]])).tolist()
    [1, 4]
    """
    return make1("DiagPart", (tensor(input),), name=name)


def trace(x: Any, name: str | None = None) -> Tensor:
    """The sum of each matrix's main diagonal (the last two dims).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     int(s.run(fb.trace([[1, 2], [3, 4]])))
    5
    """
    with name_scope(name, "Trace", [x]) as scope:
        return reduce_sum(matrix_diag_part(tensor(x)), [-1], name=scope)


def matrix_transpose(a: Any, name: str = "matrix_transpose", conjugate: bool = False) -> Tensor:
    """Each matrix in the last two dims transposed (conjugated too when ``conjugate``).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.matrix_transpose(fb.zeros([5, 2, 3])).shape.as_list()
    [5, 3, 2]
    """
    with name_scope(name, values=[a]) as scope:
        x = tensor(a)
        s = x._shape
        if s is not None:
            _rank_at_least("matrix_transpose", "a", s, 2)
            perm: Any = [*range(len(s) - 2), len(s) - 1, len(s) - 2]
        else:
            r = array_ops.rank(x)
            perm = array_ops.concat([array_ops.range(r - 2), [r - 1, r - 2]], 0)
        out = array_ops.transpose(x, perm, name=scope)
        return conj(out) if conjugate else out


def eye(
    num_rows: Any,
    num_columns: Any = None,
    batch_shape: Any = None,
    dtype: Any = dtypes.float32,
    name: str | None = None,
) -> Tensor:
    """An identity matrix (or a batch of them), ``num_rows`` x ``num_columns``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.eye(2, 3, dtype=fb.int32)).tolist()
    [[1, 0, 0], [0, 1, 0]]
    """
    with name_scope(name, "eye", [num_rows, num_columns, batch_shape]):
        cols = num_rows if num_columns is None else num_columns
        batch = list(batch_shape or [])
        if isinstance(num_rows, int) and isinstance(cols, int):
            diag_shape: Any = [*batch, min(num_rows, cols)]
            full: Any = [*batch, num_rows, cols]
        else:
            rows, cols = tensor(num_rows, dtypes.int32), tensor(cols, dtypes.int32)
            diag_shape = array_ops.stack([*batch, minimum(rows, cols)])
            full = array_ops.stack([*batch, rows, cols])
        ones = array_ops.ones(diag_shape, dtype=dtype)
        if num_columns is None or num_columns is num_rows:
            return matrix_diag(ones)
        return matrix_set_diag(array_ops.zeros(full, dtype=dtype), ones)
