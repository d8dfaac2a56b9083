"""Scatters and n-d gathers: writing rows of a variable by index, ScatterNd and GatherNd.

Two kinds of op live here.  ``ScatterUpdate``, ``ScatterAdd`` and
``ScatterSub`` change a *variable*: like ``Assign`` (``state_ops``) they take
the variable's :class:`~flowbook.state.var_state.VarState` as their ref input, and
under its lock read the value, write the rows ``ref[indices[i]]`` (set, add or
subtract ``updates[i]``; repeated indices add up for add/sub, the last one
wins for update) and store the new array, which is also the op's output.  They
are stateful and, as in TensorFlow, not differentiable.

``GatherNd`` and ``ScatterNd`` are pure: the last dimension of ``indices``
holds ``k`` coordinates into the first ``k`` dims of ``params`` (or of the
output ``shape``), so ``gather_nd`` picks entries or slices by full index, and
``scatter_nd`` adds ``updates`` into zeros of ``shape`` at those indices.
Each is the other's gradient.  ``infer`` checks the shapes
(``updates.shape == indices.shape[:-1] + shape[k:]``) at build time when they
are known; kernels check index ranges and raise InvalidArgumentError.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.gather_nd([[1, 2], [3, 4]], [[1, 0], [0, 1]])).tolist()
    [3, 2]

The rest of TF1's scatter family (mul/div/min/max rows, n-d scatters,
tensor scatters) is three more kinds of op:

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

import math
from typing import Any

import numpy as np

from flowbook.framework.errors import InvalidArgumentError
from flowbook.framework.graph import name_scope
from flowbook.framework.registry import NOT_DIFFERENTIABLE, Out, op
from flowbook.framework.tensor import Operation, Tensor
from flowbook.framework.tensor_shape import Shape, compatible, fmt
from flowbook.ops._builder import make1, same_dtype, tensor
from flowbook.ops._shape_inputs import check_int, const_ints, int_input, vector_len
from flowbook.ops.array import array_ops
from flowbook.ops.array.constant_op import convert_to_tensor
from flowbook.ops.array.sequence_ops import meshgrid
from flowbook.ops.array.shape_ops import shape
from flowbook.ops.math import math_ops
from flowbook.ops.state.state_ops import _ref as variable_ref
from flowbook.state.var_state import VarState

__all__ = [
    "batch_scatter_update",
    "gather_nd",
    "scatter_add",
    "scatter_div",
    "scatter_max",
    "scatter_min",
    "scatter_mul",
    "scatter_nd",
    "scatter_nd_add",
    "scatter_nd_sub",
    "scatter_nd_update",
    "scatter_sub",
    "scatter_update",
    "tensor_scatter_add",
    "tensor_scatter_nd_add",
    "tensor_scatter_nd_max",
    "tensor_scatter_nd_min",
    "tensor_scatter_nd_sub",
    "tensor_scatter_nd_update",
    "tensor_scatter_sub",
    "tensor_scatter_update",
]


def _check_range(indices: Any, limits: tuple[int, ...], op_type: str) -> None:
    """InvalidArgumentError when a coordinate in ``indices[..., j]`` is not in [0, limits[j])."""
    for j, n in enumerate(limits):
        col = indices[..., j]
        if col.size and (int(col.min()) < 0 or int(col.max()) >= n):
            bad = int(col.min()) if int(col.min()) < 0 else int(col.max())
            raise InvalidArgumentError(
                None, None, f"{op_type}: index {bad} in dimension {j} is not in [0, {n})"
            )


def _updates_shape(op_type: str, indices: Shape, target: Shape, updates: Shape) -> None:
    """ValueError unless ``updates`` is ``indices[:-1] + target[k:]`` (what is known of it)."""
    if indices is None or target is None or updates is None or indices[-1] is None:
        return
    want = (*indices[:-1], *target[indices[-1] :])
    if not compatible(want, updates):
        raise ValueError(
            f"updates must have shape {fmt(want)} (indices{fmt(indices)}, shape{fmt(target)}), "
            f"got {fmt(updates)}"
        )


# ------------------------------------------------------- variable scatters
def _scatter_infer(op_type: str) -> Any:
    def infer(ref: Tensor, indices: Tensor, updates: Tensor, use_locking: bool = True) -> Out:
        same_dtype(op_type, ("ref", "updates"), ref, updates)
        check_int(op_type, "indices", indices)
        r, i, u = ref._shape, indices._shape, updates._shape
        if r is not None and not r:
            raise ValueError("ref must have rank >= 1, got a scalar")
        if r is not None and i is not None and not compatible((*i, *r[1:]), u):
            raise ValueError(
                f"updates must have shape indices.shape + ref.shape[1:] = {fmt((*i, *r[1:]))}, "
                f"got {fmt(u)}"
            )
        return Out(ref.dtype, r)

    return infer


def _scatter_kernel(op_type: str, how: str) -> Any:
    def kernel(xp: Any, ref: VarState, indices: Any, updates: Any, *, use_locking: bool) -> Any:
        with ref.lock:
            old = ref.read()
            idx = indices.ravel().astype(np.int64)
            _check_range(idx[:, None], old.shape[:1], op_type)
            rows = updates.reshape((idx.size, *old.shape[1:]))
            new = xp.array(old, copy=True)
            if how == "update":
                new[idx] = rows
            else:  # add.at: repeated indices all count
                xp.add.at(new, idx, rows if how == "add" else -rows)
            return ref.store(xp, new)

    return kernel


op(
    "ScatterUpdate",
    ("ref", "indices", "updates"),
    ("use_locking",),
    _scatter_infer("ScatterUpdate"),
    _scatter_kernel("ScatterUpdate", "update"),
    stateful=True,
    ref_inputs=(0,),
    grad=NOT_DIFFERENTIABLE,
    type_attrs={"T": 0, "Tindices": 1},
)
op(
    "ScatterAdd",
    ("ref", "indices", "updates"),
    ("use_locking",),
    _scatter_infer("ScatterAdd"),
    _scatter_kernel("ScatterAdd", "add"),
    stateful=True,
    ref_inputs=(0,),
    grad=NOT_DIFFERENTIABLE,
    type_attrs={"T": 0, "Tindices": 1},
)
op(
    "ScatterSub",
    ("ref", "indices", "updates"),
    ("use_locking",),
    _scatter_infer("ScatterSub"),
    _scatter_kernel("ScatterSub", "sub"),
    stateful=True,
    ref_inputs=(0,),
    grad=NOT_DIFFERENTIABLE,
    type_attrs={"T": 0, "Tindices": 1},
)


def _scatter(op_type: str, ref: Any, indices: Any, updates: Any, use_locking: bool, name: Any):
    r = variable_ref(ref)
    with name_scope(name, op_type) as scope:
        inputs = [r, int_input(indices, "indices"), tensor(updates, dtype=r.dtype)]
        return make1(op_type, inputs, {"use_locking": bool(use_locking)}, name=scope)


def scatter_update(
    ref: Any, indices: Any, updates: Any, use_locking: bool = True, name: str | None = None
) -> Tensor:
    """Set rows ``ref[indices[i]] = updates[i]`` of a variable; outputs its new value.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     v = fb.Variable([1, 2, 3]); _ = s.run(v.initializer)
    ...     s.run(fb.scatter_update(v, [2, 0], [30, 10])).tolist()
    [10, 2, 30]
    """
    return _scatter("ScatterUpdate", ref, indices, updates, use_locking, name)


def scatter_add(
    ref: Any, indices: Any, updates: Any, use_locking: bool = True, name: str | None = None
) -> Tensor:
    """Add ``updates[i]`` into rows ``ref[indices[i]]`` (repeats add up); the new value.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     v = fb.Variable([1, 2, 3]); _ = s.run(v.initializer)
    ...     s.run(fb.scatter_add(v, [2, 2], [10, 100])).tolist()
    [1, 2, 113]
    """
    return _scatter("ScatterAdd", ref, indices, updates, use_locking, name)


def scatter_sub(
    ref: Any, indices: Any, updates: Any, use_locking: bool = True, name: str | None = None
) -> Tensor:
    """Subtract ``updates[i]`` from rows ``ref[indices[i]]``; the variable's new value.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     v = fb.Variable([1, 2, 3]); _ = s.run(v.initializer)
    ...     s.run(fb.scatter_sub(v, [0], [5])).tolist()
    [-4, 2, 3]
    """
    return _scatter("ScatterSub", ref, indices, updates, use_locking, name)


# ------------------------------------------------------------------ GatherNd
def _gather_nd_infer(params: Tensor, indices: Tensor) -> Out:
    check_int("GatherNd", "indices", indices)
    p, i = params._shape, indices._shape
    if i is not None and not i:
        raise ValueError("indices must have rank >= 1, got a scalar")
    if p is None or i is None or i[-1] is None:
        return Out(params.dtype, None)
    if i[-1] > len(p):
        raise ValueError(
            f"indices{fmt(i)} give {i[-1]} coordinates, more than params{fmt(p)} has dimensions"
        )
    return Out(params.dtype, (*i[:-1], *p[i[-1] :]))


def _gather_nd_kernel(xp: Any, params: Any, indices: Any) -> Any:
    k = indices.shape[-1]
    idx = indices.reshape((-1, k)).astype(np.int64)
    _check_range(idx, params.shape[:k], "GatherNd")
    picked = params[tuple(idx.T)] if k else xp.broadcast_to(params, (idx.shape[0], *params.shape))
    return picked.reshape((*indices.shape[:-1], *params.shape[k:]))


def _gather_nd_grad(op: Operation, g: Tensor) -> list[Tensor | None]:
    """The gradient added back at the gathered indices: ScatterNd into params' shape."""
    params, indices = op.inputs
    return [make1("ScatterNd", [indices, g, shape(params, out_type=indices.dtype)]), None]


