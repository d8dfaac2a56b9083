"""Pooling kernel bodies as passes over strided slices, one per window cell.

A window of ``k = (KH, KW)`` cells at strides ``s`` visits, for its cell
``(i, j)``, the strided slice ``padded[:, i::s0, j::s1, :]`` (cut to the
output size) of the padded input: an ``[N, OH, OW, C]`` view, no copy.  Every
pool here is a loop over the KH*KW cells in row-major order, each step one
element-wise pass over output-sized arrays (numpy and CuPy alike):

- **max / sum** (:func:`window_max`, :func:`window_sum`): a running
  ``maximum`` / ``+`` of the cell slices.  A reduction over the axes of the
  6-D window view did the same reads through numpy's generic iterator and was
  ~4x slower; the running sum adds in the same row-major order as that
  reduction did, so the results are bit for bit the same.
- **the first maximum** (:func:`first_max_masks`): per cell, the mask of the
  windows whose first maximum (row-major, the cell TF's CPU MaxPoolGrad
  picks on ties) is this cell: ``(cell == max) & ~taken``, ``taken |= mask``.
  Computed once and consumed as it goes, so MaxPoolGrad makes one sweep where
  it made two (a ``where`` pass per cell to find the argmax index, another per
  cell to compare against it).  A window whose maximum is NaN has no cell
  equal to it and passes no gradient (the argmax version sent it to cell 0).
- **masking** (:func:`masked`): ``where(mask, values, 0)`` as a bitwise
  ``and`` of the values' bits with a mask of all-ones or all-zeros words.
  Same bits as ``where`` (an infinite or NaN gradient is not spread as
  ``inf * 0`` would), but no branch per element: numpy's ``where`` on a
  random mask ran ~8x slower than a multiply.
- **scatter** (:func:`max_pool_grad`): each cell's masked gradient is added
  into its slice of a zero array of the padded shape, then the padding is
  cut off.  Adds, not assignments, even where windows do not overlap, so the
  sums (and the sign of a zero) are those of the window-cell-order
  ``scatter_windows`` this replaces.

    >>> import numpy as np
    >>> from flowbook.ops.windows import window_geometry
    >>> x = np.arange(16.0).reshape(1, 4, 4, 1)
    >>> g = window_geometry((4, 4), (2, 2), (2, 2), "VALID")
    >>> window_max(np, x, g, (2, 2), (2, 2))[0, :, :, 0].tolist()
    [[5.0, 7.0], [13.0, 15.0]]
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from flowbook.ops.windows import Geometry, pad_nhwc

__all__ = ["first_max_masks", "lowest", "masked", "max_pool_grad", "window_max", "window_sum"]


def lowest(xp: Any, dtype: Any) -> Any:
    """The value padding takes for a max pool: -inf, or the integer type's minimum."""
    return -xp.inf if dtype.kind == "f" else xp.iinfo(dtype).min


def _cell(i: int, j: int, g: Geometry, s: tuple[int, int]) -> tuple[slice, slice, slice]:
    """Index of window cell (i, j) in the padded array: ``[N, OH, OW, C]`` once applied."""
    rows = slice(i, i + s[0] * (g.oh - 1) + 1, s[0])
    return slice(None), rows, slice(j, j + s[1] * (g.ow - 1) + 1, s[1])


def _cells(g: Geometry, k: tuple[int, int], s: tuple[int, int]) -> Iterator[tuple]:
    for i in range(k[0]):
        for j in range(k[1]):
            yield _cell(i, j, g, s)


def window_max(xp: Any, padded: Any, g: Geometry, k: tuple[int, int], s: tuple[int, int]) -> Any:
    """``[N, OH, OW, C]``: the maximum of each window of the (already padded) input."""
    out = None
    for idx in _cells(g, k, s):
        if out is None:
            out = padded[idx].copy()
        else:
            xp.maximum(out, padded[idx], out=out)
    return out


def window_sum(xp: Any, padded: Any, g: Geometry, k: tuple[int, int], s: tuple[int, int]) -> Any:
    """``[N, OH, OW, C]``: the sum of each window, added in row-major cell order."""
    out = None
    for idx in _cells(g, k, s):
        if out is None:
            out = padded[idx].copy()
        else:
            out += padded[idx]
    return out


def first_max_masks(
    xp: Any, padded: Any, top: Any, g: Geometry, k: tuple[int, int], s: tuple[int, int]
) -> Iterator[tuple[tuple, Any]]:
    """Per window cell in row-major order: (its index, the windows whose first max it is).

    >>> import numpy as np
    >>> from flowbook.ops.windows import window_geometry
    >>> x = np.array([3.0, 1.0, 3.0, 3.0]).reshape(1, 2, 2, 1)  # a tie: the first 3 wins
    >>> g = window_geometry((2, 2), (2, 2), (2, 2), "VALID")
    >>> [bool(m.item()) for _, m in first_max_masks(np, x, x.max(), g, (2, 2), (2, 2))]
    [True, False, False, False]
    """
    taken = None
    for idx in _cells(g, k, s):
        eq = padded[idx] == top
        if taken is None:
            taken = eq.copy()
        else:
            eq = eq > taken  # for booleans: eq and not taken
            taken |= eq
        yield idx, eq


def masked(xp: Any, mask: Any, values: Any) -> Any:
    """``where(mask, values, 0)`` bit for bit, as one ``and`` of the values' bits (same shapes).

    >>> import numpy as np
    >>> masked(np, np.array([True, False, True]), np.array([-1.5, np.inf, np.nan])).tolist()
    [-1.5, 0.0, nan]
    """
    word = np.dtype(f"u{values.dtype.itemsize}")  # dtypes are numpy's under CuPy too
    keep = mask.astype(word)  # the one new array: the passes below reuse it
    keep *= word.type(np.iinfo(word).max)
    keep &= values.view(word)
    return keep.view(values.dtype)


def max_pool_grad(
    xp: Any, x: Any, grad: Any, g: Geometry, k: tuple[int, int], s: tuple[int, int]
) -> Any:
    """MaxPoolGrad's body: each window's gradient added onto its first maximum in ``x``."""
    padded = pad_nhwc(xp, x, g, lowest(xp, x.dtype))
    top = window_max(xp, padded, g, k, s)
    out = xp.zeros(padded.shape, dtype=grad.dtype)
    for idx, mask in first_max_masks(xp, padded, top, g, k, s):
        out[idx] += masked(xp, mask, grad)
    if not (g.top or g.bottom or g.left or g.right):
        return out
    h, w = x.shape[1:3]
    return xp.ascontiguousarray(out[:, g.top : g.top + h, g.left : g.left + w, :])
