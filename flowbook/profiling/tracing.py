"""See where the time goes: per-op step stats of traced runs, and ``profile()``.

Two ways in, both executor observers (``flowbook.runtime.executor.Observer``):

- ``sess.run(..., options=RunOptions(trace_level=FULL_TRACE), run_metadata=md)``
  attaches a :class:`StepStatsCollector`, which fills ``md.step_stats`` with
  TF's ``StepStats``: one ``DeviceStepStats`` for the CPU holding one
  ``NodeExecStats`` per executed op (times, thread, label, outputs).
- ``with flowbook.profile() as prof:`` collects every run inside (in any
  session, through ``session.observe``) and reports: ``prof.table()``,
  ``prof.timeline()`` (a Gantt chart per thread), ``prof.chrome_trace()``,
  ``prof.node_times()``.

**Keeping the run fast.**  The observer's per-op work is the smallest that
keeps the facts: the executor times kernels into flat lists and hands them
over once (``on_timings``: no Python frame per op), together with each
output's dtype and shape (``keeps_shapes``) -- not the array, so values are
still freed after their last use.  ``on_finish`` only stamps the
end; the dataclasses are built on the first read of ``step_stats.dev_stats``
(a :class:`StepStats` subclass that materialises itself), so a traced run
pays a few hundred nanoseconds per op however many fields TF defines.

**Devices.**  Each op's node stats go under the device it ran on
(``/job:localhost/replica:0/task:0/device:GPU:0``...), copy nodes included.
An op on a GPU is also timed on the device, with CUDA events (its host entry
only covers the launch): those times form a second entry,
``.../device:GPU:0/stream:all``, as in TF's traces, and are what the profile
table and the heat overlay count for that op.

**Cluster runs.**  A run on a Dask cluster (``flowbook.distributed``) hands
over its tasks' timings merged on the client's clock
(``dist_trace.TaskTimings``): each op goes under its task's device
(``/job:ps/replica:0/task:0/device:CPU:0``: a process per task in the
Chrome trace), and the partitions' ``_Send``/``_Recv`` ops come along.

**Times.**  Kernels are timed with ``time.perf_counter_ns`` (on the thread
that ran them, pool threads included); one offset taken at ``on_start``,
``time.time_ns() - time.perf_counter_ns()``, turns them into epoch
microseconds.  Floor division keeps order: an op that started after another
ended never shows the other way round.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default(), tf.Session() as sess:
    ...     y = tf.constant(2.0, name="two") * 3.0
    ...     md = tf.RunMetadata()
    ...     opts = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    ...     _ = sess.run(y, options=opts, run_metadata=md)
    >>> [n.timeline_label for n in md.step_stats.dev_stats[0].node_stats]
    ['two = Const()', 'mul/y = Const()', 'mul = Mul(two, mul/y)']
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from flowbook.platform.files import atomic_write
from flowbook.profiling.profile_table import profile_table
from flowbook.profiling.timeline import (
    GanttChart,
    OpEvent,
    ProfileTable,
    input_names,
    thread_names,
    trace_events,
)
from flowbook.runtime.config import RunOptions
from flowbook.runtime.memory_plan import op_memory
from flowbook.runtime.observers import Observer, observer_factory
from flowbook.runtime.session import observe
from flowbook.runtime.step_stats import (
    AllocationDescription,
    AllocatorMemoryUsed,
    DeviceStepStats,
    NodeExecStats,
    NodeOutput,
    StepStats,
    TensorDescription,
    tensor_facts,
)
from flowbook.runtime.timings import KernelTiming, RunTimings

__all__ = ["CPU_DEVICE", "Profile", "ProfileTable", "StepStatsCollector", "profile"]

CPU_DEVICE = "/job:localhost/replica:0/task:0/device:CPU:0"
STREAM = "/stream:all"  # suffix of a device's lane of kernels timed on the device (TF's name)

# (dtype, shape) of one output, each None if it has none; its bytes are itemsize * size
Output = tuple[Any, Any]


class _Recorder:
    """The raw facts of one observed run, as the hooks left them."""

    __slots__ = (
        "_devices",
        "_offset",
        "_outputs",
        "_raw",
        "_stream",
        "_timings",
        "end_ns",
        "start_ns",
    )

    def __init__(self) -> None:
        self._raw: tuple[Any, RunTimings] | None = None  # (plan, timings) from on_timings
        self._timings: dict[Any, KernelTiming] | None = None  # built from _raw on first read
        self._devices: dict[Any, str] = {}  # op -> full device name, for plans off the CPU
        self._stream: dict[Any, tuple[int, int]] = {}  # op -> its kernel's device (start, end) ns
        self._outputs: dict[Any, Output | list[Output]] | None = None  # built from _raw
        self.start_ns = time.perf_counter_ns()  # run start (perf_counter)
        self._offset: int | None = None  # perf_counter -> epoch, read when first needed
        self.end_ns = self.start_ns  # run end, set by on_finish

    @property
    def plan(self) -> Any:
        """The plan that ran (written or optimised), once its timings are in; else None."""
        return self._raw[0] if self._raw is not None else None

    @property
    def offset_ns(self) -> int:
        """What turns a perf_counter time into epoch time (read once, when stats are built)."""
        if self._offset is None:
            self._offset = time.time_ns() - time.perf_counter_ns()
        return self._offset

    @property
    def timings(self) -> dict[Any, KernelTiming]:
        """op -> its kernel's timing, in finish order (built on first read)."""
        if self._timings is None:
            self._timings = {}
            if self._raw is not None:
                plan, t = self._raw
                ops = plan.ops
                self._timings = {ops[i]: t.of(i) for i in t.order}
                if getattr(plan, "off_host", False):
                    self._devices = {op: d.full_name for op, d in zip(ops, plan.devices)}
                if getattr(t, "device_ns", None):
                    self._stream = {ops[i]: se for i, se in t.device_ns.items()}
                if getattr(t, "op_devices", None):  # a cluster run: each op's task
                    self._devices = t.op_devices
        return self._timings

    @property
    def outputs(self) -> dict[Any, Output | list[Output]]:
        """op -> (dtype, shape) of its one output, or a list of them (several or none)."""
        if self._outputs is None:
            self._outputs = {}
            if self._raw is not None:
                plan, t = self._raw
                if t.shapes is not None:
                    ops, shapes = plan.ops, t.shapes
                    self._outputs = {ops[i]: shapes[i] for i in t.order}
        return self._outputs

    def runs(self) -> list[tuple[Any, KernelTiming, tuple[tuple[str, int], ...]]]:
        """(op, timing, where) per kernel run: once per op, or per iteration in loops."""
        raw = self._raw[1] if self._raw is not None else None
        if raw is None or raw.runs is None:
            extra = getattr(raw, "extra", ())  # a cluster run's Send/Recvs (dist_trace)
            return [(op, t, ()) for op, t in [*self.timings.items(), *extra]]
        self.timings  # noqa: B018 (builds the device maps)
        ops = self._raw[0].ops  # type: ignore[index]
        waited = raw.waited_runs or {}  # position -> ns that kernel run waited on a queue
        return [
            (ops[i], KernelTiming(a - waited.get(k, 0), a, b, th, waited.get(k, 0)), w)
            for k, ((i, a, b, th), w) in enumerate(zip(raw.runs, raw.where))
        ]

    def device_of(self, op: Any) -> str:
        """The full name of the device ``op`` ran on."""
        if self._timings is None:
            self.timings  # noqa: B018 (builds the maps)
        return self._devices.get(op, CPU_DEVICE)

    @property
    def stream(self) -> dict[Any, tuple[int, int]]:
        """op -> (start_ns, end_ns) of its kernel on its device, for ops off the CPU."""
        if self._timings is None:
            self.timings  # noqa: B018 (builds the maps)
        return self._stream

    def kernel_ns(self, op: Any, t: KernelTiming) -> int:
        """How long ``op``'s kernel took: on its device where measured there, else on the host."""
        se = self._stream.get(op) if self._stream else None
        return se[1] - se[0] if se is not None else t.end_ns - t.start_ns


