"""Losses and dropout: softmax and sigmoid cross-entropy, L2 loss, dropout.

Two ops carry the cross-entropies, as in TensorFlow:
``SoftmaxCrossEntropyWithLogits(features, labels)`` and its sparse twin (int
class labels) return two outputs, the loss per example ``[batch]`` and
``backprop = softmax(logits) - labels`` ``[batch, classes]``, which the
gradient reuses instead of recomputing the softmax.  Kernels subtract the
row maximum before ``exp`` (log-sum-exp), so no logit overflows; float16
computes in float32.  Both ops are 2-D; the wrappers move ``dim`` last and
flatten other ranks, as TF1 does.  ``L2Loss`` is ``sum(t ** 2) / 2``.

``sigmoid_cross_entropy_with_logits`` and ``dropout`` are compositions of
existing ops, written exactly as TF1 writes them (so they get their
gradients from those ops): ``max(x, 0) - x * z + log(1 + exp(-|x|))``, and
``x / keep_prob * floor(keep_prob + uniform)``.

    >>> import flowbook as fb
    >>> loss = fb.nn.softmax_cross_entropy_with_logits_v2(labels=[[0.0, 1.0]], logits=[[1000.0, 1000.0]])
    >>> with fb.Session() as s:
    ...     print(s.run(loss))
    [0.6931472]
"""

from __future__ import annotations

import numbers
from typing import Any

from flowbook.framework import dtypes
from flowbook.framework.errors import InvalidArgumentError
from flowbook.framework.graph import name_scope
from flowbook.framework.registry import Fusion, Out, op
from flowbook.framework.tensor import Tensor
from flowbook.framework.tensor_shape import compatible, fmt, merge
from flowbook.ops._builder import make, make1, operands, same_dtype, tensor
from flowbook.ops._shape_inputs import host_ints
from flowbook.ops.array import array_ops
from flowbook.ops.array.constant_op import constant_value
from flowbook.ops.math import math_ops
from flowbook.ops.math.elementwise import FLOAT, check_dtype
from flowbook.ops.nn import nn_ops
from flowbook.ops.random import random_ops

__all__ = [
    "dropout",
    "l2_loss",
    "sigmoid_cross_entropy_with_logits",
    "softmax_cross_entropy_with_logits",
    "softmax_cross_entropy_with_logits_v2",
    "sparse_softmax_cross_entropy_with_logits",
]

_INDEX = frozenset({dtypes.int32, dtypes.int64})


# ------------------------------------------------------------ kernels' common part
def _log_softmax_parts(xp: Any, logits: Any) -> tuple[Any, Any, Any]:
    """(log softmax, softmax, compute dtype) of 2-D logits, stable; float16 runs in float32."""
    if logits.dtype == xp.float16:
        logits = logits.astype(xp.float32)
    shifted = logits - logits.max(axis=1, keepdims=True)
    e = xp.exp(shifted)
    total = e.sum(axis=1, keepdims=True)
    return shifted - xp.log(total), e / total, logits.dtype


def _rank2(what: str, shape: Any) -> Any:
    if shape is None:
        return (None, None)
    if len(shape) != 2:
        raise ValueError(f"{what} must be 2-dimensional, got shape {fmt(shape)}")
    return shape


def _xent_grad(op: Any, grad_loss: Tensor, grad_grad: Tensor) -> Tensor:
    """The gradient into the logits, from the backprop output (and its own gradient, if any)."""
    g = array_ops.expand_dims(grad_loss, -1)
    grad = g * op.outputs[1]
    if grad_grad.op.type != "ZerosLike":  # someone differentiated the backprop output
        p = nn_ops.softmax(op.inputs[0])
        gp = math_ops.reduce_sum(grad_grad * p, axis=1, keepdims=True)
        grad = grad + (grad_grad - gp) * p
    return grad


