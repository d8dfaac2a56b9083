"""Executors: run a Plan's ops over numpy (or CuPy) kernels.

Three ways to run the same plan, which must agree value for value:

- ``run_threaded``, the scheduler ``Session.run`` uses whenever the plan has
  heavy ops, observers are attached or a deadline is set.  State, all owned
  by the calling thread:

  - ``pending[i]``: ops op i still waits for; 0 means ready
  - ``ready``: ops whose inputs are all produced, FIFO
  - ``vals[s]``: the value in slot s; ``uses[s]``: reads still to come (0 frees it)
  - ``in_flight``: ops submitted to the pool whose results have not come back

  The loop pops a ready op and runs it inline on the calling thread, unless
  it is heavy (a large matmul, which releases the GIL), its inputs are
  actually large, *and* other ready work is waiting: only then is it worth a
  pool thread, so a chain of big matmuls
  runs inline and two independent ones run side by side.  Pool results come
  back through a queue read with a timeout, so the wait stays interruptible
  and bounded.  The first error (or a KeyboardInterrupt, or the deadline)
  stops scheduling, waits for the in-flight kernels (at most one kernel's
  time) and raises; the pool is shared by all sessions and bounded, so no
  thread outlives its use or piles up across runs.
- the plan's compiled straight-line function (see ``flowbook.plan``): the
  same inline sequence without the bookkeeping, for plans with no heavy op
  and plans whose heavy ops all ran inline on their last scheduled run with
  feeds of the same shapes (the session decides), when nobody watches op by
  op; ``run_compiled_timed`` is its timed twin, for observers that only want
  the run's timings (one clock read per op).
- ``run_serial``: the reference, ops one by one in the plan's static order.

**Devices.**  A plan's ops may run on a GPU (``plan.devices``; copies
between devices are ops of the plan, see ``flowbook.placement``).  The loops
do not care: a GPU kernel is a call that launches work and returns.  A timed
run (someone wants ``on_timings``) whose plan has ops off the CPU also asks
each such device for a ``timer()`` and runs those kernels through it (CUDA
events before and after); after the run the device times come back in
``RunTimings.device_ns``, on the same clock as the host times.  When a
kernel runs out of memory the run's values are dropped at once (the error's
traceback keeps no buffers alive), the devices release cached memory, and
the error is a ``ResourceExhaustedError`` naming the op and the device.

Observers (``flowbook.observers``: timings, the live widget, the NaN guard)
are called on the calling thread.  Only the hooks an observer overrides are
called, kernels are timed only when someone asks, and with no observer the
loops call nothing.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     float(s.run(fb.constant(2.0) * 3.0))
    6.0
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from functools import partial
from typing import Any

from flowbook import errors
from flowbook.observers import Observer, _hooks
from flowbook.plan import DISCARD, Plan, op_index_from_traceback, timed_twin
from flowbook.run_shapes import dynamic_shapes
from flowbook.tensor import Operation
from flowbook.timings import KernelTiming, RunTimings, producers

WAIT_SLICE_S = 0.05  # longest single block on the completion queue: keeps waits interruptible
DRAIN_LIMIT_S = 600.0  # after an error, the longest wait for the run's pool kernels to finish
# A heavy op goes to the pool only when its inputs hold at least this many elements.
POOL_MIN_ELEMENTS = 1 << 15


_new_timing = partial(
    tuple.__new__, KernelTiming
)  # KernelTiming from a tuple, without __new__'s cost


# --------------------------------------------------------------------- pool
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def pool() -> ThreadPoolExecutor:
    """The process-wide bounded pool heavy kernels run on (created on first use)."""
    global _pool
    if _pool is None:
        with _pool_lock:
            if _pool is None:
                _pool = ThreadPoolExecutor(
                    max_workers=max(2, os.cpu_count() or 2), thread_name_prefix="flowbook"
                )
    return _pool


# ------------------------------------------------------------------- errors
def op_error(op: Operation, exc: BaseException, device: Any = None) -> errors.OpError:
    """``exc`` raised by ``op``'s kernel, as an OpError naming the op, type and site.

    An OpError keeps its class; running out of memory (a MemoryError, or what
    ``device`` calls out of memory) becomes ResourceExhaustedError naming the
    device; anything else becomes InvalidArgumentError with the original type named.
    """
    if isinstance(exc, errors.OpError):
        if exc.op is not None and exc.op is not op:
            return exc
        cls, message = type(exc), exc.message
    elif isinstance(exc, MemoryError) or (device is not None and device.is_out_of_memory(exc)):
        cls = errors.ResourceExhaustedError
        if device is None or device.device_type == "CPU":
            message = f"out of memory ({exc})"
        else:
            message = (
                f"OOM when running on {device.full_name}: {exc} The run's buffers on the "
                "device were freed; a smaller batch may fit."
            )
    else:
        cls, message = errors.InvalidArgumentError, f"{type(exc).__name__}: {exc}"
    return cls(None, op, f"{op.describe()}: {message}")


def _run_error(plan: Plan, i: int, exc: BaseException) -> errors.OpError:
    """Op ``i``'s error; after running out of memory, the run's buffers are let go first."""
    device = plan.devices[i] if plan.devices else None
    error = op_error(plan.ops[i], exc, device)
    if isinstance(error, errors.ResourceExhaustedError):
        _release(plan, exc)
    return error


def _release(plan: Plan, exc: BaseException) -> None:
    """Drop what the failed run's finished frames hold; hand cached device memory back."""
    traceback.clear_frames(exc.__traceback__)  # the kernels' frames, the compiled run's
    for d in set(plan.devices):
        d.release_memory()


