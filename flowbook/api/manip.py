"""``tf.manip``: TF 1.x's home for a few array ops, each another name for flowbook's.

>>> import flowbook as tf
>>> with tf.Graph().as_default(), tf.Session() as s:
...     s.run(tf.manip.roll([1, 2, 3], 1, 0)).tolist()
[3, 1, 2]
"""

from __future__ import annotations

from flowbook.ops.array.broadcast_ops import roll
from flowbook.ops.array.shape_ops import reshape
from flowbook.ops.array.space_ops import batch_to_space_nd, space_to_batch_nd
from flowbook.ops.array.tile_pad_ops import tile
from flowbook.ops.array.transpose_ops import reverse
from flowbook.ops.state.scatter_ops import gather_nd, scatter_nd

__all__ = [
    "batch_to_space_nd",
    "gather_nd",
    "reshape",
    "reverse",
    "roll",
    "scatter_nd",
    "space_to_batch_nd",
    "tile",
]
