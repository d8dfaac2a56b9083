"""Compiled loops: an innermost ``while_loop`` run as one Python ``while``.

The scheduler under the frame rule (``flowbook.runtime.frames``) walks every
iteration through TensorFlow's primitives: Merge, the condition, LoopCond, Switch, the body,
NextIteration, each a tagged token with its bookkeeping: about 1.5 µs per
op, 8 ops for the smallest loop.  A loop whose frame holds no other frame
and no branch (the common innermost loop: a counter, an accumulator, a
recurrent step) has one legal schedule that is also the fastest: each
iteration runs its condition ops, then its body ops, in a topological
order.  :func:`compile_loops` finds such frames in a plan and emits each as
one Python function, as ``flowbook.runtime.codegen.compile`` emits a straight line:

.. code-block:: python

    def loop(a0, a1, deadline, clock, cell):
        s4 = a0                      # the Merge: the loop variable
        s5 = a1                      # a constant Enter: a loop invariant
        it = 0
        while True:
            s7 = f6(s4, s5)          # the condition's ops
            s8 = f7(s7)              # LoopCond
            if not s8: break
            s9 = s4                  # Switch's true side
            s11 = f9(s9)             # the body's ops
            s4 = s11                 # NextIteration into the Merge
            it += 1
            cell[0] = it             # progress, for a display (Observer.on_loop)
            ...                      # every 256 iterations: the deadline
        return (s4,), it             # the Exits: Switch's false side

The frame rule runs such a frame as one step: when every Enter of the
frame has delivered in a tag, it calls the function and delivers its Exits
into that tag (dead Enters, a loop on an untaken branch: dead Exits).  A
loop around it still runs on the scheduler, its inner loop compiled.  Runs
that observe ops one by one or time them (hooks, FULL_TRACE, the Stepper)
keep the interpreted path: they see every op of every iteration.

A kernel error inside is traced back to its op through the line number and
named with the iteration, as the interpreted path names it; a deadline is
checked every 256 iterations; KeyboardInterrupt stops the loop between any
two ops.

    >>> import numpy as np, flowbook as fb
    >>> from flowbook.runtime.plan import build_plan
    >>> with fb.Graph().as_default() as g:
    ...     i = fb.while_loop(lambda i: i < 10, lambda i: i + 3, [fb.constant(0)])
    ...     plan = build_plan(g, [i], [], [], bind=lambda op: op._opdef.bound_kernel(np, op.attrs))
    >>> sorted(compile_loops(plan))
    ['while/while_context']
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flowbook.ops.control_flow.control_flow_prims import CONTROL_FLOW_TYPES
from flowbook.runtime.frame_layout import ENTER, EXIT, MERGE, NEXT, SWITCH, TRIGGER
from flowbook.runtime.plan import DISCARD, Plan

LOOP_FILENAME = "<flowbook loop>"  # the file name of compiled loops in tracebacks
DEADLINE_EVERY = 256  # iterations between two reads of the clock when a deadline is set

__all__ = ["CompiledLoop", "LoopDeadline", "compile_loops"]


class LoopDeadline(Exception):
    """Raised inside a compiled loop past the run's deadline (the scheduler names the op)."""


class CompiledLoop:
    """One frame compiled to a Python ``while``.  See the module docstring.

    ``enters``: the frame's Enter ops (plan indices), in argument order;
    ``exits``: its Exit ops, in the order the function returns their values;
    ``fn(*values, deadline, clock, cell)`` (``clock``: ``time.monotonic``; ``cell[0]``:
    iterations so far) returns ``(exit values, iterations)``;
    ``line_to_op`` maps a line of ``fn`` to the op it calls;
    ``once``/``per_check``/``per_body``: the ops that ran once (the Exits), once per
    condition check (n + 1 times for n iterations) and once per body run.
    """

    __slots__ = (
        "enters",
        "exits",
        "fn",
        "line_to_op",
        "name",
        "once",
        "per_body",
        "per_check",
        "position",
    )

    def __init__(self, name: str) -> None:
        self.name = name
        self.enters: list[int] = []
        self.position: dict[int, int] = {}  # Enter op -> its argument position
        self.exits: list[int] = []
        self.fn: Callable[..., tuple[tuple[Any, ...], int]] | None = None
        self.line_to_op: dict[int, int] = {}
        self.once: list[int] = []
        self.per_check: list[int] = []
        self.per_body: list[int] = []

    def op_index(self, tb: Any) -> int | None:
        """Which op raised, from a traceback through ``fn`` (None: not one of its lines)."""
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == LOOP_FILENAME:
                return self.line_to_op.get(tb.tb_lineno)
            tb = tb.tb_next
        return None

    def op_args(self, tb: Any, inputs: list[int]) -> list[Any] | None:
        """The values the op that raised was called with (its input slots ``inputs``), read
        from ``fn``'s frame in traceback ``tb``: a slot ``s`` is the local ``s<s>``."""
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == LOOP_FILENAME:
                local = tb.tb_frame.f_locals
                return [local.get(f"s{s}") for s in inputs]
            tb = tb.tb_next
        return None

    def iteration(self, tb: Any) -> int:
        """The iteration ``fn`` was in when it raised, from its traceback."""
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == LOOP_FILENAME:
                return int(tb.tb_frame.f_locals.get("it", 0))
            tb = tb.tb_next
        return 0

    def count(self, runs: list[int], iterations: int) -> None:
        """Add one run of the loop that did ``iterations`` body runs to ``runs``."""
        for i in self.once:
            runs[i] += 1
        for i in self.per_check:
            runs[i] += iterations + 1
        for i in self.per_body:
            runs[i] += iterations


