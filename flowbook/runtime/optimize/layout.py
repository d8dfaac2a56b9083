"""What the optimiser's passes decide (:class:`Rewrite`), and the Plan laid out from it.

The passes of ``flowbook.runtime.optimize.optimizer`` never change a Plan (plans are fixed
layouts); they record their decisions in one :class:`Rewrite`, keyed by the
written plan's op indices and slots:

- ``consts``: slots whose value is known before the run (folded);
- ``alias``: slots whose value is another slot's (an identity removed, a
  duplicate merged), resolved through chains by ``resolve``;
- ``removed``: ops that no longer run, each with ``waits_on``, the ops
  that what waited for it must wait for instead (a NoOp's control inputs, a
  merged op's first copy, nothing for a folded op);
- ``fusions``: ops whose place a fused op (``flowbook.runtime.optimize.fuse``)
  takes, each with the :class:`Fused` op that runs there instead: its own
  op object, kernel, input and output slots, and the written ops it stands
  for (the others of them are ``removed``; it waits for all they waited for);
  ``fused`` says the same by names (fused op -> the written ops it replaced),
  which ``flowbook.runtime.optimize.optimizer.Optimized`` reads for ``origin``.

:func:`relayout` then builds the Plan that runs: the ops not removed, in the
written order (rewiring only ever points back to earlier ops, so the order
stays topological), inputs resolved, waits carried through removed ops, then
ops that nothing reads or waits for any more dropped unless they change state
(or are the run's roots: fetched ops and targets).  Slots keep their numbers;
an output nobody reads any more goes to ``DISCARD``; the folded values that
kept ops read are ``plan.constants``, never freed.

    >>> import numpy as np, flowbook as fb
    >>> from flowbook.runtime.plan import build_plan
    >>> with fb.Graph().as_default() as g:
    ...     y = fb.identity(fb.constant(1.0) + 2.0)
    ...     plan = build_plan(g, [y], [], [], bind=lambda op: op._opdef.bound_kernel(np, op.attrs))
    >>> [op.name for op in plan.ops]
    ['Const', 'add/y', 'add', 'Identity']
    >>> rw = Rewrite(plan, {}); rw.remove(0, "folded", ())
    >>> rw.consts[plan.outputs[0][0]] = np.float32(1.0)
    >>> new = relayout(plan, rw); [op.name for op in new.ops], new.constants
    (['add/y', 'add', 'Identity'], ((1, np.float32(1.0)),))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flowbook.framework.tensor import Operation
from flowbook.runtime.placement import CopyOp
from flowbook.runtime.plan import DISCARD, Plan, _static_frees


class Fused:
    """A fused op that runs in place of the written ops ``members``."""

    __slots__ = ("fn", "inputs", "members", "op", "outputs")

    def __init__(
        self,
        op: Operation,
        fn: Callable[..., Any],
        inputs: tuple[int, ...],
        outputs: tuple[int, ...],
        members: tuple[int, ...],
    ) -> None:
        self.op = op  # the fused op (not in the graph), named as the last member
        self.fn = fn  # its bound kernel (reading the variables among its inputs)
        self.inputs = inputs  # slots of its data inputs (the written plan's)
        self.outputs = outputs  # slots of its outputs
        self.members = members  # the written ops it replaces, by index, in order


class Rewrite:
    """The passes' decisions for one plan and feed-shape signature.  See the module docstring."""

    __slots__ = (
        "alias",
        "consts",
        "fused",
        "fusions",
        "notes",
        "plan",
        "removed",
        "shapes",
        "waits_on",
    )

    def __init__(self, plan: Plan, shapes: dict[int, tuple[int, ...]]) -> None:
        self.plan = plan  # the written plan
        self.shapes = shapes  # slot -> the actual shape of its value, where known before the run
        self.consts: dict[int, Any] = {}  # slot -> its value, known before the run
        self.alias: dict[int, int] = {}  # slot -> the slot holding its value instead
        self.removed: dict[int, str] = {}  # op index -> how it went ("folded", "merged"...)
        self.waits_on: dict[int, tuple[int, ...]] = {}  # removed op -> what its waiters wait for
        self.notes: list[str] = []  # one sentence per rewrite
        self.fused: dict[str, tuple[str, ...]] = {}  # fused op name -> the written ops it replaced
        self.fusions: dict[int, Fused] = {}  # op index -> the fused op that runs in its place

    def resolve(self, s: int) -> int:
        """The slot that holds slot ``s``'s value once the rewrites are made."""
        alias = self.alias
        while s in alias:
            s = alias[s]
        return s

    def shape(self, s: int) -> tuple[int, ...] | None:
        """The actual shape of slot ``s``'s value, if known before the run."""
        if s in self.consts:
            return tuple(self.consts[s].shape)
        return self.shapes.get(s)

    def remove(self, i: int, how: str, waits_on: tuple[int, ...]) -> None:
        """Op ``i`` no longer runs; what waited for it waits for ``waits_on`` instead."""
        self.removed[i] = how
        self.waits_on[i] = waits_on

    def outputs(self, i: int) -> tuple[int, ...]:
        """The output slots of what runs at op ``i``'s place (a fused op's, if one does)."""
        fused = self.fusions.get(i)
        return self.plan.outputs[i] if fused is None else fused.outputs

    def note(self, op: Operation, what: str) -> None:
        self.notes.append(f"{op.type} '{op.name}': {what}.")

    def share_constants(self) -> None:
        """Equal small constants (same type, dtype, shape, bytes) become one slot, so that
        ops reading them compare equal for common subexpression elimination."""
        first: dict[Any, int] = {}
        for s, v in self.consts.items():
            if v.nbytes <= 256:
                key = (type(v), v.dtype.str, v.shape, v.tobytes())
                t = first.setdefault(key, s)
                if t != s:
                    self.alias[s] = t