# ------------------------------------------------------------ SoftmaxCrossEntropyWithLogits
def _xent_infer(features: Tensor, labels: Tensor) -> list[Out]:
    dt = same_dtype("SoftmaxCrossEntropyWithLogits", ("features", "labels"), features, labels)
    check_dtype(dt, FLOAT, "features")
    fs, ls = _rank2("logits", features._shape), _rank2("labels", labels._shape)
    if not compatible(fs, ls):
        raise ValueError(
            f"logits and labels must be the same size: logits{fmt(fs)} vs labels{fmt(ls)}"
        )
    both = merge(fs, ls)
    return [Out(dt, (both[0],)), Out(dt, both)]


def _xent(xp: Any, features: Any, labels: Any) -> tuple[Any, Any]:
    if features.shape != labels.shape:
        raise InvalidArgumentError(
            None,
            None,
            f"logits and labels must be same size: logits_size={fmt(features.shape)} "
            f"labels_size={fmt(labels.shape)}",
        )
    log_p, p, ct = _log_softmax_parts(xp, features)
    labels = labels.astype(ct, copy=False)
    loss = -(labels * log_p).sum(axis=1)
    return loss.astype(features.dtype, copy=False), (p - labels).astype(features.dtype, copy=False)


def _xent_gradient(op: Any, grad_loss: Tensor, grad_grad: Tensor) -> list[Tensor]:
    g = array_ops.expand_dims(grad_loss, -1)
    return [_xent_grad(op, grad_loss, grad_grad), g * -nn_ops.log_softmax(op.inputs[0])]


op(
    "SoftmaxCrossEntropyWithLogits",
    ("features", "labels"),
    infer=_xent_infer,
    kernel=_xent,
    num_outputs=2,
    grad=_xent_gradient,
)


# ------------------------------------------------------------ SparseSoftmaxCrossEntropyWithLogits
def _sparse_xent_infer(features: Tensor, labels: Tensor) -> list[Out]:
    check_dtype(features.dtype, FLOAT, "features")
    check_dtype(labels.dtype, _INDEX, "labels")
    fs, ls = _rank2("logits", features._shape), labels._shape
    if ls is not None and len(ls) != 1:
        raise ValueError(f"labels must be 1-D, got shape {fmt(ls)}")
    ls = ls or (None,)
    if fs[0] is not None and ls[0] is not None and fs[0] != ls[0]:
        raise ValueError(
            "logits and labels must have the same first dimension, got logits shape "
            f"{fmt(fs)} and labels shape {fmt(ls)}"
        )
    batch = fs[0] if fs[0] is not None else ls[0]
    return [Out(features.dtype, (batch,)), Out(features.dtype, (batch, fs[1]))]


def _check_labels(xp: Any, labels: Any, n: int, c: int) -> None:
    if labels.shape != (n,):
        raise InvalidArgumentError(
            None, None, f"labels{fmt(labels.shape)} must be [{n}], one per row of the logits"
        )
    if n and (int(labels.min()) < 0 or int(labels.max()) >= c):
        values = host_ints(labels)
        bad = next(v for v in values if not 0 <= v < c)
        shown = " ".join(str(v) for v in values[:32]) + (" ..." if len(values) > 32 else "")
        raise InvalidArgumentError(
            None,
            None,
            f"Received a label value of {bad} which is outside the valid range of [0, {c}).  "
            f"Label values: {shown}",
        )


def _sparse_xent(xp: Any, features: Any, labels: Any) -> tuple[Any, Any]:
    n, c = features.shape
    _check_labels(xp, labels, n, c)
    logits = features.astype(xp.float32) if features.dtype == xp.float16 else features
    shifted = logits - logits.max(axis=1, keepdims=True)
    e = xp.exp(shifted)
    total = e.sum(axis=1, keepdims=True)
    rows = xp.arange(n)
    loss = xp.log(total[:, 0]) - shifted[rows, labels]  # -log softmax at each row's label
    e /= total  # the softmax, in place
    e[rows, labels] -= 1  # minus the one-hot labels: the backprop
    return loss.astype(features.dtype, copy=False), e.astype(features.dtype, copy=False)


def _sparse_xent_gradient(op: Any, grad_loss: Tensor, grad_grad: Tensor) -> list[Tensor | None]:
    return [_xent_grad(op, grad_loss, grad_grad), None]


op(
    "SparseSoftmaxCrossEntropyWithLogits",
    ("features", "labels"),
    infer=_sparse_xent_infer,
    kernel=_sparse_xent,
    fusion=Fusion(head="_FusedSparseSoftmaxCrossEntropyWithLogits", follows=1),  # the backprop
    num_outputs=2,
    grad=_sparse_xent_gradient,
)


# ------------------------------------------------------------ L2Loss
def _l2_infer(t: Tensor) -> Out:
    check_dtype(t.dtype, FLOAT, "t")
    return Out(t.dtype, ())


def _l2_loss(xp: Any, t: Any) -> Any:
    return xp.asarray(xp.sum(t * t) / 2, dtype=t.dtype)


def _l2_loss_grad(op: Any, grad: Tensor) -> Tensor:
    return op.inputs[0] * grad


op("L2Loss", ("t",), infer=_l2_infer, kernel=_l2_loss, grad=_l2_loss_grad)


# ------------------------------------------------------------ wrappers
def _xent_args(fn: str, sentinel: Any, labels: Any, logits: Any) -> None:
    """TF1's ``_ensure_xent_args``: keyword arguments only, both given."""
    if sentinel is not None:
        raise ValueError(f"Only call `{fn}` with named arguments (labels=..., logits=..., ...)")
    if labels is None or logits is None:
        raise ValueError("Both labels and logits must be provided.")


def _flat2(t: Tensor) -> Tensor:
    """``t`` as ``[-1, last dim]`` (TF's ``_flatten_outer_dims``)."""
    last = t._shape[-1] if t._shape else None
    return array_ops.reshape(t, [-1, last] if last is not None else [-1, array_ops.shape(t)[-1]])


def _outer_shape(t: Tensor) -> Any:
    """All but the last dim of ``t``, statically when known."""
    s = t._shape
    return list(s[:-1]) if None not in s[:-1] else array_ops.shape(t)[:-1]


def _softmax_xent(labels: Any, logits: Any, axis: int, name: str | None) -> Tensor:
    logits, labels = tensor(logits), tensor(labels)
    if labels.dtype is not logits.dtype:
        labels = math_ops.cast(labels, logits.dtype)
    rank = None if logits._shape is None else len(logits._shape)
    if rank == 2 and axis in (-1, 1):
        return make("SoftmaxCrossEntropyWithLogits", (logits, labels), name=name).outputs[0]
    if rank is None:
        raise ValueError("softmax_cross_entropy_with_logits needs logits of known rank here")
    if rank == 0:
        raise ValueError("logits must have rank >= 1, got a scalar")
    with name_scope(name, "softmax_cross_entropy_with_logits") as scope:
        axis = axis % rank
        if axis != rank - 1:  # move the class dim last
            perm = [d for d in range(rank) if d != axis] + [axis]
            logits, labels = array_ops.transpose(logits, perm), array_ops.transpose(labels, perm)
        op = make("SoftmaxCrossEntropyWithLogits", (_flat2(logits), _flat2(labels)))
        return array_ops.reshape(op.outputs[0], _outer_shape(logits), name=scope)


def softmax_cross_entropy_with_logits(
    _sentinel: Any = None,
    labels: Any = None,
    logits: Any = None,
    dim: int = -1,
    name: str | None = None,
) -> Tensor:
    """Cross-entropy between ``labels`` (a distribution) and softmax(``logits``); no gradient into labels.

    >>> import flowbook as fb
    >>> loss = fb.nn.softmax_cross_entropy_with_logits(labels=[[1.0, 0.0]], logits=[[0.0, 0.0]])
    >>> with fb.Session() as s:
    ...     print(s.run(loss))
    [0.6931472]
    """
    _xent_args("softmax_cross_entropy_with_logits", _sentinel, labels, logits)
    with name_scope(name, "softmax_cross_entropy_with_logits_sg") as scope:
        labels = array_ops.stop_gradient(tensor(labels), name="labels_stop_gradient")
        return _softmax_xent(labels, logits, dim, scope)


