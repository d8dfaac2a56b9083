"""Stepper: run one ``Session.run`` signature an op at a time, on the calling thread.

``Stepper(sess, fetches, feed_dict)`` takes the plan ``sess.run`` would run
(``Session.prepare``: same pruning, same order, the session's variables and
random generators) and drives the executor's own scheduler state
(``flowbook.runtime.executor.Schedule``: pending counts, the ready queue, the
values) one op at a time on the calling thread, so whatever the scheduler
can run, the Stepper can step.  State:

- ``plan``: the Plan, built once (``plan.ops`` is a topological order)
- ``_sched``: the Schedule, keeping every value (nothing is freed, so every
  computed tensor stays inspectable with ``value()``).  Running an op out of
  turn (``step(op)``, ``run_to``) leaves its entry in ``_sched.ready``;
  entries whose op is no longer READY are dropped when they reach the front
- ``_state[i]``: WAITING, READY or DONE, per op
- ``_outputs[i]``: op i's outputs, also those no op of the plan reads
- ``_executed``: the ops run so far, in order

The loop (``_run``): gather op i's input values, call its bound kernel, and
only once it has returned *commit*: ``Schedule.finish`` (store the outputs,
release its consumers), then mark i DONE and the released consumers READY.  A kernel error (raised as ``executor.op_error``, naming the op and
its cell and line) or a KeyboardInterrupt inside the kernel leaves everything
as it was: the op stays READY and the stepper and session stay usable.  An
interrupt landing in the commit itself is repaired by redoing the commit
idempotently (pending counts recomputed from the ops' dependencies).  One
``step()`` is O(inputs + consumers) of that op: a few microseconds whatever
the graph's size.

``cont()`` runs ready ops until none is left or the next one has a breakpoint
(``break_at`` an op, a name or an op type); breakpoints stop *before* an op
runs, so its inputs can be inspected.  ``run_to`` and ``step`` ignore them.

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
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from flowbook.debug.nan_guard import NanGuard
from flowbook.framework.registry import OPS
from flowbook.framework.tensor import Operation, Tensor
from flowbook.runtime.executor import Schedule
from flowbook.runtime.observers import Observer
from flowbook.runtime.op_errors import op_error
from flowbook.runtime.plan import as_outputs
from flowbook.runtime.session import host_value

WAITING, READY, DONE = 0, 1, 2  # an op's state in the stepper
# the Stepper for plans with branches and loops (flowbook.debug.loop_stepper registers it)
_LOOP_STEPPER: list[type] = []


class StepperError(RuntimeError):
    """A stepping request that cannot be honoured: an op not ready, a value not computed..."""


class Stepper:
    """Run the plan of ``sess.run(fetches, feed_dict)`` one op at a time.  See the module doc.

    ``observers`` (executor Observers) see ``on_start``, ``before_op``,
    ``after_op`` and ``on_finish``; with ``ConfigProto(check_numerics=True)``
    a NanGuard is added.  The NaN guard sees the op's input values here.

    A run with branches or loops gets a :class:`flowbook.debug.loop_stepper.LoopStepper`
    (the frame scheduler's state, stepped): same methods, and iterations.
    """

    def __new__(
        cls,
        sess: Any,
        fetches: Any,
        feed_dict: dict | None = None,
        observers: Sequence[Observer] = (),
    ) -> Stepper:
        if cls is Stepper and _LOOP_STEPPER and sess.prepare(fetches, feed_dict).plan.control_flow:
            cls = _LOOP_STEPPER[0]
        return super().__new__(cls)

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
        plan = self.plan
        self._sched = Schedule(plan, self._run_of.feeds, keep_values=True)
        self._state = [WAITING] * len(plan.ops)  # op -> WAITING / READY / DONE
        for i in plan.ready:
            self._state[i] = READY
        self._outputs: list[tuple | None] = [None] * len(plan.ops)  # op -> its outputs
        self._executed: list[Operation] = []  # ops run, in order
        self._stopped: int | None = None  # the op a breakpoint stopped cont() before
        for o in self.observers:
            o.on_start(plan)

    @property
    def done(self) -> bool:
        """Whether every op of the plan has run."""
        return len(self._executed) == len(self.plan.ops)

    @property
    def executed(self) -> list[Operation]:
        """The ops run so far, in the order they ran."""
        return list(self._executed)

    @property
    def stopped_at(self) -> Operation | None:
        """The op a breakpoint stopped ``cont()`` before (not yet run), or None."""
        return None if self._stopped is None else self.plan.ops[self._stopped]

    def ready(self) -> list[Operation]:
        """The ops whose inputs are all computed, in the order ``step()`` takes them."""
        ops, state = self.plan.ops, self._state
        return [ops[i] for i in self._sched.ready if state[i] == READY]

    def remaining(self) -> list[Operation]:
        """The ops not yet run, in the plan's order."""
        return [op for op, st in zip(self.plan.ops, self._state) if st != DONE]

    # -------------------------------------------------------------- running
    def step(self, op: Any = None) -> Operation:
        """Run the next ready op (FIFO), or ``op`` (an op, tensor or name) if it is ready."""
        self._check_open()
        if op is None:
            i = self._head()
            if i is None:
                raise StepperError(
                    f"All {len(self.plan.ops)} ops have run: cont() returns the fetches, "
                    "reset() starts again."
                )
        else:
            i = self._op_index(op)
            if self._state[i] != READY:
                raise StepperError(self._not_ready(i))
        with np.errstate(all="ignore"):  # TF semantics: 1/0 is inf, silently
            self._run(i)
        return self.plan.ops[i]

    def run_to(self, op: Any) -> Operation:
        """Run exactly the not-yet-run ancestors of ``op`` in the plan, then ``op`` itself."""
        self._check_open()
        target = self._op_index(op)
        state, waits = self._state, self.plan.producers
        need: set[int] = set()
        stack = [target]
        while stack:
            j = stack.pop()
            if j not in need and state[j] != DONE:
                need.add(j)
                stack.extend(waits[j])
        with np.errstate(all="ignore"):
            for j in sorted(need):  # plan order is topological: each finds its inputs done
                self._run(j)
        return self.plan.ops[target]

    def cont(self) -> Any:
        """Run to the end, or until the next op has a breakpoint (then return None).

        At the end, returns the fetches in the same structure and with the
        same values as ``sess.run(fetches, feed_dict)``; calling it again
        returns them again.  Called while stopped, it runs the op it stopped at.
        """
        self._check_open()
        resume, ops = self._stopped, self.plan.ops
        with np.errstate(all="ignore"):
            while True:
                i = self._head()
                if i is None:
                    break
                if i != resume and (
                    i in self._break_ops or (self._break_types and ops[i].type in self._break_types)
                ):
                    self._stopped = i
                    return None
                resume = None
                self._run(i)
        if not self.done:  # cannot happen on a DAG; guard against a corrupted state
            raise StepperError(f"No op is ready but {len(self.remaining())} have not run")
        return self._fetched()

    def value(self, tensor: Any) -> Any:
        """A copy of a computed tensor's value (a tensor or a name like ``"add:0"``)."""
        t = self._tensor(tensor)
        if t in self._run_of.fed:
            return host_value(self._run_of.fed[t])
        i = self._index.get(t.op)
        if i is None:
            raise StepperError(
                f"Tensor '{t.name}' is not computed by this run: no fetch of the Stepper needs "
                f"{t.op.describe()} (it was pruned). Step a Stepper that fetches it."
            )
        outputs = self._outputs[i]
        if outputs is None:
            raise StepperError(
                f"Tensor '{t.name}' has not been computed yet: {self._not_ready(i)}. "
                f"run_to('{t.op.name}') computes it."
            )
        return host_value(outputs[t.value_index])

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
    def _head(self) -> int | None:
        ready, state = self._sched.ready, self._state
        while ready and state[ready[0]] != READY:
            ready.popleft()  # ran out of turn, or a duplicate
        return ready[0] if ready else None

    def _run(self, i: int) -> None:
        op, args = self.plan.ops[i], self._sched.args(i)
        observers = self.observers
        for o in observers:
            o.before_op(op)
        try:
            result = self.plan.fns[i](*args)
        except Exception as e:
            raise op_error(op, e) from e
        try:
            self._commit(i, result)
        except BaseException:
            self._commit(i, result, repair=True)  # an interrupt mid-commit: finish it
            raise
        if observers:
            self._notify(i, args)

    def _commit(self, i: int, result: Any, repair: bool = False) -> None:
        """Op i ran: finish it in the Schedule, mark it DONE and what it released READY.

        ``repair``: an interrupt landed in a commit; redo it idempotently, the
        consumers' pending counts recounted from their producers' states.
        """
        plan, state, sched = self.plan, self._state, self._sched
        op = plan.ops[i]
        self._outputs[i] = as_outputs(plan.outputs[i], result)
        if not repair:
            sched.finish(i, result)
            state[i] = DONE
            self._executed.append(op)
            for c in plan.consumers[i]:
                if not sched.pending[c]:
                    state[c] = READY
        else:
            for s, v in zip(plan.outputs[i], self._outputs[i]):
                if s:  # not the DISCARD slot
                    sched.vals[s] = v
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
        if self._stopped == i:
            self._stopped = None

    def _notify(self, i: int, args: list[Any]) -> None:
        op, produced = self.plan.ops[i], self._outputs[i] or ()
        for o in self.observers:
            if isinstance(o, NanGuard):
                o.check(op, produced, args)  # the guard can summarise the actual inputs
            else:
                o.after_op(op, produced)
        if self.done:
            for o in self.observers:
                o.on_finish(self.plan, None)

    def _fetched(self) -> Any:
        return self._run_of.unpack(self._sched.fetched())

    def _check_open(self) -> None:
        if self.session.closed:
            raise RuntimeError("Attempted to use a closed Session.")

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
        text = f"<Stepper {len(self._executed)}/{n} ops run, {len(ready)} ready"
        if self._stopped is not None:
            text += f", stopped at {self.plan.ops[self._stopped].describe()}"
        elif ready:
            text += f", next: {ready[0].describe()}"
        elif self.done:
            text += ", done"
        return text + ">"
