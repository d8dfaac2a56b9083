"""GraphWidget: the live graph in a notebook output, as an anywidget.

``fb.show()`` displays the default graph, ``fb.show(graph)`` any graph and
``fb.show(stepper)`` a Stepper's graph with Step / Run to / Continue / Reset
buttons.  The widget is a thin view of a :class:`flowbook.notebook.live.LiveGraph`:
its synced traits are the three states the front end draws (``graph``,
``run``, ``stepper``; formats in :mod:`flowbook.notebook.snapshot`), sent by
the LiveGraph after every cell and, during runs, at most 20 times a second.
The front end (``labextension/src/graph-widget.ts``) is built into flowbook's
JupyterLab extension, which every page of JupyterLab 4 and Notebook 7 loads.
A widget sends only a loader of about a kilobyte as its ES module
(``flowbook/static/graph-widget-loader.js``) that renders with the extension's
copy: anywidget stores a widget's module in the notebook with each view, and
the whole view is 1.6 MB.  In a front end without the extension, set
``FLOWBOOK_EMBED_WIDGET=1`` in the kernel's environment and each widget sends
the whole, self-contained bundle (``flowbook/static/graph-widget.js``).

Displayed, a widget puts a static picture of its graph after it (an HTML
and SVG output, :mod:`flowbook.notebook.picture`), drawn again after every
cell where the graph or its last run changed: GitHub, nbviewer and an HTML
export show it without a kernel or the widget's code.  The extension's
styles hide it wherever the live view is drawn next to it.

From the browser come ``selected`` (the name of the clicked node; the
widget answers with that node's last value), the stepper buttons'
actions, and ``{"action": "history_run", "seq": n}`` when the run list
shows a kept run (answered with the custom message ``{"history_run": state}``).
``widget.runs`` lists the kept runs (:mod:`flowbook.notebook.history`) and
``widget.replay(run)`` animates one in the browser (``{"replay": state}``).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default() as g:
    ...     c = fb.constant(1.0, name="c")
    ...     w = GraphWidget(g)  # doctest: +SKIP
"""

from __future__ import annotations

import logging
import os
import weakref
from pathlib import Path
from typing import Any

import anywidget
import traitlets
from IPython import get_ipython
from IPython.display import display, update_display

from flowbook.framework.graph import Graph, get_default_graph
from flowbook.notebook import live, messages, picture, rewrites
from flowbook.notebook.history import answer_run, find_run, run_record
from flowbook.profiling.optimized_plan import PlanRewrite

_log = logging.getLogger(__name__)
STATIC = Path(__file__).parent.parent / "static"  # the built front end
EMBED_ENV = "FLOWBOOK_EMBED_WIDGET"  # set (to anything but "" or "0"): send the whole view


def _static(name: str) -> str:
    path = STATIC / name
    if not path.exists():
        raise RuntimeError(
            f"flowbook's widget front end is not built ({path} is missing): "
            "reinstall with `pip install -e .` (it needs Node.js and npm)"
        )
    return path.read_text(encoding="utf-8")


def embeds_view() -> bool:
    """Whether widgets send the whole view rather than the loader (``FLOWBOOK_EMBED_WIDGET``).

    >>> import os; os.environ.pop(EMBED_ENV, None) and None; embeds_view()
    False
    """
    return os.environ.get(EMBED_ENV, "") not in ("", "0")


