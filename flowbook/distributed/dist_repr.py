"""A cluster session in the notebook: its tasks, their colours, clocks, and the Dask dashboard.

``DaskSession._repr_html_`` is :func:`session_html`: a small table with one
row per task (its colour in the live graph, its Dask worker, its clock's
offset from the client's and how sure that is, once a watched step has
measured it) and a link to the Dask dashboard (``client.dashboard_link``),
where Dask shows its workers' load, memory and task stream.  The colours
are the live graph's (``features/tasks/tasks.ts``): ps tasks warm, workers cool,
colour-blind safe.

    >>> task_colour("ps:1"), short_task("/job:worker/replica:0/task:2")
    ('#AA4499', 'worker:2')
"""

from __future__ import annotations

import html
from typing import Any

from flowbook.distributed.cluster import task_name

__all__ = ["TASK_COLOURS", "session_html", "short_task", "task_colour"]

# colour-blind-safe (Paul Tol's muted scheme), dark enough for white text on a projector;
# ps tasks warm, workers cool, other jobs grey (the same lists in features/tasks/tasks.ts)
TASK_COLOURS = {
    "ps": ("#882255", "#AA4499", "#CC6677"),
    "worker": ("#332288", "#117733", "#44AA99", "#999933"),
}
OTHER_COLOURS = ("#555555", "#777777")


def short_task(task: str) -> str:
    """``/job:ps/replica:0/task:0`` -> ``ps:0``: how the live graph names a task.

    >>> short_task("/job:ps/replica:0/task:0")
    'ps:0'
    """
    parts = dict(p.split(":", 1) for p in task.strip("/").split("/") if ":" in p)
    return f"{parts.get('job', '?')}:{parts.get('task', '0')}"


def task_colour(short: str) -> str:
    """The colour of task ``"ps:0"``, ``"worker:3"`` (as ``features/tasks/tasks.ts`` picks it).

    >>> task_colour("ps:0"), task_colour("worker:1"), task_colour("chief:0")
    ('#882255', '#117733', '#555555')
    """
    job, _, k = short.rpartition(":")
    colours = TASK_COLOURS.get(job, OTHER_COLOURS)
    return colours[int(k) % len(colours)] if k.isdigit() else colours[0]


def session_html(session: Any) -> str:
    """The session as HTML: tasks with colours, workers and clocks; the dashboard link."""
    clocks = session.clock.table()
    rows = []
    for job, k in session.cluster.tasks():
        task = task_name(job, k)
        short = short_task(task)
        clock = clocks.get(task)
        offset = (
            f"{clock['offset_us']:+.0f} µs ± {clock['bound_us']:.0f} µs"
            if clock
            else "not measured"
        )
        rows.append(
            f'<tr><td><span style="background:{task_colour(short)};color:#fff;padding:0 6px;'
            f'border-radius:8px;font-family:monospace;font-weight:600">{html.escape(short)}'
            f"</span></td><td><code>{html.escape(task)}</code></td>"
            f"<td><code>{html.escape(str(session.cluster.task_address(job, k)))}</code></td>"
            f"<td>{html.escape(offset)}</td></tr>"
        )
    link = session.dashboard_link
    dash = (
        f'<a href="{html.escape(link)}" target="_blank" rel="noopener">Dask dashboard</a>'
        if link
        else "no Dask dashboard (the scheduler runs without one)"
    )
    state = "closed" if session._closed else "open"
    return (
        f'<div class="flowbook-session"><b>flowbook session on a Dask cluster</b> ({state}, '
        f"{len(rows)} tasks) &middot; {dash}"
        '<table style="font-size:12px"><thead><tr><th>task</th><th>name</th><th>Dask worker</th>'
        f"<th>clock vs. client</th></tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )
