"""The rest of TF1's scatter family: mul/div/min/max rows, n-d scatters, tensor scatters.

Three kinds of op, following ``scatter_ops``:

- ``ScatterMul``, ``ScatterDiv``, ``ScatterMin``, ``ScatterMax`` change rows
  ``ref[indices[i]]`` of a *variable* (its VarState is the ref input, updated
  under its lock, the new value is the output), as ``ScatterAdd`` does.  A
  repeated index applies every one of its updates.  The kernel applies them
  in *rounds*: round ``r`` takes each index's ``r``-th occurrence, so no
  index repeats within a round and plain fancy indexing works on numpy and
  CuPy alike (CuPy has no ``multiply.at``).
- ``ScatterNdUpdate``, ``ScatterNdAdd``, ``ScatterNdSub``: the same on a
  variable, with full n-d coordinates in ``indices``' last dimension (as
  ``scatter_nd``); ``CountUpTo`` increments an int variable until a limit.
  All stateful and, as in TensorFlow, not differentiable.
- ``TensorScatterUpdate/Add/Sub/Min/Max``: pure versions on a tensor, with
  gradients: to the tensor everywhere not overwritten, to ``updates`` by
  ``gather_nd`` of the incoming gradient (min/max share ties evenly, as TF's
  gradient does).  ``tensor_scatter_update`` and friends are TF's shorter
  names for them.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.tensor_scatter_nd_add([1, 2, 3], [[0], [0]], [10, 100])).tolist()
    [111, 2, 3]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowbook.framework.graph import name_scope
from flowbook.framework.registry import NOT_DIFFERENTIABLE, OpDef, Out, register
from flowbook.framework.tensor import Operation, Tensor
from flowbook.ops._builder import make1, same_dtype, tensor
from flowbook.ops._shape_inputs import check_int, int_input
from flowbook.ops.array import array_ops
from flowbook.ops.array.sequence_ops import meshgrid
from flowbook.ops.math import math_ops
from flowbook.ops.state.scatter_ops import (
    _check_range,
    _scatter,
    _scatter_infer,
    _updates_shape,
    gather_nd,
    scatter_nd,
)
from flowbook.ops.state.state_ops import _ref as variable_ref
from flowbook.state.var_state import VarState

__all__ = [
    "batch_scatter_update",
    "scatter_div",
    "scatter_max",
    "scatter_min",
    "scatter_mul",
    "scatter_nd_add",
    "scatter_nd_sub",
    "scatter_nd_update",
    "tensor_scatter_add",
    "tensor_scatter_nd_add",
    "tensor_scatter_nd_max",
    "tensor_scatter_nd_min",
    "tensor_scatter_nd_sub",
    "tensor_scatter_nd_update",
    "tensor_scatter_sub",
    "tensor_scatter_update",
]

_APPLY = {
    "update": lambda xp, old, new: new,
    "add": lambda xp, old, new: old + new,
    "sub": lambda xp, old, new: old - new,
    "mul": lambda xp, old, new: old * new,
    "div": lambda xp, old, new: old / new if old.dtype.kind in "fc" else old // new,
    "min": lambda xp, old, new: xp.minimum(old, new),
    "max": lambda xp, old, new: xp.maximum(old, new),
}


def _apply_rounds(xp: Any, target: Any, coords: Any, rows: Any, how: str) -> Any:
    """``target`` (a fresh copy) with ``rows[i]`` applied at ``coords[i]`` (n, k), repeats too."""
    n = coords.shape[0]
    if n == 0:
        return target
    k = coords.shape[1]
    flat = xp.ravel_multi_index(tuple(coords.T), target.shape[:k]) if k else xp.zeros(n, np.int64)
    order = xp.argsort(flat, kind="stable")
    ranked = flat[order]
    starts = xp.searchsorted(ranked, ranked, side="left")  # where each id's run begins
    rank = xp.empty(n, np.int64)
    rank[order] = xp.arange(n) - starts
    f = _APPLY[how]
    for r in range(int(rank.max()) + 1):
        pick = xp.nonzero(rank == r)[0]
        at = tuple(coords[pick].T)
        target[at] = f(xp, target[at], rows[pick])
    return target


# --------------------------------------------------------- variable scatters
def _nd_apply(xp: Any, old: Any, indices: Any, updates: Any, how: str, op_type: str) -> Any:
    k = indices.shape[-1]
    coords = indices.reshape((-1, k)).astype(np.int64)
    _check_range(coords, old.shape[:k], op_type)
    rows = updates.reshape((coords.shape[0], *old.shape[k:]))
    return _apply_rounds(xp, xp.array(old, copy=True), coords, rows, how)


def _nd_var_kernel(op_type: str, how: str) -> Any:
    def kernel(xp: Any, ref: VarState, indices: Any, updates: Any, *, use_locking: bool) -> Any:
        with ref.lock:
            return ref.store(xp, _nd_apply(xp, ref.read(), indices, updates, how, op_type))

    return kernel


def _rows_kernel(op_type: str, how: str) -> Any:
    """A row scatter (``ScatterMul``...): the nd scatter, each index a one-element coordinate."""
    nd = _nd_var_kernel(op_type, how)

    def kernel(xp: Any, ref: VarState, indices: Any, updates: Any, *, use_locking: bool) -> Any:
        return nd(xp, ref, indices[..., None], updates, use_locking=use_locking)

    return kernel


for _op, _how in (
    ("ScatterMul", "mul"),
    ("ScatterDiv", "div"),
    ("ScatterMin", "min"),
    ("ScatterMax", "max"),
):
    register(
        OpDef(
            _op,
            ("ref", "indices", "updates"),
            ("use_locking",),
            _scatter_infer(_op),
            _rows_kernel(_op, _how),
            stateful=True,
            ref_inputs=(0,),
            grad=NOT_DIFFERENTIABLE,
        )
    )


def _nd_infer(op_type: str) -> Any:
    def infer(ref: Tensor, indices: Tensor, updates: Tensor, **attrs: Any) -> Out:
        same_dtype(op_type, ("ref", "updates"), ref, updates)
        check_int(op_type, "indices", indices)
        if indices._shape is not None and not indices._shape:
            raise ValueError("indices must have rank >= 1, got a scalar")
        _updates_shape(op_type, indices._shape, ref._shape, updates._shape)
        return Out(ref.dtype, ref._shape)

    return infer


for _op, _how in (("ScatterNdUpdate", "update"), ("ScatterNdAdd", "add"), ("ScatterNdSub", "sub")):
    register(
        OpDef(
            _op,
            ("ref", "indices", "updates"),
            ("use_locking",),
            _nd_infer(_op),
            _nd_var_kernel(_op, _how),
            stateful=True,
            ref_inputs=(0,),
            grad=NOT_DIFFERENTIABLE,
        )
    )


def _make_var(op_type: str, ref: Any, indices: Any, updates: Any, use_locking: bool, name: Any):
    r = variable_ref(ref)
    with name_scope(name, op_type) as scope:
        inputs = [r, int_input(indices, "indices"), tensor(updates, dtype=r.dtype)]
        return make1(op_type, inputs, {"use_locking": bool(use_locking)}, name=scope)


def scatter_mul(ref: Any, indices: Any, updates: Any, use_locking: bool = False, name=None):
    """Multiply rows ``ref[indices[i]]`` by ``updates[i]``; the variable's new value.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     v = fb.Variable([1, 2, 3]); _ = s.run(v.initializer)
    ...     s.run(fb.scatter_mul(v, [2, 2], [10, 2])).tolist()
    [1, 2, 60]
    """
    return _scatter("ScatterMul", ref, indices, updates, use_locking, name)


def scatter_div(ref: Any, indices: Any, updates: Any, use_locking: bool = False, name=None):
    """Divide rows ``ref[indices[i]]`` by ``updates[i]``; the variable's new value.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     v = fb.Variable([8.0, 9.0]); _ = s.run(v.initializer)
    ...     s.run(fb.scatter_div(v, [0, 0], [2.0, 2.0])).tolist()
    [2.0, 9.0]
    """
    return _scatter("ScatterDiv", ref, indices, updates, use_locking, name)


def scatter_min(ref: Any, indices: Any, updates: Any, use_locking: bool = False, name=None):
    """Rows ``ref[indices[i]] = min(ref[indices[i]], updates[i])``; the new value.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     v = fb.Variable([5, 5]); _ = s.run(v.initializer)
    ...     s.run(fb.scatter_min(v, [1, 1], [7, 3])).tolist()
    [5, 3]
    """
    return _scatter("ScatterMin", ref, indices, updates, use_locking, name)


def scatter_max(ref: Any, indices: Any, updates: Any, use_locking: bool = False, name=None):
    """Rows ``ref[indices[i]] = max(ref[indices[i]], updates[i])``; the new value.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     v = fb.Variable([5, 5]); _ = s.run(v.initializer)
    ...     s.run(fb.scatter_max(v, [0], [9])).tolist()
    [9, 5]
    """
    return _scatter("ScatterMax", ref, indices, updates, use_locking, name)


def scatter_nd_update(ref: Any, indices: Any, updates: Any, use_locking: bool = True, name=None):
    """Set entries (or slices) of a variable at n-d ``indices``; its new value.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     v = fb.Variable([[1, 2], [3, 4]]); _ = s.run(v.initializer)
    ...     s.run(fb.scatter_nd_update(v, [[0, 1], [1, 0]], [20, 30])).tolist()
    [[1, 20], [30, 4]]
    """
    return _make_var("ScatterNdUpdate", ref, indices, updates, use_locking, name)


def scatter_nd_add(ref: Any, indices: Any, updates: Any, use_locking: bool = False, name=None):
    """Add ``updates`` into a variable at n-d ``indices`` (repeats add up); its new value.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     v = fb.Variable([[1, 2], [3, 4]]); _ = s.run(v.initializer)
    ...     s.run(fb.scatter_nd_add(v, [[1], [1]], [[1, 1], [2, 2]])).tolist()
    [[1, 2], [6, 7]]
    """
    return _make_var("ScatterNdAdd", ref, indices, updates, use_locking, name)


def scatter_nd_sub(ref: Any, indices: Any, updates: Any, use_locking: bool = False, name=None):
    """Subtract ``updates`` from a variable at n-d ``indices``; its new value.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     v = fb.Variable([1, 2, 3]); _ = s.run(v.initializer)
    ...     s.run(fb.scatter_nd_sub(v, [[2]], [5])).tolist()
    [1, 2, -2]
    """
    return _make_var("ScatterNdSub", ref, indices, updates, use_locking, name)


def batch_scatter_update(ref: Any, indices: Any, updates: Any, use_locking: bool = True, name=None):
    """``ref[b..., indices[b..., j]] = updates[b..., j]``: scatter rows per batch entry.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     v = fb.Variable([[1, 2, 3], [4, 5, 6]]); _ = s.run(v.initializer)
    ...     s.run(fb.batch_scatter_update(v, [[0], [2]], [[10], [60]])).tolist()
    [[10, 2, 3], [4, 5, 60]]
    """
    with name_scope(name, "BatchScatterUpdate") as scope:
        i = int_input(indices, "indices")
        nb = i.shape.ndims
        if nb is None or nb < 1:
            raise ValueError("batch_scatter_update: indices must have a known rank >= 1")
        ish = array_ops.shape(i)
        grids = meshgrid(*[array_ops.range(ish[d]) for d in range(nb)], indexing="ij")
        grids = [math_ops.cast(g, i.dtype) for g in grids[:-1]] + [i]
        coords = array_ops.stack(grids, axis=-1)
        return _make_var("ScatterNdUpdate", ref, coords, updates, use_locking, scope)


# ----------------------------------------------------------- tensor scatters
def _tensor_infer(op_type: str) -> Any:
    def infer(t: Tensor, indices: Tensor, updates: Tensor) -> Out:
        same_dtype(op_type, ("tensor", "updates"), t, updates)
        check_int(op_type, "indices", indices)
        _updates_shape(op_type, indices._shape, t._shape, updates._shape)
        return Out(t.dtype, t._shape)

    return infer


def _tensor_kernel(op_type: str, how: str) -> Any:
    def kernel(xp: Any, t: Any, indices: Any, updates: Any) -> Any:
        return _nd_apply(xp, t, indices, updates, how, op_type)

    return kernel


def _update_grad(op: Operation, g: Tensor) -> list[Tensor | None]:
    _, i, u = op.inputs
    kept = make1("TensorScatterUpdate", [g, i, array_ops.zeros_like(u)])
    return [kept, None, gather_nd(g, i)]


def _add_grad(op: Operation, g: Tensor) -> list[Tensor | None]:
    return [g, None, gather_nd(g, op.inputs[1])]


def _sub_grad(op: Operation, g: Tensor) -> list[Tensor | None]:
    return [g, None, math_ops.negative(gather_nd(g, op.inputs[1]))]


def _min_max_grad(op: Operation, g: Tensor) -> list[Tensor | None]:
    """Ties share the gradient evenly between the tensor's entry and the updates that won."""
    t, i, u = op.inputs
    out = op.outputs[0]
    t_won = math_ops.cast(math_ops.equal(t, out), g.dtype)
    u_won = math_ops.cast(math_ops.equal(u, gather_nd(out, i)), g.dtype)
    count = t_won + scatter_nd(i, u_won, array_ops.shape(t, out_type=i.dtype))
    share = g / count
    return [share * t_won, None, gather_nd(share, i) * u_won]


