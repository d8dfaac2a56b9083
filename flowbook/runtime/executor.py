"""The executor: one front door, ``execute``, that runs a Plan's ops over numpy (or CuPy) kernels.

``execute(plan, path, feeds, observers, deadline)`` chooses, in one place,
how a run goes (``_choose``); every path must give the same values:

- **the straight line** (``run_compiled``): the plan's ops in its static
  order as one generated function (``flowbook.runtime.codegen.compile.RunPath``).  Taken when
  nothing asks for more: no deadline, no per-op observer, and either no op is
  heavy or the last threaded run with feeds of the same shapes kept every
  kernel inline.  Its first run goes through ``run_serial`` (a plan that runs
  once is not worth compiling).  Observers that want only the run's timings
  keep it: ``run_compiled_timed`` runs its timed twin (one clock read per op).
- **the threaded scheduler** (``run_threaded``): for a deadline, per-op
  observers, a timed run with ops off the CPU (device timers), heavy ops
  that may go to the thread pool, or ops that may wait (``plan.blocking``).
- **the serial reference** (``run_serial``): ops one by one in the static
  order; the differential tests hold the other two to it.

Every path first puts the plan's ``constants`` (values the optimiser folded,
``flowbook.runtime.optimize.optimizer``; none in a plan as built) in their slots.

**The scheduler state** (:class:`Schedule`) is one state machine, shared by
threaded runs and the Stepper (``flowbook.debug.Stepper`` drives it one op at
a time), so what a run can do is written once:

- ``pending[i]``: ops op i still waits for; 0 means ready
- ``ready``: ops whose inputs are all produced, FIFO
- ``vals[s]``: the value in slot s; ``uses[s]``: reads still to come (0 frees it)
- ``remaining``: ops not yet finished

The threaded loop (``_Threaded.loop``) pops a ready op and runs it inline on
the calling thread, unless it is heavy (a large matmul, which releases the
GIL), its inputs are actually large, *and* other ready work is waiting: only
then is it worth a pool thread, so a chain of big matmuls runs inline and two
independent ones run side by side.  Pool results come back through a queue
read with a timeout, so the wait stays interruptible and bounded.
A queue op that must wait returns a ``flowbook.state.pending.Pending`` (kernels run
inside ``parking()``): it is ``parked`` (counted in ``in_flight``) and its
callback posts the result into the same queue; a stopped run withdraws it.
Observers hear of a wait only there: ``on_wait`` as it parks, ``on_wait_end``
as its result is collected.  The first
error (or a KeyboardInterrupt, or the deadline) stops scheduling, waits for
the in-flight kernels (at most one kernel's time) and raises; the pool is
shared by all sessions and bounded, so no thread outlives its use.

**Observers** (``flowbook.runtime.observers``) are called on the calling thread, and
only the hooks they override.  The loop has no timing code: when an observer
wants timings, the run's kernels are ``flowbook.runtime.timings.KernelTimer``'s timed
wrappers (which also run off-CPU kernels through their device's timer), or
the straight line's timed twin.  **Devices**: a GPU kernel is a call that
launches work and returns; the loops do not care.  When a kernel runs out of
memory the run's values are dropped at once, the devices release cached
memory, and the error is a ``ResourceExhaustedError`` naming the op.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     float(s.run(fb.constant(2.0) * 3.0))
    6.0
"""

from __future__ import annotations

import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from functools import partial
from typing import Any

import numpy as np

from flowbook.framework import errors
from flowbook.runtime.codegen.compile import RunPath, feed_shapes
from flowbook.runtime.frame_entry import run_frames
from flowbook.runtime.memory_plan import owned
from flowbook.runtime.observers import Observer, hooks_of, split_for_run, timings_hooks
from flowbook.runtime.op_errors import deadline_error, run_error
from flowbook.runtime.plan import DISCARD, Plan, as_outputs
from flowbook.runtime.pool import drain, large, pool
from flowbook.runtime.timings import KernelTimer, RunTimings
from flowbook.state.pending import Pending, parking

WAIT_SLICE_S = 0.05  # longest single block on the completion queue: keeps waits interruptible


