"""The gradient of a ``while_loop``: a backward loop over the forward iterations, last first.

``flowbook.autodiff.gradients`` treats a loop as one node (:class:`LoopNode`): its
outputs are the loop's Exits, its inputs the loop variables' initial values
and the outside values the loop reads (its constant Enters).  When the
gradient reaches it, :func:`loop_gradients` builds, as TensorFlow does, more
loop:

1. **In the forward loop** (once per loop): an iteration counter next to the
   loop variables, and per loop variable a ``StackPush`` of its value at the
   start of every iteration that ran the body.  The counter's
   ``NextIteration`` waits for the pushes, so a run that needs the count runs
   them, and the count's ``Exit`` comes after the last push.
2. **The backward loop** runs as many iterations as the forward one did.
   Each pops the loop variables of one forward iteration, builds the body
   again on them (``body`` is kept by the loop's context) and adds the
   body's gradient: the loop variables' gradients flow to the previous
   iteration, the outside values' gradients are summed.

TensorFlow pushes every forward value the gradient ops read; flowbook pushes
only the loop variables and recomputes the body from them in the backward
loop (one more forward pass per iteration, less memory: a checkpointing
trade).  A body that updates variables sees them as they are when the
backward loop runs.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     x = fb.constant(2.0)
    ...     _, y = fb.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, y * x), [0, 1.0])
    ...     float(s.run(fb.gradients(y, x)[0]))   # d(x**3)/dx at 2
    12.0
"""

from __future__ import annotations

from typing import Any

from flowbook.framework import nest
from flowbook.framework.graph import Graph
from flowbook.framework.tensor import Operation, Tensor
from flowbook.ops.array import array_ops
from flowbook.ops.array.constant_op import constant
from flowbook.ops.control_flow.cf_context import WhileContext
from flowbook.ops.control_flow.control_flow import while_loop

__all__ = ["LoopNode", "loop_gradients", "loop_of"]

_EXITS = ("Exit", "RefExit")


def loop_of(op: Operation) -> WhileContext | None:
    """The loop whose Exit ``op`` is (None for any other op, or a loop built without a
    context, such as one imported from a GraphDef)."""
    if op.type not in _EXITS:
        return None
    ctx = op.inputs[0].op._cf_ctx
    return ctx if isinstance(ctx, WhileContext) and ctx.body is not None else None


class LoopNode:
    """A while loop as one node of the gradient walk.  See the module docstring."""

    __slots__ = ("ctx", "inputs", "name", "outputs")

    def __init__(self, ctx: WhileContext) -> None:
        self.ctx = ctx
        self.name = ctx.frame_name
        self.outputs: list[Tensor] = list(ctx.loop_exits)
        enters = {id(e): e for e in ctx.values.values()}  # one per value (keyed twice if nested)
        outer = [e.op.inputs[0] for e in enters.values()]
        self.inputs: list[Tensor] = [e.op.inputs[0] for e in ctx.loop_enters] + outer


def _is_float(t: Tensor) -> bool:
    return t.dtype.is_floating or t.dtype.is_complex


def _op(graph: Graph, op_type: str, inputs: tuple[Tensor, ...], name: str, **attrs: Any) -> Tensor:
    return graph.create_op(op_type, inputs, attrs or None, name=name).outputs[0]


