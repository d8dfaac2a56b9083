"""Queues in the live views: how full each queue is, and which ops wait for what.

**What is sent** (the ``run`` state's ``queues``, read when the state is
built, on the flusher's thread): per queue op of the graph whose queue a
watched run has used, its level, and per op that waits now, what it waits
for (``Pending.what``)::

    {"levels": {"q": {"size": 3, "capacity": 10, "closed": False}},
     "waiting": {"q_Dequeue": "an element of queue 'q'"}}

``capacity`` is None for an unbounded queue.  The front end writes the
level on the queue op's box ("3 / 10", "closed") and marks a waiting op
(an hourglass, an amber outline, "waiting: an element of queue 'q'").

**Where it comes from** (:class:`QueueView`, one per shown graph, for every
run of that graph on any thread, so a queue runner's run that waits for
room shows as well as the training step that waits for a batch):

- ``cells``: the session's ``ResourceCell`` of each queue op, found once per
  plan in the plan's bound kernels (the queue op's kernel is bound with its
  ``cell``, ``flowbook.ops.io.queue_ops``).  A level is three attribute reads
  of the cell's ``QueueState``, done when a state is sent, never by a run;
  a cell emptied by ``Session.close`` or a reset keeps its last level.
- ``waiting``: told by the threaded scheduler's ``Observer.on_wait`` and
  ``on_wait_end``, called only when an op parks and when its wait ends,
  never per element.  A run that stops while it waits (an error, the
  deadline, an interrupt) ends its waits in ``on_finish``.

While any op waits, ``loops.TICKER`` asks for a send every ``TICK_S``, so
the levels move at the views' push rate while other threads fill or drain
the queue.  After, they stay as last sent.

**Which runs.**  Every run of a plan with ops that may wait
(``plan.blocking``) gets an observer (:func:`follow_waits`).  A run watched
whole that never waits stays watched whole (``LiveGraph.run_whole``); one
that parks an op becomes a recorded run at that moment, shown "running".
Runs with loops (the frame scheduler) wait without parking: their waits are
not reported.

    >>> import numpy as np
    >>> from flowbook.state.queue_state import QueueState
    >>> q = QueueState("q", "fifo", 10, [np.dtype("float32")], None)
    >>> _ = q.enqueue([(np.float32(1),), (np.float32(2),)])
    >>> level(q)
    {'size': 2, 'capacity': 10, 'closed': False}
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any

from flowbook.framework.tensor import Operation
from flowbook.notebook.loops import TICKER
from flowbook.runtime.observers import Observer
from flowbook.runtime.plan import Plan

QUEUE_TYPES = frozenset(
    ("FIFOQueueV2", "PaddingFIFOQueueV2", "RandomShuffleQueueV2", "PriorityQueueV2")
)  # the ops that make a queue (flowbook.ops.io.queue_ops)
UNBOUNDED = 1 << 62  # QueueState's capacity for a queue built without a bound


def level(q: Any) -> dict[str, Any]:
    """A queue's level as sent: its size, its capacity (None: unbounded), whether closed."""
    capacity = q.capacity
    return {
        "size": q.size(),
        "capacity": None if capacity >= UNBOUNDED else capacity,
        "closed": bool(q.closed),
    }


class QueueView:
    """The queues and the waits of one shown graph.  See the module doc."""

    __slots__ = ("__weakref__", "cells", "hub_ref", "levels", "lock", "plans", "waiting")

    def __init__(self, hub: Any) -> None:
        self.hub_ref = weakref.ref(hub)  # the LiveGraph (weakly: it owns nothing of this)
        self.cells: dict[str, Any] = {}  # queue op name -> its ResourceCell, newest plan's
        self.levels: dict[str, dict[str, Any]] = {}  # queue op name -> its level last read
        self.plans: weakref.WeakSet[Plan] = weakref.WeakSet()  # plans whose cells are known
        self.waiting: dict[str, list[Any]] = {}  # op name -> [what, runs waiting in it]
        self.lock = threading.Lock()  # guards waiting (runs on several threads park)

    @property
    def hub(self) -> Any:
        """The LiveGraph shown (None once gone): what ``loops.TICKER`` asks for sends."""
        return self.hub_ref()

    @property
    def progress(self) -> dict[str, list[Any]]:
        """What ``loops.TICKER`` follows: non-empty while an op waits."""
        return self.waiting

    def add_plan(self, plan: Plan) -> None:
        """Learn ``plan``'s queue cells (once per plan; cheap after)."""
        if plan in self.plans:
            return
        self.plans.add(plan)
        for op, fn in zip(plan.ops, plan.fns):
            if op.type in QUEUE_TYPES:
                cell = (getattr(fn, "keywords", None) or {}).get("cell")
                if cell is not None:
                    self.cells[op.name] = cell

    # ------------------------------------------------ on the runs' threads
    def wait(self, name: str, what: str) -> None:
        """Op ``name`` of some run waits for ``what``."""
        with self.lock:
            w = self.waiting.get(name)
            if w is None:
                self.waiting[name] = [what, 1]
            else:
                w[0], w[1] = what, w[1] + 1
        TICKER.follow(self)
        hub = self.hub_ref()
        if hub is not None:
            hub.touch("run")

    def unwait(self, name: str) -> None:
        """One run's wait in op ``name`` is over."""
        with self.lock:
            w = self.waiting.get(name)
            if w is not None:
                w[1] -= 1
                if w[1] <= 0:
                    del self.waiting[name]
        hub = self.hub_ref()
        if hub is not None:
            hub.touch("run")

    # ------------------------------------------------ on the flusher's thread
    def state(self) -> dict[str, Any]:
        """The run state's ``queues`` (module doc): levels read now, the ops waiting now."""
        levels = self.levels
        for name, cell in list(self.cells.items()):
            q = cell.value
            if q is not None:
                levels[name] = level(q)
        with self.lock:
            waiting = {name: w[0] for name, w in self.waiting.items()}
        return {"levels": dict(levels), "waiting": waiting}


