"""The scheduler: one ready-queue state machine, with the propagation rule plugged in.

Every interpreted run of a plan goes through :class:`Scheduler`, as every
TensorFlow step goes through its executor with a propagator plugged in:

- the **propagation rule** owns the ready queue and says what an op's result
  releases.  :class:`Flat` is the rule of a plain DAG (pending counts, values
  in slots freed at their last read); ``flowbook.runtime.frames.Frames`` is the
  rule of plans with branches and loops (values tagged with their frame and
  iteration, dead values passed on).  A rule has ``ready`` (a deque of its
  entries) and four methods: ``take(entry)`` gives ``(op, key, args)`` to run,
  or None when the rule passed the entry on itself (a dead op);
  ``finish(op, result, key)`` stores the result and releases the consumers;
  ``error(op, key, exc, args)`` is the error a user reads (judged on the op's inputs); ``fetched()`` the run's
  values; ``sched`` is set to the scheduler that runs it.  ``key`` is what tells two runs of one op apart (None on a DAG,
  the ``(frame, iteration)`` tag in a loop).  The frame rule also bounds a
  loop's kernels on the pool (``admits``/``returned``: ``parallel_iterations``).
- the **scheduler** owns everything else, written once: the loop that pops a
  ready entry and runs its kernel inline; the offload of heavy kernels to the
  process-wide pool (``flowbook.runtime.pool``), when their actual inputs are
  large and other ready work can overlap them, a heavy op waiting behind a
  light one going first; parking of a kernel that returned a
  ``flowbook.state.pending.Pending`` (a queue op that must wait) until its
  queue posts the result into the same completion queue as the pool; the
  deadline (read every op when one is set, and in every wait); interrupts and
  errors (``stop``: withdraw the waits, drain the pool kernels, drop the
  buffers); the observers' per-op hooks (``before_op``, ``after_op``,
  ``on_wait``, ``on_wait_end``), held as lists that are empty when nobody
  watches, so an unwatched run pays one falsy test per hook kind.
- **no pool** (``threads=0``) is the serial reference: the same loop, every
  kernel inline, as ``dask``'s ``get_sync`` is ``get_async`` with a
  synchronous executor; on a DAG in the plan's static order (:class:`InOrder`,
  the flat rule whose ready queue is the plan's order, the order of the
  straight line too), with loops in FIFO order (``lifo=True``: newest first,
  another legal order the differential tests hold to the same values).
- **stepping** (the Stepper, ``flowbook.debug.stepper``): ``call`` runs one
  entry's kernel and ``commit`` delivers its result, so a kernel error or an
  interrupt inside a kernel leaves the entry ready.

    >>> import numpy as np, flowbook as fb
    >>> from flowbook.runtime.plan import build_plan
    >>> with fb.Graph().as_default() as g:
    ...     y = fb.constant(1.0) + 2.0
    ...     plan = build_plan(g, [y], [], [], bind=lambda op: op._opdef.bound_kernel(np, op.attrs))
    >>> [float(v) for v in Scheduler(plan, Flat(plan, [])).run()]
    [3.0]
"""

from __future__ import annotations

import queue
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from functools import partial
from typing import Any

from flowbook.framework import errors
from flowbook.platform.waiting import WAIT_SLICE_S
from flowbook.runtime.memory_plan import owned
from flowbook.runtime.op_errors import deadline_error, run_error
from flowbook.runtime.plan import DISCARD, Plan, as_outputs
from flowbook.runtime.pool import drain, large, pool
from flowbook.state.pending import Pending

__all__ = ["WAIT_SLICE_S", "Flat", "InOrder", "Scheduler"]

Hooks = Sequence[Callable[..., Any]]


def timed_out() -> errors.DeadlineExceededError:
    """The error of a run past its deadline."""
    return errors.DeadlineExceededError(None, None, "Timed out waiting for the run to finish")


def store(vals: list[Any], outs: tuple[int, ...], result: Any) -> None:
    """Put a kernel's ``result`` into the output slots ``outs``."""
    if len(outs) == 1:
        vals[outs[0]] = result
    elif outs:
        for s, v in zip(outs, result):
            vals[s] = v


