"""``gradients(ys, xs)``: reverse-mode differentiation by adding ops to the graph.

As in the whitepaper (section 4.1), the backward pass is more graph: for
every op between ``xs`` and ``ys`` the op's registered gradient function adds
the ops that compute the gradient of its inputs from the gradients of its
outputs, under the name scope ``gradients/<op>_grad``.  So backprop runs on the
same executor, is pruned like any fetch, and shows in every view of the graph.

The walk:

1. ``between``: ops reachable forward from ``xs`` (through float inputs) that
   ``ys`` depend on; nothing else gets a gradient.
2. visit those ops from the ys backwards (reverse topological order), once
   all gradients flowing into an op's outputs are known; several gradients
   for one tensor are summed (``AddN``), ``stop_gradient`` and ops declared
   ``NOT_DIFFERENTIABLE`` stop the flow, and an op with no gradient declared
   raises ``LookupError`` naming it;
3. return one gradient per x: None where y does not depend on x.

Gradient functions use :func:`~flowbook.ops.math.broadcast_grad.unbroadcast` to sum
a broadcast gradient back to an input's shape (it lives with the ops, which sit
below this module; it is re-exported here under its TensorFlow-era home).

    >>> import flowbook as fb
    >>> x = fb.constant(3.0)
    >>> (dx,) = fb.gradients(x * x, [x])
    >>> with fb.Session() as s:
    ...     float(s.run(dx))
    6.0
"""

from __future__ import annotations

from typing import Any

from flowbook.framework import grad_overrides
from flowbook.framework.graph import get_default_graph
from flowbook.framework.registry import NOT_DIFFERENTIABLE
from flowbook.framework.tensor import Operation, Tensor
from flowbook.framework.tensor_shape import compatible, fmt, num_elements
from flowbook.ops._builder import tensor
from flowbook.ops.array import array_ops
from flowbook.ops.control_flow.while_grad import LoopNode, loop_gradients, loop_of
from flowbook.ops.math import math_ops
from flowbook.ops.math.broadcast_grad import unbroadcast

__all__ = ["gradients", "hessians", "unbroadcast"]
_ENTERS = ("Enter", "RefEnter")


def _is_float(t: Tensor) -> bool:
    return t.dtype.is_floating or t.dtype.is_complex


def _as_x(x: Any) -> Tensor:
    if hasattr(x, "_as_graph_element"):  # a Variable: differentiate at its own output
        x = x._as_graph_element()
    return tensor(x)


def gradients(
    ys: Any,
    xs: Any,
    grad_ys: Any = None,
    name: str = "gradients",
    stop_gradients: Any = None,
    colocate_gradients_with_ops: bool = False,
    gate_gradients: bool = False,
    aggregation_method: Any = None,
) -> list[Tensor | None]:
    """Symbolic d(sum of ys)/d(x) for each x in ``xs``; None where ys do not depend on x.

    >>> import flowbook as fb
    >>> a = fb.constant([1.0, 2.0]); b = fb.constant(5.0)
    >>> ga, gb = fb.gradients(fb.reduce_sum(a * b), [a, b])
    >>> with fb.Session() as s:
    ...     s.run(ga).tolist(), float(s.run(gb))
    ([5.0, 5.0], 3.0)
    """
    ys = [tensor(y) for y in (ys if isinstance(ys, list | tuple) else [ys])]
    xs = [_as_x(x) for x in (xs if isinstance(xs, list | tuple) else [xs])]
    stops = {tensor(t) for t in (stop_gradients or [])}
    if grad_ys is None:
        grad_ys = [None] * len(ys)
    elif not isinstance(grad_ys, list | tuple):
        grad_ys = [grad_ys]
    graph = get_default_graph() if not ys else ys[0].graph
    ops = _between(ys, xs, stops)
    with graph.name_scope(name):
        pending: dict[Tensor, list[Tensor]] = {}  # tensor -> gradients flowing into it
        for y, gy in zip(ys, grad_ys):
            pending.setdefault(y, []).append(_seed(y, gy))
        for op in ops:  # reverse topological order
            in_grads = _backprop(op, pending, stops)
            for t, g in zip(op.inputs, in_grads):
                if g is not None and _is_float(t) and t not in stops:
                    pending.setdefault(t, []).append(g)
        return [_total(pending.get(x)) for x in xs]


def _seed(y: Tensor, gy: Any) -> Tensor:
    """The gradient flowing into ``y`` at the start: ``gy`` as y's dtype, or ones like y."""
    if gy is None:
        return array_ops.ones_like(y)
    gy = tensor(gy, dtype=y.dtype)
    if not compatible(gy._shape, y._shape):
        raise ValueError(
            f"grad_ys for '{y.name}' has shape {fmt(gy._shape)}, but '{y.name}' has "
            f"shape {fmt(y._shape)}"
        )
    return gy


