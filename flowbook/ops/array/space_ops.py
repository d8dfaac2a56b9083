"""Spatial rearrangement: SpaceToBatchND, BatchToSpaceND, SpaceToDepth, DepthToSpace.

Each op is a pad or crop, one reshape and one transpose (no copies beyond
the transpose's), and each is the other's gradient: the block tiles of
``space_to_batch_nd`` go back where they came from with the same block
shape and the paddings as crops; ``depth_to_space`` undoes ``space_to_depth``.

- SpaceToBatchND(input, block_shape, paddings): the M spatial dims after the
  batch are padded, cut into ``block_shape`` tiles and every tile offset
  becomes a new batch entry, offset-major: output batch ``(i0 * b1 + i1) * B + b``
  holds ``padded[b, h * b0 + i0, w * b1 + i1]``.
- SpaceToDepth(input, block_size): NHWC; each ``bs x bs`` block becomes one
  pixel with ``bs * bs * C`` channels ordered (row in block, column, channel);
  DepthToSpace is its inverse (TF's "DCR" order).

    >>> import flowbook as fb, numpy as np
    >>> x = fb.constant(np.arange(4.0).reshape(1, 2, 2, 1))
    >>> with fb.Session() as s:
    ...     s.run(fb.nn.space_to_depth(x, 2)).tolist()
    [[[[0.0, 1.0, 2.0, 3.0]]]]
"""

from __future__ import annotations

from typing import Any

from flowbook.framework.errors import InvalidArgumentError
from flowbook.framework.registry import Out, op
from flowbook.framework.tensor import Tensor
from flowbook.framework.tensor_shape import Shape, fmt
from flowbook.kernels.windows import rank4
from flowbook.ops._builder import make1, tensor
from flowbook.ops._shape_inputs import check_int, const_ints, host_ints, int_input

__all__ = [
    "batch_to_space",
    "batch_to_space_nd",
    "depth_to_space",
    "space_to_batch",
    "space_to_batch_nd",
    "space_to_depth",
]


# ------------------------------------------------------------ SpaceToBatchND / BatchToSpaceND
def _block_args(
    op_type: str, x: Shape, block: Tensor, pads: Tensor, pads_name: str
) -> tuple[list[int] | None, list[int] | None, int | None]:
    """Read block_shape and paddings/crops statically (None when unknown) and check them."""
    check_int(op_type, "block_shape", block)
    check_int(op_type, pads_name, pads)
    b, p = const_ints(block), const_ints(pads)
    m = len(b) if b is not None else (block._shape[0] if block._shape else None)
    if b is not None and any(v < 1 for v in b):
        raise ValueError(f"{op_type}: block_shape must be positive, got {b}")
    if p is not None and any(v < 0 for v in p):
        raise ValueError(f"{op_type}: {pads_name} must be non-negative, got {p}")
    if m is not None and p is not None and len(p) != 2 * m:
        raise ValueError(f"{op_type}: {pads_name} must have shape [{m}, 2], got {len(p)} values")
    if m is not None and x is not None and len(x) < m + 1:
        raise ValueError(f"{op_type}: input{fmt(x)} needs rank >= {m + 1} for {m} block dims")
    return b, p, m


