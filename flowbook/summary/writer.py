"""TensorBoard summaries with TF1's API: ``tf.summary.scalar``, ``merge_all``, ``FileWriter``.

The summary ops (``flowbook.ops.io.summary_ops``) produce serialized
``Summary`` protos when a session runs them; the wrappers here name them as
TF1 does (the tag is the op's scoped name, ``train/loss``) and add them to
``GraphKeys.SUMMARIES`` so :func:`merge_all` can merge them into one op.

:class:`FileWriter` writes those summaries (and the graph, as a GraphDef)
into event files through TensorBoard's own ``EventFileWriter``, so
TensorBoard and its ``EventAccumulator`` read them as TensorFlow's.  With
``live=True`` (or ``live=LivePlot(...)``) every ``add_summary`` also feeds a
:class:`~flowbook.summary.live_plots.LivePlot`, which redraws inline SVG charts in
the notebook at most ~4 times a second; ``flush``/``close`` show the final
state.  :func:`progress` wraps a training loop with a live progress bar.

TensorBoard is imported inside the functions that need it, so that
``import flowbook`` stays fast.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     with fb.name_scope("train"):
    ...         s = scalar("loss", fb.constant(0.5))
    ...     merged = merge_all()
    ...     s.op.name, merged.op.type
    ('train/loss', 'MergeSummary')
"""

from __future__ import annotations

import re
import time
from typing import Any

import numpy as np

from flowbook.framework.graph import get_default_graph
from flowbook.framework.graph_keys import GraphKeys
from flowbook.framework.tensor import Tensor
from flowbook.ops._builder import make1, tensor
from flowbook.ops.io import summary_ops
from flowbook.platform import tf_logging
from flowbook.summary.live_plots import LivePlot, progress

__all__ = ["FileWriter", "LivePlot", "histogram", "histogram_summary", "merge", "merge_all"]
__all__ += ["merge_all_summaries", "merge_summary", "progress", "scalar", "scalar_summary"]


def _collect(t: Tensor, collections: Any) -> Tensor:
    graph = get_default_graph()
    for key in [GraphKeys.SUMMARIES] if collections is None else collections:
        graph.add_to_collection(key, t)
    return t


_ILLEGAL = re.compile(r"[^-/A-Za-z0-9_.]")


def clean_tag(name: str) -> str:
    """``name`` made a legal scope name, as TF1 forgives it: ``"W1:0"`` -> ``"W1_0"``.

    Every character a name scope refuses (space, ``:``...) becomes ``_`` and
    a leading ``/`` goes; the change is logged at INFO, as TF1 logs it.

    >>> clean_tag("histogram loss"), clean_tag("ok/name")
    ('histogram_loss', 'ok/name')
    """
    cleaned = _ILLEGAL.sub("_", name).lstrip("/")
    if cleaned != name:
        tf_logging.info("Summary name %s is illegal; using %s instead.", name, cleaned)
    return cleaned


def summary_scope(name: str, family: str | None) -> str:
    """The scope a summary op is built in: ``family/name``, both cleaned as TF1 cleans them."""
    name = clean_tag(name)
    return f"{clean_tag(family)}/{name}" if family else name


def _summary_op(op_type: str, name: str, values: Any, family: str | None) -> Tensor:
    """The op named by ``name``'s scope (uniquified); its tag is that scoped name."""
    graph = get_default_graph()
    scoped = summary_scope(name, family)
    with graph.name_scope(scoped) as scope:
        tag = scope.rstrip("/")
        t = tensor(np.array(tag, dtype=object), name="tag")
        return make1(op_type, [t, tensor(values)], name=scope)


def scalar(
    name: str, tensor: Any, collections: list[str] | None = None, family: str | None = None
) -> Tensor:
    """A scalar summary of a 0-d ``tensor``, tagged with ``name`` in the current scope.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     scalar("x", fb.constant(1.0), family="f").op.name
    'f/x'
    """
    return _collect(_summary_op("ScalarSummary", name, tensor, family), collections)


def histogram(
    name: str, values: Any, collections: list[str] | None = None, family: str | None = None
) -> Tensor:
    """A histogram summary of ``values`` (any shape), tagged with ``name`` in the current scope."""
    return _collect(_summary_op("HistogramSummary", name, values, family), collections)


def merge(inputs: Any, collections: list[str] | None = None, name: str | None = None) -> Tensor:
    """One summary holding all of ``inputs``' values (added to ``collections`` if given)."""
    t = summary_ops.merge_summary(list(inputs), name=name or "Merge/MergeSummary")
    for key in collections or ():
        get_default_graph().add_to_collection(key, t)
    return t


def merge_all(key: str = GraphKeys.SUMMARIES, scope: str | None = None) -> Tensor | None:
    """Merge every summary in collection ``key``; None when it is empty (as TF1).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     merge_all() is None
    True
    """
    items = get_default_graph().get_collection(key, scope)
    return merge(items) if items else None


# TF 0.x names: no scoping of the tag, which is given in full.
def scalar_summary(
    tags: Any, values: Any, collections: list[str] | None = None, name: str | None = None
) -> Tensor:
    """TF 0.x ``tf.scalar_summary(tags, values)``: tags given as strings, one per value."""
    return _collect(summary_ops.scalar_summary(tags, values, name=name), collections)


def histogram_summary(
    tag: Any, values: Any, collections: list[str] | None = None, name: str | None = None
) -> Tensor:
    """TF 0.x ``tf.histogram_summary(tag, values)``."""
    return _collect(summary_ops.histogram_summary(tag, values, name=name), collections)


