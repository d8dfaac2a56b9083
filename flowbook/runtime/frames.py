"""Frames and iterations: the propagation rule of plans with branches and loops.

A plan whose ops include the control-flow primitives (``Switch``, ``Merge``,
``Enter``, ``Exit``, ``NextIteration``; ``flowbook.ops.control_flow.control_flow_prims``)
runs on the scheduler (``flowbook.runtime.scheduler``) with :class:`Frames` as its
propagation rule, as TensorFlow's executor runs it with its propagator: every
value is **tagged** with the frame instance and iteration it belongs to, and an
op runs once per tag in which all its inputs have arrived.  The scheduler does
the rest (the pool, waits, the deadline, interrupts, the per-op hooks).

- A **tag** is ``(frame, iteration)``; the run starts in ``ROOT``, ``(None, 0)``.
  ``Enter`` delivers into iteration 0 of the child frame named by its
  ``frame_name`` (one :class:`~flowbook.runtime.frame_layout.Frame` per parent
  tag and name); a constant ``Enter`` (a loop-invariant value) delivers into
  every iteration of it, those already started and those to come.
  ``NextIteration`` delivers into iteration k + 1 (starting it); ``Exit`` into
  the parent tag.  A ready entry is ``(op, tag, args)``; the tag is the
  scheduler's key, which tells two runs of one op apart.
- **Deadness**: ``Switch`` outputs :data:`~flowbook.ops.control_flow.control_flow_prims.DEAD`
  on its untaken side.  An op with a dead input (data or control) does not
  run (its entry's args are None; ``take`` passes it on); its outputs are dead.
  ``Merge`` passes on the first live input to arrive (a loop's Merge gets
  exactly one input per iteration: the Enter's in iteration 0,
  NextIteration's after), and is dead only when all its inputs arrived dead.
  A dead ``NextIteration`` stops there (the loop is over), and a dead ``Exit``
  reaches the parent only when its whole frame is dead (a loop inside an
  untaken branch).
- **Bookkeeping** is per (op, tag): one record ``[waiting, dead, args]``
  made when the first input arrives, holding the op's own references to its
  input values, and dropped when it runs; so a value lives until its last
  reader in its iteration has run, and memory stays bounded by the
  iterations in flight, not by how many ran.
- **The pool bound**: at most a loop's ``parallel_iterations`` kernels of
  each frame instance on the pool at once (``admits``, ``returned``).

**Compiled loops.**  When nobody watches the run op by op (no per-op or
per-iteration hook, no timings), each innermost loop without a branch
inside runs as one compiled Python ``while`` (``flowbook.runtime.codegen.compiled_loops``):
the rule collects its Enters, calls it, and delivers its Exits, so a
trivial iteration costs about what the same Python loop over numpy does.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     i = fb.while_loop(lambda i: i < 10, lambda i: i + 3, [fb.constant(0)])
    ...     int(s.run(i))
    12
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from flowbook.framework import errors
from flowbook.ops.control_flow.control_flow_prims import DEAD
from flowbook.runtime.codegen.compiled_loops import CompiledLoop, LoopDeadline
from flowbook.runtime.frame_layout import ENTER, EXIT, MERGE, NEXT, ROOT, TRIGGER, Frame, Layout
from flowbook.runtime.op_errors import run_error
from flowbook.runtime.plan import Plan, as_outputs


class Frames:
    """The propagation rule of a plan with branches and loops.  See the module docstring."""

    def __init__(
        self,
        plan: Plan,
        layout: Layout,
        feeds: Sequence[Any],
        iteration: Sequence[Callable[..., Any]] = (),
        counting: bool = False,
        loops: dict[str, CompiledLoop] | None = None,
        on_loop: Sequence[Callable[..., Any]] = (),
    ) -> None:
        self.sched: Any = None  # the Scheduler running this rule (its hooks, its deadline)
        self.on_loop = on_loop  # the observers' on_loop hooks
        self.iteration = iteration  # the observers' on_iteration hooks
        self.told: tuple[Any, int] = ROOT  # the tag the on_iteration hooks last heard of
        self.current: tuple[Any, int] = ROOT  # the tag of the op taken last
        self.plan, self.layout, self.feeds = plan, layout, list(feeds)
        self.loops = loops or None  # frames that run compiled, by name
        self.pending: dict[tuple[tuple[Any, int], str], list[Any]] = {}  # their Enters so far
        self.compiled_iterations: dict[str, int] = {}  # body runs of the compiled frames
        # per op, how many times it ran (when an observer wants on_control_flow, or stepping)
        self.runs: list[int] | None = [0] * len(plan.ops) if counting else None
        self.records: dict[tuple[int, tuple[Any, int]], list[Any]] = {}  # (op, tag) -> record
        self.frames: dict[tuple[tuple[Any, int], str], Frame] = {}  # (parent tag, name) -> frame
        # (op, tag, args) ready to run; args None: released with a dead input
        self.ready: deque[tuple[int, tuple[Any, int], list[Any] | None]] = deque()
        self.fetched_values: dict[int, Any] = {}  # slot -> value, fetched slots at the top level
        self.fetch_slots = {s for s in plan.fetch_slots if s is not None}
        for i in plan.ready:
            self.ready.append((i, ROOT, self._args(i, [None] * layout.n_inputs[i])))

    # ------------------------------------------------------------ the rule
    def take(self, entry: tuple[int, tuple[Any, int], list[Any] | None]) -> Any:
        """The entry to run, or None when it was dead (then its deadness is passed on)."""
        i, tag, args = entry
        if args is None:
            self._deliver(i, tag, None, True)
            return None
        self.current = tag
        if self.iteration and tag != self.told:
            self.told = tag
            where = self.where(tag)
            for hook in self.iteration:
                hook(where)
        return entry

    def finish(self, i: int, result: Any, tag: tuple[Any, int]) -> None:
        """Op ``i`` ran in ``tag``: count it and deliver its outputs."""
        if self.runs is not None:
            self.runs[i] += 1
        self._deliver(i, tag, as_outputs(self.plan.outputs[i], result), False)

    @staticmethod
    def op(entry: tuple[int, tuple[Any, int], Any]) -> int:
        """The op of a ready entry."""
        return entry[0]

    @staticmethod
    def admits(tag: tuple[Any, int]) -> bool:
        """Whether a kernel of ``tag`` may go to the pool (and if so, count it): at most its
        loop's ``parallel_iterations`` kernels at once."""
        frame = tag[0]
        if frame is None:
            return True
        if frame.busy >= frame.parallel:
            return False
        frame.busy += 1
        return True

    @staticmethod
    def returned(tag: tuple[Any, int]) -> None:
        """A pool kernel of ``tag`` came back."""
        if tag[0] is not None:
            tag[0].busy -= 1

    def error(
        self, i: int, tag: tuple[Any, int], exc: BaseException, args: list[Any] | None = None
    ) -> Exception:
        """Op ``i``'s error, judged on its inputs ``args``, naming the loop frame and iteration."""
        error = run_error(self.plan, i, exc, args)
        frame, it = tag
        if frame is not None:
            error.message += f" (in loop frame '{frame.name}', iteration {it})"
            error.args = (error.message,)
        return error

    def unready(self, entry: Any) -> None:
        """A stepped entry ran: it leaves the ready queue (by identity: args hold arrays)."""
        ready = self.ready
        for k, other in enumerate(ready):
            if other is entry:
                del ready[k]
                break

    def head(self) -> tuple[int, tuple[Any, int], list[Any]] | None:
        """The ready entry ``(op, tag, args)`` that runs next (FIFO); dead ones pass on first."""
        ready = self.ready
        while ready and ready[0][2] is None:
            self.take(ready.popleft())
        return ready[0] if ready else None  # type: ignore[return-value]

    def drop(self) -> None:
        """The run is over after an error: its buffers go now."""
        self.ready.clear()
        self.records.clear()

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

    def fetched(self) -> list[Any]:
        """The fetched values, plan order (a dead one is an error)."""
        out = []
        fed = {s: k for k, s in enumerate(self.plan.feed_slots)}
        for s in self.plan.fetch_slots:
            if s is None:
                out.append(None)
                continue
            v = self.feeds[fed[s]] if s in fed else self.fetched_values.get(s, DEAD)
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
            values, n = loop.fn(*got[0], self.sched.deadline, time.monotonic, cell)
        except LoopDeadline:
            raise errors.DeadlineExceededError(
                None, self.plan.ops[loop.exits[0]], "Timed out waiting for the run to finish"
            ) from None
        except Exception as e:
            got = None
            op = loop.op_index(e.__traceback__)
            if op is None:
                raise
            tb, inputs = e.__traceback__, self.plan.inputs[op]
            error = run_error(self.plan, op, e, lambda: loop.op_args(tb, inputs))
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
                    self.fetched_values[s] = v
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
            for hook in self.sched.before:
                hook(self.plan.ops[c])
            for hook in self.sched.after:
                hook(self.plan.ops[c], outs)
            self._deliver(c, tag, outs, False)
        if rec[3] >= self.layout.expect[c]:
            del self.records[(c, tag)]
            if not rec[4]:
                self._deliver(c, tag, None, True)
