"""Run history: the last runs of each shown graph, kept so a class can pick, replay and compare them.

A :class:`~flowbook.notebook.live.LiveGraph` keeps a :class:`History`.  State
it owns:

- ``pending``: runs watched op by op (and failed runs) finished but not yet
  summarised, as ``(record, snap, total_ns)`` (at most ``size``; older ones
  are dropped unsummarised, save each plan's newest: ``latest``)
- ``ring``: runs watched whole, as ``(seq, snap, total_ns)`` in slot
  ``seq % size``: the last ``size`` of them, whatever their plans
- ``entries``: the last ``size`` summarised runs, :class:`RunEntry`, newest last
- ``newest``: per plan, its newest summarised run, so that the last run of
  each of ``pinned`` plans stays after it left ``entries``

A plan's **snap** (``PlanStats.snap``) is what its runs share until the plan
next runs op by op: ``(stats, values, previews, values_seq, timed)``, the
plan's ``values`` and ``previews`` dicts, their generation and its last
timed run.  Those dicts are copy-on-write: a run that records values (a
"first" or "live" run) starts new ones (``watch._Watch.on_start``), so the
ones a snap holds never change after its run.  A run watched whole changes
none of them, so it keeps the snap its plan has.

**On the run's path**, once per run and never per op: a run watched op by
op makes a :class:`~flowbook.notebook.watch.Record` and :meth:`History.add`
makes its plan's snap and appends it to ``pending``.  A run watched whole
(most runs of a training loop) makes no record: ``LiveGraph.run_whole``
writes one small tuple into ``ring`` and into ``PlanStats.newest`` (the
plan's newest whole run, for ``newest`` when the ring has moved past it).

**Off the run's path** (the flusher thread, when it builds the views'
``history`` state, or whoever reads :attr:`History.runs`) each of those
becomes a :class:`RunEntry`: its kernel times an ``array('f')`` in plan order
(NaN: not run), its execution order an ``array('I')`` of op indices, its
values at most ``MAX_PREVIEWS`` preview strings of at most ``PREVIEW_CHARS``
characters (fetched ops first).  A run that was not timed shares the times
(and order) of its plan's last timed run, one that recorded no values the
previews of the last one that did: ``times_seq`` and ``values_seq`` say
which run they come from.  Runs that left the window before they were
summarised are skipped, save each plan's newest.

**Memory** is bounded per graph: at most ``size + pinned`` entries, each
holding no values, only names shared with its plan, ``8 * ops`` bytes of
times and order, and ``MAX_PREVIEWS * PREVIEW_CHARS`` characters of previews.

    >>> h = History(size=2)
    >>> h.runs
    []
"""

from __future__ import annotations

import math
import threading
import weakref
from array import array
from collections import deque
from typing import Any

from flowbook.debug.nan_guard import NanGuard
from flowbook.notebook.snapshot import preview

HISTORY_RUNS = 250  # runs kept per graph (a tutorial's "Run All": init, 200 steps, evaluation)
PINNED_PLANS = 20  # plans whose newest run stays after it left the window of the last runs
MAX_PREVIEWS = 200  # value previews kept per run
PREVIEW_CHARS = 120  # characters per kept preview


