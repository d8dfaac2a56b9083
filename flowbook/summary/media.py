"""``tf.summary.image``, ``audio``, ``text`` and ``tensor_summary``, as TF1 names them.

Each wrapper builds its op (``flowbook.ops.io.media_summary_ops``) under the
name's scope, tags it with the scoped name (``train/inputs``) and adds it to
``GraphKeys.SUMMARIES``, as :func:`flowbook.summary.scalar` does.  Images and
audio are TensorBoard's legacy values (``Summary.Value.image``/``audio``);
text and tensor summaries carry a tensor with ``SummaryMetadata`` naming the
plugin that shows them (``text`` for :func:`text`).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     t = text("note", fb.constant("hello"))
    ...     t.op.type, t.op.name
    ('TensorSummaryV2', 'note')
"""

from __future__ import annotations

from typing import Any

from flowbook.framework.graph import get_default_graph
from flowbook.framework.tensor import Tensor
from flowbook.ops.io import media_summary_ops
from flowbook.ops.io.media_summary_ops import audio_summary, image_summary
from flowbook.summary.writer import _collect, summary_scope

__all__ = ["audio", "audio_summary", "image", "image_summary", "tensor_summary", "text"]


def _scoped(name: str, family: str | None, build: Any) -> Tensor:
    """``build(tag, op_name)`` under ``name``'s (uniquified) scope; the tag is that scope."""
    graph = get_default_graph()
    with graph.name_scope(summary_scope(name, family)) as scope:
        return build(scope.rstrip("/"), scope)


def image(
    name: str,
    tensor: Any,
    max_outputs: int = 3,
    collections: list[str] | None = None,
    family: str | None = None,
) -> Tensor:
    """PNG images of the first ``max_outputs`` of a ``[batch, h, w, c]`` batch (c: 1, 3, 4).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     image("x", fb.zeros([1, 2, 2, 1])).op.type
    'ImageSummary'
    """
    built = _scoped(name, family, lambda tag, op: image_summary(tag, tensor, max_outputs, op))
    return _collect(built, collections)


def audio(
    name: str,
    tensor: Any,
    sample_rate: Any,
    max_outputs: int = 3,
    collections: list[str] | None = None,
    family: str | None = None,
) -> Tensor:
    """WAV clips of the first ``max_outputs`` of a ``[batch, frames(, channels)]`` batch.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     audio("a", fb.zeros([1, 8]), 8000).op.type
    'AudioSummaryV2'
    """
    built = _scoped(
        name, family, lambda tag, op: audio_summary(tag, tensor, sample_rate, max_outputs, op)
    )
    return _collect(built, collections)


def _metadata(plugin: str = "", description: str = "", display_name: str = "") -> bytes:
    from tensorboard.compat.proto import summary_pb2  # lazy: tensorboard is slow to import

    meta = summary_pb2.SummaryMetadata(summary_description=description, display_name=display_name)
    if plugin:
        meta.plugin_data.plugin_name = plugin
    return meta.SerializeToString()


def text(name: str, tensor: Any, collections: list[str] | None = None) -> Tensor:
    """A string tensor for TensorBoard's text tab (plugin ``text``, markdown rendered).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     text("t", "hi").dtype.name
    'string'
    """
    built = _scoped(
        name,
        None,
        lambda tag, op: media_summary_ops.tensor_summary_v2(tag, tensor, _metadata("text"), op),
    )
    return _collect(built, collections)


def tensor_summary(
    name: str,
    tensor: Any,
    summary_description: str | None = None,
    collections: list[str] | None = None,
    summary_metadata: Any = None,
    family: str | None = None,
    display_name: str | None = None,
) -> Tensor:
    """Any tensor, as a ``TensorProto``, with ``summary_metadata`` (a SummaryMetadata) if given.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     tensor_summary("w", fb.ones([2])).op.type
    'TensorSummaryV2'
    """
    if summary_metadata is not None:
        blob = summary_metadata.SerializeToString()
    else:
        blob = _metadata("", summary_description or "", display_name or "")
    built = _scoped(
        name,
        family,
        lambda tag, op: media_summary_ops.tensor_summary_v2(tag, tensor, blob, op),
    )
    return _collect(built, collections)