_VIEWS: weakref.WeakKeyDictionary[Any, QueueView] = weakref.WeakKeyDictionary()


def queue_view(hub: Any) -> QueueView:
    """The QueueView of a LiveGraph (made on first use)."""
    view = _VIEWS.get(hub)
    if view is None:
        view = _VIEWS[hub] = QueueView(hub)
    return view


def queues_state(hub: Any) -> dict[str, Any]:
    """The ``queues`` part of ``hub``'s run state ({} while no run of it used a queue)."""
    view = _VIEWS.get(hub)
    return view.state() if view is not None and view.cells else {}


class _Waits:
    """The waits of one run: told to the graph's QueueView, and all ended when the run ends."""

    __slots__ = ("ops", "view")

    def __init__(self, view: QueueView) -> None:
        self.view = view
        self.ops: list[str] = []  # names of this run's ops waiting now

    def on_wait(self, op: Operation, what: str) -> None:
        self.ops.append(op.name)
        self.view.wait(op.name, what)

    def on_wait_end(self, op: Operation) -> None:
        if op.name in self.ops:
            self.ops.remove(op.name)
            self.view.unwait(op.name)

    def end(self) -> None:
        """The run is over: the waits it left (withdrawn by an error) end too."""
        while self.ops:
            self.view.unwait(self.ops.pop())


class _WaitRun(Observer):
    """A run watched whole whose ops may wait: recorded (shown "running") once one parks.

    A run that never waits costs this object and ``run_whole`` at its end, nothing else.
    """

    def __init__(self, hub: Any, stats: Any, start_ns: int, view: QueueView) -> None:
        self.hub, self.stats, self.start_ns, self.view = hub, stats, start_ns, view
        self.waits: _Waits | None = None  # made at the run's first wait
        self.rec: Any = None  # the run's Record, made at its first wait

    def on_wait(self, op: Operation, what: str) -> None:
        if self.waits is None:
            self.waits = _Waits(self.view)
            self.rec = self.hub.run_started(self.stats.plan_ref(), self.stats, False)
            self.rec.start_ns = self.start_ns
        self.waits.on_wait(op, what)

    def on_wait_end(self, op: Operation) -> None:
        if self.waits is not None:
            self.waits.on_wait_end(op)

    def on_finish(self, plan: Plan, error: BaseException | None) -> None:
        if self.waits is None:
            self.hub.run_whole(plan, self.stats, self.start_ns, error)
            return
        self.waits.end()
        self.hub.run_finished(self.rec, error)


def follow_waits(
    hub: Any, stats: Any, mode: str | None, start_ns: int, watch: Callable[[str], Any]
) -> Observer:
    """The observer of a run of a plan whose ops may wait (``Watcher.for_run``'s answer).

    ``mode``: what ``PlanStats.mode`` asks for; ``watch(mode)`` makes the
    op-by-op watch it would get, to which the wait hooks are added.
    """
    view = queue_view(hub)
    plan = stats.plan_ref()
    if plan is not None:
        view.add_plan(plan)
    if mode is None:
        return _WaitRun(hub, stats, start_ns, view)
    w = watch(mode)
    waits = _Waits(view)
    w.on_wait, w.on_wait_end = waits.on_wait, waits.on_wait_end
    finish = w.on_finish

    def on_finish(plan: Plan, error: BaseException | None) -> None:
        waits.end()
        finish(plan, error)

    w.on_finish = on_finish
    return w