# ---------------------------------------------------------------- front door
def execute(
    plan: Plan,
    path: RunPath,
    feeds: Sequence[Any],
    observers: Sequence[Observer] = (),
    deadline: float | None = None,
    max_in_flight: int = 0,
    faster: Callable[[tuple[Any, ...] | None], tuple[Plan, RunPath]] | None = None,
) -> list[Any]:
    """Run ``plan`` on the path that serves the run; returns the fetched values, plan order.

    ``path`` is what earlier runs of the plan learnt (kept by the session);
    ``deadline`` a ``time.monotonic()`` value (DeadlineExceededError past
    it); ``max_in_flight`` bounds concurrent pool kernels (0: the pool's size).
    Observers that watch this run whole (``Observer.for_run`` gives None) see
    only its start and end, and leave the run on its fast path.  ``faster``
    (the session's optimiser, ``flowbook.runtime.optimize.optimizer``) gives the plan to
    run instead when nobody watches op by op, or all who do take the
    optimised plan (``Observer.takes_optimized``: ``profile(optimized=True)``);
    whole watchers still see the written plan start and end.
    """
    if not observers:  # the common case: nobody watches
        shapes = None  # the fed values' shapes, read once for the optimiser and _choose
        if faster is not None:
            plan, path = faster(shapes := feed_shapes(feeds))
        return _quiet_choose(plan, path, feeds, (), deadline, max_in_flight, shapes)
    whole, watchers = split_for_run(observers, plan)
    for o in whole:
        o.on_start(plan)
    # the optimised plan, unless someone watches the ops as written (Observer.takes_optimized)
    as_run = faster is not None and all(w.takes_optimized for w in watchers)
    run_plan, run_path = faster(None) if as_run else (plan, path)
    error: BaseException | None = None
    try:
        return _quiet_choose(run_plan, run_path, feeds, watchers, deadline, max_in_flight)
    except BaseException as e:
        error = e
        raise
    finally:
        for o in whole:
            o.on_finish(plan, error)


def _choose(
    plan: Plan,
    path: RunPath,
    feeds: Sequence[Any],
    observers: Sequence[Observer],
    deadline: float | None,
    max_in_flight: int,
    shapes: tuple[Any, ...] | None = None,
) -> list[Any]:
    """The one place a run's path is chosen (``shapes``: the fed values', where read already).
    See the module docstring."""
    if plan.control_flow:  # branches and loops: frames and iterations
        return run_frames(plan, path, feeds, observers, deadline)
    if plan.blocking:  # an op may wait: only the threaded scheduler parks it
        return run_threaded(plan, feeds, observers, deadline, max_in_flight, path)
    # a timed run off the CPU needs the scheduler's device timers (CUDA events)
    hooks = timings_hooks(observers) if observers and not plan.off_host else None
    if deadline is None and (not observers or hooks):
        straight = True
        if plan.any_heavy:
            if shapes is None:
                shapes = feed_shapes(feeds)
            straight = path.inline(shapes)
        if straight and path.straight():
            if hooks:
                return run_compiled_timed(path, feeds, observers, hooks, shapes)
            return run_compiled(path, feeds)
        if straight and not observers:
            return run_serial(plan, feeds)
    return run_threaded(plan, feeds, observers, deadline, max_in_flight, path)


# _choose under TF semantics: 1/0 is inf, silently (errstate as a decorator: no object per run)
_quiet_choose = np.errstate(all="ignore")(_choose)


def _store(vals: list[Any], outs: tuple[int, ...], result: Any) -> None:
    """Put a kernel's ``result`` into the output slots ``outs``."""
    if len(outs) == 1:
        vals[outs[0]] = result
    elif outs:
        for s, v in zip(outs, result):
            vals[s] = v


