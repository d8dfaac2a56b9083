"""Gradients of the joining ops, and the ops that array gradients are built of.

Most array ops declare their gradient beside their registration; this module
holds the rest.  First the helper ops, with TensorFlow's names, which exist
to express a backward pass as graph:

* ``InvertPermutation``: the inverse of a ``Transpose``'s ``perm``;
* ``ConcatOffset``: where each input of a ``ConcatV2`` starts, from dynamic
  shapes, so its gradient is one ``Slice`` per input;
* ``UnsortedSegmentSum``: adds rows into segments; the dense gradient of
  ``GatherV2`` (TF builds an ``IndexedSlices``), so repeated indices add up;
* ``StridedSliceGrad``: scatters a ``StridedSlice``'s gradient into zeros of
  the input shape, read with the same five masks;
* ``MirrorPadGrad``: folds the reflected border of a gradient back in.

Then the gradients of ``joining_ops`` (that file is full): ConcatV2, Pack,
Tile, Pad, PadV2, MirrorPad and Fill, and ``no_gradient`` for the ops whose
result does not vary smoothly with a float input.  Each gradient works with
unknown static shapes (it asks ``shape`` at run time); when shapes are known
``constant_value`` folds those shape computations at build time, so the
results have full static shapes.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     x = fb.constant([1.0, 2.0])
    ...     (g,) = fb.gradients(fb.concat([x, x, x], 0), [x])
    ...     with fb.Session() as s:
    ...         s.run(g).tolist()
    [3.0, 3.0]
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from flowbook.errors import InvalidArgumentError
from flowbook.graph import name_scope
from flowbook.ops._builder import make, make1, same_as_input
from flowbook.ops.array_ops import (
    rank,
    reshape,
    shape,
    size,
    slice,
    stack,
    strided_slice,
    transpose,
    unstack,
)
from flowbook.ops.constant_op import convert_to_tensor, partial_shape_value
from flowbook.ops.slicing import (
    _MASKS,
    _index_key,
    check_int,
    const_int,
    const_ints,
    host_ints,
    int_input,
)
from flowbook.registry import NOT_DIFFERENTIABLE, Out, no_gradient, register_gradient, register_op
from flowbook.tensor import Operation, Tensor
from flowbook.tensor_shape import fmt

__all__ = ["invert_permutation", "unsorted_segment_sum"]

_NO_GRAD = {"grad": NOT_DIFFERENTIABLE}


# ---------------------------------------------------------- InvertPermutation
def _invert_permutation_infer(x: Tensor) -> Out:
    check_int("InvertPermutation", "x", x)
    if x._shape is not None and len(x._shape) != 1:
        raise ValueError(f"x must be a vector, got shape {fmt(x._shape)}")
    return same_as_input(x)


@register_op("InvertPermutation", ("x",), infer=_invert_permutation_infer, **_NO_GRAD)
def _invert_permutation_kernel(xp: Any, x: Any) -> Any:
    p = host_ints(x)
    if sorted(p) != list(range(len(p))):
        raise InvalidArgumentError(None, None, f"{list(p)} is not a permutation of 0..{len(p) - 1}")
    out = xp.empty_like(x)
    out[x] = xp.arange(len(p), dtype=x.dtype)
    return out


def invert_permutation(x: Any, name: str | None = None) -> Tensor:
    """The permutation ``y`` with ``y[x[i]] = i``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.invert_permutation([2, 0, 1])).tolist()
    [1, 2, 0]
    """
    with name_scope(name, "InvertPermutation") as scope:
        return make1("InvertPermutation", [int_input(x, "x")], name=scope)


# --------------------------------------------------------------- ConcatOffset
def _concat_offset_infer(concat_dim: Tensor, *shapes: Tensor, N: int) -> list[Out]:
    check_int("ConcatOffset", "concat_dim", concat_dim)
    return [Out(s.dtype, s._shape) for s in shapes]


@register_op(
    "ConcatOffset", ("concat_dim", "*shape"), infer=_concat_offset_infer, attrs=("N",), **_NO_GRAD
)
def _concat_offset_kernel(xp: Any, concat_dim: Any, *shapes: Any, N: int) -> Any:
    dims = [host_ints(s) for s in shapes]
    r = len(dims[0])
    axis = int(concat_dim)
    if not -r <= axis < r or any(len(d) != r for d in dims):
        raise InvalidArgumentError(None, None, f"Cannot concatenate shapes {dims} on axis {axis}")
    axis %= r
    offsets, at = [], 0
    for d in dims:
        if d[:axis] != dims[0][:axis] or d[axis + 1 :] != dims[0][axis + 1 :]:
            raise InvalidArgumentError(None, None, f"Shapes {dims} differ off the axis {axis}")
        offsets.append(
            xp.asarray([at if i == axis else 0 for i in range(r)], dtype=shapes[0].dtype)
        )
        at += d[axis]
    return offsets[0] if N == 1 else tuple(offsets)  # one output: the bare array


# --------------------------------------------------------- UnsortedSegmentSum
def _segment_sum_infer(data: Tensor, segment_ids: Tensor, num_segments: Tensor) -> Out:
    check_int("UnsortedSegmentSum", "segment_ids", segment_ids)
    check_int("UnsortedSegmentSum", "num_segments", num_segments)
    d, i, n = data._shape, segment_ids._shape, const_int(num_segments)
    if d is None or i is None:
        return Out(data.dtype, None)
    if len(i) > len(d) or any(a is not None and b is not None and a != b for a, b in zip(i, d)):
        raise ValueError(
            f"segment_ids of shape {fmt(i)} must be a prefix of the data shape {fmt(d)}"
        )
    return Out(data.dtype, (n, *d[len(i) :]))


@register_op(
    "UnsortedSegmentSum",
    ("data", "segment_ids", "num_segments"),
    infer=_segment_sum_infer,
    host_inputs=(2,),
)
def _segment_sum_kernel(xp: Any, data: Any, segment_ids: Any, num_segments: Any) -> Any:
    """``out[segment_ids[i]] += data[i]`` (negative ids are dropped), as one ``bincount``."""
    n, ids = int(num_segments), segment_ids.ravel().astype(np.int64)
    inner = data.shape[segment_ids.ndim :]
    k = math.prod(inner)
    if ids.size and int(ids.max()) >= n:
        raise InvalidArgumentError(None, None, f"segment id {int(ids.max())} is not < {n}")
    keep = ids >= 0
    slots = (ids[:, None] * k + xp.arange(k))[keep].ravel()  # flat index into out
    rows = data.reshape(ids.size, k)[keep].ravel()

    def add(w: Any) -> Any:
        return xp.bincount(slots, weights=w, minlength=n * k)

    total = add(rows.real) + 1j * add(rows.imag) if rows.dtype.kind == "c" else add(rows)
    return total.astype(data.dtype).reshape((n, *inner))


@register_gradient("UnsortedSegmentSum")
def _segment_sum_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    """Gather the gradient at each id; rows with a negative (dropped) id get zeros."""
    from flowbook.ops import array_ops, math_ops

    data, ids = op.inputs[0], reshape(op.inputs[1], [-1])
    rows = array_ops.gather(grad, math_ops.maximum(ids, 0))
    rows = array_ops.where(math_ops.greater_equal(ids, 0), rows, array_ops.zeros_like(rows))
    return [reshape(rows, shape(data)), None, None]


def unsorted_segment_sum(
    data: Any, segment_ids: Any, num_segments: Any, name: str | None = None
) -> Tensor:
    """Sum the slices of ``data`` into ``num_segments`` rows by ``segment_ids``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.unsorted_segment_sum([1.0, 2.0, 4.0], [1, 0, 1], 3)).tolist()
    [2.0, 5.0, 0.0]
    """
    with name_scope(name, "UnsortedSegmentSum") as scope:
        x = convert_to_tensor(data, name="data")
        ids = int_input(segment_ids, "segment_ids")
        return make1(
            "UnsortedSegmentSum", [x, ids, int_input(num_segments, "num_segments")], name=scope
        )


# ------------------------------------------------------------ StridedSliceGrad
def _strided_slice_grad_infer(
    shape: Tensor, begin: Tensor, end: Tensor, strides: Tensor, dy: Tensor, **masks: int
) -> Out:
    check_int("StridedSliceGrad", "shape", shape)
    return Out(dy.dtype, partial_shape_value(shape))


@register_op(
    "StridedSliceGrad",
    ("shape", "begin", "end", "strides", "dy"),
    infer=_strided_slice_grad_infer,
    attrs=_MASKS,
    host_inputs=(0, 1, 2, 3),
)
def _strided_slice_grad_kernel(
    xp: Any, shape: Any, begin: Any, end: Any, strides: Any, dy: Any, **masks: int
) -> Any:
    key = _index_key(host_ints(begin), host_ints(end), host_ints(strides), **masks)
    dx = xp.zeros(host_ints(shape), dtype=dy.dtype)
    try:
        dx[key] = dy  # basic indexing never repeats an element: assignment is the scatter
    except (IndexError, ValueError) as err:
        raise InvalidArgumentError(
            None, None, f"gradient of slice {key} of shape {list(dx.shape)}: {err}"
        ) from None
    return dx


@register_gradient("StridedSliceGrad")
def _strided_slice_grad_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    _, begin, end, strides, _ = op.inputs
    return [None, None, None, None, strided_slice(grad, begin, end, strides, **op.attrs)]


# ------------------------------------------------------------------- ConcatV2
@register_gradient("ConcatV2")
def _concat_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    """One Slice of the gradient per input, at the offsets ConcatOffset finds at run time."""
    values, axis = op.inputs[:-1], op.inputs[-1]
    sizes = [shape(v) for v in values]
    offsets = make("ConcatOffset", [axis, *sizes], {"N": len(sizes)}).outputs
    return [slice(grad, o, s) for o, s in zip(offsets, sizes)] + [None]


@register_gradient("Pack")
def _pack_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    return unstack(grad, num=op.attrs["N"], axis=op.attrs["axis"])


@register_gradient("Tile")
def _tile_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    """Reshape to ``[m0, d0, m1, d1, ...]`` and sum over the ``m`` axes."""
    from flowbook.ops import array_ops, math_ops

    x, multiples = op.inputs
    split_shape = reshape(transpose(stack([multiples, shape(x, out_type=multiples.dtype)])), [-1])
    axes = array_ops.range(0, size(split_shape), 2)
    dx = math_ops.reduce_sum(reshape(grad, split_shape), axes)
    dx.set_shape(x._shape)
    return [dx, None]


# ------------------------------------------------------- Pad, PadV2, MirrorPad
def _pad_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    """The slice of the gradient where the input was: from ``paddings[:, 0]``, shape of x."""
    x, paddings = op.inputs[:2]
    before = reshape(slice(paddings, [0, 0], stack([rank(x), 1])), [-1])
    return [slice(grad, before, shape(x, out_type=paddings.dtype))] + [None] * (len(op.inputs) - 1)


register_gradient("Pad")(_pad_grad)
register_gradient("PadV2")(_pad_grad)  # as in TF, none for constant_values


def _mirror_pad_grad_infer(x: Tensor, paddings: Tensor, mode: str) -> Out:
    check_int("MirrorPadGrad", "paddings", paddings)
    p, s = const_ints(paddings), x._shape
    if s is None or p is None:
        return Out(x.dtype, None if s is None else (None,) * len(s))
    rows = zip(p[0::2], p[1::2])
    return Out(x.dtype, tuple(None if d is None else d - a - b for d, (a, b) in zip(s, rows)))


@register_op(
    "MirrorPadGrad",
    ("input", "paddings"),
    infer=_mirror_pad_grad_infer,
    attrs=("mode",),
    host_inputs=(1,),
)
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


@register_gradient("MirrorPad")
def _mirror_pad_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    attrs = {"mode": op.attrs["mode"]}
    return [make1("MirrorPadGrad", [grad, op.inputs[1]], attrs), None]


@register_gradient("MirrorPadGrad")
def _mirror_pad_grad_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    return [make1("MirrorPad", [grad, op.inputs[1]], {"mode": op.attrs["mode"]}), None]


# ------------------------------------------------------------- Fill and the rest
@register_gradient("Fill")
def _fill_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    from flowbook.ops import math_ops

    return [None, math_ops.reduce_sum(grad)]


no_gradient("OneHot", "ZerosLike", "OnesLike")
