"""Kernel timings of one run: when each op was scheduled, started and ended, and where.

Timing stays out of the executor's loops.  On the scheduler a
:class:`KernelTimer` hands the run timed wrappers of its kernels (each logs
one ``(op, start, end, thread)`` tuple on whatever thread ran it, runs a
kernel off the CPU through its device's timer, and records the output
shapes the graph leaves open); on the straight line the plan's timed twin
stores one clock read per op (``flowbook.runtime.codegen.compile``).  A queue op that
waits (its kernel returns a ``flowbook.state.pending.Pending``, which the scheduler
parks) keeps its place in the log (where it was called) and is filled in
when the run ends: its kernel runs from the end of the wait
(``Pending.woke_ns``: the queue begins handing its result over, e.g.
stacking a batch) to the settling, on the thread that settled it, and the
time from its first call to the end of the wait is its ``waited_ns``, apart
from kernel time (``RunTimings.waited_ns`` per op; ``waited_runs`` per
logged kernel run, for runs with loops).  Either way the
observers that asked get a :class:`RunTimings` at the end; its per-op lists,
the scheduled times (from the plan's edges) and the output dtypes are built
only when someone reads them (the profiler, the live widget).

    >>> RunTimings([0], [0], [3], [8], [1]).of(0).start_ns
    3
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from flowbook.runtime.plan import Plan
from flowbook.state.pending import Pending


class KernelTiming(NamedTuple):
    """When and where one op's kernel ran, in ``time.perf_counter_ns()`` nanoseconds.

    >>> KernelTiming(0, 5, 9, 1).end_ns - KernelTiming(0, 5, 9, 1).start_ns
    4
    """

    scheduled_ns: int  # when the op became ready (all inputs produced)
    start_ns: int  # kernel call began
    end_ns: int  # kernel call returned
    thread_id: int  # threading.get_ident() of the thread that ran it
    waited_ns: int = 0  # before start_ns: how long it waited on a queue (from its first call)


class RunTimings:
    """Every kernel timing of one run, as flat lists indexed by the plan's op index.

    Handed to ``Observer.on_timings`` once, at the end of the run.  A timed
    run on the scheduler logs one ``(op, start, end, thread)`` tuple per
    kernel (``from_log``); a timed straight-line run stores one clock read
    per op (``from_stamps``).  The lists below are built from either when
    first read (``scheduled_ns[i]`` is when op i's last input was produced,
    or the run's start), so a traced run whose timings nobody reads pays for
    the recording only.

    >>> t = RunTimings([1, 0], [0, 0], [10, 20], [15, 30], [7, 7])
    >>> t.of(1).end_ns - t.of(1).start_ns, t.order
    (10, [1, 0])
    """

    __slots__ = (
        "_lists",
        "_log",
        "_shapes",
        "_shapes_of",
        "device_ns",
        "runs",
        "waited_ns",
        "waited_runs",
        "where",
    )

    def __init__(
        self,
        order: list[int],
        scheduled_ns: list[int],
        start_ns: list[int],
        end_ns: list[int],
        thread_id: list[int],
        shapes: list[Any] | None = None,
        device_ns: dict[int, tuple[int, int]] | None = None,
    ) -> None:
        self._lists: tuple[list[int], ...] | None = (
            order,
            scheduled_ns,
            start_ns,
            end_ns,
            thread_id,
        )
        self._log: tuple[Plan, list[Any], int, int | None] | None = None
        self._shapes = shapes
        self._shapes_of: Plan | None = None  # set: _shapes hold bare shapes (from_stamps)
        # op index -> (start_ns, end_ns) of its kernel on its device (CUDA events), for the
        # ops off the CPU; None when the plan has none
        self.device_ns = device_ns
        # runs with loops: every kernel run (op, start, end, thread) in finish order (an op
        # in a loop runs once per iteration), and per run the (frame_name, iteration) pairs
        # it ran in, outermost first; None for runs without loops
        self.runs: list[tuple[int, int, int, int]] | None = None
        self.where: list[tuple[tuple[str, int], ...]] | None = None
        # op index -> ns it waited on a queue before its kernel started; None when none did
        self.waited_ns: dict[int, int] | None = None
        # runs with loops: position in ``runs`` -> ns that kernel run waited; None when none did
        self.waited_runs: dict[int, int] | None = None

    @classmethod
    def from_log(
        cls,
        plan: Plan,
        log: list[Any],
        start_ns: int,
        shapes: list[Any] | None = None,
        device_ns: dict[int, tuple[int, int]] | None = None,
    ) -> RunTimings:
        """Timings to be built from a run's log of (op, start, end, thread), in finish order."""
        t = cls.__new__(cls)
        t._lists, t._shapes, t._shapes_of, t.device_ns = None, shapes, None, device_ns
        t._log, t.where, t.runs = (plan, log, start_ns, None), None, None
        t.waited_ns = t.waited_runs = None
        return t

    @classmethod
    def from_stamps(
        cls, plan: Plan, stamps: list[float], shapes: list[Any] | None, thread: int
    ) -> RunTimings:
        """Timings of a straight-line run: ops 0, 1, ... in order, op i from stamp i to i + 1.

        The stamps are ``time.perf_counter()`` seconds (0 where an op did not
        run): a float costs the run less than an int (Python keeps a free list
        of them); they are turned into ``perf_counter_ns`` nanoseconds when read.
        """
        t = cls.__new__(cls)
        t._lists, t._shapes, t._shapes_of, t.device_ns = None, shapes, plan, None
        t._log, t.where, t.runs = (plan, stamps, 0, thread), None, None
        t.waited_ns = t.waited_runs = None
        return t

    def _built(self) -> tuple[list[int], ...]:
        if self._lists is None:
            plan, log, t0, thread = self._log  # type: ignore[misc]
            n = len(plan.ops)
            starts, ends, threads = [0] * n, [0] * n, [thread or 0] * n
            if thread is not None:  # the stamps of a straight-line run (from_stamps)
                ran = log.index(0, 1) - 1 if 0 in log else n  # a failed run: ops before it
                log = [round(s * 1e9) for s in log[: ran + 1]]  # seconds -> ns
                t0 = log[0]
                order = list(range(ran))
                starts[: len(order)], ends[: len(order)] = log[:-1], log[1:]
            else:  # (op, start, end, thread) in finish order
                order = [e[0] for e in log]
                for i, a, b, th in log:
                    starts[i], ends[i], threads[i] = a, b, th
            sched = [t0] * n
            for i, ps in enumerate(plan.producers):
                if ps:
                    sched[i] = max(ends[p] for p in ps)
            self._lists, self._log = (order, sched, starts, ends, threads), None
        return self._lists

    @property
    def shapes(self) -> list[Any] | None:
        """Per op: (dtype, shape) of its one output, or a list of them, if an observer asked
        (None for ops whose static shapes are fully known: see ``Plan.dynamic``; a straight-line
        run gives the shapes its fed shapes determine: ``compile.shapes_given_feeds``)."""
        plan = self._shapes_of
        if plan is not None and self._shapes is not None:  # bare shapes: add the dtypes
            self._shapes = [
                None
                if v is None
                else (plan.ops[i].outputs[0].dtype.np, v)
                if len(plan.outputs[i]) == 1
                else [(t.dtype.np, sh) for t, sh in zip(plan.ops[i].outputs, v)]
                for i, v in enumerate(self._shapes)
            ]
            self._shapes_of = None
        return self._shapes

    @property
    def order(self) -> list[int]:
        """Op indices, in the order the ops finished."""
        return self._built()[0]

    @property
    def scheduled_ns(self) -> list[int]:
        """Per op: when it became ready (its last input produced)."""
        return self._built()[1]

    @property
    def start_ns(self) -> list[int]:
        """Per op: kernel start."""
        return self._built()[2]

    @property
    def end_ns(self) -> list[int]:
        """Per op: kernel end."""
        return self._built()[3]

    @property
    def thread_id(self) -> list[int]:
        """Per op: the thread that ran it."""
        return self._built()[4]

    def of(self, i: int) -> KernelTiming:
        """Op ``i``'s timing as one record."""
        _, sched, starts, ends, threads = self._built()
        waited = self.waited_ns.get(i, 0) if self.waited_ns else 0
        return KernelTiming(sched[i], starts[i], ends[i], threads[i], waited)


class KernelTimer:
    """Times the kernels of one threaded run for the observers' ``on_timings`` hooks.

    ``fns`` replaces the plan's kernels for the run: each wrapper reads the
    clock around its kernel on the thread that runs it (the pool's too).
    ``finish()`` waits for the device timers and calls the hooks.
    """

    def __init__(self, plan: Plan, hooks: Sequence[Callable[..., Any]], keep_shapes: bool) -> None:
        self.plan = plan
        self.hooks = hooks  # the observers' on_timings
        # (op, start, end, thread), finish order (an op that waited: where it was called)
        self.log: list[Any] = []
        # per op: (dtype, shape) of outputs the graph leaves open, when an observer keeps shapes
        self.shapes: list[Any] | None = [None] * len(plan.ops) if keep_shapes else None
        timers = {d: d.timer() for d in set(plan.devices)} if plan.off_host else {}
        self.timers = [t for t in timers.values() if t is not None]  # device timers (CUDA events)
        # ops that waited: (their log entry, filled in by finish; first call ns; the Pending)
        self.waits: list[tuple[list[int], int, Pending]] = []
        self.fns = [
            self._timed(i, fn, timers.get(d) if timers else None)
            for i, (fn, d) in enumerate(zip(plan.fns, plan.devices))
        ]
        self.t0 = time.perf_counter_ns()
        self.where: list[Any] | None = None  # runs with loops: per logged kernel, its iteration

    def _timed(self, i: int, fn: Callable[..., Any], timer: Any) -> Callable[..., Any]:
        log, clock, thread = self.log.append, time.perf_counter_ns, threading.get_ident
        shapes = self.shapes if self.shapes is not None and self.plan.dynamic[i] else None
        several = len(self.plan.outputs[i]) != 1
        wait = self.waits.append

        def timed(*args: Any) -> Any:
            start = clock()
            result = fn(*args) if timer is None else timer.call(i, fn, args)
            if type(result) is Pending:  # it waits: its entry is filled in once settled (finish)
                entry = [i, start, start, thread()]
                log(entry)
                wait((entry, start, result))
                return result
            log((i, start, clock(), thread()))
            if shapes is not None:  # the shapes, not the arrays (those are freed)
                shapes[i] = (
                    [_dtype_shape(o) for o in result or ()] if several else _dtype_shape(result)
                )
            return result

        return timed

    def finish(self) -> None:
        """Hand the run's timings (device times included) to the hooks."""
        device_ns: dict[int, tuple[int, int]] | None = None
        if self.timers:
            device_ns = {}
            try:
                for t in self.timers:
                    device_ns.update(t.finish())
            except Exception:  # a device left unusable by the run's error: no device lane
                device_ns = None
        waited = self._settled_waits() if self.waits else None
        timings = RunTimings.from_log(self.plan, self.log, self.t0, self.shapes, device_ns)
        if waited:
            timings.waited_ns = {e[0]: ns for e, ns in waited}
        if self.where is not None:
            timings.where, timings.runs = self.where, [tuple(e) for e in self.log]
            if waited:
                at = {id(e): k for k, e in enumerate(self.log)}
                timings.waited_runs = {at[id(e)]: ns for e, ns in waited}
        for hook in self.hooks:
            hook(self.plan, timings)

    def _settled_waits(self) -> list[tuple[list[int], int]]:
        """Fill in the entries of the ops that waited (kernel: from the wait's end to the
        settling); (entry, ns waited) each.  A wait the run withdrew ends, settled by
        CancelledError, when it stopped."""
        waited = []
        for entry, called, p in self.waits:
            if not p.done:  # withdrawn too late: the queue is settling it now
                continue
            i = entry[0]
            entry[1:] = p.woke_ns, p.settled_ns, p.settled_by
            waited.append((entry, max(p.woke_ns - called, 0)))
            if self.shapes is not None and self.plan.dynamic[i] and p.error is None:
                r = p.result
                several = len(self.plan.outputs[i]) != 1
                self.shapes[i] = [_dtype_shape(o) for o in r or ()] if several else _dtype_shape(r)
        return waited


def _dtype_shape(value: Any) -> tuple[Any, Any]:
    """(dtype, shape) of an output; (None, None) for one that is not an array."""
    try:
        return value.dtype, value.shape
    except AttributeError:
        return None, None
