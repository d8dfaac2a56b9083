"""Fused ops: one kernel for a chain of written ops, made only by the graph optimiser.

``flowbook.runtime.optimize.fuse`` replaces a chain of ops of an optimised plan
by one of these; a user's graph never holds them (their names start with an
underscore, as TensorFlow's Grappler-made ``_FusedMatMul`` does).  Each is
a *head* and a *tail*:

- the head is one written op's own kernel, run as the written plan runs it:
  a ``MatMul`` (``_FusedMatMul``), a ``Conv2D`` (``_FusedConv2D``, lending its
  patches to the filter gradient as the written op does; a large output takes
  its tail in batch bands, one per CPU: ``flowbook.kernels.gemm.in_bands``), a ``MaxPoolGrad``
  with the ``ReluGrad`` after it (``_FusedMaxPoolGrad``, ``fused_ops`` starting
  ``["ReluGrad"]``: for disjoint windows TF's ReLU mask is applied per
  window before placing, ``pool_kernels.max_pool_grad(relu=True)``; no pass
  of its own over the unpooled image), the softmax cross-entropy of sparse
  labels (``_FusedSparseSoftmaxCrossEntropyWithLogits``: the chain follows
  its backprop output), a ``Sum`` over axes the optimiser folded (``_FusedSum``:
  the axes an attr, so the kernel is numpy's reduction call and nothing
  else; worth it even with no tail), or an element-wise op (``_FusedElementwise``, named
  by its ``head`` attr: ``ReluGrad``, ``Mul``...).  Every head returns a
  fresh array that nothing else holds;
- the tail (``fused_ops``, a list of op types, TensorFlow's attr name) is
  element-wise steps applied to that array in place (``out=``): ``BiasAdd``,
  ``Add``, ``Mul``, ``Maximum``, ``Minimum`` (either operand order), ``Sub``
  and ``RealDiv`` (the chain's value on the left), ``Relu`` and ``Sum`` (a
  sum over no axes: what a broadcast gradient's ``Sum`` does when nothing
  broadcast; the value unchanged, as the written op's copy).  Each
  binary step takes the next of the op's extra inputs.

Each step is the numpy call the written op's kernel makes, on the same
values in the same order, written into the chain's buffer instead of a new
one, so a fused op's results are bit for bit those of the ops it replaced;
what it saves is the kernel calls and the arrays between them.  A 0-d chain
value (numpy gives scalars there, not buffers) takes the same calls without
``out=``.  The cross-entropy head skips the loss when the plan reads only
the backprop (``with_loss=False``; its loss output is then None).

    >>> import numpy as np
    >>> fn = OPS["_FusedMatMul"].bound_kernel(np, {"fused_ops": ["BiasAdd", "Relu"]})
    >>> fn(np.array([[1.0, -2.0]]), np.eye(2), np.array([0.5, 0.5])).tolist()
    [[1.5, 0.0]]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from flowbook.framework.errors import InvalidArgumentError
from flowbook.framework.registry import NOT_DIFFERENTIABLE, OPS, Out, op
from flowbook.framework.tensor import Tensor
from flowbook.kernels.bias_kernels import add_bias, relu
from flowbook.ops.math.elementwise import FLOAT, check_dtype
from flowbook.ops.nn.loss_ops import _check_labels

# The steps a tail may take are the ops whose row declares a ``fusion`` with a ``step``
# (flowbook.framework.registry.Fusion): the xp function the written kernel calls, and for a
# binary step the order of its operands.


def _step_call(xp: Any, op_type: str) -> tuple[Any, int]:
    """A tail step's function and kind: 0 unary (a ReLU), 1 an add (``add_bias`` for a 1-D
    operand), 2 another binary ufunc."""
    fusion = OPS[op_type].fusion
    if fusion is None or fusion.step is None:
        raise ValueError(f"{op_type} is not a step of a fused op")
    kind = 0 if fusion.order is None else 1 if fusion.step == "add" else 2
    return getattr(xp, fusion.step), kind


def _as_is(v: Any, operands: Sequence[Any]) -> Any:
    return v


def _tail(xp: Any, steps: Sequence[str]) -> Callable[[Any, Sequence[Any]], Any]:
    """``run(value, operands)``: the steps applied to ``value`` (fresh, owned) in order.

    Each step's kind is decided here, once: ReLU (``bias_kernels.relu``), a bias add
    (``add_bias`` for a 1-D operand), or the step's ufunc; a ``Sum`` over no axes leaves the
    value as it is (the Sum kernel's copy; the value is fresh).  An array value takes every
    step in place (``out=``) and stays that array; a 0-d one (numpy gives scalars, not
    buffers) takes the same calls without ``out=``.
    """
    calls = tuple(_step_call(xp, s) for s in steps if OPS[s].fusion.step != "sum")
    if not calls:
        return _as_is

    def run(v: Any, operands: Sequence[Any]) -> Any:
        k = 0
        if not (isinstance(v, xp.ndarray) and v.ndim > 0):
            for fn, kind in calls:
                if kind:
                    v, k = fn(v, operands[k]), k + 1
                else:
                    v = fn(v, 0)
            return v
        for fn, kind in calls:
            if not kind:
                relu(xp, v, out=v)
                continue
            operand, k = operands[k], k + 1
            if kind == 1 and getattr(operand, "ndim", 0) == 1:
                add_bias(xp, v, operand, out=v)  # the same adds, in long rows
            else:
                fn(v, operand, out=v)
        return v

    return run


def _fused_infer(*inputs: Tensor, **_: Any) -> Out:
    return Out(inputs[0].dtype, None)  # made by the optimiser, which knows the shapes


# ------------------------------------------------------------------ _FusedMatMul
def _bind_matmul(
    xp: Any, transpose_a: bool = False, transpose_b: bool = False, fused_ops: Sequence[str] = ()
) -> Callable[..., Any]:
    matmul = OPS["MatMul"].bound_kernel(
        xp, {"transpose_a": transpose_a, "transpose_b": transpose_b}
    )
    tail = _tail(xp, fused_ops)

    def fused_matmul(a: Any, b: Any, *operands: Any) -> Any:
        return tail(matmul(a, b), operands)

    return fused_matmul


def _matmul_infer(a: Tensor, b: Tensor, *args: Tensor, **_: Any) -> Out:
    return Out(a.dtype, None)


op(
    "_FusedMatMul",
    ("a", "b", "*args"),
    ("transpose_a", "transpose_b", "fused_ops"),
    _matmul_infer,
    None,
    bind=_bind_matmul,
    grad=NOT_DIFFERENTIABLE,
)


# ------------------------------------------------------------------ _FusedElementwise
def _bind_elementwise(xp: Any, head: str, fused_ops: Sequence[str] = ()) -> Callable[..., Any]:
    first = OPS[head].bound_kernel(xp, {})
    n = len(OPS[head].inputs)
    tail = _tail(xp, fused_ops)

    def fused_elementwise(*args: Any) -> Any:
        return tail(first(*args[:n]), args[n:])

    return fused_elementwise


op(
    "_FusedElementwise",
    ("*args",),
    ("head", "fused_ops"),
    _fused_infer,
    None,
    bind=_bind_elementwise,
    grad=NOT_DIFFERENTIABLE,
)


# ------------------------------------------------------------------ _FusedSum
def _bind_sum(
    xp: Any, axes: Sequence[int] = (), keep_dims: bool = False, fused_ops: Sequence[str] = ()
) -> Callable[..., Any]:
    axis = tuple(axes)  # normalised as Sum's kernel does: sorted, non-negative, no repeats
    reduce = getattr(xp.add, "reduce", None) or xp.sum  # the call xp.sum makes, directly
    tail = _tail(xp, fused_ops)

    def fused_sum(x: Any, *operands: Any) -> Any:
        if not axis:  # over no axes: a copy, as the Sum kernel (reduction_ops._sum)
            return tail(x.copy(), operands)
        return tail(reduce(x, axis=axis, dtype=x.dtype, keepdims=keep_dims), operands)

    return fused_sum


op(
    "_FusedSum",
    ("input", "*args"),
    ("axes", "keep_dims", "fused_ops"),
    _fused_infer,
    None,
    bind=_bind_sum,
    grad=NOT_DIFFERENTIABLE,
)


# ---------------------------------------------- _FusedSparseSoftmaxCrossEntropyWithLogits
def _xent_infer(features: Tensor, labels: Tensor, *args: Tensor, **_: Any) -> list[Out]:
    check_dtype(features.dtype, FLOAT, "features")
    return [Out(features.dtype, None), Out(features.dtype, None)]


def _bind_xent(
    xp: Any, with_loss: bool = True, fused_ops: Sequence[str] = ()
) -> Callable[..., Any]:
    tail = _tail(xp, fused_ops)

    def fused_xent(features: Any, labels: Any, *operands: Any) -> tuple[Any, Any]:
        loss, backprop = _xent(xp, features, labels, with_loss)
        return loss, tail(backprop, operands)

    return fused_xent


_UNSIGNED = {np.dtype(f"i{b}"): np.dtype(f"u{b}") for b in (1, 2, 4, 8)}  # a label's bits


def _xent(xp: Any, features: Any, labels: Any, with_loss: bool) -> tuple[Any, Any]:
    """SparseSoftmaxCrossEntropyWithLogits's arithmetic (``flowbook.ops.nn.loss_ops``), the loss
    only if asked for; the backprop in a fresh array."""
    if features.ndim != 2 or labels.shape != features.shape[:1] or labels.dtype.kind not in "iu":
        _check_labels(xp, labels, *features.shape)  # the written op's message
        raise InvalidArgumentError(None, None, f"logits must be 2-D, got {features.shape}")
    n, c = features.shape
    index = labels.view(_UNSIGNED.get(labels.dtype, labels.dtype))  # negatives become huge
    if xp is not np and n and int(index.max()) >= c:  # CuPy wraps indices out of range
        _check_labels(xp, labels, n, c)  # raises, naming the bad label
    half = features.dtype.char == "e"  # float16: computed in float32, as the written op
    logits = features.astype(xp.float32) if half else features
    if xp is np:  # the reductions the methods call, without their Python wrappers: same bits
        shifted = logits - np.maximum.reduce(logits, axis=1, keepdims=True)
        e = np.exp(shifted) if with_loss else np.exp(shifted, out=shifted)
        total = np.add.reduce(e, axis=1, keepdims=True)
    else:
        shifted = logits - logits.max(axis=1, keepdims=True)
        e = xp.exp(shifted) if with_loss else xp.exp(shifted, out=shifted)
        total = e.sum(axis=1, keepdims=True)
    rows = xp.arange(n)
    loss = None
    try:  # numpy's indexing refuses a label outside [0, c) (negatives read as huge) before writing
        if with_loss:
            loss = xp.log(total[:, 0]) - shifted[rows, index]
            loss = loss.astype(features.dtype, copy=False)
        e /= total
        e[rows, index] -= 1
    except IndexError:
        _check_labels(xp, labels, n, c)  # raises, naming the bad label
        raise
    return loss, e.astype(features.dtype) if half else e


op(
    "_FusedSparseSoftmaxCrossEntropyWithLogits",
    ("features", "labels", "*args"),
    ("with_loss", "fused_ops"),
    _xent_infer,
    None,
    bind=_bind_xent,
    grad=NOT_DIFFERENTIABLE,
)


# ------------------------------------------------------------------ _FusedConv2D
CONV_ATTRS = ("strides", "padding", "data_format", "dilations", "use_cudnn_on_gpu")


def _bind_conv2d(xp: Any, fused_ops: Sequence[str] = (), **attrs: Any) -> Callable[..., Any]:
    conv = OPS["Conv2D"].bound_kernel(xp, attrs)  # lends its patches as the written op does
    tail = _tail(xp, fused_ops)

    def fused_conv2d(x: Any, f: Any, *operands: Any) -> Any:
        if all(getattr(o, "ndim", 0) < 4 for o in operands):  # per image: band by band
            return conv(x, f, tail=lambda v: tail(v, operands))  # in place on the GEMM's rows
        return tail(conv(x, f), operands)

    return fused_conv2d


op(
    "_FusedConv2D",
    ("input", "filter", "*args"),
    (*CONV_ATTRS, "fused_ops"),
    _fused_infer,
    None,
    bind=_bind_conv2d,
    grad=NOT_DIFFERENTIABLE,
)


# ------------------------------------------------------------------ _FusedMaxPoolGrad
POOL_ATTRS = ("ksize", "strides", "padding", "data_format")


def _bind_max_pool_grad(
    xp: Any, fused_ops: Sequence[str] = ("ReluGrad",), pooled: bool = False, **attrs: Any
) -> Callable[..., Any]:
    if list(fused_ops[:1]) != ["ReluGrad"]:
        raise ValueError(f"_FusedMaxPoolGrad fuses a ReluGrad first, got {list(fused_ops)}")
    check = OPS["MaxPoolGrad"].bound_kernel(xp, attrs)  # the written op's checks and errors
    tail = _tail(xp, fused_ops[1:])

    def fused_max_pool_grad(x: Any, y: Any, grad: Any, *operands: Any) -> Any:
        return tail(check(x, y, grad, relu=True, pooled=pooled), operands)

    return fused_max_pool_grad


op(
    "_FusedMaxPoolGrad",
    ("orig_input", "orig_output", "grad", "*args"),
    (*POOL_ATTRS, "fused_ops", "pooled"),
    _fused_infer,
    None,
    bind=_bind_max_pool_grad,
    grad=NOT_DIFFERENTIABLE,
)
