"""Reordering: ``transpose`` permutes dimensions, ``reverse`` flips them.

``Transpose`` takes its ``perm`` as an int32 input tensor (see
``_shape_inputs``); known, it gives the exact static shape and a bad
permutation fails at build time.  Its gradient transposes back by the inverse
permutation, which ``InvertPermutation`` computes as graph (folded to a
constant when ``perm`` is one), so it also works for a computed ``perm``.
``ReverseV2`` flips the dimensions listed in ``axis`` and is its own
gradient.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     x = fb.placeholder(fb.float32, [None, 3])
    ...     fb.transpose(fb.reverse(x, [1])).shape.as_list()
    [3, None]
"""

from __future__ import annotations

import builtins
from typing import Any

from flowbook.framework.errors import InvalidArgumentError
from flowbook.framework.graph import name_scope
from flowbook.framework.registry import NOT_DIFFERENTIABLE, Out, op
from flowbook.framework.tensor import Operation, Tensor
from flowbook.framework.tensor_shape import fmt
from flowbook.ops._builder import make1, same_as_input
from flowbook.ops._shape_inputs import (
    check_int,
    const_ints,
    host_ints,
    int_input,
    norm_axis,
    per_dim_ints,
)
from flowbook.ops.array import shape_ops
from flowbook.ops.array.constant_op import convert_to_tensor

__all__ = ["invert_permutation", "reverse", "reverse_v2", "transpose"]


# ----------------------------------------------------------------- Transpose
def _transpose_infer(x: Tensor, perm: Tensor) -> Out:
    p, unknown = per_dim_ints("Transpose", "perm", x, perm)
    if p is None:
        return Out(x.dtype, unknown)
    shape = x._shape
    normed = [a + len(p) if a < 0 else a for a in p]
    if sorted(normed) != list(builtins.range(len(p))):
        raise ValueError(f"perm {p} is not a permutation of 0..{len(p) - 1}")
    return Out(x.dtype, (None,) * len(p) if shape is None else tuple(shape[a] for a in normed))


def _transpose_kernel(xp: Any, x: Any, perm: Any) -> Any:
    try:
        return xp.transpose(x, host_ints(perm))
    except ValueError as err:
        raise InvalidArgumentError(
            None, None, f"transpose of shape {list(x.shape)}: {err}"
        ) from None


def _transpose_grad(op: Any, grad: Tensor) -> list[Tensor | None]:
    """Transpose back: the inverse permutation (folded to a constant when ``perm`` is one)."""
    return [transpose(grad, invert_permutation(op.inputs[1])), None]


op(
    "Transpose",
    ("x", "perm"),
    infer=_transpose_infer,
    kernel=_transpose_kernel,
    host_inputs=(1,),
    type_attrs={"T": 0, "Tperm": 1},
    grad=_transpose_grad,
)


def transpose(a: Any, perm: Any = None, name: str = "transpose", conjugate: bool = False) -> Tensor:
    """Permute the dimensions of ``a``; without ``perm``, reverse them.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.transpose(fb.zeros([2, 3, 4]), [0, 2, 1]).shape.as_list()
    [2, 4, 3]
    """
    with name_scope(name, "transpose") as scope:
        x = convert_to_tensor(a, name="a")
        if perm is None and x._shape is not None:
            perm = list(builtins.range(len(x._shape) - 1, -1, -1))
        elif perm is None:
            perm = reverse(shape_ops.range(0, shape_ops.rank(x)), [0])
        return make1("Transpose", [x, int_input(perm, "perm")], name=scope)


# ---------------------------------------------------------- InvertPermutation
def _invert_permutation_infer(x: Tensor) -> Out:
    check_int("InvertPermutation", "x", x)
    if x._shape is not None and len(x._shape) != 1:
        raise ValueError(f"x must be a vector, got shape {fmt(x._shape)}")
    return same_as_input(x)


def _invert_permutation_kernel(xp: Any, x: Any) -> Any:
    p = host_ints(x)
    if sorted(p) != list(range(len(p))):
        raise InvalidArgumentError(None, None, f"{list(p)} is not a permutation of 0..{len(p) - 1}")
    out = xp.empty_like(x)
    out[x] = xp.arange(len(p), dtype=x.dtype)
    return out


op(
    "InvertPermutation",
    ("x",),
    infer=_invert_permutation_infer,
    kernel=_invert_permutation_kernel,
    grad=NOT_DIFFERENTIABLE,
)


def invert_permutation(x: Any, name: str | None = None) -> Tensor:
    """The permutation ``y`` with ``y[x[i]] = i``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.invert_permutation([2, 0, 1])).tolist()
    [1, 2, 0]
    """
    with name_scope(name, "InvertPermutation") as scope:
        return make1("InvertPermutation", [int_input(x, "x")], name=scope)


# ----------------------------------------------------------------- ReverseV2
def _reverse_infer(x: Tensor, axis: Tensor) -> Out:
    check_int("ReverseV2", "axis", axis)
    axes = const_ints(axis)
    if axes is not None and x._shape is not None:
        normed = [norm_axis(a, len(x._shape)) for a in axes]
        if len(set(normed)) != len(normed):
            raise ValueError(f"axis {axes} names a dimension more than once")
    return same_as_input(x)


def _reverse_kernel(xp: Any, x: Any, axis: Any) -> Any:
    return xp.flip(x, axis=tuple(a % x.ndim for a in host_ints(axis)))


def _reverse_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    return [reverse(grad, op.inputs[1]), None]


op(
    "ReverseV2",
    ("tensor", "axis"),
    infer=_reverse_infer,
    kernel=_reverse_kernel,
    host_inputs=(1,),
    type_attrs={"T": 0, "Tidx": 1},
    grad=_reverse_grad,
)


def reverse(tensor: Any, axis: Any, name: str | None = None) -> Tensor:
    """Reverse the order of elements along each dimension in ``axis``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.reverse(fb.zeros([2, 3]), [1]).op.type
    'ReverseV2'
    """
    with name_scope(name, "ReverseV2") as scope:
        x = convert_to_tensor(tensor, name="tensor")
        return make1("ReverseV2", [x, int_input(axis, "axis")], name=scope)


reverse_v2 = reverse
