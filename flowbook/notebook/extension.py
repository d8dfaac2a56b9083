"""``%load_ext flowbook``: every cell owns the ops it creates, and a re-run replaces them.

A notebook is not a script: cells run again, out of order.  Without help,
re-running ``y = tf.matmul(x, w)`` adds ``MatMul_1`` next to ``MatMul`` and the
graph fills with copies.  This extension makes a cell's ops belong to the
cell, TensorBoard-style names stay stable, and what a re-run breaks is said.

The loop, one :class:`CellTracker` per IPython shell:

- ``pre_run_cell(info)``: the cell's key is the front end's cell id
  (``info.cell_id``, sent by JupyterLab, Notebook 7, VS Code), else the SHA-1
  of its source (see below).  If that cell created ops in the default graph
  on its last run, they are removed (``Graph._remove_ops``), which frees their
  names so the re-run creates the same ones; then ``flowbook.framework.source.current_cell``
  is set to ``Cell(key, In [n])``, so every op built during the cell records it
  in ``op.site.cell``.
- ``post_run_cell``: the current cell is cleared, and the ops the cell created
  (those with an ``_id`` at or past the graph's counter at the start) are
  recorded as the cell's; any of them built on a removed or stale op is marked
  stale too.

State a tracker owns:

- ``graph``: the default graph the records are about; when the default graph
  is replaced (``tf.reset_default_graph()``) the records are dropped;
- ``owned``: cell key -> the ops its last run created in ``graph``;
- ``running`` / ``start_id``: the cell now running, and the graph's op counter
  when it began;
- ``count_offset``: what to add to ``shell.execution_count`` during a cell to get
  its ``In [n]``.  IPython 8 counts a cell after ``pre_run_cell`` (offset 0),
  IPython 9 before it (offset -1).  The tracker does not guess from version
  numbers: at ``post_run_cell`` the result's ``execution_count`` is the truth, so
  the cell's number is settled there and the offset learnt for the next cells
  (the cell that loads the extension teaches it before any op is made).

**No cell id** (classic Notebook 6, nbclient/nbconvert, terminal IPython): the
key falls back to a hash of the cell's source, not to the execution count.
An execution count never repeats, so with it a re-run would never replace
anything; with the source hash, re-running an unchanged cell replaces its ops,
as in JupyterLab.  The cost: an *edited* cell counts as a new cell (its old
ops stay, and the new ones get ``_1`` names), and two cells with identical
source share their ops.

Only the default graph is tracked: ops built inside ``with tf.Graph().as_default()``
belong to that graph, usually re-created by the re-run anyway.  Errors from
flowbook get a short traceback (``flowbook.notebook.tracebacks``).

The extension also adds the line magic ``%flowbook_as_tensorflow``: from then
on ``import tensorflow as tf`` in this kernel gives flowbook (the alias of
``flowbook.tf1``, for unchanged TF1 notebooks); ``%flowbook_as_tensorflow off``
removes the alias.

    >>> CellTracker.key_for(None, "x = 1")
    'sha1:34bce5f775de97f5'
    >>> CellTracker.key_for("7a1b-c2", "x = 1")
    '7a1b-c2'
"""

from __future__ import annotations

from typing import Any

from flowbook.framework import graph as graph_module
from flowbook.framework import source
from flowbook.framework.graph_edit import mark_stale
from flowbook.framework.source import Cell
from flowbook.framework.tensor import Operation
from flowbook.notebook import tracebacks


class CellTracker:
    """Which ops each cell created; removes them when the cell runs again."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell  # the InteractiveShell whose cells are tracked
        self.graph: Any = graph_module.get_default_graph()  # the graph `owned` is about
        self.owned: dict[str, list[Operation]] = {}  # cell key -> ops its last run created
        self.running: Cell | None = None  # the cell now running, between pre and post
        self.start_id = 0  # graph._next_id when the running cell began
        self.count_offset = 0  # In [n] of the running cell - shell.execution_count during it
        self.count_seen: int | None = None  # shell.execution_count seen during the running cell

    @staticmethod
    def key_for(cell_id: str | None, raw_cell: str) -> str:
        """The cell id, or ``sha1:<16 hex>`` of the source when the front end sends none."""
        if cell_id:
            return str(cell_id)
        import hashlib  # here, not at import: `import flowbook` stays fast outside notebooks

        return "sha1:" + hashlib.sha1(raw_cell.encode("utf-8", "replace")).hexdigest()[:16]

    def pre_run_cell(self, info: Any) -> None:
        """Remove the ops this cell made last time; start recording the new ones."""
        graph = self._current_graph()
        self.count_seen = self.shell.execution_count
        count = None
        if getattr(info, "store_history", True) and isinstance(self.count_seen, int):
            count = self.count_seen + self.count_offset
        cell = Cell(self.key_for(getattr(info, "cell_id", None), info.raw_cell or ""), count)
        previous = self.owned.pop(cell.id, None)
        if previous:
            graph._remove_ops(previous, by=cell)
        self.running = cell
        self.start_id = graph._next_id
        source.set_current_cell(cell)

    def post_run_cell(self, result: Any = None) -> None:
        """Stop recording; the ops made since ``pre_run_cell`` are now the cell's."""
        source.set_current_cell(None)
        cell, self.running = self.running, None
        self._settle_count(cell, getattr(result, "execution_count", None))
        if cell is None:  # the cell that loaded the extension
            return
        graph = graph_module.get_default_graph()
        start = self.start_id
        if graph is not self.graph:  # the cell replaced the default graph: all of it is new
            self.graph, self.owned, start = graph, {}, 0
        created = _ops_since(graph, start)
        if created:
            self.owned[cell.id] = created
            mark_stale(graph, created)

    def _settle_count(self, cell: Cell | None, actual: Any) -> None:
        """Give ``cell`` its true ``In [n]`` and learn how this IPython counts."""
        seen, self.count_seen = self.count_seen, None
        if not isinstance(actual, int) or not isinstance(seen, int):
            return
        self.count_offset = actual - seen
        if cell is not None and cell.execution_count is not None:
            cell.execution_count = actual

    def ops_of(self, cell_id: str) -> list[Operation]:
        """The ops cell ``cell_id`` created on its last run (empty if none)."""
        return list(self.owned.get(cell_id, ()))

    def _current_graph(self) -> Any:
        graph = graph_module.get_default_graph()
        if graph is not self.graph:  # reset outside a tracked cell: old records mean nothing
            self.graph, self.owned = graph, {}
        return graph


