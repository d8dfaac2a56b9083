"""The layout of a plan with branches and loops: what the frame rule needs, once per plan.

:class:`Layout` holds, per op of a plan, its control-flow kind (the codes
below; 0 for every other op), the frame an Enter starts, and the edges
each op's outputs travel along, worked out once and kept in the session's
``RunPath``, with the frames that run compiled (``loops``, filled by
``flowbook.runtime.frames`` on first use).  :class:`Frame` is one instance of a
loop's frame in a run, and ``ROOT`` the tag of a run's top level.  ``flowbook.runtime.frames``
runs plans on it; the Stepper steps them.

    >>> import numpy as np, flowbook as fb
    >>> from flowbook.runtime.plan import build_plan
    >>> with fb.Graph().as_default() as g:
    ...     i = fb.while_loop(lambda i: i < 10, lambda i: i + 3, [fb.constant(0)])
    ...     plan = build_plan(g, [i], [], [], bind=lambda op: op._opdef.bound_kernel(np, op.attrs))
    >>> [op.type for op, k in zip(plan.ops, Layout(plan).kinds) if k]
    ['Enter', 'Merge', 'Switch', 'Exit', 'NextIteration']
"""

from __future__ import annotations

from typing import Any

from flowbook.ops.control_flow.control_flow_prims import CONTROL_FLOW_TYPES
from flowbook.runtime.plan import DISCARD, Plan

# the control-flow kinds (flowbook.ops.control_flow.control_flow_prims.CONTROL_FLOW_TYPES)
SWITCH, MERGE, ENTER, EXIT, NEXT, TRIGGER = 1, 2, 3, 4, 5, 6


class Layout:
    """What the frame rule (``flowbook.runtime.frames``) needs of a plan, worked out once per plan.

    Per op: its control-flow ``kind`` (0 for every other op), the
    ``frame_name``/``is_constant`` of an Enter, and ``edges``: for each op it
    releases, the pairs (output index, input index) it fills (empty for a
    control edge).  ``expect`` is how many producers a Merge waits for
    before it can be dead (1 for a loop's Merge).
    """

    __slots__ = (
        "constant",
        "edges",
        "expect",
        "fed_args",
        "frame_of",
        "kinds",
        "loops",
        "n_inputs",
        "parallel",
        "producer_of",
    )

    def __init__(self, plan: Plan) -> None:
        ops = plan.ops
        self.kinds = [CONTROL_FLOW_TYPES.get(op.type, 0) for op in ops]
        self.frame_of = [
            op.attrs.get("frame_name", "") if k == ENTER else "" for op, k in zip(ops, self.kinds)
        ]
        self.constant = [bool(op.attrs.get("is_constant")) for op in ops]
        # an Enter's while_loop's parallel_iterations: its frame's bound on pool kernels
        self.parallel = [int(op.attrs.get("parallel_iterations", 10) or 10) for op in ops]
        self.n_inputs = [len(ins) for ins in plan.inputs]
        feed_pos = {s: k for k, s in enumerate(plan.feed_slots)}
        self.producer_of: dict[int, tuple[int, int]] = {}  # slot -> (op, output index)
        for p, outs in enumerate(plan.outputs):
            for k, s in enumerate(outs):
                if s != DISCARD:
                    self.producer_of[s] = (p, k)
        # per op: (input index, feed position) of its fed inputs
        self.fed_args: list[tuple[tuple[int, int], ...]] = []
        edges: list[dict[int, list[tuple[int, int]]]] = [{} for _ in ops]
        for c in range(len(ops)):
            fed = []
            for k, s in enumerate(plan.inputs[c]):
                if s in self.producer_of:
                    p, k_out = self.producer_of[s]
                    edges[p].setdefault(c, []).append((k_out, k))
                else:
                    fed.append((k, feed_pos[s]))
            self.fed_args.append(tuple(fed))
        for c in range(len(ops)):
            for p in plan.producers[c]:
                edges[p].setdefault(c, [])  # control edges: nothing to fill
        self.edges = [tuple((c, tuple(pairs)) for c, pairs in e.items()) for e in edges]
        self.expect = [
            (1 if any(self.kinds[p] == NEXT for p in plan.producers[i]) else len(plan.producers[i]))
            if k == MERGE
            else 0
            for i, k in enumerate(self.kinds)
        ]
        self.loops: dict[str, Any] | None = (
            None  # compiled frames (flowbook.runtime.codegen.compiled_loops), by name
        )


class Frame:
    """One instance of a loop's frame: started by an Enter in its parent's ``tag``."""

    __slots__ = ("busy", "invariants", "iterations", "live", "name", "parallel", "parent")

    def __init__(self, parent: tuple[Any, int], name: str, parallel: int = 10) -> None:
        self.parent = parent  # the tag the frame's Enters ran in; its Exits deliver there
        self.name = name  # the Enter ops' frame_name
        self.iterations = 1  # iterations started so far (0 .. iterations - 1)
        self.invariants: list[tuple[int, tuple[Any, ...], bool]] = []  # constant Enters' values
        self.live = False  # whether a live value entered it (else its Exits pass deadness on)
        self.parallel = max(1, parallel)  # its while_loop's parallel_iterations
        self.busy = 0  # its kernels on the pool now: at most ``parallel``

    def progress(self) -> int:
        """How many times the body has run so far (iterations started, less the one running)."""
        return max(self.iterations - 1, 0)

    def __repr__(self) -> str:
        return f"Frame({self.name!r})"


ROOT: tuple[Any, int] = (None, 0)  # the tag of the run's top level
