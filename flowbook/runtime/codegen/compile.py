"""Compiled run paths: what runs of one plan learn, and the straight-line code they generate.

A :class:`flowbook.runtime.plan.Plan` is a fixed layout, never changed by a run.
Everything a session learns by running it lives here, in one
:class:`RunPath` per (session, plan):

- ``runs``: how many runs asked for the straight line;
- ``compiled`` / ``line_to_op``: the **straight line**, made from the second
  such run (or the first, for a plan with heavy ops).  When no op is heavy,
  the scheduler's ready queue would only ever run ops inline, one
  after another, so the plan's static order is emitted as one Python function
  (``v3 = f2(v1, v0)``...), reusing local names after a value's last read; it
  runs a chain of trivial ops at the speed of the equivalent hand-written
  numpy loop.  A kernel error inside it is traced back to its op through the
  line number (``op_index``);
- ``timed``: **timed twins** of that function, which read the clock after
  each op (``st[i + 1] = clock()``) and store the output shapes a trace needs
  and cannot know otherwise;
- ``given_feeds``: per feed-shape signature, the twin to use and the output
  shapes the fed shapes determine (``shapes_given_feeds``: each op's own shape
  inference run again on the actual fed shapes, so the batch dimension and the
  ``Shape`` -> ``BroadcastGradientArgs`` -> ``Reshape`` arithmetic of gradients
  cost the traced run nothing); only the ops whose shapes depend on data
  (``tf.where``, a reshape to fed values) are recorded by the run;
- ``inline_feeds``: for a plan with heavy ops, the feed-shape signatures
  whose last threaded run sent no kernel to the pool: runs with feeds of those
  shapes take the straight line too.  Up to ``MAX_SHAPE_SIGNATURES`` of them,
  the least recently used dropped first, so batches that alternate between
  shapes (100, 99, 100...) each keep the straight line;
- ``optimized``: per feed-shape signature, the plan ``flowbook.runtime.optimize.optimizer``
  rewrote for it and that plan's own RunPath (so each signature has its own
  straight line).  A plan's ``constants`` (folded values) are bound into its
  straight line as ``c<slot>`` names, read once at its start;
- ``buffers``: for a path made for one feed-shape signature, the memory
  plan's choice per op of the input whose buffer its output takes
  (``flowbook.runtime.memory_plan``): the straight line calls such an op as
  ``v3 = (f2(v1, v2, out=v1) if owned(v1, 1) else f2(v1, v2))`` (the check written
  out inline).  A kernel reading variables is called as ``k2(v1, v5.read())``, and a
  VariableV2 on the CPU is its VarState, bound in as ``s<op>`` (no call).

    >>> import numpy as np, flowbook as fb
    >>> from flowbook.runtime.plan import build_plan
    >>> with fb.Graph().as_default() as g:
    ...     x = fb.placeholder(fb.float32); y = (x + 1.0) * 2.0
    ...     plan = build_plan(g, [y], [], [x], bind=lambda op: op._opdef.bound_kernel(np, op.attrs))
    >>> path = RunPath(plan); path.compile()
    >>> float(path.compiled([3.0])[0])
    8.0
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np

from flowbook.framework.devices import CPU
from flowbook.framework.registry import Out
from flowbook.framework.tensor import Operation, Tensor
from flowbook.framework.tensor_shape import compatible
from flowbook.ops.array.constant_op import given_shapes
from flowbook.runtime.memory_plan import ONE_LOCAL
from flowbook.runtime.placement import CopyOp
from flowbook.runtime.plan import DISCARD, Plan

COMPILE_AFTER_RUNS = 1  # compile a plan once it has run this many times
MAX_SHAPE_SIGNATURES = 8  # feed-shape signatures a path keeps twins, shapes, inline runs for
PLAN_FILENAME = "<flowbook plan>"  # the file name of compiled plans in tracebacks
ARGS_TABLE = "__op_args__"  # in a compiled plan's namespace: line -> the names its call passes

# (run_timed, its line map, the shapes it need not record, whether it records any)
TimedTwin = tuple[Callable[..., list[Any]], dict[int, int], list[Any] | None, bool]

__all__ = ["COMPILE_AFTER_RUNS", "MAX_SHAPE_SIGNATURES", "RunPath", "shapes_given_feeds"]


class RunPath:
    """What the runs of one plan in one session have learnt.  See the module docstring."""

    __slots__ = (
        "buffers",
        "compiled",
        "given_feeds",
        "inline_feeds",
        "layout",
        "line_to_op",
        "optimized",
        "plan",
        "runs",
        "timed",
    )

    def __init__(self, plan: Plan, buffers: tuple[int, ...] | None = None) -> None:
        self.plan = plan  # the fixed layout this path runs
        # per op: the input whose buffer its output takes (-1: none), flowbook.runtime.memory_plan
        self.buffers = buffers
        self.runs = 0  # runs that asked for the straight line (it compiles at COMPILE_AFTER_RUNS)
        self.compiled: Callable[[Any], list[Any]] | None = None  # the straight line
        self.line_to_op: dict[int, int] = {}  # line of ``compiled`` -> op index
        # timed twins of ``compiled`` by the ops whose shapes they record (None: none)
        self.timed: dict[tuple[int, ...] | None, tuple[Callable[..., list[Any]], dict]] = {}
        self.given_feeds: dict[tuple[Any, ...], TimedTwin] = {}  # feed shapes -> its twin
        # feed shapes whose last threaded run (of a plan with heavy ops) sent no kernel to the
        # pool: runs with feeds of those shapes may take the straight line.  LRU last
        self.inline_feeds: OrderedDict[tuple[Any, ...], None] = OrderedDict()
        self.layout: Any = (
            None  # for a plan with branches or loops: its flowbook.runtime.frames.Layout
        )
        # feed shapes -> (optimised plan, its RunPath), None (nothing to gain) or a marker
        # (seen once); kept by flowbook.runtime.optimize.optimizer.optimized
        self.optimized: dict[tuple[Any, ...], Any] = {}

    def straight(self) -> bool:
        """Count a run that wants the straight line; whether ``compiled`` is ready for it."""
        self.runs += 1
        if self.compiled is None and (self.runs > COMPILE_AFTER_RUNS or self.plan.any_heavy):
            self.compile()
        return self.compiled is not None

    def inline(self, shapes: tuple[Any, ...]) -> bool:
        """Whether a run fed values of ``shapes`` may take the straight line (heavy ops kept
        inline by the last threaded run of that signature)."""
        if shapes in self.inline_feeds:
            self.inline_feeds.move_to_end(shapes)
            return True
        return False

    def ran_threaded(self, shapes: tuple[Any, ...], inline: bool) -> None:
        """Note a threaded run fed values of ``shapes``: ``inline`` if it used no pool thread."""
        if not inline:
            self.inline_feeds.pop(shapes, None)
            return
        self.inline_feeds[shapes] = None
        if len(self.inline_feeds) > MAX_SHAPE_SIGNATURES:
            self.inline_feeds.popitem(last=False)

    def compile(self) -> None:
        """Make ``compiled``: the plan's ops in its static order, as one function.

        It takes the fed values (in ``feed_slots`` order) and returns the
        fetched values (in ``fetch_slots`` order, None for op fetches).
        """
        source, self.line_to_op = _straight_line(self.plan, timed=False, buffers=self.buffers)
        self.compiled = _define(self.plan, source, "run")

    def timed_twin(self, feed_shapes: tuple[Any, ...] | None) -> TimedTwin:
        """``(run_timed, line_to_op, known, records)`` for a run fed values of ``feed_shapes``.

        ``run_timed(feeds, st, clock, shapes)`` runs the straight line, sets
        ``st[0]`` before the first kernel and ``st[i + 1]`` after kernel i,
        and stores in ``shapes[i]`` the output shapes of the ops it records.
        With ``feed_shapes`` (a trace that wants output shapes) it records only
        those the feeds do not determine (``records``: whether any) and
        ``known`` holds the others; with None it records none.  Cached per
        signature; past ``MAX_SHAPE_SIGNATURES`` it records every shape the
        graph leaves open instead of working them out again.
        """
        if feed_shapes is None:
            return (*self._twin(None), None, False)
        entry = self.given_feeds.get(feed_shapes)
        if entry is None:
            if len(self.given_feeds) < MAX_SHAPE_SIGNATURES:
                record, known = shapes_given_feeds(self.plan, feed_shapes)
            else:  # feeds of ever new shapes: one entry that records what the graph leaves open
                feed_shapes = ()  # (a plan with feeds has no empty signature of its own)
                entry = self.given_feeds.get(feed_shapes)
                if entry is not None:
                    return entry
                record, known = self.plan.dynamic, [None] * len(self.plan.ops)
            records = any(record)
            twin = self._twin(record if records else None)
            entry = self.given_feeds[feed_shapes] = (*twin, known, records)
        return entry

    def _twin(self, record: tuple[int, ...] | None) -> tuple[Callable[..., list[Any]], dict]:
        twin = self.timed.get(record)
        if twin is None:
            if len(self.timed) >= MAX_SHAPE_SIGNATURES:
                self.timed.clear()
            source, line_to_op = _straight_line(self.plan, timed=True, record=record)
            twin = self.timed[record] = (_define(self.plan, source, "run_timed"), line_to_op)
        return twin

    @staticmethod
    def op_args(tb: Any) -> list[Any] | None:
        """The values the op that raised was called with, read from the compiled function's
        frame in traceback ``tb`` (None: not a compiled function's line)."""
        while tb is not None:
            frame = tb.tb_frame
            if frame.f_code.co_filename == PLAN_FILENAME:
                names = frame.f_globals.get(ARGS_TABLE, {}).get(tb.tb_lineno)
                return None if names is None else [frame.f_locals.get(n) for n in names]
            tb = tb.tb_next
        return None

    def op_index(self, tb: Any, line_to_op: dict[int, int] | None = None) -> int | None:
        """Which op raised, from a traceback through a compiled function (None: not one)."""
        lines = self.line_to_op if line_to_op is None else line_to_op
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == PLAN_FILENAME:
                return lines.get(tb.tb_lineno)
            tb = tb.tb_next
        return None


def feed_shapes(feeds: Any) -> tuple[Any, ...]:
    """The shapes of a run's fed values (None for a value without one), in feed order.

    >>> import numpy as np
    >>> feed_shapes([np.zeros((2, 3)), 1.0])
    ((2, 3), None)
    """
    return tuple(getattr(v, "shape", None) for v in feeds)


# ---------------------------------------------------------------- generation
def _define(plan: Plan, source: str, name: str) -> Callable[..., list[Any]]:
    """The function ``name`` that ``source`` defines, with the plan's kernels as ``f0, f1...``."""
    namespace: dict[str, Any] = {f"f{i}": fn for i, fn in enumerate(plan.fns)}
    namespace.update((f"k{i}", fn.kernel) for i, fn in enumerate(plan.fns) if hasattr(fn, "reads"))
    # a VariableV2 kernel returns the VarState the session bound into it, the same every run
    namespace.update(
        (f"s{i}", plan.fns[i]()) for i in range(len(plan.ops)) if _holds_variable(plan, i)
    )
    namespace.update((f"c{s}", v) for s, v in plan.constants)
    namespace["_nd"] = np.ndarray  # the memory plan's check before writing into a buffer
    namespace["_rc"] = sys.getrefcount
    exec(compile(source, PLAN_FILENAME, "exec"), namespace)
    return namespace[name]


def _straight_line(
    plan: Plan,
    timed: bool,
    record: tuple[int, ...] | None = None,
    buffers: tuple[int, ...] | None = None,
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

    lines = ["def run_timed(feeds, st, clock, shapes):" if timed else "def run(feeds):"]
    for k, s in enumerate(plan.feed_slots):
        names[s] = new_name()
        lines.append(f"    {names[s]} = feeds[{k}]")
    for s, _ in plan.constants:  # folded values (flowbook.runtime.optimize.optimizer): never freed
        names[s] = new_name()
        lines.append(f"    {names[s]} = c{s}")
    line_to_op: dict[int, int] = {}
    line_args: dict[int, tuple[str, ...]] = {}  # the call's line -> the locals it passes
    if timed:
        lines.append("    st[0] = clock()")
    for i in range(len(plan.ops)):
        call_line = len(lines) + 1  # 1-based: the line the call will be on
        line_args[call_line] = tuple(names[s] for s in plan.inputs[i])
        call = _call(i, plan.fns[i], list(line_args[call_line]))
        if not timed and _holds_variable(plan, i):  # the variable's state, bound in: no call
            call = f"s{i}"
        if buffers is not None and buffers[i] >= 0:  # the memory plan: into a dead input's buffer
            call = _into_buffer(call, names[plan.inputs[i][buffers[i]]])
        released = [names.pop(s) for s in plan.frees[i]]
        free_names.extend(reversed(released))
        targets = []
        for s in plan.outputs[i]:
            if s == DISCARD:
                targets.append("_")
            else:
                names[s] = new_name()
                targets.append(names[s])
        if timed:
            lines.extend(_timed_call(i, call, targets, record))
        elif all(t == "_" for t in targets):
            lines.append(f"    {call}")
        elif len(targets) == 1:
            lines.append(f"    {targets[0]} = {call}")
        else:
            lines.append(f"    {', '.join(targets)}, = {call}")
        line_to_op[call_line] = i
        dead = [n for n in released if n in free_names]
        if dead:
            lines.append(f"    {' = '.join(dead)} = None")
    fetched = ", ".join(names[s] if s is not None else "None" for s in plan.fetch_slots)
    lines.append(f"    return [{fetched}]")
    lines.append(f"{ARGS_TABLE} = {line_args!r}")  # a global of the function: for op_args
    return "\n".join(lines), line_to_op


def _holds_variable(plan: Plan, i: int) -> bool:
    """Whether op i is a VariableV2 on the CPU (its kernel returns its session's VarState)."""
    return plan.ops[i].type == "VariableV2" and plan.devices[i] is CPU and plan.fns[i] is not None


def _call(i: int, fn: Any, args: list[str]) -> str:
    """Op i's call: ``f3(v1, v2)``, or for a kernel reading variables (``plan._reading_variables``)
    the kernel itself with the reads inline, ``k3(v1, v2.read())``: one Python call, not two."""
    reads = getattr(fn, "reads", None)
    if reads is None:
        return f"f{i}({', '.join(args)})"
    return f"k{i}({', '.join(f'{a}.read()' if k in reads else a for k, a in enumerate(args))})"


def _into_buffer(call: str, name: str) -> str:
    """``call`` writing into ``name``'s buffer where ``name`` holds the only reference to it
    (``memory_plan.owned(name, 1)``, written out inline)."""
    check = f"type({name}) is _nd and {name}.base is None and _rc({name}) == {ONE_LOCAL}"
    return f"({call[:-1]}, out={name}) if {check} else {call})"


def _timed_call(i: int, call: str, targets: list[str], record: Any) -> list[str]:
    """The lines of a timed twin for op i: the call, its clock read, its recorded shapes."""
    if len(targets) == 1 and targets[0] != "_":  # the common case: no temporary
        out = targets[0]
        lines = [f"    {out} = {call}; st[{i + 1}] = clock()"]
    else:
        out, unpack = "_r", ""
        if targets and not all(t == "_" for t in targets):
            comma = "," if len(targets) > 1 else ""
            unpack = f"; {', '.join(targets)}{comma} = _r"
        lines = [f"    _r = {call}; st[{i + 1}] = clock(){unpack}"]
    if record is not None and record[i]:  # the shapes, not the arrays (those are freed)
        shape = f"{out}.shape" if record[i] == 1 else f"[o.shape for o in {out}]"
        lines.append(f"    try: shapes[{i}] = {shape}")  # the dtype is the graph's
        lines.append("    except AttributeError: pass  # not arrays: as the graph says")
    return lines


# ---------------------------------------------------------- shapes given feeds
def shapes_given_feeds(
    plan: Plan, feed_shapes: tuple[Any, ...]
) -> tuple[tuple[int, ...], list[Any]]:
    """What a timed run fed values of ``feed_shapes`` must record, and the shapes it need not.

    Given the fed shapes, each op's ``infer`` (the graph's own shape
    inference) run again on inputs of the shapes worked out so far gives its
    actual output shapes.  Returns ``(record, known)``, per op: ``record[i]``
    as ``plan.dynamic`` says for the ops whose shapes stay unknown even so
    (``tf.where``, a reshape to a fed value: the run records those), else 0;
    ``known[i]`` the bare shape (a list of them for several outputs) of each
    op whose shapes the feeds determine, None where the graph's static shapes
    say it all or the run records them.

    >>> import flowbook as fb
    >>> from flowbook.runtime.plan import build_plan
    >>> with fb.Graph().as_default() as g:
    ...     x = fb.placeholder(fb.float32, [None, 3]); y = fb.reduce_sum(x * 2.0, 1)
    ...     n = fb.range(fb.cast(fb.reduce_max(y), fb.int32))  # its length is data
    ...     plan = build_plan(g, [y, n], [], [x], bind=lambda op: None)
    >>> record, known = shapes_given_feeds(plan, ((5, 3),))
    >>> [(op.type, r, k) for op, r, k in zip(plan.ops, record, known) if r or k]
    [('Mul', 0, (5, 3)), ('Sum', 0, (5,)), ('Range', 1, None)]
    """
    static = plan.dynamic
    record = list(static)
    known: list[Any] = [None] * len(plan.ops)
    shape_of: dict[int, Any] = dict(zip(plan.feed_slots, feed_shapes))  # slot -> actual shape
    fed_slots = set(plan.feed_slots)
    given: dict[Tensor, Any] = {}  # tensor -> actual shape, for constant_value
    fed: set[Tensor] = set()
    with given_shapes(given, fed):
        for i, op in enumerate(plan.ops):
            in_shapes = []
            for t, s in zip(op.inputs, plan.inputs[i]):
                shape = shape_of.get(s)
                in_shapes.append(shape)
                if shape is not None:
                    given[t] = shape
                if s in fed_slots:
                    fed.add(t)
            shapes: list[Any] | None = None
            if static[i]:
                shapes = _infer_given(op, in_shapes)
                if shapes is not None:
                    record[i] = 0
                    known[i] = shapes[0] if static[i] == 1 else shapes
            if shapes is None:
                shapes = [t._shape for t in op.outputs]
            for t, s, shape in zip(op.outputs, plan.outputs[i], shapes):
                given[t] = shape
                if s != DISCARD:
                    shape_of[s] = shape
    return tuple(record), known


def _infer_given(op: Operation, in_shapes: list[Any]) -> list[Any] | None:
    """``op``'s output shapes for inputs of ``in_shapes`` (None: static), if fully known."""
    if isinstance(op, CopyOp):
        outs: list[Any] = [in_shapes[0]]
    else:
        ins = [
            t if shape is None else Tensor(t.op, t.value_index, t.dtype, shape)
            for t, shape in zip(op.inputs, in_shapes)
        ]
        try:
            inferred = op._opdef.infer(*ins, **op.attrs)
        except Exception:  # the kernel will say what is wrong, and the run records
            return None
        outs = [o.shape for o in ([inferred] if isinstance(inferred, Out) else inferred)]
    if len(outs) != len(op.outputs):
        return None
    for shape, t in zip(outs, op.outputs):
        if shape is None or None in shape or not compatible(t._shape, shape):
            return None
    return [tuple(shape) for shape in outs]
