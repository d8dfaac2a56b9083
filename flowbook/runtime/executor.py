"""The executor: one front door, ``execute``, that runs a Plan's ops over numpy (or CuPy) kernels.

``execute(plan, path, feeds, observers, deadline)`` chooses, in one place,
how a run goes (``_choose``); every path must give the same values:

- **the scheduler** (``flowbook.runtime.scheduler``): one ready-queue state
  machine with the propagation rule plugged in.  ``run_frames`` runs a plan
  with branches or loops under the frame rule (``flowbook.runtime.frames``);
  ``run_threaded`` a plain DAG under the flat rule, with the pool for heavy
  kernels: for a deadline, per-op observers, a timed run with ops off the CPU
  (device timers), heavy ops that may go to the pool, or ops that may wait
  (``plan.blocking``).  ``run_serial``, the reference the differential tests
  hold every other path to, is the same scheduler without a pool.
- **the straight line** (``run_compiled``): the plan's ops in its static
  order as one generated function (``flowbook.runtime.codegen.compile.RunPath``).  Taken when
  nothing asks for more: no deadline, no per-op observer, and either no op is
  heavy or the last threaded run with feeds of the same shapes kept every
  kernel inline.  Its first run goes through ``run_serial`` (a plan that runs
  once is not worth compiling).  Observers that want only the run's timings
  keep it: ``run_compiled_timed`` runs its timed twin (one clock read per op).
- **compiled loops** (``flowbook.runtime.codegen.compiled_loops``): inside a
  frame run nobody watches op by op, each innermost loop without a branch
  runs as one generated Python ``while``.

Every path first puts the plan's ``constants`` (values the optimiser folded,
``flowbook.runtime.optimize.optimizer``; none in a plan as built) in their slots.

**Observers** (``flowbook.runtime.observers``) are called on the calling thread, and
only the hooks they override: the scheduler holds each hook kind as a list,
empty when nobody watches.  It has no timing code: when an observer wants
timings, the run's kernels are ``flowbook.runtime.timings.KernelTimer``'s timed
wrappers (which also run off-CPU kernels through their device's timer; timed
kernels stay inline, so each logged kernel pairs with the iteration it ran in),
or the straight line's timed twin.  **Devices**: a GPU kernel is a call that
launches work and returns; the scheduler does not care.  When a kernel runs out of
memory the run's values are dropped at once, the devices release cached
memory, and the error is a ``ResourceExhaustedError`` naming the op.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     float(s.run(fb.constant(2.0) * 3.0))
    6.0
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from flowbook.runtime.codegen.compile import RunPath, feed_shapes
from flowbook.runtime.codegen.compiled_loops import compile_loops
from flowbook.runtime.frame_layout import Layout
from flowbook.runtime.frames import Frames
from flowbook.runtime.observers import Observer, hooks_of, split_for_run, timings_hooks
from flowbook.runtime.op_errors import run_error
from flowbook.runtime.plan import Plan
from flowbook.runtime.pool import pool
from flowbook.runtime.scheduler import Flat, InOrder, Scheduler
from flowbook.runtime.timings import KernelTimer, RunTimings
from flowbook.state.pending import parking

__all__ = ["Observer", "execute", "run_compiled", "run_frames", "run_serial", "run_threaded"]


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
    if plan.blocking:  # an op may wait: the scheduler parks it (the serial order cannot)
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


# ------------------------------------------------------------ the scheduler
def run_serial(plan: Plan, feeds: Sequence[Any]) -> list[Any]:
    """The serial reference: the scheduler with no pool, every kernel inline, in plan order."""
    return _drive(plan, Scheduler(plan, InOrder(plan, feeds)))


def run_threaded(
    plan: Plan,
    feeds: Sequence[Any],
    observers: Sequence[Observer] = (),
    deadline: float | None = None,
    max_in_flight: int = 0,
    path: RunPath | None = None,
) -> list[Any]:
    """Run a plain DAG on the scheduler, with the shared pool for heavy kernels.

    With ``path``, a plan with heavy ops remembers whether this run kept
    every kernel inline (then the next run with feeds of these shapes may
    take the straight line); untimed runs take its memory plan.
    """
    for o in observers:
        o.on_start(plan)
    timer = _timer(plan, observers)
    buffers = path.buffers if path is not None and timer is None else None
    sched = Scheduler(
        plan,
        Flat(plan, feeds),
        None if timer is None else timer.fns,
        max_in_flight or pool()._max_workers,
        deadline,
        *_per_op_hooks(observers),
        buffers=buffers,
    )
    out = _drive(plan, sched, observers, timer)
    if plan.any_heavy and path is not None:
        path.ran_threaded(feed_shapes(feeds), inline=not sched.futures)
    return out


def run_frames(
    plan: Plan,
    path: RunPath,
    feeds: Sequence[Any],
    observers: Sequence[Observer] = (),
    deadline: float | None = None,
    order: str = "fifo",
    compiled: bool = True,
    max_in_flight: int = 0,
) -> list[Any]:
    """Run a plan with branches or loops on the scheduler under the frame rule.

    ``order`` "lifo" runs the newest ready op first: another legal order the
    differential tests hold the FIFO run to.  ``compiled`` False keeps every
    loop on the scheduler (else innermost loops run compiled when nobody
    watches op by op).  ``max_in_flight`` bounds the heavy kernels on the pool
    at once (0: the pool's size; -1: none, every kernel inline).
    """
    if path.layout is None:
        path.layout = Layout(plan)
    for o in observers:
        o.on_start(plan)
    timer = _timer(plan, observers)
    counted = hooks_of(observers, "on_control_flow")
    # timed kernels stay inline: each logged kernel pairs with the iteration it ran in
    threads = 0 if timer is not None or max_in_flight < 0 else max_in_flight or pool()._max_workers
    hooks = _per_op_hooks(observers)
    iteration = hooks_of(observers, "on_iteration")
    loops = None  # nobody watches op by op: innermost loops run as compiled Python loops
    if compiled and not (hooks[0] or hooks[1] or iteration or timer):
        if path.layout.loops is None:
            path.layout.loops = compile_loops(plan)
        loops = path.layout.loops
    rule = Frames(
        plan, path.layout, feeds, iteration, bool(counted), loops, hooks_of(observers, "on_loop")
    )
    fns = None if timer is None else timer.fns
    sched = Scheduler(
        plan, rule, fns, threads, deadline, *hooks, order == "lifo", timer is not None
    )

    def at_end() -> None:
        if counted:
            assert rule.runs is not None
            iterations = rule.iterations()
            for hook in counted:
                hook(plan, rule.runs, iterations)
        if timer is not None:
            assert sched.keys is not None
            wheres: dict[tuple[Any, int], tuple[tuple[str, int], ...]] = {}
            timer.where = [
                wheres[t] if t in wheres else wheres.setdefault(t, rule.where(t))
                for t in sched.keys
            ]

    return _drive(plan, sched, observers, timer, at_end)


def _timer(plan: Plan, observers: Sequence[Observer]) -> KernelTimer | None:
    """The kernel timer observers that want ``on_timings`` get (None when none does)."""
    hooks = hooks_of(observers, "on_timings")
    if not hooks:
        return None
    return KernelTimer(plan, hooks, any(o.keeps_shapes for o in observers))


def _per_op_hooks(observers: Sequence[Observer]) -> tuple[Any, Any, Any]:
    """The scheduler's hooks: before_op, after_op, (on_wait, on_wait_end)."""
    waits = (hooks_of(observers, "on_wait"), hooks_of(observers, "on_wait_end"))
    return hooks_of(observers, "before_op"), hooks_of(observers, "after_op"), waits


def _drive(
    plan: Plan,
    sched: Scheduler,
    observers: Sequence[Observer] = (),
    timer: KernelTimer | None = None,
    at_end: Callable[[], None] | None = None,
) -> list[Any]:
    """Run ``sched`` to the end; after an error or an interrupt, stop it (waits withdrawn,
    pool kernels drained, buffers dropped).  Then the observers hear how it went."""
    error: BaseException | None = None
    try:
        with parking():
            return sched.run()
    except BaseException as e:
        error = e
        sched.stop()
        raise
    finally:
        if at_end is not None:
            at_end()
        if timer is not None:
            timer.finish()
        for o in observers:
            o.on_finish(plan, error)


# ------------------------------------------------------------ straight line
def run_compiled(path: RunPath, feeds: Sequence[Any]) -> list[Any]:
    """Run the plan's compiled straight-line function; errors name their op."""
    try:
        return path.compiled(feeds)  # type: ignore[misc]
    except Exception as e:
        i = path.op_index(e.__traceback__)
        if i is None:
            raise
        tb = e.__traceback__
        raise run_error(path.plan, i, e, lambda: path.op_args(tb)) from e


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
        tb = e.__traceback__
        raise run_error(plan, i, e, lambda: path.op_args(tb)) from e
    finally:
        timings = RunTimings.from_stamps(plan, stamps, shapes, threading.get_ident())
        for hook in hooks:
            hook(plan, timings)
        for o in observers:
            o.on_finish(plan, error)