for _op, _how, _grad in (
    ("TensorScatterUpdate", "update", _update_grad),
    ("TensorScatterAdd", "add", _add_grad),
    ("TensorScatterSub", "sub", _sub_grad),
    ("TensorScatterMin", "min", _min_max_grad),
    ("TensorScatterMax", "max", _min_max_grad),
):
    register(
        OpDef(
            _op,
            ("tensor", "indices", "updates"),
            (),
            _tensor_infer(_op),
            _tensor_kernel(_op, _how),
            grad=_grad,
        )
    )


def _tensor_scatter(op_type: str, t: Any, indices: Any, updates: Any, name: Any) -> Tensor:
    x = tensor(t)
    return make1(
        op_type,
        [x, int_input(indices, "indices"), tensor(updates, dtype=x.dtype)],
        name=name or op_type,
    )


def tensor_scatter_nd_update(tensor: Any, indices: Any, updates: Any, name=None) -> Tensor:
    """A copy of ``tensor`` with entries (or slices) at n-d ``indices`` set to ``updates``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.tensor_scatter_nd_update([[1, 2], [3, 4]], [[1]], [[7, 8]])).tolist()
    [[1, 2], [7, 8]]
    """
    return _tensor_scatter("TensorScatterUpdate", tensor, indices, updates, name)