# ----------------------------------------------------------- scheduler state
class Schedule:
    """The state of one run of a plan: what waits, what is ready, the values.

    Shared by the threaded loop and the Stepper.  ``keep_values`` (the
    Stepper) never frees a value, so every computed tensor stays inspectable.

    >>> import flowbook as fb
    >>> from flowbook.runtime.plan import build_plan
    >>> with fb.Graph().as_default() as g:
    ...     y = fb.constant(1.0) + 2.0
    ...     plan = build_plan(g, [y], [], [], bind=lambda op: op._opdef.bound_kernel(np, op.attrs))
    >>> sched = Schedule(plan, [])
    >>> while sched.ready:
    ...     i = sched.ready.popleft(); sched.finish(i, plan.fns[i](*sched.args(i)))
    >>> float(sched.vals[plan.fetch_slots[0]]), sched.remaining
    (3.0, 0)
    """

    __slots__ = ("pending", "plan", "ready", "remaining", "uses", "vals")

    def __init__(self, plan: Plan, feeds: Sequence[Any], keep_values: bool = False) -> None:
        self.plan = plan
        self.vals: list[Any] = [None] * plan.n_slots  # slot -> value
        for s, v in zip(plan.feed_slots, feeds):
            self.vals[s] = v
        for s, v in plan.constants:  # values folded by the optimiser
            self.vals[s] = v
        self.pending = list(plan.pending)  # op -> ops it still waits for; 0 means ready
        # slot -> reads still to come; 0 frees the value (None: values are kept)
        self.uses: list[int] | None = None if keep_values else list(plan.uses)
        self.ready: deque[int] = deque(plan.ready)  # ops ready to run, FIFO
        self.remaining = len(plan.ops)  # ops not yet finished

    def args(self, i: int) -> list[Any]:
        """Op ``i``'s input values."""
        vals = self.vals
        return [vals[s] for s in self.plan.inputs[i]]

    def finish(self, i: int, result: Any) -> None:
        """Op ``i`` returned ``result``: store it, free dead values, release its consumers."""
        plan, vals = self.plan, self.vals
        _store(vals, plan.outputs[i], result)
        vals[DISCARD] = None
        uses = self.uses
        if uses is not None:
            for s in plan.inputs[i]:
                uses[s] -= 1
                if not uses[s]:
                    vals[s] = None
        pending = self.pending
        for c in plan.consumers[i]:
            pending[c] -= 1
            if not pending[c]:
                self.ready.append(c)
        self.remaining -= 1

    def fetched(self) -> list[Any]:
        """The fetched values (None for op fetches), in fetch order."""
        return [None if s is None else self.vals[s] for s in self.plan.fetch_slots]


# ------------------------------------------------------- serial and straight
def run_serial(plan: Plan, feeds: Sequence[Any]) -> list[Any]:
    """Run the plan's ops one by one in its static order (the reference executor)."""
    vals: list[Any] = [None] * plan.n_slots
    for s, v in zip(plan.feed_slots, feeds):
        vals[s] = v
    for s, v in plan.constants:  # values folded by the optimiser
        vals[s] = v
    for i, fn in enumerate(plan.fns):
        try:
            result = fn(*[vals[s] for s in plan.inputs[i]])
        except Exception as e:
            vals.clear()  # the run is over: its buffers go now, not with the traceback
            result = None
            raise run_error(plan, i, e) from e
        _store(vals, plan.outputs[i], result)
        for s in plan.frees[i]:
            vals[s] = None
        vals[DISCARD] = None
    return [None if s is None else vals[s] for s in plan.fetch_slots]


def run_compiled(path: RunPath, feeds: Sequence[Any]) -> list[Any]:
    """Run the plan's compiled straight-line function; errors name their op."""
    try:
        return path.compiled(feeds)  # type: ignore[misc]
    except Exception as e:
        i = path.op_index(e.__traceback__)
        if i is None:
            raise
        raise run_error(path.plan, i, e) from e


