"""Identities with a twist: EnsureShape, IdentityN and Bitcast, with ``repeat`` composed.

``EnsureShape`` passes its input through and checks, when it runs, that the
value's shape matches the ``shape`` attr (``None`` dims match anything); the
static shape it gives is the merge of both, so a mismatch known where the
graph is built fails there.  A run-time mismatch raises InvalidArgumentError,
which the executor prefixes with the op's name and the line that built it.
``IdentityN`` forwards N tensors as N outputs in one op (its ``T`` attr lists
their dtypes, as TF's does, so a GraphDef knows how many outputs it has).
``Bitcast`` reinterprets the bytes of each element as another dtype, as
numpy's ``view`` does, adding or dropping a last dimension when the sizes
differ.  ``repeat`` is a gather of each index repeated, the indices found
with a ``searchsorted`` in the running total of the repeats.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.repeat([1, 2], [2, 1])).tolist()
    [1, 1, 2]
"""

from __future__ import annotations

from typing import Any

from flowbook.framework import dtypes
from flowbook.framework.dtypes import DType
from flowbook.framework.errors import InvalidArgumentError
from flowbook.framework.graph import name_scope
from flowbook.framework.registry import NOT_DIFFERENTIABLE, Out, op
from flowbook.framework.tensor import Tensor
from flowbook.framework.tensor_shape import as_shape, compatible, fmt, merge
from flowbook.ops._builder import make, make1, tensor
from flowbook.ops.array import array_ops
from flowbook.ops.array.broadcast_ops import broadcast_to
from flowbook.ops.math.counting_ops import searchsorted
from flowbook.ops.math.reduction_ops import reduce_sum
from flowbook.ops.math.scan_ops import cumsum

__all__ = ["bitcast", "ensure_shape", "identity_n", "repeat"]


def _ensure_infer(x: Tensor, shape: Any = None, **_: Any) -> Out:
    if not compatible(x._shape, shape):
        raise ValueError(f"Shape of tensor {fmt(x._shape)} is not compatible with {fmt(shape)}")
    return Out(x.dtype, merge(x._shape, shape))


def _ensure_kernel(xp: Any, x: Any, shape: Any = None) -> Any:
    if not compatible(tuple(x.shape), shape):
        raise InvalidArgumentError(
            None, None, f"Shape of tensor {fmt(tuple(x.shape))} is not compatible with {fmt(shape)}"
        )
    return x


def _bitcast_infer(x: Tensor, type: DType, **_: Any) -> Out:
    a, b = x.dtype.np.itemsize, type.np.itemsize
    if x.dtype is dtypes.string or type is dtypes.string:
        raise TypeError("Bitcast does not take strings")
    s = x._shape
    if a == b or s is None:
        return Out(type, s if a == b else None)
    if a > b:
        return Out(type, (*s, a // b))
    if not s or s[-1] not in (None, b // a):
        raise ValueError(f"input{fmt(s)} must have {b // a} as its last dimension")
    return Out(type, s[:-1])


def _bitcast(xp: Any, x: Any, type: DType) -> Any:
    a, b = x.dtype.itemsize, type.np.itemsize
    shape = tuple(x.shape)  # before ascontiguousarray, which makes a 0-d array 1-d
    x = xp.ascontiguousarray(x)
    if a >= b:
        extra = (a // b,) if a > b else ()
        return x.reshape(*shape, 1).view(type.np).reshape(shape + extra)
    if not x.shape or x.shape[-1] != b // a:
        raise InvalidArgumentError(None, None, f"last dimension must be {b // a}, got {x.shape}")
    return x.view(type.np).reshape(x.shape[:-1])


op("EnsureShape", ("input",), ("shape",), _ensure_infer, _ensure_kernel, grad=lambda op, g: g)
op(
    "IdentityN",
    ("*input",),
    ("T",),
    lambda *xs, **_: [Out(x.dtype, x._shape) for x in xs],
    lambda xp, *xs, **_: tuple(xs),
    grad=lambda op, *gs: list(gs),
    type_attrs={},
    attr_kinds={"T": "list(type)"},
    num_outputs=-1,
)
op(
    "Bitcast",
    ("input",),
    ("type",),
    _bitcast_infer,
    _bitcast,
    grad=NOT_DIFFERENTIABLE,
    attr_kinds={"type": "type"},
)


def ensure_shape(x: Any, shape: Any, name: str | None = None) -> Tensor:
    """``x``, checked when it runs to have ``shape`` (``None`` dims match any size).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     p = fb.placeholder(fb.float32, None)
    ...     s.run(fb.ensure_shape(p, [None, 2]), {p: [[1.0, 2.0]]}).shape
    (1, 2)
    """
    return make1("EnsureShape", (tensor(x),), {"shape": as_shape(shape)}, name=name)


def identity_n(input: Any, name: str | None = None) -> list[Tensor]:
    """Each tensor of ``input`` passed through, as the outputs of one op.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.identity_n([1.0, [2, 3]]))[1].tolist()
    [2, 3]
    """
    xs = tuple(tensor(x) for x in input)
    return list(make("IdentityN", xs, {"T": [x.dtype for x in xs]}, name=name).outputs)


def bitcast(input: Any, type: Any, name: str | None = None) -> Tensor:
    """The bytes of ``input`` read as ``type``; a last dim is added or dropped when sizes differ.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.bitcast(fb.constant(1.0), fb.int32)).tolist()
    1065353216
    """
    return make1("Bitcast", (tensor(input),), {"type": dtypes.as_dtype(type)}, name=name)


def repeat(input: Any, repeats: Any, axis: int | None = None, name: str | None = None) -> Tensor:
    """Each element (or slice along ``axis``) of ``input`` repeated ``repeats`` times, as
    ``np.repeat``; ``repeats`` is one count or one per element.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.repeat([[1, 2], [3, 4]], 2, axis=1)).tolist()
    [[1, 1, 2, 2], [3, 3, 4, 4]]
    """
    with name_scope(name, "Repeat", [input, repeats]) as scope:
        x = tensor(input)
        if axis is None:
            x, axis = array_ops.reshape(x, [-1]), 0
        n = array_ops.shape(x)[axis : axis + 1 if axis != -1 else None]
        counts = broadcast_to(tensor(repeats, dtype=dtypes.int32), n)
        ends = cumsum(counts)
        positions = array_ops.range(reduce_sum(counts))
        index = searchsorted(ends, positions, side="right")
        return array_ops.gather(x, index, axis=axis, name=scope)
