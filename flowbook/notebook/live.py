"""Live views of a graph: what they show, when it is sent, and what watching a run costs.

A :class:`LiveGraph` exists per shown graph.  It holds the three states the
front end draws (see :mod:`flowbook.notebook.snapshot`) and the *views*
showing them: GraphWidgets and the JupyterLab side panel's comm, each with a
``push(state)`` method.  State it owns:

- ``views``: who shows this graph; ``sent_version``: the graph version they have
- ``seq``: the number of the newest run; ``sent_seq``: the one the views were sent
- ``record``: the newest run watched op by op (its plan's stats, phase, error,
  live lists); ``whole``: the newest run watched whole, ``(seq, snap, ns)``;
  the views are shown the newer of the two
- ``stats``: per plan (weakly keyed), the op names and the facts that decide
  how the next run of that plan is watched (below)
- ``stepper``: the stepper being followed, if any
- ``history``: the last runs, for the run list and replay
  (:mod:`flowbook.notebook.history`; the views get its index as the
  ``history`` state and a run's full state when they ask)

**Watching runs** is :mod:`flowbook.notebook.watch`'s job: one observer,
:data:`WATCHER`, registered while any view exists, chooses per run how
closely to watch (first run timed, long runs op by op, cheap repeated runs
only start and end, so they keep their compiled fast path).  Its hooks only
record into the LiveGraph and mark it dirty; :data:`FLUSHER`
(:mod:`flowbook.notebook.flusher`), a daemon thread, sends at most
``MAX_PUSHES_PER_S`` updates a second, off the run's critical path.

**A run watched whole** (most runs of a loop) costs its thread a few writes
and one tuple at its end (``run_whole``), no lock, no record: it moves
``seq`` (a flush sends "run" and "history" when ``seq`` moved) and wakes the
flusher only when the LiveGraph is not pending.

**Ticks.**  Runs watched whole of the plan whose state the views were last
sent (``sent_snap``: its snap, ``sent_base``: that run's seq) differ from it
only in their number and time, so the flusher sends them as a ``tick``,
``{"seq", "total_us", "base"}``: a widget sends it as a custom message (no
ipywidgets state walk); the front end amends run ``base`` (``protocol/run.ts``).
A cell's end (``refresh``) sends the newest run whole: a widget's ``run`` trait
never ends a cell behind; a view added later gets it whole, the others next.

**Order.**  Two threads send: the flusher, and the kernel's main thread at
the end of a cell (``flush_now``).  A state is built and sent under one
lock per graph (``send_lock``), so a state built later is sent later: an
older "running" state can never arrive after the run's final "done".  Each
state also carries ``update``, a number that grows with every send, and the
front end drops a state older than the one it shows.

    >>> LiveGraph.__name__
    'LiveGraph'
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
import weakref
from collections.abc import Sequence
from typing import Any, Protocol

from flowbook.framework.tensor import Operation
from flowbook.notebook import queues, watch
from flowbook.notebook.flusher import Flusher
from flowbook.notebook.history import History, error_state
from flowbook.notebook.snapshot import graph_state, preview
from flowbook.notebook.watch import PlanStats, Record, Watcher, _clock
from flowbook.runtime.executor import Observer
from flowbook.runtime.plan import Plan

_UPDATES = itertools.count(1)  # the number of each state sent, in every graph (see "Order")
HISTORY_EVERY_S = 0.5  # the run list's index is sent at most this often while runs stream
SEND_ALL_VALUES = 100  # runs of at most this many ops send every value preview


def stepper_message(st: Any, done: Sequence[str], ready: int) -> str:
    """The stepper bar's line: ops run against the plan's ops, op runs apart in loops.

    Without loops each op runs once: "12 of 29 ops run · 3 ready".  In a loop an
    op runs once per iteration, so its runs are counted apart from the plan's
    ops: "iteration 3 · 45 op runs · 3 ready" (never "N of M" with N > M).
    """
    n = len(st.plan.ops)
    if st.plan.control_flow:
        runs = len(done)
        iteration = max(st.iterations.values(), default=0)
        text = f"iteration {iteration} \u00b7 {runs} op run{'' if runs == 1 else 's'}"
        if st.done:
            return f"finished: {runs} op run{'' if runs == 1 else 's'} \u00b7 {n} ops in the plan"
    else:
        ran = min(len(set(done)), n)
        if st.done:
            return f"finished: {ran} of {n} ops run"
        text = f"{ran} of {n} ops run"
    if st.stopped_at is not None:
        return f"{text} \u00b7 stopped at breakpoint {st.stopped_at.name}"
    return f"{text} \u00b7 {ready} ready"


class View(Protocol):
    """Something that shows a LiveGraph: a GraphWidget or the side panel's comm."""

    def push(self, state: dict[str, Any]) -> None:
        """Show ``state``: any of the keys "graph", "run", "stepper", "history"."""


