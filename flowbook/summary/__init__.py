"""``tf.summary``: TensorBoard summaries and the writer of their event files.

This package is the namespace TF1 code reads as ``tf.summary``: the summary
wrappers and :class:`FileWriter` live in :mod:`flowbook.summary.writer`, the image,
audio, text and tensor summaries in :mod:`flowbook.summary.media`, the
inline charts a ``FileWriter(live=True)`` draws in :mod:`flowbook.summary.live_plots`.

    >>> import flowbook as tf
    >>> tf.summary.scalar is tf.summary.writer.scalar
    True
"""

from flowbook.summary import media, writer
from flowbook.summary.media import *  # noqa: F403
from flowbook.summary.writer import *  # noqa: F403

__all__ = [*writer.__all__, *media.__all__]