# ------------------------------------------------------------------ flat rule
class Flat:
    """The propagation rule of a plain DAG: pending counts, values in slots.

    ``keep_values`` (the Stepper) never frees a value, so every computed
    tensor stays inspectable.

    >>> import numpy as np, flowbook as fb
    >>> from flowbook.runtime.plan import build_plan
    >>> with fb.Graph().as_default() as g:
    ...     y = fb.constant(1.0) + 2.0
    ...     plan = build_plan(g, [y], [], [], bind=lambda op: op._opdef.bound_kernel(np, op.attrs))
    >>> flat = Flat(plan, [])
    >>> while flat.ready:
    ...     i = flat.ready.popleft(); flat.finish(i, plan.fns[i](*flat.args(i)))
    >>> float(flat.vals[plan.fetch_slots[0]]), flat.remaining
    (3.0, 0)
    """

    __slots__ = (
        "inputs",
        "outputs",
        "pending",
        "plan",
        "ready",
        "remaining",
        "sched",
        "uses",
        "vals",
    )

    def __init__(self, plan: Plan, feeds: Sequence[Any], keep_values: bool = False) -> None:
        self.plan = plan
        # the plan's per-op tables, held here: the loop reads them once per op
        self.inputs, self.outputs = plan.inputs, plan.outputs
        self.sched: Scheduler | None = None  # the Scheduler running this rule
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
        return [vals[s] for s in self.inputs[i]]

    def take(self, i: int) -> tuple[int, None, list[Any]]:
        """The ready op ``i`` to run: (op, key, its input values); ``args`` inline (hot path)."""
        vals = self.vals
        return i, None, [vals[s] for s in self.inputs[i]]

    def finish(self, i: int, result: Any, key: None = None) -> None:
        """Op ``i`` returned ``result``: store it, free dead values, release its consumers."""
        plan, vals = self.plan, self.vals
        store(vals, self.outputs[i], result)
        vals[DISCARD] = None
        uses = self.uses
        if uses is not None:
            for s in self.inputs[i]:
                uses[s] -= 1
                if not uses[s]:
                    vals[s] = None
        pending = self.pending
        for c in plan.consumers[i]:
            pending[c] -= 1
            if not pending[c]:
                self.ready.append(c)
        self.remaining -= 1

    def op(self, entry: int) -> int:
        """The op of a ready entry."""
        return entry

    def unready(self, entry: int) -> None:
        """A stepped entry ran out of turn: it leaves the queue when it reaches the front."""

    def admits(self, key: None) -> bool:
        """Whether one more kernel may go to the pool (no bound on a DAG)."""
        return True

    def returned(self, key: None) -> None:
        """A pool kernel came back."""

    def error(
        self, i: int, key: None, exc: BaseException, args: list[Any] | None = None
    ) -> Exception:
        """Op ``i``'s error as the user reads it, judged on its input values ``args``."""
        return run_error(self.plan, i, exc, args)

    def into_buffer(
        self, i: int, k: int, args: list[Any], fn: Callable[..., Any]
    ) -> Callable[..., Any]:
        """Op i's kernel writing into the buffer of its input ``k``, if no other read of it is
        to come and only the run holds it (``flowbook.runtime.memory_plan``), else as is."""
        s = self.plan.inputs[i][k]
        if self.uses is None or self.uses[s] != 1:
            return fn
        value = args[k]  # held here, in the values and in args (once per read of it)
        if not owned(value, 2 + self.plan.inputs[i].count(s)):
            return fn
        return partial(fn, out=value)

    def fetched(self) -> list[Any]:
        """The fetched values (None for op fetches), in fetch order."""
        return [None if s is None else self.vals[s] for s in self.plan.fetch_slots]

    def drop(self) -> None:
        """The run is over after an error: its buffers go now, not with the traceback."""
        self.ready.clear()
        self.vals[:] = [None] * len(self.vals)


class InOrder(Flat):
    """The flat rule with the plan's static order for the ready order: the serial reference.

    The order is topological, so every op finds its inputs produced and
    nothing is released; values are freed at their last read in that order
    (``plan.frees``).  Not for
    plans with ops that may wait (``plan.blocking``): a parked op's readers
    would come next.
    """

    __slots__ = ("frees",)

    def __init__(self, plan: Plan, feeds: Sequence[Any]) -> None:
        super().__init__(plan, feeds)
        self.ready = deque(range(len(plan.ops)))  # every op, in the plan's order
        self.frees = plan.frees  # per op: the slots it reads last in that order

    def finish(self, i: int, result: Any, key: None = None) -> None:
        """Op ``i`` returned ``result``: store it and free the values it read last."""
        vals, outs = self.vals, self.outputs[i]
        if len(outs) == 1:  # store() inline: the reference runs every op of a first run
            vals[outs[0]] = result
        else:
            store(vals, outs, result)
        for s in self.frees[i]:  # the static order's last reads
            vals[s] = None
        vals[DISCARD] = None
        self.remaining -= 1


