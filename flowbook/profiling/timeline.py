"""Chrome traces of traced runs: TensorFlow 1's ``timeline`` module.

``Timeline(step_stats, graph=None).generate_chrome_trace_format()`` turns the
``StepStats`` of a run (``RunOptions(trace_level=FULL_TRACE)``) into a JSON
string in the Trace Event Format, which Perfetto (ui.perfetto.dev) and
``chrome://tracing`` open:

- one **process** per device (a ``process_name`` metadata event), one
  **thread lane** per ``thread_id`` the kernels ran on (``thread_name``,
  from the live thread when it still exists);
- one ``"X"`` complete event per op: ``ts``/``dur`` in microseconds, ``name``
  the op's name, ``args`` its type and inputs (``input0``...) as TF writes them;
- a queue op that waited before its kernel ran (``op_start_rel_micros`` > 0)
  gets a separate ``"wait"`` slice, an async pair (``"b"``/``"e"``, category
  ``wait``) that Perfetto draws on a track of its own, since the wait holds
  no thread;
- with ``show_dataflow``, a flow arrow per data edge: an ``"s"`` event on the
  producer's slice and an ``"f"`` event (``bp: "e"``, bound to the enclosing
  slice) on each consumer's slice, sharing one ``id`` per edge;
- a GPU's kernels timed on the device (CUDA events) come as a second
  process, ``.../device:GPU:0/stream:all``, with one lane (TF's device
  lane); its events carry no flows, inputs or outputs;
- with ``show_memory``, a counter (``"C"``) of the bytes held by live outputs
  per device, in an ``Allocators`` process: a tensor lives from the end of the
  op producing it to the end of its last consumer in the step.

An op's type and inputs come from ``graph`` when given, otherwise from its
``timeline_label`` (``"name = Type(in0, in1:1, ^ctrl)"``), as TF's does.  The
work is done on a neutral form, lists of :class:`OpEvent` (one list per run),
which ``flowbook.profiling.tracing`` also feeds with nanosecond-precise times.  Its
other views of the same events live here too: :class:`GanttChart` (one lane
per thread) and :class:`ProfileTable` (per-op and per-type totals).

    >>> import json
    >>> from flowbook.runtime.step_stats import StepStats, DeviceStepStats, NodeExecStats
    >>> a = NodeExecStats("a", 10, 0, 2, 2, 9, 1, "a = Const()")
    >>> b = NodeExecStats("b", 13, 0, 1, 1, 12, 1, "b = Neg(a)")
    >>> ss = StepStats([DeviceStepStats("/device:CPU:0", [a, b])])
    >>> trace = json.loads(Timeline(ss).generate_chrome_trace_format())
    >>> sorted({e["ph"] for e in trace["traceEvents"]})
    ['M', 'X', 'f', 's']
"""

from __future__ import annotations

import html
import json
import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "GanttChart",
    "OpEvent",
    "ProfileTable",
    "Timeline",
    "events_from_step_stats",
    "trace_events",
]

_LABEL = re.compile(r"^(.*?) = (.*?)\((.*)\)(?: \[loop [^\]]*\])*$", re.DOTALL)


@dataclass(slots=True)
class OpEvent:
    """One executed op, the neutral form traces and charts are drawn from (times in µs)."""

    name: str  # node name
    type: str  # op type, "" when unknown
    inputs: tuple[str, ...]  # NodeDef-style input names: "a", "a:1", "^ctrl"
    start_us: float  # kernel start
    end_us: float  # kernel end
    thread_id: int  # thread the kernel ran on
    device: str = ""  # device the op ran on
    # (slot, dtype name, shape, bytes) per output
    outputs: list[tuple[int, str, list[int], int]] = field(default_factory=list)
    lane: str = ""  # the lane's label when it is not a host thread: "GPU:0 stream"
    waited_us: float = 0.0  # before start_us: how long it waited on a queue (no thread held)


def parse_label(label: str) -> tuple[str, tuple[str, ...]]:
    """Op type and input names from a TF timeline label.

    >>> parse_label("y = MatMul(x, w:1, ^init)")
    ('MatMul', ('x', 'w:1', '^init'))
    >>> parse_label("a = Add(b, c) [loop 'w/while_context' iteration 2]")  # an op in a loop
    ('Add', ('b', 'c'))
    >>> parse_label("garbage")
    ('', ())
    """
    m = _LABEL.match(label)
    if not m:
        return "", ()
    args = m.group(3).strip()
    return m.group(2), tuple(a.strip() for a in args.split(",")) if args else ()


