"""The activations' gradient ops, as TensorFlow builds them: ReluGrad, Relu6Grad, EluGrad...

Each is one element-wise kernel taking the incoming gradient and what the
forward op left (its input ``features`` or its output ``outputs``, as TF's
op of that name does), so a ReLU's backward pass is one pass over the data
where ``where(y > 0, g, zeros_like(g))`` made three (Greater, ZerosLike,
Select).  Each is one ``backprop`` call, its row kept in ``ROWS``: op type,
the second input's name, kernel, dtypes, and TF's gradient of the gradient
op (second derivatives):

- ReluGrad(g, y) = g * (y > 0); its gradient is ReluGrad(dd, y) for g and
  zeros for y (Relu6Grad and LeakyReluGrad alike);
- EluGrad(g, y) = g * (y + 1) where y < 0, else g; SeluGrad(g, y) = g * (y +
  scale * alpha) where y < 0, else g * scale; for y both give dd * g where y < 0;
- SoftplusGrad(g, x) = g * sigmoid(x); for x, dd * g / (e^-x + 2 + e^x).

ReluGrad and Relu6Grad multiply by the mask, as TF's CPU kernels do: a
masked negative gradient becomes ``-0.0`` and a masked infinite one NaN
(checked against TensorFlow 2.21's raw ops).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     x = fb.constant([-1.0, 2.0])
    ...     (g,) = fb.gradients(fb.nn.relu(x), x)
    ...     g.op.type, s.run(g).tolist()
    ('ReluGrad', [0.0, 1.0])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from flowbook.framework.errors import InvalidArgumentError
from flowbook.framework.registry import Fusion, OpDef, Out, op
from flowbook.framework.tensor import Operation, Tensor
from flowbook.framework.tensor_shape import merge
from flowbook.ops._builder import make1, same_dtype
from flowbook.ops.array import array_ops
from flowbook.ops.math import math_ops
from flowbook.ops.math.elementwise import FLOAT, FUSED, REAL, check_dtype

SELU_ALPHA = 1.6732632423543772848170429916717  # the SELU paper's constants (Klambauer 2017)
SELU_SCALE = 1.0507009873554804934193349852946


def _relu_grad(xp: Any, g: Any, y: Any, out: Any = None) -> Any:
    # TF's ReluGradFunctor: g * (y > 0), so -0.0 where g < 0 is masked and NaN where g is inf
    return xp.multiply(g, y > 0, out=out)  # the mask is made before out (maybe y's buffer)


def _relu6_grad(xp: Any, g: Any, y: Any) -> Any:
    return g * ((y > 0) & (y < 6))  # TF's Relu6GradFunctor


def _elu_grad(xp: Any, g: Any, y: Any) -> Any:
    return xp.where(y < 0, g * (y + 1), g)


def _selu_grad(xp: Any, g: Any, y: Any) -> Any:
    sa = y.dtype.type(SELU_SCALE * SELU_ALPHA)
    return xp.where(y < 0, g * (y + sa), g * g.dtype.type(SELU_SCALE))


def _softplus_grad(xp: Any, g: Any, x: Any) -> Any:
    return g / (xp.exp(-x) + 1)


def _leaky_relu_grad(xp: Any, g: Any, x: Any, alpha: float = 0.2) -> Any:
    return xp.where(x > 0, g, g * g.dtype.type(alpha))


def _same_grad(op: Operation, dd: Tensor) -> list[Tensor]:
    """The gradient of a masking grad op: the same op on ``dd``; none for the mask's source."""
    keep = make1(op.type, (dd, op.inputs[1]), dict(op.attrs))
    return [keep, array_ops.zeros_like(op.inputs[1])]


def _exp_family_grad(op: Operation, dd: Tensor) -> list[Tensor]:
    """EluGrad's and SeluGrad's gradient (TF's): the op on ``dd``; dd * g where y < 0."""
    g, y = op.inputs
    wrt_y = array_ops.where(math_ops.less(y, 0), math_ops.multiply(dd, g), array_ops.zeros_like(y))
    return [make1(op.type, (dd, y)), wrt_y]


