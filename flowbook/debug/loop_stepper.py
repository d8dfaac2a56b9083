"""LoopStepper: the Stepper for runs with branches and loops, iteration by iteration.

``Stepper(sess, fetches)`` on a plan with ``cond``/``while_loop`` ops gives a
:class:`LoopStepper`: the frame scheduler's own state
(``flowbook.runtime.frames.FrameRun``: tagged values, frames, the FIFO ready
queue) stepped one ready op at a time on the calling thread, every loop
interpreted, so the steps are the ops ``sess.run`` would run, in an order it
allows.  What differs from stepping a plan without loops:

- an op inside a loop runs once per iteration: ``step()`` runs the next
  ready *(op, iteration)*; ``where`` says which loop iterations the last op
  ran in (``(("rnn/while/while_context", 3),)``), ``iterations`` how many
  times each loop's body has run so far;
- ``run_to(op, iteration=k)`` runs ready ops in order until ``op`` has run
  in iteration k of its innermost loop (without ``iteration``: its next
  run); other ready ops on the way run too (a loop has no fixed ancestor
  set to run alone);
- ``value(t)`` is ``t``'s latest value, of the iteration ``value_where(t)``
  says; ops on an untaken branch never run (``value`` says so);
- Merges run as their first live input arrives, as part of the step that
  delivered it; ``executed`` keeps the last ``EXECUTED_KEPT`` ops run.

Breakpoints stop ``cont()`` before an op in any iteration.  A kernel error
names the op, its cell and line, and the iteration, and leaves the op
ready; the NaN guard (``check_numerics``) names the iteration too.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     i = fb.while_loop(lambda i: i < 3, lambda i: i + 1, [fb.constant(0)], name="loop")
    ...     st = fb.debug.Stepper(s, i)
    ...     add = st.run_to("loop/add", iteration=1)
    ...     int(st.value("loop/add")), st.where, int(st.cont())
    (2, (('loop/while_context', 1),), 3)
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any

import numpy as np

from flowbook.debug.stepper import _LOOP_STEPPER, Stepper, StepperError
from flowbook.framework.tensor import Operation
from flowbook.runtime.frame_layout import Layout
from flowbook.runtime.frames import FrameRun
from flowbook.runtime.observers import hooks_of
from flowbook.runtime.session import host_value

EXECUTED_KEPT = 100_000  # ops ``executed`` remembers (a long loop runs millions)

Where = tuple[tuple[str, int], ...]


class LoopStepper(Stepper):
    """Step a run with branches and loops.  See the module docstring."""

    # ------------------------------------------------------------- progress
    def reset(self) -> None:
        """Start again with the same feeds (variables are not rolled back; see Stepper.reset)."""
        plan = self.plan
        if getattr(self, "_layout", None) is None:  # made once: reset keeps it
            self._layout = Layout(plan)
        obs = self.observers
        self._frun = FrameRun(
            plan,
            self._layout,
            self._run_of.feeds,
            None,
            "fifo",
            hooks_of(obs, "before_op"),
            [self._record, *hooks_of(obs, "after_op")],
            None,
            (),
            True,
            False,
            None,
            hooks_of(obs, "on_loop"),
        )
        self._iteration_hooks = hooks_of(obs, "on_iteration")
        self._executed: deque[Operation] = deque(maxlen=EXECUTED_KEPT)  # type: ignore[assignment]
        self._latest: dict[int, tuple[tuple[Any, ...], Where]] = {}  # op -> (outputs, where)
        self._where: Where = ()  # where the last op ran
        self._told: Where = ()  # the last where the on_iteration hooks were given
        self._stopped: int | None = None
        self._finished = False
        for o in obs:
            o.on_start(plan)

    @property
    def done(self) -> bool:
        """Whether the run is over: no op is ready in any iteration."""
        return self._frun.head() is None

    @property
    def where(self) -> Where:
        """The loop iterations the last op ran in: ``(frame_name, iteration)`` pairs, outer first."""
        return self._where

    @property
    def iterations(self) -> dict[str, int]:
        """Per loop frame name: how many times its body has run so far."""
        return self._frun.iterations()

    def ready(self) -> list[Operation]:
        """The ops ready to run (in their iterations), in the order ``step()`` takes them."""
        self._frun.head()
        return [self.plan.ops[i] for i, _, args in self._frun.ready if args is not None]

    def remaining(self) -> list[Operation]:
        """The ops that have not run yet in any iteration, in the plan's order."""
        runs = self._frun.runs
        assert runs is not None
        return [op for op, n in zip(self.plan.ops, runs) if not n]

    # -------------------------------------------------------------- running
    def step(self, op: Any = None) -> Operation:
        """Run the next ready op (FIFO), or ``op``'s first ready run if it has one."""
        self._check_open()
        if op is None:
            entry = self._frun.head()
            if entry is None:
                raise StepperError(
                    "The run is over: cont() returns the fetches, reset() starts again."
                )
        else:
            i = self._op_index(op)
            self._frun.head()
            entry = next((e for e in self._frun.ready if e[0] == i and e[2] is not None), None)
            if entry is None:
                raise StepperError(self._not_ready(i))
        self._run_entry(entry)
        return self.plan.ops[entry[0]]

    def run_to(self, op: Any, iteration: int | None = None) -> Operation:
        """Run ready ops in order until ``op`` runs (in ``iteration`` of its innermost loop)."""
        self._check_open()
        target = self._op_index(op)
        while True:
            entry = self._frun.head()
            if entry is None:
                ran = "in that iteration" if iteration is not None else "again"
                raise StepperError(
                    f"The run ended before {self.plan.ops[target].describe()} ran {ran} "
                    f"(loops ran {self.iterations} iterations); reset() starts again."
                )
            self._run_entry(entry)
            if entry[0] == target and (iteration is None or self._inner(self._where) == iteration):
                return self.plan.ops[target]

    def cont(self) -> Any:
        """Run to the end, or until the next op has a breakpoint (then return None)."""
        self._check_open()
        resume, ops = self._stopped, self.plan.ops
        while True:
            entry = self._frun.head()
            if entry is None:
                break
            i = entry[0]
            if i != resume and (
                i in self._break_ops or (self._break_types and ops[i].type in self._break_types)
            ):
                self._stopped = i
                return None
            resume = None
            self._run_entry(entry)
        if not self._finished:
            self._finished = True
            for o in self.observers:
                o.on_finish(self.plan, None)
        return self._run_of.unpack(self._frun._results())

    def value(self, tensor: Any) -> Any:
        """A copy of a tensor's latest computed value (of the iteration ``value_where`` gives)."""
        t = self._tensor(tensor)
        if t in self._run_of.fed:
            return host_value(self._run_of.fed[t])
        return host_value(self._latest_of(t)[0][t.value_index])

    def value_where(self, tensor: Any) -> Where:
        """The loop iterations ``value(tensor)`` was computed in (``()``: outside loops)."""
        return self._latest_of(self._tensor(tensor))[1]

    # ------------------------------------------------------------- internals
    def _latest_of(self, t: Any) -> tuple[tuple[Any, ...], Where]:
        i = self._index.get(t.op)
        if i is None:
            raise StepperError(
                f"Tensor '{t.name}' is not computed by this run: no fetch of the Stepper needs "
                f"{t.op.describe()} (it was pruned). Step a Stepper that fetches it."
            )
        got = self._latest.get(i)
        if got is None:
            raise StepperError(
                f"Tensor '{t.name}' has not been computed yet: {self._not_ready(i)}. "
                f"run_to('{t.op.name}') computes it (if its branch is taken)."
            )
        return got

    def _run_entry(self, entry: tuple[int, Any, list[Any]]) -> None:
        where = self._frun.where(entry[1])
        if where != self._told:  # the observers hear of each change of iteration
            self._told = where
            for hook in self._iteration_hooks:
                hook(where)
        with np.errstate(all="ignore"):  # TF semantics: 1/0 is inf, silently
            self._frun.run_one(entry)
        if self._stopped == entry[0]:
            self._stopped = None

    def _record(self, op: Operation, outputs: Sequence[Any]) -> None:
        """The FrameRun's first after-op hook: what ran, where, and its outputs."""
        where = self._frun.where(self._frun.current)
        self._where = where
        self._executed.append(op)
        self._latest[self._index[op]] = (tuple(outputs), where)

    @staticmethod
    def _inner(where: Where) -> int | None:
        return where[-1][1] if where else None

    def _not_ready(self, i: int) -> str:
        op = self.plan.ops[i]
        runs = self._frun.runs
        ran = runs[i] if runs is not None else 0
        return f"{op.describe()} is not ready in any iteration (it has run {ran} time(s))"


_LOOP_STEPPER.append(LoopStepper)
