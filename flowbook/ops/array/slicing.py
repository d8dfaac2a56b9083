"""Taking parts of tensors by position: ``slice``, ``strided_slice`` and ``tensor[...]``.

Shape-like arguments (``begin``, ``size``, ``end``, ``strides``) are int32
*input* tensors, built as Const by the wrappers exactly as TensorFlow's
GraphDefs have them (see ``_shape_inputs``).  ``infer`` reads them with
``constant_value``: a constant slice gets a fully known static shape, a
computed one still builds, with unknown dims.  Kernels read them back as
Python ints (``.tolist()`` works on numpy and CuPy arrays alike).

``StridedSlice`` keeps TensorFlow's encoding, ``begin/end/strides`` and five
bit masks.  :func:`slice_helper` (``tensor[...]``) writes that encoding from
a Python key; the kernel turns it back into an index tuple and lets ``xp``'s
basic indexing do the work, so numpy and CuPy run the same code and Python's
slice rules (clamping, negative indices and steps) hold by construction.

The gradients put the slice back into zeros of the input's shape: Slice's
pads it (``begin`` before, the rest after), StridedSlice's is
``StridedSliceGrad``, an op of its own that scatters it with the same masks.
This module sits above ``concat_ops`` (its gradients build paddings with
concat and stack) and below ``tile_pad_ops``, whose Pad gradient slices, so
the Pad and the subtraction here are built by type (``make1("Pad", ...)``).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.zeros([4, 5, 6])[1:, ..., ::2].shape.as_list()
    [3, 5, 3]
"""

from __future__ import annotations

import builtins  # the ``slice`` wrapper shadows the builtin here
import numbers
from typing import Any

import numpy as np

from flowbook.framework.errors import InvalidArgumentError
from flowbook.framework.graph import name_scope
from flowbook.framework.registry import Out, op
from flowbook.framework.tensor import Operation, Tensor
from flowbook.framework.tensor_shape import Shape, fmt
from flowbook.ops._builder import make1
from flowbook.ops._shape_inputs import (
    INT_TYPES,
    check_int,
    const_int,
    const_ints,
    host_ints,
    int_input,
    is_tensor,
    vector_len,
)
from flowbook.ops.array.concat_ops import concat, stack
from flowbook.ops.array.constant_op import convert_to_tensor, partial_shape_value
from flowbook.ops.array.shape_ops import rank, reshape, shape

__all__ = [
    "newaxis",
    "slice",
    "strided_slice",
]


newaxis = None  # ``x[:, fb.newaxis]`` inserts a dimension of size 1

_UNKNOWN = object()  # a begin/end value the graph does not determine statically


# --------------------------------------------------------------------- Slice
def _slice_infer(x: Tensor, begin: Tensor, size: Tensor) -> Out:
    check_int("Slice", "begin", begin)
    check_int("Slice", "size", size)
    b, sz, shape = const_ints(begin), const_ints(size), x._shape
    n = len(shape) if shape is not None else (vector_len(begin) or vector_len(size))
    if n is None:
        return Out(x.dtype, None)
    for what, v in (("begin", b), ("size", sz)):
        if v is not None and len(v) != n:
            raise ValueError(
                f"Expected {what} to have {n} elements (one per dimension of {fmt(shape)}), got {v}"
            )
    out: list[int | None] = []
    for i in range(n):
        dim = shape[i] if shape is not None else None
        bi = b[i] if b is not None else None
        si = sz[i] if sz is not None else None
        if bi is not None and (bi < 0 or (dim is not None and bi > dim)):
            raise ValueError(
                f"Expected begin[{i}] in [0, {dim}], but got {bi} (input shape {fmt(shape)})"
            )
        if si is not None and si < -1:
            raise ValueError(f"Expected size[{i}] >= -1, but got {si}")
        if si == -1:
            out.append(None if dim is None or bi is None else dim - bi)
        else:
            if si is not None and bi is not None and dim is not None and bi + si > dim:
                raise ValueError(
                    f"Expected size[{i}] in [0, {dim - bi}], but got {si} "
                    f"(begin {b}, size {sz}, input shape {fmt(shape)})"
                )
            out.append(si)
    return Out(x.dtype, tuple(out))


def _slice_kernel(xp: Any, x: Any, begin: Any, size: Any) -> Any:
    key = []
    for i, (b, s) in enumerate(zip(host_ints(begin), host_ints(size))):
        end = x.shape[i] if s == -1 else b + s
        if not 0 <= b <= end <= x.shape[i]:
            raise InvalidArgumentError(
                None,
                None,
                f"Expected begin[{i}]={b} and size[{i}]={s} within dimension {x.shape[i]}",
            )
        key.append(builtins.slice(b, end))
    return x[(*key, ...)]


def _slice_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    """Pad the gradient with zeros back to the input's shape: ``begin`` before, the rest after."""
    x, begin = op.inputs[:2]
    column = stack([rank(x), 1])
    room = make1("Sub", [shape(x, out_type=begin.dtype), shape(grad, out_type=begin.dtype)])
    after = make1("Sub", [room, begin])
    paddings = concat([reshape(begin, column), reshape(after, column)], 1)
    return [make1("Pad", [grad, paddings]), None, None]


