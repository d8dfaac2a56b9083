"""``tf.summary``: TensorBoard summaries and the writer of their event files.

This package is the namespace TF1 code reads as ``tf.summary``: the summary
wrappers and :class:`FileWriter` live in :mod:`flowbook.summary.writer`, the
inline charts a ``FileWriter(live=True)`` draws in :mod:`flowbook.summary.live_plots`.

    >>> import flowbook as tf
    >>> tf.summary.scalar is tf.summary.writer.scalar
    True
"""

from flowbook.summary.writer import *  # noqa: F403
from flowbook.summary.writer import __all__ as __all__