class LiveGraph:
    """The live state of one graph and the views that show it.  See the module doc."""

    def __init__(self, graph: Any) -> None:
        self.graph_ref = weakref.ref(graph)  # the graph shown (views keep it alive)
        self.views: list[View] = []  # who shows it
        self.sent_version = (-1, 0)  # (graph version, stale count) the views were last sent
        self.seq = 0  # the newest run's number (runs are numbered from 1, in order)
        self.seqs = itertools.count(1)  # numbers runs (atomic: runs on several threads)
        self.sent_seq = 0  # `seq` when "run" (or "tick") was last sent
        # what the views' last whole "run" state showed: the snap of the plan's run watched
        # whole (None: a recorded run, or none sent) and its seq; runs watched whole since,
        # with that snap, are sent as a "tick" on it (see "Ticks")
        self.sent_snap: Any = None
        self.sent_base = 0
        self.record: Record | None = None  # the newest run watched op by op
        self.whole: tuple[int, Any, int] | None = None  # newest run watched whole: (seq, snap, ns)
        self.stats: weakref.WeakKeyDictionary[Plan, PlanStats] = weakref.WeakKeyDictionary()
        self.stepper: Any = None  # the Stepper followed, if any
        self.history = History()  # the last runs (entries made at run end, summarised here)
        self.history_due = 0.0  # monotonic time before which the index is not sent again
        self.step_done: list[str] = []  # ops the stepper ran, in order
        self.step_values: dict[str, str] = {}  # op name -> preview, from the stepper
        self.dirty: set[str] = set()  # states to send at the next flush
        self.lock = threading.Lock()  # guards views and dirty
        self.send_lock = threading.Lock()  # held while a state is built and sent: sends in order

    # ------------------------------------------------------------- views
    def add_view(self, view: View) -> None:
        """Start showing this graph in ``view`` (it gets the whole state at once)."""
        with self.lock:
            self.views.append(view)
        WATCHER.attach()
        with self.send_lock:
            base, version = self.sent_base, self.sent_version
            view.push(self._numbered(self.state(("graph", "run", "stepper", "history"))))
            if self.sent_base != base:  # the other views' "run" is older: ticks on it stop
                self.sent_snap = None
            with self.lock:
                others = len(self.views) > 1
            if others:  # they still show the graph they were sent: the next refresh sends it
                self.sent_version = version

    def remove_view(self, view: View) -> None:
        """Stop sending to ``view``."""
        with self.lock:
            if view in self.views:
                self.views.remove(view)
            if not self.views:  # its runs are no longer watched: the fast path must ask
                for stats in list(self.stats.values()):
                    stats.whole_until = 0
        if not any(h.views for h in list(_graphs.values())):
            WATCHER.detach()

    def refresh(self) -> None:
        """Send the graph if it changed (after a cell, say), and the run whole if sent as ticks."""
        graph = self.graph_ref()
        if graph is not None and (graph._version, len(graph._stale)) != self.sent_version:
            self.touch("graph")
        if self.sent_base != self.sent_seq:  # the views' "run" trails ticks: send it whole
            self.touch("run")
        if self.dirty:
            self.flush(force=True)

    # ------------------------------------------------------------- state
    def state(self, keys: Sequence[str]) -> dict[str, Any]:
        """The states named in ``keys``, as JSON-able dicts."""
        out: dict[str, Any] = {}
        if "graph" in keys:
            graph = self.graph_ref()
            if graph is not None:
                out["graph"] = graph_state(graph)
                self.sent_version = (out["graph"]["version"], len(graph._stale))
        if "run" in keys:
            shown = self.shown()
            out["run"] = self.run_state(shown)
            rec, stats = shown[0], shown[1]
            self.sent_snap = stats.snap if rec is None and stats is not None else None
            self.sent_base = shown[3]
        if "stepper" in keys:
            out["stepper"] = self.stepper_state()
        if "history" in keys:
            out["history"] = self.history.index()
        return out

    def shown(self) -> tuple[Record | None, Any, Plan | None, int, int]:
        """The run to show: ``(record or None if watched whole, stats, plan, seq, total_ns)``."""
        rec, whole = self.record, self.whole
        if whole is not None and (rec is None or whole[0] > rec.seq):
            seq, snap, ns = whole
            return None, snap[0], snap[0].plan_ref(), seq, ns
        if rec is not None:
            return rec, rec.stats, rec.plan, rec.seq, rec.stats.last_ns
        return None, None, None, 0, 0

    def run_state(self, shown: tuple[Any, ...] | None = None) -> dict[str, Any]:
        """The run shown (``shown()``, unless given), as the widget's ``run`` state."""
        rec, stats, plan, seq, total_ns = shown if shown is not None else self.shown()
        if stats is None:
            return {
                "seq": 0,
                "phase": "idle",
                "pruned": [],
                "fed": [],
                "done": [],
                "running": [],
                "error": None,
                "times_us": {},
                "total_us": 0.0,
                "values": {},
                "placement": {},
                "copies": [],
            }
        names = stats.names
        phase = rec.phase if rec is not None else "done"
        if rec is not None and rec.phase == "running":
            done = list(rec.done or ())
            running = [n for n in (rec.running or ()) if n not in set(done)]
        else:
            done = names if phase == "done" else list(rec.done or ()) if rec else []
            running = []
        error = None
        if rec is not None and rec.error is not None:
            error = error_state(rec.error)
            if rec.phase == "error" and rec.done is None and error["node"] in names:
                done = names[: names.index(error["node"])]  # a whole-watched run: best guess
        values: dict[str, str] = {}
        if len(names) <= SEND_ALL_VALUES:  # else only the selected node's, on demand
            values = {n: p for n in names if (p := stats.preview(n)) is not None}
        placement, copies = stats.devices(plan)
        return {
            "seq": seq,
            "phase": phase,
            "pruned": names,
            "fed": list(stats.fed),
            "done": done,
            "running": running,
            "error": error,
            "times_us": dict(stats.times()),
            "total_us": total_ns / 1000,
            "values": values,
            "placement": placement,
            "copies": copies,
            "control_flow": stats.loops.state(plan, phase) if stats.loops else {},  # loops.py
            "queues": queues.queues_state(self),  # levels and waits, read now (queues.py)
        }

    def tick_state(self) -> dict[str, Any] | None:
        """The run shown as a ``tick`` on the views' last "run" state, or None if it needs one.

        Runs watched whole of the plan whose snap the views were last sent differ from
        that state only in their number and time: ``{"seq", "total_us", "base"}``, where
        ``base`` is the seq of the "run" state they amend.
        """
        rec, stats, _, seq, total_ns = self.shown()
        if rec is not None or stats is None or self.sent_snap is None:
            return None
        if stats.snap is not self.sent_snap:
            return None
        return {"seq": seq, "total_us": total_ns / 1000, "base": self.sent_base}

    def stepper_state(self) -> dict[str, Any]:
        """The followed stepper, as the widget's ``stepper`` state."""
        st = self.stepper
        if st is None:
            return {
                "active": False,
                "current": None,
                "done": [],
                "ready": [],
                "pruned": [],
                "values": {},
                "message": "",
                "placement": {},
                "copies": [],
            }
        ready = [op.name for op in st.ready()]
        done = list(self.step_done)
        message = stepper_message(st, done, len(ready))
        placement, copies = self.plan_stats(st.plan).devices(st.plan)
        return {
            "active": True,
            "current": done[-1] if done else None,
            "done": done,
            "ready": ready,
            "pruned": [op.name for op in st.plan.ops],
            "values": dict(self.step_values),
            "message": message,
            "placement": placement,
            "copies": copies,
        }

    def value_preview(self, name: str) -> str | None:
        """The last known value of op ``name``'s first output, as a preview (None if unknown)."""
        if name in self.step_values:
            return self.step_values[name]
        shown = self.shown()[1]
        plans = [shown] if shown is not None else []
        plans += [s for s in list(self.stats.values()) if s is not shown]
        for stats in plans:
            text = stats.preview(name)
            if text is not None:
                return text
        return None

    def act(self, action: str, node: str | None = None) -> str:
        """Do a stepper button's ``action`` ("step", "run_to", "cont", "reset"); '' or an error.

        Errors are returned to be shown in the toolbar: the kernel and the
        stepper stay usable (a failed kernel leaves its op ready).
        """
        st = self.stepper
        if st is None:
            return "no stepper: show one with fb.show(fb.debug.Stepper(sess, fetches, feed))"
        message = ""
        try:
            if action == "step":
                st.step()
            elif action == "run_to":
                if not node:
                    return "select a node first, then Run to it"
                # a copy node is in the plan, not in the graph: pass the op itself
                copy = next((op for op in st.plan.copies if op.name == node), None)
                st.run_to(copy if copy is not None else node)
            elif action == "cont":
                st.cont()
            elif action == "reset":
                st.reset()
            else:
                return f"unknown action {action!r}"
        except Exception as e:
            message = f"{type(e).__name__}: {getattr(e, 'message', None) or e}"
        self.touch("stepper")
        FLUSHER.flush_now()
        return message

    # ------------------------------------------------------------- sending
    def touch(self, *keys: str) -> None:
        """Mark the states ``keys`` changed; the flusher sends them within 1/MAX_PUSHES_PER_S s.

        Under the lock: a key added to the set a flush has just taken would be lost
        (the run's last state, "done", never sent).
        """
        with self.lock:
            self.dirty.update(keys)
        FLUSHER.wake(self)

    def flush(self, force: bool = False) -> None:
        """Send the changed states to every view now (built and sent in order: ``send_lock``).

        The run list's index (``history``) goes at most every ``HISTORY_EVERY_S``
        unless ``force``: while runs stream in, it stays dirty and a later tick sends it.
        """
        with self.send_lock:
            later = False
            with self.lock:
                keys, self.dirty = self.dirty, set()
                seq = self.seq  # read before the states are built: a later run flushes again
                if seq != self.sent_seq:
                    self.sent_seq = seq
                    keys.update(("run", "history"))
                if "history" in keys and not force and time.monotonic() < self.history_due:
                    keys.discard("history")
                    self.dirty.add("history")
                    later = True
                views = list(self.views)
            if later:
                FLUSHER.wake(self)  # the next tick looks again
            if not keys or not views:
                return
            # the same plan's runs watched whole since the last "run": their number and time
            tick = self.tick_state() if "run" in keys and not force else None
            if tick is not None:
                keys.discard("run")
            if "history" in keys:
                self.history_due = time.monotonic() + HISTORY_EVERY_S
            state = self.state(tuple(keys))
            if tick is not None:
                state["tick"] = tick
            state = self._numbered(state)
            for view in views:
                try:
                    view.push(state)
                except Exception:  # a closed comm or widget: stop sending to it
                    self.remove_view(view)

    def _numbered(self, state: dict[str, Any]) -> dict[str, Any]:
        """``state`` with the next ``update`` number in each of its parts (call under send_lock).

        The numbers are process-wide, so they also grow for a view that moves to another
        graph (a widget following the default graph after ``reset_default_graph``)."""
        n = next(_UPDATES)
        return {key: {**part, "update": n} for key, part in state.items()}

    # ------------------------------------------------------------- runs
    def plan_stats(self, plan: Plan) -> PlanStats:
        stats = self.stats.get(plan)
        if stats is None:
            stats = self.stats[plan] = PlanStats(plan, self)
        return stats

    def run_started(self, plan: Plan, stats: PlanStats, live: bool) -> Record:
        """A run watched op by op starts: its record (``live``: shown "running" at once)."""
        seq = self.seq = next(self.seqs)
        rec = Record(seq, plan, stats)
        if live:
            rec.done, rec.running = [], []
        if not stats.fed and plan.feed_slots:
            stats.fed = _fed_ops(plan)
        self.record = rec
        if live:  # a run watched op by op shows "running" at once; others show when done
            self.touch("run")
        return rec

    def run_finished(self, rec: Record, error: BaseException | None) -> None:
        """A recorded run ended: time it, keep it (and its plan's snap) in the history."""
        stats = rec.stats
        stats.last_ns = time.perf_counter_ns() - rec.start_ns
        stats.runs += 1
        rec.error = error
        rec.phase = "done" if error is None else "error"
        self.history.add(rec, stats.last_ns)  # references only: summarised by the flusher
        self.touch("run", "history")

    def run_whole(
        self, plan: Plan, stats: PlanStats, start_ns: int, error: BaseException | None
    ) -> None:
        """A run watched whole ended: one tuple, in the ring (a failed one is recorded).

        No lock and nothing else allocated: ``seq`` moves last (a flush that sees it
        sees the rest), and the flusher is woken only when this graph is not pending.
        """
        ns = _clock() - start_ns
        snap = stats.snap
        if error is not None or snap is None:
            rec = self.run_started(plan, stats, False)
            rec.start_ns = start_ns
            self.run_finished(rec, error)
            return
        stats.last_ns = ns
        stats.runs += 1
        if ns >= watch.LIVE_NS:  # the next run is watched op by op: ask PlanStats.mode
            stats.whole_until = 0
        seq = next(self.seqs)
        run = (seq, snap, ns)
        history = self.history
        history.ring[seq % history.size] = run
        stats.newest = self.whole = run
        self.seq = seq
        if self not in FLUSHER.pending:
            FLUSHER.wake(self)


