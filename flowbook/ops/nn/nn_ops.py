"""Neural-network activations: Relu, Relu6, Elu, Selu, Softplus, Softsign, LeakyRelu, Softmax...

Each kernel is a small pure function of ``xp`` and the array, written to be
numerically stable: softmax subtracts the maximum before ``exp``, softplus is
``logaddexp(x, 0)`` and elu never evaluates ``exp`` of a large positive
value, so no input overflows or warns.  ``ACTIVATIONS`` is the table of the
element-wise ones (public for tests), one ``Activation`` row each: op type,
kernel, input dtypes and gradient.  TF1 declares Softmax on the last axis
only and transposes for others; here Softmax and LogSoftmax take an ``axis``
attr (default -1, so a GraphDef without it still runs).  The gradients (in
the rows, and beside Softmax's registration) are TF's: the activations'
own gradient ops (ReluGrad, EluGrad... in ``activation_grads``, one pass
each), Softsign's and Softmax's built from existing ops.
``LeakyRelu`` has an ``alpha`` attr, so it is registered beside the table.
``crelu``, ``relu_layer`` and ``xw_plus_b`` are compositions, as in TF1
(concat of relu(x) and relu(-x); relu(x @ w + b); x @ w + b).
``flowbook.api.nn`` re-exports the wrappers.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.nn.relu([-1.0, 2.0])).tolist()
    [0.0, 2.0]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from flowbook.framework.graph import name_scope
from flowbook.framework.registry import Fusion, OpDef, Out, op
from flowbook.framework.tensor import Operation, Tensor
from flowbook.framework.tensor_shape import fmt
from flowbook.kernels.bias_kernels import relu as relu_kernel
from flowbook.ops._builder import make1, tensor
from flowbook.ops.array import array_ops
from flowbook.ops.math import math_ops
from flowbook.ops.math.elementwise import FLOAT, REAL, check_dtype, step
from flowbook.ops.nn.activation_grads import SELU_ALPHA, SELU_SCALE, activation_grad
from flowbook.ops.nn.conv_ops import bias_add

__all__ = [
    "crelu",
    "elu",
    "leaky_relu",
    "log_softmax",
    "relu",
    "relu6",
    "relu_layer",
    "selu",
    "softmax",
    "softplus",
    "softsign",
    "xw_plus_b",
]


def _relu(xp: Any, x: Any, out: Any = None) -> Any:
    return relu_kernel(xp, x, out=out)  # out: a dead input's buffer (flowbook.runtime.memory_plan)


def _relu6(xp: Any, x: Any) -> Any:
    return xp.clip(x, 0, 6)


def _elu(xp: Any, x: Any) -> Any:
    return xp.where(x > 0, x, xp.expm1(xp.minimum(x, 0)))


def _softplus(xp: Any, x: Any) -> Any:
    return xp.logaddexp(x, 0)  # log(1 + e^x) without overflow


def _selu(xp: Any, x: Any) -> Any:
    neg = xp.expm1(xp.minimum(x, 0)) * x.dtype.type(SELU_ALPHA)
    return xp.where(x > 0, x, neg) * x.dtype.type(SELU_SCALE)


def _softsign(xp: Any, x: Any) -> Any:
    return x / (xp.abs(x) + 1)


def _softmax(xp: Any, logits: Any, axis: int = -1) -> Any:
    e = xp.exp(logits - xp.max(logits, axis=axis, keepdims=True))
    e /= xp.sum(e, axis=axis, keepdims=True)
    return e


def _log_softmax(xp: Any, logits: Any, axis: int = -1) -> Any:
    shifted = logits - xp.max(logits, axis=axis, keepdims=True)
    return shifted - xp.log(xp.sum(xp.exp(shifted), axis=axis, keepdims=True))


class Activation(NamedTuple):
    """One row of the activation table."""

    op_type: str  # TensorFlow's op type name
    kernel: Callable[..., Any]  # kernel(xp, x)
    dtypes: frozenset  # input dtypes the op takes
    grad: Callable[[Tensor, Tensor, Tensor], Tensor]  # grad(g, x, y), y the op's output
    fusion: Fusion | None = None  # how the optimiser fuses it (flowbook.framework.registry)


ACTIVATIONS: list[Activation] = []  # the rows, in declaration order


def _activation_infer(allowed: frozenset) -> Callable[..., Out]:
    def infer(features: Tensor, **_: Any) -> Out:
        check_dtype(features.dtype, allowed, "features")
        return Out(features.dtype, features._shape)

    return infer


def activation(
    op_type: str, kernel: Callable[..., Any], allowed: frozenset, grad: Any, **fields: Any
) -> OpDef:
    """Declare an activation from its row: ``grad(g, x, y)``, y the op's output; ``fields``:
    more OpDef fields (``fusion``, ``takes_out``)."""
    row = Activation(op_type, kernel, allowed, grad, fields.get("fusion"))
    ACTIVATIONS.append(row)
    infer = _activation_infer(allowed)
    backprop = lambda o, g: grad(g, o.inputs[0], o.outputs[0])
    return op(op_type, ("features",), (), infer, kernel, grad=backprop, **fields)


# The gradients are TF's: ReluGrad, Relu6Grad, EluGrad and SeluGrad read the
# output y, SoftplusGrad the input x.
activation(
    "Relu",
    _relu,
    REAL,
    lambda g, x, y: activation_grad("ReluGrad", g, y),
    takes_out=True,  # out=: a dead input's buffer (flowbook.runtime.memory_plan)
    fusion=step("maximum", None),  # maximum(x, 0), as its kernel
)
activation("Relu6", _relu6, REAL, lambda g, x, y: activation_grad("Relu6Grad", g, y))
activation("Elu", _elu, FLOAT, lambda g, x, y: activation_grad("EluGrad", g, y))
activation("Softplus", _softplus, FLOAT, lambda g, x, y: activation_grad("SoftplusGrad", g, x))
activation("Selu", _selu, FLOAT, lambda g, x, y: activation_grad("SeluGrad", g, y))
activation(  # TF's SoftsignGrad: g / (1 + |x|)^2
    "Softsign",
    _softsign,
    FLOAT,
    lambda g, x, y: math_ops.divide(g, math_ops.square(math_ops.add(math_ops.abs(x), 1))),
)


def _softmax_infer(logits: Tensor, axis: int = -1, **_: Any) -> Out:
    check_dtype(logits.dtype, FLOAT, "logits")
    shape = logits._shape
    if shape is not None and not -len(shape) <= axis < max(len(shape), 1):
        raise ValueError(f"axis {axis} is out of range for logits{fmt(shape)}")
    if shape is not None and not shape:
        raise ValueError("logits must have rank >= 1, got a scalar")
    return Out(logits.dtype, shape)


def _softmax_grad(op: Operation, g: Tensor) -> Tensor:
    """TF's: (g - sum(g * y, axis, keepdims)) * y, with y the softmax."""
    y, axis = op.outputs[0], op.attrs.get("axis", -1)
    dot = math_ops.reduce_sum(math_ops.multiply(g, y), axis=axis, keepdims=True)
    return math_ops.multiply(math_ops.subtract(g, dot), y)