def _outputs_of(rec: _Recorder, op: Any) -> list[Output]:
    """The recorded (dtype, shape) of each of ``op``'s outputs.

    Ops whose static shapes are fully known are not recorded by the run
    (``Plan.dynamic``; on the straight line, nor are those the fed
    shapes determine, ``compile.shapes_given_feeds``): (None, None) stands for
    "as the graph says".
    """
    out = rec.outputs.get(op)
    if out is None:
        return [(None, None)] * len(op.outputs) if rec._raw is not None else []
    return [out] if isinstance(out, tuple) else out


class StepStatsCollector(Observer):
    """Fills ``run_metadata.step_stats`` with one NodeExecStats per executed op.

    ``on_step(step_stats, recorder)``, if given, is called at the end of each
    observed run.

    >>> import flowbook as tf
    >>> md = tf.RunMetadata()
    >>> with tf.Graph().as_default(), tf.Session() as s, tf.observe(StepStatsCollector(md)):
    ...     _ = s.run(tf.constant(1, name="one") + 1)
    >>> [(n.node_name, n.output[0].tensor_description.dtype) for n in md.step_stats.dev_stats[0].node_stats]
    [('one', 'int32'), ('add/y', 'int32'), ('add', 'int32')]
    """

    def __init__(self, run_metadata: Any = None, on_step: Any = None) -> None:
        self.run_metadata = run_metadata  # where step_stats goes (None: only on_step)
        self.on_step = on_step  # callback(step_stats, recorder) after each run
        self._rec: _Recorder | None = None  # the current run's raw facts (from on_start)

    def on_start(self, plan: Any) -> None:
        self._rec = _Recorder()

    keeps_shapes = True  # the executor records each output's dtype and shape with the timings

    def on_timings(self, plan: Any, timings: RunTimings) -> None:
        """Keep the run's flat timing lists and output shapes; records are built when first read."""
        self._rec._raw = (plan, timings)  # type: ignore[union-attr]

    def on_finish(self, plan: Any, error: BaseException | None) -> None:
        rec = self._rec
        assert rec is not None, "on_finish before on_start"
        rec.end_ns = time.perf_counter_ns()
        stats = LazyStepStats(_rec=rec)
        if self.run_metadata is not None:
            self.run_metadata.step_stats = stats
        if self.on_step is not None:
            self.on_step(stats, rec)