def relayout(plan: Plan, rw: Rewrite) -> Plan | None:
    """The Plan that runs ``plan`` as ``rw`` rewrote it; None if it drops nothing."""
    inputs = [tuple(rw.resolve(s) for s in ins) for ins in plan.inputs]
    for i, fused in rw.fusions.items():
        inputs[i] = tuple(rw.resolve(s) for s in fused.inputs)
    waits, asked = waits_of(plan, rw)
    live = _live(plan, rw, waits, asked)
    if all(live):
        return None
    return _layout(plan, rw, inputs, waits, live)


def waits_of(plan: Plan, rw: Rewrite) -> tuple[list[set[int]], set[int]]:
    """Per op, the kept ops it waits for once the rewrites are made (none for removed ops),
    and the ops the run must run because a removed root (a target NoOp) asked for them."""
    expanded: dict[int, frozenset[int]] = {}

    def through(j: int) -> frozenset[int]:  # the kept ops waiting for op j means waiting for
        if j not in rw.removed:
            return frozenset((j,))
        got = expanded.get(j)
        if got is None:
            got = expanded[j] = frozenset().union(*(through(k) for k in rw.waits_on[j]))
        return got

    waits: list[set[int]] = [set() for _ in plan.ops]
    for i in range(len(plan.ops)):
        if i not in rw.removed:  # waiting for a removed op: for what it stands for now
            members = rw.fusions[i].members if i in rw.fusions else (i,)
            waits[i] = set().union(*(through(j) for m in members for j in plan.producers[m]))
            waits[i].discard(i)  # a fused op's members waiting for one another
    asked = set().union(*(through(i) for i in rw.removed if not plan.consumers[i]))
    return waits, asked


