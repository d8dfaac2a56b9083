"""SelectV2 (``where_v2``): pick from ``x`` where ``condition``, else from ``y``, all three
broadcast together with numpy's rules (TF1's ``Select`` needs equal shapes or a vector).

Its gradient routes ``g`` through the same mask to each branch and sums it back to the
branch's shape over the axes that were broadcast (``BroadcastGradientArgs`` finds them
from the shapes when the run comes, so unknown shapes work); the condition gets none.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.where_v2([[True], [False]], [1, 2], 0)).tolist()
    [[1, 2], [0, 0]]
"""

from __future__ import annotations

from typing import Any

from flowbook.framework import dtypes
from flowbook.framework.registry import Out, op
from flowbook.framework.tensor import Operation, Tensor
from flowbook.framework.tensor_shape import broadcast, fmt
from flowbook.ops._builder import make, make1, operands, same_dtype, tensor
from flowbook.ops.array import array_ops
from flowbook.ops.math.reduction_ops import reduce_sum

__all__ = ["where_v2"]


def _infer(condition: Tensor, t: Tensor, e: Tensor) -> Out:
    if condition.dtype is not dtypes.bool:
        raise TypeError(f"condition must be bool, got {condition.dtype.name}")
    dt = same_dtype("SelectV2", ("t", "e"), t, e)
    try:
        return Out(dt, broadcast(broadcast(condition._shape, t._shape), e._shape))
    except ValueError:
        shapes = ", ".join(fmt(s._shape) for s in (condition, t, e))
        raise ValueError(f"condition, t and e do not broadcast together: {shapes}") from None


def sum_to_shape_of(grad: Tensor, x: Tensor) -> Tensor:
    """``grad`` summed over the axes along which ``x`` was broadcast to ``grad``'s shape."""
    if x._shape is not None and x._shape == grad._shape and None not in x._shape:
        return grad
    sx, sg = array_ops.shape(x), array_ops.shape(grad)
    axes = make("BroadcastGradientArgs", (sx, sg)).outputs[0]
    return array_ops.reshape(reduce_sum(grad, axes), sx)


def _select_v2_grad(op: Operation, g: Tensor) -> tuple[None, Tensor, Tensor]:
    c, x, y = op.inputs
    zeros = array_ops.zeros_like(g)
    gx = make1("SelectV2", (c, g, zeros))
    gy = make1("SelectV2", (c, zeros, g))
    return None, sum_to_shape_of(gx, x), sum_to_shape_of(gy, y)


op(
    "SelectV2",
    ("condition", "t", "e"),
    (),
    _infer,
    lambda xp, condition, t, e: xp.where(condition, t, e),
    type_attrs={"T": 1},
    grad=_select_v2_grad,
)


def where_v2(condition: Any, x: Any = None, y: Any = None, name: str | None = None) -> Tensor:
    """``x`` where ``condition``, else ``y``, broadcast together; with ``x`` and ``y`` both
    None, the coordinates of the True elements (as ``where``).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.where_v2([True, False], 1.0, [5.0, 6.0])).tolist()
    [1.0, 6.0]
    """
    if x is None and y is None:
        return array_ops.where(condition, name=name)
    if x is None or y is None:
        raise ValueError("x and y must both be given, or neither")
    t, e = operands(x, y)
    return make1("SelectV2", (tensor(condition, dtype=dtypes.bool), t, e), name=name)