class LazyStepStats(StepStats):
    """A StepStats whose ``dev_stats`` are built from a run's raw records on first read.

    >>> LazyStepStats([DeviceStepStats("cpu")]) == StepStats([DeviceStepStats("cpu")])
    True
    """

    def __init__(
        self, dev_stats: list[DeviceStepStats] | None = None, *, _rec: _Recorder | None = None
    ) -> None:
        self._rec = _rec  # raw records still to build from, or None
        self._dev = dev_stats if dev_stats is not None else []  # built (or given) dev_stats

    @property  # type: ignore[override]
    def dev_stats(self) -> list[DeviceStepStats]:
        if self._rec is not None:
            self._dev, self._rec = _build(self._rec), None
        return self._dev

    @dev_stats.setter
    def dev_stats(self, value: list[DeviceStepStats]) -> None:
        self._dev, self._rec = value, None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StepStats) and self.dev_stats == other.dev_stats

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"StepStats(dev_stats={self.dev_stats!r})"

    def __reduce__(self) -> Any:  # copies and pickles are plain StepStats
        return (StepStats, (self.dev_stats,))


def _label(op: Any) -> str:
    return f"{op.name} = {op.type}({', '.join(input_names(op))})"


def _where_label(where: tuple[tuple[str, int], ...]) -> str:
    """`` [loop 'rnn/while/while_context' iteration 3]`` for an op run in a loop, else ``""``."""
    return "".join(f" [loop '{name}' iteration {k}]" for name, k in where)


def _memory(rec: _Recorder) -> tuple[int, dict[Any, tuple[int, int, int]]]:
    """``flowbook.runtime.memory_plan.op_memory`` of a recorded run; runs with loops: (0, {})."""
    if rec._raw is None or rec._raw[1].runs is not None or not hasattr(rec._raw[0], "uses"):
        return 0, {}  # (a test's stand-in plan has no last reads to go by)
    plan, t = rec._raw
    return op_memory(plan, t.order, lambda op: _outputs_of(rec, op))