def _softplus_grad_grad(op: Operation, dd: Tensor) -> list[Tensor]:
    """TF's: SoftplusGrad(dd, x) for g; dd * g / (e^-x + 2 + e^x) for x."""
    g, x = op.inputs
    denom = math_ops.add(math_ops.add(math_ops.exp(math_ops.negative(x)), 2.0), math_ops.exp(x))
    return [make1("SoftplusGrad", (dd, x)), math_ops.divide(math_ops.multiply(dd, g), denom)]


class GradRow(NamedTuple):
    """One activation-gradient op."""

    op_type: str  # TensorFlow's op type name
    second: str  # the second input: "features" (the forward input) or "outputs"
    kernel: Callable[..., Any]  # kernel(xp, gradients, second, **attrs)
    dtypes: frozenset  # dtypes the op takes
    grad: Callable[[Operation, Tensor], list[Tensor]]  # TF's gradient of the op
    attrs: tuple[str, ...] = ()
    fusion: Fusion | None = None  # how the optimiser fuses it (flowbook.framework.registry)


ROWS: list[GradRow] = []  # the rows, in declaration order


def _infer(row: GradRow) -> Callable[..., Out]:
    def infer(gradients: Tensor, second: Tensor, **_: Any) -> Out:
        dt = same_dtype(row.op_type, ("gradients", row.second), gradients, second)
        check_dtype(dt, row.dtypes, "gradients")
        try:
            return Out(dt, merge(gradients._shape, second._shape))
        except ValueError:
            raise ValueError(
                f"{row.op_type}: gradients and {row.second} must have the same shape, "
                f"got {gradients.shape} and {second.shape}"
            ) from None

    return infer


def _checked(row: GradRow) -> Callable[..., Any]:
    """The row's kernel, after TF's check that both inputs have one shape."""

    def kernel(xp: Any, g: Any, second: Any, **attrs: Any) -> Any:
        if g.shape != second.shape:
            raise InvalidArgumentError(
                None,
                None,
                f"gradients and {row.second} must have the same shape: "
                f"{list(g.shape)} vs. {list(second.shape)}",
            )
        return row.kernel(xp, g, second, **attrs)

    return kernel


def backprop(
    op_type: str,
    second: str,
    kernel: Callable[..., Any],
    allowed: frozenset,
    grad: Callable[[Operation, Tensor], list[Tensor]],
    attrs: tuple[str, ...] = (),
    **fields: Any,
) -> OpDef:
    """Declare an activation's gradient op from its row; ``fields``: more OpDef fields."""
    row = GradRow(op_type, second, kernel, allowed, grad, attrs, fields.get("fusion"))
    ROWS.append(row)
    inputs = ("gradients", second)
    return op(op_type, inputs, attrs, _infer(row), _checked(row), grad=grad, **fields)


backprop(
    "ReluGrad",
    "features",
    _relu_grad,
    REAL,
    _same_grad,
    takes_out=True,  # out=: a dead input's buffer (flowbook.runtime.memory_plan)
    fusion=Fusion(head=FUSED),
)
backprop("Relu6Grad", "features", _relu6_grad, REAL, _same_grad)
backprop("EluGrad", "outputs", _elu_grad, FLOAT, _exp_family_grad)
backprop("SeluGrad", "outputs", _selu_grad, FLOAT, _exp_family_grad)
backprop("SoftplusGrad", "features", _softplus_grad, FLOAT, _softplus_grad_grad)
backprop("LeakyReluGrad", "features", _leaky_relu_grad, FLOAT, _same_grad, ("alpha",))


def activation_grad(op_type: str, g: Tensor, second: Tensor, **attrs: Any) -> Tensor:
    """``op_type(g, second)``: what an activation's gradient function returns.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(activation_grad("ReluGrad", fb.ones([3]), fb.constant([-1.0, 0.0, 1.0]))).tolist()
    [0.0, 0.0, 1.0]
    """
    return make1(op_type, (g, second), attrs or None)