def _s2b_infer(input: Tensor, block_shape: Tensor, paddings: Tensor) -> Out:
    x = input._shape
    b, p, m = _block_args("SpaceToBatchND", x, block_shape, paddings, "paddings")
    if x is None or m is None:
        return Out(input.dtype, None)
    if b is None or p is None:
        return Out(input.dtype, (None,) * (m + 1) + tuple(x[m + 1 :]))
    dims: list[int | None] = []
    for i in range(m):
        d = x[1 + i]
        if d is not None and (d + p[2 * i] + p[2 * i + 1]) % b[i]:
            raise ValueError(
                f"SpaceToBatchND: padded size {d + p[2 * i] + p[2 * i + 1]} of dimension "
                f"{1 + i} of input{fmt(x)} is not divisible by block_shape[{i}] = {b[i]}"
            )
        dims.append(None if d is None else (d + p[2 * i] + p[2 * i + 1]) // b[i])
    batch = None if x[0] is None else x[0] * _prod(b)
    return Out(input.dtype, (batch, *dims, *x[m + 1 :]))


def _prod(values: Any) -> int:
    out = 1
    for v in values:
        out *= v
    return out


def _space_to_batch_nd(xp: Any, x: Any, block_shape: Any, paddings: Any) -> Any:
    b, p = host_ints(block_shape), host_ints(paddings)
    m = len(b)
    if any(v < 0 for v in p) or any(v < 1 for v in b) or x.ndim < m + 1:
        raise InvalidArgumentError(None, None, f"bad block_shape {b} or paddings {p}")
    pads = [(0, 0)] + [(p[2 * i], p[2 * i + 1]) for i in range(m)]
    x = xp.pad(x, pads + [(0, 0)] * (x.ndim - m - 1))
    n, rest = x.shape[0], x.shape[m + 1 :]
    if any(x.shape[1 + i] % b[i] for i in range(m)):
        raise InvalidArgumentError(
            None, None, f"padded shape {fmt(x.shape)} is not divisible by block_shape {list(b)}"
        )
    split = [n] + [v for i in range(m) for v in (x.shape[1 + i] // b[i], b[i])] + list(rest)
    perm = [2 + 2 * i for i in range(m)] + [0] + [1 + 2 * i for i in range(m)]
    perm += list(range(2 * m + 1, len(split)))
    y = x.reshape(split).transpose(perm)
    return y.reshape([n * _prod(b)] + [x.shape[1 + i] // b[i] for i in range(m)] + list(rest))


def _b2s_infer(input: Tensor, block_shape: Tensor, crops: Tensor) -> Out:
    x = input._shape
    b, c, m = _block_args("BatchToSpaceND", x, block_shape, crops, "crops")
    if x is None or m is None:
        return Out(input.dtype, None)
    if b is None or c is None:
        return Out(input.dtype, (None,) * (m + 1) + tuple(x[m + 1 :]))
    if x[0] is not None and x[0] % _prod(b):
        raise ValueError(
            f"BatchToSpaceND: batch {x[0]} of input{fmt(x)} is not divisible by the product "
            f"of block_shape {b}"
        )
    dims = []
    for i in range(m):
        d = x[1 + i]
        full = None if d is None else d * b[i]
        if full is not None and c[2 * i] + c[2 * i + 1] > full:
            raise ValueError(f"BatchToSpaceND: crops {c} exceed dimension {1 + i} ({full})")
        dims.append(None if full is None else full - c[2 * i] - c[2 * i + 1])
    batch = None if x[0] is None else x[0] // _prod(b)
    return Out(input.dtype, (batch, *dims, *x[m + 1 :]))


def _batch_to_space_nd(xp: Any, x: Any, block_shape: Any, crops: Any) -> Any:
    b, c = host_ints(block_shape), host_ints(crops)
    m, k = len(b), _prod(host_ints(block_shape))
    if x.ndim < m + 1 or x.shape[0] % k or any(v < 0 for v in c):
        raise InvalidArgumentError(
            None, None, f"input{fmt(x.shape)} does not fit block_shape {list(b)}, crops {list(c)}"
        )
    n, dims, rest = x.shape[0] // k, x.shape[1 : m + 1], list(x.shape[m + 1 :])
    y = x.reshape([*list(b), n, *list(dims), *rest])
    perm = [m] + [a for i in range(m) for a in (m + 1 + i, i)]
    perm += list(range(2 * m + 1, y.ndim))
    y = y.transpose(perm).reshape([n] + [dims[i] * b[i] for i in range(m)] + rest)
    if any(c[2 * i] + c[2 * i + 1] > y.shape[1 + i] for i in range(m)):
        raise InvalidArgumentError(None, None, f"crops {list(c)} exceed the shape {fmt(y.shape)}")
    cut = tuple(slice(c[2 * i], y.shape[1 + i] - c[2 * i + 1]) for i in range(m))
    return y[(slice(None), *cut)]


def _space_to_batch_nd_grad(op: Any, grad: Tensor) -> list[Tensor | None]:
    _, block, pads = op.inputs
    return [make1("BatchToSpaceND", (grad, block, pads)), None, None]


op(
    "SpaceToBatchND",
    ("input", "block_shape", "paddings"),
    infer=_s2b_infer,
    kernel=_space_to_batch_nd,
    host_inputs=(1, 2),
    type_attrs={"T": 0, "Tblock_shape": 1, "Tpaddings": 2},
    grad=_space_to_batch_nd_grad,
)


def _batch_to_space_nd_grad(op: Any, grad: Tensor) -> list[Tensor | None]:
    _, block, crops = op.inputs
    return [make1("SpaceToBatchND", (grad, block, crops)), None, None]


op(
    "BatchToSpaceND",
    ("input", "block_shape", "crops"),
    infer=_b2s_infer,
    kernel=_batch_to_space_nd,
    host_inputs=(1, 2),
    type_attrs={"T": 0, "Tblock_shape": 1, "Tcrops": 2},
    grad=_batch_to_space_nd_grad,
)


# ------------------------------------------------------------ SpaceToDepth / DepthToSpace
def _check_block(op_type: str, block_size: int, data_format: str) -> int:
    if data_format != "NHWC":
        raise ValueError(
            f"{op_type}: data_format must be 'NHWC' (no NCHW kernel), got {data_format!r}"
        )
    if int(block_size) < 2:
        raise ValueError(f"{op_type}: block_size must be at least 2, got {block_size}")
    return int(block_size)


def _s2d_infer(input: Tensor, block_size: int, data_format: str = "NHWC") -> Out:
    bs = _check_block("SpaceToDepth", block_size, data_format)
    if input._shape is None:
        return Out(input.dtype, (None,) * 4)
    n, h, w, c = rank4("input", input._shape)
    for what, d in (("height", h), ("width", w)):
        if d is not None and d % bs:
            raise ValueError(
                f"SpaceToDepth: {what} {d} of input{fmt(input._shape)} is not divisible by "
                f"block_size {bs}"
            )
    return Out(
        input.dtype,
        (
            n,
            None if h is None else h // bs,
            None if w is None else w // bs,
            None if c is None else c * bs * bs,
        ),
    )


def _space_to_depth(xp: Any, x: Any, block_size: int, **_: Any) -> Any:
    n, h, w, c = x.shape
    bs = block_size
    if h % bs or w % bs:
        raise InvalidArgumentError(
            None, None, f"input{fmt(x.shape)}: height and width must be divisible by {bs}"
        )
    y = x.reshape(n, h // bs, bs, w // bs, bs, c).transpose(0, 1, 3, 2, 4, 5)
    return y.reshape(n, h // bs, w // bs, bs * bs * c)


def _d2s_infer(input: Tensor, block_size: int, data_format: str = "NHWC") -> Out:
    bs = _check_block("DepthToSpace", block_size, data_format)
    if input._shape is None:
        return Out(input.dtype, (None,) * 4)
    n, h, w, c = rank4("input", input._shape)
    if c is not None and c % (bs * bs):
        raise ValueError(
            f"DepthToSpace: depth {c} of input{fmt(input._shape)} is not divisible by "
            f"block_size * block_size = {bs * bs}"
        )
    return Out(
        input.dtype,
        (
            n,
            None if h is None else h * bs,
            None if w is None else w * bs,
            None if c is None else c // (bs * bs),
        ),
    )


def _depth_to_space(xp: Any, x: Any, block_size: int, **_: Any) -> Any:
    n, h, w, c = x.shape
    bs = block_size
    if c % (bs * bs):
        raise InvalidArgumentError(
            None, None, f"input{fmt(x.shape)}: depth must be divisible by {bs * bs}"
        )
    y = x.reshape(n, h, w, bs, bs, c // (bs * bs)).transpose(0, 1, 3, 2, 4, 5)
    return y.reshape(n, h * bs, w * bs, c // (bs * bs))


def _space_to_depth_grad(op: Any, grad: Tensor) -> Tensor:
    return make1("DepthToSpace", (grad,), dict(op.attrs))


op(
    "SpaceToDepth",
    ("input",),
    infer=_s2d_infer,
    attrs=("block_size", "data_format"),
    kernel=_space_to_depth,
    grad=_space_to_depth_grad,
)


def _depth_to_space_grad(op: Any, grad: Tensor) -> Tensor:
    return make1("SpaceToDepth", (grad,), dict(op.attrs))


op(
    "DepthToSpace",
    ("input",),
    infer=_d2s_infer,
    attrs=("block_size", "data_format"),
    kernel=_depth_to_space,
    grad=_depth_to_space_grad,
)


# ------------------------------------------------------------ wrappers
def space_to_batch_nd(
    input: Any, block_shape: Any, paddings: Any, name: str | None = None
) -> Tensor:
    """Tile the spatial dims after the batch into ``block_shape`` blocks moved into the batch.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.space_to_batch_nd(fb.zeros([1, 4, 6, 3]), [2, 3], [[0, 0], [0, 0]]).shape.as_list()
    [6, 2, 2, 3]
    """
    args = (tensor(input), int_input(block_shape, "block_shape"), int_input(paddings, "paddings"))
    return make1("SpaceToBatchND", args, name=name)


def batch_to_space_nd(input: Any, block_shape: Any, crops: Any, name: str | None = None) -> Tensor:
    """The inverse of :func:`space_to_batch_nd`: batch blocks back into space, then cropped.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.batch_to_space_nd(fb.zeros([6, 2, 2, 3]), [2, 3], [[0, 1], [0, 0]]).shape.as_list()
    [1, 3, 6, 3]
    """
    args = (tensor(input), int_input(block_shape, "block_shape"), int_input(crops, "crops"))
    return make1("BatchToSpaceND", args, name=name)


def space_to_batch(
    input: Any,
    paddings: Any,
    block_size: Any = None,
    name: str | None = None,
    block_shape: Any = None,
) -> Tensor:
    """TF1's 2-D ``space_to_batch``: a square ``block_size`` over the rows and columns of NHWC.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.space_to_batch(fb.zeros([1, 4, 4, 1]), [[0, 0], [0, 0]], 2).shape.as_list()
    [4, 2, 2, 1]
    """
    block = block_shape if block_size is None else [int(block_size)] * 2
    return space_to_batch_nd(input, block, paddings, name=name)


def batch_to_space(
    input: Any,
    crops: Any,
    block_size: Any = None,
    name: str | None = None,
    block_shape: Any = None,
) -> Tensor:
    """TF1's 2-D ``batch_to_space``: the inverse of :func:`space_to_batch`.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.batch_to_space(fb.zeros([4, 2, 2, 1]), [[0, 0], [0, 0]], 2).shape.as_list()
    [1, 4, 4, 1]
    """
    block = block_shape if block_size is None else [int(block_size)] * 2
    return batch_to_space_nd(input, block, crops, name=name)


def space_to_depth(
    input: Any, block_size: int, name: str | None = None, data_format: str = "NHWC"
) -> Tensor:
    """Move each ``block_size`` x ``block_size`` block of an NHWC image into the channels.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.nn.space_to_depth(fb.zeros([2, 4, 6, 3]), 2).shape.as_list()
    [2, 2, 3, 12]
    """
    attrs = {"block_size": int(block_size), "data_format": data_format}
    return make1("SpaceToDepth", (tensor(input),), attrs, name=name)


def depth_to_space(
    input: Any, block_size: int, name: str | None = None, data_format: str = "NHWC"
) -> Tensor:
    """Spread the channels of an NHWC image into ``block_size`` x ``block_size`` blocks (DCR).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.nn.depth_to_space(fb.zeros([2, 2, 3, 12]), 2).shape.as_list()
    [2, 4, 6, 3]
    """
    attrs = {"block_size": int(block_size), "data_format": data_format}
    return make1("DepthToSpace", (tensor(input),), attrs, name=name)
