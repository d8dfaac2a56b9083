"""Run observers: who watches a run, and which of their hooks the executor calls.

An observer (timings, the live widget, the NaN guard, the stepper's helpers)
subclasses :class:`Observer` and overrides the hooks it needs: ``on_start``,
``before_op``, ``after_op``, ``on_timings`` (all of the run's kernel timings
at once, as flat lists), for runs with branches and loops ``on_iteration``
(the loop iteration the next ops run in), ``on_loop`` (a loop starts: a
live count of its iterations) and ``on_control_flow`` (how many
times each op ran, how many iterations each loop did), for runs with ops that may wait (queues)
``on_wait`` and ``on_wait_end`` (an op parks, and its wait ends: called only
then, never per element), and ``on_finish``, all called on the calling thread.  Which hooks a class overrides is looked up once per class
(``_overridden``); the executor calls only those, so an observed run stays
close to an unobserved one, and an observer that wants nothing per op
(``timings_hooks``) leaves a run on its compiled straight line
(``flowbook.runtime.executor.run_compiled_timed``).

**Observers from options.**  ``RunOptions(trace_level=FULL_TRACE)``,
``RunOptions(check_numerics=True)`` and ``ConfigProto(check_numerics=True)``
ask for observers that live above the session (``flowbook.profiling.tracing``,
``flowbook.debug``).  Those modules register a factory here
(``observer_factory``, the one late-bound hook of the run path) and the
session asks ``observers_for(options, config, run_metadata)``; it imports
neither of them.

    >>> class Count(Observer):
    ...     def __init__(self): self.n = 0
    ...     def after_op(self, op, outputs): self.n += 1
    >>> _overridden(Count)
    frozenset({'after_op'})
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flowbook.framework.tensor import Operation
    from flowbook.runtime.plan import Plan
    from flowbook.runtime.timings import RunTimings


class Observer:
    """Base class for run observers: override the hooks you need.

    >>> class Count(Observer):
    ...     def __init__(self): self.n = 0
    ...     def after_op(self, op, outputs): self.n += 1
    """

    keeps_shapes = False  # True: on_timings gets each op's output dtypes and shapes too
    # True: a run it watches may run the optimised plan (flowbook.runtime.optimize.optimizer), whose
    # ops are a subset of the written ones; False: it watches the plan as written
    takes_optimized = False

    def for_run(self, plan: Plan) -> Observer | None:
        """The observer that watches this run of ``plan`` op by op, or None to watch it whole.

        None leaves the run on its fast path (the compiled straight line, no
        per-op hooks): only this observer's ``on_start`` and ``on_finish`` are
        called.  An observer that decides per run (the live widget times a
        run only where timing costs little) returns a per-run helper here.
        """
        return self

    def on_start(self, plan: Plan) -> None:
        """A run of ``plan`` starts."""

    def before_op(self, op: Operation) -> None:
        """``op``'s inputs are ready and its kernel is about to run."""

    def on_timings(self, plan: Plan, timings: RunTimings) -> None:
        """All kernel timings of the run, at its end (before ``on_finish``)."""

    def after_op(self, op: Operation, outputs: Sequence[Any]) -> None:
        """``op``'s kernel returned ``outputs`` (one entry per output)."""

    def on_iteration(self, where: tuple[tuple[str, int], ...]) -> None:
        """The ops that follow run in loop iterations ``where`` (runs with loops only).

        ``where`` lists ``(frame_name, iteration)`` from the outermost loop in;
        ``()`` is the top level.  The scheduler (frame rule) calls it when the next op
        runs in a different iteration than the op before it, before that op's
        ``before_op``.
        """

    def on_loop(self, name: str, progress: Callable[[], int]) -> None:
        """A loop frame ``name`` starts (once per instance: per outer iteration when nested).

        ``progress()`` is how many times its body has run so far: cheap, never
        blocking, and safe to call from another thread (a display reads it at
        its refresh rate).  Unlike ``on_iteration``, watching this leaves
        innermost loops compiled (``flowbook.runtime.codegen.compiled_loops``).
        """

    def on_control_flow(self, plan: Plan, runs: list[int], iterations: dict[str, int]) -> None:
        """How a run with branches or loops went, at its end (before ``on_finish``).

        ``runs[i]``: how many times op i of the plan ran (0: on an untaken
        branch, or dead); ``iterations``: per loop frame name, how many times
        its body ran, summed over its instances (a loop inside another loop
        starts once per outer iteration).
        """

    def on_wait(self, op: Operation, what: str) -> None:
        """``op`` waits for ``what`` ("an element of queue 'q'"): its kernel returned a Pending.

        The scheduler calls it when it parks the op (other ready ops
        go on); ``on_wait_end`` follows when the wait's result is collected.
        A run that stops while ops wait (an error, the deadline, an interrupt)
        withdraws them without ``on_wait_end``: ``on_finish`` ends every wait.
        """

    def on_wait_end(self, op: Operation) -> None:
        """``op``'s wait is over (its result or error arrived); its outputs come next."""

    def on_finish(self, plan: Plan, error: BaseException | None) -> None:
        """The run ended, with ``error`` if it failed."""


