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
iterations each loop did), whether it is watched op by op or whole.  Runs
the views show as they go ("first" and "live" runs, see
:mod:`flowbook.notebook.watch`) also get ``Observer.on_loop``: each loop
instance's live count of its iterations, read by the flusher (never by the
run), at most ``MAX_PUSHES_PER_S`` times a second.  A compiled loop calls
no hook as it goes, so :data:`TICKER`, a daemon thread awake only while
such a run is in a loop, asks the flusher for a send every ``TICK_S``.
While the run is in progress the state says where it is; after, what the
counts say::

    running: {"at": {"loop/while_context": 412}}
    done:    {"iterations": {"loop/while_context": 1000}, "entries": {...: 1},
              "not_run": ["cond/no"], "taken": {"cond": "true"}}

``at`` holds, per frame the run has entered, how many iterations its newest
instance has run; ``entries`` says how many times a frame was entered (a
loop inside a loop starts once per outer iteration); ``not_run`` lists the
plan's ops that ran 0 times (an untaken branch), which the front end dims.

**What the widget costs a loop.**  Counting and ``on_loop`` leave innermost
loops compiled (``flowbook.runtime.codegen.compiled_loops``); per-op hooks and timings do not
(each op of each iteration interpreted, about 10x a trivial iteration).  So
a plan's runs get those only once its last run showed ops heavy enough
(``LIVE_OP_NS`` mean time per op run; ``PlanStats.n`` counts op runs for
these plans) that interpreting costs little next to them, and then a "live"
run shows each op running and done once, at its first run, not once per
iteration.  Until then (the first run of a plan included) a run is shown
by its loops' counters alone, and is never timed.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default() as g:
    ...     i = fb.while_loop(lambda i: i < 3, lambda i: i + 1, [fb.constant(0)], name="loop")
    ...     c = fb.cond(i > 2, lambda: fb.constant(1.0), lambda: fb.constant(2.0))
    >>> frames_state(g.get_operations())
    {'loops': [{'frame': 'loop/while_context', 'scope': 'loop', 'parent': None}], 'conds': ['cond']}
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from flowbook.framework.tensor import Operation
from flowbook.runtime.observers import Observer
from flowbook.runtime.plan import Plan

WHILE_CONTEXT = "/while_context"  # the suffix while_loop gives its frame names
ENTERS = ("Enter", "RefEnter")
SWITCHES = ("Switch", "RefSwitch")
PIVOTS = ("/switch_t", "/switch_f")  # a cond's pivots, named so by tf.cond (and TensorFlow)
LIVE_OP_NS = 40_000  # ops are watched one by one only above this mean time per op run
TICK_S = 0.05  # how often the views are asked to follow a run in a loop (MAX_PUSHES_PER_S)


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

    __slots__ = ("hub", "iterations", "progress", "runs", "stats")

    def __init__(self, hub: Any, stats: Any) -> None:
        self.hub = hub  # the LiveGraph showing the plan's graph (its touch() asks for a send)
        self.stats = stats  # the plan's PlanStats (its op count becomes op runs: ``n``)
        # per frame, the live iteration count of its newest instance in the running run
        # (on_loop); {} when no run of the plan is in a loop
        self.progress: dict[str, Callable[[], int]] = {}
        self.runs: list[int] | None = None  # per plan op, how often the last run ran it
        self.iterations: dict[str, int] = {}  # per frame, body iterations of the last run

    # ------------------------------------------------ on the run's thread
    def on_loop(self, name: str, progress: Callable[[], int]) -> None:
        """A loop instance starts: keep its live count; the ticker has the views follow it."""
        if not self.progress:
            TICKER.follow(self)
        self.progress[name] = progress

    def on_control_flow(self, plan: Plan, runs: list[int], iterations: dict[str, int]) -> None:
        """The run's counts (its end): kept for the views; the plan's mean counts op runs."""
        self.runs, self.iterations, self.progress = runs, iterations, {}
        self.stats.n = max(1, sum(runs))

    # ------------------------------------------------ on the flusher's thread
    def state(self, plan: Plan, phase: str) -> dict[str, Any]:
        """The run state's ``control_flow`` for the run shown, in ``phase`` (module doc)."""
        if phase == "running":
            return {"at": {f: int(count()) for f, count in self.progress.copy().items()}}
        runs = self.runs
        if runs is None or len(runs) != len(plan.ops):
            return {}
        out: dict[str, Any] = {"iterations": dict(self.iterations), "entries": _entries(plan, runs)}
        if phase == "done":
            out["not_run"] = [op.name for op, k in zip(plan.ops, runs) if k == 0]
            out["taken"] = _taken(plan, runs)
        return out