def _forward_state(ctx: WhileContext) -> tuple[Tensor, list[Tensor]]:
    """The forward loop's iteration count (an Exit) and a stack per loop variable; made once."""
    if ctx.grad_state is not None:
        return ctx.grad_state
    g = ctx.graph
    with ctx.in_outer():
        stacks = [
            _op(g, "Stack", (), "f_stack", elem_type=v.dtype, stack_name=f"{ctx.frame_name}/{k}")
            for k, v in enumerate(ctx.idents)
        ]
        zero = constant(0, name="f_count_start")
    start = ctx.enter(zero, is_constant=False, name="f_count")
    with ctx.entered():
        merge = g.create_op("Merge", (start, start), name="f_count").outputs[0]
        false, true = g.create_op("Switch", (merge, ctx.loop_cond), name="f_count").outputs
        with ctx.in_outer():
            count = _op(g, "Exit", (false,), "f_count")
        body_pivot = _op(g, "Identity", (true,), "f_count")
        pushes = [
            g.create_op("StackPush", (ctx.add_value(h), v), {"swap_memory": False}, "f_push")
            for h, v in zip(stacks, ctx.idents)
        ]
        with g.control_dependencies(pushes):
            step = _op(g, "AddV2", (body_pivot, constant(1)), "f_count_next")
        nxt = _op(g, "NextIteration", (step,), "f_count")
    merge.op.inputs = (start, nxt)
    g._version += 1
    ctx.grad_state = (count, stacks)
    return ctx.grad_state


def _add_like(total: Tensor, grad: Tensor) -> Tensor:
    """``total + grad``, with the static shape of ``total`` (which the sum keeps)."""
    out = total + grad
    out.set_shape(total._shape)
    return out


def loop_gradients(
    node: LoopNode, out_grads: list[Tensor | None], gradients: Any
) -> list[Tensor | None]:
    """Gradients for ``node.inputs`` given the gradients of its Exits (None: none flows).

    ``gradients`` is ``flowbook.autodiff.gradients.gradients`` (the backward body
    differentiates the rebuilt body with it).
    """
    ctx = node.ctx
    g = ctx.graph
    count, stacks = _forward_state(ctx)
    k = len(ctx.loop_enters)
    floats = [j for j in range(k) if _is_float(ctx.loop_enters[j])]
    outside = node.inputs[k:]
    outside_f = [j for j, t in enumerate(outside) if _is_float(t)]
    if not floats and not outside_f:
        return [None] * len(node.inputs)
    with g.control_dependencies([e.op for e in ctx.loop_exits] + [count.op]):
        n = array_ops.identity(count, name="b_count")
        handles = [array_ops.identity(h, name="b_stack") for h in stacks]
    dys = [
        out_grads[j] if out_grads[j] is not None else array_ops.zeros_like(ctx.loop_exits[j])
        for j in floats
    ]
    accs = [array_ops.zeros_like(outside[j]) for j in outside_f]
    shapes = [(), [ctx.merges[j]._shape for j in floats], [outside[j]._shape for j in outside_f]]

    def body(i: Tensor, dvs: list[Tensor], sums: list[Tensor]) -> Any:
        here = g._state.cf_context
        xs = []
        for h, m in zip(handles, ctx.merges):
            x = _op(g, "StackPop", (h,), "b_pop", elem_type=m.dtype)
            x._shape = m._shape
            xs.append(x)
        ys = nest.flatten(ctx.body(*nest.pack_sequence_as(ctx.structure, xs)))
        wrt = [xs[j] for j in floats] + [here.add_value(outside[j]) for j in outside_f]
        grads = gradients([ys[j] for j in floats], wrt, grad_ys=list(dvs))
        new_dvs = []
        for j, gr in zip(floats, grads[: len(floats)]):
            if gr is None:
                gr = array_ops.zeros_like(xs[j])
            else:  # what the gradient ops cannot infer, the loop variable's shape says
                gr.set_shape(xs[j]._shape)
            new_dvs.append(gr)
        new_sums = [
            s if gr is None else _add_like(s, gr) for s, gr in zip(sums, grads[len(floats) :])
        ]
        with g.control_dependencies([x.op for x in xs]):
            i_next = i - 1
        return i_next, new_dvs, new_sums

    _, dvs, sums = while_loop(
        lambda i, dvs, sums: i > 0,
        body,
        [n, dys, accs],
        shape_invariants=shapes,
        parallel_iterations=ctx.parallel_iterations,
        name="while_grad",
    )
    result: list[Tensor | None] = [None] * len(node.inputs)
    for j, d in zip(floats, dvs):
        result[j] = d
    for j, s in zip(outside_f, sums):
        result[k + j] = s
    return result
