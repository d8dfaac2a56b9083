"""The tables of ``flowbook.profile()``: kernel time per executed op, per written op, per type.

A profiled run may run the plan as the graph says it (the default: every
written op timed) or, under ``profile(optimized=True)``, the plan the graph
optimiser made of it (:mod:`flowbook.runtime.optimize.optimizer`), in which one executed op
can stand for several written ones (duplicates merged into it, ops fused
into it) and some written ops run not at all (folded to constants, removed
identities).  The tables count both ways:

- ``by="op"``: per executed op, what actually ran; a ``stands_for`` column
  names the written ops an executed op stands for, where it stands for more
  than itself.
- ``by="written"``: per written op.  An executed op that stands for several
  written ops has its time shared among them evenly, and each such row says
  so (``via``: "share of ReluGrad 'x/ReluGrad' (3 ops)"), so both tables sum
  to the same kernel time.  A written op whose runs all took the optimised
  plan and never ran (folded, removed) has no row: ``tf.optimized_plan``
  says what became of it.
- ``by="type"``: per executed op type.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default(), tf.Session() as s, tf.profile() as prof:
    ...     _ = s.run(tf.constant(1.0, name="c") * 2.0)
    >>> sorted(r["op"] for r in prof.table(by="written").rows)
    ['c', 'mul', 'mul/y']
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from flowbook.profiling.timeline import ProfileTable
from flowbook.runtime.optimize.optimizer import origin_of

BY = ("op", "written", "type")
# a recorded run -> (its peak of live bytes, op -> (output bytes, ...))
MemoryOf = Callable[[Any], tuple[int, dict[Any, tuple[int, ...]]]]


def profile_table(
    recs: Sequence[Any], run_us: float, by: str, sort: str, memory: MemoryOf | None = None
) -> ProfileTable:
    """Kernel time of the recorded runs ``recs`` (``profiling._Recorder``) grouped ``by``.

    ``memory(rec)`` gives a run's peak of live bytes and each op's output
    bytes (``flowbook.runtime.memory_plan.op_memory``); without it the table has
    no byte figures.
    """
    if by not in BY:
        raise ValueError(f"by must be one of {', '.join(map(repr, BY))}, not {by!r}")
    acc: dict[str, list[Any]] = {}  # key -> [type, count, total ns, waited ns, note, bytes]
    busy = 0.0
    optimised = peak = 0  # runs that took an optimised plan; the largest peak of live bytes
    for rec in recs:
        origin = origin_of(rec.plan) if rec.plan is not None else None
        optimised += origin is not None
        run_peak, out_bytes = memory(rec) if memory is not None else (0, {})
        peak = max(peak, run_peak)
        kernels = 0
        for op, t, _where in rec.runs():
            ns = rec.kernel_ns(op, t)
            kernels += ns
            names = origin.get(op.name, (op.name,)) if origin else (op.name,)
            nbytes = out_bytes[op][0] if op in out_bytes else 0
            if by == "written":
                _share(acc, op, names, ns, t.waited_ns, nbytes)
                continue
            row = acc.setdefault(op.name if by == "op" else op.type, [op.type, 0, 0, 0, "", 0])
            row[1] += 1
            row[2] += ns
            row[3] += t.waited_ns
            row[5] += nbytes
            if by == "op" and names != (op.name,):
                row[4] = ", ".join(names)
        busy += max(kernels, rec.end_ns - rec.start_ns)
    rows = _rows(acc, by, busy)
    col = "type" if by == "type" else "op"  # the rows' first column
    key = {"total": "total_ms", "mean": "mean_us", "name": col}.get(sort, sort)
    rows.sort(key=lambda r: r[key], reverse=key != col)
    waits = rows and "waited_ms" in rows[0]
    caption = (
        f"{len(recs)} run(s), {run_us / 1e3:.3f} ms; "
        f"kernels {sum(r['total_ms'] for r in rows):.3f} ms; "
        + (f"peak of live values {peak:,} bytes; output_bytes: per run; " if memory else "")
        + "share: of the run time (of the threads' busy time where kernels overlapped)"
        + ("; waited_ms: time waiting on queues, apart from kernel time" if waits else "")
        + _plans_note(len(recs), optimised, by)
    )
    return ProfileTable(rows, caption)


def _share(
    acc: dict[str, list[Any]], op: Any, names: tuple[str, ...], ns: int, waited: int, nbytes: int
) -> None:
    """Attribute an executed op's time to the written ops it stands for, evenly."""
    note = "" if names == (op.name,) else f"share of {op.type} '{op.name}' ({len(names)} ops)"
    graph = op.graph
    for name in names:
        written = graph._ops.get(name) if graph is not None else None
        row = acc.setdefault(
            name, [written.type if written is not None else op.type, 0, 0, 0, "", 0]
        )
        row[1] += 1
        row[2] += ns / len(names)
        row[3] += waited / len(names)
        row[5] += nbytes // len(names)
        if note:
            row[4] = note


def _rows(acc: dict[str, list[Any]], by: str, busy: float) -> list[dict[str, Any]]:
    waits = any(row[3] for row in acc.values())  # a queue op waited: a waited_ms column
    notes = any(row[4] for row in acc.values())  # some op stands for others: say which
    label = "stands_for" if by == "op" else "via"
    return [
        {
            ("type" if by == "type" else "op"): key,
            **({"type": typ} if by != "type" else {}),
            "count": n,
            "total_ms": ns / 1e6,
            "mean_us": ns / n / 1e3,
            "share": ns / busy if busy else 0.0,
            "output_bytes": b // n,
            **({"waited_ms": w / 1e6} if waits else {}),
            **({label: note} if notes and by != "type" else {}),
        }
        for key, (typ, n, ns, w, note, b) in acc.items()
    ]


def _plans_note(runs: int, optimised: int, by: str) -> str:
    """What the caption says of the plans the runs took."""
    if not optimised:
        return ""
    return f"; {optimised} of {runs} run(s) took the optimised plan" + (
        "; via: an executed op's time shared among the written ops it stands for"
        if by == "written"
        else ""
    )