def _ops_since(graph: Any, start: int) -> list[Operation]:
    """The graph's ops with ``_id >= start``, in creation order (ops only append)."""
    created: list[Operation] = []
    with graph._lock:
        for op in reversed(graph._ops.values()):
            if op._id < start:
                break
            created.append(op)
    created.reverse()
    return created


# ------------------------------------------------------------------ loading
_LOADED: dict[int, tuple[CellTracker, Any]] = {}  # id(shell) -> (tracker, previous custom exc)
_KEPT: dict[int, CellTracker] = {}  # id(shell) -> tracker of an unloaded extension (%reload_ext)


def load_ipython_extension(ip: Any) -> None:
    """Track cells and shorten flowbook's tracebacks in shell ``ip`` (``%load_ext flowbook``).

    Loading twice is harmless: the second call does nothing.
    """
    if id(ip) in _LOADED:
        return
    tracker = CellTracker(ip)
    tracker.count_seen = (
        ip.execution_count
    )  # loaded in a cell: its post_run_cell teaches the offset
    kept = _KEPT.pop(id(ip), None)
    if kept is not None and kept.graph is tracker.graph:  # %reload_ext: cells keep their ops
        tracker.owned = kept.owned
    previous = (ip.custom_exceptions, ip.CustomTB)
    ip.events.register("pre_run_cell", tracker.pre_run_cell)
    ip.events.register("post_run_cell", tracker.post_run_cell)
    ip.set_custom_exc(tracebacks.EXCEPTIONS, tracebacks.handler)
    _LOADED[id(ip)] = (tracker, previous)
    from flowbook.notebook import live, panel  # lazy: the live graph is for notebooks only

    live.install_cell_hook(ip)  # after the tracker's hook: views see this cell's stale marks
    panel.register(ip)  # the JupyterLab side panel's comm
    ip.register_magic_function(flowbook_as_tensorflow, "line", "flowbook_as_tensorflow")


def flowbook_as_tensorflow(line: str = "") -> None:
    """``%flowbook_as_tensorflow``: ``import tensorflow`` gives flowbook; ``... off`` undoes it."""
    from flowbook import tf1  # lazy: flowbook.tf1 imports the flowbook package, which imports us

    arg = line.strip().lower()
    if arg in ("off", "uninstall", "0", "false"):
        tf1.uninstall()
    elif arg in ("", "on"):
        tf1.install()
    else:
        raise ValueError(f"%flowbook_as_tensorflow takes nothing, 'on' or 'off', got {line!r}")


def unload_ipython_extension(ip: Any) -> None:
    """Undo ``load_ipython_extension`` (``%unload_ext flowbook``).

    Ops keep their cells; the record of which cell made which ops is kept, so
    after ``%reload_ext flowbook`` a re-run still replaces its ops.
    """
    entry = _LOADED.pop(id(ip), None)
    if entry is None:
        return
    tracker, (exceptions, custom_tb) = entry
    ip.events.unregister("pre_run_cell", tracker.pre_run_cell)
    ip.events.unregister("post_run_cell", tracker.post_run_cell)
    ip.custom_exceptions, ip.CustomTB = exceptions, custom_tb
    source.set_current_cell(None)
    _KEPT[id(ip)] = tracker


def tracker_for(ip: Any) -> CellTracker | None:
    """The tracker of shell ``ip`` while the extension is loaded there, else None."""
    entry = _LOADED.get(id(ip))
    return entry[0] if entry else None