def _build(rec: _Recorder) -> list[DeviceStepStats]:
    """The NodeExecStats of a recorded run per device, ordered by start; the CPU first."""
    off = rec.offset_ns
    _, memory = _memory(rec)
    groups: dict[str, list[NodeExecStats]] = {CPU_DEVICE: []}  # device -> its nodes
    for op, t, where in rec.runs():
        start = (t.start_ns - t.waited_ns + off) // 1000  # a queue op: from its wait's start
        end = (t.end_ns + off) // 1000
        outputs = []
        for k, out in enumerate(_outputs_of(rec, op)):
            dtype, shape, nbytes = tensor_facts(op, k, *out)
            alloc = AllocationDescription(nbytes, nbytes)
            outputs.append(NodeOutput(k, TensorDescription(dtype, shape, alloc)))
        groups.setdefault(rec.device_of(op), []).append(
            NodeExecStats(
                node_name=op.name,
                all_start_micros=start,
                op_start_rel_micros=(t.start_ns + off) // 1000 - start,  # after its wait
                op_end_rel_micros=end - start,
                all_end_rel_micros=end - start,
                scheduled_micros=(t.scheduled_ns + off) // 1000,
                thread_id=t.thread_id,
                timeline_label=_label(op) + _where_label(where),
                output=outputs,
                frame_name=where[-1][0] if where else "",
                iteration_id=where[-1][1] if where else 0,
                memory=[AllocatorMemoryUsed("cpu", *memory[op])] if op in memory else [],
            )
        )
    for op, (s_ns, e_ns) in rec.stream.items():  # the device lane: kernels timed on the device
        start, end = (s_ns + off) // 1000, (e_ns + off) // 1000
        node = NodeExecStats(op.name, start, 0, end - start, end - start, start, 0, _label(op))
        groups.setdefault(rec.device_of(op) + STREAM, []).append(node)
    if len(groups) > 1 and not groups[CPU_DEVICE]:
        del groups[CPU_DEVICE]
    out = []
    for device, nodes in groups.items():
        nodes.sort(key=lambda n: n.all_start_micros)
        out.append(DeviceStepStats(device=device, node_stats=nodes))
    return out


# ------------------------------------------------------------------ profile
class _ProfileObserver(Observer):
    """Routes each run's hooks to its own StepStatsCollector (runs may overlap in threads)."""

    def __init__(self, prof: Profile) -> None:
        self._prof = prof
        self._local = threading.local()  # .stack: collectors of this thread's runs

    def on_start(self, plan: Any) -> None:
        c = StepStatsCollector(on_step=self._prof._add)
        c.on_start(plan)
        stack = getattr(self._local, "stack", None)
        if stack is None:
            stack = self._local.stack = []
        stack.append(c)

    keeps_shapes = True  # for the collectors' output shapes

    def on_timings(self, plan: Any, timings: RunTimings) -> None:
        self._local.stack[-1].on_timings(plan, timings)

    def on_finish(self, plan: Any, error: BaseException | None) -> None:
        self._local.stack.pop().on_finish(plan, error)