def softmax_cross_entropy_with_logits_v2(
    labels: Any = None,
    logits: Any = None,
    axis: int | None = None,
    name: str | None = None,
    dim: int | None = None,
) -> Tensor:
    """As ``softmax_cross_entropy_with_logits``, with a gradient into ``labels`` too.

    >>> import flowbook as fb
    >>> loss = fb.nn.softmax_cross_entropy_with_logits_v2(labels=[0.0, 1.0], logits=[0.0, 0.0])
    >>> with fb.Session() as s:
    ...     print(s.run(loss))
    0.6931472
    """
    _xent_args("softmax_cross_entropy_with_logits_v2", None, labels, logits)
    if axis is not None and dim is not None:
        raise ValueError("Cannot specify both 'axis' and 'dim'.")
    return _softmax_xent(
        labels,
        logits,
        -1 if axis is None and dim is None else int(axis if dim is None else dim),
        name,
    )


def _check_sparse_shapes(labels: Tensor, logits: Tensor) -> None:
    ls, xs = labels._shape, logits._shape
    if xs is not None and len(xs) == 0:
        raise ValueError(f"Logits cannot be scalars - received shape {fmt(xs)}.")
    if ls is not None and xs is not None:
        if len(ls) != len(xs) - 1:
            raise ValueError(
                f"Rank mismatch: Rank of labels (received {len(ls)}) should equal rank of logits "
                f"minus 1 (received {len(xs)})."
            )
        if not compatible(ls, xs[:-1]):
            raise ValueError(
                f"Shape mismatch: The shape of labels (received {fmt(ls)}) should equal the shape "
                f"of logits except for the last dimension (received {fmt(xs)})."
            )


def sparse_softmax_cross_entropy_with_logits(
    _sentinel: Any = None, labels: Any = None, logits: Any = None, name: str | None = None
) -> Tensor:
    """Cross-entropy of softmax(``logits``) against int class ``labels`` (one per row).

    >>> import flowbook as fb
    >>> loss = fb.nn.sparse_softmax_cross_entropy_with_logits(labels=[1], logits=[[0.0, 0.0]])
    >>> with fb.Session() as s:
    ...     print(s.run(loss))
    [0.6931472]
    """
    _xent_args("sparse_softmax_cross_entropy_with_logits", _sentinel, labels, logits)
    labels, logits = tensor(labels), tensor(logits)
    _check_sparse_shapes(labels, logits)
    with name_scope(name, "SparseSoftmaxCrossEntropyWithLogits") as scope:
        if logits._shape is not None and len(logits._shape) == 2:
            return make(
                "SparseSoftmaxCrossEntropyWithLogits", (logits, labels), name=scope
            ).outputs[0]
        if logits._shape is None:
            raise ValueError("sparse_softmax_cross_entropy_with_logits needs logits of known rank")
        flat_labels = array_ops.reshape(labels, [-1])
        op = make("SparseSoftmaxCrossEntropyWithLogits", (_flat2(logits), flat_labels))
        return array_ops.reshape(op.outputs[0], _outer_shape(logits), name=scope)


