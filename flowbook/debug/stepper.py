"""Stepper: run one ``Session.run`` signature an op at a time, on the calling thread, in loops too.

``Stepper(sess, fetches, feed_dict)`` takes the plan ``sess.run`` would run
(``Session.prepare``: same pruning, same order, the session's variables and
random generators) and drives the executor's own scheduler
(``flowbook.runtime.scheduler.Scheduler``, no pool) one ready entry at a time,
so whatever the scheduler can run, the Stepper can step.  The scheduler's
propagation rule is the run's: ``Flat`` for a plain DAG (pending counts, the
ready queue, the values, all kept so every computed tensor stays
inspectable), ``flowbook.runtime.frames.Frames`` for a plan with branches and
loops (every loop interpreted, so the steps are the ops ``sess.run`` would
run, in an order it allows).  State:

- ``plan``: the Plan, built once (``plan.ops`` is a topological order)
- ``_run``: the Scheduler; ``_sched`` its rule.  Running an op out of turn
  (``step(op)``, ``run_to``) on a DAG leaves its entry in the ready queue;
  entries whose op is no longer READY are dropped when they reach the front
- ``_state[i]``: WAITING, READY or DONE, per op (a DAG only)
- ``_latest[i]``: op i's latest outputs and the loop iterations they came from
- ``_executed``: the ops run so far, in order (the last ``EXECUTED_KEPT``)

One step (``_step``): ``Scheduler.call`` runs the entry's kernel; only once it
has returned does ``Scheduler.commit`` deliver its outputs (releasing its
consumers), after which the observers hear of it.  A kernel error (naming the
op, its cell and line, and its loop iteration) or a KeyboardInterrupt inside
the kernel leaves everything as it was: the op stays ready and the stepper and
session stay usable.  On a DAG an interrupt landing in the commit itself is
repaired by redoing the commit idempotently (pending counts recomputed from
the ops' dependencies).  One ``step()`` is O(inputs + consumers) of that op: a
few microseconds whatever the graph's size.

In a run with loops an op runs once per iteration: ``step()`` runs the next
ready *(op, iteration)*; ``where`` says which loop iterations the last op ran
in (``(("rnn/while/while_context", 3),)``), ``iterations`` how many times each
loop's body has run so far; ``run_to(op, iteration=k)`` runs ready ops in
order until ``op`` has run in iteration k of its innermost loop (a loop has no
fixed ancestor set to run alone; on a DAG ``run_to`` runs exactly the missing
ancestors); ``value(t)`` is ``t``'s latest value, of the iteration
``value_where(t)`` says; ops on an untaken branch never run.  Merges run as
their first live input arrives, as part of the step that delivered it.

``cont()`` runs ready ops until none is left or the next one has a breakpoint
(``break_at`` an op, a name or an op type); breakpoints stop *before* an op
runs, in any iteration, so its inputs can be inspected.  ``run_to`` and
``step`` ignore them.

    >>> import flowbook as fb
    >>> g = fb.Graph()
    >>> with g.as_default():
    ...     x = fb.placeholder(fb.float32, name="x")
    ...     y = fb.add(x, 1.0, name="y"); z = fb.multiply(y, 2.0, name="z")
    >>> s = fb.Session(graph=g)
    >>> st = Stepper(s, {"z": z}, {x: 3.0})
    >>> [op.name for op in st.ready()]
    ['Const', 'Const_1']
    >>> st.run_to("y").name, float(st.value("y:0"))
    ('y', 4.0)
    >>> st  # doctest: +ELLIPSIS
    <Stepper 2/4 ops run, 1 ready, next: Const 'Const_1' (...)>
    >>> st.cont()
    {'z': np.float32(8.0)}
    >>> s.close()

    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     i = fb.while_loop(lambda i: i < 3, lambda i: i + 1, [fb.constant(0)], name="loop")
    ...     st = Stepper(s, i)
    ...     add = st.run_to("loop/add", iteration=1)
    ...     int(st.value("loop/add")), st.where, int(st.cont())
    (2, (('loop/while_context', 1),), 3)
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any

import numpy as np

from flowbook.debug.nan_guard import NanGuard
from flowbook.framework.registry import OPS
from flowbook.framework.tensor import Operation, Tensor
from flowbook.runtime.frame_layout import Layout
from flowbook.runtime.frames import Frames
from flowbook.runtime.observers import Observer, hooks_of
from flowbook.runtime.plan import as_outputs
from flowbook.runtime.scheduler import Flat, Scheduler
from flowbook.runtime.session import host_value

WAITING, READY, DONE = 0, 1, 2  # an op's state in the stepper (a DAG)
EXECUTED_KEPT = 100_000  # ops ``executed`` remembers (a long loop runs millions)

Where = tuple[tuple[str, int], ...]
_quiet = np.errstate(all="ignore")  # TF semantics: 1/0 is inf, silently (as a decorator)


class StepperError(RuntimeError):
    """A stepping request that cannot be honoured: an op not ready, a value not computed..."""


class Stepper:
    """Run the plan of ``sess.run(fetches, feed_dict)`` one op at a time.  See the module doc.

    ``observers`` (executor Observers) see ``on_start``, ``before_op``,
    ``after_op`` (the NaN guard with the op's input values at hand), for loops
    ``on_iteration`` and ``on_loop``, and ``on_finish``; with
    ``ConfigProto(check_numerics=True)`` a NanGuard is added.
    """

    def __init__(
        self,
        sess: Any,
        fetches: Any,
        feed_dict: dict | None = None,
        observers: Sequence[Observer] = (),
    ) -> None:
        self.session = sess  # whose variables, generators and graph the kernels use
        self.graph = sess.graph
        self._run_of = sess.prepare(fetches, feed_dict)  # the plan, the feeds, the fetches' shape
        self.plan = plan = self._run_of.plan
        self._loops = bool(plan.control_flow)  # branches or loops: the frame rule
        self._layout = Layout(plan) if self._loops else None  # made once: reset keeps it
        self._index = {op: i for i, op in enumerate(plan.ops)}  # op -> index in the plan
        self.observers = list(observers)
        if sess.config.check_numerics and not any(isinstance(o, NanGuard) for o in observers):
            self.observers.append(NanGuard())
        self._break_ops: set[int] = set()  # breakpoints on single ops
        self._break_types: set[str] = set()  # breakpoints on every op of a type
        self.reset()

    # ------------------------------------------------------------- progress
    def reset(self) -> None:
        """Start again with the same feeds.

        Variables are NOT rolled back: assigns that ran stay in the session,
        and random ops continue their generators, as a second ``sess.run``
        would; a Print's ``first_n`` count goes on too (it lives in the
        plan's bound kernel).  Breakpoints are kept.
        """
        plan, obs, feeds = self.plan, self.observers, self._run_of.feeds
        if self._layout is not None:
            iteration, on_loop = hooks_of(obs, "on_iteration"), hooks_of(obs, "on_loop")
            rule: Any = Frames(plan, self._layout, feeds, iteration, True, None, on_loop)
        else:
            rule = Flat(plan, feeds, keep_values=True)
        self._sched = rule  # the propagation rule's state (pending counts or tagged records)
        self._run = Scheduler(plan, rule, after=[self._record])
        self._state = [WAITING] * len(plan.ops)  # op -> WAITING / READY / DONE (a DAG)
        for i in plan.ready:
            self._state[i] = READY
        self._latest: dict[int, tuple[tuple[Any, ...], Where]] = {}  # op -> (outputs, where)
        self._told: list[tuple[Operation, tuple[Any, ...]]] = []  # ran, observers not yet told
        self._executed: deque[Operation] = deque(maxlen=EXECUTED_KEPT)  # ops run, in order
        self._where: Where = ()  # the loop iterations the last op ran in
        self._stopped: int | None = None  # the op a breakpoint stopped cont() before
        self._finished = False  # the observers heard on_finish
        for o in obs:
            o.on_start(plan)

    @property
    def done(self) -> bool:
        """Whether the run is over: every op of a DAG ran, no op is ready in any iteration."""
        if self._loops:
            return self._sched.head() is None
        return not self._sched.remaining

    @property
    def executed(self) -> list[Operation]:
        """The ops run so far, in the order they ran (the last ``EXECUTED_KEPT``)."""
        return list(self._executed)

    @property
    def stopped_at(self) -> Operation | None:
        """The op a breakpoint stopped ``cont()`` before (not yet run), or None."""
        return None if self._stopped is None else self.plan.ops[self._stopped]

    @property
    def where(self) -> Where:
        """The loop iterations the last op ran in: ``(frame_name, iteration)`` pairs, outer first."""
        return self._where

    @property
    def iterations(self) -> dict[str, int]:
        """Per loop frame name: how many times its body has run so far."""
        return self._sched.iterations() if self._loops else {}

    def ready(self) -> list[Operation]:
        """The ops whose inputs are all computed, in the order ``step()`` takes them."""
        ops = self.plan.ops
        if self._loops:
            self._sched.head()
            return [ops[i] for i, _, args in self._sched.ready if args is not None]
        state = self._state
        return [ops[i] for i in self._sched.ready if state[i] == READY]

    def remaining(self) -> list[Operation]:
        """The ops not yet run (in any iteration), in the plan's order."""
        if self._loops:
            return [op for op, n in zip(self.plan.ops, self._sched.runs) if not n]
        return [op for op, st in zip(self.plan.ops, self._state) if st != DONE]

    # -------------------------------------------------------------- running
    @_quiet
    def step(self, op: Any = None) -> Operation:
        """Run the next ready op (FIFO), or ``op`` (an op, tensor or name): its first ready run."""
        self._check_open()
        if op is None:
            entry = self._head()
            if entry is None:
                raise StepperError(
                    f"All {len(self.plan.ops)} ops have run: cont() returns the fetches, "
                    "reset() starts again."
                    if not self._loops
                    else "The run is over: cont() returns the fetches, reset() starts again."
                )
        else:
            entry = self._entry_of(self._op_index(op))
        self._step(entry)
        return self.plan.ops[self._sched.op(entry)]

    @_quiet
    def run_to(self, op: Any, iteration: int | None = None) -> Operation:
        """Run what ``op`` needs, then ``op`` (in ``iteration`` of its innermost loop).

        On a DAG: exactly the not-yet-run ancestors of ``op``, then ``op``.
        With loops: ready ops in order until ``op`` runs (in ``iteration``).
        """
        self._check_open()
        target = self._op_index(op)
        if self._loops:
            return self._run_to_in_loops(target, iteration)
        state, waits = self._state, self.plan.producers
        need: set[int] = set()
        stack = [target]
        while stack:
            j = stack.pop()
            if j not in need and state[j] != DONE:
                need.add(j)
                stack.extend(waits[j])
        for j in sorted(need):  # plan order is topological: each finds its inputs done
            self._step(j)
        return self.plan.ops[target]

    @_quiet
    def cont(self) -> Any:
        """Run to the end, or until the next op has a breakpoint (then return None).

        At the end, returns the fetches in the same structure and with the
        same values as ``sess.run(fetches, feed_dict)``; calling it again
        returns them again.  Called while stopped, it runs the op it stopped at.
        """
        self._check_open()
        resume, ops = self._stopped, self.plan.ops
        while True:
            entry = self._head()
            if entry is None:
                break
            i = entry[0] if self._loops else entry
            if i != resume and (
                i in self._break_ops or (self._break_types and ops[i].type in self._break_types)
            ):
                self._stopped = i
                return None
            resume = None
            self._step(entry)
        if not self.done:  # cannot happen on a DAG; guard against a corrupted state
            raise StepperError(f"No op is ready but {len(self.remaining())} have not run")
        self._finish()
        return self._run_of.unpack(self._sched.fetched())

    def value(self, tensor: Any) -> Any:
        """A copy of a computed tensor's latest value (a tensor or a name like ``"add:0"``)."""
        t = self._tensor(tensor)
        if t in self._run_of.fed:
            return host_value(self._run_of.fed[t])
        return host_value(self._latest_of(t)[0][t.value_index])

    def value_where(self, tensor: Any) -> Where:
        """The loop iterations ``value(tensor)`` was computed in (``()``: outside loops)."""
        return self._latest_of(self._tensor(tensor))[1]

    # ---------------------------------------------------------- breakpoints
    def break_at(self, target: Any) -> None:
        """Stop ``cont()`` before an op: an Operation, a tensor, an op name, or an op type.

        A string that is a registered op type (``"MatMul"``) breaks at every
        op of that type, even if an op has that name too; pass the Operation
        itself to break at that one op only.
        """
        if isinstance(target, str) and target in OPS:
            self._break_types.add(target)
        else:
            self._break_ops.add(self._op_index(target))

    def clear_breakpoints(self) -> None:
        """Remove every breakpoint."""
        self._break_ops.clear()
        self._break_types.clear()

    # ------------------------------------------------------------- internals
    def _head(self) -> Any:
        """The next ready entry; on a DAG, entries of ops run out of turn are dropped first."""
        if self._loops:
            return self._sched.head()
        ready, state = self._sched.ready, self._state
        while ready and state[ready[0]] != READY:
            ready.popleft()  # ran out of turn, or a duplicate
        return ready[0] if ready else None

    def _entry_of(self, i: int) -> Any:
        """Op ``i``'s first ready entry, or a StepperError saying why it has none."""
        if not self._loops:
            if self._state[i] != READY:
                raise StepperError(self._not_ready(i))
            return i
        self._sched.head()
        entry = next((e for e in self._sched.ready if e[0] == i and e[2] is not None), None)
        if entry is None:
            raise StepperError(self._not_ready(i))
        return entry

    def _run_to_in_loops(self, target: int, iteration: int | None) -> Operation:
        while True:
            entry = self._sched.head()
            if entry is None:
                ran = "in that iteration" if iteration is not None else "again"
                raise StepperError(
                    f"The run ended before {self.plan.ops[target].describe()} ran {ran} "
                    f"(loops ran {self.iterations} iterations); reset() starts again."
                )
            self._step(entry)
            if entry[0] == target and (iteration is None or self._inner(self._where) == iteration):
                return self.plan.ops[target]

    def _step(self, entry: Any) -> None:
        """Run one ready entry: its kernel, then the commit, then tell the observers."""
        got = self._run.call(entry)
        if got is None:  # a dead op: passed on
            return
        i, key, args, result = got
        try:
            self._run.commit(i, key, result)
            if not self._loops:
                self._mark(i)
        except BaseException:
            if not self._loops:
                self._repair(i, result)  # an interrupt mid-commit: finish it
            self._told.clear()
            raise
        if self._stopped == i:
            self._stopped = None
        if self._told:
            self._notify(i, args)
        if not self._loops and not self._sched.remaining:
            self._finish()

    def _before(self, op: Operation) -> None:
        for o in self.observers:
            o.before_op(op)

    def _record(self, op: Operation, outputs: Sequence[Any]) -> None:
        """The scheduler's after-op hook: what ran, where, and its outputs."""
        where = self._sched.where(self._sched.current) if self._loops else ()
        self._where = where
        self._latest[self._index[op]] = (outputs, where)  # type: ignore[assignment]
        self._executed.append(op)
        if self.observers:
            self._told.append((op, outputs))

    def _mark(self, i: int) -> None:
        """Op i's commit is done (a DAG): mark it DONE and what it released READY."""
        state, pending = self._state, self._sched.pending
        state[i] = DONE
        for c in self.plan.consumers[i]:
            if not pending[c]:
                state[c] = READY

    def _repair(self, i: int, result: Any) -> None:
        """An interrupt landed in op i's commit: redo it idempotently, the consumers' pending
        counts recounted from their producers' states."""
        plan, state, sched = self.plan, self._state, self._sched
        op, outputs = plan.ops[i], as_outputs(plan.outputs[i], result)
        for s, v in zip(plan.outputs[i], outputs):
            if s:  # not the DISCARD slot
                sched.vals[s] = v
        self._latest[i] = (outputs, ())
        if not self._executed or self._executed[-1] is not op:
            self._executed.append(op)
        state[i] = DONE
        sched.remaining = state.count(WAITING) + state.count(READY)
        for c in plan.consumers[i]:
            if state[c] == DONE:
                continue
            sched.pending[c] = sum(state[d] != DONE for d in plan.producers[c])
            if not sched.pending[c]:
                state[c] = READY
                if c not in sched.ready:
                    sched.ready.append(c)

    def _notify(self, i: int, args: list[Any]) -> None:
        """Tell the observers what the step ran (the op, and Merges it fired)."""
        told, stepped = self._told, self.plan.ops[i]
        for op, produced in told:
            for o in self.observers:
                if isinstance(o, NanGuard) and op is stepped:
                    o.check(op, produced, args)  # the guard can summarise the actual inputs
                else:
                    o.after_op(op, produced)
        told.clear()

    def _finish(self) -> None:
        if not self._finished:
            self._finished = True
            for o in self.observers:
                o.on_finish(self.plan, None)

    def _latest_of(self, t: Any) -> tuple[tuple[Any, ...], Where]:
        i = self._index.get(t.op)
        if i is None:
            raise StepperError(
                f"Tensor '{t.name}' is not computed by this run: no fetch of the Stepper needs "
                f"{t.op.describe()} (it was pruned). Step a Stepper that fetches it."
            )
        got = self._latest.get(i)
        if got is None:
            branch = " (if its branch is taken)" if self._loops else ""
            raise StepperError(
                f"Tensor '{t.name}' has not been computed yet: {self._not_ready(i)}. "
                f"run_to('{t.op.name}') computes it{branch}."
            )
        return got

    @staticmethod
    def _inner(where: Where) -> int | None:
        return where[-1][1] if where else None

    def _check_open(self) -> None:
        """Refuse a closed session; else hook the observers attached now (a view may attach one
        to a live Stepper) into the scheduler's before_op."""
        if self.session.closed:
            raise RuntimeError("Attempted to use a closed Session.")
        self._run.before = (self._before,) if self.observers else ()

    def _op_index(self, x: Any) -> int:
        op = self._element(x, allow_operation=True)
        if isinstance(op, Tensor):
            op = op.op
        i = self._index.get(op)
        if i is None:
            raise StepperError(
                f"{op.describe()} is not part of this Stepper's run: no fetch needs it, or the "
                "tensor it computes is fed."
            )
        return i

    def _tensor(self, x: Any) -> Tensor:
        """A tensor, its name, or an op (or op name) with one output, meaning that output."""
        element = self._element(x, allow_operation=True)
        if isinstance(element, Operation):
            if len(element.outputs) != 1:
                raise ValueError(
                    f"{element.describe()} has {len(element.outputs)} outputs: name one, "
                    f"as '{element.name}:0'"
                )
            return element.outputs[0]
        return element

    def _element(self, x: Any, allow_operation: bool) -> Tensor | Operation:
        if isinstance(x, Operation | Tensor):
            element = x
        else:  # a name, or a Variable (its own output, as sess.run fetches it)
            element = self.graph.as_graph_element(
                x, allow_tensor=True, allow_operation=allow_operation
            )
        if element.graph is not self.graph:
            raise ValueError(f"{element!r} is not an element of the Stepper's graph")
        return element

    def _not_ready(self, i: int) -> str:
        if self._loops:
            ran = self._sched.runs[i]
            return f"{self.plan.ops[i].describe()} is not ready in any iteration (it has run {ran} time(s))"
        op, state = self.plan.ops[i], self._state[i]
        if state == DONE:
            return f"{op.describe()} has already run"
        if state == READY:
            return f"{op.describe()} is ready but has not run"
        waits = [self.plan.ops[d].name for d in self.plan.producers[i] if self._state[d] != DONE]
        shown = ", ".join(f"'{w}'" for w in waits[:5]) + (" ..." if len(waits) > 5 else "")
        return f"{op.describe()} is not ready: it waits for {len(waits)} op(s) ({shown})"

    def __repr__(self) -> str:
        n, ready = len(self.plan.ops), self.ready()
        if self._loops:  # an op runs once per iteration: its runs are no share of the plan
            ran = sum(self._sched.runs)
            text = f"<Stepper {ran} op run{'' if ran == 1 else 's'} ({n} ops), {len(ready)} ready"
        else:
            text = f"<Stepper {len(self._executed)}/{n} ops run, {len(ready)} ready"
        if self._stopped is not None:
            text += f", stopped at {self.plan.ops[self._stopped].describe()}"
        elif ready:
            text += f", next: {ready[0].describe()}"
        elif self.done:
            text += ", done"
        return text + ">"


LoopStepper = Stepper  # the name a Stepper of a run with loops went by
