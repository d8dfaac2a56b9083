"""Batches of sequences and coordinate grids: ReverseSequence, sequence_mask, meshgrid.

``ReverseSequence(input, seq_lengths)`` reverses, for each batch entry ``b``
(along ``batch_dim``), the first ``seq_lengths[b]`` entries along
``seq_dim`` and leaves the rest in place (the padding of a padded batch of
sequences).  The kernel builds, for every position, the index it takes its
value from (``L - 1 - j`` below the length, ``j`` past it) and gathers with
``xp.take_along_axis``; lengths beyond the sequence axis raise
InvalidArgumentError.  The op is its own inverse, so its gradient is the same
reversal of the incoming gradient.

``sequence_mask`` and ``meshgrid`` are TF's compositions, no ops of their
own: the mask compares ``range(maxlen)`` with the lengths (``maxlen``
defaults to the longest), and a grid reshapes each coordinate vector to lie
along its own axis and broadcasts it against ones (``indexing="xy"``, the
default, swaps the first two axes as numpy and TF do).  Both are
differentiable where their inputs are, through the ops they are made of.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.sequence_mask([1, 3], 4)).astype(int).tolist()
    [[1, 0, 0, 0], [1, 1, 1, 0]]
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from flowbook.framework import dtypes
from flowbook.framework.errors import InvalidArgumentError
from flowbook.framework.graph import name_scope
from flowbook.framework.registry import Out, op
from flowbook.framework.tensor import Operation, Tensor
from flowbook.framework.tensor_shape import fmt
from flowbook.ops._builder import make1
from flowbook.ops._shape_inputs import check_int, int_input, norm_axis
from flowbook.ops.array.cast_ops import cast
from flowbook.ops.array.concat_ops import stack
from flowbook.ops.array.constant_op import convert_to_tensor
from flowbook.ops.array.fill_ops import ones
from flowbook.ops.array.shape_ops import expand_dims, range, reshape, size
from flowbook.ops.math.elementwise_ops import less, multiply
from flowbook.ops.math.reduction_ops import reduce_max

__all__ = ["meshgrid", "reverse_sequence", "sequence_mask"]


# ------------------------------------------------------------ ReverseSequence
def _reverse_sequence_infer(
    input: Tensor, seq_lengths: Tensor, seq_dim: int, batch_dim: int = 0
) -> Out:
    check_int("ReverseSequence", "seq_lengths", seq_lengths)
    s, lens = input._shape, seq_lengths._shape
    if lens is not None and len(lens) != 1:
        raise ValueError(f"seq_lengths must be a vector, got shape {fmt(lens)}")
    if s is not None:
        sd = norm_axis(seq_dim, len(s), "seq_dim")
        bd = norm_axis(batch_dim, len(s), "batch_dim")
        if sd == bd:
            raise ValueError(f"seq_dim and batch_dim must differ, both are {sd}")
        if lens is not None and None not in (lens[0], s[bd]) and lens[0] != s[bd]:
            raise ValueError(
                f"seq_lengths has {lens[0]} entries but input{fmt(s)} has {s[bd]} "
                f"along batch_dim {bd}"
            )
    return Out(input.dtype, s)


def _reverse_sequence_kernel(
    xp: Any, input: Any, seq_lengths: Any, seq_dim: int, batch_dim: int = 0
) -> Any:
    sd, bd = seq_dim % input.ndim, batch_dim % input.ndim
    n, lengths = input.shape[sd], seq_lengths.astype(np.int64)
    if lengths.shape != (input.shape[bd],):
        raise InvalidArgumentError(
            None, None, f"seq_lengths must have {input.shape[bd]} entries, has {lengths.size}"
        )
    if lengths.size and (int(lengths.min()) < 0 or int(lengths.max()) > n):
        raise InvalidArgumentError(None, None, f"seq_lengths must be in [0, {n}], got {lengths}")
    j = xp.arange(n).reshape([n if d == sd else 1 for d in builtins.range(input.ndim)])
    length = lengths.reshape([-1 if d == bd else 1 for d in builtins.range(input.ndim)])
    source = xp.where(j < length, length - 1 - j, j)  # where each position takes its value
    source = xp.broadcast_to(source, input.shape)
    return xp.take_along_axis(input, source, axis=sd)


def _reverse_sequence_grad(op: Operation, g: Tensor) -> list[Tensor | None]:
    """The reversal is its own inverse: reverse the gradient the same way."""
    return [make1("ReverseSequence", [g, op.inputs[1]], dict(op.attrs)), None]


op(
    "ReverseSequence",
    ("input", "seq_lengths"),
    ("seq_dim", "batch_dim"),
    _reverse_sequence_infer,
    _reverse_sequence_kernel,
    grad=_reverse_sequence_grad,
    type_attrs={"T": 0, "Tlen": 1},
)


def reverse_sequence(
    input: Any,
    seq_lengths: Any,
    seq_axis: int | None = None,
    batch_axis: int | None = None,
    name: str | None = None,
    seq_dim: int | None = None,
    batch_dim: int | None = None,
) -> Tensor:
    """Reverse the first ``seq_lengths[b]`` entries along ``seq_axis`` of each batch entry.

    TF1's ``seq_dim``/``batch_dim`` names work too; ``batch_axis`` defaults to 0.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.reverse_sequence([[1, 2, 3], [4, 5, 6]], [2, 3], seq_axis=1)).tolist()
    [[2, 1, 3], [6, 5, 4]]
    """
    seq = seq_axis if seq_dim is None else seq_dim
    batch = batch_axis if batch_dim is None else batch_dim
    if seq is None:
        raise ValueError("reverse_sequence needs seq_axis (or seq_dim)")
    with name_scope(name, "ReverseSequence") as scope:
        x = convert_to_tensor(input, name="input")
        lengths = int_input(seq_lengths, "seq_lengths", dtypes.int64)
        attrs = {"seq_dim": int(seq), "batch_dim": int(batch or 0)}
        return make1("ReverseSequence", [x, lengths], attrs, name=scope)


# -------------------------------------------------------------- sequence_mask
def sequence_mask(
    lengths: Any, maxlen: Any = None, dtype: Any = dtypes.bool, name: str | None = None
) -> Tensor:
    """A mask ``[..., maxlen]``: entry ``j`` of row ``i`` is ``j < lengths[i]``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.sequence_mask(fb.placeholder(fb.int32, [None, 2])).shape.as_list()
    [None, 2, None]
    """
    with name_scope(name, "SequenceMask"):
        lens = int_input(lengths, "lengths")
        if maxlen is None:
            maxlen = reduce_max(lens)
        limit = cast(int_input(maxlen, "maxlen"), lens.dtype)
        mask = less(range(0, limit, 1, dtype=lens.dtype), expand_dims(lens, -1))
        dt = dtypes.as_dtype(dtype)
        return mask if dt is dtypes.bool else cast(mask, dt)


# ------------------------------------------------------------------- meshgrid
def meshgrid(*args: Any, **kwargs: Any) -> list[Tensor]:
    """Coordinate grids from 1-D tensors: ``indexing="xy"`` (default) or ``"ij"``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     X, Y = s.run(fb.meshgrid([1, 2, 3], [4, 5]))
    ...     X.tolist(), Y.tolist()
    ([[1, 2, 3], [1, 2, 3]], [[4, 4, 4], [5, 5, 5]])
    """
    indexing, name = kwargs.pop("indexing", "xy"), kwargs.pop("name", "meshgrid")
    if kwargs:
        raise TypeError(f"meshgrid() got unexpected keyword arguments {sorted(kwargs)}")
    if indexing not in ("xy", "ij"):
        raise ValueError(f"indexing must be 'xy' or 'ij', got {indexing!r}")
    with name_scope(name, "meshgrid"):
        xs = [convert_to_tensor(a, name=f"x_{i}") for i, a in enumerate(args)]
        n = len(xs)
        for i, x in enumerate(xs):
            if x._shape is not None and len(x._shape) != 1:
                raise ValueError(f"meshgrid takes 1-D tensors, args[{i}] has shape {fmt(x._shape)}")
        axes = list(builtins.range(n))
        if indexing == "xy" and n > 1:
            axes[0], axes[1] = 1, 0  # x varies along columns, y along rows
        sizes = [size(x) for x in xs]
        grid = [sizes[axes.index(d)] for d in builtins.range(n)]
        out = []
        for i, x in enumerate(xs):
            lie = reshape(x, [-1 if d == axes[i] else 1 for d in builtins.range(n)])
            out.append(multiply(lie, ones(stack(grid), dtype=x.dtype)))
        return out