def compile_loops(plan: Plan) -> dict[str, CompiledLoop]:
    """The frames of ``plan`` that run as a Python ``while``, by frame name."""
    kinds = [CONTROL_FLOW_TYPES.get(op.type, 0) for op in plan.ops]
    enters_of: dict[str, list[int]] = {}
    for i, (op, k) in enumerate(zip(plan.ops, kinds)):
        if k == ENTER:
            enters_of.setdefault(op.attrs.get("frame_name", ""), []).append(i)
    out = {}
    for name, enters in enters_of.items():
        loop = _compile(plan, kinds, name, enters)
        if loop is not None:
            out[name] = loop
    return out


def _frame_ops(plan: Plan, kinds: list[int], enters: list[int]) -> set[int] | None:
    """The ops of the frame its ``enters`` start (Enters and Exits included), or None when
    a loop inside it makes it run on the scheduler."""
    consumers = plan.consumers
    frame: set[int] = set()
    todo = list(enters)
    while todo:
        i = todo.pop()
        if i in frame:
            continue
        frame.add(i)
        if kinds[i] == EXIT:
            continue
        for c in consumers[i]:
            if kinds[c] == ENTER:  # a loop inside: the frame runs on the scheduler
                return None
            todo.append(c)
    return frame


def _plain(plan: Plan, kinds: list[int], frame: set[int]) -> bool:
    """Whether the frame holds only what a ``while`` can run: one LoopCond, no trigger, no op
    that may wait (the scheduler parks those), no value fed inside."""
    ops, fed = plan.ops, set(plan.feed_slots)
    if sum(ops[i].type == "LoopCond" for i in frame) != 1:
        return False
    if any(kinds[i] == TRIGGER for i in frame):
        return False
    if any(getattr(getattr(ops[i], "_opdef", None), "blocking", False) for i in frame):
        return False
    return not any(s in fed for i in frame if kinds[i] != ENTER for s in plan.inputs[i])


def _loop_merges(
    plan: Plan, kinds: list[int], merges: list[int], producer: dict[int, tuple[int, int]]
) -> dict[int, tuple[int, int]] | None:
    """Each Merge's (Enter, NextIteration), or None when one is not a loop's Merge."""
    merge_of: dict[int, tuple[int, int]] = {}
    for m in merges:
        ins = [producer.get(s, (None, 0))[0] for s in plan.inputs[m]]
        kind_in = sorted(kinds[p] if p is not None else 0 for p in ins)
        if kind_in != [ENTER, NEXT] or plan.outputs[m][1:2] not in ((), (DISCARD,)):
            return None  # not a loop's Merge (a branch's), or its index is read
        enter = next(p for p in ins if p is not None and kinds[p] == ENTER)
        nxt = next(p for p in ins if p is not None and kinds[p] == NEXT)
        merge_of[m] = (enter, nxt)
    return merge_of


def _wired(
    plan: Plan,
    merge_of: dict[int, tuple[int, int]],
    switches: list[int],
    exits: list[int],
    loop_cond: int,
    producer: dict[int, tuple[int, int]],
) -> bool:
    """Whether every Switch is fed by a loop Merge and the LoopCond, every Exit by a Switch."""
    for sw in switches:
        data, pred = (producer.get(s, (None, 0))[0] for s in plan.inputs[sw])
        if data not in merge_of or pred != loop_cond:
            return False  # a branch inside the loop
    for e in exits:
        p = [producer.get(s, (None, 0))[0] for s in plan.inputs[e]]
        if len(p) != 1 or p[0] not in switches:
            return False
    return True


def _body_ops(plan: Plan, kinds: list[int], frame: set[int], switches: list[int]) -> set[int]:
    """The frame's ops that run only when the condition holds."""
    consumers = plan.consumers
    body: set[int] = set()
    todo = [c for sw in switches for c in consumers[sw] if kinds[c] != EXIT]
    while todo:
        i = todo.pop()
        if i in body:
            continue
        body.add(i)
        todo.extend(c for c in consumers[i] if c in frame and kinds[c] not in (MERGE, EXIT))
    return body