class RunEntry:
    """One kept run, summarised: names shared with its plan, compact times, capped previews.

    >>> RunEntry.__slots__[:3]
    ('copies', 'done', 'error')
    """

    __slots__ = (
        "copies",
        "done",
        "error",
        "fed",
        "fetches",
        "names",
        "order",
        "phase",
        "placement",
        "previews",
        "row",
        "seq",
        "times",
        "times_seq",
        "total_us",
        "values_seq",
    )

    def __init__(
        self, seq: int, snap: tuple[Any, ...], total_ns: int, rec: Any, prev: RunEntry | None
    ) -> None:
        """Run ``seq`` of the plan ``snap`` describes; ``rec``: its Record, None if watched whole."""
        stats, values, known, values_seq, timed = snap
        names = stats.names
        self.seq: int = seq  # the run's number in its graph
        self.names: list[str] = names  # the pruned subgraph, plan order (shared, never mutated)
        self.fed: list[str] = stats.fed  # ops whose outputs were fed (shared)
        self.phase: str = rec.phase if rec is not None else "done"  # "done" or "error"
        error = rec.error if rec is not None else None
        self.error = error_state(error) if error is not None else None
        self.total_us: float = total_ns / 1000  # wall time of the whole run
        if prev is not None and prev.names is names:  # the same plan: share what it shares
            self.fetches, self.placement, self.copies = prev.fetches, prev.placement, prev.copies
        elif rec is not None:
            self.fetches = stats.fetched(rec.plan)  # what the run computed (shared)
            self.placement, self.copies = stats.devices(rec.plan)  # shared with the plan
        else:  # a whole run: its plan's first run (a record) was summarised before it
            self.fetches = stats.fetched_names or []
            self.placement, self.copies = stats.placement or {}, stats.copies
        # times: op index -> kernel µs (NaN: not run); order: op indices as they ran
        self.times: array[float] = array("f")
        self.order: array[int] = array("I")
        self.times_seq = 0  # the run whose times and order these are (0: none)
        times_seq, timings = timed if timed is not None else (0, None)
        if prev is not None and prev.times_seq == times_seq:
            self.times, self.order, self.times_seq = prev.times, prev.order, prev.times_seq
        elif timings is not None:
            self.times, self.order = _compact(timings, len(names))
            self.times_seq = times_seq
        self.done: array[int] | None = None  # ops finished, as they finished (live runs only)
        if rec is not None and rec.done is not None:
            where = {n: i for i, n in enumerate(names)}
            self.done = array("I", (where[n] for n in rec.done if n in where))
        self.previews: dict[str, str] = {}  # op -> value preview (of run values_seq)
        self.values_seq = 0  # the run whose values these are (0: none)
        if prev is not None and prev.values_seq == values_seq:
            self.previews, self.values_seq = prev.previews, prev.values_seq
        elif values or known:
            self.previews = _previews(values, known, self.fetches, names)
            self.values_seq = values_seq
        self.row = {
            "seq": self.seq,
            "phase": self.phase,
            "total_us": self.total_us,
            "ops": len(names),
            "fetches": self.fetches[:3],
        }

    def ran(self) -> list[str]:
        """The ops that ran, in the order they ran (plan order where it is not known)."""
        names = self.names
        if self.done is not None:
            return [names[i] for i in self.done]
        done = names if not self.order else [names[i] for i in self.order]
        if self.phase == "error":
            node = self.error["node"] if self.error else ""
            return done[: done.index(node)] if node in done else []
        return list(done)

    def times_us(self) -> dict[str, float]:
        """Op name -> kernel µs (of run ``times_seq``)."""
        return {n: round(t, 3) for n, t in zip(self.names, self.times) if not math.isnan(t)}

    def state(self) -> dict[str, Any]:
        """This run as the widget's ``run`` state, plus ``order``, ``times_seq``, ``values_seq``."""
        done = self.ran()
        return {
            "seq": self.seq,
            "phase": self.phase,
            "pruned": self.names,
            "fed": list(self.fed),
            "done": done,
            "running": [],
            "error": self.error,
            "times_us": self.times_us(),
            "total_us": self.total_us,
            "values": dict(self.previews),
            "placement": self.placement,
            "copies": self.copies,
            "order": done,
            "times_seq": self.times_seq,
            "values_seq": self.values_seq,
            "fetches": list(self.fetches),
        }


