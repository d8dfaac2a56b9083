"""Control-flow contexts: how ops built in a cond branch or a loop body get wired in.

While a branch function or a loop's ``cond``/``body`` runs, the graph's
per-thread build state holds the innermost context, and ``Graph.create_op``
asks it to rewrite each new op's inputs (``enter_inputs``) before the op is
made, as TensorFlow's ``ControlFlowContext.AddOp`` does:

- a :class:`CondContext` passes a value from outside the branch through a
  ``Switch`` on the predicate (one per value, cached), so the value is dead
  when the branch is not taken, and gives ops with no inputs (constants) a
  control input on the branch's pivot, so they are dead too;
- a :class:`WhileContext` brings a value from outside the loop in through a
  constant ``Enter`` (a loop invariant, delivered to every iteration), and
  gives ops with no inputs a control input on the pivot, so they run once
  per iteration; a control input from outside the loop becomes a control
  input on an ``Enter`` of a value that waits for it.

Contexts nest: a value from two levels out enters the outer context first.
Every op records the context it was built in (``op._cf_ctx``), which the
gradients and the views read.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     x = fb.constant(2.0)
    ...     y = fb.cond(x > 1.0, lambda: x * 3.0, lambda: x)
    ...     sorted({op.type for op in y.graph.get_operations()} & {"Switch", "Merge"})
    ['Merge', 'Switch']
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from flowbook.framework.graph import Graph
from flowbook.framework.tensor import Operation, Tensor
from flowbook.ops.array.constant_op import constant

_ENTER = ("Enter", "RefEnter")


class ControlFlowContext:
    """The part of a cond branch or loop body being built.  See the module docstring."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.outer: ControlFlowContext | None = graph._state.cf_context  # the enclosing context
        self.values: dict[Tensor, Tensor] = {}  # outside value -> its stand-in inside
        self.inside: set[Tensor] = set()  # stand-ins made for this context (Switch/Enter outputs)
        self.pivot: Tensor | None = None  # what ops with no inputs wait for
        self.controls: dict[Operation, Operation] = {}  # outside op -> its stand-in here

    # ------------------------------------------------------------- nesting
    def contains(self, ctx: ControlFlowContext | None) -> bool:
        """Whether ``ctx`` is this context or one nested in it."""
        while ctx is not None:
            if ctx is self:
                return True
            ctx = ctx.outer
        return False

    def sees(self, t: Tensor) -> bool:
        """Whether ``t`` can be used here as it is (made here, or a stand-in made for here)."""
        return t in self.inside or self.contains(t.op._cf_ctx)

    @contextlib.contextmanager
    def entered(self) -> Iterator[ControlFlowContext]:
        """Build inside this context for the ``with`` block."""
        state = self.graph._state
        old = state.cf_context
        state.cf_context = self
        try:
            yield self
        finally:
            state.cf_context = old

    @contextlib.contextmanager
    def in_outer(self) -> Iterator[None]:
        """Build in the enclosing context for the ``with`` block."""
        state = self.graph._state
        old = state.cf_context
        state.cf_context = self.outer
        try:
            yield
        finally:
            state.cf_context = old

    # ------------------------------------------------------------- wiring
    def enter_inputs(
        self, op_type: str, inputs: tuple[Tensor, ...], control_inputs: list[Operation] | None
    ) -> tuple[tuple[Tensor, ...], list[Operation] | None]:
        """The inputs and control inputs a new op of ``op_type`` gets in this context."""
        if op_type in _ENTER:  # an Enter takes its value from outside, as it is
            return inputs, control_inputs
        new = tuple(t if self.sees(t) else self.add_value(t) for t in inputs)
        controls = list(control_inputs or ())
        controls = [c for c in controls if self.contains(c._cf_ctx)] + [
            self.add_control(c) for c in controls if not self.contains(c._cf_ctx)
        ]
        invariant = all(t in self.values.values() for t in new)  # none of this iteration
        inner = [
            c for c in controls if self.contains(c._cf_ctx) and c not in self.controls.values()
        ]
        if invariant and self.pivot is not None and not inner:
            controls.append(self.pivot.op)
        return new, controls or control_inputs

    def add_value(self, t: Tensor) -> Tensor:
        raise NotImplementedError  # each context brings values in its own way

    def add_control(self, op: Operation) -> Operation:
        """A control input from outside: here, the op itself (a cond needs no more)."""
        return op


class CondContext(ControlFlowContext):
    """One branch of a ``cond``: ``pred`` and which side (1: true, 0: false) it is."""

    def __init__(self, graph: Graph, pred: Tensor, pivot: Tensor, branch: int) -> None:
        super().__init__(graph)
        self.pred = pred
        self.pivot = pivot
        self.branch = branch

    def add_value(self, t: Tensor) -> Tensor:
        """``t`` seen from this branch: ``Switch(t, pred)[branch]``, made once."""
        got = self.values.get(t)
        if got is not None:
            return got
        with self.in_outer():
            if self.outer is not None and not self.outer.sees(t):
                t = self.outer.add_value(t)
            sw = self.graph.create_op("Switch", (t, self.pred), name="Switch")
        out = sw.outputs[self.branch]
        self.values[t] = out
        self.inside.add(out)
        return out


class WhileContext(ControlFlowContext):
    """A loop's ``cond`` and ``body``: its frame name and how many iterations may overlap."""

    def __init__(self, graph: Graph, frame_name: str, parallel_iterations: int) -> None:
        super().__init__(graph)
        self.frame_name = frame_name
        self.parallel_iterations = parallel_iterations
        self.loop_exits: list[Tensor] = []  # filled when the loop is built
        self.loop_enters: list[Tensor] = []
        self.site: Any = None  # where the user's code called while_loop
        # for the gradient (flowbook.ops.control_flow.while_grad), kept when the loop is built:
        self.body: Any = None  # the body function (a counted loop's, counter included)
        self.structure: Any = None  # the loop variables' nesting
        self.idents: list[Tensor] = []  # the body's inputs (the Switches' true sides)
        self.merges: list[Tensor] = []  # the loop variables' Merges
        self.loop_cond: Tensor | None = None  # the LoopCond output
        self.grad_state: Any = None  # the forward counter and stacks, once a gradient asks

    def enter(self, t: Tensor, is_constant: bool, name: str = "Enter") -> Tensor:
        """``Enter(t)`` into this loop's frame (``t`` must be visible in the outer context)."""
        with self.entered():
            op = self.graph.create_op(
                "Enter",
                (t,),
                {
                    "frame_name": self.frame_name,
                    "is_constant": is_constant,
                    "parallel_iterations": self.parallel_iterations,
                },
                name=name,
            )
        self.inside.add(op.outputs[0])
        return op.outputs[0]

    def add_value(self, t: Tensor) -> Tensor:
        """``t`` seen from inside the loop: a constant Enter of it, made once."""
        got = self.values.get(t)
        if got is not None:
            return got
        outer_t = t
        if self.outer is not None and not self.outer.sees(t):
            outer_t = self.outer.add_value(t)
        got = self.values.get(outer_t)  # asked for by the outer context's stand-in before
        if got is None:
            got = self.values[outer_t] = self.enter(outer_t, is_constant=True)
        self.values[t] = got
        return got

    def add_control(self, op: Operation) -> Operation:
        """An op outside the loop as a control input inside: an Enter of a value that waits
        for it (an edge between frames must go through an Enter)."""
        got = self.controls.get(op)
        if got is None:
            with self.in_outer(), self.graph.control_dependencies([op]):
                token = constant(0, name="control_token")
            got = self.controls[op] = self.enter(token, is_constant=True).op
        return got
