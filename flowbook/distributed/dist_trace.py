"""Timings of a run on a cluster: what each task reports with its reply, on the client's clock.

**On the task.**  A step that someone watches asks its tasks for a report
(``TaskServer.run(..., report=level)``); nothing else changes, and an
unwatched step asks for none.  Level 1 brings four clock reads: when the
call reached the task server and when its reply left it (``t_in``,
``t_out``), and when the partition's run started and ended.  Level 2 (a
traced or timed run: FULL_TRACE, ``tf.profile()``, the live graph's timed
runs) adds every kernel of the partition, its ``_Send``/``_Recv`` ops too:
the partition runs with a :class:`TaskRecorder`, an observer that the
task's session gets through its run options (:func:`_recorder_factory`
hands it over when ``run_metadata`` is one), so the run core needs nothing
new.  The report travels back in the step's own reply: no extra Dask call.

**Clocks.**  A task's times are its own ``perf_counter_ns``, which another
process (another machine) counts from elsewhere.  :class:`ClockSync` aligns
them NTP-style: the client stamps each call as it leaves (``t0``) and as its
reply arrives (``t3``), the task stamps ``t_in`` and ``t_out``; then

    offset = ((t_in - t0) + (t_out - t3)) / 2     (task clock - client clock)
    error <= ((t3 - t0) - (t_out - t_in)) / 2     (half the time on the wire)

and of a task's last ``SAMPLES`` steps the one with the least time on the
wire is kept (the best bound).  A task time ``t`` is ``t - offset`` on the
client's clock.  The estimate is exact when the two legs of the round trip
took equally long; however unequal they were, the true offset lies within
``bound_ns`` of it.  On loopback the legs are far from equal (the call
waits in the worker's event loop, the reply does not), so the estimate
alone may put a Recv's end before its Send's start on another task: a
step's Send/Recv pairs then nudge the offsets, each within its bound,
until every value arrives after it was sent (:func:`causal_offsets`).

:func:`merged_timings` turns the reports into one ``RunTimings`` of the
client's plan (:class:`TaskTimings`): each op's kernel on the client's
clock, the device (task) it ran on, and the ops the client's plan does not
have (Send/Recv pairs, a fed value's Recv, a control edge's dummy) as
``extra`` events.  ``flowbook.profiling.tracing`` reads those two, so FULL_TRACE's
step stats and ``tf.profile()``'s Chrome trace have one process per task.

    >>> c = ClockSync()
    >>> c.sample("/job:ps/replica:0/task:0", 100, 1_150, 1_160, 300)  # 90 ns on the wire each way
    >>> c.offset("/job:ps/replica:0/task:0")
    (955, 95)
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any, NamedTuple

from flowbook.runtime.observers import Observer, observer_factory
from flowbook.runtime.timings import KernelTiming, RunTimings

__all__ = ["ClockSync", "TaskRecorder", "TaskReport", "TaskTimings", "merged_timings"]

SAMPLES = 8  # round trips per task the clock estimate picks its best from


class TaskReport(NamedTuple):
    """What one task's reply carries about its step (its own clock, ns)."""

    t_in: int  # the call reached the task server
    start_ns: int  # the partition's run started
    end_ns: int  # ... and ended
    t_out: int  # the reply left
    # level 2: (op name, op type, start, end, thread id, waited) per kernel, finish order
    ops: list[tuple[str, str, int, int, int, int]] | None


class TaskRecorder(Observer):
    """Keeps the kernel timings of one partition run (on the task; see the module doc).

    >>> TaskRecorder().kernels()
    []
    """

    def __init__(self) -> None:
        self.raw: tuple[Any, RunTimings] | None = None  # (plan, timings) from on_timings

    def on_timings(self, plan: Any, timings: RunTimings) -> None:
        self.raw = (plan, timings)

    def kernels(self) -> list[tuple[str, str, int, int, int, int]]:
        """(name, type, start_ns, end_ns, thread, waited_ns) per kernel, in finish order."""
        if self.raw is None:
            return []
        plan, t = self.raw
        ops, waited = plan.ops, t.waited_ns or {}
        starts, ends, threads = t.start_ns, t.end_ns, t.thread_id
        return [
            (ops[i].name, ops[i].type, starts[i], ends[i], threads[i], waited.get(i, 0))
            for i in t.order
        ]