class Ticker:
    """Asks for a send every ``TICK_S`` while a followed run is in a loop (a daemon thread)."""

    def __init__(self) -> None:
        self.following: set[LoopStats] = set()  # plans whose running run is in a loop
        self.event = threading.Event()  # set while ``following`` may be non-empty
        self.thread: threading.Thread | None = None
        self.lock = threading.Lock()  # guards following and thread

    def follow(self, loops: LoopStats) -> None:
        """Have the views of ``loops``' plan follow its running run (once per run)."""
        with self.lock:
            self.following.add(loops)
            if self.thread is None:
                self.thread = threading.Thread(
                    target=self._loop, name="flowbook-loops", daemon=True
                )
                self.thread.start()
        self.event.set()

    def _loop(self) -> None:
        while True:
            self.event.wait()
            time.sleep(TICK_S)
            with self.lock:
                done = {ls for ls in self.following if not ls.progress}
                self.following -= done
                hubs = {ls.hub for ls in self.following}
                if not self.following:
                    self.event.clear()
            for hub in hubs:
                with contextlib.suppress(Exception):  # a hub's failure must not stop the thread
                    hub.touch("run")


TICKER = Ticker()


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

    def __init__(self, hub: Any, stats: Any, start_ns: int) -> None:
        self.hub, self.stats, self.start_ns = hub, stats, start_ns
        self.on_control_flow = stats.loops.on_control_flow  # an instance hook: counts only

    def on_finish(self, plan: Plan, error: BaseException | None) -> None:
        self.hub.run_whole(plan, self.stats, self.start_ns, error)


class _LoopRun(Observer):
    """A run shown as it goes by its loops' counters alone: its loops stay compiled."""

    def __init__(self, hub: Any, stats: Any) -> None:
        self.hub, self.stats = hub, stats
        self.rec: Any = None  # the run's Record
        self.on_loop = stats.loops.on_loop  # instance hooks: no per-op hook, no timings
        self.on_control_flow = stats.loops.on_control_flow

    def on_start(self, plan: Plan) -> None:
        self.rec = self.hub.run_started(plan, self.stats, True)  # shown "running" at once

    def on_finish(self, plan: Plan, error: BaseException | None) -> None:
        self.hub.run_finished(self.rec, error)


def follow(
    hub: Any, stats: Any, mode: str | None, start_ns: int, watch: Callable[[str], Any]
) -> Observer:
    """The observer of a run of a plan with branches or loops (``Watcher.for_run``'s answer).

    ``mode``: what ``PlanStats.mode`` asks for; ``watch(mode)`` makes the
    op-by-op watch it would get.  See "What the widget costs a loop".
    """
    loops = stats.loops
    if loops is None:
        loops = stats.loops = LoopStats(hub, stats)
    heavy = stats.runs > 0 and stats.last_ns / stats.n >= LIVE_OP_NS
    if mode is None or (mode == "timed" and not heavy):
        if mode is not None:
            stats.timed_at = start_ns  # timing would interpret its loops: not before next time
        return _WholeRun(hub, stats, start_ns)
    if not heavy:
        return _LoopRun(hub, stats)
    w = watch(mode)
    w.on_control_flow = loops.on_control_flow
    if mode in ("first", "live"):
        w.on_loop = loops.on_loop
    if mode == "live":
        w.before_op, w.after_op = _once(w.before_op), _once(w.after_op)
    return w


def _once(hook: Callable[..., None]) -> Callable[..., None]:
    """``hook`` called for each op's first run only (a loop runs its body's ops many times)."""
    seen: set[Operation] = set()

    def first_run(op: Operation, *args: Any) -> None:
        if op not in seen:
            seen.add(op)
            hook(op, *args)

    return first_run