def _fed_ops(plan: Plan) -> list[str]:
    """Names of ops whose outputs a run of ``plan`` feeds (inputs read from a fed slot)."""
    fed_slots = set(plan.feed_slots)
    names: dict[str, None] = {}
    for op, slots in zip(plan.ops, plan.inputs):
        for t, s in zip(op.inputs, slots):
            if s in fed_slots:
                names[t.op.name] = None
    return list(names)


_graphs: weakref.WeakKeyDictionary[Any, LiveGraph] = weakref.WeakKeyDictionary()
WATCHER = Watcher(_graphs.get)
# Views that show whatever the default graph is (fb.show(), the side panel): after each
# cell, follow_default() moves them to the new one when a cell replaced it.
FOLLOWERS: weakref.WeakSet[Any] = weakref.WeakSet()
FLUSHER = Flusher()


def live_graph(graph: Any) -> LiveGraph:
    """The LiveGraph of ``graph`` (made on first use)."""
    hub = _graphs.get(graph)
    if hub is None:
        hub = _graphs[graph] = LiveGraph(graph)
    return hub


_hooked: set[int] = set()  # id() of the shells whose post_run_cell calls refresh_all


def install_cell_hook(ip: Any) -> None:
    """Call :func:`refresh_all` after every cell of shell ``ip`` (once per shell)."""
    if ip is not None and id(ip) not in _hooked:
        ip.events.register("post_run_cell", _after_cell)
        _hooked.add(id(ip))


