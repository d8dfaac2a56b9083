"""The front door of runs with branches and loops: ``run_frames``.

``flowbook.runtime.executor._choose`` sends a plan with control flow here.  It
works out the plan's :class:`~flowbook.runtime.frame_layout.Layout` once (kept
in the session's ``RunPath``), decides who watches what (per-op hooks, the
iteration hooks, timings, the run counts of ``on_control_flow``) and from
that whether innermost loops run compiled (``flowbook.runtime.codegen.compiled_loops``: only when
nobody watches op by op) and whether heavy kernels may go to the thread pool
(``flowbook.runtime.pool``: not when kernels are timed, so each logged kernel
pairs with the iteration it ran in), then runs a
:class:`~flowbook.runtime.frames.FrameRun` and hands the observers what it saw.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     i = fb.while_loop(lambda i: i < 10, lambda i: i + 3, [fb.constant(0)])
    ...     int(s.run(i))
    12
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from flowbook.runtime.codegen.compile import RunPath
from flowbook.runtime.codegen.compiled_loops import compile_loops
from flowbook.runtime.frame_layout import Layout
from flowbook.runtime.frames import FrameRun
from flowbook.runtime.observers import Observer, hooks_of
from flowbook.runtime.plan import Plan
from flowbook.runtime.pool import pool
from flowbook.runtime.timings import KernelTimer
from flowbook.state.pending import parking


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
    """Run a plan with branches or loops on the frame scheduler (``flowbook.runtime.frames``).

    ``order`` "lifo" runs the newest ready op first: the serial reference the
    differential tests hold the FIFO run to.  ``compiled`` False keeps every
    loop on the scheduler (else innermost loops run compiled when nobody
    watches op by op: ``flowbook.runtime.codegen.compiled_loops``).  ``max_in_flight`` bounds the
    heavy kernels on the pool at once (0: the pool's size; -1: none, every
    kernel inline).  Kernels that must wait (a queue's dequeue) are parked,
    as on the threaded scheduler (``flowbook.state.pending``).
    """
    if path.layout is None:
        path.layout = Layout(plan)
    for o in observers:
        o.on_start(plan)
    hooks = hooks_of(observers, "on_timings")
    timer = KernelTimer(plan, hooks, any(o.keeps_shapes for o in observers)) if hooks else None
    counted = hooks_of(observers, "on_control_flow")
    # timed kernels stay inline: each logged kernel pairs with the iteration it ran in
    threads = 0 if timer is not None or max_in_flight < 0 else max_in_flight or pool()._max_workers
    before, after = hooks_of(observers, "before_op"), hooks_of(observers, "after_op")
    iteration = hooks_of(observers, "on_iteration")
    # nobody watches op by op: innermost loops run as compiled Python loops
    loops = None
    if compiled and not (before or after or iteration or timer):
        if path.layout.loops is None:
            path.layout.loops = compile_loops(plan)
        loops = path.layout.loops
    run = FrameRun(
        plan,
        path.layout,
        feeds,
        timer.fns if timer is not None else None,
        order,
        before,
        after,
        deadline,
        iteration,
        bool(counted),
        timer is not None,
        loops,
        hooks_of(observers, "on_loop"),
        threads,
        (hooks_of(observers, "on_wait"), hooks_of(observers, "on_wait_end")),
    )
    error: BaseException | None = None
    try:
        with parking():
            return run.run()
    except BaseException as e:
        error = e
        run.stop()  # the run is over: its waits withdrawn, its buffers freed
        raise
    finally:
        if counted:
            assert run.runs is not None
            iterations = run.iterations()
            for hook in counted:
                hook(plan, run.runs, iterations)
        if timer is not None:
            assert run.tags is not None
            wheres: dict[tuple[Any, int], tuple[tuple[str, int], ...]] = {}
            timer.where = [
                wheres[t] if t in wheres else wheres.setdefault(t, run.where(t)) for t in run.tags
            ]
            timer.finish()
        for o in observers:
            o.on_finish(plan, error)