def drop_dead(plan: Plan, rw: Rewrite) -> None:
    """Mark removed the ops the rewritten plan would not run (nothing reads or waits for
    them, and they change no state), so later passes count only live readers."""
    waits, asked = waits_of(plan, rw)
    for i, alive in enumerate(_live(plan, rw, waits, asked)):
        if not alive and i not in rw.removed:
            rw.remove(i, "dropped", ())


def _live(plan: Plan, rw: Rewrite, waits: list[set[int]], asked: set[int]) -> list[bool]:
    """Per written op: whether the rewritten plan runs it (``asked``: ops it must run)."""
    fetched = {rw.resolve(s) for s in plan.fetch_slots if s is not None}
    live = [i in asked for i in range(len(plan.ops))]
    for i in range(len(plan.ops) - 1, -1, -1):
        if i in rw.removed:
            continue
        op = plan.ops[i]
        if not live[i]:
            opdef = None if type(op) is CopyOp else op._opdef
            root = not plan.consumers[i]  # a fetched op or a target
            effect = opdef is not None and (opdef.stateful or opdef.resource or opdef.blocking)
            live[i] = root or effect or any(s in fetched for s in rw.outputs(i))
        if live[i]:
            for j in waits[i]:
                live[j] = True
    return live


def _layout(
    plan: Plan, rw: Rewrite, inputs: list[tuple[int, ...]], waits: list[set[int]], live: list[bool]
) -> Plan:
    """The new Plan of the live ops."""
    kept = [i for i, alive in enumerate(live) if alive]
    new_index = {i: k for k, i in enumerate(kept)}
    new = Plan()
    fused = rw.fusions
    new.ops = [fused[i].op if i in fused else plan.ops[i] for i in kept]
    new.fns = [fused[i].fn if i in fused else plan.fns[i] for i in kept]
    new.inputs = [inputs[i] for i in kept]
    new.heavy = [
        any(plan.heavy[m] for m in fused[i].members) if i in fused else plan.heavy[i] for i in kept
    ]
    new.devices = [plan.devices[i] for i in kept]
    new.dynamic = tuple(_dynamic(fused[i].op) if i in fused else plan.dynamic[i] for i in kept)
    new.n_slots = plan.n_slots
    new.feed_slots = list(plan.feed_slots)
    new.fetch_slots = [None if s is None else rw.resolve(s) for s in plan.fetch_slots]
    uses = [0] * plan.n_slots
    for ins in new.inputs:
        for s in ins:
            uses[s] += 1
    fetched = {s for s in new.fetch_slots if s is not None}
    new.outputs = [
        tuple(s if s != DISCARD and (uses[s] or s in fetched) else DISCARD for s in rw.outputs(i))
        for i in kept
    ]
    new.constants = tuple((s, rw.consts[s]) for s in sorted(rw.consts) if uses[s])
    for s in fetched:
        uses[s] += 1
    for s in new.feed_slots:
        uses[s] += 1
    for s, _ in new.constants:
        uses[s] += 1  # known before the run, never freed
    new.uses = uses
    producers = [tuple(sorted(new_index[j] for j in waits[i])) for i in kept]
    consumers: list[list[int]] = [[] for _ in kept]
    for k, ps in enumerate(producers):
        for p in ps:
            consumers[p].append(k)
    new.producers = producers
    new.consumers = [tuple(c) for c in consumers]
    new.pending = [len(p) for p in producers]
    new.ready = [k for k, p in enumerate(new.pending) if p == 0]
    new.frees = _static_frees(new)
    new.any_heavy = any(new.heavy)
    new.copies = [op for op in new.ops if type(op) is CopyOp]
    new.off_host = plan.off_host
    new.blocking = any(op._opdef.blocking for op in new.ops if type(op) is not CopyOp)
    return new


def _dynamic(op: Operation) -> int:
    """``Plan.dynamic`` for a fused op: 0 if its outputs' shapes are all known."""
    if all(t._shape is not None and None not in t._shape for t in op.outputs):
        return 0
    return 1 if len(op.outputs) == 1 else 2