op(
    "Slice",
    ("input", "begin", "size"),
    infer=_slice_infer,
    kernel=_slice_kernel,
    host_inputs=(1, 2),
    type_attrs={"T": 0, "Index": 1},
    grad=_slice_grad,
)


def slice(input_: Any, begin: Any, size: Any, name: str | None = None) -> Tensor:
    """Extract ``size`` elements from ``begin`` on; a size of -1 means "to the end".

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.slice(fb.zeros([4, 5]), [1, 0], [2, -1]).shape.as_list()
    [2, 5]
    """
    with name_scope(name, "Slice") as scope:
        x = convert_to_tensor(input_, name="input")
        return make1("Slice", [x, int_input(begin, "begin"), int_input(size, "size")], name=scope)


# -------------------------------------------------------------- StridedSlice
_MASKS = ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")


def _index_key(begin: Any, end: Any, strides: Any, **masks: int) -> tuple:
    """TensorFlow's slice encoding back as a Python index tuple (ints, slices, ..., None)."""
    key: list[Any] = []
    for i, (b, e, s) in enumerate(zip(begin, end, strides)):
        bit = 1 << i
        if masks["ellipsis_mask"] & bit:
            key.append(Ellipsis)
        elif masks["new_axis_mask"] & bit:
            key.append(None)
        elif masks["shrink_axis_mask"] & bit:
            key.append(b)
        else:
            b = None if masks["begin_mask"] & bit else b
            e = None if masks["end_mask"] & bit else e
            key.append(builtins.slice(b, e, s))
    if not any(k is Ellipsis for k in key):
        key.append(Ellipsis)  # trailing dims are kept, and a full index gives a 0-d array
    return tuple(key)


def _slice_len(dim: int | None, b: Any, e: Any, s: Any) -> int | None:
    if dim is None or s is _UNKNOWN or b is _UNKNOWN or e is _UNKNOWN:
        return None
    return len(range(*builtins.slice(b, e, s).indices(dim)))


def _strided_shape(shape: Shape, n: int, b: Any, e: Any, s: Any, masks: dict[str, int]) -> Shape:
    """The static result shape of a strided slice of ``shape`` (a spec of ``n`` entries)."""
    ell, new = masks["ellipsis_mask"], masks["new_axis_mask"]
    if bin(ell & ((1 << n) - 1)).count("1") > 1:
        raise ValueError("Multiple ellipses in slice spec not allowed")
    if shape is None:
        return None
    consumed = sum(1 for i in range(n) if not (ell | new) & (1 << i))
    if consumed > len(shape):
        raise ValueError(
            f"Index out of range using input dim {consumed - 1}; "
            f"input {fmt(shape)} has only {len(shape)} dims"
        )
    out: list[int | None] = []
    d = 0
    for i in range(n):
        bit = 1 << i
        if ell & bit:
            k = len(shape) - consumed
            out.extend(shape[d : d + k])
            d += k
        elif new & bit:
            out.append(1)
        elif masks["shrink_axis_mask"] & bit:
            dim, idx = shape[d], b[i]
            if dim is not None and idx is not _UNKNOWN and not -dim <= idx < dim:
                raise ValueError(
                    f"slice index {idx} of dimension {d} out of bounds (input shape {fmt(shape)})"
                )
            d += 1
        else:
            bi = None if masks["begin_mask"] & bit else b[i]
            ei = None if masks["end_mask"] & bit else e[i]
            out.append(_slice_len(shape[d], bi, ei, s[i]))
            d += 1
    return tuple(out) + shape[d:]


def _partial_ints(t: Tensor, n: int) -> list[Any]:
    """The entries of a 1-D int tensor that the graph determines; _UNKNOWN for the others."""
    v = const_ints(t)
    if v is not None:
        return v
    if t.op.type == "Pack":  # begin/end of ``x[i, 1:]`` with a tensor i
        return [_UNKNOWN if c is None else c for c in map(const_int, t.op.inputs)]
    return [_UNKNOWN] * n


def _strided_slice_infer(
    x: Tensor, begin: Tensor, end: Tensor, strides: Tensor, **masks: int
) -> Out:
    for input_name, t in (("begin", begin), ("end", end), ("strides", strides)):
        check_int("StridedSlice", input_name, t)
    lens = {vector_len(t) for t in (begin, end, strides)} - {None}
    if len(lens) > 1:
        raise ValueError(
            f"begin, end and strides must have the same length, got lengths {sorted(lens)}"
        )
    if not lens:
        return Out(x.dtype, None)
    n = lens.pop()
    b, e, s = (_partial_ints(t, n) for t in (begin, end, strides))
    if 0 in s:
        raise ValueError(f"strides must be non-zero, got {s}")
    return Out(x.dtype, _strided_shape(x._shape, n, b, e, s, masks))


