"""Ordering: TopKV2 and InTopKV2, and ``sort``/``argsort`` built of TopKV2.

``TopKV2(input, k)`` has two outputs, the ``k`` largest values along the last
axis and their int32 indices; equal values keep their order (the lower index
first), as TensorFlow documents.  The kernel takes one stable ascending
``argsort`` of the reversed last axis and reverses it back, which orders
descending with ties by increasing index on numpy and CuPy alike.  ``k`` is an
int32 input read on the host.  The gradient adds the values' gradient back at
the chosen indices (an UnsortedSegmentSum over the flattened input).

``InTopKV2(predictions, targets, k)`` says per row whether the target's
prediction is among the ``k`` largest: it is when fewer than ``k`` predictions
are strictly larger (so ties at the boundary all count as in, TF's rule); a
non-finite prediction or a target out of range is False.  Not differentiable.

``sort`` and ``argsort`` are TensorFlow's compositions, no ops of their own:
``top_k`` over the whole last axis (of ``-x`` for ascending order), with the
sorted axis moved last and back by transposes.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     v, i = s.run(fb.nn.top_k([1, 3, 3, 2], k=3))
    ...     v.tolist(), i.tolist()
    ([3, 3, 2], [1, 2, 3])
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from flowbook.framework import dtypes
from flowbook.framework.graph import name_scope
from flowbook.framework.registry import NOT_DIFFERENTIABLE, Out, op
from flowbook.framework.tensor import Operation, Tensor
from flowbook.framework.tensor_shape import fmt
from flowbook.ops._builder import make, make1
from flowbook.ops._shape_inputs import check_int, const_int, int_input, norm_axis
from flowbook.ops.array.concat_ops import concat
from flowbook.ops.array.constant_op import convert_to_tensor
from flowbook.ops.array.selection_ops import unsorted_segment_sum
from flowbook.ops.array.shape_ops import expand_dims, range, reshape, shape, size
from flowbook.ops.array.transpose_ops import transpose
from flowbook.ops.math.elementwise import REAL, check_dtype
from flowbook.ops.math.elementwise_ops import add, negative

__all__ = ["argsort", "in_top_k", "sort", "top_k"]


# --------------------------------------------------------------------- TopKV2
def _top_k_infer(x: Tensor, k: Tensor, sorted: bool = True) -> list[Out]:
    check_dtype(x.dtype, REAL, "input")
    check_int("TopKV2", "k", k)
    s, kk = x._shape, const_int(k)
    if kk is not None and kk < 0:
        raise ValueError(f"k must be non-negative, got {kk}")
    if s is not None and not s:
        raise ValueError("input must have rank >= 1, got a scalar")
    if s is not None and s[-1] is not None and kk is not None and kk > s[-1]:
        raise ValueError(f"input{fmt(s)} must have at least k={kk} columns")
    out = None if s is None else (*s[:-1], kk)
    return [Out(x.dtype, out), Out(dtypes.int32, out)]


def _top_k_kernel(xp: Any, x: Any, k: Any, sorted: bool = True) -> tuple[Any, Any]:
    kk, n = int(k), x.shape[-1]
    if kk > n:
        raise ValueError(f"input must have at least k={kk} columns, has {n}")
    order = xp.argsort(x[..., ::-1], axis=-1, kind="stable")[..., ::-1][..., :kk]
    indices = (n - 1 - order).astype(np.int32)
    return xp.take_along_axis(x, indices.astype(np.int64), axis=-1), indices


def _top_k_grad(op: Operation, g: Tensor, _indices_grad: Tensor) -> list[Tensor | None]:
    """The values' gradient added back at the chosen indices of each row."""
    x, indices = op.inputs[0], op.outputs[1]
    n, total = shape(x)[-1], size(x)
    rows = range(0, total, n)  # the flat offset of each row
    per_row = reshape(indices, concat([[-1], shape(indices)[-1:]], 0))  # [rows, k]
    flat_k = reshape(add(per_row, expand_dims(rows, -1)), [-1])
    summed = unsorted_segment_sum(reshape(g, [-1]), flat_k, total)
    return [reshape(summed, shape(x)), None]


op(
    "TopKV2",
    ("input", "k"),
    ("sorted",),
    _top_k_infer,
    _top_k_kernel,
    host_inputs=(1,),
    grad=_top_k_grad,
    num_outputs=2,
)


class TopKV2(NamedTuple):
    """``top_k``'s result, as TF names it: ``values`` and their int32 ``indices``."""

    values: Tensor
    indices: Tensor


