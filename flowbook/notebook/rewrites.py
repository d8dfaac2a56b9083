"""Send a plan's rewrite to the live graph: the views' ``optimized`` state.

``tf.show(tf.optimized_plan(fetches, feed))`` (or ``widget.show_optimized(rw)``)
sends :meth:`flowbook.profiling.optimized_plan.PlanRewrite.diff` to every view of the graph
(the widgets and the JupyterLab side panel), under the graph's send lock
and numbered like its other states (:mod:`flowbook.notebook.live`, "Order").
The front end (``labextension/src/features/rewrites/rewrites.ts``) then offers a toggle,
"as written / as optimised", and lists the rewrites' sentences.  The last
rewrite sent stays with the LiveGraph (``sent``), so a view added later
(the side panel opened after the cell) is sent it too (:func:`resend`).  ``show=True`` in the state asks the views to switch to
the optimised view at once.

    >>> sent_rewrite(object()) is None
    True
"""

from __future__ import annotations

import weakref
from typing import Any

from flowbook.notebook import live

# LiveGraph -> the last rewrite sent to its views (its ``diff()``)
_SENT: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()


def send_rewrite(graph: Any, rewrite: Any, show: bool = True) -> live.LiveGraph:
    """Send ``rewrite`` (a PlanRewrite) to every view of ``graph``; ``show``: switch them to it."""
    hub = live.live_graph(graph)
    diff = {**rewrite.diff(), "show": bool(show)}
    _SENT[hub] = diff
    resend(hub)
    return hub


def resend(hub: live.LiveGraph, views: list[Any] | None = None) -> None:
    """Send the last rewrite of ``hub`` to ``views`` (default: all of its views)."""
    diff = _SENT.get(hub)
    if diff is None:
        return
    with hub.send_lock:
        state = hub._numbered({"optimized": diff})
        for view in list(hub.views) if views is None else views:
            try:
                view.push(state)
            except Exception:  # a closed comm or widget: stop sending to it
                hub.remove_view(view)


def sent_rewrite(hub: Any) -> dict[str, Any] | None:
    """The last rewrite sent to ``hub``'s views, or None."""
    try:
        return _SENT.get(hub)
    except TypeError:  # not weakly referenceable: never a LiveGraph
        return None
