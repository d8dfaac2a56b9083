"""TF1's ``tf.summary`` helpers around the writer: the per-logdir writer cache, summary
descriptions, and the two bridges to TF2-style summary ops.

- :class:`FileWriterCache` keeps one :class:`~flowbook.summary.writer.FileWriter`
  per log directory, made on first ``get`` with the default graph, as TF1's does
  (``tf.train.MonitoredTrainingSession``'s summary hooks share writers this way).
- :func:`get_summary_description` reads the JSON ``description`` attr of a
  ``TensorSummary`` NodeDef into a ``SummaryDescription`` proto.
- :func:`all_v2_summary_ops` is the graph's ``_SUMMARY_V2`` collection, where
  TF2-style summary ops register; flowbook builds only TF1 summaries, so the
  collection holds whatever a user put there, usually nothing.
- :func:`initialize` runs the initialisers of the default TF2-style summary
  writer; flowbook has no such writer, so, exactly as TF1 does without one, it
  raises ``RuntimeError``.

    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> FileWriterCache.get(d) is FileWriterCache.get(d)
    True
    >>> FileWriterCache.clear()
"""

from __future__ import annotations

import threading
from typing import Any

from flowbook.framework.graph import get_default_graph
from flowbook.summary.writer import FileWriter

__all__ = ["FileWriterCache", "all_v2_summary_ops", "get_summary_description", "initialize"]

SUMMARY_V2_COLLECTION = "_SUMMARY_V2"  # TF's GraphKeys._SUMMARY_COLLECTION


class FileWriterCache:
    """One FileWriter per log directory, shared by everyone who asks for that directory."""

    _cache: dict[str, FileWriter] = {}
    _lock = threading.RLock()

    @staticmethod
    def clear() -> None:
        """Close every cached writer and forget them all."""
        with FileWriterCache._lock:
            for writer in FileWriterCache._cache.values():
                writer.close()
            FileWriterCache._cache = {}

    @staticmethod
    def get(logdir: Any) -> FileWriter:
        """The writer for ``logdir``: made (with the default graph) the first time it is asked for."""
        with FileWriterCache._lock:
            if logdir not in FileWriterCache._cache:
                FileWriterCache._cache[logdir] = FileWriter(logdir, graph=get_default_graph())
            return FileWriterCache._cache[logdir]


def get_summary_description(node_def: Any) -> Any:
    """The ``SummaryDescription`` stored, as JSON, in a ``TensorSummary`` NodeDef's ``description``.

    >>> from tensorboard.compat.proto import node_def_pb2
    >>> node = node_def_pb2.NodeDef(op="TensorSummary")
    >>> node.attr["description"].s = b'{"typeHint": "scalar"}'
    >>> get_summary_description(node).type_hint
    'scalar'
    """
    from google.protobuf import json_format  # lazy: protobuf is slow to import
    from tensorboard.compat.proto import summary_pb2

    if node_def.op != "TensorSummary":
        raise ValueError(f"Can't get_summary_description on {node_def.op}")
    raw = node_def.attr["description"].s
    description = summary_pb2.SummaryDescription()
    json_format.Parse(raw.decode() if isinstance(raw, bytes) else str(raw), description)
    return description


def all_v2_summary_ops() -> list[Any]:
    """The default graph's TF2-style summary ops (its ``_SUMMARY_V2`` collection)."""
    return get_default_graph().get_collection(SUMMARY_V2_COLLECTION)


def initialize(graph: Any = None, session: Any = None) -> None:
    """Initialise the default TF2-style summary writer: there is none in flowbook, so an error."""
    raise RuntimeError("No default tf.contrib.summary.SummaryWriter found")
