"""Plans: what one ``Session.run`` signature needs, worked out once and cached.

A Session caches one Plan per (fetches, feeds, targets, graph version).
Building it is all the graph work a run does:

1. **Prune** (partial execution): walk back from the fetched tensors and
   target ops through data and control inputs, stopping at fed tensors.  An
   unfed placeholder on the way is an error before anything runs, and so is
   an op no longer in the graph (a notebook cell that ran again replaced
   it: one dict lookup per op, ``flowbook.framework.graph_edit``).
2. **Order**: a topological order of the needed ops (iterative DFS; a cycle is
   an error naming an op on it).
3. **Slots**: every tensor the run touches gets an index into a flat value
   list; slot 0 is a sink for outputs nobody reads and for fed outputs of ops
   that still run.  Per op: its bound kernel, input and output slots, the ops
   that wait for it (``consumers``) and how many ops it waits for
   (``pending``); per slot: how many reads it has (``uses``), so the threaded
   executor frees a value after its last use whatever order ops run in; and
   per op in the static order, the slots last read there (``frees``).
4. **Facts for observers**, worked out here once rather than during runs:
   ``producers`` (the ops each op waits for, for scheduled times and the
   Stepper) and ``dynamic`` (the ops whose output shapes the graph leaves
   open, which a trace must record or derive from the feeds).

A Plan is a fixed layout: built once, never changed by a run (its fields
are slots; nothing is cached on it later).  What runs learn about it (the
compiled straight line, timed twins, shapes given feeds, inline decisions)
lives in the session's ``flowbook.runtime.codegen.compile.RunPath`` beside it.

**Optimised plans.**  ``flowbook.runtime.optimize.optimizer`` lays out a second Plan per
feed-shape signature: a subset of the same ops, some inputs rewired, and
``constants``, the (slot, value) pairs its folded ops left, which every
executor puts in place before the first op runs (a built plan has none).

**Devices.**  ``place(op)`` (the session's ``flowbook.runtime.placement.Placer``)
says where each op runs; ``plan.devices`` holds the answer per op.  Where an
edge crosses devices, ``flowbook.runtime.placement.insert_copies`` adds a copy node
(a ``CopyOp``: the value copied to the reader's device, a fed value to the
GPU, a fetched one back to the host) before the ops are laid out, so copies
are ordinary ops to everything below: they get slots, are freed after their
last read, run in the compiled function, are timed and traced.
``plan.copies`` lists them.  ``plan.blocking`` says some op may wait (a
queue op, ``flowbook.state.pending``): the executor then runs it threaded.  Ops placed off the CPU are never heavy (a GPU
launch is asynchronous and cheap; the pool is for CPU kernels).  Without a
GPU every op is on the CPU, there are no copies, and nothing else changes.

    >>> import flowbook as fb
    >>> from flowbook.runtime.plan import build_plan
    >>> with fb.Graph().as_default() as g:
    ...     x = fb.placeholder(fb.float32); y = x + 1.0; z = y * 2.0
    ...     plan = build_plan(g, [z], [], {y}, bind=lambda op: None)
    >>> [op.name for op in plan.ops]   # y is fed: x and the add are pruned
    ['mul/y', 'mul']
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from flowbook.framework.devices import CPU, Device
from flowbook.framework.errors import InvalidArgumentError
from flowbook.framework.graph_edit import stale_error
from flowbook.framework.tensor import Operation, Tensor
from flowbook.framework.tensor_shape import fmt
from flowbook.ops.control_flow.control_flow_prims import CONTROL_FLOW_TYPES
from flowbook.runtime.placement import CopyOp, insert_copies

DISCARD = 0  # the slot for values nobody reads


class Plan:
    """The fixed, executable layout of one run signature.  See the module docstring."""

    # fixed fields; __weakref__: the live views key their stats by plan, weakly
    __slots__ = (
        "__weakref__",
        "any_heavy",
        "blocking",
        "constants",
        "consumers",
        "control_flow",
        "copies",
        "devices",
        "dynamic",
        "feed_slots",
        "fetch_slots",
        "fns",
        "frees",
        "heavy",
        "inputs",
        "n_slots",
        "off_host",
        "ops",
        "outputs",
        "pending",
        "producers",
        "ready",
        "uses",
    )

    def __init__(self) -> None:
        self.ops: list[Operation] = []  # needed ops, in a topological order
        self.fns: list[Callable[..., Any]] = []  # per op: kernel bound to device, attrs, state
        self.inputs: list[tuple[int, ...]] = []  # per op: slots of its data inputs
        self.outputs: list[tuple[int, ...]] = []  # per op: slot of each output (DISCARD if unread)
        self.consumers: list[tuple[int, ...]] = []  # per op: ops that wait for it (data or control)
        self.producers: list[tuple[int, ...]] = []  # per op: ops it waits for (data or control)
        self.pending: list[int] = []  # per op: how many ops it waits for; 0 means ready at start
        self.ready: list[int] = []  # ops ready at start, in order
        self.frees: list[tuple[int, ...]] = []  # per op: slots last read by it in the static order
        self.heavy: list[bool] = []  # per op: may run on the thread pool
        self.uses: list[int] = []  # per slot: reads in the run (fetched and fed: +1, never freed)
        self.n_slots = 1  # slot count, DISCARD included
        self.feed_slots: list[int] = []  # slot of each fed tensor, in feed order
        self.fetch_slots: list[int | None] = []  # slot of each fetch; None for an op fetch
        self.any_heavy = False  # whether the threaded executor may use the pool
        # per op: 0 if its outputs' static shapes are fully known, else 1 (one output) or 2
        self.dynamic: tuple[int, ...] = ()
        self.devices: list[Device] = []  # per op: where it runs (copies included)
        self.copies: list[CopyOp] = []  # the copy nodes between devices, in order (often none)
        self.off_host = False  # whether some op runs off the CPU (its kernels may be device-timed)
        # whether it has branches or loops (Switch, Merge, Enter...): then flowbook.runtime.frames runs it
        self.control_flow = False
        self.blocking = False  # whether some op may wait (a queue op): the scheduler parks it
        # (slot, value) known before the run starts: values the optimiser folded
        # (flowbook.runtime.optimize.optimizer); a built plan has none.  Never freed.
        self.constants: tuple[tuple[int, Any], ...] = ()


def build_plan(
    graph: Any,
    fetches: Iterable[Tensor | Operation],
    targets: Iterable[Operation],
    feeds: Iterable[Tensor],  # fed tensors, in the order the run passes their values
    bind: Callable[[Operation], Callable[..., Any] | None],
    place: Callable[[Operation], Device] | None = None,
) -> Plan:
    """Prune, order and lay out the run that computes ``fetches`` and runs ``targets``.

    ``bind(op)`` returns the op's bound kernel (the Session supplies it: it
    knows the device and the op's variable or random state).  ``place(op)``
    returns its device (default: ``bind.place`` if bind has one, else the
    CPU for every op); copies are inserted where edges cross devices.
    """
    fetches = list(fetches)
    feeds = list(feeds)
    fed = set(feeds)
    order = _topological_order(_roots(fetches, targets, fed), fed)
    plan = Plan()
    place = place if place is not None else getattr(bind, "place", None)
    order, rewired, fetches = _place(plan, order, fed, fetches, place)
    plan.ops = order
    slots = _Slots(plan)
    plan.feed_slots = [slots.of(t) for t in feeds]
    consumers = _lay_out_ops(plan, graph, fed, rewired, bind, slots)
    _lay_out_fetches(plan, fetches, slots)
    for op in order:
        plan.outputs.append(tuple(slots.get(t) if t not in fed else DISCARD for t in op.outputs))
    _link(plan, consumers)
    plan.dynamic = tuple(
        (1 if len(op.outputs) == 1 else 2)
        if any(t._shape is None or None in t._shape for t in op.outputs)
        else 0
        for op in order
    )
    plan.any_heavy = any(plan.heavy)
    plan.frees = _static_frees(plan)
    plan.blocking = any(op._opdef.blocking for op in order if type(op) is not CopyOp)
    plan.control_flow = any(op.type in CONTROL_FLOW_TYPES or op.type == "LoopCond" for op in order)
    return plan


def _roots(
    fetches: list[Tensor | Operation], targets: Iterable[Operation], fed: set[Tensor]
) -> list[Operation]:
    """The ops the run must reach: the targets, fetched ops, and producers of unfed fetches."""
    roots: list[Operation] = list(targets)
    for f in fetches:
        if isinstance(f, Operation):
            roots.append(f)
        elif f not in fed:
            roots.append(f.op)
    return roots


def _place(
    plan: Plan,
    order: list[Operation],
    fed: set[Tensor],
    fetches: list[Tensor | Operation],
    place: Callable[[Operation], Device] | None,
) -> tuple[list[Operation], dict[Operation, tuple[Tensor, ...]], list[Tensor | Operation]]:
    """Set each op's device on ``plan``, with copy nodes where edges cross devices.

    Returns the order with the copies in it, the inputs of the ops that now read a
    copy (rewired), and the fetches (a fetch off the host is read from its copy).
    """
    if place is None:
        plan.devices = [CPU] * len(order)
        return order, {}, fetches
    order, plan.devices, rewired, fetches, plan.copies = insert_copies(order, fed, fetches, place)
    plan.off_host = any(d is not CPU for d in plan.devices)
    return order, rewired, fetches


class _Slots:
    """Hands out ``plan``'s value slots, one per tensor, numbered in first-use order."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.slot_of: dict[Tensor, int] = {}
        plan.uses.append(0)  # DISCARD

    def of(self, t: Tensor) -> int:
        """``t``'s slot, a new one the first time ``t`` is asked for."""
        s = self.slot_of.get(t)
        if s is None:
            s = self.slot_of[t] = self.plan.n_slots
            self.plan.n_slots += 1
            self.plan.uses.append(0)
        return s

    def get(self, t: Tensor) -> int:
        """``t``'s slot if something reads it, else DISCARD."""
        return self.slot_of.get(t, DISCARD)


