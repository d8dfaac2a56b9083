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
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from flowbook.framework.errors import InvalidArgumentError
from flowbook.framework.graph import name_scope
from flowbook.framework.registry import NOT_DIFFERENTIABLE, OpDef, Out, register
from flowbook.framework.tensor import Operation, Tensor
from flowbook.framework.tensor_shape import Shape, compatible, fmt
from flowbook.ops._builder import make1, same_dtype, tensor
from flowbook.ops._shape_inputs import check_int, const_ints, int_input, vector_len
from flowbook.ops.array.constant_op import convert_to_tensor
from flowbook.ops.array.shape_ops import shape
from flowbook.ops.state.state_ops import _ref as variable_ref
from flowbook.state.var_state import VarState

__all__ = ["gather_nd", "scatter_add", "scatter_nd", "scatter_sub", "scatter_update"]


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


for _op, _how in (("ScatterUpdate", "update"), ("ScatterAdd", "add"), ("ScatterSub", "sub")):
    register(
        OpDef(
            _op,
            ("ref", "indices", "updates"),
            ("use_locking",),
            _scatter_infer(_op),
            _scatter_kernel(_op, _how),
            stateful=True,
            ref_inputs=(0,),
            grad=NOT_DIFFERENTIABLE,
        )
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


register(
    OpDef(
        "GatherNd",
        ("params", "indices"),
        (),
        _gather_nd_infer,
        _gather_nd_kernel,
        grad=_gather_nd_grad,
    )
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


register(
    OpDef(
        "ScatterNd",
        ("indices", "updates", "shape"),
        (),
        _scatter_nd_infer,
        _scatter_nd_kernel,
        host_inputs=(2,),
        grad=_scatter_nd_grad,
    )
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