def input_names(op: Any) -> tuple[str, ...]:
    """``op``'s inputs spelled as in a NodeDef: ``"a"``, ``"a:1"``, ``"^ctrl"``."""
    data = tuple(t.op.name if t.value_index == 0 else t.name for t in op.inputs)
    return data + tuple("^" + c.name for c in op.control_inputs)


def events_from_step_stats(step_stats: Any, graph: Any = None) -> list[OpEvent]:
    """The ops of ``step_stats`` as OpEvents; types and inputs from ``graph`` when it has the op."""
    events = []
    for dev in step_stats.dev_stats:
        lane = _stream_lane(dev.device)
        for ns in dev.node_stats:
            op_type, inputs = parse_label(ns.timeline_label)
            op = _find_op(graph, ns.node_name)
            if op is not None:
                op_type, inputs = op.type, input_names(op)
            if lane:
                inputs = ()
            start = ns.all_start_micros + ns.op_start_rel_micros  # its kernel's, after a wait
            outputs = [
                (
                    o.slot,
                    o.tensor_description.dtype,
                    list(o.tensor_description.shape),
                    o.tensor_description.allocation_description.allocated_bytes,
                )
                for o in ns.output
            ]
            events.append(
                OpEvent(
                    ns.node_name,
                    op_type,
                    inputs,
                    start,
                    ns.all_start_micros + max(ns.all_end_rel_micros, ns.op_end_rel_micros),
                    ns.thread_id,
                    dev.device,
                    outputs,
                    lane,
                    max(ns.op_start_rel_micros, 0),
                )
            )
    return events


def _stream_lane(device: str) -> str:
    """A device lane's label (``"GPU:0 stream"``) from its name, "" for a host device.

    >>> _stream_lane("/job:localhost/replica:0/task:0/device:GPU:0/stream:all")
    'GPU:0 stream'
    """
    if not device.endswith("/stream:all"):
        return ""
    return device[: -len("/stream:all")].rpartition("/device:")[2] + " stream"


def _find_op(graph: Any, name: str) -> Any:
    if graph is None:
        return None
    try:
        return graph.get_operation_by_name(name)
    except (KeyError, ValueError):
        return None


def thread_names() -> dict[int, str]:
    """``threading.get_ident()`` -> name, for the threads alive now."""
    return {t.ident: t.name for t in threading.enumerate() if t.ident is not None}


def trace_events(
    runs: Sequence[Sequence[OpEvent]],
    show_dataflow: bool = True,
    show_memory: bool = False,
    names: dict[int, str] | None = None,
) -> list[dict[str, Any]]:
    """Trace Event Format events for ``runs`` (flows and memory stay within a run).

    >>> ev = trace_events([[OpEvent("a", "Const", (), 0.0, 1.0, 7)]])
    >>> [e["ph"] for e in ev], ev[-1]["args"]
    (['M', 'M', 'M', 'X'], {'name': 'a', 'op': 'Const'})
    """
    names = thread_names() if names is None else names
    devices = _ordered(e.device for run in runs for e in run)
    pids = {d: k for k, d in enumerate(devices)}
    out: list[dict[str, Any]] = []
    for d, pid in pids.items():
        out.append(_meta("process_name", pid, None, {"name": f"{d or 'device'} Compute"}))
        out.append(_meta("process_sort_index", pid, None, {"sort_index": pid}))
    lanes = _ordered((e.device, e.thread_id, e.lane) for run in runs for e in run)
    for d, tid, lane in lanes:  # a host thread, or a device's lane
        label = lane or names.get(tid, f"thread {tid}")
        out.append(_meta("thread_name", pids[d], tid, {"name": label}))
    flow_id = wait_id = 0
    for run in runs:
        made = {e.name: e for e in run if not e.lane}  # op name -> its (host) event
        for e in sorted(run, key=lambda e: e.start_us):
            pid = pids[e.device]
            args: dict[str, Any] = {"name": e.name, "op": e.type}
            for k, name in enumerate(e.inputs):
                args[f"input{k}"] = name
            out.append(
                {
                    "ph": "X",
                    "cat": "Op",
                    "name": e.name,
                    "pid": pid,
                    "tid": e.thread_id,
                    "ts": e.start_us,
                    "dur": e.end_us - e.start_us,
                    "args": args,
                }
            )
            if e.waited_us > 0:  # its wait: an async slice, on a track of its own
                wait_id += 1
                for ph, ts in (("b", e.start_us - e.waited_us), ("e", e.start_us)):
                    out.append({"ph": ph, "cat": "wait", "name": "wait", "id": wait_id})
                    out[-1].update(pid=pid, tid=e.thread_id, ts=ts, args={"op": e.name})
            if not show_dataflow or e.lane:
                continue
            for name in e.inputs:
                src = made.get(name.rpartition(":")[0] or name)
                if src is None or name.startswith("^"):
                    continue
                flow_id += 1
                common = {"cat": "DataFlow", "name": name, "id": flow_id}
                src_pid = pids[src.device]
                out.append({"ph": "s", "pid": src_pid, "tid": src.thread_id, "ts": src.start_us})
                out[-1].update(common)
                out.append({"ph": "f", "bp": "e", "pid": pid, "tid": e.thread_id, "ts": e.start_us})
                out[-1].update(common)
    if show_memory:
        out.extend(_memory_events(runs, len(pids)))
    return out