def _after_cell(result: Any = None) -> None:
    for view in list(FOLLOWERS):
        # a view that cannot take the new graph (its comm closed) must not break the cell
        with contextlib.suppress(Exception):
            view.follow_default()
    refresh_all()


def refresh_all() -> None:
    """After a cell: send each shown graph that changed, and whatever is pending."""
    for hub in list(_graphs.values()):
        if hub.views:
            hub.refresh()
    FLUSHER.flush_now()


def follow_stepper(stepper: Any) -> LiveGraph:
    """Show ``stepper``'s progress on its graph's views (Step/Run to/Continue/Reset)."""
    hub = live_graph(stepper.graph)
    if hub.stepper is not stepper:
        hub.stepper, hub.step_done, hub.step_values = stepper, [], {}
        for o in stepper.observers:
            if isinstance(o, _StepWatch):
                stepper.observers.remove(o)
        stepper.observers.append(_StepWatch(hub, stepper))
        hub.step_done = [op.name for op in stepper.executed]
    hub.touch("stepper")
    return hub


class _StepWatch(Observer):
    """Follows a Stepper: each step's op, and a preview of its value."""

    def __init__(self, hub: LiveGraph, stepper: Any) -> None:
        self.hub, self.stepper = hub, stepper

    def on_start(self, plan: Plan) -> None:  # the stepper was reset
        if self.hub.stepper is self.stepper:
            self.hub.step_done, self.hub.step_values = [], {}
            self.hub.touch("stepper")

    def after_op(self, op: Operation, outputs: Sequence[Any]) -> None:
        if self.hub.stepper is self.stepper:
            self.hub.step_done.append(op.name)
            if outputs:
                self.hub.step_values[op.name] = preview(outputs[0])
            self.hub.touch("stepper")