op(
    "GatherNd",
    ("params", "indices"),
    (),
    _gather_nd_infer,
    _gather_nd_kernel,
    grad=_gather_nd_grad,
    type_attrs={"Tparams": 0, "Tindices": 1},
)


def gather_nd(params: Any, indices: Any, name: str | None = None, batch_dims: int = 0) -> Tensor:
    """Entries (or slices) of ``params`` at the full indices in ``indices``' last dimension.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.gather_nd(fb.zeros([4, 5, 6]), [[1, 2], [3, 0]]).shape.as_list()
    [2, 6]
    """
    if batch_dims:
        raise ValueError(f"batch_dims={batch_dims} is not supported (only 0)")
    with name_scope(name, "GatherNd") as scope:
        p = convert_to_tensor(params, name="params")
        return make1("GatherNd", [p, int_input(indices, "indices")], name=scope)


# ----------------------------------------------------------------- ScatterNd
def _scatter_nd_infer(indices: Tensor, updates: Tensor, shape: Tensor) -> Out:
    check_int("ScatterNd", "indices", indices)
    check_int("ScatterNd", "shape", shape)
    i, target = indices._shape, const_ints(shape)
    if i is not None and not i:
        raise ValueError("indices must have rank >= 1, got a scalar")
    if target is None:
        n = vector_len(shape)
        return Out(updates.dtype, None if n is None else (None,) * n)
    if any(d < 0 for d in target):
        raise ValueError(f"shape {target} has a negative dimension")
    if i is not None and i[-1] is not None and i[-1] > len(target):
        raise ValueError(f"indices{fmt(i)} give {i[-1]} coordinates, shape {target} has fewer")
    _updates_shape("ScatterNd", i, tuple(target), updates._shape)
    return Out(updates.dtype, tuple(target))