def _lay_out_ops(
    plan: Plan,
    graph: Any,
    fed: set[Tensor],
    rewired: dict[Operation, tuple[Tensor, ...]],
    bind: Callable[[Operation], Callable[..., Any] | None],
    slots: _Slots,
) -> list[list[int]]:
    """Per op of ``plan.ops``: its input slots, wait count, bound kernel and heaviness.

    Refuses an op no longer in ``graph`` (stale) and an unfed placeholder.  Returns,
    per op, the ops that wait for it.
    """
    order = plan.ops
    index = {op: i for i, op in enumerate(order)}
    consumers: list[list[int]] = [[] for _ in order]
    present = graph._ops  # name -> op: a needed op missing here was removed (stale)
    for i, op in enumerate(order):
        if present.get(op.name) is not op and type(op) is not CopyOp:
            raise stale_error(graph, order, op)
        if op.type == "Placeholder":
            raise _missing_feed(op)
        ins = []
        waits: set[int] = set()
        inputs = rewired.get(op, op.inputs) if rewired else op.inputs
        for t in inputs:
            s = slots.of(t)
            plan.uses[s] += 1
            ins.append(s)
            if t not in fed:
                waits.add(index[t.op])
        for c in op.control_inputs:
            waits.add(index[c])
        for w in waits:
            consumers[w].append(i)
        plan.inputs.append(tuple(ins))
        plan.pending.append(len(waits))
        fn = bind(op) if type(op) is not CopyOp else op.kernel
        plan.fns.append(_reading_variables(op, fn, inputs))
        plan.heavy.append(op._opdef.is_heavy(op) and plan.devices[i] is CPU)
    return consumers