class Profile:
    """The runs collected by ``profile()``, and views of them.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default(), tf.Session() as s, profile() as prof:
    ...     _ = s.run(tf.constant(1.0, name="c") * 2.0)
    >>> len(prof.runs), sorted(prof.node_times())
    (1, ['c', 'mul', 'mul/y'])
    """

    def __init__(self) -> None:
        self.runs: list[StepStats] = []  # StepStats of each run, in finish order
        self._recs: list[_Recorder] = []  # their raw records (ns precision)
        self._lock = threading.Lock()  # runs may finish on several threads

    def _add(self, stats: StepStats, rec: _Recorder) -> None:
        with self._lock:
            self.runs.append(stats)
            self._recs.append(rec)

    def events(self) -> list[list[OpEvent]]:
        """Each run's ops as OpEvents, µs relative to the first run's start."""
        if not self._recs:
            return []
        t0 = min(r.start_ns for r in self._recs)
        runs = []
        for rec in self._recs:
            run = [
                OpEvent(
                    op.name,
                    op.type,
                    input_names(op),
                    (t.start_ns - t0) / 1000,
                    (t.end_ns - t0) / 1000,
                    t.thread_id,
                    rec.device_of(op),
                    [(k, *tensor_facts(op, k, *out)) for k, out in enumerate(_outputs_of(rec, op))],
                    waited_us=t.waited_ns / 1000,
                )
                for op, t, where in rec.runs()
            ]
            for op, (s_ns, e_ns) in rec.stream.items():
                device = rec.device_of(op)
                lane = device.rpartition("/device:")[2] + " stream"
                start, end = (s_ns - t0) / 1000, (e_ns - t0) / 1000
                run.append(OpEvent(op.name, op.type, (), start, end, 0, device + STREAM, lane=lane))
            runs.append(run)
        return runs

    def node_times(self) -> dict[str, float]:
        """Op name -> total kernel µs over all runs (the widget's heat overlay)."""
        out: dict[str, float] = {}
        for rec in self._recs:
            for op, t, _where in rec.runs():
                out[op.name] = out.get(op.name, 0.0) + rec.kernel_ns(op, t) / 1000
        return out

    def run_time_us(self) -> float:
        """Wall time of all the collected runs together, µs."""
        return sum(r.end_ns - r.start_ns for r in self._recs) / 1000

    def table(self, by: str = "op", sort: str = "total") -> ProfileTable:
        """Kernel time per executed op (``by="op"``), per written op (``by="written"``)
        or per op type (``by="type"``); see :mod:`flowbook.profiling.profile_table`.

        Time a queue op spent waiting (for an element, for room) is not kernel
        time: when some op waited, a ``waited_ms`` column counts it.

        ``share`` is the fraction of the runs' time; with kernels on several
        threads at once the denominator is the threads' busy time instead, so
        shares always sum to at most 1.
        """
        return profile_table(self._recs, self.run_time_us(), by, sort, _memory)

    def timeline(self, max_bars: int = 5000) -> GanttChart:
        """A Gantt chart of the runs, one lane per thread (the last runs, up to ``max_bars`` ops)."""
        runs = self.events()
        kept: list[list[OpEvent]] = []
        for run in reversed(runs):
            if kept and sum(map(len, kept)) + len(run) > max_bars:
                break
            kept.insert(0, run)
        note = "" if len(kept) == len(runs) else f"last {len(kept)} of {len(runs)} runs"
        return GanttChart([e for run in kept for e in run], thread_names(), note)

    def chrome_trace(self, show_dataflow: bool = True, show_memory: bool = False) -> str:
        """All runs as one Trace Event Format JSON string (Perfetto, chrome://tracing)."""
        events = trace_events(self.events(), show_dataflow, show_memory)
        return json.dumps({"traceEvents": events, "displayTimeUnit": "ns"}, separators=(",", ":"))

    def save_trace(self, path: str | Path, **kwargs: Any) -> Path:
        """Write ``chrome_trace(**kwargs)`` to ``path`` whole (``flowbook.platform.files``); returns it."""
        path = Path(path)
        atomic_write(path, self.chrome_trace(**kwargs))
        return path


@contextlib.contextmanager
def profile(optimized: bool = False) -> Iterator[Profile]:
    """Collect every run inside the ``with`` block, in any session.

    By default the profiled runs run the plan as written, every op timed (as
    the live graph shows them).  ``optimized=True`` profiles what actually
    runs: the graph optimiser's plan (``flowbook.runtime.optimize.optimizer``, from the
    second run of a feed-shape signature on), whose executed ops
    ``table(by="written")`` attributes back to the written ops.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default(), tf.Session() as s, profile() as prof:
    ...     _ = s.run(tf.constant(1.0) + 1.0)
    >>> [r["type"] for r in prof.table(by="type", sort="name").rows]
    ['Add', 'Const']
    """
    prof = Profile()
    watcher = _ProfileObserver(prof)
    watcher.takes_optimized = optimized  # may the runs take the optimised plan
    with observe(watcher):
        yield prof


@observer_factory
def _traced(options: Any, config: Any, run_metadata: Any) -> StepStatsCollector | None:
    """A StepStatsCollector for a run whose ``RunOptions`` ask for a trace into ``run_metadata``."""
    if options is None or run_metadata is None or options.trace_level == RunOptions.NO_TRACE:
        return None
    return StepStatsCollector(run_metadata)