def _scatter_nd_kernel(xp: Any, indices: Any, updates: Any, shape: Any) -> Any:
    target = tuple(int(d) for d in shape.tolist())
    k = indices.shape[-1]
    idx = indices.reshape((-1, k)).astype(np.int64)
    _check_range(idx, target[:k], "ScatterNd")
    want = (*indices.shape[:-1], *target[k:])
    if updates.shape != want:
        raise InvalidArgumentError(
            None, None, f"updates must have shape {list(want)}, got {list(updates.shape)}"
        )
    out = xp.zeros(target, dtype=updates.dtype)
    rows = updates.reshape((idx.shape[0], *target[k:]))
    if k:
        xp.add.at(out, tuple(idx.T), rows)  # repeated indices add up, as in TF
    elif math.prod(rows.shape[:1]):
        out += rows.sum(axis=0)
    return out


def _scatter_nd_grad(op: Operation, g: Tensor) -> list[Tensor | None]:
    """What each update landed on: GatherNd of the gradient at the same indices."""
    indices = op.inputs[0]
    return [None, make1("GatherNd", [g, indices]), None]


op(
    "ScatterNd",
    ("indices", "updates", "shape"),
    (),
    _scatter_nd_infer,
    _scatter_nd_kernel,
    host_inputs=(2,),
    grad=_scatter_nd_grad,
    type_attrs={"T": 1, "Tindices": 0},
)


