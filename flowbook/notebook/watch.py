"""Watching runs for the live views, at a cost chosen per run.

One process-wide :class:`Watcher` is registered as a session observer while
any live view exists (:mod:`flowbook.notebook.live`).  Its ``for_run(plan)``
looks up the plan's graph among the shown ones and chooses, from the plan's
:class:`PlanStats`:

- the first run of a plan is timed op by op and keeps references to its
  values (so every node gets a time and a value preview once), and so is
  its first run in each notebook cell run (so the run history has a value
  for each op of each cell's runs, to compare);
- a plan whose last run took ``LIVE_NS`` or more is watched op by op (nodes
  turn running/done while it runs: a hook per op is nothing next to 0.1 s);
- one run in every ``RETIME_FAST_NS`` is timed where timing costs little
  (ops averaging ``TIME_HEAVY_NS`` in heavy plans, already on the threaded
  scheduler, or ``TIME_CHEAP_NS`` in all-cheap ones), else one in every
  ``RETIME_NS``: times stay fresh for a human eye at a bounded cost;
- every other run is watched *whole* (``for_run`` returns None): only the
  start and the end, and the run keeps its fast path (the compiled straight
  line for all-cheap plans); nodes show the times of the last timed run.
  Runs of plans with branches or loops (:mod:`flowbook.notebook.loops`) and
  of plans whose ops may wait on a queue (:mod:`flowbook.notebook.queues`)
  always get an observer of their own, told of their loops or their waits.

Values are kept by reference (up to ``KEEP_VALUE_BYTES`` each) and turned
into previews only when a view asks, once per value.

Where each op ran and the copy nodes placement added between devices
(:func:`device_state`) are worked out once per plan, when a view first asks
(``PlanStats.devices``), never on the run's path.

The hooks only record into the LiveGraph and mark it dirty; sending is the
LiveGraph's flusher's job, off the run's critical path.  A run watched op by
op gets a :class:`Record`; a run watched whole gets none: its end writes a
few attributes and one tuple (``LiveGraph.run_whole``), and the flusher
makes what it shows from them when it wakes.

    >>> PlanStats.mode.__doc__.split(":")[0]
    'How to watch the next run'
"""

from __future__ import annotations

import contextlib
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from flowbook.framework import source
from flowbook.framework.devices import Device
from flowbook.framework.tensor import Operation
from flowbook.notebook.loops import follow
from flowbook.notebook.queues import follow_waits
from flowbook.notebook.snapshot import preview
from flowbook.notebook.tasks import pair_names, pair_times, task_state
from flowbook.runtime.observers import Observer
from flowbook.runtime.placement import CopyOp
from flowbook.runtime.plan import Plan
from flowbook.runtime.session import observe
from flowbook.runtime.timings import RunTimings

_clock = time.perf_counter_ns  # the runs' clock (a module global: one look-up)

LIVE_NS = 100_000_000  # a plan whose last run took this long is watched op by op
TIME_HEAVY_NS = 5_000  # mean op time above which a heavy (threaded) plan is timed
TIME_CHEAP_NS = 40_000  # mean op time above which an all-cheap plan is timed
RETIME_FAST_NS = 250_000_000  # plans where timing is cheap are timed once in this long
RETIME_NS = 5_000_000_000  # other plans are timed once in this long
KEEP_VALUE_BYTES = 16 << 20  # values larger than this are previewed at once, not kept