def _lay_out_fetches(plan: Plan, fetches: list[Tensor | Operation], slots: _Slots) -> None:
    """The fetch slots; fetched and fed values get one more use, so they are never freed."""
    for f in fetches:
        if isinstance(f, Operation):
            plan.fetch_slots.append(None)
        else:
            s = slots.of(f)
            plan.uses[s] += 1
            plan.fetch_slots.append(s)
    for s in plan.feed_slots:
        plan.uses[s] += 1


def _link(plan: Plan, consumers: list[list[int]]) -> None:
    """The dependency edges both ways (consumers, producers) and the ops ready at start."""
    plan.consumers = [tuple(c) for c in consumers]
    producers: list[list[int]] = [[] for _ in consumers]
    for i, cs in enumerate(consumers):
        for c in cs:
            producers[c].append(i)
    plan.producers = [tuple(p) for p in producers]
    plan.ready = [i for i, p in enumerate(plan.pending) if p == 0]


def as_outputs(outs: tuple[int, ...], result: Any) -> Sequence[Any]:
    """A kernel's ``result`` as one entry per output (a kernel of one output returns it bare)."""
    return (result,) if len(outs) == 1 else (tuple(result) if outs else ())


def _reading_variables(op: Operation, fn: Any, inputs: tuple[Tensor, ...]) -> Any:
    """``fn`` reading the value of the variables among its ``inputs`` when it runs.

    A VariableV2 op outputs the variable itself; only the inputs an op type
    declares as ``ref_inputs`` (the updates) take it as such.  A variable's
    snapshot ``W/read`` (the Identity ``Variable`` makes, which every op
    using ``W`` consumes) passes the variable on, as TensorFlow's Identity
    passes on the variable's buffer: its consumers read the value when *they*
    run, so a read placed after an update by a control dependency sees it.
    """
    if is_snapshot(op):
        return fn
    if op.type in _PASS_ON:  # a branch or loop passes the variable itself on
        return fn
    reads = tuple(
        k for k, t in enumerate(inputs) if carries_variable(t) and k not in op._opdef.ref_inputs
    )
    if not reads or fn is None:
        return fn

    def read_then_run(*args: Any, **out: Any) -> Any:  # out: flowbook.runtime.memory_plan's out=
        values = list(args)
        for k in reads:
            values[k] = values[k].read()
        return fn(*values, **out)

    read_then_run.kernel = fn  # type: ignore[attr-defined]  # the straight line calls these two
    read_then_run.reads = reads  # type: ignore[attr-defined]  # itself, reading inline
    return read_then_run