def run_compiled_timed(
    path: RunPath,
    feeds: Sequence[Any],
    observers: Sequence[Observer],
    hooks: Sequence[Callable[..., Any]],
    shapes_key: tuple[Any, ...] | None = None,
) -> list[Any]:
    """Run the straight line's timed twin for observers that want only ``on_timings``.

    The trace shows the run as it runs untraced (the calling thread, the
    static order) at one clock read per op.  When an observer ``keeps_shapes``,
    the twin stores the output shapes neither the graph nor the fed shapes
    (``shapes_key``, default: read from ``feeds``) determine.
    """
    plan = path.plan
    # the twin first: compiling it (once per feed signature) is not part of the run observed
    if any(o.keeps_shapes for o in observers):
        key = feed_shapes(feeds) if shapes_key is None else shapes_key
        run_timed, line_to_op, shapes, records = path.timed_twin(key)
        if records:  # the run fills in the shapes it records: a list of its own
            shapes = shapes.copy()  # type: ignore[union-attr]
    else:
        run_timed, line_to_op, shapes, _ = path.timed_twin(None)
    for o in observers:
        o.on_start(plan)
    stamps = [0.0] * (len(plan.ops) + 1)  # perf_counter(): the start, each kernel's end
    error: BaseException | None = None
    try:
        return run_timed(feeds, stamps, time.perf_counter, shapes)
    except BaseException as e:
        error = e
        i = path.op_index(e.__traceback__, line_to_op)
        if i is None or not isinstance(e, Exception):
            raise
        raise run_error(plan, i, e) from e
    finally:
        timings = RunTimings.from_stamps(plan, stamps, shapes, threading.get_ident())
        for hook in hooks:
            hook(plan, timings)
        for o in observers:
            o.on_finish(plan, error)


# ----------------------------------------------------------------- threaded
def run_threaded(
    plan: Plan,
    feeds: Sequence[Any],
    observers: Sequence[Observer] = (),
    deadline: float | None = None,
    max_in_flight: int = 0,
    path: RunPath | None = None,
) -> list[Any]:
    """Run the plan with a ready queue and the shared pool for heavy kernels.

    With ``path``, a plan with heavy ops remembers whether this run kept
    every kernel inline (then the next run with feeds of these shapes may
    take the straight line).
    """
    for o in observers:
        o.on_start(plan)
    hooks = hooks_of(observers, "on_timings")
    timer = KernelTimer(plan, hooks, any(o.keeps_shapes for o in observers)) if hooks else None
    run = _Threaded(plan, feeds, observers, deadline, max_in_flight or pool()._max_workers)
    if timer is not None:
        run.fns = timer.fns
    elif path is not None and path.buffers is not None:  # the memory plan (untimed runs only)
        run.buffers = path.buffers
    error: BaseException | None = None
    try:
        with parking():
            run.loop()
    except BaseException as e:
        error = e
        run.drain()
        run.sched.vals[:] = [None] * len(run.sched.vals)  # the run is over: its buffers go now
        raise
    else:
        if plan.any_heavy and path is not None:
            path.ran_threaded(feed_shapes(feeds), inline=not run.futures)
    finally:
        if timer is not None:
            timer.finish()
        for o in observers:
            o.on_finish(plan, error)
    return run.sched.fetched()