def merge_summary(
    inputs: Any, collections: list[str] | None = None, name: str | None = None
) -> Tensor:
    """TF 0.x ``tf.merge_summary``."""
    return merge(inputs, collections, name=name or "MergeSummary")


def merge_all_summaries(key: str = GraphKeys.SUMMARIES) -> Tensor | None:
    """TF 0.x ``tf.merge_all_summaries``."""
    return merge_all(key)


# ------------------------------------------------------------------ FileWriter
def _as_summary(summary: Any) -> Any:
    """A ``Summary`` proto from a proto, its bytes, or a 0-d object array of bytes."""
    from tensorboard.compat.proto import summary_pb2  # lazy: tensorboard is slow to import

    if isinstance(summary, np.ndarray):
        summary = summary.item() if summary.ndim == 0 else summary.ravel()[0]
    if isinstance(summary, bytes | bytearray | memoryview):
        return summary_pb2.Summary.FromString(bytes(summary))
    if isinstance(summary, summary_pb2.Summary):
        return summary
    raise TypeError(
        f"add_summary takes a Summary proto or its serialized bytes (sess.run of a summary "
        f"op), got {type(summary).__name__}"
    )


class FileWriter:
    """TF1's ``tf.summary.FileWriter``: summaries and graphs into a TensorBoard event file.

    >>> import tempfile
    >>> with FileWriter(tempfile.mkdtemp()) as w:
    ...     w.add_summary(_scalar_proto("loss", 1.0), global_step=3)
    """

    def __init__(
        self,
        logdir: str,
        graph: Any = None,
        max_queue: int = 10,
        flush_secs: int = 120,
        filename_suffix: str | None = None,
        live: bool | LivePlot = False,
        graph_def: Any = None,
    ) -> None:
        from tensorboard.summary.writer.event_file_writer import EventFileWriter  # lazy, as above

        self.logdir = str(logdir)
        self._writer = EventFileWriter(self.logdir, max_queue, flush_secs, filename_suffix or "")
        self.live: LivePlot | None = (
            live if isinstance(live, LivePlot) else (LivePlot() if live else None)
        )  # the inline display fed by add_summary, if any
        self.closed = False
        if graph is not None or graph_def is not None:
            self.add_graph(graph, graph_def=graph_def)

    def get_logdir(self) -> str:
        return self.logdir

    def add_event(self, event: Any) -> None:
        """Write one ``Event`` proto as is."""
        if self.closed:
            raise RuntimeError(f"FileWriter for {self.logdir!r} is closed")
        self._writer.add_event(event)

    def add_summary(self, summary: Any, global_step: int | None = None) -> None:
        """Write a summary (what ``sess.run`` of a summary op returns) at ``global_step``."""
        from tensorboard.compat.proto import event_pb2  # lazy: tensorboard is slow to import

        proto = _as_summary(summary)
        event = event_pb2.Event(wall_time=time.time(), summary=proto)
        if global_step is not None:
            event.step = int(global_step)
        self.add_event(event)
        if self.live is not None:
            self.live.add_summary(proto, global_step)

    def add_graph(self, graph: Any = None, global_step: int | None = None, graph_def: Any = None):
        """Write a graph (or a GraphDef proto) for TensorBoard's graph tab."""
        from tensorboard.compat.proto import event_pb2  # lazy: tensorboard is slow to import

        if graph_def is None:
            if not hasattr(graph, "as_graph_def"):
                raise TypeError(f"add_graph needs a Graph with as_graph_def, got {graph!r}")
            graph_def = graph.as_graph_def()
        event = event_pb2.Event(wall_time=time.time(), graph_def=graph_def.SerializeToString())
        if global_step is not None:
            event.step = int(global_step)
        self.add_event(event)

    def add_run_metadata(self, run_metadata: Any, tag: str, global_step: int | None = None):
        """Write a traced run's ``RunMetadata`` under ``tag`` (TensorBoard's graph tab shows
        its step stats for that tag).

        >>> import tempfile
        >>> from flowbook.runtime.config import RunMetadata
        >>> with FileWriter(tempfile.mkdtemp()) as w:
        ...     w.add_run_metadata(RunMetadata(), "step1", global_step=1)
        """
        from tensorboard.compat.proto import event_pb2  # lazy: tensorboard is slow to import

        event = event_pb2.Event(wall_time=time.time())
        event.tagged_run_metadata.tag = tag
        event.tagged_run_metadata.run_metadata = run_metadata.SerializeToString()
        if global_step is not None:
            event.step = int(global_step)
        self.add_event(event)

    def add_session_log(self, session_log: Any, global_step: int | None = None) -> None:
        from tensorboard.compat.proto import event_pb2  # lazy: tensorboard is slow to import

        event = event_pb2.Event(wall_time=time.time(), session_log=session_log)
        if global_step is not None:
            event.step = int(global_step)
        self.add_event(event)

    def flush(self) -> None:
        """Write pending events to disk and show the live display's last state."""
        if not self.closed:
            self._writer.flush()
        if self.live is not None:
            self.live.flush()

    def close(self) -> None:
        if not self.closed:
            self._writer.close()
            self.closed = True
        if self.live is not None:
            self.live.close()

    def __enter__(self) -> FileWriter:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


SummaryWriter = FileWriter  # TF 0.x's name (tf.train.SummaryWriter)


def _scalar_proto(tag: str, value: float) -> Any:
    """A one-value ``Summary`` proto (TF1's ``tf.Summary(value=[...])`` by hand)."""
    from tensorboard.compat.proto import summary_pb2  # lazy: tensorboard is slow to import

    return summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, simple_value=value)])