# ops that pass a variable on as it is (its consumers read it): the control-flow primitives
_PASS_ON = frozenset(t for t in CONTROL_FLOW_TYPES if t != "ControlTrigger")


def carries_variable(t: Tensor) -> bool:
    """Whether ``t``'s value is a variable itself (its VarState), not an array.

    A VariableV2's output, its snapshot ``W/read``, and either passed on by a
    Switch, Merge, Enter, Exit or NextIteration (a variable used in a branch
    or a loop body, read by the op that uses it when that op runs).
    """
    while t.op.type in _PASS_ON:
        t = t.op.inputs[0]
    return t.op.type == "VariableV2" or is_snapshot(t.op)


def is_snapshot(op: Operation) -> bool:
    """Whether ``op`` is a variable's snapshot: the Identity ``W/read`` of VariableV2 ``W``."""
    if op.type != "Identity" or not op.inputs:
        return False
    src = op.inputs[0].op
    return src.type == "VariableV2" and op.name == f"{src.name}/read"


def _topological_order(roots: list[Operation], fed: set[Tensor]) -> list[Operation]:
    """Ops the roots need (stopping at fed tensors), each after everything it waits for."""
    order: list[Operation] = []
    state: dict[Operation, int] = {}  # 1: on the DFS stack, 2: emitted
    roots = list(roots)
    back: list[Operation] = []  # a loop's NextIteration ops, reached through its Merge
    while roots or back:
        root = roots.pop(0) if roots else back.pop(0)
        if root in state:
            continue
        stack: list[tuple[Operation, Any]] = [(root, _deps(root, fed, back))]
        state[root] = 1
        while stack:
            op, deps = stack[-1]
            for dep in deps:
                mark = state.get(dep)
                if mark is None:
                    state[dep] = 1
                    stack.append((dep, _deps(dep, fed, back)))
                    break
                if mark == 1:
                    raise InvalidArgumentError(
                        None, dep, f"Graph has a cycle through {dep.describe()}"
                    )
            else:
                stack.pop()
                state[op] = 2
                order.append(op)
    return order


def _deps(op: Operation, fed: set[Tensor], back: list[Operation]) -> Any:
    """The ops ``op`` runs after; a Merge's NextIteration inputs (a loop's back edge) go to
    ``back`` instead: they are needed, but come later in the order."""
    merge = op.type in ("Merge", "RefMerge")
    for t in op.inputs:
        if t not in fed:
            if merge and t.op.type in ("NextIteration", "RefNextIteration"):
                back.append(t.op)
                continue
            yield t.op
    yield from op.control_inputs


def _static_frees(plan: Plan) -> list[tuple[int, ...]]:
    last: dict[int, int] = {}
    keep = {s for s in plan.fetch_slots if s is not None} | set(plan.feed_slots) | {DISCARD}
    keep.update(s for s, _ in plan.constants)
    for i, ins in enumerate(plan.inputs):
        for s in ins:
            last[s] = i
    frees: list[list[int]] = [[] for _ in plan.ops]
    for s, i in last.items():
        if s not in keep:
            frees[i].append(s)
    return [tuple(f) for f in frees]


def _missing_feed(op: Operation) -> InvalidArgumentError:
    dtype = op.attrs["dtype"].name
    shape = fmt(op.attrs["shape"])
    return InvalidArgumentError(
        None,
        op,
        f"You must feed a value for placeholder tensor '{op.name}' with dtype {dtype} and shape "
        f"{shape}, created at {op.site.describe()}. Pass it in feed_dict={{{op.name}: value}}.",
    )