def sigmoid_cross_entropy_with_logits(
    _sentinel: Any = None, labels: Any = None, logits: Any = None, name: str | None = None
) -> Tensor:
    """Element-wise logistic loss, ``max(x, 0) - x * z + log(1 + exp(-|x|))`` (TF's stable form).

    >>> import flowbook as fb
    >>> loss = fb.nn.sigmoid_cross_entropy_with_logits(labels=[1.0, 0.0], logits=[0.0, -1000.0])
    >>> with fb.Session() as s:
    ...     print(s.run(loss))
    [0.6931472 0.       ]
    """
    _xent_args("sigmoid_cross_entropy_with_logits", _sentinel, labels, logits)
    with name_scope(name, "logistic_loss") as scope:
        logits, labels = operands(logits, labels)
        if not compatible(logits._shape, labels._shape):
            raise ValueError(
                f"logits and labels must have the same shape ({fmt(logits._shape)} vs {fmt(labels._shape)})"
            )
        zeros = array_ops.zeros_like(logits)
        cond = math_ops.greater_equal(logits, zeros)
        relu_logits = array_ops.where(cond, logits, zeros)
        neg_abs_logits = array_ops.where(cond, -logits, logits)
        return math_ops.add(
            relu_logits - logits * labels, math_ops.log1p(math_ops.exp(neg_abs_logits)), name=scope
        )


def l2_loss(t: Any, name: str | None = None) -> Tensor:
    """``sum(t ** 2) / 2``, a scalar.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.nn.l2_loss([1.0, 2.0])).item()
    2.5
    """
    return make1("L2Loss", (tensor(t),), name=name)


def _noise_shape(x: Tensor, noise_shape: Any) -> Any:
    if noise_shape is None:
        s = x._shape
        return list(s) if s is not None and None not in s else array_ops.shape(x)
    if isinstance(noise_shape, Tensor) or x._shape is None:
        return noise_shape
    dims = list(noise_shape)
    if len(dims) == len(x._shape):  # fill unknown noise dims from x, as TF does
        dims = [x._shape[i] if d is None else d for i, d in enumerate(dims)]
    return dims


def dropout(
    x: Any,
    keep_prob: Any = None,
    noise_shape: Any = None,
    seed: int | None = None,
    name: str | None = None,
    rate: Any = None,
) -> Tensor:
    """Keep each element with probability ``keep_prob`` (scaled by ``1 / keep_prob``), else 0.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.nn.dropout(fb.ones([4]), keep_prob=1.0)).tolist()
    [1.0, 1.0, 1.0, 1.0]
    """
    if keep_prob is not None and rate is not None:
        raise ValueError("Cannot specify both 'rate' and 'keep_prob'.")
    if keep_prob is None and rate is None:
        raise ValueError("You must provide a rate to dropout.")
    with name_scope(name, "dropout") as scope:
        x = tensor(x, name="x")
        if not x.dtype.is_floating:
            raise ValueError(
                "x has to be a floating point tensor since it's going to be scaled. "
                f"Got a {x.dtype.name} tensor instead."
            )
        if rate is not None:
            if isinstance(rate, numbers.Real) and not 0 <= rate < 1:
                raise ValueError(
                    f"rate must be a scalar tensor or a float in the range [0, 1), got {rate:g}"
                )
            keep = (
                1 - rate
                if isinstance(rate, numbers.Real)
                else math_ops.subtract(1.0, tensor(rate, x.dtype))
            )
        else:
            if isinstance(keep_prob, numbers.Real) and not 0 < keep_prob <= 1:
                raise ValueError(
                    f"keep_prob must be a scalar tensor or a float in the range (0, 1], got {keep_prob:g}"
                )
            keep = keep_prob
        keep_t = tensor(keep, dtype=x.dtype, name="keep_prob")
        if keep_t._shape not in (None, ()):
            raise ValueError(f"keep_prob must be a scalar, got shape {fmt(keep_t._shape)}")
        known = constant_value(keep_t)
        if known is not None and float(known) == 1.0:
            return x
        noise = random_ops.random_uniform(_noise_shape(x, noise_shape), seed=seed, dtype=x.dtype)
        binary = math_ops.floor(keep_t + noise)
        ret = math_ops.multiply(math_ops.divide(x, keep_t), binary, name=scope)
        ret.set_shape(x.get_shape())
        return ret
