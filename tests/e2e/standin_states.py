"""Helpers of the stand-in page tests: flowbook's own live states, sent to the page.

A LiveGraph watches runs as the widget would; ``live_states`` returns the
graph, run and stepper states a view got, ``show`` sends them to the
stand-in page (``labextension/standin.html``) and waits until drawn.
"""

from __future__ import annotations

import json

import flowbook as fb
from flowbook.notebook import live


class _View:
    """A view of a live graph that keeps the last state pushed (as the widget gets it)."""

    def push(self, state: dict) -> None:
        self.state = json.loads(json.dumps(state))


def live_states(graph: fb.Graph, run) -> dict:
    """The graph and run states a view of ``graph`` gets after ``run(session)``."""
    hub = live.live_graph(graph)
    view = _View()
    hub.add_view(view)
    try:
        with graph.as_default(), fb.Session(graph=graph) as s:
            run(s)
        live.FLUSHER.flush_now()
        return hub.state(("graph", "run", "stepper"))
    finally:
        hub.remove_view(view)


def set_trait(page, key: str, value) -> None:
    """Set one of the widget model's traits on the stand-in page."""
    page.evaluate("([k, v]) => window.flowbookPage.set(k, v)", [key, value])


def layouts(page) -> int:
    """How many layouts the widget on the page has done."""
    return int(
        page.evaluate(
            "() => document.querySelector('[data-flowbook-nodes]').dataset.flowbookLayouts || '0'"
        )
    )


def show(page, state: dict) -> None:
    """Send a run and a graph state to the stand-in page; wait until that graph is drawn."""
    set_trait(page, "run", state["run"])
    set_trait(page, "graph", state["graph"])
    page.wait_for_function(
        "v => document.querySelector('[data-flowbook-nodes]').dataset.flowbookVersion === v",
        arg=str(state["graph"]["version"]),
    )