def _store(vals: list[Any], outs: tuple[int, ...], result: Any) -> None:
    if len(outs) == 1:
        vals[outs[0]] = result
    elif outs:
        for s, v in zip(outs, result):
            vals[s] = v


def _as_outputs(outs: tuple[int, ...], result: Any) -> Sequence[Any]:
    return (result,) if len(outs) == 1 else (tuple(result) if outs else ())


# ------------------------------------------------------------------- serial
def run_serial(plan: Plan, feeds: Sequence[Any]) -> list[Any]:
    """Run the plan's ops one by one in its static order (the reference executor)."""
    vals: list[Any] = [None] * plan.n_slots
    for s, v in zip(plan.feed_slots, feeds):
        vals[s] = v
    for i, fn in enumerate(plan.fns):
        try:
            result = fn(*[vals[s] for s in plan.inputs[i]])
        except Exception as e:
            vals.clear()  # the run is over: its buffers go now, not with the traceback
            result = None
            raise _run_error(plan, i, e) from e
        _store(vals, plan.outputs[i], result)
        for s in plan.frees[i]:
            vals[s] = None
        vals[DISCARD] = None
    return [None if s is None else vals[s] for s in plan.fetch_slots]


def run_compiled(plan: Plan, feeds: Sequence[Any]) -> list[Any]:
    """Run the plan's compiled straight-line function; errors name their op."""
    try:
        return plan.compiled(feeds)  # type: ignore[misc]
    except Exception as e:
        i = op_index_from_traceback(plan, e.__traceback__)
        if i is None:
            raise
        raise _run_error(plan, i, e) from e


def feed_shapes(feeds: Sequence[Any]) -> tuple[Any, ...]:
    """The shapes of a run's fed values (None for a value without one), in feed order."""
    return tuple(getattr(v, "shape", None) for v in feeds)


