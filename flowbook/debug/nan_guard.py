"""NanGuard: stop a run at the first op whose output holds NaN or Inf.

An executor Observer.  ``after_op`` runs ``xp.isfinite(out).all()`` on every
float (or complex) output; the first op that fails raises
``InvalidArgumentError`` (``.op`` is that op) naming the op, its type, the
cell and line that created it, a summary of the bad output (shape, dtype,
NaN/Inf counts, finite min/max/mean) and of each input.  Ops run after all
their inputs, so the op that raises is the first one, in dependency order,
to *produce* a non-finite value: a NaN made by ``log(-1)`` stops the run at
the Log, before any op downstream of it.

Inputs are summarised from values the guard saw come out of earlier ops: it
mirrors the executor's bookkeeping (``on_start`` gives the plan), holding a
reference to a value until its last reader has run, so it keeps nothing alive
that the executor does not.  Fed values never pass through an op, so they are
named "fed" without a summary.  ``last_bad_op`` (on the instance and on the
class, for the widget to highlight) is the last op that tripped a guard.  One
guard watches one run at a time.

Turn it on per run with ``options=tf.RunOptions(check_numerics=True)``, for a
session with ``ConfigProto(check_numerics=True)``, or everywhere with
``with fb.observe(NanGuard()):``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s, fb.observe(NanGuard()):
    ...     s.run(fb.sqrt(fb.constant([-1.0, 4.0]), name="root"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    flowbook.framework.errors.InvalidArgumentError: Sqrt 'root' (...) produced NaN: ...
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from flowbook.framework import errors
from flowbook.framework.devices import array_module, to_host
from flowbook.framework.tensor import Operation
from flowbook.runtime.observers import Observer, observer_factory
from flowbook.runtime.plan import DISCARD, Plan


class NanGuard(Observer):
    """Raise InvalidArgumentError at the first op producing NaN or Inf.  See the module doc."""

    last_bad_op: Operation | None = None  # the class's copy: the last bad op of any guard

    def __init__(self) -> None:
        self.last_bad_op = None  # the op that tripped this guard, if any
        self._plan: Plan | None = None  # the plan being run, from on_start
        self._index: dict[Operation, int] = {}  # op -> its index in the plan
        self._vals: list[Any] = []  # slot -> value seen, kept until its last reader ran
        self._uses: list[int] = []  # slot -> reads still to come (the executor's count)
        self._where: tuple[tuple[str, int], ...] = ()  # the loop iterations ops run in now

    def on_start(self, plan: Plan) -> None:
        self._plan = plan
        self._index = {op: i for i, op in enumerate(plan.ops)}
        self._vals = [None] * plan.n_slots
        # in loops a slot is read once per iteration: keep its latest value instead
        self._uses = [1 << 62] * plan.n_slots if plan.control_flow else list(plan.uses)
        self._where = ()

    def on_iteration(self, where: tuple[tuple[str, int], ...]) -> None:
        self._where = where

    def after_op(self, op: Operation, outputs: Sequence[Any]) -> None:
        i = self._index.get(op) if self._plan is not None else None
        bad = [k for k, v in enumerate(outputs) if not _finite(op, v)]
        if bad:
            inputs = self._input_values(i) if i is not None else None
            self._trip(op, outputs, bad, inputs)
        if i is None:
            return
        plan, vals, uses = self._plan, self._vals, self._uses
        for s, v in zip(plan.outputs[i], outputs):  # type: ignore[union-attr]
            if s != DISCARD:
                vals[s] = v
        for s in plan.inputs[i]:  # type: ignore[union-attr]
            uses[s] -= 1
            if uses[s] <= 0:
                vals[s] = None

    def on_finish(self, plan: Plan, error: BaseException | None) -> None:
        self._vals = []  # release what the run kept

    def check(self, op: Operation, outputs: Sequence[Any], inputs: Sequence[Any]) -> None:
        """Check one op's outputs, with its input values at hand (used by the Stepper)."""
        bad = [k for k, v in enumerate(outputs) if not _finite(op, v)]
        if bad:
            self._trip(op, outputs, bad, list(inputs))

    # ---------------------------------------------------------------- report
    def _input_values(self, i: int) -> list[Any]:
        plan = self._plan
        fed = set(plan.feed_slots)  # type: ignore[union-attr]
        return [_FED if s in fed else self._vals[s] for s in plan.inputs[i]]  # type: ignore[union-attr]

    def _trip(
        self, op: Operation, outputs: Sequence[Any], bad: list[int], inputs: list[Any] | None
    ) -> None:
        self.last_bad_op = op
        NanGuard.last_bad_op = op
        nan = inf = 0
        for k in bad:
            a = _host(outputs[k])
            nan += int(np.isnan(a).sum())
            inf += int(np.isinf(a).sum())
        what = " and ".join(w for w, n in (("NaN", nan), ("Inf", inf)) if n)
        loops = "".join(f", iteration {k} of loop '{name}'" for name, k in self._where)
        lines = [
            f"{op.describe()} produced {what}{loops}: the first op of this run to output NaN or "
            f"Inf (Tensor had {what} values)."
        ]
        for k, v in enumerate(outputs):
            mark = "  <- bad" if k in bad else ""
            lines.append(f"  output {op.outputs[k].name}: {describe_value(v)}{mark}")
        for k, t in enumerate(op.inputs):
            if inputs is None:
                text = "(value not seen)"
            elif inputs[k] is _FED:
                text = "fed (value not seen by the guard)"
            else:
                text = describe_value(inputs[k])
            lines.append(f"  input {t.name} from {t.op.type} '{t.op.name}': {text}")
        raise errors.InvalidArgumentError(None, op, "\n".join(lines))