def tensor_scatter_nd_add(tensor: Any, indices: Any, updates: Any, name=None) -> Tensor:
    """A copy of ``tensor`` with ``updates`` added at n-d ``indices`` (repeats add up).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.tensor_scatter_nd_add([1, 2], [[1]], [5])).tolist()
    [1, 7]
    """
    return _tensor_scatter("TensorScatterAdd", tensor, indices, updates, name)


def tensor_scatter_nd_sub(tensor: Any, indices: Any, updates: Any, name=None) -> Tensor:
    """A copy of ``tensor`` with ``updates`` subtracted at n-d ``indices``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.tensor_scatter_nd_sub([1, 2], [[0]], [5])).tolist()
    [-4, 2]
    """
    return _tensor_scatter("TensorScatterSub", tensor, indices, updates, name)


def tensor_scatter_nd_min(tensor: Any, indices: Any, updates: Any, name=None) -> Tensor:
    """A copy of ``tensor`` with the minimum of it and ``updates`` at n-d ``indices``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.tensor_scatter_nd_min([4, 4], [[0], [1]], [1, 9])).tolist()
    [1, 4]
    """
    return _tensor_scatter("TensorScatterMin", tensor, indices, updates, name)


def tensor_scatter_nd_max(tensor: Any, indices: Any, updates: Any, name=None) -> Tensor:
    """A copy of ``tensor`` with the maximum of it and ``updates`` at n-d ``indices``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.tensor_scatter_nd_max([4, 4], [[0], [1]], [1, 9])).tolist()
    [4, 9]
    """
    return _tensor_scatter("TensorScatterMax", tensor, indices, updates, name)


tensor_scatter_update = tensor_scatter_nd_update  # TF 1.15's shorter names
tensor_scatter_add = tensor_scatter_nd_add
tensor_scatter_sub = tensor_scatter_nd_sub