def _backprop(
    op: Any, pending: dict[Tensor, list[Tensor]], stops: set[Tensor]
) -> list[Tensor | None]:
    """The gradients of ``op``'s inputs from those pending on its outputs (empty: none flow)."""
    out_grads = [_total(pending.get(t)) for t in op.outputs]
    if all(g is None for g in out_grads):
        return []
    if isinstance(op, LoopNode):  # a while loop, differentiated as a whole
        return loop_gradients(op, out_grads, gradients)
    if not op.inputs or op.type in _ENTERS:
        return []  # (an Enter is crossed only by its loop's LoopNode)
    if any(t in stops for t in op.outputs):
        return []
    for t, g in zip(op.outputs, out_grads):
        if t in pending:
            pending[t] = [g]  # keep the summed form for xs that are outputs
    return _apply(op, out_grads)


def hessians(
    ys: Any,
    xs: Any,
    name: str = "hessians",
    colocate_gradients_with_ops: bool = False,
    gate_gradients: bool = False,
    aggregation_method: Any = None,
) -> list[Tensor | None]:
    """For each x, the second derivatives of sum(ys), shaped ``x.shape + x.shape``: gradients of
    each element of the gradient (x needs a static size; TF1's loop is unrolled here).

    >>> import flowbook as fb
    >>> x = fb.constant([1.0, 2.0])
    >>> (h,) = fb.hessians(fb.reduce_sum(x * x * x), x)
    >>> with fb.Session() as s:
    ...     s.run(h).tolist()
    [[6.0, 0.0], [0.0, 12.0]]
    """
    xs = [_as_x(x) for x in (xs if isinstance(xs, list | tuple) else [xs])]
    out: list[Tensor | None] = []
    graph = xs[0].graph if xs else get_default_graph()
    with graph.name_scope(name):
        for x, g in zip(xs, gradients(ys, xs)):
            n = num_elements(x._shape)
            if n is None:
                raise ValueError(f"hessians: '{x.name}' needs a static shape, got {fmt(x._shape)}")
            if g is None:
                out.append(None)
                continue
            flat = array_ops.reshape(g, [-1])
            rows = [gradients(flat[i], x)[0] for i in range(n)]
            rows = [array_ops.zeros_like(x) if r is None else r for r in rows]
            out.append(array_ops.reshape(array_ops.stack(rows), [*x._shape, *x._shape]))
    return out


def _total(grads: list[Tensor] | None) -> Tensor | None:
    if not grads:
        return None
    if len(grads) == 1:
        return grads[0]
    return math_ops.add_n(grads)


def _apply(op: Operation, out_grads: list[Tensor | None]) -> list[Tensor | None]:
    grad_fn = grad_overrides.gradient_function(op)
    if grad_fn is NOT_DIFFERENTIABLE:
        return [None] * len(op.inputs)
    if grad_fn is None:
        raise LookupError(
            f"No gradient defined for operation '{op.name}' (op type: {op.type}), "
            f"created at {op.site.describe()}."
        )
    filled = [
        g if g is not None else array_ops.zeros_like(t) for g, t in zip(out_grads, op.outputs)
    ]
    graph = op.graph
    with graph.name_scope(f"{op.name}_grad"):
        result = grad_fn(op, *filled)
    if isinstance(result, Tensor) or result is None:
        result = [result]
    result = list(result)
    if len(result) != len(op.inputs):
        raise ValueError(
            f"Gradient of {op.describe()} returned {len(result)} values for {len(op.inputs)} inputs"
        )
    return result


def _between(ys: list[Tensor], xs: list[Tensor], stops: set[Tensor]) -> list[Any]:
    """Ops on a path from xs to ys, ys-side first (reverse topological order); a while
    loop on the path is one :class:`~flowbook.ops.control_flow.while_grad.LoopNode` there."""
    consumers: dict[Operation, list[Operation]] = {}
    for op in ys[0].graph.get_operations() if ys else []:
        for t in op.inputs:
            consumers.setdefault(t.op, []).append(op)
    reached: set[Operation] = set()
    stack = [x.op for x in xs]
    from_x: set[Operation] = set()
    while stack:  # forward from the xs' ops
        op = stack.pop()
        if op in from_x:
            continue
        from_x.add(op)
        stack.extend(consumers.get(op, ()))
    order: list[Any] = []
    loops: dict[Any, LoopNode] = {}
    stack2: list[tuple[Any, bool]] = [(y.op, False) for y in ys]
    while stack2:  # backward from the ys, post-order = topological order
        op, done = stack2.pop()
        if done:
            order.append(op)
            continue
        if op in reached or op not in from_x:
            continue
        ctx = loop_of(op)
        if ctx is not None:  # every Exit of a loop stands for the one loop node
            node = loops.get(ctx)
            if node is None:
                node = loops[ctx] = LoopNode(ctx)
            reached.add(op)
            if node in reached:
                continue
            op = node
        reached.add(op)
        stack2.append((op, True))
        for t in op.inputs:
            if t.op in from_x and t not in stops:
                stack2.append((t.op, False))
    order.reverse()
    return order