def _ordered(items: Iterable[Any]) -> list[Any]:
    return list(dict.fromkeys(items))


def _meta(kind: str, pid: int, tid: int | None, args: dict[str, Any]) -> dict[str, Any]:
    e: dict[str, Any] = {"ph": "M", "name": kind, "pid": pid, "ts": 0, "args": args}
    e["tid"] = 0 if tid is None else tid
    return e


def _memory_events(runs: Sequence[Sequence[OpEvent]], pid: int) -> list[dict[str, Any]]:
    """Counters of live output bytes per device, in an ``Allocators`` process."""
    out = [_meta("process_name", pid, None, {"name": "Allocators"})]
    for run in runs:
        changes: dict[str, list[tuple[float, int]]] = {}
        last_use: dict[str, float] = {}
        for e in run:
            for name in e.inputs:
                key = name[:-2] if name.endswith(":0") else name
                last_use[key] = max(last_use.get(key, e.end_us), e.end_us)
        step_end = max((e.end_us for e in run), default=0.0)
        for e in run:
            for slot, _, _, nbytes in e.outputs:
                key = e.name if slot == 0 else f"{e.name}:{slot}"
                dev = changes.setdefault(e.device, [])
                dev.append((e.end_us, nbytes))
                dev.append((max(last_use.get(key, step_end), e.end_us), -nbytes))
        for device, deltas in changes.items():
            live: dict[float, int] = {}  # ts -> bytes live after all changes at ts
            total = 0
            for ts, delta in sorted(deltas):
                total += delta
                live[ts] = total
            for ts, nbytes in live.items():
                out.append({"ph": "C", "name": device or "device", "pid": pid, "tid": 0})
                out[-1].update(ts=ts, args={"bytes": nbytes})
    return out


class Timeline:
    """A run's StepStats as a Chrome trace, as TF1's ``timeline.Timeline``.

    ``graph`` (optional) supplies op types and inputs; without it they come
    from each node's ``timeline_label``.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default(), tf.Session() as sess:
    ...     md = tf.RunMetadata()
    ...     opts = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    ...     _ = sess.run(tf.constant(1.0) + 1.0, options=opts, run_metadata=md)
    >>> '"ph":"X"' in Timeline(md.step_stats).generate_chrome_trace_format()
    True
    """

    def __init__(self, step_stats: Any, graph: Any = None) -> None:
        self._step_stats = step_stats  # the run's StepStats
        self._graph = graph  # where op types and inputs come from, if given

    def events(self) -> list[OpEvent]:
        """The run's ops as OpEvents."""
        return events_from_step_stats(self._step_stats, self._graph)

    def generate_chrome_trace_format(
        self, show_dataflow: bool = True, show_memory: bool = False
    ) -> str:
        """The trace as a JSON string (``{"traceEvents": [...]}``)."""
        events = trace_events([self.events()], show_dataflow, show_memory)
        return json.dumps({"traceEvents": events, "displayTimeUnit": "ns"}, separators=(",", ":"))


