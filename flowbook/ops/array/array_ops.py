"""TF1's array namespace: every array wrapper, gathered from the modules that declare them.

Nothing is declared here; it is the one import for the array wrappers
(``flowbook/__init__`` re-exports ``__all__``, ``Tensor.__getitem__`` is
``slice_helper``).  The ops live by concept, each module importing only the
ones listed before it, so the imports form no cycle:

* ``shape_ops``: Identity, StopGradient, Shape/Size/Rank, Reshape,
  ExpandDims, Squeeze and Range, which every gradient below builds with;
* ``transpose_ops``: Transpose (with InvertPermutation for its gradient) and
  ReverseV2;
* ``concat_ops``: concat and stack, split and unstack (with ConcatOffset);
* ``fill_ops``: fill, zeros/ones and their ``_like`` forms, one_hot;
* ``slicing``: Slice, StridedSlice and ``tensor[...]`` (with
  StridedSliceGrad);
* ``tile_pad_ops``: Tile, Pad/PadV2/MirrorPad (with MirrorPadGrad);
* ``selection_ops``: gather (with UnsortedSegmentSum), where, boolean_mask.

Each declares its ops' gradients beside them.  The math modules
(``math_ops``) sit above these and import them; the few arithmetic ops an
array gradient needs (Sum, Sub...) are built there by type, as TensorFlow's
array_ops uses gen_math_ops.  None of the modules above imports this one:
only the modules above the array layer do (reduction, linalg, nn, conv...).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     x = fb.placeholder(fb.float32, [None, 784])
    ...     fb.reshape(x, [-1, 28, 28, 1]).shape.as_list()
    [None, 28, 28, 1]
"""

from __future__ import annotations

from flowbook.ops.array import (
    concat_ops,
    fill_ops,
    selection_ops,
    shape_ops,
    slicing,
    tile_pad_ops,
    transpose_ops,
)
from flowbook.ops.array.concat_ops import *  # noqa: F403
from flowbook.ops.array.fill_ops import *  # noqa: F403
from flowbook.ops.array.selection_ops import *  # noqa: F403
from flowbook.ops.array.shape_ops import *  # noqa: F403
from flowbook.ops.array.slicing import *  # noqa: F403
from flowbook.ops.array.slicing import slice_helper  # noqa: F401  (becomes Tensor.__getitem__)
from flowbook.ops.array.tile_pad_ops import *  # noqa: F403
from flowbook.ops.array.transpose_ops import *  # noqa: F403

__all__ = (
    shape_ops.__all__
    + transpose_ops.__all__
    + concat_ops.__all__
    + fill_ops.__all__
    + slicing.__all__
    + tile_pad_ops.__all__
    + selection_ops.__all__
)