class PlanStats:
    """What the live views know of one plan."""

    __slots__ = (
        "__weakref__",
        "cell",
        "copies",
        "fed",
        "fetched_names",
        "hub",
        "last_ns",
        "loops",
        "n",
        "names",
        "newest",
        "placement",
        "plan_ref",
        "previews",
        "runs",
        "snap",
        "timed",
        "timed_at",
        "times_us",
        "timings",
        "values",
        "values_seq",
        "whole_until",
    )

    def __init__(self, plan: Plan, hub: Any = None) -> None:
        self.hub = hub  # the LiveGraph showing the plan's graph
        self.plan_ref = weakref.ref(plan)  # the plan (runs watched whole show it through this)
        # perf_counter_ns before which a run is watched whole without asking `mode` (0: ask);
        # set by `mode`, cleared by a long run, a run watched op by op, or the views leaving
        self.whole_until = 0
        # op names, plan order (a cluster plan's Send/Recv pairs after them: tasks.py)
        self.names = [op.name for op in plan.ops] + pair_names(plan)
        self.fed: list[str] = []  # ops whose outputs are fed (filled lazily by the record)
        self.n = max(1, len(plan.ops))  # op count, for the mean time (op runs: loops.py)
        self.loops: Any = None  # a plan with branches or loops: its LoopStats (loops.py)
        self.runs = 0  # runs seen
        self.last_ns = 0  # wall time of the last run
        self.timed_at = 0  # perf_counter_ns of the last timed run
        self.timings: RunTimings | None = None  # the last timed run's, not yet turned into µs
        self.times_us: dict[str, float] = {}  # op name -> kernel µs in the last timed run
        self.values: dict[str, Any] = {}  # op name -> its first output, kept by reference
        self.previews: dict[str, str] = {}  # op name -> preview of the value, once made
        # copy-on-write for the run history: a run that records values starts new `values`
        # and `previews` dicts (history entries hold the old ones); the run's seq names them
        self.values_seq = 0
        self.timed: tuple[int, RunTimings] | None = None  # (seq, timings) of the last timed run
        self.fetched_names: list[str] | None = None  # what runs of the plan compute
        self.cell: Any = None  # source.current_cell at the last "first" run (None: no notebook)
        self.placement: dict[str, str] | None = None  # op name -> "GPU:0"; None: not yet known
        self.copies: list[dict[str, Any]] = []  # the plan's copy nodes (see device_state)
        # what runs watched whole share, taken at the last recorded run (see history's doc)
        self.snap: tuple[Any, ...] | None = None
        self.newest: tuple[int, tuple[Any, ...], int] | None = None  # (seq, snap, ns): last whole

    def mode(self, plan: Plan, now_ns: int = 0) -> str | None:
        """How to watch the next run: "first", "live", "timed" or None (whole).

        ``now_ns``: ``time.perf_counter_ns()`` if the caller has it (0: read it here).
        """
        self.whole_until = 0
        if self.runs == 0:
            self.cell = source.current_cell
            return "first"
        if self.last_ns >= LIVE_NS:
            return "live"
        if source.current_cell is not self.cell:
            self.cell = source.current_cell
            return "first"
        cheap = self.last_ns / self.n >= (TIME_HEAVY_NS if plan.any_heavy else TIME_CHEAP_NS)
        now_ns = now_ns or time.perf_counter_ns()
        due = self.timed_at + (RETIME_FAST_NS if cheap else RETIME_NS)
        if now_ns >= due:
            return "timed"
        self.whole_until = due  # till then, runs in this cell are watched whole (Watcher.for_run)
        return None

    def times(self) -> dict[str, float]:
        """Op name -> kernel µs of the last timed run."""
        t = self.timings
        if t is not None:
            names, starts, ends = self.names, t.start_ns, t.end_ns
            self.times_us = {names[i]: (ends[i] - starts[i]) / 1000 for i in t.order}
            self.times_us.update(pair_times(t))  # a cluster run's transfers (tasks.py)
            self.timings = None
        return self.times_us

    def devices(self, plan: Plan) -> tuple[dict[str, str], list[dict[str, Any]]]:
        """``plan``'s placement and copy nodes (:func:`device_state`), worked out once."""
        if self.placement is None:
            self.placement, self.copies = task_state(plan) or device_state(plan)
        return self.placement, self.copies

    def fresh_values(self, seq: int) -> None:
        """Start new values and previews dicts for run ``seq`` (the old ones may be kept)."""
        self.values, self.previews, self.values_seq = dict(self.values), dict(self.previews), seq

    def fetched(self, plan: Plan) -> list[str]:
        """The ops whose values runs of ``plan`` fetch, then those nothing reads (targets)."""
        if self.fetched_names is None:
            slots = set(plan.fetch_slots)
            ops = [op for op, outs in zip(plan.ops, plan.outputs) if slots.intersection(outs)]
            ops += [op for op, used in zip(plan.ops, plan.consumers) if not used]
            ops = [op.inputs[0].op if isinstance(op, CopyOp) else op for op in ops]
            self.fetched_names = list(dict.fromkeys(op.name for op in ops))
        return self.fetched_names

    def preview(self, name: str) -> str | None:
        """A preview of op ``name``'s last kept value (made once per value), or None."""
        text = self.previews.get(name)
        if text is None and name in self.values:
            text = self.previews[name] = preview(self.values[name])
        return text