# ------------------------------------------------------------------ scheduler
class Scheduler:
    """One run of a plan under a propagation rule.  See the module docstring."""

    def __init__(
        self,
        plan: Plan,
        rule: Any,
        fns: Sequence[Callable[..., Any]] | None = None,
        threads: int = 0,
        deadline: float | None = None,
        before: Hooks = (),
        after: Hooks = (),
        waits: tuple[Hooks, Hooks] = ((), ()),
        lifo: bool = False,
        logging: bool = False,
        buffers: tuple[int, ...] | None = None,
    ) -> None:
        self.plan = plan
        self.rule = rule  # the propagation rule: the ready queue and what a result releases
        self.fns = plan.fns if fns is None else fns  # per op: what to call (timed wrappers)
        self.threads = threads  # most kernels on the pool at once (0: none, the serial reference)
        self.deadline = deadline  # a time.monotonic() value, or None
        self.before = before  # the observers' before_op hooks
        self.after = after  # the observers' after_op hooks
        self.wait_hooks, self.wait_end_hooks = waits  # the observers' on_wait, on_wait_end
        self.lifo = lifo  # newest ready entry first (another legal order)
        self.keys: list[Any] | None = [] if logging else None  # per kernel called: its key
        # per op: the input whose dead buffer its output may take (flowbook.runtime.memory_plan)
        self.buffers = buffers
        self.in_flight = 0  # kernels on the pool or parked, not yet collected
        self.done: queue.SimpleQueue[tuple[int, Any, Any, BaseException | None]] = (
            queue.SimpleQueue()
        )  # (op, key, result or a failed kernel's inputs, error) from pool threads and waits
        self.futures: list[Future] = []  # this run's pool kernels (drain waits on them)
        self.parked: dict[tuple[int, Any], Pending] = {}  # (op, key) -> its wait
        rule.sched = self

    # ----------------------------------------------------------------- loop
    def run(self) -> list[Any]:
        """Run every ready entry until none is left; the fetched values, plan order."""
        rule, plan, fns, deadline = self.rule, self.plan, self.fns, self.deadline
        before, after = self.before, self.after
        ready, take, finish = rule.ready, rule.take, rule.finish
        pop = ready.pop if self.lifo else ready.popleft
        offload = self.threads and plan.any_heavy
        ops, keys, buffers = plan.ops, self.keys, self.buffers
        collects = bool(self.threads) or plan.blocking  # pool kernels or parked waits may come
        while True:
            if deadline is not None and time.monotonic() > deadline:
                raise timed_out()
            if not ready:
                if not self.in_flight:
                    break
                self._collect(block=True)
                continue
            entry = pop()
            got = take(entry)
            if got is None:  # passed on by the rule (a dead op)
                continue
            if offload and ready and self.in_flight < self.threads:
                got = self._heavy_first(entry, got)
                if self._offloaded(got):
                    continue
            i, key, args = got
            if before:
                for hook in before:
                    hook(ops[i])
            fn = fns[i] if buffers is None or buffers[i] < 0 else self._into(i, args)
            try:
                result = fn(*args)
            except Exception as e:
                error = rule.error(i, key, e, args)  # judged on the inputs, while they are held
                args = result = got = entry = None  # the traceback keeps this frame, not buffers
                raise error from e
            del args, got, entry
            if keys is not None:
                keys.append(key)
            if type(result) is Pending:
                self._park(i, key, result)
                continue
            if after:
                self._tell(i, result)
            finish(i, result, key)
            result = fn = None  # a buffer the next op may take is held by the values alone
            if collects and self.in_flight:
                self._collect(block=False)
        return rule.fetched()

    def _into(self, i: int, args: list[Any]) -> Callable[..., Any]:
        return self.rule.into_buffer(i, self.buffers[i], args, self.fns[i])  # type: ignore[index]

    def _tell(self, i: int, result: Any) -> None:
        produced = as_outputs(self.plan.outputs[i], result)
        op = self.plan.ops[i]
        for hook in self.after:
            hook(op, produced)

    # ------------------------------------------------------------- the pool
    def _heavy_first(
        self, entry: Any, got: tuple[int, Any, list[Any]]
    ) -> tuple[int, Any, list[Any]]:
        """A light op with large inputs and work to overlap: a heavy op ready behind it goes
        first (to the pool), the light one back to the front."""
        i, _, args = got
        heavy, rule = self.plan.heavy, self.rule
        if heavy[i] or not large(args):
            return got
        ready = rule.ready
        behind = next((e for e in ready if heavy[rule.op(e)]), None)
        if behind is None:
            return got
        ready.remove(behind)
        other = rule.take(behind)
        if other is None:  # a dead entry: passed on
            return got
        ready.appendleft(entry)
        return other

    def _offloaded(self, got: tuple[int, Any, list[Any]]) -> bool:
        """Send a heavy kernel with large inputs to the pool when other ready work can overlap it."""
        i, key, args = got
        if not (self.plan.heavy[i] and self.rule.ready and large(args)):
            return False
        if not self.rule.admits(key):
            return False
        for hook in self.before:
            hook(self.plan.ops[i])
        self.futures.append(pool().submit(self._work, i, key, self.fns[i], args))
        self.in_flight += 1
        return True

    def _work(self, i: int, key: Any, fn: Callable[..., Any], args: list[Any]) -> None:
        try:
            self.done.put((i, key, fn(*args), None))
        except BaseException as e:
            self.done.put((i, key, args, e))  # a failed kernel's inputs, for its error

    def _park(self, i: int, key: Any, result: Pending) -> None:
        """Op ``i`` waits: its callback posts the result into ``done``."""
        self.parked[(i, key)] = result
        self.in_flight += 1
        for hook in self.wait_hooks:
            hook(self.plan.ops[i], result.what)
        result.then(lambda r, e: self.done.put((i, key, r, e)))

    def _collect(self, block: bool) -> None:
        """Finish the kernels that came back from the pool and the waits that ended."""
        while self.in_flight:
            try:
                i, key, result, exc = (
                    self.done.get(timeout=WAIT_SLICE_S) if block else self.done.get_nowait()
                )
            except queue.Empty:
                if block and self.deadline is not None and time.monotonic() > self.deadline:
                    parked = {i: p for (i, _), p in self.parked.items()}
                    raise deadline_error(self.plan, parked) from None
                if block:
                    continue
                return
            self.in_flight -= 1
            if self.parked.pop((i, key), None) is None:
                self.rule.returned(key)
            else:
                for hook in self.wait_end_hooks:
                    hook(self.plan.ops[i])
            if exc is not None:  # ``result``: the failed pool kernel's inputs (None for a wait)
                raise self.rule.error(i, key, exc, result) from exc
            self.commit(i, key, result)
            block = False

    def stop(self) -> None:
        """After an error: withdraw the waits, let the pool kernels finish, drop the buffers.

        Waits on the futures themselves, not the in-flight count, which an
        interrupt may have caught half-updated.
        """
        self.rule.ready.clear()
        for p in list(self.parked.values()):
            p.cancel()
        drain(self.futures)
        self.rule.drop()

    # ------------------------------------------------------------- stepping
    def call(self, entry: Any) -> tuple[int, Any, list[Any], Any] | None:
        """Run one ready ``entry``'s kernel on the calling thread (the Stepper's step).

        Returns (op, key, args, result), or None when the rule passed the
        entry on (a dead op).  A kernel error leaves the entry ready.
        """
        got = self.rule.take(entry)
        if got is None:
            return None
        i, key, args = got
        for hook in self.before:
            hook(self.plan.ops[i])
        try:
            result = self.fns[i](*args)
        except Exception as e:
            raise self.rule.error(i, key, e, args) from e
        self.rule.unready(entry)
        return i, key, args, result

    def commit(self, i: int, key: Any, result: Any) -> None:
        """Op ``i`` ran in ``key`` off the inline path (pool, wait, step): tell, deliver."""
        if self.after:
            self._tell(i, result)
        self.rule.finish(i, result, key)
