"""The JupyterLab side panel's end in the kernel: a comm that shows the default graph.

The labextension (``labextension/src/panel/connection.ts``) opens a comm with target
``flowbook.graph`` on the current notebook's kernel.  The extension registers
that target when it loads; each opened comm becomes a :class:`PanelView` of
the default graph's :class:`~flowbook.notebook.live.LiveGraph`: it is sent
the whole state at once, then whatever changes (graph after each cell, runs
at most 20 times a second), as comm messages ``{"graph"?, "run"?, "stepper"?}``.
When a cell replaces the default graph (``tf.reset_default_graph()``), the
panels move to the new one.  Messages from the panel are stepper actions,
``{"action": "step" | "run_to" | "cont" | "reset", "node": name}``, and
``{"action": "history_run", "seq": n}`` (the run list picked a kept run:
answered with ``{"history_run": state}``).

    >>> TARGET
    'flowbook.graph'
"""

from __future__ import annotations

from typing import Any

from flowbook.framework.graph import get_default_graph
from flowbook.notebook import live, messages, rewrites
from flowbook.notebook.history import answer_run

TARGET = "flowbook.graph"
_panels: list[PanelView] = []  # open panel comms in this kernel


class PanelView:
    """One side panel: a comm that follows the default graph."""

    def __init__(self, comm: Any) -> None:
        self.comm = comm  # the comm the labextension opened
        self.hub: live.LiveGraph | None = None  # the LiveGraph it shows
        self.closed = False
        comm.on_msg(self._on_msg)
        comm.on_close(self._on_close)

    def push(self, state: dict[str, Any]) -> None:
        """Send ``state`` to the panel."""
        if self.closed:
            raise RuntimeError("panel closed")
        self.comm.send(state)

    def follow_default(self) -> None:
        """Show the default graph (move there if it was replaced); a closed panel shows nothing."""
        if self.closed:
            return
        graph = get_default_graph()
        if self.hub is not None and self.hub.graph_ref() is graph:
            return
        if self.hub is not None:
            self.hub.remove_view(self)
        self.hub = live.live_graph(graph)
        self.hub.add_view(self)
        rewrites.resend(self.hub, [self])  # the rewrite its widgets were sent, if any

    def _on_msg(self, msg: Any) -> None:
        content = msg.get("content") if isinstance(msg, dict) else None
        data = content.get("data") if isinstance(content, dict) else None
        if self.hub is None:
            return
        action = messages.read(data)
        if isinstance(action, str):  # refused: the panel shows why
            self.comm.send({"message": action})
        elif action.kind == "history_run":
            self.comm.send(answer_run(self.hub.history, action.seq))
        else:
            message = self.hub.act(action.kind, action.node)
            if message:
                self.comm.send({"message": message})

    def _on_close(self, msg: Any = None) -> None:
        self.closed = True
        live.FOLLOWERS.discard(self)
        if self.hub is not None:
            self.hub.remove_view(self)
        if self in _panels:
            _panels.remove(self)


def _on_open(comm: Any, open_msg: Any) -> None:
    view = PanelView(comm)
    _panels.append(view)
    live.FOLLOWERS.add(view)
    view.follow_default()


def register(ip: Any) -> bool:
    """Accept the side panel's comms in shell ``ip``'s kernel; False outside a kernel."""
    if getattr(ip, "kernel", None) is None:
        return False
    from comm import get_comm_manager  # lazy: only inside a kernel

    get_comm_manager().register_target(TARGET, _on_open)
    return True