def short_device(device: Device) -> str:
    """``"GPU:0"`` for ``/device:GPU:0``: how the widget names a device."""
    return f"{device.device_type}:{device.index}"


def device_state(plan: Plan) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """Where each op of ``plan`` runs, and its copy nodes, as the widget's run state has them.

    The placement maps every op name (copies included) to its device's short
    name, and is empty for a plan that runs wholly on the CPU.  Each copy is
    ``{"name", "op", "src", "tensor", "src_device", "dst_device", "readers",
    "fetch"}``: ``src`` is the op that produced the copied value (``tensor``),
    ``readers`` the graph ops that read the copy (none when it only serves a
    fetch; ``fetch`` says whether it does).

    >>> import flowbook as fb
    >>> from flowbook.runtime.gpu_sim import simulate_gpu
    >>> with simulate_gpu(), fb.Graph().as_default(), fb.Session() as s:
    ...     x = fb.placeholder(fb.float32, name="x")
    ...     _ = s.run(fb.multiply(x, 2.0, name="y"), {x: 1.0})
    ...     placement, copies = device_state(next(iter(s._plans.values())))
    >>> placement["y"], [(c["name"], c["src"], c["readers"], c["fetch"]) for c in copies]
    ('GPU:0', [('x/_copy_to_GPU_0', 'x', ['y'], False), ('y/_copy_to_CPU_0', 'y', [], True)])
    """
    devices = plan.devices
    if not plan.copies and all(d.device_type == "CPU" for d in devices):
        return {}, []
    short = {d: short_device(d) for d in set(devices)}
    placement = {op.name: short[d] for op, d in zip(plan.ops, devices)}
    fetched = {s for s in plan.fetch_slots if s is not None}
    copies = []
    for i, op in enumerate(plan.ops):
        if not isinstance(op, CopyOp):
            continue
        value = op.inputs[0]
        readers = (plan.ops[j] for j in plan.consumers[i])
        copies.append(
            {
                "name": op.name,
                "op": op.type,
                "src": value.op.name,
                "tensor": value.name,
                "src_device": short_device(op.src),
                "dst_device": short_device(op.dst),
                "readers": list(dict.fromkeys(r.name for r in readers if type(r) is not CopyOp)),
                "fetch": any(s in fetched for s in plan.outputs[i]),
            }
        )
    return placement, copies


class Record:
    """A run watched op by op (or one that failed), as the LiveGraph shows it and keeps it."""

    __slots__ = ("done", "error", "phase", "plan", "running", "seq", "start_ns", "stats")

    def __init__(self, seq: int, plan: Plan, stats: PlanStats) -> None:
        self.seq = seq  # run counter of this graph's runs
        self.plan = plan
        self.stats = stats
        self.phase = "running"  # "running", "done" or "error"
        self.error: BaseException | None = None
        self.start_ns = time.perf_counter_ns()
        self.done: list[str] | None = None  # ops finished so far (live runs only)
        self.running: list[str] | None = None  # ops started, not finished (live runs only)


class _Watch(Observer):
    """Watches one run of a plan op by op (a "first", "timed" or "live" run)."""

    def __init__(self, hub: Any, stats: PlanStats, mode: str) -> None:
        self.hub, self.stats, self.mode = hub, stats, mode
        self.rec: Record | None = None
        if mode == "live":
            self.before_op = self._before  # instance hooks: only these modes pay for them
        if mode in ("live", "first"):
            self.after_op = self._after

    def on_start(self, plan: Plan) -> None:
        self.rec = self.hub.run_started(plan, self.stats, self.mode == "live")
        if self.mode in ("live", "first"):
            self.stats.fresh_values(self.rec.seq)  # the last run's stay as the history has them

    def _before(self, op: Operation) -> None:
        self.rec.running.append(op.name)  # type: ignore[union-attr]
        if self.mode == "live":
            self.hub.touch("run")

    def _after(self, op: Operation, outputs: Sequence[Any]) -> None:
        if outputs:
            v, stats = outputs[0], self.stats
            stats.previews.pop(op.name, None)
            if getattr(v, "nbytes", 0) <= KEEP_VALUE_BYTES:
                stats.values[op.name] = v
            else:
                stats.values.pop(op.name, None)
                stats.previews[op.name] = preview(v)
        if self.mode == "live":
            self.rec.done.append(op.name)  # type: ignore[union-attr]
            self.hub.touch("run")

    def on_timings(self, plan: Plan, timings: RunTimings) -> None:
        self.stats.timings = timings  # turned into µs by the flusher, off the run's path
        self.stats.timed_at = time.perf_counter_ns()
        if self.rec is not None:
            self.stats.timed = (self.rec.seq, timings)  # for the run history

    def on_finish(self, plan: Plan, error: BaseException | None) -> None:
        if self.rec is not None:
            self.hub.run_finished(self.rec, error)


