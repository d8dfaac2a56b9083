"""Summing a broadcast gradient back to an input's shape: ``unbroadcast``.

A binary element-wise op broadcasts its inputs to a common shape, so its
gradient arrives in that shape and must be summed over the axes each input was
stretched along.  When the shapes are known as the graph is built that is a
plain ``Sum`` + ``Reshape`` (or nothing, where no broadcast happened); else the
``BroadcastGradientArgs`` op works the axes out from the two ``Shape`` outputs
when the run comes, as in TensorFlow.

This module sits below the element-wise ops whose gradients call it, so it
builds its ``Sum`` by type (``make1("Sum", ...)``) rather than importing the
reductions (which import the element-wise ops).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     g = fb.ones([4, 3])
    ...     dx, dy = unbroadcast(g, fb.ones([4, 3]), fb.ones([3]))
    ...     dy.shape.as_list()
    [3]
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from flowbook.framework import dtypes
from flowbook.framework.registry import NOT_DIFFERENTIABLE, Out, op
from flowbook.framework.tensor import Tensor
from flowbook.ops._builder import make, make1, tensor
from flowbook.ops.array.constant_op import constant_value
from flowbook.ops.array.shape_ops import reshape, shape

__all__ = ["unbroadcast"]


def _bga_infer(s0: Tensor, s1: Tensor) -> list[Out]:
    a, b = constant_value(s0), constant_value(s1)
    if a is None or b is None:  # the axes depend on shapes known only when the run comes
        return [Out(s0.dtype, (None,)), Out(s0.dtype, (None,))]
    r0, r1 = _bga_kernel(np, a, b)  # shapes that do not broadcast: ValueError, named
    return [Out(s0.dtype, r0.shape), Out(s0.dtype, r1.shape)]


def _bga_kernel(xp: Any, s0: Any, s1: Any) -> tuple[Any, Any]:
    r0, r1 = _broadcast_axes(tuple(s0.tolist()), tuple(s1.tolist()), s0.dtype.str)
    return (r0, r1) if xp is np else (xp.asarray(r0), xp.asarray(r1))


@functools.lru_cache(maxsize=256)
def _broadcast_axes(a: tuple[int, ...], b: tuple[int, ...], dtype: str) -> tuple[Any, Any]:
    """The axes shapes ``a`` and ``b`` were broadcast along, as read-only arrays (cached:
    a training loop asks the same few questions every step).

    >>> [r.tolist() for r in _broadcast_axes((100, 10), (10,), "<i4")]
    [[], [0]]
    """
    n = max(len(a), len(b))
    pa, pb = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    r0: list[int] = []
    r1: list[int] = []
    for i, (p, q) in enumerate(zip(pa, pb)):
        if p == q:
            continue
        if p == 1:
            r0.append(i)
        elif q == 1:
            r1.append(i)
        else:
            raise ValueError(f"Incompatible shapes: {list(a)} vs. {list(b)}")
    out = np.array(r0, dtype=dtype), np.array(r1, dtype=dtype)
    for r in out:
        r.flags.writeable = False
    return out


op(
    "BroadcastGradientArgs",
    ("s0", "s1"),
    (),
    _bga_infer,
    _bga_kernel,
    grad=NOT_DIFFERENTIABLE,
    doc="The axes each input was broadcast along, to sum a gradient over.",
    num_outputs=2,
)


def unbroadcast(grad: Tensor, x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
    """Sum ``grad`` (shaped like ``x op y``) back to the shapes of ``x`` and ``y``.

    Static shapes give a plain ``Sum`` + ``Reshape`` (or nothing when no
    broadcast happened); unknown shapes use the BroadcastGradientArgs op.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     x = fb.placeholder(fb.float32, [None, 3])
    ...     dx, dy = unbroadcast(fb.ones([2, 3]), x, fb.ones([1]))
    ...     dx.op.type, dy.op.type
    ('Reshape', 'Reshape')
    """
    return _sum_to(grad, x, y, 0), _sum_to(grad, y, x, 1)


def _sum(grad: Tensor, axes: Any) -> Tensor:
    if not isinstance(axes, Tensor):
        axes = tensor(axes, dtype=dtypes.int32)
    return make1("Sum", (grad, axes), {"keep_dims": False})


def _sum_to(grad: Tensor, x: Tensor, other: Tensor, which: int) -> Tensor:
    gs, xs, os_ = grad._shape, x._shape, other._shape
    if gs is not None and xs is not None and None not in gs and None not in xs:
        if gs == xs:
            return grad
        lead = len(gs) - len(xs)
        axes = list(range(lead)) + [
            lead + i for i, d in enumerate(xs) if d == 1 and gs[lead + i] != 1
        ]
        summed = _sum(grad, axes) if axes else grad
        return reshape(summed, list(xs))
    if xs is not None and os_ is not None and xs == os_ and None not in xs:
        return grad
    sx, so = shape(x), shape(other)
    pair = (sx, so) if which == 0 else (so, sx)
    rx = make("BroadcastGradientArgs", pair).outputs[which]
    return reshape(_sum(grad, rx), sx)