def run_compiled_timed(
    plan: Plan,
    feeds: Sequence[Any],
    observers: Sequence[Observer],
    hooks: Sequence[Callable[..., Any]],
    shapes_key: tuple[Any, ...] | None = None,
) -> list[Any]:
    """Run the plan's straight line with each kernel timed (``plan.timed_twin``).

    For plans whose untimed runs take the compiled path (no heavy op, all on
    the CPU) and observers that only want ``on_timings`` (``hooks``, from
    ``observers.timings_hooks``): the trace shows the run as it runs
    untraced, on the calling thread in the static order, and costs one clock
    read and its store per op.  When an observer ``keeps_shapes``, the run stores the
    output shapes of the ops whose shapes neither the graph nor the fed
    shapes (``shapes_key``, default: read from ``feeds``) determine.
    """
    # the twin first: compiling it (once per feed signature) is not part of the run observed
    keep = False
    for o in observers:
        keep = keep or o.keeps_shapes
    if keep:
        key = feed_shapes(feeds) if shapes_key is None else shapes_key
        run_timed, line_to_op, shapes, records = timed_twin(plan, key)
        if records:  # the run fills in the shapes it records: a list of its own
            shapes = shapes.copy()  # type: ignore[union-attr]
    else:
        run_timed, line_to_op, shapes, _ = timed_twin(plan, None)
    for o in observers:
        o.on_start(plan)
    # perf_counter() seconds: the run's start, then each kernel's end (0: did not run)
    stamps = [0.0] * (len(plan.ops) + 1)
    error: BaseException | None = None
    try:
        return run_timed(feeds, stamps, time.perf_counter, shapes)
    except BaseException as e:
        error = e
        i = op_index_from_traceback(plan, e.__traceback__, line_to_op)
        if i is None or not isinstance(e, Exception):
            raise
        raise _run_error(plan, i, e) from e
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
) -> list[Any]:
    """Run the plan with a ready queue and the shared pool for heavy kernels.

    ``deadline`` is a ``time.monotonic()`` value (DeadlineExceededError past
    it); ``max_in_flight`` bounds concurrent pool kernels (0: the pool's size).
    """
    for o in observers:
        o.on_start(plan)
    run = _Run(plan, feeds, observers, deadline, max_in_flight or pool()._max_workers)
    error: BaseException | None = None
    try:
        run.loop()
    except BaseException as e:
        error = e
        run.drain()
        run.vals[:] = [None] * len(run.vals)  # the run is over: its buffers go now
        raise
    else:
        if plan.any_heavy:  # every kernel inline: the next such run may take the straight line
            plan.inline_feeds = None if run.futures else feed_shapes(feeds)
    finally:
        if run.timings_hooks:
            timings = run.timings()
            for hook in run.timings_hooks:
                hook(plan, timings)
        for o in observers:
            o.on_finish(plan, error)
    return [None if s is None else run.vals[s] for s in plan.fetch_slots]


def _large(args: list[Any]) -> bool:
    """Whether a heavy op's inputs are big enough to be worth a pool thread's round trip.

    Static shapes often leave the batch unknown, so the plan marks such ops
    heavy; this decides with the actual arrays.
    """
    return sum(getattr(a, "size", 0) for a in args) >= POOL_MIN_ELEMENTS


def _dtype_shape(value: Any) -> tuple[Any, Any]:
    """(dtype, shape) of an output; (None, None) for one that is not an array."""
    try:
        return value.dtype, value.shape
    except AttributeError:
        return None, None


