"""The element-wise gradient ops TensorFlow writes into its gradient graphs: TanhGrad,
SigmoidGrad, SqrtGrad, RsqrtGrad, ReciprocalGrad (InvGrad), SoftsignGrad.

flowbook's own gradients of Tanh, Sigmoid, Sqrt, Rsqrt and Reciprocal are
built of plain arithmetic; these ops exist so a graph TensorFlow trained (a
meta graph, a SavedModel, a GraphDef with its backward pass: an LSTM's
gates are sigmoids and tanhs) imports and runs.  Each takes what TF's does:
the forward op's output ``y`` and the incoming gradient ``dy`` (SoftsignGrad:
``gradients`` and the forward input ``features``), and each has TF's gradient
(the second derivative), so gradients of gradients work too:

- TanhGrad(y, dy) = dy * (1 - y^2)
- SigmoidGrad(y, dy) = dy * y * (1 - y)
- SqrtGrad(y, dy) = dy * 0.5 / y
- RsqrtGrad(y, dy) = dy * -0.5 * y^3
- ReciprocalGrad(y, dy) = InvGrad(y, dy) = dy * -y^2
- SoftsignGrad(g, x) = g / (1 + |x|)^2

One declaration per op: a row of :data:`ROWS` (op type, kernel, second
derivative), written against ``xp`` so it serves numpy and CuPy.

    >>> import numpy as np, flowbook as fb
    >>> from flowbook.ops._builder import make1
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     y = fb.constant([0.0, 0.5])
    ...     s.run(make1("TanhGrad", (y, fb.constant([1.0, 2.0])))).tolist()
    [1.0, 1.5]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from flowbook.framework.errors import InvalidArgumentError
from flowbook.framework.registry import Out, op
from flowbook.framework.tensor import Operation, Tensor
from flowbook.framework.tensor_shape import merge
from flowbook.ops._builder import make1, same_dtype
from flowbook.ops.math import math_ops
from flowbook.ops.math.elementwise import FLOAT, check_dtype


def _tanh_grad(xp: Any, y: Any, dy: Any) -> Any:
    return dy * (1 - y * y)


def _sigmoid_grad(xp: Any, y: Any, dy: Any) -> Any:
    return dy * (y * (1 - y))


def _sqrt_grad(xp: Any, y: Any, dy: Any) -> Any:
    return dy * (0.5 / y)


def _rsqrt_grad(xp: Any, y: Any, dy: Any) -> Any:
    return dy * (-0.5 * y * y * y)


def _reciprocal_grad(xp: Any, y: Any, dy: Any) -> Any:
    return dy * -(y * y)


def _softsign_grad(xp: Any, g: Any, x: Any) -> Any:
    d = 1 + xp.abs(x)
    return g / (d * d)


def _mul(*ts: Any) -> Tensor:
    out = ts[0]
    for t in ts[1:]:
        out = math_ops.multiply(out, t)
    return out


# second derivatives, as TensorFlow's: d/dy and d/d(dy) of op(y, dy), given the gradient `g`
def _tanh_grad_grad(op: Operation, g: Tensor) -> list[Tensor]:
    y, dy = op.inputs
    return [_mul(g, dy, -2.0, y), make1("TanhGrad", (y, g))]


def _sigmoid_grad_grad(op: Operation, g: Tensor) -> list[Tensor]:
    y, dy = op.inputs
    return [_mul(g, dy, math_ops.subtract(1.0, _mul(2.0, y))), make1("SigmoidGrad", (y, g))]


def _sqrt_grad_grad(op: Operation, g: Tensor) -> list[Tensor]:
    y, _ = op.inputs
    ga = math_ops.divide(g, y)
    return [_mul(-1.0, ga, op.outputs[0]), _mul(0.5, ga)]


def _rsqrt_grad_grad(op: Operation, g: Tensor) -> list[Tensor]:
    y, dy = op.inputs
    return [_mul(-1.5, g, dy, y, y), make1("RsqrtGrad", (y, g))]


def _reciprocal_grad_grad(op: Operation, g: Tensor) -> list[Tensor]:
    y, dy = op.inputs
    return [_mul(-2.0, g, dy, y), make1(op.type, (y, g))]


def _softsign_grad_grad(op: Operation, dd: Tensor) -> list[Tensor]:
    g, x = op.inputs
    d = math_ops.add(1.0, math_ops.abs(x))
    wrt_x = _mul(-2.0, dd, g, math_ops.sign(x), math_ops.reciprocal(_mul(d, d, d)))
    return [make1("SoftsignGrad", (dd, x)), wrt_x]


class Row(NamedTuple):
    """One gradient op: its type, its inputs' names, kernel and gradient."""

    op_type: str
    inputs: tuple[str, str]
    kernel: Callable[..., Any]
    grad: Callable[[Operation, Tensor], list[Tensor]]


ROWS: list[Row] = [
    Row("TanhGrad", ("y", "dy"), _tanh_grad, _tanh_grad_grad),
    Row("SigmoidGrad", ("y", "dy"), _sigmoid_grad, _sigmoid_grad_grad),
    Row("SqrtGrad", ("y", "dy"), _sqrt_grad, _sqrt_grad_grad),
    Row("RsqrtGrad", ("y", "dy"), _rsqrt_grad, _rsqrt_grad_grad),
    Row("ReciprocalGrad", ("y", "dy"), _reciprocal_grad, _reciprocal_grad_grad),
    Row("InvGrad", ("y", "dy"), _reciprocal_grad, _reciprocal_grad_grad),
    Row("SoftsignGrad", ("gradients", "features"), _softsign_grad, _softsign_grad_grad),
]


def _declare(row: Row) -> None:
    first, second = row.inputs

    def infer(a: Tensor, b: Tensor, **_: Any) -> Out:
        dt = same_dtype(row.op_type, row.inputs, a, b)
        check_dtype(dt, FLOAT, first)
        try:
            return Out(dt, merge(a._shape, b._shape))
        except ValueError:
            raise ValueError(
                f"{row.op_type}: {first} and {second} must have the same shape, "
                f"got {a.shape} and {b.shape}"
            ) from None

    def kernel(xp: Any, a: Any, b: Any) -> Any:
        if a.shape != b.shape:
            raise InvalidArgumentError(
                None,
                None,
                f"{first} and {second} must have the same shape: "
                f"{list(a.shape)} vs. {list(b.shape)}",
            )
        return row.kernel(xp, a, b)

    op(row.op_type, row.inputs, (), infer, kernel, grad=row.grad)


for _row in ROWS:
    _declare(_row)