def _compile(plan: Plan, kinds: list[int], name: str, enters: list[int]) -> CompiledLoop | None:
    """``name``'s frame as a CompiledLoop, or None when it holds what a ``while`` cannot."""
    frame = _frame_ops(plan, kinds, enters)
    if frame is None or not _plain(plan, kinds, frame):
        return None
    (loop_cond,) = [i for i in frame if plan.ops[i].type == "LoopCond"]
    producer = {s: (p, k) for p in frame for k, s in enumerate(plan.outputs[p]) if s != DISCARD}
    merge_of = _loop_merges(plan, kinds, [i for i in frame if kinds[i] == MERGE], producer)
    switches = [i for i in frame if kinds[i] == SWITCH]
    exits = [i for i in frame if kinds[i] == EXIT]
    if merge_of is None or not _wired(plan, merge_of, switches, exits, loop_cond, producer):
        return None
    body = _body_ops(plan, kinds, frame, switches)
    loop_enters = {enter for enter, _ in merge_of.values()}
    constant = [e for e in enters if e not in loop_enters]
    if any(kinds[c] == MERGE for e in constant for c in plan.consumers[e]):
        return None
    ordered = sorted(frame)  # the plan's order: topological, without the back edges
    checks = [i for i in ordered if i not in body and kinds[i] == 0]
    if loop_cond not in checks or any(p in body for i in checks for p in plan.producers[i]):
        return None  # the condition reads the body: not a loop while_loop builds
    bodies = [i for i in ordered if i in body and kinds[i] == 0]
    loop = CompiledLoop(name)
    loop.enters = [merge_of[m][0] for m in sorted(merge_of)] + constant
    loop.position = {e: k for k, e in enumerate(loop.enters)}
    loop.exits = sorted(exits)
    loop.once = sorted(loop.exits)  # (the Enters ran as ops of the frame around)
    loop.per_check = sorted([*merge_of, *switches, *checks])
    loop.per_body = sorted(bodies + [nxt for _, nxt in merge_of.values()])
    source = _source(plan, loop, merge_of, switches, checks, loop_cond, bodies, producer)
    namespace: dict[str, Any] = {f"f{i}": plan.fns[i] for i in checks + bodies}
    namespace["LoopDeadline"] = LoopDeadline
    exec(compile(source, LOOP_FILENAME, "exec"), namespace)
    loop.fn = namespace["loop"]
    return loop


def _source(
    plan: Plan,
    loop: CompiledLoop,
    merge_of: dict[int, tuple[int, int]],
    switches: list[int],
    checks: list[int],
    loop_cond: int,
    bodies: list[int],
    producer: dict[int, tuple[int, int]],
) -> str:
    """The Python source of ``loop`` (its line map goes into ``loop.line_to_op``)."""
    out = plan.outputs
    args = [f"a{k}" for k in range(len(loop.enters))]
    lines = [f"def loop({', '.join([*args, 'deadline', 'clock', 'cell'])}):"]
    for e, a in zip(loop.enters, args):
        if out[e][0] != DISCARD:
            lines.append(f"    s{out[e][0]} = {a}")
    for m, (enter, _) in sorted(merge_of.items()):
        lines.append(f"    s{out[m][0]} = s{out[enter][0]}")
    lines += ["    it = 0", "    while True:"]

    def call(i: int) -> None:
        targets = [f"s{s}" if s != DISCARD else "_" for s in out[i]]
        ins = ", ".join(f"s{s}" for s in plan.inputs[i])
        line = f"f{i}({ins})"
        if len(targets) == 1:
            line = f"{targets[0]} = {line}"
        elif targets:
            line = f"{', '.join(targets)}, = {line}"
        loop.line_to_op[len(lines) + 1] = i
        lines.append(f"        {line}")

    for i in checks:
        call(i)
    lines.append(f"        if not s{out[loop_cond][0]}: break")
    for sw in switches:
        if out[sw][1] != DISCARD:
            lines.append(f"        s{out[sw][1]} = s{plan.inputs[sw][0]}")
    for i in bodies:
        call(i)
    if merge_of:
        targets = ", ".join(f"s{out[m][0]}" for m in sorted(merge_of))
        values = ", ".join(
            f"s{plan.inputs[nxt][0]}" for _, nxt in (merge_of[m] for m in sorted(merge_of))
        )
        lines.append(f"        {targets}, = {values},")
    lines += [
        "        it += 1",
        "        cell[0] = it",
        f"        if deadline is not None and not it % {DEADLINE_EVERY} and clock() > deadline:",
        "            raise LoopDeadline(it)",
    ]
    exits = []
    for e in loop.exits:
        sw = producer[plan.inputs[e][0]][0]
        exits.append(f"s{plan.inputs[sw][0]}")
    lines.append(f"    return ({''.join(x + ', ' for x in exits)}), it")
    return "\n".join(lines)