class _Run:
    """The state of one threaded run.  Only the calling thread touches it."""

    def __init__(
        self,
        plan: Plan,
        feeds: Sequence[Any],
        observers: Sequence[Observer],
        deadline: float | None,
        max_in_flight: int,
    ) -> None:
        self.plan = plan
        self.vals: list[Any] = [None] * plan.n_slots  # slot -> value
        for s, v in zip(plan.feed_slots, feeds):
            self.vals[s] = v
        self.pending = list(plan.pending)  # op -> ops it still waits for
        self.uses = list(plan.uses)  # slot -> reads still to come; 0 frees the value
        self.ready: deque[int] = deque(plan.ready)  # ops ready to run
        # (op, result, error, timing) from pool threads
        self.done: queue.SimpleQueue[tuple[int, Any, BaseException | None, Any]] = (
            queue.SimpleQueue()
        )
        self.in_flight = 0  # pool kernels not yet collected
        self.futures: list[Future] = []  # every pool kernel of this run; drain waits on these
        self.remaining = len(plan.ops)  # ops not yet finished
        self.before_hooks = _hooks(observers, "before_op")  # called as each op starts
        self.kernel_hooks = _hooks(observers, "on_kernel")  # given each kernel's timing
        self.timings_hooks = _hooks(observers, "on_timings")  # given all timings at the end
        self.after_hooks = _hooks(observers, "after_op")  # given each op's outputs
        self.timed = bool(self.kernel_hooks or self.timings_hooks)  # whether kernels are timed
        # whether timed ops' output dtypes and shapes are recorded for on_timings
        self.keep = bool(self.timings_hooks) and any(o.keeps_shapes for o in observers)
        if self.timed:  # see RunTimings
            self.t0 = time.perf_counter_ns()
            self.main = threading.get_ident()
            self.log: list[tuple[int, int, int, int]] = []  # (op, start, end, thread)
            self.shapes: list[Any] | None = [None] * len(plan.ops) if self.keep else None
            # per op: whether its output shapes must be recorded (some dim unknown statically)
            self.dynamic = dynamic_shapes(plan) if self.keep else None
            if self.kernel_hooks:  # on_kernel needs each op's scheduled time at once
                self.ends: dict[int, int] = {}
        else:
            self.dynamic = None
        # a timed run's kernels off the CPU run through their device's timer (CUDA events)
        self.stamps = _DeviceStamps(plan) if self.timed and plan.off_host else None
        self.deadline = deadline
        self.max_in_flight = max_in_flight

    def loop(self) -> None:
        plan, ready, before, timed = self.plan, self.ready, self.before_hooks, self.timed
        stamps, perf = self.stamps, time.perf_counter_ns
        log, main = (self.log.append, self.main) if timed else (None, 0)
        keep = self.dynamic if timed else None  # per op: record its output shapes?
        on_kernel = timed and bool(self.kernel_hooks)
        fns, inputs, heavy, vals = plan.fns, plan.inputs, plan.heavy, self.vals
        while self.remaining:
            if self.deadline is not None and time.monotonic() > self.deadline:
                raise errors.DeadlineExceededError(
                    None, None, "Timed out waiting for the run to finish"
                )
            if not ready:
                self._collect(block=True)
                continue
            i = ready.popleft()
            args = [vals[s] for s in inputs[i]]
            for hook in before:
                hook(plan.ops[i])
            if heavy[i] and ready and self.in_flight < self.max_in_flight and _large(args):
                self.futures.append(pool().submit(self._work, i, fns[i], args))
                self.in_flight += 1
                continue
            try:
                if timed:
                    start = perf()
                    if stamps is None:
                        result = fns[i](*args)
                    else:
                        result = stamps.call(i, fns[i], args)
                    log((i, start, perf(), main))  # type: ignore[misc]
                    if keep is not None and keep[i]:
                        self._keep_shapes(i, result)
                    if on_kernel:
                        self._on_kernel(i)
                else:
                    result = fns[i](*args)
            except Exception as e:
                args = result = None  # the traceback keeps this frame: not its buffers
                raise _run_error(plan, i, e) from e
            del args
            self._finish(i, result)
            if self.in_flight:
                self._collect(block=False)

    def _work(self, i: int, fn: Callable[..., Any], args: list[Any]) -> None:
        start = time.perf_counter_ns()
        try:
            result = fn(*args)
        except BaseException as e:
            self.done.put((i, None, e, None))
            return
        self.done.put((i, result, None, (start, time.perf_counter_ns(), threading.get_ident())))

    def _collect(self, block: bool) -> None:
        while self.in_flight:
            try:
                i, result, exc, timing = (
                    self.done.get(timeout=WAIT_SLICE_S) if block else self.done.get_nowait()
                )
            except queue.Empty:
                if block and self.deadline is not None and time.monotonic() > self.deadline:
                    raise errors.DeadlineExceededError(
                        None, None, "Timed out waiting for a kernel"
                    ) from None
                if block:
                    continue
                return
            self.in_flight -= 1
            if exc is not None:
                raise _run_error(self.plan, i, exc) from exc
            if self.timed:
                self.log.append((i, *timing))
                if self.dynamic is not None and self.dynamic[i]:
                    self._keep_shapes(i, result)
                if self.kernel_hooks:
                    self._on_kernel(i)
            self._finish(i, result)
            block = False

    def _finish(self, i: int, result: Any) -> None:
        plan, vals = self.plan, self.vals
        outs = plan.outputs[i]
        _store(vals, outs, result)
        vals[DISCARD] = None
        if self.after_hooks:
            produced = _as_outputs(outs, result)
            for hook in self.after_hooks:
                hook(plan.ops[i], produced)
        uses = self.uses
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

    def _keep_shapes(self, i: int, result: Any) -> None:
        """Record op i's output dtypes and shapes (not the arrays: they are freed after use)."""
        self.shapes[i] = (  # type: ignore[index]
            _dtype_shape(result)
            if len(self.plan.outputs[i]) == 1
            else [_dtype_shape(o) for o in result or ()]
        )

    def _on_kernel(self, i: int) -> None:
        """Call the on_kernel hooks with op i's timing (the log's last entry)."""
        _, start, end, thread = self.log[-1]
        self.ends[i] = end
        ends = self.ends
        scheduled = max((ends[p] for p in producers(self.plan)[i]), default=self.t0)
        timing = _new_timing((scheduled, start, end, thread))
        for hook in self.kernel_hooks:
            hook(self.plan.ops[i], timing)

    def timings(self) -> RunTimings:
        """What the run timed, for ``on_timings``."""
        device_ns = self.stamps.finish() if self.stamps is not None else None
        return RunTimings.from_log(self.plan, self.log, self.t0, self.shapes, device_ns)

    def drain(self) -> None:
        """After an error: wait for this run's pool kernels (each at most one kernel's time).

        Waits on the futures themselves, not the in-flight count, which an
        interrupt may have caught half-updated; gives up after DRAIN_LIMIT_S
        so a kernel that never returns cannot hang the notebook.
        """
        self.ready.clear()
        give_up = time.monotonic() + DRAIN_LIMIT_S
        pending = [f for f in self.futures if not f.done()]
        while pending and time.monotonic() < give_up:
            # a second Ctrl-C while draining still lets the kernels finish
            with contextlib.suppress(KeyboardInterrupt):
                wait(pending, timeout=WAIT_SLICE_S)
            pending = [f for f in pending if not f.done()]


class _DeviceStamps:
    """The device timers of one timed run: op i's kernel runs through its device's timer."""

    def __init__(self, plan: Plan) -> None:
        timers = {d: d.timer() for d in set(plan.devices)}  # device -> its timer, None on the CPU
        self.timers = [t for t in timers.values() if t is not None]
        self.of = [timers[d] for d in plan.devices]  # per op: its device's timer, or None

    def call(self, i: int, fn: Callable[..., Any], args: list[Any]) -> Any:
        timer = self.of[i]
        return fn(*args) if timer is None else timer.call(i, fn, args)

    def finish(self) -> dict[int, tuple[int, int]] | None:
        """Every device time of the run (waits for the devices); None if they cannot say."""
        out: dict[int, tuple[int, int]] = {}
        try:
            for t in self.timers:
                out.update(t.finish())
        except Exception:  # a device left unusable by the run's error: no device lane
            return None
        return out