_FED = object()  # marks an input whose value was fed


def _host(value: Any) -> np.ndarray:
    if hasattr(value, "read") and hasattr(value, "lock"):  # a variable's VarState
        value = value.value
    return np.asarray(to_host(value))


def _finite(op: Operation, value: Any) -> bool:
    dtype = getattr(value, "dtype", None)
    if dtype is None or getattr(dtype, "kind", "") not in "fc":
        return True
    xp = array_module(value)
    return bool(xp.isfinite(value).all())


def describe_value(value: Any) -> str:
    """``float32[2, 3] nan=1 inf=0 min=-1 max=2 mean=0.5`` (finite elements' stats).

    >>> describe_value(np.array([1.0, np.nan, 3.0]))
    'float64[3] nan=1 inf=0 min=1 max=3 mean=2'
    >>> describe_value(np.int32(4))
    'int32[] min=4 max=4 mean=4'
    """
    if value is None:
        return "(no value)"
    try:
        a = _host(value)
    except Exception as e:  # an uninitialised variable...
        return f"(unreadable: {e})"
    head = f"{a.dtype}[{', '.join(str(d) for d in a.shape)}]"
    if a.dtype.kind not in "biufc":
        return head
    if a.dtype.kind in "fc":
        finite = np.isfinite(a)
        nan, inf = int(np.isnan(a).sum()), int(np.isinf(a).sum())
        head += f" nan={nan} inf={inf}"
        a = a[finite]
    if a.size == 0:
        return head + " (no finite values)" if "nan=" in head else head + " (empty)"
    if a.dtype.kind == "c":
        return head + f" mean={a.mean():.4g}"
    a = a.astype(np.float64)
    return head + f" min={a.min():.4g} max={a.max():.4g} mean={a.mean():.4g}"


@observer_factory
def _asked_for(options: Any, config: Any, run_metadata: Any) -> NanGuard | None:
    """A NanGuard for a run with ``RunOptions(check_numerics=True)`` or a session whose
    ``ConfigProto(check_numerics=True)``."""
    if (options is not None and options.check_numerics) or config.check_numerics:
        return NanGuard()
    return None