# ------------------------------------------------------------------- gantt
def _lane_key(e: OpEvent) -> Any:
    """A chart lane: the thread, or (device, lane) for a device's lane, or (task, thread) for
    an op of a cluster run (its thread is in the task's process)."""
    if e.lane:
        return (e.device, e.lane)
    task = _task_of(e.device)
    return (task, e.thread_id) if task else e.thread_id


def _task_of(device: str) -> str:
    """``"ps:0"`` for a device of a cluster task (``/job:ps/replica:0/task:0/...``), else "".

    >>> _task_of("/job:worker/replica:0/task:1/device:CPU:0"), _task_of("/device:CPU:0")
    ('worker:1', '')
    """
    if not device.startswith("/job:") or device.startswith("/job:localhost"):
        return ""
    parts = dict(p.split(":", 1) for p in device.strip("/").split("/") if ":" in p)
    return f"{parts['job']}:{parts.get('task', '0')}"


_PALETTE = (
    "#4e79a7",
    "#f28e2b",
    "#e15759",
    "#76b7b2",
    "#59a14f",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#bab0ac",
    "#86bcb6",
    "#d37295",
)


def _fmt_us(us: float) -> str:
    return f"{us / 1000:.3g} ms" if us >= 1000 else f"{us:.3g} µs"


class GanttChart:
    """OpEvents drawn as inline SVG: one lane per thread, a bar per op, coloured by type.

    Queue ops' waits (``OpEvent.waited_us``) are bars of type ``(waiting)``
    on a lane of their own: a wait holds no thread.

    >>> chart = GanttChart([OpEvent("a", "Add", (), 0.0, 2.0, 1), OpEvent("b", "Mul", (), 1.0, 3.0, 2)])
    >>> chart._repr_html_().count('class="lane"')
    2
    """

    WIDTH = 900  # px, the whole chart
    LABEL = 120  # px, the thread-name column
    LANE = 22  # px per lane

    def __init__(
        self, events: Sequence[OpEvent], names: dict[int, str] | None = None, note: str = ""
    ) -> None:
        # the ops to draw, and the waits of queue ops, on a lane of their own
        self.events = list(events) + [
            OpEvent(e.name, "(waiting)", (), e.start_us - e.waited_us, e.start_us, 0, e.device)
            for e in events
            if e.waited_us > 0
        ]
        for e in self.events[len(events) :]:
            e.lane = "waiting on queues"
        self.names = thread_names() if names is None else names  # thread id -> name
        self.note = note  # what was left out, if anything

    def colors(self) -> dict[str, str]:
        """Op type -> colour, the types with most time first."""
        total: dict[str, float] = {}
        for e in self.events:
            total[e.type] = total.get(e.type, 0.0) + e.end_us - e.start_us
        ranked = sorted(total, key=lambda t: -total[t])
        return {t: _PALETTE[k % len(_PALETTE)] for k, t in enumerate(ranked)}

    def _repr_html_(self) -> str:
        if not self.events:
            return "<p>flowbook: no ops recorded</p>"
        lanes = _ordered(_lane_key(e) for e in sorted(self.events, key=lambda e: e.start_us))
        t0 = min(e.start_us for e in self.events)
        span = max(max(e.end_us for e in self.events) - t0, 1e-3)
        plot = self.WIDTH - self.LABEL - 10
        colors = self.colors()
        top = 24  # the axis above the lanes
        height = top + self.LANE * len(lanes) + 8

        def x(t: float) -> float:
            return self.LABEL + (t - t0) / span * plot

        parts = []
        for k in range(6):
            tx = self.LABEL + plot * k / 5
            parts.append(
                f'<line x1="{tx:.1f}" x2="{tx:.1f}" y1="{top - 4}" y2="{height}" stroke="#ddd"/>'
                f'<text x="{tx:.1f}" y="{top - 8}" font-size="10" text-anchor="middle">'
                f"{html.escape(_fmt_us(span * k / 5))}</text>"
            )
        by_lane: dict[Any, list[OpEvent]] = {key: [] for key in lanes}
        for e in self.events:
            by_lane[_lane_key(e)].append(e)
        for row, key in enumerate(lanes):
            y = top + row * self.LANE
            first = by_lane[key][0]
            tid = first.thread_id
            label = first.lane or self.names.get(tid, f"thread {tid}")
            if isinstance(key, tuple) and not first.lane:  # a cluster task's thread
                label = f"{key[0]} {label}"
            name = html.escape(label)
            bars = []
            for e in by_lane[key]:
                w = max((e.end_us - e.start_us) / span * plot, 0.5)
                tip = html.escape(f"{e.name} ({e.type}) {_fmt_us(e.end_us - e.start_us)}")
                bars.append(
                    f'<rect x="{x(e.start_us):.2f}" y="{y + 3}" width="{w:.2f}" '
                    f'height="{self.LANE - 6}" fill="{colors[e.type]}"><title>{tip}</title></rect>'
                )
            parts.append(
                f'<g class="lane" data-thread="{tid}"><text x="4" y="{y + self.LANE / 2 + 4}" '
                f'font-size="11">{name}</text>{"".join(bars)}</g>'
            )
        legend = " ".join(
            f'<span style="white-space:nowrap"><span style="display:inline-block;width:10px;'
            f'height:10px;background:{c}"></span> {html.escape(t or "?")}</span>'
            for t, c in list(colors.items())[:12]
        )
        caption = f"{len(self.events)} ops on {len(lanes)} lane(s), span {_fmt_us(span)}"
        if self.note:
            caption += f" ({self.note})"
        return (
            f'<div class="flowbook-timeline"><div style="font-size:12px">{html.escape(caption)}</div>'
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.WIDTH}" height="{height}" '
            f'font-family="sans-serif">{"".join(parts)}</svg>'
            f'<div style="font-size:11px">{legend}</div></div>'
        )


