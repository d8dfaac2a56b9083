"""``tf.summary``: TensorBoard summaries and the writer of their event files.

This package is the namespace TF1 code reads as ``tf.summary``: the summary
wrappers and :class:`FileWriter` live in :mod:`flowbook.summary.writer`, the image,
audio, text and tensor summaries in :mod:`flowbook.summary.media`, the
inline charts a ``FileWriter(live=True)`` draws in :mod:`flowbook.summary.live_plots`,
and TF1's helpers around the writer (``FileWriterCache``...) in
:mod:`flowbook.summary.tf1_helpers`.  The protos TF1 re-exports here
(``Summary``, ``Event``...) are TensorBoard's copies, imported on first use
because protobuf is slow to import.

    >>> import flowbook as tf
    >>> tf.summary.scalar is tf.summary.writer.scalar
    True
    >>> tf.summary.Summary.Value(tag="loss", simple_value=1.0).tag
    'loss'
"""

from typing import Any

from flowbook.summary import media, tf1_helpers, writer
from flowbook.summary.media import *  # noqa: F403
from flowbook.summary.tf1_helpers import *  # noqa: F403
from flowbook.summary.writer import *  # noqa: F403

_PROTOS = {
    "Event": "event_pb2", "SessionLog": "event_pb2", "TaggedRunMetadata": "event_pb2",
    "Summary": "summary_pb2", "SummaryDescription": "summary_pb2",
}  # fmt: skip

__all__ = [*writer.__all__, *media.__all__, *tf1_helpers.__all__, *_PROTOS]


def __getattr__(name: str) -> Any:
    if name in _PROTOS:  # first use: import TensorBoard's proto module, keep the class
        import importlib

        value = getattr(importlib.import_module("tensorboard.compat.proto." + _PROTOS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'flowbook.summary' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PROTOS))