class GraphWidget(anywidget.AnyWidget):
    """A live view of a graph: it grows as cells build it and lights up as it runs.

    >>> GraphWidget.height.default_value
    520
    """

    graph = traitlets.Dict().tag(sync=True)  # snapshot.graph_state of the shown graph
    run = traitlets.Dict().tag(sync=True)  # the last run: pruned, done, error, times, values
    stepper = traitlets.Dict().tag(sync=True)  # the followed Stepper, if any
    history = traitlets.Dict().tag(sync=True)  # the run list: {"runs": [row, ...]}, newest last
    selected = traitlets.Unicode("").tag(sync=True)  # name of the node clicked in the browser
    height = traitlets.Int(520).tag(sync=True)  # view height in pixels
    present = traitlets.Bool(False).tag(sync=True)  # present mode: big type (toolbar's Present)
    optimized = traitlets.Dict().tag(sync=True)  # a plan's rewrite (notebook/rewrites.py), or {}

    def __init__(self, graph: Graph | None = None, height: int = 520, **kwargs: Any) -> None:
        if embeds_view():
            self._esm = _static("graph-widget.js")
            self._css = _static("graph-widget.css")
        else:  # the extension's copy of the view, and its styles
            self._esm = _static("graph-widget-loader.js")
        super().__init__(height=height, **kwargs)
        self.follows_default = graph is None  # show whatever the default graph is, after each cell
        self.shown = graph if graph is not None else get_default_graph()  # the graph shown
        self.live = live.live_graph(self.shown)  # its live state, shared with other views
        self._displayed_in: int | None = None  # execution count of the cell that displayed it
        self._picture_id: str | None = None  # display id of its static picture, once displayed
        self._pictured: tuple[Any, ...] = ()  # what the picture shows (see _picture_key)
        self.on_msg(self._on_action)
        self.observe(self._on_select, names="selected")
        self.live.add_view(self)
        if self.follows_default:
            live.FOLLOWERS.add(self)
        _watch_cells()

    def follow_default(self) -> None:
        """Move to the default graph if a cell replaced it (``tf.reset_default_graph()``)."""
        graph = get_default_graph()
        if graph is not self.shown and self.comm is not None:
            self.live.remove_view(self)
            self.shown, self.live = graph, live.live_graph(graph)
            self.live.add_view(self)

    # ---------------------------------------------------------------- view
    def push(self, state: dict[str, Any]) -> None:
        """Show ``state`` (the LiveGraph calls this; any of graph/run/stepper/history/tick)."""
        if self.comm is None:
            raise RuntimeError("widget closed")
        with self.hold_sync():
            for key, value in state.items():
                if key == "tick":  # a custom message: no trait, no state walk (see live.py)
                    self.send({"tick": value})
                    continue
                if key == "run" and self.selected and self.selected not in value["values"]:
                    text = self.live.value_preview(self.selected)
                    if text is not None:
                        value = {**value, "values": {**value["values"], self.selected: text}}
                setattr(self, key, value)

    def close(self) -> None:
        """Stop updating and close the widget in the browser."""
        live.FOLLOWERS.discard(self)
        PICTURED.discard(self)
        if hasattr(self, "live"):  # not when __init__ failed (ipywidgets closes on __del__)
            self.live.remove_view(self)
        super().close()

    @property
    def selected_op(self) -> Any:
        """The Operation clicked in the browser, or None."""
        name = self.selected
        return self.shown._ops.get(name) if name else None

    def refresh(self) -> None:
        """Send the graph now if it changed (done for you after every cell)."""
        self.live.refresh()

    def show_times(self, times_us: dict[str, float] | Any) -> None:
        """Colour nodes by the times of a profile (``fb.profile()``) or a {name: µs} dict.

        >>> w = GraphWidget()  # doctest: +SKIP
        >>> with fb.profile() as prof: ...  # doctest: +SKIP
        >>> w.show_times(prof)  # doctest: +SKIP
        """
        if hasattr(times_us, "node_times"):
            times_us = times_us.node_times()
        run = dict(self.run) if self.run else self.live.run_state()
        run["times_us"] = {str(k): float(v) for k, v in dict(times_us).items()}
        if run.get("phase") == "idle":
            run["phase"] = "done"
            run["pruned"] = list(run["times_us"])
            run["done"] = list(run["times_us"])
        self.run = run

    # ---------------------------------------------------------------- history
    @property
    def runs(self) -> list[dict[str, Any]]:
        """The kept runs of the shown graph, oldest first (:func:`~flowbook.notebook.history.run_record` dicts).

        >>> [r["seq"] for r in fb.show().runs]  # doctest: +SKIP
        [1, 2, 3]
        """
        return [run_record(e) for e in self.live.history.runs]

    def replay(self, run: Any = -1, seconds: float = 2.0) -> None:
        """Animate a kept run in the view, op by op in the order they ran, in about ``seconds``.

        ``run``: a record from :attr:`runs` or an index into them (-1: the newest).

        >>> w = fb.show(); sess.run(y); w.replay(-1)  # doctest: +SKIP
        """
        entry = find_run(self.live.history, run)
        self.send({"replay": entry.state(), "seconds": float(seconds)})

    def show_optimized(self, rewrite: Any, show: bool = True) -> None:
        """Let the view toggle to ``rewrite`` (``tf.optimized_plan(...)``), drawn as optimised.

        >>> w = fb.show(); w.show_optimized(fb.optimized_plan(train_step, feed))  # doctest: +SKIP
        """
        rewrites.send_rewrite(self.shown, rewrite, show)

    # ---------------------------------------------------------------- stepper
    def attach_stepper(self, stepper: Any) -> None:
        """Drive ``stepper`` from the widget's buttons and show its progress."""
        live.follow_stepper(stepper)
        live.FLUSHER.flush_now()

    def _on_action(self, widget: Any, content: Any, buffers: Any) -> None:
        action = messages.read(content)
        if isinstance(action, str):  # refused: say why where the view shows messages
            self.send({"message": action})
        elif action.kind == "history_run":
            self.send(answer_run(self.live.history, action.seq))
        else:
            message = self.live.act(action.kind, action.node or self.selected)
            if message:
                self.stepper = {**self.stepper, "message": message}

    def _on_select(self, change: Any) -> None:
        name = change["new"]
        if not name or not self.run:
            return
        text = self.live.value_preview(name)
        if text is not None and self.run.get("values", {}).get(name) != text:
            self.run = {**self.run, "values": {**self.run.get("values", {}), name: text}}

    # ---------------------------------------------------------------- picture
    def picture(self) -> dict[str, str]:
        """A static picture of what the view shows now, as a mime bundle (HTML, SVG, text).

        Displayed after the widget and kept up to date after every cell, it is
        what GitHub, nbviewer and an HTML export show without a kernel (the
        extension hides it where the live view is drawn).

        >>> sorted(fb.show().picture())  # doctest: +SKIP
        ['image/svg+xml', 'text/html', 'text/plain']
        """
        title = "default graph" if self.follows_default else "graph"
        return picture.picture_bundle(dict(self.graph), dict(self.run) or None, title=title)

    def _picture_key(self) -> tuple[Any, ...]:
        graph, run = self.graph, self.run
        stale = sum(1 for n in graph.get("nodes", ()) if n.get("stale"))
        return (graph.get("id"), graph.get("version"), stale, run.get("seq"), run.get("phase"))

    def update_picture(self) -> None:
        """Draw the picture again where it changed (done for you after every cell)."""
        if self._picture_id is None or self.comm is None:
            return
        key = self._picture_key()
        if key != self._pictured:
            self._pictured = key
            update_display(self.picture(), raw=True, display_id=self._picture_id)

    def _ipython_display_(self) -> None:
        """Display the widget and its picture, once per cell run: ``fb.show()`` as a cell's
        last line shows one."""
        ip = get_ipython()
        count = getattr(ip, "execution_count", None)
        if count is not None and count == self._displayed_in:
            return
        self._displayed_in = count
        bundle = self._repr_mimebundle_()
        data, metadata = bundle if isinstance(bundle, tuple) else (bundle, {})
        data = {
            **data,
            "text/plain": "flowbook graph view (live with a kernel; its picture follows)",
        }
        display(data, metadata=metadata, raw=True)
        if self._picture_id is None:
            self._picture_id = f"flowbook-picture-{self.model_id}"
            PICTURED.add(self)
        self._pictured = self._picture_key()
        display(self.picture(), raw=True, display_id=self._picture_id)