class History:
    """The last runs of one graph, newest last.  See the module doc."""

    def __init__(self, size: int = HISTORY_RUNS, pinned: int = PINNED_PLANS) -> None:
        self.size = size
        self.pending: deque[tuple[Any, ...]] = deque(maxlen=size)  # recorded runs not summarised
        self.latest: dict[Any, tuple[Any, ...]] = {}  # PlanStats -> its newest pending run
        self.ring: list[tuple[int, tuple[Any, ...], int] | None] = [None] * size  # whole runs
        self.taken: list[Any] = [None] * size  # the ring's items already summarised, by slot
        self.plans: weakref.WeakSet[Any] = weakref.WeakSet()  # PlanStats of the plans run
        self.upto = 0  # the highest seq summarised
        self.entries: deque[RunEntry] = deque(maxlen=size)  # the last runs, newest last
        self.lock = threading.Lock()  # guards `pending`, `latest`, summarising, `entries`, `newest`
        # id(names) (one list per plan, kept alive by its entry) -> the plan's newest run,
        # in the order they were last updated (at most `pinned` of them outside `entries`)
        self.newest: dict[int, RunEntry] = {}
        self.pinned = pinned

    def add(self, rec: Any, total_ns: int) -> None:
        """Keep the recorded run ``rec`` just finished; its plan's snap is taken now."""
        stats = rec.stats
        snap = stats.snap = (stats, stats.values, stats.previews, stats.values_seq, stats.timed)
        run = (rec, snap, total_ns)
        with self.lock:
            self.pending.append(run)
            self.latest[stats] = run  # so a plan's last run stays even if `pending` drops it
            self.plans.add(stats)

    def summarise(self) -> None:
        """Turn the runs not yet summarised into entries, oldest first (the flusher thread).

        The ring is read without a lock: the run's path replaces its items whole.
        """
        with self.lock:
            runs: list[tuple[int, tuple[Any, ...], int, Any]] = []  # (seq, snap, ns, rec)
            latest, self.latest = self.latest, {}
            while self.pending:
                rec, snap, ns = self.pending.popleft()
                runs.append((rec.seq, snap, ns, rec))
            taken = {r[0] for r in runs}
            runs += [(r.seq, s, ns, r) for r, s, ns in latest.values() if r.seq not in taken]
            for slot, item in enumerate(list(self.ring)):
                if item is not None and item is not self.taken[slot]:
                    self.taken[slot] = item
                    runs.append((*item, None))
            taken = {r[0] for r in runs}
            for stats in list(self.plans):  # whole runs the ring moved past: each plan's newest
                item = stats.newest
                if item is not None and item[0] > self.upto and item[0] not in taken:
                    runs.append((*item, None))
            if not runs:
                return
            runs.sort(key=lambda r: r[0])
            self.upto = max(self.upto, runs[-1][0])
            start = self.upto - self.size  # runs at or below this are outside the window
            last = {id(r[1][0]): r[0] for r in runs}  # plan -> the seq of its newest run
            for seq, snap, ns, rec in runs:
                key = id(snap[0].names)
                if seq <= start and last[id(snap[0])] != seq:
                    if rec is not None:  # what its plan's later whole runs share
                        snap[0].fetched(rec.plan), snap[0].devices(rec.plan)
                    continue  # left the window before it was summarised, not its plan's newest
                entry = RunEntry(seq, snap, ns, rec, self.newest.pop(key, None))
                self.entries.append(entry)
                self.newest[key] = entry  # moves to the end: the plan run most recently
            window = {id(e) for e in self.entries}
            outside = [k for k, e in self.newest.items() if id(e) not in window]
            for k in outside[: max(0, len(outside) - self.pinned)]:
                del self.newest[k]  # the plans run least recently: forgotten

    @property
    def runs(self) -> list[RunEntry]:
        """The kept runs, oldest first: the pinned ones, then the last runs."""
        self.summarise()
        with self.lock:
            entries = list(self.entries)
            window = {id(e) for e in entries}
            pinned = [e for e in self.newest.values() if id(e) not in window]
        return sorted(pinned, key=lambda e: e.seq) + entries

    def index(self) -> dict[str, Any]:
        """The views' ``history`` state: one row per kept run (seq, phase, time, ops, fetches)."""
        return {"runs": [e.row for e in self.runs]}

    def get(self, seq: int) -> RunEntry | None:
        """The kept run numbered ``seq``, or None."""
        return next((e for e in self.runs if e.seq == seq), None)


