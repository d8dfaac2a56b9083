"""Plans: what one ``Session.run`` signature needs, worked out once and cached.

A Session caches one Plan per (fetches, feeds, targets, graph version).
Building it is all the graph work a run does:

1. **Prune** (partial execution): walk back from the fetched tensors and
   target ops through data and control inputs, stopping at fed tensors.  An
   unfed placeholder on the way is an error before anything runs, and so is
   an op no longer in the graph (a notebook cell that ran again replaced
   it: one dict lookup per op, ``flowbook.graph_edit``).
2. **Order**: a topological order of the needed ops (iterative DFS; a cycle is
   an error naming an op on it).
3. **Slots**: every tensor the run touches gets an index into a flat value
   list; slot 0 is a sink for outputs nobody reads and for fed outputs of ops
   that still run.  Per op: its bound kernel, input and output slots, the ops
   that wait for it (``consumers``) and how many ops it waits for
   (``pending``); per slot: how many reads it has (``uses``), so the threaded
   executor frees a value after its last use whatever order ops run in; and
   per op in the static order, the slots last read there (``frees``).
4. **Compile** (from the second run on): when no op is heavy, the ready queue
   of the threaded executor would only ever run ops inline, one after another,
   so the plan emits that sequence as one straight-line Python function
   (``s3 = f2(s1, s0)``...), reusing local names after a value's last read.  It
   runs a chain of trivial ops at the speed of the equivalent hand-written
   numpy loop.  A kernel error inside it is traced back to its op through the
   line number.  Its timed twin (``compile_timed``) reads the clock after
   each op; where a trace wants output shapes it stores only those that
   neither the graph nor the fed shapes determine (``timed_twin``, with
   ``flowbook.run_shapes``).

**Devices.**  ``place(op)`` (the session's ``flowbook.placement.Placer``)
says where each op runs; ``plan.devices`` holds the answer per op.  Where an
edge crosses devices, ``flowbook.placement.insert_copies`` adds a copy node
(a ``CopyOp``: the value copied to the reader's device, a fed value to the
GPU, a fetched one back to the host) before the ops are laid out, so copies
are ordinary ops to everything below: they get slots, are freed after their
last read, run in the compiled function, are timed and traced.
``plan.copies`` lists them.  Ops placed off the CPU are never heavy (a GPU
launch is asynchronous and cheap; the pool is for CPU kernels).  Without a
GPU every op is on the CPU, there are no copies, and nothing else changes.

    >>> import flowbook as fb
    >>> from flowbook.plan import build_plan
    >>> with fb.Graph().as_default() as g:
    ...     x = fb.placeholder(fb.float32); y = x + 1.0; z = y * 2.0
    ...     plan = build_plan(g, [z], [], {y}, bind=lambda op: None)
    >>> [op.name for op in plan.ops]   # y is fed: x and the add are pruned
    ['mul/y', 'mul']
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from flowbook.devices import CPU, Device
from flowbook.errors import InvalidArgumentError
from flowbook.graph_edit import stale_error
from flowbook.placement import CopyOp, insert_copies
from flowbook.tensor import Operation, Tensor
from flowbook.tensor_shape import fmt

DISCARD = 0  # the slot for values nobody reads
COMPILE_AFTER_RUNS = 1  # compile a plan once it has run this many times


class Plan:
    """The cached, executable form of one run signature.  See the module docstring."""

    def __init__(self) -> None:
        self.ops: list[Operation] = []  # needed ops, in a topological order
        self.fns: list[Callable[..., Any]] = []  # per op: kernel bound to device, attrs, state
        self.inputs: list[tuple[int, ...]] = []  # per op: slots of its data inputs
        self.outputs: list[tuple[int, ...]] = []  # per op: slot of each output (DISCARD if unread)
        self.consumers: list[tuple[int, ...]] = []  # per op: ops that wait for it (data or control)
        self.pending: list[int] = []  # per op: how many ops it waits for; 0 means ready at start
        self.ready: list[int] = []  # ops ready at start, in order
        self.frees: list[tuple[int, ...]] = []  # per op: slots last read by it in the static order
        self.heavy: list[bool] = []  # per op: may run on the thread pool
        self.uses: list[
            int
        ] = []  # per slot: reads in the run (fetched and fed slots: +1, never freed)
        self.n_slots = 1  # slot count, DISCARD included
        self.feed_slots: list[int] = []  # slot of each fed tensor, in feed order
        self.fetch_slots: list[int | None] = []  # slot of each fetch; None for an op fetch
        self.any_heavy = False  # whether the threaded executor may use the pool
        self.runs = 0  # how many times this plan ran (compiles at COMPILE_AFTER_RUNS)
        self.compiled: Callable[[list[Any]], list[Any]] | None = None  # straight-line form
        self.line_to_op: dict[int, int] = {}  # compiled source line -> op index
        self.devices: list[Device] = []  # per op: where it runs (copies included)
        self.copies: list[CopyOp] = []  # the copy nodes between devices, in order (often none)
        self.off_host = False  # whether some op runs off the CPU (its kernels may be device-timed)
        # timed twins of ``compiled`` by the ops whose shapes they record (``compile_timed``)
        self.timed: dict[tuple[int, ...] | None, Any] = {}
        # feed shapes -> (timed twin, its line map, the shapes it need not record, whether it
        # records any): see timed_twin
        self.given_feeds: dict[tuple[Any, ...], tuple[Any, dict[int, int], list[Any], bool]] = {}
        # feed shapes of the last threaded run of a plan with heavy ops, if it sent no kernel
        # to the pool (then runs with feeds of those shapes may take the straight line)
        self.inline_feeds: tuple[Any, ...] | None = None


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
    roots: list[Operation] = list(targets)
    for f in fetches:
        if isinstance(f, Operation):
            roots.append(f)
        elif f not in fed:
            roots.append(f.op)
    order = _topological_order(roots, fed)
    plan = Plan()
    place = place if place is not None else getattr(bind, "place", None)
    rewired: dict[Operation, tuple[Tensor, ...]] = {}
    if place is None:
        plan.devices = [CPU] * len(order)
    else:
        order, plan.devices, rewired, fetches, plan.copies = insert_copies(
            order, fed, fetches, place
        )
        plan.off_host = any(d is not CPU for d in plan.devices)
    plan.ops = order
    index = {op: i for i, op in enumerate(order)}

    slot_of: dict[Tensor, int] = {}

    def slot(t: Tensor) -> int:
        s = slot_of.get(t)
        if s is None:
            s = slot_of[t] = plan.n_slots
            plan.n_slots += 1
            plan.uses.append(0)
        return s

    plan.uses.append(0)  # DISCARD
    plan.feed_slots = [slot(t) for t in feeds]
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
            s = slot(t)
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
    for f in fetches:
        if isinstance(f, Operation):
            plan.fetch_slots.append(None)
        else:
            s = slot(f)
            plan.uses[s] += 1  # a fetched value is never freed
            plan.fetch_slots.append(s)
    for s in plan.feed_slots:
        plan.uses[s] += 1
    for op in order:
        plan.outputs.append(
            tuple(slot_of.get(t, DISCARD) if t not in fed else DISCARD for t in op.outputs)
        )
    plan.consumers = [tuple(c) for c in consumers]
    plan.ready = [i for i, p in enumerate(plan.pending) if p == 0]
    plan.any_heavy = any(plan.heavy)
    plan.frees = _static_frees(plan)
    return plan


def _reading_variables(op: Operation, fn: Any, inputs: tuple[Tensor, ...]) -> Any:
    """``fn`` reading the value of the variables among its ``inputs`` when it runs.

    A VariableV2 op outputs the variable itself; only the inputs an op type
    declares as ``ref_inputs`` (the updates) take it as such.
    """
    reads = tuple(
        k
        for k, t in enumerate(inputs)
        if t.op.type == "VariableV2" and k not in op._opdef.ref_inputs
    )
    if not reads or fn is None:
        return fn

    def read_then_run(*args: Any) -> Any:
        values = list(args)
        for k in reads:
            values[k] = values[k].read()
        return fn(*values)

    return read_then_run


def _topological_order(roots: list[Operation], fed: set[Tensor]) -> list[Operation]:
    """Ops the roots need (stopping at fed tensors), each after everything it waits for."""
    order: list[Operation] = []
    state: dict[Operation, int] = {}  # 1: on the DFS stack, 2: emitted
    for root in roots:
        if root in state:
            continue
        stack: list[tuple[Operation, Any]] = [(root, _deps(root, fed))]
        state[root] = 1
        while stack:
            op, deps = stack[-1]
            for dep in deps:
                mark = state.get(dep)
                if mark is None:
                    state[dep] = 1
                    stack.append((dep, _deps(dep, fed)))
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


def _deps(op: Operation, fed: set[Tensor]) -> Any:
    for t in op.inputs:
        if t not in fed:
            yield t.op
    yield from op.control_inputs


def _static_frees(plan: Plan) -> list[tuple[int, ...]]:
    last: dict[int, int] = {}
    keep = {s for s in plan.fetch_slots if s is not None} | set(plan.feed_slots) | {DISCARD}
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


# ------------------------------------------------------------------- compile
def compile_plan(plan: Plan) -> None:
    """Give ``plan`` a straight-line function running its ops in the static order.

    The function takes the fed values (in ``feed_slots`` order) and returns
    the fetched values (in ``fetch_slots`` order, None for op fetches).
    """
    source, plan.line_to_op = _straight_line(plan, timed=False)
    plan.compiled = _define(plan, source, "run")


def compile_timed(
    plan: Plan, record: tuple[int, ...] | None = None
) -> tuple[Callable[..., list[Any]], dict[int, int]]:
    """The timed twin of ``plan.compiled`` and its line map (made once per ``record``).

    ``run_timed(feeds, st, clock, shapes)`` runs the same straight line and
    sets ``st[0]`` to ``clock()`` before the first kernel and ``st[i + 1]``
    after kernel i: op i ran from ``st[i]`` to ``st[i + 1]`` (one clock read
    per op; the little bookkeeping between two kernels counts in the next op;
    ``st`` comes filled with zeros, so a failed run leaves the rest at 0).
    ``record`` (see ``shapes_given_feeds``), when given, marks the ops whose
    output shapes the run stores in ``shapes[i]``: 1 for an op with one
    output, 2 for one with several.
    """
    twin = plan.timed.get(record)
    if twin is None:
        if len(plan.timed) >= MAX_SHAPE_SIGNATURES:
            plan.timed.clear()
        source, line_to_op = _straight_line(plan, timed=True, record=record)
        twin = plan.timed[record] = (_define(plan, source, "run_timed"), line_to_op)
    return twin


MAX_SHAPE_SIGNATURES = 8  # feed-shape signatures a plan keeps timed twins and shapes for


def timed_twin(
    plan: Plan, feed_shapes: tuple[Any, ...] | None
) -> tuple[Callable[..., list[Any]], dict[int, int], list[Any] | None, bool]:
    """``(run_timed, line_to_op, known, records)`` for a timed run fed values of ``feed_shapes``.

    With ``feed_shapes`` (a trace that wants output shapes), the twin records
    only the shapes the feeds do not determine (``records``: whether there
    are any) and ``known`` holds the others (``shapes_given_feeds``); with
    None it records none and ``known`` is None.  Cached per feed-shape
    signature, so a run pays one dict lookup; past ``MAX_SHAPE_SIGNATURES``
    signatures a plan stops working shapes out and records all it does not
    know statically.
    """
    if feed_shapes is None:
        return (*compile_timed(plan), None, False)
    entry = plan.given_feeds.get(feed_shapes)
    if entry is None:
        from flowbook.run_shapes import dynamic_shapes, shapes_given_feeds  # (imports this)

        if len(plan.given_feeds) < MAX_SHAPE_SIGNATURES:
            record, known = shapes_given_feeds(plan, feed_shapes)
        else:  # feeds of ever new shapes: record every shape the graph leaves open
            feed_shapes = ()  # one entry for all of them (a plan with feeds has no empty one)
            entry = plan.given_feeds.get(feed_shapes)
            if entry is not None:
                return entry
            record, known = tuple(dynamic_shapes(plan)), [None] * len(plan.ops)
        records = any(record)
        twin = compile_timed(plan, record if records else None)
        entry = plan.given_feeds[feed_shapes] = (*twin, known, records)
    return entry


def _define(plan: Plan, source: str, name: str) -> Callable[..., list[Any]]:
    """The function ``name`` that ``source`` defines, with the plan's kernels as ``f0, f1...``."""
    namespace: dict[str, Any] = {f"f{i}": fn for i, fn in enumerate(plan.fns)}
    exec(compile(source, _FILENAME, "exec"), namespace)
    return namespace[name]


