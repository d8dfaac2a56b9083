"""A cluster run, watched: the client's observers see it as they see a local run.

``DaskSession.run`` hands a watched step to :class:`StepWatch`; an unwatched
step (no observer anywhere) never comes here and asks its tasks for no
report.  The observers get the usual calls, on the client's plan (the
pruned ops, as a local run of the same fetches would have them):

- ``for_run`` decides, as for a local run, who watches the step whole
  (``on_start`` and ``on_finish`` only) and who op by op;
- ``on_start``, then ``before_op`` for every op of the plan: every
  partition was sent at once, so every op is under way;
- as each task's reply arrives (on the client's Dask event loop, while the
  other tasks still run), ``after_op`` for each op of that task's partition,
  with the value where the op's output was fetched (the client has no
  other): the live graph lights up task by task;
- when every reply is in, ``on_timings`` with the merged kernel timings
  (:func:`flowbook.distributed.dist_trace.merged_timings`) if a watcher
  wants timings (the tasks were asked for their kernels: level 2);
- ``on_finish``, with the error if the step failed.

The live graph also needs where each op ran and the Send/Recv pairs:
:func:`remember` keeps each client plan's partitioning (weakly, by plan),
and :func:`task_layout` gives it back (``flowbook.notebook.tasks``).

    >>> task_layout(object()) is None
    True
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any

from flowbook.distributed.dist_trace import ClockSync, TaskReport, merged_timings, now
from flowbook.framework.tensor import Tensor
from flowbook.runtime.observers import Observer, hooks_of, split_for_run

__all__ = ["StepWatch", "remember", "task_layout"]

_LAYOUTS: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()  # plan -> Partitioned


def remember(plan: Any, parted: Any) -> None:
    """Keep how ``plan`` was split over tasks, for the live graph (as long as the plan lives)."""
    _LAYOUTS[plan] = parted


def task_layout(plan: Any) -> Any:
    """The ``Partitioned`` a cluster session made of ``plan``, or None (a local plan)."""
    try:
        return _LAYOUTS.get(plan)
    except TypeError:  # not weakly referenceable: never a plan of ours
        return None


class StepWatch:
    """The observers of one cluster step, and what its tasks reported.  See the module doc."""

    def __init__(
        self, dplan: Any, elements: Sequence[Any], observers: Sequence[Observer], clock: ClockSync
    ) -> None:
        self.dplan = dplan  # the step's distributed plan (its client plan: dplan.plan)
        self.elements = elements  # the run's fetches (for the values after_op hands over)
        self.clock = clock  # the session's clock estimates, updated by each reply
        self.whole, self.watchers = split_for_run(observers, dplan.plan)
        self.after = hooks_of(self.watchers, "after_op")
        self.timed = hooks_of(self.watchers, "on_timings")
        self.level = 2 if self.timed else 1  # what the tasks are asked to report
        self.reports: dict[str, tuple[int, int, TaskReport]] = {}  # task -> (t0, t3, report)

    def start(self) -> None:
        """``on_start`` for all, then every op under way."""
        plan = self.dplan.plan
        for o in self.whole:
            o.on_start(plan)
        for o in self.watchers:
            o.on_start(plan)
        before = hooks_of(self.watchers, "before_op")
        if before:
            for op in plan.ops:
                for hook in before:
                    hook(op)

    async def call(self, call: Callable[..., Any], task: str, args: tuple) -> list:
        """Run one task's share (``call(task, "run", *args, level)``); its fetched values.

        Stamps the call out and back, keeps the task's report, updates the clock
        estimate and tells the watchers that the task's ops are done.
        """
        t0 = now()
        values, report = await call(task, "run", *args, self.level)
        t3 = now()
        report = TaskReport(*report)
        self.reports[task] = (t0, t3, report)
        self.clock.sample(task, t0, report.t_in, report.t_out, t3)
        if self.after:
            self._done(task, values)
        return values

    def _done(self, task: str, values: list) -> None:
        part = self.dplan.parted.parts[task]
        fetched: dict[Any, Any] = {}
        for i, v in zip(part.fetches, values):
            e = self.elements[i]
            if isinstance(e, Tensor) and e.value_index == 0:
                fetched[e.op] = v
        where = self.dplan.parted.where
        for op in self.dplan.plan.ops:
            if where.get(op.name) == task:
                outputs = (fetched[op],) if op in fetched else ()
                for hook in self.after:
                    hook(op, outputs)

    def finish(self, error: BaseException | None) -> None:
        """``on_timings`` (when every task answered) and ``on_finish``."""
        plan = self.dplan.plan
        try:
            if self.timed and error is None and len(self.reports) == len(self.dplan.parted.parts):
                timings = merged_timings(self.dplan, self.reports, self.clock)
                for hook in self.timed:
                    hook(plan, timings)
        finally:
            for o in self.watchers:
                o.on_finish(plan, error)
            for o in self.whole:
                o.on_finish(plan, error)

    def spans(self) -> dict[str, tuple[int, int]]:
        """Task -> (start, end) of its partition's run, on the client's clock (ns)."""
        out = {}
        for task, (_, _, rep) in self.reports.items():
            off = self.clock.offset(task)[0]
            out[task] = (rep.start_ns - off, rep.end_ns - off)
        return out