class _Local(threading.local):
    """The run watched whole that this thread is in (set by ``for_run``, read by ``on_finish``)."""

    stats: PlanStats | None = None  # its plan's stats; None: this thread's run is not one
    start_ns = 0  # perf_counter_ns at its start


class Watcher(Observer):
    """The one observer of every run while live views exist.  See the module doc.

    A run of the plan run last, in the same cell and before the plan's next
    timing is due (``PlanStats.whole_until``), takes the fast path: a weakref
    call, a clock read and two thread-local writes at its start; at its end
    ``LiveGraph.run_whole``.  Anything else asks ``PlanStats.mode``.
    """

    def __init__(self, lookup: Callable[[Any], Any]) -> None:
        self.lookup = lookup  # graph -> its LiveGraph, or None when it is not shown
        self._attached: contextlib.ExitStack | None = None  # holds the observe() while attached
        self.local = _Local()  # the run watched whole this thread is in
        # the last plan run and its PlanStats: a loop's runs skip two weak-dict look-ups
        # (the plan held weakly: a plan is never kept alive by this)
        self.last: tuple[weakref.ref[Plan], PlanStats] | None = None

    def attach(self) -> None:
        """Watch every run in the process (idempotent)."""
        if self._attached is None:
            self._attached = contextlib.ExitStack()
            self._attached.enter_context(observe(self))

    def detach(self) -> None:
        """Stop watching runs."""
        if self._attached is not None:
            self._attached.close()
            self._attached = None
        self.last = None

    @property
    def attached(self) -> bool:
        """Whether every run in the process is watched."""
        return self._attached is not None

    def for_run(self, plan: Plan) -> Observer | None:
        last = self.last
        if last is not None and last[0]() is plan:
            stats = last[1]
            now = _clock()
            if now < stats.whole_until and stats.cell is source.current_cell:
                local = self.local
                local.stats, local.start_ns = stats, now
                return None
        return self._choose(plan)

    def _choose(self, plan: Plan) -> Observer | None:
        """``for_run`` off its fast path: find the plan's stats, ask ``PlanStats.mode``."""
        local = self.local
        local.stats = None
        last = self.last
        if last is not None and last[0]() is plan:
            stats = last[1]
        else:
            hub = self.lookup(plan.ops[0].graph) if plan.ops else None
            if hub is None:
                return None
            stats = hub.plan_stats(plan)
            self.last = (weakref.ref(plan), stats)
        if not stats.hub.views:
            stats.whole_until = 0
            return None
        now = _clock()  # the run starts now (on_start is next): its start
        mode = stats.mode(plan, now)
        if plan.control_flow:  # counted every run (no fast path), loops followed: loops.py
            stats.whole_until = 0
            return follow(stats.hub, stats, mode, now, lambda m: _Watch(stats.hub, stats, m))
        if plan.blocking:  # ops that may wait: every run told of its waits (queues.py)
            stats.whole_until = 0
            return follow_waits(stats.hub, stats, mode, now, lambda m: _Watch(stats.hub, stats, m))
        if mode is None:
            local.stats, local.start_ns = stats, now
            return None
        return _Watch(stats.hub, stats, mode)

    def on_finish(self, plan: Plan, error: BaseException | None) -> None:
        local = self.local
        stats = local.stats
        if stats is not None:  # a run watched whole: no record (LiveGraph.run_whole)
            local.stats = None
            stats.hub.run_whole(plan, stats, local.start_ns, error)
