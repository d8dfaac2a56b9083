"""Growing a tensor outward: ``tile`` repeats it, ``pad`` surrounds it.

``Tile`` repeats a tensor ``multiples[i]`` times along each dimension;
``Pad``/``PadV2`` surround it with zeros or a constant, ``MirrorPad`` with
its own reflection (REFLECT leaves the edge out, SYMMETRIC repeats it).
``multiples`` and ``paddings`` are int32 inputs read with
``constant_value``: known, they give exact shapes and bad values fail at
build time, else the rank only.

The gradients undo the growth from dynamic shapes: Tile's reshapes the
gradient to ``[m0, d0, m1, d1, ...]`` and sums the ``m`` axes; Pad's slices
out where the input was; MirrorPad's is ``MirrorPadGrad``, an op of its own
that folds the reflected border back onto the entries it copied.  The sum is
built by type (``make1("Sum", ...)``) as in ``fill_ops``: the math modules
import the array modules, never the reverse.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     x = fb.placeholder(fb.float32, [None, 3])
    ...     fb.pad(fb.tile(x, [2, 1]), [[1, 1], [0, 2]]).shape.as_list()
    [None, 5]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowbook.framework.errors import InvalidArgumentError
from flowbook.framework.graph import name_scope
from flowbook.framework.registry import Out, op
from flowbook.framework.tensor import Operation, Tensor
from flowbook.framework.tensor_shape import fmt
from flowbook.ops._builder import make1
from flowbook.ops._shape_inputs import (
    check_int,
    const_ints,
    host_ints,
    int_input,
    is_tensor,
    per_dim_ints,
)
from flowbook.ops.array.concat_ops import stack
from flowbook.ops.array.constant_op import constant_value, convert_to_tensor
from flowbook.ops.array.shape_ops import range, rank, reshape, shape, size
from flowbook.ops.array.slicing import slice
from flowbook.ops.array.transpose_ops import transpose

__all__ = ["pad", "tile"]


# ------------------------------------------------------------------------ Tile
def _tile_infer(x: Tensor, multiples: Tensor) -> Out:
    m, unknown = per_dim_ints("Tile", "multiples", x, multiples)
    if m is None:
        return Out(x.dtype, unknown)
    shape = x._shape
    if any(k < 0 for k in m):
        raise ValueError(f"multiples must be non-negative, got {m}")
    if shape is None:
        return Out(x.dtype, (None,) * len(m))
    return Out(x.dtype, tuple(None if d is None else d * k for d, k in zip(shape, m)))


def _tile_kernel(xp: Any, x: Any, multiples: Any) -> Any:
    reps = host_ints(multiples)
    if len(reps) != x.ndim:
        raise InvalidArgumentError(None, None, f"multiples {list(reps)} must have {x.ndim} entries")
    return xp.tile(x, reps)


def _tile_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    """Reshape to ``[m0, d0, m1, d1, ...]`` and sum over the ``m`` axes."""
    x, multiples = op.inputs
    split_shape = reshape(transpose(stack([multiples, shape(x, out_type=multiples.dtype)])), [-1])
    axes = range(0, size(split_shape), 2)
    dx = make1("Sum", [reshape(grad, split_shape), axes], {"keep_dims": False})
    dx.set_shape(x._shape)
    return [dx, None]


op(
    "Tile",
    ("input", "multiples"),
    infer=_tile_infer,
    kernel=_tile_kernel,
    host_inputs=(1,),
    type_attrs={"T": 0, "Tmultiples": 1},
    grad=_tile_grad,
)


def tile(input: Any, multiples: Any, name: str | None = None) -> Tensor:
    """Repeat ``input`` ``multiples[i]`` times along each dimension ``i``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.tile(fb.zeros([2, 3]), [2, 1]).shape.as_list()
    [4, 3]
    """
    with name_scope(name, "Tile") as scope:
        x = convert_to_tensor(input, name="input")
        return make1("Tile", [x, int_input(multiples, "multiples")], name=scope)


# ------------------------------------------------------- Pad, PadV2, MirrorPad
def _pad_infer(
    x: Tensor, paddings: Tensor, constant_values: Tensor | None = None, mode: str = "CONSTANT"
) -> Out:
    check_int("Pad", "paddings", paddings)
    shape, ps = x._shape, paddings._shape
    if ps is not None and (len(ps) != 2 or ps[1] not in (2, None)):
        raise ValueError(f"paddings must be a matrix with 2 columns, got shape {fmt(ps)}")
    if shape is not None and ps is not None and ps[0] not in (None, len(shape)):
        raise ValueError(
            f"paddings of shape {fmt(ps)} must have one row per dimension of the input {fmt(shape)}"
        )
    if constant_values is not None and constant_values.dtype is not x.dtype:
        raise TypeError(
            f"constant_values has type {constant_values.dtype.name}, expected {x.dtype.name}"
        )
    p = constant_value(paddings)
    if p is None:
        n = len(shape) if shape is not None else None if ps is None else ps[0]
        return Out(x.dtype, None if n is None else (None,) * n)
    rows = np.asarray(p, dtype=np.int64).reshape(-1, 2).tolist()
    if any(a < 0 or b < 0 for a, b in rows):
        raise ValueError(f"paddings must be non-negative, got {rows}")
    if shape is None:
        return Out(x.dtype, (None,) * len(rows))
    for i, ((a, b), d) in enumerate(zip(rows, shape)):
        limit = None if d is None or mode == "CONSTANT" else d - (mode == "REFLECT")
        if limit is not None and max(a, b) > limit:
            raise ValueError(
                f"{mode} paddings [{a}, {b}] of dimension {i} must be at most {limit} "
                f"(shape {fmt(shape)})"
            )
    return Out(x.dtype, tuple(None if d is None else d + a + b for (a, b), d in zip(rows, shape)))


def _pad_widths(x: Any, paddings: Any) -> list[tuple[int, int]]:
    rows = [tuple(r) for r in paddings.tolist()]
    if len(rows) != x.ndim or any(min(r) < 0 for r in rows):
        raise InvalidArgumentError(
            None, None, f"paddings {rows} do not fit the input shape {list(x.shape)}"
        )
    return rows


def _pad_kernel(xp: Any, x: Any, paddings: Any) -> Any:
    return xp.pad(x, _pad_widths(x, paddings), mode="constant")


def _pad_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    """The slice of the gradient where the input was: from ``paddings[:, 0]``, shape of x."""
    x, paddings = op.inputs[:2]
    before = reshape(slice(paddings, [0, 0], stack([rank(x), 1])), [-1])
    return [slice(grad, before, shape(x, out_type=paddings.dtype))] + [None] * (len(op.inputs) - 1)


op(
    "Pad",
    ("input", "paddings"),
    infer=_pad_infer,
    kernel=_pad_kernel,
    host_inputs=(1,),
    grad=_pad_grad,
    type_attrs={"T": 0, "Tpaddings": 1},
)


def _padv2_kernel(xp: Any, x: Any, paddings: Any, constant_values: Any) -> Any:
    return xp.pad(
        x, _pad_widths(x, paddings), mode="constant", constant_values=constant_values.item()
    )


op(
    "PadV2",
    ("input", "paddings", "constant_values"),
    infer=_pad_infer,
    kernel=_padv2_kernel,
    host_inputs=(1, 2),
    grad=_pad_grad,  # as in TF, none for constant_values
    type_attrs={"T": 0, "Tpaddings": 1},
)


def _mirror_pad_kernel(xp: Any, x: Any, paddings: Any, mode: str) -> Any:
    return xp.pad(x, _pad_widths(x, paddings), mode=mode.lower())


def pad(
    tensor: Any,
    paddings: Any,
    mode: str = "CONSTANT",
    name: str | None = None,
    constant_values: Any = 0,
) -> Tensor:
    """Pad ``tensor`` by ``paddings[i] = [before, after]`` along each dimension ``i``.

    ``mode`` is CONSTANT (with ``constant_values``), REFLECT or SYMMETRIC.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.pad(fb.zeros([2, 3]), [[1, 1], [0, 2]]).shape.as_list()
    [4, 5]
    """
    mode = mode.upper()
    if mode not in ("CONSTANT", "REFLECT", "SYMMETRIC"):
        raise ValueError(f"Unknown padding mode: {mode}")
    default = "Pad" if mode == "CONSTANT" else "MirrorPad"
    with name_scope(name, default) as scope:
        x = convert_to_tensor(tensor, name="input")
        p = int_input(paddings, "paddings")
        if mode != "CONSTANT":
            return make1("MirrorPad", [x, p], {"mode": mode}, name=scope)
        if not is_tensor(constant_values) and np.all(np.asarray(constant_values) == 0):
            return make1("Pad", [x, p], name=scope)
        c = convert_to_tensor(constant_values, dtype=x.dtype, name="constant_values")
        return make1("PadV2", [x, p, c], name=scope)


def _mirror_pad_grad_infer(x: Tensor, paddings: Tensor, mode: str) -> Out:
    check_int("MirrorPadGrad", "paddings", paddings)
    p, s = const_ints(paddings), x._shape
    if s is None or p is None:
        return Out(x.dtype, None if s is None else (None,) * len(s))
    rows = zip(p[0::2], p[1::2])
    return Out(x.dtype, tuple(None if d is None else d - a - b for d, (a, b) in zip(s, rows)))


def _mirror_pad_grad_kernel(xp: Any, x: Any, paddings: Any, mode: str) -> Any:
    """Per dimension: the middle, plus each border flipped onto the entries it copied."""
    skip = 1 if mode == "REFLECT" else 0  # REFLECT does not repeat the edge, SYMMETRIC does
    for axis, (a, b) in enumerate(paddings.tolist()):
        g = xp.moveaxis(x, axis, 0)
        n = g.shape[0] - a - b
        out = g[a : a + n].copy()
        out[skip : skip + a] += g[:a][::-1]
        out[n - skip - b : n - skip] += g[a + n :][::-1]
        x = xp.moveaxis(out, 0, axis)
    return x


def _mirror_pad_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    attrs = {"mode": op.attrs["mode"]}
    return [make1("MirrorPadGrad", [grad, op.inputs[1]], attrs), None]


op(
    "MirrorPad",
    ("input", "paddings"),
    infer=_pad_infer,
    attrs=("mode",),
    kernel=_mirror_pad_kernel,
    host_inputs=(1,),
    type_attrs={"T": 0, "Tpaddings": 1},
    grad=_mirror_pad_grad,
)


def _mirror_pad_grad_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    return [make1("MirrorPad", [grad, op.inputs[1]], {"mode": op.attrs["mode"]}), None]


op(
    "MirrorPadGrad",
    ("input", "paddings"),
    infer=_mirror_pad_grad_infer,
    attrs=("mode",),
    kernel=_mirror_pad_grad_kernel,
    host_inputs=(1,),
    grad=_mirror_pad_grad_grad,
)