def top_k(input: Any, k: Any = 1, sorted: bool = True, name: str | None = None) -> TopKV2:
    """The ``k`` largest entries along the last axis and their indices (ties: lower first).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     [t.shape.as_list() for t in fb.nn.top_k(fb.zeros([4, 10]), 3)]
    [[4, 3], [4, 3]]
    """
    with name_scope(name, "TopKV2") as scope:
        x = convert_to_tensor(input, name="input")
        op = make("TopKV2", [x, int_input(k, "k")], {"sorted": bool(sorted)}, name=scope)
        return TopKV2(op.outputs[0], op.outputs[1])


# ------------------------------------------------------------------- InTopKV2
def _in_top_k_infer(predictions: Tensor, targets: Tensor, k: Tensor) -> Out:
    if predictions.dtype is not dtypes.float32:
        raise TypeError(f"predictions must be float32, got {predictions.dtype.name}")
    check_int("InTopKV2", "targets", targets)
    check_int("InTopKV2", "k", k)
    p, t = predictions._shape, targets._shape
    if p is not None and len(p) != 2:
        raise ValueError(f"predictions must be a matrix [batch, classes], got shape {fmt(p)}")
    if t is not None and len(t) != 1:
        raise ValueError(f"targets must be a vector, got shape {fmt(t)}")
    if p is not None and t is not None and None not in (p[0], t[0]) and p[0] != t[0]:
        raise ValueError(f"predictions{fmt(p)} and targets{fmt(t)} must have one row per target")
    return Out(dtypes.bool, (p[0] if p is not None else t[0] if t is not None else None,))


def _in_top_k_kernel(xp: Any, predictions: Any, targets: Any, k: Any) -> Any:
    n = predictions.shape[1]
    t = targets.astype(np.int64)
    valid = (t >= 0) & (t < n)
    chosen = xp.take_along_axis(predictions, xp.clip(t, 0, max(n - 1, 0))[:, None], axis=1)
    larger = xp.sum(predictions > chosen, axis=1)
    return valid & xp.isfinite(chosen[:, 0]) & (larger < int(k))


op(
    "InTopKV2",
    ("predictions", "targets", "k"),
    (),
    _in_top_k_infer,
    _in_top_k_kernel,
    host_inputs=(2,),
    grad=NOT_DIFFERENTIABLE,
    type_attrs={"T": 1},
)


def in_top_k(predictions: Any, targets: Any, k: Any, name: str | None = None) -> Tensor:
    """Whether each target's prediction is among the ``k`` largest of its row (ties count).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.nn.in_top_k([[0.1, 0.5, 0.5], [0.9, 0.2, 0.3]], [2, 1], 1)).tolist()
    [True, False]
    """
    with name_scope(name, "in_top_k") as scope:
        p = convert_to_tensor(predictions, dtype=dtypes.float32, name="predictions")
        t = int_input(targets, "targets")
        return make1("InTopKV2", [p, t, int_input(k, "k", t.dtype)], name=scope)


# ------------------------------------------------------------- sort, argsort
def _along_last(x: Tensor, axis: int, fn: Any) -> Tensor:
    """``fn`` applied along ``axis``, moved to the end and back with transposes."""
    s = x._shape
    if s is None:
        if axis != -1:
            raise ValueError(f"axis {axis} needs a known rank (only -1 works with an unknown one)")
        return fn(x)
    a = norm_axis(axis, len(s))
    if a == len(s) - 1:
        return fn(x)
    perm = list(np.arange(len(s)))
    perm[a], perm[-1] = perm[-1], perm[a]
    return transpose(fn(transpose(x, perm)), perm)


def _sorted_along(x: Tensor, axis: int, direction: str, which: int) -> Tensor:
    if direction not in ("ASCENDING", "DESCENDING"):
        raise ValueError(f"direction must be ASCENDING or DESCENDING, got {direction!r}")
    sign = direction == "ASCENDING"

    def fn(t: Tensor) -> Tensor:
        out = top_k(negative(t) if sign else t, shape(t)[-1])[which]
        return negative(out) if sign and which == 0 else out

    return _along_last(x, axis, fn)


def sort(values: Any, axis: int = -1, direction: str = "ASCENDING", name: str | None = None):
    """``values`` sorted along ``axis`` (TF's composition of top_k and transposes).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.sort([[3, 1, 2], [0, 5, 4]], direction="DESCENDING")).tolist()
    [[3, 2, 1], [5, 4, 0]]
    """
    with name_scope(name, "sort"):
        return _sorted_along(convert_to_tensor(values), axis, direction, 0)


def argsort(
    values: Any,
    axis: int = -1,
    direction: str = "ASCENDING",
    stable: bool = False,
    name: str | None = None,
) -> Tensor:
    """The int32 indices that sort ``values`` along ``axis``; always stable (ties keep order).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.argsort([3.0, 1.0, 2.0])).tolist()
    [1, 2, 0]
    """
    with name_scope(name, "argsort"):
        return _sorted_along(convert_to_tensor(values), axis, direction, 1)