class ProfileTable:
    """Rows of a profile table: plain text with ``str()``, a sortable HTML table in Jupyter.

    >>> t = ProfileTable([{"type": "Add", "count": 2, "total_ms": 0.5, "mean_us": 250.0, "share": 0.5}])
    >>> print(t)
    type  count  total_ms  mean_us  share
    Add       2     0.500    250.0  50.0%
    """

    def __init__(self, rows: list[dict[str, Any]], caption: str = "") -> None:
        self.rows = rows  # one dict per op or op type
        self.caption = caption  # the runs' totals
        self.columns = list(rows[0]) if rows else []

    @staticmethod
    def _cell(col: str, v: Any) -> str:
        if col == "share":
            return f"{v:.1%}"
        if col in ("total_ms", "waited_ms"):
            return f"{v:.3f}"
        if col == "mean_us":
            return f"{v:.1f}"
        return str(v)

    def __str__(self) -> str:
        cells = [self.columns] + [[self._cell(c, r[c]) for c in self.columns] for r in self.rows]
        widths = [max(len(row[k]) for row in cells) for k in range(len(self.columns))]
        text = "\n".join(
            "  ".join(
                c.ljust(w) if isinstance(self.rows[0][self.columns[k]], str) else c.rjust(w)
                for k, (c, w) in enumerate(zip(row, widths))
            ).rstrip()
            for row in cells
        )
        return f"{text}\n{self.caption}" if self.caption else text

    def _repr_html_(self) -> str:
        sort_js = (
            "var t=this.closest('table'),b=t.tBodies[0],k=this.cellIndex,"
            "d=this.dataset.d=this.dataset.d==='1'?'-1':'1',"
            "r=Array.from(b.rows).sort(function(x,y){var p=x.cells[k].dataset.v,"
            "q=y.cells[k].dataset.v,n=parseFloat(p)-parseFloat(q);"
            "return (isNaN(n)?p.localeCompare(q):n)*d;});r.forEach(function(x){b.appendChild(x);});"
        )
        head = "".join(
            f'<th onclick="{sort_js}" style="cursor:pointer" title="sort">{html.escape(c)}</th>'
            for c in self.columns
        )
        body = "".join(
            "<tr>"
            + "".join(
                f'<td data-v="{html.escape(str(r[c]))}">{html.escape(self._cell(c, r[c]))}</td>'
                for c in self.columns
            )
            + "</tr>"
            for r in self.rows
        )
        cap = f"<caption>{html.escape(self.caption)}</caption>" if self.caption else ""
        return (
            f'<table class="flowbook-profile">{cap}<thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table>"
        )