class _Threaded:
    """One threaded run: the Schedule, the pool kernels in flight.  Only the calling thread
    touches it."""

    def __init__(
        self,
        plan: Plan,
        feeds: Sequence[Any],
        observers: Sequence[Observer],
        deadline: float | None,
        max_in_flight: int,
    ) -> None:
        self.plan = plan
        self.sched = Schedule(plan, feeds)
        self.fns = plan.fns  # per op: what to call (a timer's wrappers when timed)
        self.done: queue.SimpleQueue[tuple[int, Any, BaseException | None]] = (
            queue.SimpleQueue()
        )  # (op, result, error) from pool threads
        self.in_flight = 0  # pool kernels not yet collected
        self.futures: list[Future] = []  # every pool kernel of this run; drain waits on these
        self.parked: dict[int, Pending] = {}  # op -> its wait (counted in in_flight)
        self.before_hooks = hooks_of(observers, "before_op")  # called as each op starts
        self.after_hooks = hooks_of(observers, "after_op")  # given each op's outputs
        self.wait_hooks = hooks_of(observers, "on_wait")  # told when an op parks
        self.wait_end_hooks = hooks_of(observers, "on_wait_end")  # told when its wait ends
        self.deadline = deadline
        self.max_in_flight = max_in_flight
        # per op: the input whose dead buffer its output may take (flowbook.runtime.memory_plan)
        self.buffers: tuple[int, ...] | None = None

    def loop(self) -> None:
        plan, sched, before, fns = self.plan, self.sched, self.before_hooks, self.fns
        inputs, heavy, vals, ready = plan.inputs, plan.heavy, sched.vals, sched.ready
        buffers = self.buffers
        while sched.remaining:
            if self.deadline is not None and time.monotonic() > self.deadline:
                raise errors.DeadlineExceededError(
                    None, None, "Timed out waiting for the run to finish"
                )
            if not ready:
                self._collect(block=True)
                continue
            i = ready.popleft()
            args = [vals[s] for s in inputs[i]]
            if not heavy[i] and ready and self.in_flight < self.max_in_flight and large(args):
                # a light op with work to overlap: a heavy op ready behind it goes first, to the pool
                j = next((j for j in ready if heavy[j]), None)
                if j is not None:
                    ready.remove(j)
                    ready.appendleft(i)
                    i, args = j, [vals[s] for s in inputs[j]]
            for hook in before:
                hook(plan.ops[i])
            fn = fns[i] if buffers is None or buffers[i] < 0 else self._into_buffer(i, args)
            if heavy[i] and ready and self.in_flight < self.max_in_flight and large(args):
                self.futures.append(pool().submit(self._work, i, fn, args))
                self.in_flight += 1
                continue
            try:
                result = fn(*args)
            except Exception as e:
                args = result = None  # the traceback keeps this frame: not its buffers
                raise run_error(plan, i, e) from e
            del args
            if type(result) is Pending:  # it waits: its callback posts the result to done
                self.parked[i] = result
                self.in_flight += 1
                for hook in self.wait_hooks:
                    hook(plan.ops[i], result.what)
                result.then(lambda r, e, i=i: self.done.put((i, r, e)))
                continue
            self._finish(i, result)
            result = fn = None  # a buffer the next op may take is held by the values alone
            if self.in_flight:
                self._collect(block=False)

    def _into_buffer(self, i: int, args: list[Any]) -> Callable[..., Any]:
        """Op i's kernel writing into the buffer of its input ``buffers[i]``, if no other read of
        it is to come and only the run holds it (``flowbook.runtime.memory_plan``), else as is."""
        k = self.buffers[i]  # type: ignore[index]
        s = self.plan.inputs[i][k]
        if self.sched.uses[s] != 1:  # type: ignore[index]
            return self.fns[i]
        value = args[k]  # held here, in the values and in args (once per read of it)
        if not owned(value, 2 + self.plan.inputs[i].count(s)):
            return self.fns[i]
        return partial(self.fns[i], out=value)

    def _work(self, i: int, fn: Callable[..., Any], args: list[Any]) -> None:
        try:
            self.done.put((i, fn(*args), None))
        except BaseException as e:
            self.done.put((i, None, e))

    def _collect(self, block: bool) -> None:
        while self.in_flight:
            try:
                i, result, exc = (
                    self.done.get(timeout=WAIT_SLICE_S) if block else self.done.get_nowait()
                )
            except queue.Empty:
                if block and self.deadline is not None and time.monotonic() > self.deadline:
                    raise deadline_error(self.plan, self.parked) from None
                if block:
                    continue
                return
            self.in_flight -= 1
            if self.parked.pop(i, None) is not None and self.wait_end_hooks:
                for hook in self.wait_end_hooks:
                    hook(self.plan.ops[i])
            if exc is not None:
                raise run_error(self.plan, i, exc) from exc
            self._finish(i, result)
            block = False

    def _finish(self, i: int, result: Any) -> None:
        if self.after_hooks:
            produced = as_outputs(self.plan.outputs[i], result)
            for hook in self.after_hooks:
                hook(self.plan.ops[i], produced)
        self.sched.finish(i, result)

    def drain(self) -> None:
        """After an error: wait for this run's pool kernels (each at most one kernel's time).

        Waits on the futures themselves, not the in-flight count, which an
        interrupt may have caught half-updated; gives up after DRAIN_LIMIT_S
        so a kernel that never returns cannot hang the notebook.
        """
        self.sched.ready.clear()
        for p in list(self.parked.values()):
            p.cancel()
        drain(self.futures)