def scatter_nd(indices: Any, updates: Any, shape: Any, name: str | None = None) -> Tensor:
    """Zeros of ``shape`` with ``updates`` added at ``indices`` (repeated indices add up).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.scatter_nd([[1], [3], [1]], [9, 10, 11], [5])).tolist()
    [0, 20, 0, 10, 0]
    """
    with name_scope(name, "ScatterNd") as scope:
        idx = int_input(indices, "indices")
        u = convert_to_tensor(updates, name="updates")
        return make1("ScatterNd", [idx, u, int_input(shape, "shape", idx.dtype)], name=scope)


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


op(
    "ScatterMul",
    ("ref", "indices", "updates"),
    ("use_locking",),
    _scatter_infer("ScatterMul"),
    _rows_kernel("ScatterMul", "mul"),
    stateful=True,
    ref_inputs=(0,),
    grad=NOT_DIFFERENTIABLE,
)
op(
    "ScatterDiv",
    ("ref", "indices", "updates"),
    ("use_locking",),
    _scatter_infer("ScatterDiv"),
    _rows_kernel("ScatterDiv", "div"),
    stateful=True,
    ref_inputs=(0,),
    grad=NOT_DIFFERENTIABLE,
)
op(
    "ScatterMin",
    ("ref", "indices", "updates"),
    ("use_locking",),
    _scatter_infer("ScatterMin"),
    _rows_kernel("ScatterMin", "min"),
    stateful=True,
    ref_inputs=(0,),
    grad=NOT_DIFFERENTIABLE,
)
op(
    "ScatterMax",
    ("ref", "indices", "updates"),
    ("use_locking",),
    _scatter_infer("ScatterMax"),
    _rows_kernel("ScatterMax", "max"),
    stateful=True,
    ref_inputs=(0,),
    grad=NOT_DIFFERENTIABLE,
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


op(
    "ScatterNdUpdate",
    ("ref", "indices", "updates"),
    ("use_locking",),
    _nd_infer("ScatterNdUpdate"),
    _nd_var_kernel("ScatterNdUpdate", "update"),
    stateful=True,
    ref_inputs=(0,),
    grad=NOT_DIFFERENTIABLE,
)
op(
    "ScatterNdAdd",
    ("ref", "indices", "updates"),
    ("use_locking",),
    _nd_infer("ScatterNdAdd"),
    _nd_var_kernel("ScatterNdAdd", "add"),
    stateful=True,
    ref_inputs=(0,),
    grad=NOT_DIFFERENTIABLE,
)
op(
    "ScatterNdSub",
    ("ref", "indices", "updates"),
    ("use_locking",),
    _nd_infer("ScatterNdSub"),
    _nd_var_kernel("ScatterNdSub", "sub"),
    stateful=True,
    ref_inputs=(0,),
    grad=NOT_DIFFERENTIABLE,
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


op(
    "TensorScatterUpdate",
    ("tensor", "indices", "updates"),
    (),
    _tensor_infer("TensorScatterUpdate"),
    _tensor_kernel("TensorScatterUpdate", "update"),
    grad=_update_grad,
)
op(
    "TensorScatterAdd",
    ("tensor", "indices", "updates"),
    (),
    _tensor_infer("TensorScatterAdd"),
    _tensor_kernel("TensorScatterAdd", "add"),
    grad=_add_grad,
)
op(
    "TensorScatterSub",
    ("tensor", "indices", "updates"),
    (),
    _tensor_infer("TensorScatterSub"),
    _tensor_kernel("TensorScatterSub", "sub"),
    grad=_sub_grad,
)
op(
    "TensorScatterMin",
    ("tensor", "indices", "updates"),
    (),
    _tensor_infer("TensorScatterMin"),
    _tensor_kernel("TensorScatterMin", "min"),
    grad=_min_max_grad,
)
op(
    "TensorScatterMax",
    ("tensor", "indices", "updates"),
    (),
    _tensor_infer("TensorScatterMax"),
    _tensor_kernel("TensorScatterMax", "max"),
    grad=_min_max_grad,
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
