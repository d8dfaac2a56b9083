"""The graph optimiser: a pruned plan rewritten for one feed-shape signature.

A :class:`flowbook.run.plan.Plan` runs every op the fetches need, as the
graph says them.  Much of a training step's backward pass is arithmetic on
shapes (``Shape`` -> ``BroadcastGradientArgs`` -> ``Sum`` axes -> ``Reshape``
target) that the fed shapes decide, and graphs repeat themselves (two
``Shape`` ops of one tensor).  Given the plan and the shapes of the fed values
(:func:`flowbook.run.compile.feed_shapes`), the passes below decide what need
not run, and :func:`flowbook.run.optimize_layout.relayout` lays out a new Plan
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
  (:func:`flowbook.run.compile.shapes_given_feeds`).  Never folded: an op that
  is stateful (variables and their updates, random ops, queues, ``Print``,
  ``Assert``...), holds session state, may wait, reads a variable's value,
  has control inputs, is placed off the CPU, or whose output is fetched (the
  caller gets a fresh value, as without the optimiser); nor a result that is
  not a numpy array, holds NaN or Inf (the NaN guard sees it made), or passes
  ``max_folded_constant_in_bytes``.  A kernel that raises is left to raise at
  run time, naming its op.  Fed tensors are never outputs of plan ops.
- :func:`remove_identities`: ``Identity`` and ``StopGradient`` (their output
  is their input), ``NoOp``, and a ``Reshape`` to the shape its input already
  has.  Their readers read the input instead, and what waited for them waits
  for what they waited for.  A variable's snapshot ``W/read`` is removed too:
  it passes the variable itself on, and its readers read the variable when
  *they* run (``flowbook.run.plan``), which reading ``W`` directly does alike;
  an ``Identity`` of a variable's value (``tf.identity(W)``) reads it and stays.
- :func:`merge_common`: common subexpression elimination.  Ops of the same
  type on the same inputs (after the passes above), attrs, device and control
  inputs compute the same value: the later ones read the first's outputs.
  Stateful ops, and ops reading a variable (two reads may see two values),
  are never merged.

- :func:`flowbook.run.optimize_fuse.fuse`: chains of ops with one reader
  each (``MatMul -> Add -> Relu``, the cross-entropy's backprop times the
  mean's scale, ``ReluGrad -> Sum``) become one fused op of
  ``flowbook.ops.fused_ops`` that does the same arithmetic in one kernel.

Then ops nothing reads or waits for any more are dropped, unless they change
state.  Every kept op runs the same kernel on the same values as before, and a
fused op the same numpy calls its ops made, so
the results are bit-identical to the written plan's (``tests/test_optimize.py``
checks it on generated graphs, gradients included).

**When.**  ``flowbook.session`` asks :func:`optimized` before each run.  The
first run of a signature runs the written plan; the second optimises it (so
a plan run once pays nothing), and later runs take the optimised plan and its
own :class:`flowbook.run.compile.RunPath` (its straight line, timed twins),
kept per signature on the written plan's path (``RunPath.optimized``, at most
``MAX_SHAPE_SIGNATURES`` of them).  Plans with branches or loops
(``plan.control_flow``) are left as written (the frame scheduler runs them).

**Watched runs run as written.**  The session takes the optimised plan only
for runs that no observer watches (training loops, scripts, benchmarks).  A
run the live graph, ``tf.profile``, a trace or the NaN guard watches, and
the Stepper (``Session.prepare``), run the plan as written, so what they show
is the graph the user wrote, op for op: every op timed, every intermediate
value there to ask for, one plan per fetch in the widget's history.  (The
optimised plan holds only written ops, bound to the same kernels, so
observers could watch it too: its removed ops would simply not appear.)

**What it did** is in :class:`Optimized`: ``notes`` (a sentence per rewrite)
and ``origin`` (each executed op's name -> the written ops it stands for: a
fused op its members, a kept op itself), for the live graph and profiles.

**Turning it off** is TensorFlow 1's ``ConfigProto(graph_options=GraphOptions(
optimizer_options=OptimizerOptions(opt_level=OptimizerOptions.L0)))``, or
``do_constant_folding=False`` / ``do_common_subexpression_elimination=False``
for one pass (see :func:`passes_for`).  TensorFlow has no switch for fusion
alone: ``L0`` turns it off with the rest.

    >>> import numpy as np, flowbook as fb
    >>> from flowbook.run.plan import build_plan
    >>> with fb.Graph().as_default() as g:
    ...     x = fb.placeholder(fb.float32, [None, 3], name="x")
    ...     y = fb.reshape(x * 2.0, fb.shape(x), name="y")
    ...     plan = build_plan(g, [y], [], [x], bind=lambda op: op._opdef.bound_kernel(np, op.attrs))
    >>> opt = optimize(plan, ((4, 3),), PASSES)
    >>> [op.name for op in opt.plan.ops], opt.plan.constants[0][1]
    (['mul'], array(2., dtype=float32))
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from flowbook.devices import CPU
from flowbook.run.compile import MAX_SHAPE_SIGNATURES, RunPath, feed_shapes, shapes_given_feeds
from flowbook.run.optimize_fuse import fuse
from flowbook.run.optimize_layout import Rewrite, relayout
from flowbook.run.placement import CopyOp
from flowbook.run.plan import DISCARD, Plan, as_outputs, carries_variable, is_snapshot
from flowbook.tensor import Operation

PASSES = frozenset({"fold", "identity", "merge", "fuse"})  # every pass
MAX_FOLDED_BYTES = 10 * 1024 * 1024  # TensorFlow's default for max_folded_constant_in_bytes
IDENTITIES = frozenset({"Identity", "StopGradient"})  # ops whose output is their input
# inputs of which the kernel reads only the shape and dtype, beyond those declared meta_inputs
SHAPE_ONLY = {"ZerosLike": (0,), "OnesLike": (0,)}
_SEEN = object()  # a signature run once: optimised when it comes again

__all__ = ["PASSES", "Optimized", "optimize", "optimized", "passes_for"]


class Optimized:
    """A plan rewritten for one feed-shape signature, and what was done to it."""

    __slots__ = ("notes", "origin", "plan", "written")

    def __init__(
        self, written: Plan, plan: Plan, notes: list[str], origin: dict[str, tuple[str, ...]]
    ) -> None:
        self.written = written  # the plan as the graph says it
        self.plan = plan  # the plan that runs
        self.notes = notes  # one sentence per rewrite, naming written ops
        # executed op name -> the written op names it stands for (a kept op: itself)
        self.origin = origin


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
    ['fuse', 'identity', 'merge']
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
    return frozenset(on)


def optimized(
    plan: Plan, path: RunPath, feeds: Sequence[Any], passes: frozenset[str]
) -> tuple[Plan, RunPath]:
    """The plan and path a run of ``plan`` fed ``feeds`` takes (see the module docstring)."""
    key = feed_shapes(feeds)
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
    if opt is None:
        cache[key] = None
        return plan, path
    chosen = cache[key] = (opt.plan, RunPath(opt.plan))
    return chosen


def optimize(plan: Plan, shapes: tuple[Any, ...], passes: frozenset[str]) -> Optimized | None:
    """``plan`` rewritten by ``passes`` for fed values of ``shapes``; None if nothing changed."""
    if plan.control_flow or not passes:
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
    origin = {plan.ops[i].name: (plan.ops[i].name,) for i in range(len(plan.ops))}
    origin.update(
        (f.op.name, tuple(plan.ops[m].name for m in f.members)) for f in rw.fused.values()
    )
    return Optimized(plan, new, rw.notes, {op.name: origin[op.name] for op in new.ops})


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
    meta = SHAPE_ONLY.get(op.type) or op._opdef.meta_inputs
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
    """Drop ``Identity``, ``StopGradient``, ``NoOp`` and reshapes to the same shape."""
    fetched = {s for s in plan.fetch_slots if s is not None}
    for i, op in enumerate(plan.ops):
        if i in rw.removed or type(op) is CopyOp:
            continue
        if op.type == "NoOp":
            rw.remove(i, "removed", plan.producers[i])
            rw.note(op, "removed: a NoOp (what waited for it waits for its control inputs)")
            continue
        if op.type in IDENTITIES:
            if is_snapshot(op):
                why = "the variable's snapshot: its readers read the variable when they run"
            elif carries_variable(op.inputs[0]):
                continue  # tf.identity(W) reads W's value when it runs
            else:
                why = f"an {op.type}: its readers read its input"
        elif op.type == "Reshape":
            shape = rw.shape(rw.resolve(plan.inputs[i][0]))
            if shape is None or shape != rw.shape(plan.outputs[i][0]):
                continue
            if carries_variable(op.inputs[0]):
                continue
            why = f"a reshape to the shape its input has, {list(shape)}"
        else:
            continue
        source, out = rw.resolve(plan.inputs[i][0]), plan.outputs[i][0]
        if out in fetched and source in rw.consts:
            continue  # a fetch gets a fresh value, never a kept constant
        if out != DISCARD:
            rw.alias[out] = source
        rw.remove(i, "removed", plan.producers[i])
        rw.note(op, f"removed: {why}")


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