def show(target: Any = None, height: int = 520, present: bool = False) -> GraphWidget:
    """Display the live graph of the default graph, a Graph, a Stepper, or a plan's rewrite.

    A rewrite (``tf.optimized_plan(fetches, feed)``) shows its graph with the
    toggle "as written / as optimised" switched to the optimised plan.

    ``present=True`` starts in present mode (labels of 16 px or more, for a
    projector); ``widget.present`` or the toolbar's Present button switch it.

    >>> import flowbook as fb
    >>> w = fb.show(present=True)  # doctest: +SKIP
    """
    stepper = rewrite = None
    if isinstance(target, PlanRewrite):  # tf.optimized_plan(...): the toggle, set to it
        rewrite, target = target, target.graph
    elif target is not None and not isinstance(target, Graph) and hasattr(target, "plan"):
        stepper, target = target, target.graph
    widget = GraphWidget(target, height=height, present=present)
    if stepper is not None:
        widget.attach_stepper(stepper)
    if rewrite is not None:
        widget.show_optimized(rewrite)
    display(widget)
    return widget


PICTURED: weakref.WeakSet[GraphWidget] = weakref.WeakSet()  # widgets displayed with a picture
_picture_hooked: set[int] = set()  # id() of the shells whose post_run_cell updates pictures


def _watch_cells() -> None:
    """Refresh the live views after every cell (the extension does this too), then their
    pictures."""
    ip = get_ipython()
    live.install_cell_hook(ip)
    if ip is not None and id(ip) not in _picture_hooked:
        ip.events.register("post_run_cell", _update_pictures)  # after the views' refresh
        _picture_hooked.add(id(ip))


def _update_pictures(result: Any = None) -> None:
    for widget in list(PICTURED):
        try:
            widget.update_picture()
        except Exception:  # the cell must not fail for a picture; the live view still shows
            _log.exception("flowbook: the graph's static picture was not updated")
