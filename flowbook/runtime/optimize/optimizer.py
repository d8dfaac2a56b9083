"""The graph optimiser: a pruned plan rewritten for one feed-shape signature.

A :class:`flowbook.runtime.plan.Plan` runs every op the fetches need, as the
graph says them.  Much of a training step's backward pass is arithmetic on
shapes (``Shape`` -> ``BroadcastGradientArgs`` -> ``Sum`` axes -> ``Reshape``
target) that the fed shapes decide, and graphs repeat themselves (two
``Shape`` ops of one tensor).  Given the plan and the shapes of the fed values
(:func:`flowbook.runtime.codegen.compile.feed_shapes`), the passes below decide what need
not run, and :func:`flowbook.runtime.optimize.layout.relayout` lays out a new Plan
without it: the same kinds of fields, a subset of the written ops (each still
the graph's ``Operation``, bound to the same kernel), inputs rewired, and the
folded values in ``plan.constants`` (slots filled before the run starts).

The passes, one function each, share one :class:`Rewrite`:

- :func:`fold_constants`: an op whose inputs are all known is run once, now,
  with its own kernel, and its outputs become constants.  Known are the
  outputs of ``Const`` and of folded ops, and for ``Shape``, ``Size`` and
  ``Rank`` (the inputs a kernel reads only the shape of, ``meta_inputs``) and
  for ``ZerosLike``/``OnesLike`` the shape of a tensor that the graph or the
  fed shapes determine
  (:func:`flowbook.runtime.codegen.compile.shapes_given_feeds`).  Never folded: an op that
  is stateful (variables and their updates, random ops, queues, ``Print``,
  ``Assert``...), holds session state, may wait, reads a variable's value,
  has control inputs, is placed off the CPU, or whose output is fetched (the
  caller gets a fresh value, as without the optimiser); nor a result that is
  not a numpy array, holds NaN or Inf (the NaN guard sees it made), or passes
  ``max_folded_constant_in_bytes``.  A kernel that raises is left to raise at
  run time, naming its op.  Fed tensors are never outputs of plan ops.
- :func:`remove_identities`: ``Identity`` and ``StopGradient`` (their output
  is their input), ``NoOp``, a ``Reshape`` to the shape its input already
  has, and a ``Sum`` over no axes (a copy of its input, as in TensorFlow).  Their readers read the input instead, and what waited for them waits
  for what they waited for.  A variable's snapshot ``W/read`` is removed too:
  it passes the variable itself on, and its readers read the variable when
  *they* run (``flowbook.runtime.plan``), which reading ``W`` directly does alike;
  an ``Identity`` of a variable's value (``tf.identity(W)``) reads it and stays.
- :func:`merge_common`: common subexpression elimination.  Ops of the same
  type on the same inputs (after the passes above), attrs, device and control
  inputs compute the same value: the later ones read the first's outputs.
  Stateful ops, and ops reading a variable (two reads may see two values),
  are never merged.
- :func:`flowbook.runtime.optimize.fuse.fuse`: chains of ops with one reader
  each (``MatMul -> Add -> Relu``, the cross-entropy's backprop times the
  mean's scale, ``ReluGrad -> Sum``, a ``Sum`` over folded axes) become one
  fused op of ``flowbook.ops.nn.fused_ops`` making the same numpy calls.

Then ops nothing reads or waits for any more are dropped, unless they change
state.  Every kept op runs the same kernel on the same values as before, and
a fused op the calls its ops made, so the results are bit-identical to the written plan's (``tests/runtime/test_optimize.py``
checks it on generated graphs, gradients included).

**When.**  ``flowbook.runtime.session`` asks :func:`optimized` before each run.  The
first run of a signature runs the written plan; the second optimises it (so
a plan run once pays nothing), and later runs take the optimised plan and its
own :class:`flowbook.runtime.codegen.compile.RunPath` (its straight line, timed twins),
kept per signature on the written plan's path (``RunPath.optimized``, at most
``MAX_SHAPE_SIGNATURES`` of them).  Plans with branches or loops
(``plan.control_flow``) are left as written (the frame scheduler runs them).

**Watched runs run as written.**  The session takes the optimised plan only
for runs that no observer watches (training loops, scripts, benchmarks).  A
run the live graph, ``tf.profile``, a trace or the NaN guard watches, and
the Stepper (``Session.prepare``), run the plan as written, so what they show
is the graph the user wrote, op for op: every op timed, every intermediate
value there to ask for, one plan per fetch in the widget's history.

**Turning it off** is TensorFlow 1's ``ConfigProto(graph_options=GraphOptions(
optimizer_options=OptimizerOptions(opt_level=OptimizerOptions.L0)))``, or
``do_constant_folding=False`` / ``do_common_subexpression_elimination=False``
for one pass (see :func:`passes_for`).  The same per-signature path carries
the memory plan's buffer reuse (``"memory"``, ``flowbook.runtime.memory_plan``),
off at ``L0`` or with ``rewrite_options.memory_optimization=NO_MEM_OPT``.
TensorFlow has no switch for fusion alone: ``L0`` turns it off with the rest.

    >>> import numpy as np, flowbook as fb
    >>> from flowbook.runtime.plan import build_plan
    >>> with fb.Graph().as_default() as g:
    ...     x = fb.placeholder(fb.float32, [None, 3], name="x")
    ...     y = fb.reshape(x * 2.0, fb.shape(x), name="y")
    ...     plan = build_plan(g, [y], [], [x], bind=lambda op: op._opdef.bound_kernel(np, op.attrs))
    >>> opt = optimize(plan, ((4, 3),), PASSES)
    >>> [op.name for op in opt.plan.ops], opt.plan.constants[0][1]
    (['mul'], array(2., dtype=float32))
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from flowbook.framework.devices import CPU
from flowbook.framework.tensor import Operation
from flowbook.runtime.codegen.compile import (
    MAX_SHAPE_SIGNATURES,
    RunPath,
    feed_shapes,
    shapes_given_feeds,
)
from flowbook.runtime.memory_plan import buffer_plan
from flowbook.runtime.optimize.fuse import fuse
from flowbook.runtime.optimize.layout import Rewrite, relayout
from flowbook.runtime.placement import CopyOp
from flowbook.runtime.plan import DISCARD, Plan, as_outputs, carries_variable, is_snapshot

# every pass; "memory": the memory plan's buffer reuse (flowbook.runtime.memory_plan)
PASSES = frozenset({"fold", "identity", "merge", "fuse", "memory"})
MAX_FOLDED_BYTES = 10 * 1024 * 1024  # TensorFlow's default for max_folded_constant_in_bytes
_SEEN = object()  # a signature run once: optimised when it comes again

__all__ = ["PASSES", "Change", "Optimized", "optimize", "optimized", "origin_of", "passes_for"]


class Change(NamedTuple):
    """What became of one written op (``Optimized.changes``), by names only.

    ``kind``: "folded" (its value is a constant now; ``text`` shows it),
    "merged" (``into``: the op computing the same value, which runs),
    "removed" (an identity or no-op: ``into`` is the tensor its readers read
    instead, "" for a NoOp), "fused" (``into``: the fused op that runs in its
    place) or "dropped" (nothing needs it any more: it fed only folded ops).
    """

    kind: str
    op: str  # the written op's name
    into: str = ""
    text: str = ""


class Optimized:
    """A plan rewritten for one feed-shape signature, and what was done to it.

    ``origin`` maps each executed op's name to the written ops it stands for:
    a kept op to itself and the duplicates merged into it, a fused op to all
    it replaced; folded, removed and dropped ops appear in none.  ``changes``
    says what became of each written op that does not run as written, and
    ``notes`` says it in one sentence per rewrite.  ``origin_of(plan)`` finds
    the origin of an optimised plan again (the profiler's per-written-op table).
    """

    __slots__ = ("changes", "notes", "origin", "plan", "written")

    def __init__(self, written: Plan, plan: Plan, rw: Rewrite) -> None:
        self.written = written  # the plan as the graph says it
        self.plan = plan  # the plan that runs
        self.notes = rw.notes  # one sentence per rewrite, naming written ops
        self.changes: list[Change] = _changes(written, plan, rw)  # written ops not run as written
        # executed op name -> the written op names it stands for
        self.origin: dict[str, tuple[str, ...]] = _origin(plan, self.changes, rw.fused)
        _ORIGINS[plan] = self.origin  # names only: the weak key stays collectable


_ORIGINS: weakref.WeakKeyDictionary[Plan, dict[str, tuple[str, ...]]] = (
    weakref.WeakKeyDictionary()
)  # optimised plan -> its Optimized.origin


def origin_of(plan: Plan) -> dict[str, tuple[str, ...]] | None:
    """The ``origin`` of an optimised plan (executed op -> written ops); None for a written one."""
    return _ORIGINS.get(plan)


def _changes(written: Plan, plan: Plan, rw: Rewrite) -> list[Change]:
    """What became of each written op that ``plan`` does not run as written, in written order."""
    tensor = {}  # slot -> the written tensor's name
    for op, slots in zip(written.ops, written.inputs):
        for t, s in zip(op.inputs, slots):
            tensor[s] = t.name
    for op, slots in zip(written.ops, written.outputs):
        for t, s in zip(op.outputs, slots):
            tensor.setdefault(s, t.name)
    kept = {op.name for op in plan.ops}
    fused_into = {w: f for f, ws in rw.fused.items() for w in ws}
    out = []
    for i, op in enumerate(written.ops):
        how = rw.removed.get(i)
        if how == "folded":
            values = [rw.consts[s] for s in written.outputs[i] if s in rw.consts]
            out.append(Change("folded", op.name, "", _show(values)))
        elif how == "merged":
            out.append(Change("merged", op.name, written.ops[rw.waits_on[i][0]].name))
        elif how == "removed":
            into = tensor.get(rw.resolve(written.inputs[i][0]), "") if written.inputs[i] else ""
            out.append(Change("removed", op.name, into))
        elif op.name in fused_into:
            out.append(Change("fused", op.name, fused_into[op.name]))
        elif op.name not in kept:
            out.append(Change("dropped", op.name))
    return out


def _origin(
    plan: Plan, changes: list[Change], fused: dict[str, tuple[str, ...]]
) -> dict[str, tuple[str, ...]]:
    """Executed op name -> the written op names it stands for (see ``Optimized``)."""
    merged: dict[str, list[str]] = {}
    for c in changes:
        if c.kind == "merged":
            merged.setdefault(c.into, []).append(c.op)
    return {  # a fused op stands for its members and what was merged into them
        op.name: tuple(m for n in fused.get(op.name, (op.name,)) for m in (n, *merged.get(n, ())))
        for op in plan.ops
    }


# ----------------------------------------------------------------- front door
def passes_for(config: Any) -> frozenset[str]:
    """The passes a session with ``config`` (a ``ConfigProto``) runs.

    As TensorFlow 1's graph optimiser: level ``L1`` (the default) runs them
    all, ``L0`` none; ``do_constant_folding`` and
    ``do_common_subexpression_elimination`` set to True turn their pass on at
    ``L0``, and (unlike TensorFlow, which ignores them at ``L1``) set to False
    turn it off at ``L1``.

    >>> import flowbook as fb
    >>> opts = fb.OptimizerOptions(do_constant_folding=False)
    >>> sorted(passes_for(fb.ConfigProto(graph_options=fb.GraphOptions(optimizer_options=opts))))
    ['fuse', 'identity', 'memory', 'merge']
    """
    opts = config.graph_options.optimizer_options
    on = set(PASSES) if opts.opt_level >= opts.L1 else set()
    for name, flag in (
        ("fold", opts.do_constant_folding),
        ("merge", opts.do_common_subexpression_elimination),
    ):
        if flag is True:
            on.add(name)
        elif flag is False:
            on.discard(name)
    rewrite = getattr(config.graph_options, "rewrite_options", None)  # memory_optimization
    if rewrite is not None and rewrite.memory_optimization == rewrite.NO_MEM_OPT:
        on.discard("memory")
    return frozenset(on)


def optimized(
    plan: Plan,
    path: RunPath,
    feeds: Sequence[Any],
    passes: frozenset[str],
    shapes: tuple[Any, ...] | None = None,
) -> tuple[Plan, RunPath]:
    """The plan and path a run of ``plan`` fed ``feeds`` takes (see the module docstring);
    ``shapes``: ``feed_shapes(feeds)`` where the caller has it already."""
    key = feed_shapes(feeds) if shapes is None else shapes
    cache = path.optimized
    entry = cache.get(key)
    if type(entry) is tuple:
        return entry
    if entry is None:
        if key in cache:  # optimised before: nothing to gain
            return plan, path
        if len(cache) >= MAX_SHAPE_SIGNATURES:
            del cache[next(iter(cache))]
        cache[key] = _SEEN
        return plan, path
    opt = optimize(plan, key, passes)
    run = plan if opt is None else opt.plan
    # the memory plan for this signature (flowbook.runtime.memory_plan): which dead buffers to reuse
    buffers = buffer_plan(run, _slot_shapes(run, key)) if "memory" in passes else None
    if opt is None and buffers is None:
        cache[key] = None
        return plan, path
    chosen = cache[key] = (run, RunPath(run, buffers))
    return chosen


def optimize(plan: Plan, shapes: tuple[Any, ...], passes: frozenset[str]) -> Optimized | None:
    """``plan`` rewritten by ``passes`` for fed values of ``shapes``; None if nothing changed."""
    if plan.control_flow or not passes - {"memory"}:
        return None
    rw = Rewrite(plan, _slot_shapes(plan, shapes))
    with np.errstate(all="ignore"):
        if "fold" in passes:
            fold_constants(plan, rw)
        if "identity" in passes:
            remove_identities(plan, rw)
        if "merge" in passes:
            merge_common(plan, rw)
        if "fuse" in passes:
            fuse(plan, rw)
    new = relayout(plan, rw)
    if new is None:
        return None
    return Optimized(plan, new, rw)


def _slot_shapes(plan: Plan, shapes: tuple[Any, ...]) -> dict[int, tuple[int, ...]]:
    """Slot -> the actual shape of its value, where the graph and the fed shapes say."""
    _, known = shapes_given_feeds(plan, shapes)
    out: dict[int, tuple[int, ...]] = {}
    for s, shape in zip(plan.feed_slots, shapes):
        if shape is not None:
            out[s] = tuple(shape)
    for i, op in enumerate(plan.ops):
        for k, (t, s) in enumerate(zip(op.outputs, plan.outputs[i])):
            if s == DISCARD:
                continue
            if t._shape is not None and None not in t._shape:
                out[s] = tuple(t._shape)
            elif known[i] is not None:
                out[s] = tuple(known[i] if plan.dynamic[i] == 1 else known[i][k])
    return out


# --------------------------------------------------------------------- passes
def fold_constants(plan: Plan, rw: Rewrite) -> None:
    """Run each op whose inputs are known, once, and keep its outputs as constants."""
    fetched = {s for s in plan.fetch_slots if s is not None}
    for i, op in enumerate(plan.ops):
        if i in rw.removed or not _foldable(plan, i, op, fetched):
            continue
        args = _known_args(plan, i, op, rw)
        if args is None:
            continue
        try:
            result = op._opdef.bound_kernel(np, op.attrs)(*args)
        except Exception:  # left to raise when it runs, naming the op
            continue
        outs = as_outputs(plan.outputs[i], result)
        if len(outs) != len(plan.outputs[i]) or not all(map(_constant, outs)):
            continue
        for s, v in zip(plan.outputs[i], outs):
            if s != DISCARD:
                rw.consts[s] = v
        rw.remove(i, "folded", ())
        rw.note(op, f"folded to {_show(outs)}")
    rw.share_constants()


def _foldable(plan: Plan, i: int, op: Operation, fetched: set[int]) -> bool:
    opdef = op._opdef if type(op) is not CopyOp else None
    if opdef is None or opdef.stateful or opdef.resource or opdef.blocking:
        return False
    if op.control_inputs or plan.devices[i] is not CPU or op.type == "Placeholder":
        return False
    return not any(s in fetched for s in plan.outputs[i])


def _known_args(plan: Plan, i: int, op: Operation, rw: Rewrite) -> list[Any] | None:
    """Op i's input values if all are known now (shape stand-ins for meta inputs), else None."""
    meta = op._opdef.shape_inputs or op._opdef.meta_inputs
    args = []
    for k, (t, s) in enumerate(zip(op.inputs, plan.inputs[i])):
        s = rw.resolve(s)
        if s in rw.consts and not carries_variable(t):
            args.append(rw.consts[s])
            continue
        shape = rw.shape(s)
        if k in meta and shape is not None and t.dtype.np is not None:
            # an array of the right shape and dtype that takes no memory: its shape is all read
            args.append(np.broadcast_to(np.zeros((), t.dtype.np), shape))
            continue
        return None
    return args


def _constant(v: Any) -> bool:
    """Whether a kernel's result may be kept as a constant."""
    if not isinstance(v, (np.ndarray, np.generic)) or v.dtype.kind in "OV":
        return False
    if v.nbytes > MAX_FOLDED_BYTES:
        return False
    return v.dtype.kind not in "fc" or bool(np.isfinite(v).all())


def remove_identities(plan: Plan, rw: Rewrite) -> None:
    """Drop the ops whose row says their output is their input (``OpDef.passthrough``):
    ``Identity``, ``StopGradient``, ``NoOp``, same-shape reshapes and sums over no axes."""
    fetched = {s for s in plan.fetch_slots if s is not None}
    for i, op in enumerate(plan.ops):
        if i in rw.removed or type(op) is CopyOp or op._opdef.passthrough is None:
            continue
        if not op.inputs:  # a NoOp
            rw.remove(i, "removed", plan.producers[i])
            rw.note(op, f"removed: a {op.type} (what waited for it waits for its control inputs)")
            continue
        why = _passthrough(plan, rw, i, op)
        if why is None:
            continue
        source, out = rw.resolve(plan.inputs[i][0]), plan.outputs[i][0]
        if out in fetched and source in rw.consts:
            continue  # a fetch gets a fresh value, never a kept constant
        if out != DISCARD:
            rw.alias[out] = source
        rw.remove(i, "removed", plan.producers[i])
        rw.note(op, f"removed: {why}")


def _passthrough(plan: Plan, rw: Rewrite, i: int, op: Operation) -> str | None:
    """Why op i's readers may read its input 0 instead of its output, or None if they may not."""
    how = op._opdef.passthrough
    if how == "always" and is_snapshot(op):
        return "the variable's snapshot: its readers read the variable when they run"
    if carries_variable(op.inputs[0]):
        return None  # tf.identity(W) reads W's value when it runs
    if how == "always":
        return f"an {op.type}: its readers read its input"
    if how == "same_shape":
        shape = rw.shape(rw.resolve(plan.inputs[i][0]))
        if shape is None or shape != rw.shape(plan.outputs[i][0]):
            return None
        return f"a reshape to the shape its input has, {list(shape)}"
    if how == "no_axes":  # a reduction over no axes: its input, copied (a broadcast gradient's)
        axes = rw.consts.get(rw.resolve(plan.inputs[i][1]))
        if axes is None or axes.size != 0:
            return None
        return f"a {op.type.lower()} over no axes: its readers read its input"
    return None


def merge_common(plan: Plan, rw: Rewrite) -> None:
    """Common subexpression elimination: later copies of an op read the first's outputs."""
    first: dict[Any, int] = {}
    for i, op in enumerate(plan.ops):
        if i in rw.removed or type(op) is CopyOp:
            continue
        opdef = op._opdef
        if opdef.stateful or opdef.resource or opdef.blocking:
            continue
        if any(carries_variable(t) for t in op.inputs):
            continue
        key = _merge_key(plan, i, op, rw)
        if key is None:
            continue
        j = first.setdefault(key, i)
        if j == i:
            continue
        pairs = list(zip(plan.outputs[i], plan.outputs[j]))
        if any(s != DISCARD and t == DISCARD for s, t in pairs):
            continue  # the first's output is not kept where the copy's is read
        for s, t in pairs:
            if s != DISCARD:
                rw.alias[s] = t
        rw.remove(i, "merged", (j,))
        rw.note(op, f"merged with {plan.ops[j].name}, the same {op.type} of the same inputs")


def _merge_key(plan: Plan, i: int, op: Operation, rw: Rewrite) -> Any:
    """What makes two ops compute the same values (None: not comparable)."""
    attrs = _frozen(op.attrs)
    if attrs is None:
        return None
    key = (
        op.type,
        tuple(rw.resolve(s) for s in plan.inputs[i]),
        attrs,
        plan.devices[i],
        tuple(sorted(c.name for c in op.control_inputs)),
    )
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _frozen(v: Any) -> Any:
    """``v`` as a hashable value that compares as ``v`` does (None: cannot be)."""
    if isinstance(v, dict):
        items = tuple(sorted((k, _frozen(x)) for k, x in v.items()))
        return None if any(x is None and v[k] is not None for k, x in items) else ("d", items)
    if isinstance(v, (list, tuple)):
        items = tuple(_frozen(x) for x in v)
        return None if any(f is None and x is not None for f, x in zip(items, v)) else items
    if isinstance(v, np.ndarray):
        return None if v.dtype.kind in "OV" else ("a", v.dtype.str, v.shape, v.tobytes())
    if callable(v) and not isinstance(v, type):
        return None  # a function attr: two may differ however they compare
    return (type(v), v)


def _show(values: Sequence[Any]) -> str:
    """A short description of folded values for the notes."""
    parts = []
    for v in values:
        if v.size <= 6:
            parts.append(str(np.asarray(v).tolist()))
        else:
            parts.append(f"a {v.dtype.name} array of shape {list(v.shape)}")
    return ", ".join(parts)