op(
    "Softmax",
    ("logits",),
    ("axis",),
    _softmax_infer,
    _softmax,
    grad=_softmax_grad,
    tf_implicit={"axis": -1},  # TF1's Softmax is over the last axis, no attr
)


def _log_softmax_grad(op: Operation, g: Tensor) -> Tensor:
    """TF's: g - sum(g, axis, keepdims) * exp(y), with y the log-softmax."""
    y, axis = op.outputs[0], op.attrs.get("axis", -1)
    total = math_ops.reduce_sum(g, axis=axis, keepdims=True)
    return math_ops.subtract(g, math_ops.multiply(total, math_ops.exp(y)))


op(
    "LogSoftmax",
    ("logits",),
    ("axis",),
    _softmax_infer,
    _log_softmax,
    grad=_log_softmax_grad,
    tf_implicit={"axis": -1},
)


def _leaky_relu_infer(features: Tensor, alpha: float = 0.2) -> Out:
    check_dtype(features.dtype, FLOAT, "features")
    return Out(features.dtype, features._shape)


def _leaky_relu(xp: Any, x: Any, alpha: float = 0.2) -> Any:
    return xp.where(x > 0, x, x * x.dtype.type(alpha))


def _leaky_relu_grad(op: Operation, g: Tensor) -> Tensor:
    """TF's LeakyReluGrad: g where x > 0, alpha * g elsewhere."""
    return activation_grad("LeakyReluGrad", g, op.inputs[0], alpha=op.attrs.get("alpha", 0.2))


op("LeakyRelu", ("features",), ("alpha",), _leaky_relu_infer, _leaky_relu, grad=_leaky_relu_grad)


def relu(features: Any, name: str | None = None) -> Tensor:
    """max(features, 0) element-wise.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.nn.relu([-1.0, 2.0])).tolist()
    [0.0, 2.0]
    """
    return make1("Relu", (tensor(features),), name=name)


def relu6(features: Any, name: str | None = None) -> Tensor:
    """min(max(features, 0), 6) element-wise.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.nn.relu6([-1.0, 2.0, 8.0])).tolist()
    [0.0, 2.0, 6.0]
    """
    return make1("Relu6", (tensor(features),), name=name)


