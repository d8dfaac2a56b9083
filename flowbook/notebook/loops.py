"""Loops and branches in the live views: which scopes are loop frames and conds, how a run went.

**The graph's side** (:func:`frames_state`, sent in the ``graph`` state as
``control_flow``): a ``while_loop`` named ``loop`` builds its ops in the name
scope ``loop/`` and its Enters carry ``frame_name="loop/while_context"``; a
``cond`` builds in its own scope with two pivots, ``<scope>/switch_t`` and
``<scope>/switch_f``.  Both are read from the ops alone (an imported
TensorFlow graph has the same names), so the front end draws those scopes as
a loop's frame or a cond::

    {"loops": [{"frame": "loop/while_context", "scope": "loop", "parent": None}],
     "conds": ["cond"]}

**The run's side** (:class:`LoopStats`, one per plan with branches or loops,
kept as ``PlanStats.loops``; its :meth:`LoopStats.state` is the ``run``
state's ``control_flow``).  Every run of such a plan is counted
(``Observer.on_control_flow``: how often each op ran, how many body
iterations each loop did), whether it is watched op by op or whole: the
counting costs the run one increment per op.  Runs the views follow as they
go ("first" and "live" runs, see :mod:`flowbook.notebook.watch`) also get
``on_iteration``, which only stores the newest ``where`` and asks the
flusher for a send once per tick (``asked``): O(1), no lock, no list.  The
flusher reads ``where`` when it builds the ``run`` state, at most
``MAX_PUSHES_PER_S`` times a second.  While a run is in progress the state
says where it is; after, what the counts say::

    running: {"where": [["loop/while_context", 412]], "at": {"loop/while_context": 412}}
    done:    {"iterations": {"loop/while_context": 1000}, "entries": {...: 1},
              "not_run": ["cond/no"], "taken": {"cond": "true"}}

``at`` keeps the last iteration seen of each frame in this run (a frame the
run has left keeps its number until the run ends); ``entries`` says how many
times a frame was entered (a loop inside a loop starts once per outer
iteration); ``not_run`` lists the plan's ops that ran 0 times (an untaken
branch), which the front end dims.

**A long loop of cheap ops** is not watched op by op: a "live" run of a plan
whose mean time per op run (``PlanStats.n`` counts op runs for these plans)
is below ``LIVE_OP_NS`` keeps only the loop hooks, so its cost stays that of
the counting and of ``on_iteration``; above it, each op is shown running
and done once (its first run), not once per iteration.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default() as g:
    ...     i = fb.while_loop(lambda i: i < 3, lambda i: i + 1, [fb.constant(0)], name="loop")
    ...     c = fb.cond(i > 2, lambda: fb.constant(1.0), lambda: fb.constant(2.0))
    >>> frames_state(g.get_operations())
    {'loops': [{'frame': 'loop/while_context', 'scope': 'loop', 'parent': None}], 'conds': ['cond']}
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from flowbook.run.observers import Observer
from flowbook.run.plan import Plan
from flowbook.tensor import Operation

WHILE_CONTEXT = "/while_context"  # the suffix while_loop gives its frame names
ENTERS = ("Enter", "RefEnter")
SWITCHES = ("Switch", "RefSwitch")
PIVOTS = ("/switch_t", "/switch_f")  # a cond's pivots, named so by tf.cond (and TensorFlow)
LIVE_OP_NS = 40_000  # a long loop's ops are shown one by one only above this mean time per run


def frames_state(ops: Iterable[Operation]) -> dict[str, Any]:
    """The graph's loop frames and conds, as the graph state's ``control_flow`` (module doc).

    >>> frames_state([])
    {'loops': [], 'conds': []}
    """
    scopes: dict[str, str] = {}  # frame name -> its scope
    conds: list[str] = []
    for op in ops:
        t = op.type
        if t in ENTERS:
            frame = _frame_of(op)
            if frame and frame not in scopes:
                scope = frame[: -len(WHILE_CONTEXT)] if frame.endswith(WHILE_CONTEXT) else ""
                scopes[frame] = scope or op.name.rpartition("/")[0]
        elif t == "Identity" and op.name.endswith(PIVOTS[0]) and _after_switch(op):
            conds.append(op.name[: -len(PIVOTS[0])])
    by_scope = {s: f for f, s in scopes.items()}
    loops = []
    for frame, scope in scopes.items():
        outer = [s for s in by_scope if scope.startswith(s + "/")]
        parent = by_scope[max(outer, key=len)] if outer else None
        loops.append({"frame": frame, "scope": scope, "parent": parent})
    return {"loops": loops, "conds": conds}


def _after_switch(op: Operation) -> bool:
    """Whether ``op`` reads a Switch (a cond's pivot does)."""
    return bool(op.inputs) and op.inputs[0].op.type in SWITCHES


def _frame_of(op: Operation) -> str:
    """An Enter's ``frame_name`` as text ("" when it has none)."""
    frame = op.attrs.get("frame_name") or ""
    return frame.decode() if isinstance(frame, bytes) else str(frame)


class LoopStats:
    """How the runs of one plan with branches or loops went, for the views.  See the module doc."""

    __slots__ = ("asked", "at", "at_run", "ended", "hub", "iterations", "runs", "stats", "where")

    def __init__(self, hub: Any, stats: Any) -> None:
        self.hub = hub  # the LiveGraph showing the plan's graph (its touch() asks for a send)
        self.stats = stats  # the plan's PlanStats (its op count becomes op runs: ``n``)
        self.where: tuple[tuple[str, int], ...] | None = None  # the running run's iteration
        self.asked = False  # a send was asked for since the flusher last read ``where``
        self.runs: list[int] | None = None  # per plan op, how often the last run ran it
        self.iterations: dict[str, int] = {}  # per frame, body iterations of the last run
        self.ended = 0  # runs counted so far
        self.at: dict[str, int] = {}  # per frame, the last iteration seen of the running run
        self.at_run = 0  # ``ended`` when ``at`` was started (a newer run starts it again)

    # ------------------------------------------------ on the run's thread
    def on_iteration(self, where: tuple[tuple[str, int], ...]) -> None:
        """The run goes on in iteration ``where``: store it; the flusher sends it (O(1))."""
        self.where = where
        if not self.asked:
            self.asked = True
            self.hub.touch("run")

    def on_control_flow(self, plan: Plan, runs: list[int], iterations: dict[str, int]) -> None:
        """The run's counts (its end): kept for the views; the plan's mean counts op runs."""
        self.runs, self.iterations, self.where = runs, iterations, None
        self.ended += 1
        self.stats.n = max(1, sum(runs))

    # ------------------------------------------------ on the flusher's thread
    def state(self, plan: Plan, phase: str) -> dict[str, Any]:
        """The run state's ``control_flow`` for the run shown, in ``phase`` (module doc)."""
        if phase == "running":
            self.asked = False  # before reading: a later iteration asks again
            where = self.where or ()
            if self.at_run != self.ended:
                self.at, self.at_run = {}, self.ended
            self.at.update(where)
            return {"where": [[f, it] for f, it in where], "at": dict(self.at)}
        runs = self.runs
        if runs is None or len(runs) != len(plan.ops):
            return {}
        out: dict[str, Any] = {"iterations": dict(self.iterations), "entries": _entries(plan, runs)}
        if phase == "done":
            out["not_run"] = [op.name for op, k in zip(plan.ops, runs) if k == 0]
            out["taken"] = _taken(plan, runs)
        return out


def _entries(plan: Plan, runs: Sequence[int]) -> dict[str, int]:
    """Per loop frame, how many times the run entered it (its loop variables' Enters ran)."""
    out: dict[str, int] = {}
    for op, k in zip(plan.ops, runs):
        if op.type in ENTERS and not op.attrs.get("is_constant"):
            frame = _frame_of(op)
            out[frame] = max(out.get(frame, 0), k)
    return out


def _taken(plan: Plan, runs: Sequence[int]) -> dict[str, str]:
    """Per cond scope: "true", "false", "both" (in different iterations) or "none" (not run).

    Read from the pivots' runs; where pruning left a pivot out of the plan (a
    branch that only passes a value on), from how often the cond's Merges
    ran: each time the cond runs, one side is taken.
    """
    ran: dict[str, list[int | None]] = {}  # scope -> [true pivot's runs, false pivot's runs]
    merged: dict[str, int] = {}  # scope -> how often the cond ran (its Merges)
    for op, k in zip(plan.ops, runs):
        name = op.name
        if op.type == "Identity" and name.endswith(PIVOTS):
            ran.setdefault(name[: -len(PIVOTS[0])], [None, None])[name.endswith("_f")] = k
        elif op.type == "Merge":
            scope = name.rpartition("/")[0]
            merged[scope] = max(merged.get(scope, 0), k)
    out = {}
    for scope, (t, f) in ran.items():
        if t is None or f is None:
            other = merged.get(scope, 0) - (t or f or 0)
            t, f = (other, f) if t is None else (t, other)
        out[scope] = "both" if t and f else "true" if t else "false" if f else "none"
    return out


class _WholeRun(Observer):
    """A run with branches or loops watched whole: counted, and kept as ``run_whole`` keeps it."""

    def __init__(self, hub: Any, stats: Any, start_ns: int, counted: Callable[..., None]) -> None:
        self.hub, self.stats, self.start_ns = hub, stats, start_ns
        self.on_control_flow = counted  # an instance hook: the LoopStats' own

    def on_finish(self, plan: Plan, error: BaseException | None) -> None:
        self.hub.run_whole(plan, self.stats, self.start_ns, error)


def follow(hub: Any, stats: Any, watch: Any, start_ns: int) -> Observer:
    """The observer of a run of a plan with branches or loops (``Watcher.for_run``'s answer).

    ``watch``: the ``_Watch`` its mode asks for, or None for a run watched
    whole.  Either way the run is counted; "first" and "live" runs follow
    the iterations too, and a "live" run of cheap ops keeps no per-op hook.
    """
    loops = stats.loops
    if loops is None:
        loops = stats.loops = LoopStats(hub, stats)
    if watch is None:
        return _WholeRun(hub, stats, start_ns, loops.on_control_flow)
    watch.on_control_flow = loops.on_control_flow
    if watch.mode in ("first", "live"):
        watch.on_iteration = loops.on_iteration
    if watch.mode == "live":
        if stats.last_ns / stats.n < LIVE_OP_NS:
            del watch.before_op, watch.after_op  # the loop's box shows where it is instead
        else:
            watch.before_op, watch.after_op = _once(watch.before_op), _once(watch.after_op)
    return watch


def _once(hook: Callable[..., None]) -> Callable[..., None]:
    """``hook`` called for each op's first run only (a loop runs its body's ops many times)."""
    seen: set[Operation] = set()

    def first_run(op: Operation, *args: Any) -> None:
        if op not in seen:
            seen.add(op)
            hook(op, *args)

    return first_run