def run_record(entry: RunEntry) -> dict[str, Any]:
    """A kept run as ``GraphWidget.runs`` lists it: plain names, numbers and strings.

    ``ops`` is the pruned subgraph (plan order), ``order`` the ops as they ran,
    ``times`` op -> kernel µs (of run ``times_seq``), ``previews`` op -> value
    preview (of run ``values_seq``).

    >>> sorted(run_record.__annotations__)
    ['entry', 'return']
    """
    state = entry.state()
    return {
        "seq": entry.seq,
        "phase": entry.phase,
        "fetches": state["fetches"],
        "ops": list(entry.names),
        "order": state["order"],
        "times": state["times_us"],
        "previews": state["values"],
        "total_us": entry.total_us,
        "error": entry.error,
        "times_seq": entry.times_seq,
        "values_seq": entry.values_seq,
    }


def find_run(history: History, run: Any) -> RunEntry:
    """The kept run ``run`` names: a record from ``runs`` (its ``seq``) or an index into them.

    >>> find_run(History(), -1)
    Traceback (most recent call last):
    ValueError: no run kept yet: run something in this graph first
    """
    runs = history.runs
    if not runs:
        raise ValueError("no run kept yet: run something in this graph first")
    if isinstance(run, dict):
        entry = next((e for e in runs if e.seq == run.get("seq")), None)
        if entry is None:
            kept = f"{runs[0].seq}..{runs[-1].seq}"
            raise ValueError(f"run {run.get('seq')} is no longer kept (runs {kept} are)")
        return entry
    if isinstance(run, int) and -len(runs) <= run < len(runs):
        return runs[run]
    raise ValueError(f"no kept run {run!r}: give a record from .runs or an index below {len(runs)}")


def answer_run(history: History, seq: Any) -> dict[str, Any]:
    """The reply to a view asking for kept run ``seq``: ``{"history_run": state}``.

    >>> answer_run(History(), 3)
    {'history_run': {'seq': 3}}
    """
    entry = history.get(seq) if isinstance(seq, int) and not isinstance(seq, bool) else None
    return {"history_run": entry.state() if entry is not None else {"seq": seq}}


def _compact(timings: Any, n: int) -> tuple[array[float], array[int]]:
    """A RunTimings as kernel µs per op index (NaN: not run) and the indices in run order."""
    times = array("f", [math.nan]) * n
    starts, ends = timings.start_ns, timings.end_ns
    for i in timings.order:
        times[i] = (ends[i] - starts[i]) / 1000
    return times, array("I", timings.order)


def _previews(
    values: dict[str, Any], known: dict[str, str], first: list[str], names: list[str]
) -> dict[str, str]:
    """At most MAX_PREVIEWS capped previews: the ops in ``first``, then the rest in plan order."""
    out: dict[str, str] = {}
    for n in dict.fromkeys([*first, *names]):
        text = known.get(n)
        if text is None and n in values:
            text = preview(values[n])
        if text is not None:
            out[n] = text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 3] + "..."
            if len(out) >= MAX_PREVIEWS:
                break
    return out


def error_state(error: BaseException) -> dict[str, Any]:
    """The run state's ``error``: the failing op, the message (capped), whether NaN caught it."""
    op = getattr(error, "op", None)
    message = getattr(error, "message", None) or str(error) or type(error).__name__
    return {
        "node": op.name if op is not None else "",
        "message": message if len(message) <= 2000 else message[:1997] + "...",
        "nan": op is not None and op is NanGuard.last_bad_op,
    }