def hooks_of(observers: Sequence[Observer], name: str) -> list[Callable[..., Any]]:
    """The bound ``name`` hooks of the observers that override it (called after on_start).

    Observers usually override one or two hooks; calling only those keeps an
    observed run close to an unobserved one.  An instance attribute counts
    (an observer may bind a fast hook in ``on_start``).
    """
    return [
        getattr(o, name)
        for o in observers
        if name in _overridden(type(o)) or name in getattr(o, "__dict__", ())
    ]


_HOOKS = (
    "on_start",
    "before_op",
    "after_op",
    "on_timings",
    "on_iteration",
    "on_loop",
    "on_control_flow",
    "on_wait",
    "on_wait_end",
    "on_finish",
)


@cache
def _overridden(cls: type) -> frozenset[str]:
    """The hooks a class of observers overrides (looked up once per class)."""
    return frozenset(h for h in _HOOKS if getattr(cls, h, None) is not getattr(Observer, h))


def timings_hooks(observers: Sequence[Observer]) -> list[Callable[..., Any]] | None:
    """The observers' ``on_timings`` hooks, if they want a run's timings and nothing per op.

    Such a run of an all-cheap plan keeps its straight line: ``run_compiled_timed``.
    None when some observer wants a per-op hook, or nobody wants timings.
    """
    hooks = []
    for o in observers:
        per_op, timings = _wants(type(o))
        own = getattr(o, "__dict__", None)
        if own and not own.keys().isdisjoint(_HOOKS):  # hooks bound on the instance
            per_op = per_op or not own.keys().isdisjoint(_PER_OP)
            timings = timings or "on_timings" in own
        if per_op:
            return None
        if timings:
            hooks.append(o.on_timings)
    return hooks or None


_PER_OP = ("before_op", "after_op")


@cache
def _wants(cls: type) -> tuple[bool, bool]:
    """(whether a class of observers overrides a per-op hook, whether it overrides on_timings)."""
    hooks = _overridden(cls)
    return not hooks.isdisjoint(_PER_OP), "on_timings" in hooks


def split_for_run(
    observers: Sequence[Observer], plan: Plan
) -> tuple[list[Observer], list[Observer]]:
    """``(whole, per_run)``: who watches this run of ``plan`` whole, and who op by op.

    ``Observer.for_run`` decides: None puts the observer in ``whole`` (only
    its ``on_start``/``on_finish``), else what it returns watches the run.
    """
    whole: list[Observer] = []
    per_run: list[Observer] = []
    for o in observers:
        r = o.for_run(plan)
        if r is None:
            whole.append(o)
        else:
            per_run.append(r)
    return whole, per_run


# (options, config, run_metadata) -> the observer they ask for, or None
ObserverFactory = Callable[[Any, Any, Any], "Observer | None"]
_FACTORIES: list[ObserverFactory] = []  # filled by flowbook.profiling.tracing and flowbook.debug


def observer_factory(factory: ObserverFactory) -> ObserverFactory:
    """Register ``factory(options, config, run_metadata)``: an observer a run's options ask for.

    The modules that define such observers sit above the session; they
    register here when imported (``import flowbook`` imports them all).

    >>> from flowbook.runtime.config import ConfigProto, RunOptions
    >>> asked = observers_for(RunOptions(check_numerics=True), ConfigProto(), None)
    >>> [type(o).__name__ for o in asked]  # flowbook.debug registered the NaN guard's factory
    ['NanGuard']
    """
    _FACTORIES.append(factory)
    return factory


def observers_for(options: Any, config: Any, run_metadata: Any) -> list[Observer]:
    """The observers ``options`` (a RunOptions or None) and ``config`` ask for, in order."""
    out = []
    for factory in _FACTORIES:
        o = factory(options, config, run_metadata)
        if o is not None:
            out.append(o)
    return out