def elu(features: Any, name: str | None = None) -> Tensor:
    """x for x > 0, exp(x) - 1 otherwise, element-wise.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.nn.elu([0.0, 2.0])).tolist()
    [0.0, 2.0]
    """
    return make1("Elu", (tensor(features),), name=name)


def softplus(features: Any, name: str | None = None) -> Tensor:
    """log(exp(features) + 1) element-wise, stable for large inputs.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.nn.softplus(fb.constant([0.0, 1000.0], fb.float64))).round(4).tolist()
    [0.6931, 1000.0]
    """
    return make1("Softplus", (tensor(features),), name=name)


def _axis(axis: Any, dim: Any) -> int:
    if axis is not None and dim is not None:
        raise ValueError("Cannot specify both 'axis' and 'dim'.")
    chosen = dim if axis is None else axis
    return -1 if chosen is None else int(chosen)


def softmax(
    logits: Any, axis: int | None = None, name: str | None = None, dim: int | None = None
) -> Tensor:
    """exp(logits) / sum(exp(logits)) along ``axis`` (the last by default).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.nn.softmax([1000.0, 1000.0])).tolist()
    [0.5, 0.5]
    """
    return make1("Softmax", (tensor(logits),), {"axis": _axis(axis, dim)}, name=name)


def log_softmax(
    logits: Any, axis: int | None = None, name: str | None = None, dim: int | None = None
) -> Tensor:
    """logits - log(sum(exp(logits))) along ``axis`` (the last by default).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.nn.log_softmax(fb.constant([0.0, 0.0], fb.float64))).round(4).tolist()
    [-0.6931, -0.6931]
    """
    return make1("LogSoftmax", (tensor(logits),), {"axis": _axis(axis, dim)}, name=name)


def selu(features: Any, name: str | None = None) -> Tensor:
    """scale * (x if x > 0 else alpha * (exp(x) - 1)), the self-normalising SELU.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     [round(v, 4) for v in s.run(fb.nn.selu([0.0, 1.0])).tolist()]
    [0.0, 1.0507]
    """
    return make1("Selu", (tensor(features),), name=name)


def softsign(features: Any, name: str | None = None) -> Tensor:
    """features / (|features| + 1) element-wise.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.nn.softsign([-3.0, 1.0])).tolist()
    [-0.75, 0.5]
    """
    return make1("Softsign", (tensor(features),), name=name)


def leaky_relu(features: Any, alpha: float = 0.2, name: str | None = None) -> Tensor:
    """x for x > 0, alpha * x otherwise; integer features are cast to float32 first, as TF does.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.nn.leaky_relu([-1.0, 2.0], alpha=0.5)).tolist()
    [-0.5, 2.0]
    """
    with name_scope(name, "LeakyRelu") as scope:
        x = tensor(features, name="features")
        if x.dtype.is_integer:
            x = math_ops.cast(x, "float32")
        attrs = {"alpha": float(np.float32(alpha))}  # a float attr is a float32 in a GraphDef
        return make1("LeakyRelu", (x,), attrs, name=scope)


def crelu(features: Any, name: str | None = None, axis: int = -1) -> Tensor:
    """Concatenated ReLU: relu(concat([x, -x], axis)), twice the depth along ``axis``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.nn.crelu([[1.0, -2.0]])).tolist()
    [[1.0, 0.0, 0.0, 2.0]]
    """
    with name_scope(name, "CRelu") as scope:
        x = tensor(features, name="features")
        c = array_ops.concat([x, math_ops.negative(x)], axis, name="concat")
        return relu(c, name=scope)


def xw_plus_b(x: Any, weights: Any, biases: Any, name: str | None = None) -> Tensor:
    """matmul(x, weights) + biases, the bias added by ``bias_add``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.nn.xw_plus_b([[1.0, 2.0]], [[1.0], [1.0]], [0.5])).tolist()
    [[3.5]]
    """
    with name_scope(name, "xw_plus_b") as scope:
        mm = math_ops.matmul(tensor(x, name="x"), tensor(weights, name="weights"))
        return bias_add(mm, tensor(biases, name="biases"), name=scope)


def relu_layer(x: Any, weights: Any, biases: Any, name: str | None = None) -> Tensor:
    """relu(matmul(x, weights) + biases).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.nn.relu_layer([[1.0, -2.0]], [[1.0], [1.0]], [0.5])).tolist()
    [[0.0]]
    """
    with name_scope(name, "relu_layer") as scope:
        mm = math_ops.matmul(tensor(x, name="x"), tensor(weights, name="weights"))
        return relu(bias_add(mm, tensor(biases, name="biases")), name=scope)
