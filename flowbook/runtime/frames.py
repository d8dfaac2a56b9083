"""Frames and iterations: how a plan with branches and loops runs (the whitepaper's section 4.4).

A plan whose ops include the control-flow primitives (``Switch``, ``Merge``,
``Enter``, ``Exit``, ``NextIteration``; ``flowbook.ops.control_flow.control_flow_prims``)
runs here, as TensorFlow's executor runs it: every value is **tagged** with
the frame instance and iteration it belongs to, and an op runs once per tag
in which all its inputs have arrived.

- A **tag** is ``(frame, iteration)``; the run starts in ``ROOT``, ``(None, 0)``.
  ``Enter`` delivers into iteration 0 of the child frame named by its
  ``frame_name`` (one :class:`Frame` per parent tag and name); a constant
  ``Enter`` (a loop-invariant value) delivers into every iteration of it,
  those already started and those to come.  ``NextIteration`` delivers into
  iteration k + 1 (starting it); ``Exit`` into the parent tag.
- **Deadness**: ``Switch`` outputs :data:`~flowbook.ops.control_flow.control_flow_prims.DEAD`
  on its untaken side.  An op with a dead input (data or control) does not
  run; its outputs are dead.  ``Merge`` passes on the first live input to
  arrive (a loop's Merge gets exactly one input per iteration: the Enter's
  in iteration 0, NextIteration's after), and is dead only when all its
  inputs arrived dead.  A dead ``NextIteration`` stops there (the loop is
  over), and a dead ``Exit`` reaches the parent only when its whole frame
  is dead (a loop inside an untaken branch).
- **Bookkeeping** is per (op, tag): one record ``[waiting, dead, args]``
  made when the first input arrives, holding the op's own references to its
  input values, and dropped when it runs; so a value lives until its last
  reader in its iteration has run, and memory stays bounded by the
  iterations in flight, not by how many ran.

**Compiled loops.**  When nobody watches the run op by op (no per-op or
per-iteration hook, no timings), each innermost loop without a branch
inside runs as one compiled Python ``while`` (``flowbook.runtime.codegen.compiled_loops``):
the scheduler collects its Enters, calls it, and delivers its Exits, so a
trivial iteration costs about what the same Python loop over numpy does.
:func:`run_frames` is the front door; ``compiled=False`` keeps every loop
interpreted (the differential tests' reference).

**The pool and waits.**  A heavy kernel (``Plan.heavy``) with big enough
inputs goes to the thread pool (``flowbook.runtime.pool``) while the calling
thread goes on with other ready ops, of the same iteration or of the next
ones, so independent heavy work of a branch or of overlapping iterations
runs side by side, at most ``threads`` kernels at once, and at most a
loop's ``parallel_iterations`` of each loop frame's; a kernel that
must wait (a queue's dequeue: ``flowbook.state.pending``) is parked until its
queue answers.  Their results come back through ``done``.  Every other
op runs on the calling thread in a FIFO ready order; ``order="lifo"``
(the serial reference of the differential tests) runs the newest ready op
first, a different legal order that must give the same values.  Deadlines,
KeyboardInterrupt (between any two ops, so within one iteration's time) and
the observers' ``before_op``/``after_op`` hooks work as in the scheduler of
``flowbook.runtime.executor``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     i = fb.while_loop(lambda i: i < 10, lambda i: i + 3, [fb.constant(0)])
    ...     int(s.run(i))
    12
"""

from __future__ import annotations

import queue
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any

import numpy as np

from flowbook.framework import errors
from flowbook.ops.control_flow.control_flow_prims import DEAD
from flowbook.runtime.codegen.compiled_loops import CompiledLoop, LoopDeadline
from flowbook.runtime.frame_layout import ENTER, EXIT, MERGE, NEXT, ROOT, TRIGGER, Frame, Layout
from flowbook.runtime.op_errors import deadline_error, run_error
from flowbook.runtime.plan import Plan, as_outputs
from flowbook.runtime.pool import drain, large, pool
from flowbook.state.pending import WAIT_SLICE_S, Pending