def _strided_slice_kernel(xp: Any, x: Any, begin: Any, end: Any, strides: Any, **masks: int) -> Any:
    key = _index_key(host_ints(begin), host_ints(end), host_ints(strides), **masks)
    try:
        return x[key]
    except (IndexError, ValueError) as err:
        raise InvalidArgumentError(
            None, None, f"slice {key} of shape {list(x.shape)}: {err}"
        ) from None


def _strided_slice_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    """StridedSliceGrad (below) puts the gradient back in zeros shaped like x."""
    x, begin, end, strides = op.inputs
    dx_shape = shape(x, out_type=begin.dtype)
    dx = make1("StridedSliceGrad", [dx_shape, begin, end, strides, grad], dict(op.attrs))
    return [dx, None, None, None]


op(
    "StridedSlice",
    ("input", "begin", "end", "strides"),
    infer=_strided_slice_infer,
    attrs=_MASKS,
    kernel=_strided_slice_kernel,
    host_inputs=(1, 2, 3),
    type_attrs={"T": 0, "Index": 1},
    grad=_strided_slice_grad,
)


# ------------------------------------------------------------ StridedSliceGrad
def _strided_slice_grad_infer(
    shape: Tensor, begin: Tensor, end: Tensor, strides: Tensor, dy: Tensor, **masks: int
) -> Out:
    check_int("StridedSliceGrad", "shape", shape)
    return Out(dy.dtype, partial_shape_value(shape))


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


def _strided_slice_grad_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    _, begin, end, strides, _ = op.inputs
    return [None, None, None, None, strided_slice(grad, begin, end, strides, **op.attrs)]


op(
    "StridedSliceGrad",
    ("shape", "begin", "end", "strides", "dy"),
    infer=_strided_slice_grad_infer,
    attrs=_MASKS,
    kernel=_strided_slice_grad_kernel,
    host_inputs=(0, 1, 2, 3),
    type_attrs={"T": 4, "Index": 0},
    grad=_strided_slice_grad_grad,
)


def strided_slice(
    input_: Any,
    begin: Any,
    end: Any,
    strides: Any = None,
    begin_mask: int = 0,
    end_mask: int = 0,
    ellipsis_mask: int = 0,
    new_axis_mask: int = 0,
    shrink_axis_mask: int = 0,
    var: Any = None,
    name: str | None = None,
) -> Tensor:
    """Slice with TensorFlow's begin/end/strides encoding and bit masks (``tensor[...]`` uses it).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.strided_slice(fb.zeros([4, 6]), [0, 1], [4, 6], [2, 2]).shape.as_list()
    [2, 3]
    """
    masks = dict(
        zip(_MASKS, (begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask))
    )
    with name_scope(name, "StridedSlice") as scope:
        x = convert_to_tensor(input_, name="input")
        b, e = int_input(begin, "begin"), int_input(end, "end")
        if strides is None:
            strides = (
                make1("OnesLike", [b], name="strides") if is_tensor(begin) else [1] * len(begin)
            )
        inputs = [x, b, e, int_input(strides, "strides", b.dtype)]
        return make1("StridedSlice", inputs, {k: int(v) for k, v in masks.items()}, name=scope)


def _check_index(idx: Any) -> None:
    ok_int = isinstance(idx, numbers.Integral) and not isinstance(idx, bool | np.bool_)
    ok_tensor = is_tensor(idx) and convert_to_tensor(idx).dtype in INT_TYPES
    if not (ok_int or ok_tensor):
        raise TypeError(
            "Only integers, slices (`:`), ellipsis (`...`), fb.newaxis (`None`) and scalar "
            f"int32/int64 tensors are valid indices, got {idx!r}"
        )


def slice_helper(tensor: Any, key: Any) -> Tensor:
    """``tensor[key]``: ints, slices with steps, ``...``, ``None`` and negative indices.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.zeros([4, 5, 6])[-1, None, ::-2].shape.as_list()
    [1, 3, 6]
    """
    if not isinstance(key, tuple):
        key = (key,)
    begin: list[Any] = []
    end: list[Any] = []
    strides: list[Any] = []
    masks = dict.fromkeys(_MASKS, 0)
    for i, k in enumerate(key):
        bit = 1 << i
        if isinstance(k, builtins.slice):
            for part in (k.start, k.stop, k.step):
                if part is not None:
                    _check_index(part)
            begin.append(0 if k.start is None else k.start)
            end.append(0 if k.stop is None else k.stop)
            strides.append(1 if k.step is None else k.step)
            masks["begin_mask"] |= bit if k.start is None else 0
            masks["end_mask"] |= bit if k.stop is None else 0
        elif k is Ellipsis or k is None:
            begin.append(0)
            end.append(0)
            strides.append(1)
            masks["ellipsis_mask" if k is Ellipsis else "new_axis_mask"] |= bit
        else:
            _check_index(k)
            begin.append(k)
            end.append(k + 1)
            strides.append(1)
            masks["shrink_axis_mask"] |= bit
    with name_scope(None, "strided_slice") as scope:
        x = convert_to_tensor(tensor)
        b, e, s = (
            int_input(v, n) for v, n in ((begin, "stack"), (end, "stack_1"), (strides, "stack_2"))
        )
        return make1("StridedSlice", [x, b, e, s], masks, name=scope)