@observer_factory
def _recorder_factory(options: Any, config: Any, run_metadata: Any) -> TaskRecorder | None:
    """A partition run on a task passes its TaskRecorder as ``run_metadata``."""
    return run_metadata if isinstance(run_metadata, TaskRecorder) else None


def now() -> int:
    """The clock every report and stamp uses: ``time.perf_counter_ns()``."""
    return time.perf_counter_ns()


class ClockSync:
    """Per task, its clock's offset from the client's and the bound on that estimate."""

    def __init__(self) -> None:
        # task -> its last SAMPLES (time on the wire, offset) pairs, ns
        self.samples: dict[str, deque[tuple[int, int]]] = {}

    def sample(self, task: str, t0: int, t_in: int, t_out: int, t3: int) -> None:
        """One round trip: sent at ``t0``, received at ``t_in``, answered ``t_out``, back ``t3``."""
        wire = max(0, (t3 - t0) - (t_out - t_in))
        offset = ((t_in - t0) + (t_out - t3)) // 2
        self.samples.setdefault(task, deque(maxlen=SAMPLES)).append((wire, offset))

    def offset(self, task: str) -> tuple[int, int]:
        """``(offset_ns, bound_ns)``: task time - client time, and how far off it may be."""
        kept = self.samples.get(task)
        if not kept:
            return 0, 0
        wire, offset = min(kept)
        return offset, (wire + 1) // 2

    def table(self) -> dict[str, dict[str, float]]:
        """Per task: ``offset_us`` and ``bound_us`` (what ``DaskSession.clock_offsets`` shows)."""
        return {
            t: {"offset_us": o / 1000, "bound_us": b / 1000}
            for t in self.samples
            for o, b in [self.offset(t)]
        }


class _Ref(NamedTuple):
    """An input of a stand-in op, as ``timeline.input_names`` reads one."""

    op: Any
    value_index: int
    name: str


class StandIn:
    """An op of a partition the client's graph does not have (a Send, a Recv, a dummy).

    It has what traces and step stats read of an op: a name, a type, inputs
    (a Recv's is its Send, so a trace draws an arrow from one to the other)
    and no outputs to describe.

    >>> StandIn("w/_1", "_Recv").type
    '_Recv'
    """

    __slots__ = ("control_inputs", "inputs", "name", "outputs", "type")

    def __init__(self, name: str, type_: str, inputs: tuple = ()) -> None:
        self.name, self.type, self.inputs = name, type_, inputs
        self.control_inputs: tuple = ()
        self.outputs: tuple = ()

    def describe(self) -> str:
        return f"{self.type} '{self.name}'"


class TaskTimings(RunTimings):
    """A cluster run's timings of the client's plan, plus where each op ran and the Send/Recvs."""

    __slots__ = ("extra", "op_devices", "spans")

    @classmethod
    def build(
        cls,
        lists: tuple[list[int], ...],
        op_devices: dict[Any, str],
        extra: list[tuple[Any, KernelTiming]],
        spans: dict[str, tuple[int, int]],
        waited: dict[int, int],
    ) -> TaskTimings:
        t = cls(*lists)
        t.op_devices = op_devices  # op (or stand-in) -> the full name of its task's device
        t.extra = extra  # (stand-in op, its kernel's timing) for ops not in the client's plan
        t.spans = spans  # task -> (start_ns, end_ns) of its partition's run, client clock
        t.waited_ns = waited or None
        return t


def _stand_ins(dplan: Any) -> dict[str, tuple[StandIn, str]]:
    """Partition node name -> (its stand-in, its task), for nodes the client's plan lacks."""
    have = {op.name for op in dplan.plan.ops}
    found: dict[str, tuple[StandIn, str]] = {}
    sends: dict[str, StandIn] = {}  # tensor_name -> its Send
    recvs: list[tuple[StandIn, str]] = []  # (Recv, tensor_name)
    for task, part in dplan.parted.parts.items():
        for node in part.graph_def.node:
            if node.name in have:
                continue
            s = StandIn(node.name, node.op)
            found[node.name] = (s, task)
            if node.op in ("_Send", "_Recv"):
                key = node.attr["tensor_name"].s.decode()
                (sends.__setitem__(key, s) if node.op == "_Send" else recvs.append((s, key)))
    for recv, key in recvs:
        send = sends.get(key)
        if send is not None:
            recv.inputs = (_Ref(send, 0, send.name + ":0"),)
    return found


