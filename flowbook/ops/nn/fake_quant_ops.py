"""Fake quantisation (TF1's quantisation-aware training ops), ``timestamp`` and histogram bins.

``fake_quant_with_min_max_*`` round float inputs onto the ``2**num_bits``
levels (one fewer with ``narrow_range``) of a range, and back to floats, as
TensorFlow does: the range ``[min, max]`` is first *nudged* so that 0.0 is
exactly a level (``scale = (max - min) / (qmax - qmin)``, the zero point
``qmin - min / scale`` rounded into ``[qmin, qmax]``, then
``nudged_min = (qmin - zero) * scale``, ``nudged_max = (qmax - zero) *
scale``); inputs are clamped to the nudged range and rounded to the nearest
level (``floor(v / scale + 0.5)``).  ``_args`` takes the range as attrs,
``_vars`` as tensors (trained variables), ``_vars_per_channel`` as vectors
over the last dim.  The gradient is the straight-through estimator: the
incoming gradient passes where the input lies inside the nudged range; for
``_vars`` the gradients below (above) the range go to ``min`` (``max``).
The ``*_gradient`` functions are these gradients as ops.

``Timestamp`` outputs the time (float64 seconds since the epoch) when it
runs; ``histogram_fixed_width_bins`` gives each value's bin index of
``nbins`` equal bins over ``value_range`` (values outside fall in the end bins).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.fake_quant_with_min_max_args([-0.1, 0.26, 9.0], 0.0, 1.0, num_bits=2)).tolist()
    [0.0, 0.3333333432674408, 1.0]
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from flowbook.framework import dtypes
from flowbook.framework.graph import name_scope
from flowbook.framework.registry import NOT_DIFFERENTIABLE, Out, op
from flowbook.framework.tensor import Operation, Tensor
from flowbook.ops._builder import make, make1, tensor
from flowbook.ops.math import math_ops

__all__ = [
    "fake_quant_with_min_max_args",
    "fake_quant_with_min_max_args_gradient",
    "fake_quant_with_min_max_vars",
    "fake_quant_with_min_max_vars_gradient",
    "fake_quant_with_min_max_vars_per_channel",
    "fake_quant_with_min_max_vars_per_channel_gradient",
    "histogram_fixed_width_bins",
    "timestamp",
]

_ATTRS = ("num_bits", "narrow_range")


def _nudge(xp: Any, lo: Any, hi: Any, num_bits: int, narrow_range: bool) -> tuple[Any, Any, Any]:
    """(nudged_min, nudged_max, scale), float32 as TensorFlow computes them."""
    f = np.float32
    qmin, qmax = f(1 if narrow_range else 0), f((1 << num_bits) - 1)
    lo, hi = xp.asarray(lo, f), xp.asarray(hi, f)
    scale = (hi - lo) / (qmax - qmin)
    zero_from_min = qmin - lo / scale
    zero = xp.where(
        zero_from_min < qmin,
        qmin,
        xp.where(zero_from_min > qmax, qmax, xp.floor(zero_from_min + f(0.5))),
    )
    return (qmin - zero) * scale, (qmax - zero) * scale, scale


def _quantize(xp: Any, x: Any, lo: Any, hi: Any, num_bits: int, narrow_range: bool) -> Any:
    nmin, nmax, scale = _nudge(xp, lo, hi, num_bits, narrow_range)
    clamped = xp.minimum(xp.maximum(x, nmin), nmax)
    return (xp.floor((clamped - nmin) / scale + np.float32(0.5)) * scale + nmin).astype(np.float32)


def _inside(xp: Any, x: Any, lo: Any, hi: Any, num_bits: int, narrow_range: bool) -> tuple:
    nmin, nmax, _ = _nudge(xp, lo, hi, num_bits, narrow_range)
    return x < nmin, x > nmax


def _float_infer(op_type: str) -> Any:
    def infer(inputs: Tensor, *rest: Tensor, **attrs: Any) -> Out:
        if inputs.dtype is not dtypes.float32:
            raise TypeError(f"{op_type} needs float32 inputs, got {inputs.dtype.name}")
        return Out(dtypes.float32, inputs._shape)

    return infer


def _check_bits(num_bits: int) -> None:
    if not 2 <= num_bits <= 16:
        raise ValueError(f"num_bits must be between 2 and 16, inclusive, got {num_bits}")


def _args_grad(op: Operation, g: Tensor) -> list[Tensor]:
    return [make1("FakeQuantWithMinMaxArgsGradient", [g, op.inputs[0]], dict(op.attrs))]


def _vars_grad(op_type: str) -> Any:
    def grad(op: Operation, g: Tensor) -> list[Tensor]:
        return list(make(op_type, [g, *op.inputs], dict(op.attrs)).outputs)

    return grad


def _fq_args(xp: Any, inputs: Any, min: float, max: float, num_bits: int, narrow_range: bool):
    return _quantize(xp, inputs, min, max, num_bits, narrow_range)


op(
    "FakeQuantWithMinMaxArgs",
    ("inputs",),
    infer=_float_infer("FakeQuantWithMinMaxArgs"),
    attrs=("min", "max", *_ATTRS),
    kernel=_fq_args,
    grad=_args_grad,
)


def _fq_args_grad(
    xp: Any, gradients: Any, inputs: Any, min: float, max: float, num_bits: int, narrow_range: bool
) -> Any:
    below, above = _inside(xp, inputs, min, max, num_bits, narrow_range)
    return xp.where(below | above, np.float32(0), gradients).astype(np.float32)


op(
    "FakeQuantWithMinMaxArgsGradient",
    ("gradients", "inputs"),
    infer=_float_infer("FakeQuantWithMinMaxArgsGradient"),
    attrs=("min", "max", *_ATTRS),
    kernel=_fq_args_grad,
    grad=NOT_DIFFERENTIABLE,
)


def _vars_infer(op_type: str, per_channel: bool) -> Any:
    def infer(inputs: Tensor, lo: Tensor, hi: Tensor, **attrs: Any) -> Out:
        if inputs.dtype is not dtypes.float32:
            raise TypeError(f"{op_type} needs float32 inputs, got {inputs.dtype.name}")
        for name, t in (("min", lo), ("max", hi)):
            want = 1 if per_channel else 0
            if t._shape is not None and len(t._shape) != want:
                raise ValueError(f"{op_type}: {name} must have rank {want}, got {list(t._shape)}")
        return Out(dtypes.float32, inputs._shape)

    return infer


def _fq_vars(xp: Any, inputs: Any, min: Any, max: Any, num_bits: int, narrow_range: bool) -> Any:
    return _quantize(xp, inputs, min, max, num_bits, narrow_range)


op(
    "FakeQuantWithMinMaxVars",
    ("inputs", "min", "max"),
    infer=_vars_infer("FakeQuantWithMinMaxVars", False),
    attrs=_ATTRS,
    kernel=_fq_vars,
    grad=_vars_grad("FakeQuantWithMinMaxVarsGradient"),
)


def _fq_channels(xp: Any, inputs: Any, min: Any, max: Any, num_bits: int, narrow_range: bool):
    return _quantize(xp, inputs, min, max, num_bits, narrow_range)


op(
    "FakeQuantWithMinMaxVarsPerChannel",
    ("inputs", "min", "max"),
    infer=_vars_infer("FakeQuantWithMinMaxVarsPerChannel", True),
    attrs=_ATTRS,
    kernel=_fq_channels,
    grad=_vars_grad("FakeQuantWithMinMaxVarsPerChannelGradient"),
)


def _vars_grad_infer(inputs_grad: Tensor, inputs: Tensor, lo: Tensor, hi: Tensor, **_: Any):
    return [
        Out(dtypes.float32, inputs._shape),
        Out(dtypes.float32, lo._shape),
        Out(dtypes.float32, hi._shape),
    ]


def _vars_grad_kernel(per_channel: bool) -> Any:
    def kernel(
        xp: Any, gradients: Any, inputs: Any, min: Any, max: Any, num_bits: int, narrow_range: bool
    ) -> Any:
        below, above = _inside(xp, inputs, min, max, num_bits, narrow_range)
        g = gradients.astype(np.float32)
        zero = np.float32(0)
        axes = tuple(range(inputs.ndim - 1)) if per_channel else None
        return (
            xp.where(below | above, zero, g),
            xp.where(below, g, zero).sum(axis=axes),
            xp.where(above, g, zero).sum(axis=axes),
        )

    return kernel


op(
    "FakeQuantWithMinMaxVarsGradient",
    ("gradients", "inputs", "min", "max"),
    _ATTRS,
    _vars_grad_infer,
    _vars_grad_kernel(False),
    grad=NOT_DIFFERENTIABLE,
)
op(
    "FakeQuantWithMinMaxVarsPerChannelGradient",
    ("gradients", "inputs", "min", "max"),
    _ATTRS,
    _vars_grad_infer,
    _vars_grad_kernel(True),
    grad=NOT_DIFFERENTIABLE,
)


def _attrs(num_bits: int, narrow_range: bool) -> dict[str, Any]:
    _check_bits(int(num_bits))
    return {"num_bits": int(num_bits), "narrow_range": bool(narrow_range)}


def fake_quant_with_min_max_args(
    inputs: Any,
    min: float = -6.0,
    max: float = 6.0,
    num_bits: int = 8,
    narrow_range: bool = False,
    name: str | None = None,
) -> Tensor:
    """``inputs`` rounded onto the levels of the nudged ``[min, max]`` (attrs)."""
    attrs = {"min": float(min), "max": float(max), **_attrs(num_bits, narrow_range)}
    x = tensor(inputs, dtypes.float32)
    return make1("FakeQuantWithMinMaxArgs", [x], attrs, name=name or "FakeQuantWithMinMaxArgs")


def fake_quant_with_min_max_args_gradient(
    gradients: Any,
    inputs: Any,
    min: float = -6.0,
    max: float = 6.0,
    num_bits: int = 8,
    narrow_range: bool = False,
    name=None,
) -> Tensor:
    """``gradients`` where ``inputs`` lie inside the nudged range, 0 elsewhere."""
    attrs = {"min": float(min), "max": float(max), **_attrs(num_bits, narrow_range)}
    xs = [tensor(gradients, dtypes.float32), tensor(inputs, dtypes.float32)]
    return make1("FakeQuantWithMinMaxArgsGradient", xs, attrs, name=name or "FakeQuantGradient")


def _vars(
    op_type: str, inputs: Any, min: Any, max: Any, num_bits: int, narrow_range: bool, name: Any
) -> Tensor:
    xs = [tensor(v, dtypes.float32) for v in (inputs, min, max)]
    return make1(op_type, xs, _attrs(num_bits, narrow_range), name=name or op_type)


def fake_quant_with_min_max_vars(
    inputs: Any,
    min: Any,
    max: Any,
    num_bits: int = 8,
    narrow_range: bool = False,
    name: str | None = None,
) -> Tensor:
    """``inputs`` rounded onto the levels of the nudged ``[min, max]`` (scalar tensors)."""
    return _vars("FakeQuantWithMinMaxVars", inputs, min, max, num_bits, narrow_range, name)


def fake_quant_with_min_max_vars_per_channel(
    inputs: Any, min: Any, max: Any, num_bits: int = 8, narrow_range: bool = False, name=None
) -> Tensor:
    """As ``_vars``, with one range per entry of the last dim (``min``/``max`` vectors)."""
    op = "FakeQuantWithMinMaxVarsPerChannel"
    return _vars(op, inputs, min, max, num_bits, narrow_range, name)


def _vars_gradient(
    op_type: str,
    gradients: Any,
    inputs: Any,
    min: Any,
    max: Any,
    num_bits: int,
    narrow_range: bool,
    name: Any,
) -> tuple:
    xs = [tensor(v, dtypes.float32) for v in (gradients, inputs, min, max)]
    return tuple(make(op_type, xs, _attrs(num_bits, narrow_range), name=name or op_type).outputs)


def fake_quant_with_min_max_vars_gradient(
    gradients: Any,
    inputs: Any,
    min: Any,
    max: Any,
    num_bits: int = 8,
    narrow_range: bool = False,
    name=None,
) -> tuple:
    """(gradient to inputs, to min, to max) of ``fake_quant_with_min_max_vars``."""
    op = "FakeQuantWithMinMaxVarsGradient"
    return _vars_gradient(op, gradients, inputs, min, max, num_bits, narrow_range, name)


def fake_quant_with_min_max_vars_per_channel_gradient(
    gradients: Any,
    inputs: Any,
    min: Any,
    max: Any,
    num_bits: int = 8,
    narrow_range: bool = False,
    name=None,
):
    """(gradient to inputs, to min, to max) of the per-channel version (min/max: vectors)."""
    op = "FakeQuantWithMinMaxVarsPerChannelGradient"
    return _vars_gradient(op, gradients, inputs, min, max, num_bits, narrow_range, name)


def _timestamp(xp: Any) -> Any:
    return np.array(time.time(), np.float64)


op(
    "Timestamp",
    (),
    infer=lambda: Out(dtypes.float64, ()),
    kernel=_timestamp,
    stateful=True,
    host_only=True,
    grad=NOT_DIFFERENTIABLE,
)


def timestamp(name: str | None = None) -> Tensor:
    """The time the op runs, as float64 seconds since the epoch.

    >>> import flowbook as fb, time
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     bool(abs(s.run(fb.timestamp()) - time.time()) < 60)
    True
    """
    return make1("Timestamp", [], name=name or "Timestamp")


def histogram_fixed_width_bins(
    values: Any,
    value_range: Any,
    nbins: Any = 100,
    dtype: Any = dtypes.int32,
    name: str | None = None,
) -> Tensor:
    """Each value's bin among ``nbins`` equal bins over ``value_range`` (clipped to the ends).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.histogram_fixed_width_bins([-1.0, 0.0, 1.5, 2.0, 5.0], [0.0, 5.0], 5)).tolist()
    [0, 0, 1, 2, 4]
    """
    with name_scope(name, "histogram_fixed_width_bins"):
        v = tensor(values)
        lo_hi = math_ops.cast(tensor(value_range), v.dtype)
        n = tensor(nbins, dtypes.int32)
        scaled = (v - lo_hi[0]) / (lo_hi[1] - lo_hi[0]) * math_ops.cast(n, v.dtype)
        bins = math_ops.cast(math_ops.floor(scaled), dtypes.int32)
        bins = math_ops.minimum(math_ops.maximum(bins, 0), n - 1)
        return math_ops.cast(bins, dtypes.as_dtype(dtype)) if dtype != dtypes.int32 else bins