def _straight_line(
    plan: Plan, timed: bool, record: tuple[int, ...] | None = None
) -> tuple[str, dict[int, int]]:
    """The source of the straight-line function (``run`` or ``run_timed``) and its line map."""
    names: dict[int, str] = {}  # live slot -> local variable name
    free_names: list[str] = []
    counter = 0

    def new_name() -> str:
        nonlocal counter
        if free_names:
            return free_names.pop()
        counter += 1
        return f"v{counter}"

    if timed:
        lines = ["def run_timed(feeds, st, clock, shapes):"]
    else:
        lines = ["def run(feeds):"]
    if plan.feed_slots:
        for k, s in enumerate(plan.feed_slots):
            names[s] = new_name()
            lines.append(f"    {names[s]} = feeds[{k}]")
    line_to_op: dict[int, int] = {}
    if timed:
        lines.append("    st[0] = clock()")
    for i in range(len(plan.ops)):
        args = ", ".join(names[s] for s in plan.inputs[i])
        released = [names.pop(s) for s in plan.frees[i]]
        free_names.extend(reversed(released))
        targets = []
        for s in plan.outputs[i]:
            if s == DISCARD:
                targets.append("_")
            else:
                names[s] = new_name()
                targets.append(names[s])
        call = f"f{i}({args})"
        if timed:
            if len(targets) == 1 and targets[0] != "_":  # the common case: no temporary
                out = targets[0]
                lines.append(f"    {out} = {call}; st[{i + 1}] = clock()")
            else:
                out = "_r"
                unpack = ""
                if targets and not all(t == "_" for t in targets):
                    comma = "," if len(targets) > 1 else ""
                    unpack = f"; {', '.join(targets)}{comma} = _r"
                lines.append(f"    _r = {call}; st[{i + 1}] = clock(){unpack}")
            line_to_op[len(lines)] = i
            if record is not None and record[i]:  # the shapes, not the arrays (freed)
                shape = f"{out}.shape"  # the dtype is the graph's (RunTimings.shapes adds it)
                if record[i] == 2:
                    shape = f"[o.shape for o in {out}]"
                lines.append(f"    try: shapes[{i}] = {shape}")
                lines.append("    except AttributeError: pass  # not arrays: as the graph says")
        elif not targets or all(t == "_" for t in targets):
            lines.append(f"    {call}")
        elif len(targets) == 1:
            lines.append(f"    {targets[0]} = {call}")
        else:
            lines.append(f"    {', '.join(targets)}, = {call}")
        if not timed:
            line_to_op[len(lines)] = i
        dead = [n for n in released if n in free_names]
        if dead:
            lines.append(f"    {' = '.join(dead)} = None")
    fetched = ", ".join(names[s] if s is not None else "None" for s in plan.fetch_slots)
    lines.append(f"    return [{fetched}]")
    return "\n".join(lines), line_to_op


_FILENAME = "<flowbook plan>"


def op_index_from_traceback(
    plan: Plan, tb: Any, line_to_op: dict[int, int] | None = None
) -> int | None:
    """Which op of a compiled plan raised, from the traceback's line in the plan.

    ``line_to_op``: the line map of the function that ran (default: ``plan.compiled``'s).
    """
    lines = plan.line_to_op if line_to_op is None else line_to_op
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == _FILENAME:
            return lines.get(tb.tb_lineno)
        tb = tb.tb_next
    return None