def causal_offsets(
    clock: ClockSync, reports: dict[str, Any], pairs: list[tuple[str, int, str, int]]
) -> dict[str, int]:
    """Each task's offset: the NTP estimate, nudged (within its bound) so no value arrives
    before it was sent.

    ``pairs``: ``(send task, Send start, recv task, Recv end)`` in the tasks' own
    clocks.  A pair that arrives too early moves its receiver later (up to the
    receiver's bound), then its sender earlier (up to the sender's), for as many
    passes as there are tasks.  The true offsets lie within the bounds and satisfy
    every pair, so where the bounds hold this always succeeds.

    >>> c = ClockSync()
    >>> c.sample("a", 0, 50, 50, 100); c.sample("b", 0, 50, 50, 100)  # 0 ± 50 ns each
    >>> causal_offsets(c, {"a": 0, "b": 0}, [("a", 1_000, "b", 970)])  # b moves 30 ns later
    {'a': 0, 'b': -30}
    """
    est = {t: clock.offset(t) for t in reports}
    off = {t: o for t, (o, _) in est.items()}
    for _ in range(len(off)):
        moved = False
        for src, a, dst, b in pairs:
            early = (a - off[src]) - (b - off[dst])  # > 0: arrived before it was sent
            if early <= 0:
                continue
            room = off[dst] - (est[dst][0] - est[dst][1])  # how much later dst may go
            step = min(early, max(room, 0))
            off[dst] -= step
            early -= step
            room = (est[src][0] + est[src][1]) - off[src]  # how much earlier src may go
            off[src] += min(early, max(room, 0))
            moved = True
        if not moved:
            break
    return off


def merged_timings(
    dplan: Any, reports: dict[str, tuple[int, int, TaskReport]], clock: ClockSync
) -> TaskTimings:
    """One RunTimings of ``dplan``'s client plan from its tasks' reports (``(t0, t3, report)``)."""
    plan = dplan.plan
    n = len(plan.ops)
    index = {op.name: i for i, op in enumerate(plan.ops)}
    where = dplan.parted.where
    stand_ins = _stand_ins(dplan)
    sends: dict[Any, tuple[str, int]] = {}  # Send stand-in -> (task, start)
    recvs: list[tuple[Any, str, int]] = []  # (Recv stand-in, task, end)
    for task, (_, _, rep) in reports.items():
        for name, _type, a, b, _th, _w in rep.ops or ():
            s = stand_ins.get(name)
            if s is not None and s[0].type == "_Send":
                sends[s[0]] = (task, a)
            elif s is not None and s[0].type == "_Recv" and s[0].inputs:
                recvs.append((s[0], task, b))
    pairs = [(*sends[r.inputs[0].op], task, b) for r, task, b in recvs if r.inputs[0].op in sends]
    offsets = causal_offsets(clock, reports, pairs)
    starts, ends, threads = [0] * n, [0] * n, [0] * n
    order: list[tuple[int, int]] = []  # (end, op index)
    waited: dict[int, int] = {}
    devices: dict[Any, str] = {op: f"{where[op.name]}/device:CPU:0" for op in plan.ops}
    extra: list[tuple[Any, KernelTiming]] = []
    spans: dict[str, tuple[int, int]] = {}
    for task, (_, _, rep) in reports.items():
        off = offsets[task]
        spans[task] = (rep.start_ns - off, rep.end_ns - off)
        for name, _type, a, b, th, w in rep.ops or ():
            a, b = a - off, b - off
            i = index.get(name)
            if i is not None and where[name] == task:
                starts[i], ends[i], threads[i] = a, b, th
                order.append((b, i))
                if w:
                    waited[i] = w
            elif name in stand_ins:
                s = stand_ins[name][0]
                devices[s] = f"{task}/device:CPU:0"
                extra.append((s, KernelTiming(a - w, a, b, th, w)))
    order.sort()
    ids = [i for _, i in order]
    t0 = min((s for s, _ in spans.values()), default=0)
    sched = [starts[i] if starts[i] else t0 for i in range(n)]
    return TaskTimings.build((ids, sched, starts, ends, threads), devices, extra, spans, waited)
