"""The memory plan (whitepaper §5.2): values freed at their last use, dead buffers reused.

**Freeing.**  A :class:`flowbook.runtime.plan.Plan` counts each slot's reads
(``uses``) and, in its static order, the slots each op reads last
(``frees``).  Every executor drops a value right after its last reader ran:
the straight line reuses the local's name (or sets it to None), the serial
reference clears ``frees[i]``, the scheduler counts reads down.  Fed
values, fetched values, folded constants and variables are never dropped by
the run (``Plan.uses`` counts one extra read for them).  So a run holds the
live set of its values, not their sum: :func:`live_bytes` works that peak
out from the sizes of the values, and the profiler reports it.

**Reusing.**  An op whose kernel declares ``takes_out`` (``flowbook.framework.registry``:
the element-wise ufunc rows, ``Relu``, ``BiasAdd``) may write its result into
the buffer of an input that dies there, with ``out=``, instead of allocating
a new array.  :func:`buffer_plan` decides, for one plan and the shapes of its
values under one feed-shape signature (the optimiser's, ``flowbook.runtime.optimize.optimizer``),
per op the input whose buffer its output may take (``-1``: none).  At plan
time it asks that the op run on the CPU, that the input is an array (not a
variable, whose value the op reads when it runs), that its slot is not
fed, fetched or a folded constant, that it has exactly the output's shape and dtype
(known for this signature, rank at least 1, at least ``MIN_REUSE_BYTES``),
that the op is the input's last reader in the plan's static order
(``frees``), and, for a ufunc, that its loop gives that dtype.  The straight
line runs that order; the scheduler writes into the buffer only
when no other read of it is still to come (``Flat.uses`` in ``flowbook.runtime.scheduler``), whatever
order the ops ran in.

**Aliasing** is checked where it can be known for sure: when the op runs.
:func:`owned` holds the buffer reusable only if the value owns its memory
(``base is None``: it is no view of another array) and nothing but the
executor holds it (its reference count).  A view of it (a ``Reshape`` or a
slice that returned one) refers to it, and so do a variable that stored it,
a constant's kernel, the caller's feed list, an observer keeping it, a queue:
each adds a reference, and then the op allocates as usual.  So fed arrays,
variables' buffers, constants and fetched values are never written, and a
value some view still reads is never overwritten.  The written results are
bit-identical (the same ufunc loop on the same inputs; numpy makes a
ufunc whose output overlaps an input behave as if it did not).

    >>> import numpy as np
    >>> a = np.ones(3)
    >>> owned(a, 1), owned(a[1:], 1)   # one local holds it; a view owns no memory
    (True, False)
    >>> b = a
    >>> owned(a, 1)                    # a second name holds it
    False
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from flowbook.framework.devices import CPU
from flowbook.runtime.placement import CopyOp
from flowbook.runtime.plan import DISCARD, Plan, carries_variable
from flowbook.runtime.step_stats import tensor_facts

MIN_REUSE_BYTES = 16 * 1024  # smaller buffers: the check costs more than the allocation saves

__all__ = ["MIN_REUSE_BYTES", "ONE_LOCAL", "buffer_plan", "live_bytes", "op_memory", "owned"]

_getrefcount = sys.getrefcount
_ndarray = np.ndarray


def owned(v: Any, held: int) -> bool:
    """Whether ``v`` is a numpy array owning its memory and held by ``held`` references only.

    ``held`` counts the references the caller knows of (its local name, the
    executor's value list, the argument list it built); anything more (a
    view, a variable, a constant, an observer, the feed list) makes it False.
    """
    return type(v) is _ndarray and v.base is None and _getrefcount(v) - _CALL == held


def _count(v: Any) -> int:  # the frame ``owned`` is: one parameter, then getrefcount(v)
    return _getrefcount(v)


def _calibrate() -> int:
    """References a call like ``owned(v, ...)`` adds itself (the parameter, getrefcount's
    argument): measured once, so the count is right on any CPython version."""
    a = np.empty(1)  # held by this one local name
    return _count(a) - 1


_CALL = _calibrate()


def _one_local() -> int:
    """``getrefcount`` of an array that one local name alone holds, read in the holder's own
    frame: the straight line checks ``owned`` inline against it (no call per check)."""
    a = np.empty(1)
    return _getrefcount(a)


ONE_LOCAL = _one_local()


def buffer_plan(
    plan: Plan, shapes: Mapping[int, tuple[int, ...]], min_bytes: int | None = None
) -> tuple[int, ...] | None:
    """Per op of ``plan``, the input whose buffer its output may take (-1: none); None if no op.

    ``shapes`` maps slots to the actual shapes of their values under one
    feed-shape signature (slots missing are unknown: no reuse there).  See
    the module docstring for the rules.
    """
    if plan.control_flow or plan.blocking:
        return None
    min_bytes = MIN_REUSE_BYTES if min_bytes is None else min_bytes
    kept = {s for s in plan.fetch_slots if s is not None} | set(plan.feed_slots) | {DISCARD}
    kept.update(s for s, _ in plan.constants)
    produced = {s for outs in plan.outputs for s in outs}
    found = [-1] * len(plan.ops)
    for i, op in enumerate(plan.ops):
        if type(op) is CopyOp or plan.devices[i] is not CPU or not op._opdef.takes_out:
            continue
        if len(op.outputs) != 1:
            continue
        out_shape = shapes.get(plan.outputs[i][0]) if plan.outputs[i][0] != DISCARD else None
        if out_shape is None:
            out_shape = _static(op.outputs[0])
        dtype = op.outputs[0].dtype.np
        if out_shape is None or not out_shape or dtype is None or dtype.kind not in "biufc":
            continue
        if int(np.prod(out_shape)) * dtype.itemsize < min_bytes or not _same_loop(plan, i, op):
            continue
        for k, (t, s) in enumerate(zip(op.inputs, plan.inputs[i])):
            if s in kept or s not in produced or s not in plan.frees[i] or carries_variable(t):
                continue
            if t.dtype.np != dtype:
                continue
            if shapes.get(s, _static(t)) == out_shape:
                found[i] = k
                break
    return tuple(found) if any(k >= 0 for k in found) else None


def _static(t: Any) -> tuple[int, ...] | None:
    shape = t._shape
    return None if shape is None or None in shape else tuple(shape)


def _same_loop(plan: Plan, i: int, op: Any) -> bool:
    """Whether the op's kernel gives the graph's output dtype for inputs of the graph's dtypes
    (a ufunc is asked on one-element arrays; other kernels that take ``out`` keep the dtype)."""
    fn = plan.fns[i]
    if not isinstance(fn, np.ufunc):
        return True
    try:
        probe = fn(*(np.ones(1, t.dtype.np) for t in op.inputs))
    except Exception:
        return False
    return getattr(probe, "dtype", None) == op.outputs[0].dtype.np


def live_bytes(
    plan: Plan, order: list[int], out_bytes: list[list[int]]
) -> tuple[int, list[int], list[int]]:
    """The run's peak of live bytes, and per op the bytes live while it ran and after it.

    ``order``: the ops as they ran; ``out_bytes[i]``: the bytes of op i's
    outputs.  A value is live from its op's run to its last reader's (fed
    values, variables and constants are not the run's to count; fetched
    values stay to the end).  Ops that ran on several threads at once are
    counted as the order lists them.

    >>> import flowbook as fb
    >>> from flowbook.runtime.plan import build_plan
    >>> with fb.Graph().as_default() as g:
    ...     x = fb.placeholder(fb.float32); y = (x + 1.0) * 2.0
    ...     plan = build_plan(g, [y], [], [x], bind=lambda op: None)
    >>> [op.name for op in plan.ops]
    ['add/y', 'add', 'mul/y', 'mul']
    >>> live_bytes(plan, [0, 1, 2, 3], [[4], [400], [4], [400]])
    (804, [4, 404, 404, 804], [4, 400, 404, 400])
    """
    left = list(plan.uses)
    live, peak = 0, 0
    during = [0] * len(plan.ops)
    after = [0] * len(plan.ops)
    size: dict[int, int] = {}
    for i in order:
        made = 0
        for s, n in zip(plan.outputs[i], out_bytes[i]):
            made += n
            if s != DISCARD:
                size[s] = n
        live += made
        during[i] = live
        peak = max(peak, live)
        live -= sum(n for s, n in zip(plan.outputs[i], out_bytes[i]) if s == DISCARD)
        for s in plan.inputs[i]:
            left[s] -= 1
            if not left[s]:
                live -= size.pop(s, 0)
        after[i] = live
    return peak, during, after


def op_memory(
    plan: Plan, order: list[int], outputs_of: Callable[[Any], list[tuple[Any, Any]]]
) -> tuple[int, dict[Any, tuple[int, int, int]]]:
    """A run's peak live bytes, and op -> (output bytes, bytes live while it ran, after).

    ``outputs_of(op)``: the recorded (dtype, shape) of each output ((None, None):
    as the graph says).  A variable is not the run's to count.
    """
    out_bytes = []
    for op in plan.ops:
        outs = outputs_of(op)
        if op.outputs and carries_variable(op.outputs[0]):
            out_bytes.append([0] * len(outs))
        else:
            out_bytes.append([tensor_facts(op, k, *o)[2] for k, o in enumerate(outs)])
    peak, during, after = live_bytes(plan, order, out_bytes)
    return peak, {plan.ops[i]: (sum(out_bytes[i]), during[i], after[i]) for i in order}
