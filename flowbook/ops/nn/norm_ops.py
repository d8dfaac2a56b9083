"""Normalisation: moments, batch normalization, local response normalization, L2 normalize.

TF1 composes ``moments``, ``batch_normalization`` and ``l2_normalize`` from
existing ops (``nn_impl.py``), and so does this module, so their gradients
come from those ops:

- ``moments``: ``mean = reduce_mean(x, axes)``, ``variance =
  reduce_mean(squared_difference(x, stop_gradient(mean)), axes)`` (float16
  computes in float32; ``shift`` is ignored, as TF1 ignores it);
- ``batch_normalization``: ``x * inv + (offset - mean * inv)`` with ``inv =
  rsqrt(variance + epsilon) * scale``;
- ``l2_normalize``: ``x * rsqrt(maximum(sum(x ** 2, axis), epsilon))``.

``fused_batch_norm`` is TF's single ``FusedBatchNorm`` kernel; here it is the
same composition (moments over every axis but the channels' when training),
returning what TF returns: ``y``, the batch mean, and the batch variance with
Bessel's correction ``n / (n - 1)`` (``y`` itself uses the biased one).

``LRN`` is an op with its own kernel, as in TF: over the last (depth) axis of
a 4-D input, ``sqr_sum[..., d] = sum(x[..., d - r : d + r + 1] ** 2)`` and
``y = x / (bias + alpha * sqr_sum) ** beta``.  Its gradient is the
``LRNGrad`` op (input gradients, input and output image), whose kernel
computes ``dx = g * n ** -beta - 2 * alpha * beta * x * window(g * y / n)``
with ``n = bias + alpha * sqr_sum`` (the window is symmetric, so summing
over the windows that hold ``d`` is the same window sum).  Like TF,
``LRNGrad`` has no gradient of its own.

    >>> import flowbook as fb
    >>> mean, var = fb.nn.moments(fb.constant([1.0, 2.0, 3.0, 6.0]), axes=[0])
    >>> with fb.Session() as s:
    ...     [float(a) for a in s.run([mean, var])]
    [3.0, 3.5]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowbook.framework import dtypes
from flowbook.framework.graph import name_scope
from flowbook.framework.registry import NOT_DIFFERENTIABLE, Out, op
from flowbook.framework.tensor import Operation, Tensor
from flowbook.framework.tensor_shape import fmt
from flowbook.ops._builder import make1, tensor
from flowbook.ops.array import array_ops
from flowbook.ops.math import math_ops
from flowbook.ops.math.elementwise import FLOAT, check_dtype

__all__ = [
    "batch_normalization",
    "fused_batch_norm",
    "l2_normalize",
    "local_response_normalization",
    "lrn",
    "moments",
]

_LRN_ATTRS = ("depth_radius", "bias", "alpha", "beta")


def _window_sum(xp: Any, a: Any, radius: int) -> Any:
    """``out[..., d] = sum(a[..., d - radius : d + radius + 1])``, clipped at the edges."""
    depth = a.shape[-1]
    r = min(radius, depth - 1)
    padded = xp.pad(a, [(0, 0)] * (a.ndim - 1) + [(r, r)])
    out = padded[..., 0:depth].copy()
    for k in range(1, 2 * r + 1):
        out += padded[..., k : k + depth]
    return out


def _lrn_norm(xp: Any, x: Any, depth_radius: int, bias: float, alpha: float) -> Any:
    return bias + alpha * _window_sum(xp, x * x, depth_radius)


def _lrn_infer(
    input: Tensor, depth_radius: int = 5, bias: float = 1.0, alpha: float = 1.0, beta: float = 0.5
) -> Out:
    check_dtype(input.dtype, FLOAT, "input")
    if input._shape is not None and len(input._shape) != 4:
        raise ValueError(f"LRN needs a 4-D input, got input{fmt(input._shape)}")
    if depth_radius < 0:
        raise ValueError(f"depth_radius must be >= 0, got {depth_radius}")
    return Out(input.dtype, input._shape)


def _lrn(
    xp: Any, x: Any, depth_radius: int = 5, bias: float = 1.0, alpha: float = 1.0, beta: float = 0.5
) -> Any:
    wide = x.astype(np.float32) if x.dtype == np.float16 else x
    y = wide / _lrn_norm(xp, wide, depth_radius, bias, alpha) ** beta
    return y.astype(x.dtype, copy=False)


def _lrn_grad_infer(
    input_grads: Tensor, input_image: Tensor, output_image: Tensor, **a: Any
) -> Out:
    return _lrn_infer(input_image, **a)


def _lrn_grad(
    xp: Any,
    g: Any,
    x: Any,
    y: Any,
    depth_radius: int = 5,
    bias: float = 1.0,
    alpha: float = 1.0,
    beta: float = 0.5,
) -> Any:
    dtype = x.dtype
    if dtype == np.float16:
        g, x, y = (a.astype(np.float32) for a in (g, x, y))
    norm = _lrn_norm(xp, x, depth_radius, bias, alpha)
    back = _window_sum(xp, g * y / norm, depth_radius)
    dx = g * norm**-beta - (2.0 * alpha * beta) * x * back
    return dx.astype(dtype, copy=False)


op(
    "LRNGrad",
    ("input_grads", "input_image", "output_image"),
    infer=_lrn_grad_infer,
    attrs=_LRN_ATTRS,
    kernel=_lrn_grad,
    grad=NOT_DIFFERENTIABLE,
)


def _lrn_gradient(op: Operation, g: Tensor) -> Tensor:
    """The LRNGrad op over the gradient, the input and the output."""
    return make1("LRNGrad", (g, op.inputs[0], op.outputs[0]), dict(op.attrs))


op("LRN", ("input",), infer=_lrn_infer, attrs=_LRN_ATTRS, kernel=_lrn, grad=_lrn_gradient)


def lrn(
    input: Any,
    depth_radius: int = 5,
    bias: float = 1.0,
    alpha: float = 1.0,
    beta: float = 0.5,
    name: str | None = None,
) -> Tensor:
    """Local response normalization over the last axis of a 4-D input (TF's formula).

    >>> import flowbook as fb
    >>> x = fb.constant([[[[3.0, 4.0]]]])
    >>> with fb.Session() as s:
    ...     s.run(fb.nn.lrn(x, depth_radius=1, bias=0.0, alpha=1.0, beta=0.5)).tolist()
    [[[[0.6000000238418579, 0.800000011920929]]]]
    """
    attrs = {"depth_radius": int(depth_radius)}
    for key, value in (("bias", bias), ("alpha", alpha), ("beta", beta)):
        attrs[key] = float(np.float32(value))  # a float attr is a float32 in a GraphDef
    return make1("LRN", (tensor(input),), attrs, name=name)


local_response_normalization = lrn


def _axes_list(axes: Any) -> Any:
    return [int(a) for a in axes] if isinstance(axes, list | tuple) else axes


def moments(
    x: Any,
    axes: Any,
    shift: Any = None,
    name: str | None = None,
    keep_dims: bool | None = None,
    keepdims: bool | None = None,
) -> tuple[Tensor, Tensor]:
    """The mean and variance of ``x`` over ``axes`` (``shift`` is ignored, as in TF1).

    >>> import flowbook as fb
    >>> m, v = fb.nn.moments(fb.constant([[1.0, 3.0], [5.0, 7.0]]), [0], keep_dims=True)
    >>> with fb.Session() as s:
    ...     [a.tolist() for a in s.run([m, v])]
    [[[3.0, 5.0]], [[4.0, 4.0]]]
    """
    keep = bool(keep_dims if keepdims is None else keepdims)
    axes = _axes_list(axes)
    with name_scope(name, "moments"):
        t = tensor(x, name="x")
        y = math_ops.cast(t, dtypes.float32) if t.dtype is dtypes.float16 else t
        mean = math_ops.reduce_mean(y, axes, keepdims=True, name="mean")
        sq = math_ops.squared_difference(y, array_ops.stop_gradient(mean))
        variance = math_ops.reduce_mean(sq, axes, keepdims=True, name="variance")
        if not keep:
            mean = array_ops.squeeze(mean, axes)
            variance = array_ops.squeeze(variance, axes)
        if t.dtype is dtypes.float16:
            return math_ops.cast(mean, t.dtype), math_ops.cast(variance, t.dtype)
        return mean, variance


def batch_normalization(
    x: Any,
    mean: Any,
    variance: Any,
    offset: Any,
    scale: Any,
    variance_epsilon: float,
    name: str | None = None,
) -> Tensor:
    """(x - mean) * scale / sqrt(variance + epsilon) + offset; offset and scale may be None.

    >>> import flowbook as fb
    >>> y = fb.nn.batch_normalization(fb.constant([1.0, 3.0]), 2.0, 1.0, None, None, 0.0)
    >>> with fb.Session() as s:
    ...     s.run(y).tolist()
    [-1.0, 1.0]
    """
    with name_scope(name, "batchnorm"):  # TF's expression, so the ops get TF's names
        x = tensor(x, name="x")
        mean = tensor(mean, dtype=x.dtype, name="mean")
        inv = math_ops.rsqrt(tensor(variance, dtype=x.dtype, name="variance") + variance_epsilon)
        if scale is not None:
            inv = inv * tensor(scale, dtype=x.dtype, name="scale")
        if offset is None:
            return x * inv + -mean * inv
        return x * inv + (tensor(offset, dtype=x.dtype, name="offset") - mean * inv)


def _channels_shape(data_format: str) -> tuple[list[int], list[int]]:
    """(the axes the statistics reduce, the broadcast shape of a per-channel vector)."""
    if data_format == "NHWC":
        return [0, 1, 2], [-1]
    if data_format == "NCHW":
        return [0, 2, 3], [-1, 1, 1]
    raise ValueError(f"data_format must be 'NHWC' or 'NCHW', got {data_format!r}")


def fused_batch_norm(
    x: Any,
    scale: Any,
    offset: Any,
    mean: Any = None,
    variance: Any = None,
    epsilon: float = 0.001,
    data_format: str = "NHWC",
    is_training: bool = True,
    name: str | None = None,
) -> tuple[Tensor, Tensor, Tensor]:
    """Batch normalization of a 4-D input per channel: ``(y, batch_mean, batch_variance)``.

    Training uses the batch's statistics and returns the variance with
    Bessel's correction; inference uses ``mean`` and ``variance``.  Epsilon is
    raised to 1.001e-5 at least, as TF1 does.

    >>> import flowbook as fb
    >>> x = fb.constant([[[[1.0]], [[3.0]]]])  # NHWC, two pixels, one channel
    >>> y, m, v = fb.nn.fused_batch_norm(x, [1.0], [0.0], epsilon=0.0)
    >>> with fb.Session() as s:
    ...     [a.ravel().round(3).tolist() for a in s.run([y, m, v])]
    [[-1.0, 1.0], [2.0], [2.0]]
    """
    axes, vec = _channels_shape(data_format)
    epsilon = max(float(epsilon), 1.001e-5)
    with name_scope(name, "FusedBatchNorm"):
        x = tensor(x, name="x")
        if x._shape is not None and len(x._shape) != 4:
            raise ValueError(f"fused_batch_norm needs a 4-D input, got x{fmt(x._shape)}")
        y_in = math_ops.cast(x, dtypes.float32) if x.dtype is dtypes.float16 else x
        if is_training:
            if mean is not None or variance is not None:
                raise ValueError("Both 'mean' and 'variance' must be None when is_training.")
            mean, variance = moments(y_in, axes)
        elif mean is None or variance is None:
            raise ValueError("Both 'mean' and 'variance' must be given when not is_training.")
        mean = tensor(mean, dtype=y_in.dtype, name="mean")
        variance = tensor(variance, dtype=y_in.dtype, name="variance")
        y = batch_normalization(
            y_in,
            array_ops.reshape(mean, vec),
            array_ops.reshape(variance, vec),
            array_ops.reshape(tensor(offset, dtype=y_in.dtype), vec),
            array_ops.reshape(tensor(scale, dtype=y_in.dtype), vec),
            epsilon,
        )
        if x.dtype is dtypes.float16:
            y = math_ops.cast(y, x.dtype)
        if is_training:
            variance = math_ops.multiply(variance, _bessel(y_in, mean))
        return y, mean, variance


def _bessel(x: Tensor, per_channel: Tensor) -> Tensor:
    """n / (n - 1) with n the values per channel (1 where n is 1), as TF's kernel corrects."""
    n = math_ops.divide(
        math_ops.cast(array_ops.size(x), x.dtype),
        math_ops.cast(array_ops.size(per_channel), x.dtype),
    )
    return math_ops.divide(n, math_ops.maximum(math_ops.subtract(n, 1.0), 1.0))


def l2_normalize(
    x: Any, axis: Any = None, epsilon: float = 1e-12, name: str | None = None, dim: Any = None
) -> Tensor:
    """x / sqrt(max(sum(x ** 2, axis), epsilon)); ``dim`` is TF1's old name of ``axis``.

    >>> import flowbook as fb
    >>> with fb.Session() as s:
    ...     s.run(fb.nn.l2_normalize(fb.constant([3.0, 4.0]), 0)).tolist()
    [0.6000000238418579, 0.800000011920929]
    """
    if axis is not None and dim is not None:
        raise ValueError("Cannot specify both 'axis' and 'dim'.")
    axis = _axes_list(dim if axis is None else axis)
    with name_scope(name, "l2_normalize") as scope:
        x = tensor(x, name="x")
        square_sum = math_ops.reduce_sum(math_ops.square(x), axis, keepdims=True)
        inv_norm = math_ops.rsqrt(math_ops.maximum(square_sum, epsilon))
        return math_ops.multiply(x, inv_norm, name=scope)