DEADLINE_EVERY = 256  # ops between two reads of the clock when a deadline is set


class FrameRun:
    """One run of a control-flow plan.  See the module docstring."""

    def __init__(
        self,
        plan: Plan,
        layout: Layout,
        feeds: Sequence[Any],
        fns: Sequence[Callable[..., Any]] | None = None,
        order: str = "fifo",
        before: Sequence[Callable[..., Any]] = (),
        after: Sequence[Callable[..., Any]] = (),
        deadline: float | None = None,
        iteration: Sequence[Callable[..., Any]] = (),
        counting: bool = False,
        logging: bool = False,
        loops: dict[str, CompiledLoop] | None = None,
        on_loop: Sequence[Callable[..., Any]] = (),
        threads: int = 0,
        waits: tuple[Sequence[Callable[..., Any]], Sequence[Callable[..., Any]]] = ((), ()),
    ) -> None:
        self.wait_hooks, self.wait_end_hooks = waits  # the observers' on_wait, on_wait_end
        self.on_loop = on_loop  # the observers' on_loop hooks
        self.threads = threads  # most heavy kernels on the pool at once (0: all inline)
        self.in_flight = 0  # kernels on the pool or waiting (Pending), not yet collected
        self.done: queue.SimpleQueue[tuple[int, Any, Any, BaseException | None]] = (
            queue.SimpleQueue()
        )  # (op, tag, result, error) from pool threads and settled waits
        self.futures: list[Future] = []  # this run's pool kernels (drain waits on them)
        self.parked: dict[tuple[int, tuple[Any, int]], Pending] = {}  # (op, tag) -> its wait
        self.current: tuple[Any, int] = ROOT  # the tag of the op being stepped (run_one)
        self.plan, self.layout, self.feeds = plan, layout, list(feeds)
        self.loops = loops or None  # frames that run compiled, by name
        self.pending: dict[tuple[tuple[Any, int], str], list[Any]] = {}  # their Enters so far
        self.compiled_iterations: dict[str, int] = {}  # body runs of the compiled frames
        self.iteration = iteration  # the observers' on_iteration hooks
        # per op, how many times it ran (when an observer wants on_control_flow)
        self.runs: list[int] | None = [0] * len(plan.ops) if counting else None
        self.tags: list[tuple[Any, int]] | None = [] if logging else None  # per kernel timed
        self.fns = plan.fns if fns is None else fns
        self.records: dict[tuple[int, tuple[Any, int]], list[Any]] = {}  # (op, tag) -> record
        self.frames: dict[tuple[tuple[Any, int], str], Frame] = {}  # (parent tag, name) -> frame
        self.ready: deque[tuple[int, tuple[Any, int], list[Any]]] = deque()
        self.lifo = order == "lifo"
        self.before, self.after, self.deadline = before, after, deadline
        self.fetched: dict[int, Any] = {}  # slot -> value, for fetched slots at the top level
        self.fetch_slots = {s for s in plan.fetch_slots if s is not None}
        for i in plan.ready:
            self.ready.append((i, ROOT, self._args(i, [None] * layout.n_inputs[i])))

    # ---------------------------------------------------------------- loop
    def run(self) -> list[Any]:
        """Run every op in every tag it is released in; the fetched values, plan order."""
        ready, fns, plan = self.ready, self.fns, self.plan
        before, after, deadline = self.before, self.after, self.deadline
        pop = ready.pop if self.lifo else ready.popleft
        iteration, runs, tags = self.iteration, self.runs, self.tags
        threads, heavy = self.threads, plan.heavy
        last: tuple[Any, int] = ROOT
        count = 0
        while ready or self.in_flight:
            if not ready:
                self._collect(block=True)
                continue
            i, tag, args = pop()
            count += 1
            if deadline is not None and not count % DEADLINE_EVERY and time.monotonic() > deadline:
                raise errors.DeadlineExceededError(
                    None, plan.ops[i], "Timed out waiting for the run to finish"
                )
            if args is None:  # released with a dead input: does not run
                self._deliver(i, tag, None, True)
                continue
            if iteration and tag != last:
                last = tag
                where = self.where(tag)
                for hook in iteration:
                    hook(where)
            for hook in before:
                hook(plan.ops[i])
            if threads and heavy[i] and ready and self.in_flight < threads and large(args):
                frame = tag[0]
                if frame is None or frame.busy < frame.parallel:
                    self.futures.append(pool().submit(self._work, i, tag, fns[i], args))
                    self.in_flight += 1
                    if frame is not None:
                        frame.busy += 1
                    continue
            try:
                result = fns[i](*args)
            except Exception as e:
                args = None
                from_op = _run_error(plan, i, e, tag)
                raise from_op from e
            if tags is not None:
                tags.append(tag)
            if type(result) is Pending:  # it waits: its callback posts the result to done
                self.parked[(i, tag)] = result
                self.in_flight += 1
                for hook in self.wait_hooks:
                    hook(plan.ops[i], result.what)
                result.then(lambda r, e, i=i, tag=tag: self.done.put((i, tag, r, e)))
                continue
            if runs is not None:
                runs[i] += 1
            outs = as_outputs(plan.outputs[i], result)
            for hook in after:
                hook(plan.ops[i], outs)
            self._deliver(i, tag, outs, False)
            if self.in_flight:
                self._collect(block=False)
        return self._results()

    # ---------------------------------------------------------- the pool
    def _work(self, i: int, tag: tuple[Any, int], fn: Callable[..., Any], args: list[Any]) -> None:
        try:
            self.done.put((i, tag, fn(*args), None))
        except BaseException as e:
            self.done.put((i, tag, None, e))

    def _collect(self, block: bool) -> None:
        """Deliver the kernels that came back from the pool and the waits that ended."""
        plan = self.plan
        while self.in_flight:
            try:
                i, tag, result, exc = (
                    self.done.get(timeout=WAIT_SLICE_S) if block else self.done.get_nowait()
                )
            except queue.Empty:
                if block and self.deadline is not None and time.monotonic() > self.deadline:
                    parked = {i: p for (i, _), p in self.parked.items()}
                    raise deadline_error(plan, parked) from None
                if block:
                    continue
                return
            self.in_flight -= 1
            if self.parked.pop((i, tag), None) is None:
                if tag[0] is not None:
                    tag[0].busy -= 1  # a pool kernel of a loop's iteration came back
            else:
                for hook in self.wait_end_hooks:
                    hook(plan.ops[i])
            if exc is not None:
                raise _run_error(plan, i, exc, tag) from exc
            self._finish(i, tag, result)
            block = False

    def stop(self) -> None:
        """After an error: withdraw the waits, let the pool kernels finish, drop the buffers."""
        self.ready.clear()
        for p in list(self.parked.values()):
            p.cancel()
        drain(self.futures)
        self.records.clear()

    # ------------------------------------------------------------ stepping
    def head(self) -> tuple[int, tuple[Any, int], list[Any]] | None:
        """The ready entry ``(op, tag, args)`` that runs next (FIFO); dead ones pass on first."""
        ready = self.ready
        while ready and ready[0][2] is None:
            i, tag, _ = ready.popleft()
            self._deliver(i, tag, None, True)
        return ready[0] if ready else None

    def run_one(self, entry: tuple[int, tuple[Any, int], list[Any]]) -> tuple[Any, ...]:
        """Run one ready ``entry`` (the Stepper's step) and deliver its outputs.

        A kernel error (named with the op and iteration) leaves ``entry``
        ready, and everything else as it was.
        """
        i, tag, args = entry
        self.current = tag
        for hook in self.before:
            hook(self.plan.ops[i])
        try:
            result = self.fns[i](*args)
        except Exception as e:
            raise _run_error(self.plan, i, e, tag) from e
        ready = self.ready
        for k, other in enumerate(ready):  # by identity: args hold arrays
            if other is entry:
                del ready[k]
                break
        return self._finish(i, tag, result)

    def _finish(self, i: int, tag: tuple[Any, int], result: Any) -> tuple[Any, ...]:
        """Op ``i`` ran in ``tag`` off the inline path (pool, wait, step): count, tell, deliver.

        ``run`` does the same inline for the kernels it calls itself (its hot path).
        """
        if self.runs is not None:
            self.runs[i] += 1
        outs = as_outputs(self.plan.outputs[i], result)
        for hook in self.after:
            hook(self.plan.ops[i], outs)
        self._deliver(i, tag, outs, False)
        return outs

    def where(self, tag: tuple[Any, int]) -> tuple[tuple[str, int], ...]:
        """``(frame_name, iteration)`` pairs from the outermost loop in to ``tag``'s."""
        out = []
        frame, it = tag
        while frame is not None:
            out.append((frame.name, it))
            frame, it = frame.parent
        return tuple(reversed(out))

    def iterations(self) -> dict[str, int]:
        """Per loop frame name: how many times its body ran, summed over the frame's instances.

        A loop whose body ran n times started n + 1 iterations: the last one
        only checked the condition.
        """
        out: dict[str, int] = dict(self.compiled_iterations)
        for frame in self.frames.values():
            out[frame.name] = out.get(frame.name, 0) + (frame.iterations - 1) * frame.live
        return out

    def _results(self) -> list[Any]:
        out = []
        fed = {s: k for k, s in enumerate(self.plan.feed_slots)}
        for s in self.plan.fetch_slots:
            if s is None:
                out.append(None)
                continue
            v = self.feeds[fed[s]] if s in fed else self.fetched.get(s, DEAD)
            if v is DEAD:
                p, k = self.layout.producer_of[s]
                t = self.plan.ops[p].outputs[k]
                raise errors.InvalidArgumentError(
                    None,
                    t.op,
                    f"Retval of '{t.name}' does not have a value: it is on a branch "
                    f"the run did not take (a dead tensor of a cond or a loop), {t.op.describe()}",
                )
            out.append(v)
        return out

    # ------------------------------------------------------------ delivery
    def _args(self, i: int, args: list[Any]) -> list[Any]:
        for k, pos in self.layout.fed_args[i]:
            args[k] = self.feeds[pos]
        return args

    def _deliver(
        self, i: int, tag: tuple[Any, int], outs: tuple[Any, ...] | None, dead: bool
    ) -> None:
        """Op ``i`` ran (or was dead) in ``tag``: pass its outputs to the ops it releases."""
        layout = self.layout
        kind = layout.kinds[i]
        if outs is None:
            outs = (DEAD,) * len(self.plan.outputs[i])
        if kind == NEXT:
            if dead:
                return  # the loop is over: deadness stops here
            frame, it = tag
            target = (frame, it + 1)
            if it + 1 >= frame.iterations:
                frame.iterations = it + 2
                self._release(i, target, outs, dead)
                for j, vals, d in frame.invariants:
                    self._release(j, target, vals, d)
                return
        elif kind == ENTER:
            if self.loops is not None and layout.frame_of[i] in self.loops:
                self._enter_compiled(self.loops[layout.frame_of[i]], i, tag, outs[0], dead)
                return
            key = (tag, layout.frame_of[i])
            frame = self.frames.get(key)
            if frame is None:
                frame = self.frames[key] = Frame(tag, layout.frame_of[i], layout.parallel[i])
                for hook in self.on_loop:
                    hook(frame.name, frame.progress)
            if not dead:
                frame.live = True
            if layout.constant[i]:
                frame.invariants.append((i, outs, dead))
                for it in range(frame.iterations):
                    self._release(i, (frame, it), outs, dead)
                return
            target = (frame, 0)
        elif kind == EXIT:
            frame = tag[0]
            if dead and frame.live:
                return  # an iteration that did not leave the loop
            target = frame.parent
        else:
            target = tag
        self._release(i, target, outs, dead)

    def _enter_compiled(
        self, loop: CompiledLoop, i: int, tag: tuple[Any, int], value: Any, dead: bool
    ) -> None:
        """Enter ``i`` of a compiled frame delivered: once all have, run the loop in one go."""
        key = (tag, loop.name)
        got = self.pending.get(key)
        if got is None:
            got = self.pending[key] = [[None] * len(loop.enters), 0, False]
        got[0][loop.position[i]] = value
        got[1] += 1
        got[2] = got[2] or dead
        if got[1] < len(loop.enters):
            return
        del self.pending[key]
        if got[2]:  # a loop on an untaken branch: its Exits are dead
            for e in loop.exits:
                self._release(e, tag, (DEAD,), True)
            return
        assert loop.fn is not None
        cell = [0]
        for hook in self.on_loop:
            hook(loop.name, lambda: cell[0])
        try:
            values, n = loop.fn(*got[0], self.deadline, time.monotonic, cell)
        except LoopDeadline:
            raise errors.DeadlineExceededError(
                None, self.plan.ops[loop.exits[0]], "Timed out waiting for the run to finish"
            ) from None
        except Exception as e:
            got = None
            op = loop.op_index(e.__traceback__)
            if op is None:
                raise
            error = run_error(self.plan, op, e)
            error.message += (
                f" (in loop frame '{loop.name}', iteration {loop.iteration(e.__traceback__)})"
            )
            error.args = (error.message,)
            raise error from e
        self.compiled_iterations[loop.name] = self.compiled_iterations.get(loop.name, 0) + n
        if self.runs is not None:
            loop.count(self.runs, n)
        for e, v in zip(loop.exits, values):
            self._release(e, tag, (v,), False)

    def _release(self, i: int, tag: tuple[Any, int], outs: tuple[Any, ...], dead: bool) -> None:
        layout, records, plan = self.layout, self.records, self.plan
        if tag[0] is None:  # the top level: fetched values are kept here
            for s, v in zip(plan.outputs[i], outs):
                if s in self.fetch_slots:
                    self.fetched[s] = v
        for c, pairs in layout.edges[i]:
            key = (c, tag)
            rec = records.get(key)
            if rec is None:
                n = layout.n_inputs[c]
                rec = records[key] = [len(plan.producers[c]), False, self._args(c, [None] * n)]
            args = rec[2]
            for k_out, k_in in pairs:
                v = outs[k_out]
                args[k_in] = v
                if v is DEAD:
                    rec[1] = True
            if layout.kinds[c] == MERGE:
                self._merge_arrival(c, tag, rec, pairs, dead)
                continue
            if dead:
                rec[1] = True
            rec[0] -= 1
            if not rec[0]:
                del records[key]
                if rec[1] and layout.kinds[c] != TRIGGER:
                    self.ready.append((c, tag, None))
                else:
                    self.ready.append((c, tag, rec[2]))

    def _merge_arrival(
        self,
        c: int,
        tag: tuple[Any, int],
        rec: list[Any],
        pairs: tuple[tuple[int, int], ...],
        dead: bool,
    ) -> None:
        """A producer of Merge ``c`` arrived: the first live data input fires it."""
        if len(rec) == 3:
            rec.append(0)  # arrivals so far
            rec.append(False)  # fired
        rec[3] += 1
        live = [k for _, k in pairs if rec[2][k] is not DEAD] if not dead else ()
        if not rec[4] and live:
            k_in = min(live)
            v = rec[2][k_in]
            rec[4] = True
            outs = (v, np.int32(k_in))
            if self.runs is not None:
                self.runs[c] += 1
            self.current = tag
            for hook in self.before:
                hook(self.plan.ops[c])
            for hook in self.after:
                hook(self.plan.ops[c], outs)
            self._deliver(c, tag, outs, False)
        if rec[3] >= self.layout.expect[c]:
            del self.records[(c, tag)]
            if not rec[4]:
                self._deliver(c, tag, None, True)


def _run_error(plan: Plan, i: int, exc: BaseException, tag: tuple[Any, int]) -> Exception:
    """Op ``i``'s error, naming the loop frame and iteration it ran in."""
    error = run_error(plan, i, exc)
    frame, it = tag
    if frame is not None:
        error.message += f" (in loop frame '{frame.name}', iteration {it})"
        error.args = (error.message,)
    return error
