"""Pooling kernel bodies as passes over strided slices, one per window cell.

A window of ``k = (KH, KW)`` cells at strides ``s`` visits, for its cell
``(i, j)``, the strided slice ``padded[:, i::s0, j::s1, :]`` (cut to the
output size) of the padded input: an ``[N, OH, OW, C]`` view, no copy.  Every
pool here is a loop over the KH*KW cells in row-major order, each step one
element-wise pass over output-sized arrays (numpy and CuPy alike).  For
non-overlapping windows (``stride == ksize``) these slices are exactly the
views of ``x.reshape(N, OH, KH, OW, KW, C)[:, :, i, :, j]``: the reshape
fast path, with no copy and no extra pass (a ``max`` over the reshaped axes
2 and 4 reads the same memory through numpy's generic reduction and took
1.9 ms against the slices' 0.45 ms at [64,28,28,32]).

- **max / sum** (:func:`window_max`, :func:`window_sum`): a running
  ``maximum`` / ``+`` of the cell slices.  The running sum adds in the same
  row-major order as a reduction over the window axes would, so the results
  are bit for bit the same.
- **the first maximum** (:func:`first_max_codes`): per window, the row-major
  index of its first maximum (the cell TF's CPU MaxPoolGrad picks on ties),
  as a ``uint8`` code computed beside the running max: cell ``t`` takes over
  where it is strictly greater than the maximum so far, so the code is the
  largest ``t * (cell_t > max_before_t)`` (a ``maximum`` on bytes, no
  branch).  A window whose maximum is NaN gets :data:`NONE` and passes no
  gradient (no cell is its maximum).
- **masking** (:func:`masked`): ``where(mask, values, 0)`` as a bitwise
  ``and`` of the values' bits with a mask of all-ones or all-zeros words.
  Same bits as ``where`` (an infinite or NaN gradient is not spread as
  ``inf * 0`` would), but no branch per element: numpy's ``where`` (and
  ``copyto(..., where=)``) on a random mask ran ~8x slower than this.
- **the gradient** (:func:`max_pool_grad`): overlapping windows add each
  cell's masked gradient into zeros (:func:`scatter_codes`); disjoint ones
  (``stride >= ksize``) write each cell once, ``grad + 0`` (the bits TF's
  add into zeros gives: ``-0.0`` becomes ``0.0``) as the integer product of
  its bits and the cell's mask (:func:`place_codes`, or :func:`place_first`
  where the maxima are known from the forward MaxPool), into ``empty`` when
  the windows tile the input (the CNN's 2x2 pool) and no pass after.  Large
  batches run in bands of images on both cores (``flowbook.kernels.gemm.in_bands``).

**No argmax cache.**  The first-max codes are recomputed by MaxPoolGrad from
``orig_input``, as TF's CPU kernel does (the optimiser's fused op, where it
proves ``orig_output`` is that MaxPool's, reads the maxima from it, never
codes), rather than kept from the forward pass: a decision taken on these figures at the CNN's [64,28,28,32] 2x2/2
pool (best of 30): the running max alone 0.45 ms, with the codes 0.91 ms.
Keeping the codes would move their 0.46 ms from the gradient into the
forward pass, which every inference run would then pay, to save 0.46 ms per
training step -- less the proof a cache keyed by array identity needs that
neither ``x`` nor ``y`` changed in between (a copy of ``x`` and a
comparison: 0.36 ms).  A net 0.1 ms per step, against a cost on every
inference and a cache to keep right: not kept.  With nothing kept, nothing
can be stale.  (The convolutions do keep their patch matrix: there the
saving is the whole im2col copy, KH*KW times the size of that proof;
``flowbook.kernels.conv_patches``.)

    >>> import numpy as np
    >>> from flowbook.kernels.windows import window_geometry
    >>> x = np.arange(16.0).reshape(1, 4, 4, 1)
    >>> g = window_geometry((4, 4), (2, 2), (2, 2), "VALID")
    >>> window_max(np, x, g, (2, 2), (2, 2))[0, :, :, 0].tolist()
    [[5.0, 7.0], [13.0, 15.0]]
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from flowbook.kernels.gemm import bands, in_bands
from flowbook.kernels.windows import Geometry, pad_nhwc

__all__ = [
    "NONE",
    "cells",
    "first_max_codes",
    "lowest",
    "masked",
    "max_pool_grad",
    "place_codes",
    "place_first",
    "scatter_codes",
    "tiles",
    "window_max",
    "window_sum",
]

NONE = 255  # the code of a window with no first maximum (its maximum is NaN)


def lowest(xp: Any, dtype: Any) -> Any:
    """The value padding takes for a max pool: -inf, or the integer type's minimum."""
    return -xp.inf if dtype.kind == "f" else xp.iinfo(dtype).min


def _cell(i: int, j: int, g: Geometry, s: tuple[int, int]) -> tuple[slice, slice, slice]:
    """Index of window cell (i, j) in the padded array: ``[N, OH, OW, C]`` once applied."""
    rows = slice(i, i + s[0] * (g.oh - 1) + 1, s[0])
    return slice(None), rows, slice(j, j + s[1] * (g.ow - 1) + 1, s[1])


def cells(g: Geometry, k: tuple[int, int], s: tuple[int, int]) -> Iterator[tuple]:
    """The index of each window cell's slice, in row-major order."""
    for i in range(k[0]):
        for j in range(k[1]):
            yield _cell(i, j, g, s)


def _code_dtype(k: tuple[int, int]) -> Any:
    """Bytes while the cells fit below :data:`NONE`, else 32-bit codes."""
    return np.dtype(np.uint8) if k[0] * k[1] < NONE else np.dtype(np.int32)


def _reduce(
    xp: Any, padded: Any, g: Geometry, k: tuple[int, int], s: tuple[int, int], add: bool
) -> Any:
    """The running maximum (or sum) of the cell slices, in batch bands when large."""
    n, oh, ow, c = padded.shape[0], g.oh, g.ow, padded.shape[3]
    out = xp.empty((n, oh, ow, c), dtype=padded.dtype)
    step = xp.add if add else xp.maximum

    def band(lo: int, hi: int) -> None:
        first = True
        for idx in cells(g, k, s):
            part = padded[lo:hi][idx]
            if first:
                out[lo:hi] = part
                first = False
            else:
                step(out[lo:hi], part, out=out[lo:hi])

    if pieces := bands(xp, padded.shape, padded.itemsize):
        in_bands(n, band, pieces)
    else:
        band(0, n)
    return out


def window_max(xp: Any, padded: Any, g: Geometry, k: tuple[int, int], s: tuple[int, int]) -> Any:
    """``[N, OH, OW, C]``: the maximum of each window of the (already padded) input."""
    return _reduce(xp, padded, g, k, s, add=False)


def window_sum(xp: Any, padded: Any, g: Geometry, k: tuple[int, int], s: tuple[int, int]) -> Any:
    """``[N, OH, OW, C]``: the sum of each window, added in row-major cell order."""
    return _reduce(xp, padded, g, k, s, add=True)


def first_max_codes(
    xp: Any, padded: Any, g: Geometry, k: tuple[int, int], s: tuple[int, int]
) -> tuple[Any, Any]:
    """(window max, row-major index of each window's first max) of the padded input.

    >>> import numpy as np
    >>> from flowbook.kernels.windows import window_geometry
    >>> x = np.array([1.0, 3.0, 3.0, 3.0, np.nan, 0.0]).reshape(1, 1, 6, 1)
    >>> g = window_geometry((1, 6), (1, 2), (1, 2), "VALID")
    >>> first_max_codes(np, x, g, (1, 2), (1, 2))[1].ravel().tolist()  # a tie: the first
    [1, 0, 255]
    """
    dt = _code_dtype(k)
    top = codes = None
    for t, idx in enumerate(cells(g, k, s)):
        cell = padded[idx]
        if top is None:
            top, codes = cell.copy(), xp.zeros(cell.shape, dtype=dt)
            continue
        xp.maximum(codes, (cell > top) * dt.type(t), out=codes)
        xp.maximum(top, cell, out=top)
    if top.dtype.kind in "fc":
        nan = top != top
        if nan.any():
            codes[nan] = NONE if dt == np.uint8 else -1  # no cell's code
    return top, codes


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


def scatter_codes(
    xp: Any, codes: Any, grad: Any, out: Any, g: Geometry, k: tuple[int, int], s: tuple[int, int]
) -> None:
    """Add each window's gradient onto the cell its code names, into ``out`` (zeros, of the
    padded shape): for windows that may overlap, each cell's masked gradients in row-major
    cell order."""
    for t, idx in enumerate(cells(g, k, s)):
        out[idx] += masked(xp, codes == t, grad)


def tiles(g: Geometry, k: tuple[int, int], s: tuple[int, int], shape: tuple[int, ...]) -> bool:
    """Whether the windows tile the padded ``shape`` exactly: each cell in one window."""
    return tuple(s) == tuple(k) and tuple(shape[1:3]) == (g.oh * k[0], g.ow * k[1])


def place_codes(
    xp: Any, codes: Any, values: Any, out: Any, g: Geometry, k: tuple[int, int], s: tuple[int, int]
) -> None:
    """Write each window's value on the cell its code names into ``out``, +0.0 elsewhere.

    For disjoint windows (``stride >= ksize``): each cell of the result is
    written once, as the *integer* product of the value's bits and the mask
    (1 where the cell is its window's first maximum, else 0): the exact bits
    of ``value`` (``-0.0``, inf and NaN included), +0.0 around it, in one
    pass per cell with no branch per element (a float product by the mask
    would give ``-0.0`` or NaN around negative or infinite values; numpy's
    ``copyto(..., where=)`` on such a mask ran ~8x slower).
    ``out`` has the padded shape: ``empty`` where the windows tile it exactly
    (:func:`tiles`: every cell is written), else zeros (cells no window
    covers stay +0.0).

    >>> import numpy as np
    >>> from flowbook.kernels.windows import window_geometry
    >>> g = window_geometry((1, 4), (1, 2), (1, 2), "VALID")
    >>> codes = np.array([1, 0], np.uint8).reshape(1, 1, 2, 1)
    >>> v = np.array([-0.0, 7.0]).reshape(1, 1, 2, 1)
    >>> out = np.zeros((1, 1, 4, 1))
    >>> place_codes(np, codes, v, out, g, (1, 2), (1, 2)); out.ravel().tolist()
    [0.0, -0.0, 7.0, 0.0]
    """
    word = np.dtype(f"u{values.dtype.itemsize}")  # dtypes are numpy's under CuPy too
    bits, vbits = out.view(word), values.view(word)
    for t, idx in enumerate(cells(g, k, s)):
        xp.multiply(vbits, codes == t, out=bits[idx])  # integer: the bits, or 0


def place_first(
    xp: Any,
    padded: Any,
    top: Any,
    values: Any,
    out: Any,
    g: Geometry,
    k: tuple[int, int],
    s: tuple[int, int],
) -> None:
    """Write each window's value on its first cell equal to its maximum ``top`` into ``out``
    (disjoint windows; ``out`` as :func:`place_codes` wants it), +0.0 on its other cells.

    A cell is the first maximum where it equals ``top`` and no earlier cell
    did (``eq > seen`` on booleans); a NaN maximum equals no cell, so its
    window passes nothing, as :func:`first_max_codes` gives it :data:`NONE`.
    """
    word = np.dtype(f"u{values.dtype.itemsize}")
    bits, vbits = out.view(word), values.view(word)
    seen = None
    for idx in cells(g, k, s):
        eq = padded[idx] == top
        if seen is None:
            first, seen = eq, eq.copy()
        else:
            first = xp.greater(eq, seen)
            seen |= eq
        xp.multiply(vbits, first, out=bits[idx])


def max_pool_grad(
    xp: Any,
    x: Any,
    grad: Any,
    g: Geometry,
    k: tuple[int, int],
    s: tuple[int, int],
    relu: bool = False,
    y: Any = None,
) -> Any:
    """MaxPoolGrad's body: each window's gradient added onto its first maximum in ``x``.

    TF's CPU kernel adds each window's gradient into zeros at its first
    maximum, so that cell holds ``0.0 + grad`` (``-0.0`` becomes ``0.0``).
    ``relu``: TF's ``ReluGrad`` applied after, with ``x`` as its features
    (``_FusedMaxPoolGrad``): the result times ``x > 0``.  For disjoint
    windows that is applied per window, before placing: a window's only
    cell that is not +0.0 is its first maximum, where ``x`` is the window's
    maximum ``top``, so the cell gets ``(grad + 0.0) * (top > 0)`` and the
    others ``+0.0 * mask = +0.0``, bit for bit (``-0.0`` for a negative
    gradient of a window whose maximum is not > 0, NaN for an infinite one,
    as TF).  Overlapping windows add several gradients into a cell: there
    the product is taken after the adds, over the whole result.

    ``y``: the windows' maxima, when known to be MaxPool's of this ``x``
    (disjoint windows only): each window's first maximum is then its first
    cell equal to its maximum (:func:`place_first`), with no running
    maximum to keep: the same cell, a quarter fewer passes at 2x2.

    >>> import numpy as np
    >>> from flowbook.kernels.windows import window_geometry
    >>> x = np.array([0.0, -1.0, 2.0, 1.0]).reshape(1, 1, 4, 1)
    >>> g = window_geometry((1, 4), (1, 2), (1, 2), "VALID")
    >>> dy = np.array([-5.0, 7.0]).reshape(1, 1, 2, 1)
    >>> max_pool_grad(np, x, dy, g, (1, 2), (1, 2)).ravel().tolist()
    [-5.0, 0.0, 7.0, 0.0]
    >>> max_pool_grad(np, x, dy, g, (1, 2), (1, 2), relu=True).ravel().tolist()
    [-0.0, 0.0, 7.0, 0.0]
    """
    padded = pad_nhwc(xp, x, g, lowest(xp, x.dtype))
    disjoint = s[0] >= k[0] and s[1] >= k[1]

    empty = disjoint and tiles(g, k, s, padded.shape)  # every cell written: no zeros first
    out = (xp.empty if empty else xp.zeros)(padded.shape, dtype=grad.dtype)

    def band(lo: int, hi: int) -> None:
        part, into = padded[lo:hi], out[lo:hi]
        if y is not None and disjoint:
            top, codes = y[lo:hi], None  # the maxima known: the first cell equal to each
        else:
            top, codes = first_max_codes(xp, part, g, k, s)
        if not disjoint:
            scatter_codes(xp, codes, grad[lo:hi], into, g, k, s)
            return
        values = grad[lo:hi] + grad.dtype.type(0)  # the add into zeros: a fresh array
        if relu:
            xp.multiply(values, top > 0, out=values)
        if codes is None:
            place_first(xp, part, top, values, into, g, k, s)
        else:
            place_codes(xp, codes, values, into, g, k, s)

    if pieces := bands(xp, padded.shape, padded.itemsize):
        in_bands(len(out), band, pieces)
    else:
        band(0, len(out))
    if g.top or g.bottom or g.left or g.right:
        h, w = x.shape[1:3]
        out = xp.ascontiguousarray(out[:, g.top : g.top + h, g.left : g.left + w, :])
    if relu and not disjoint:
        xp.multiply(out, x > 0, out=out)
    return out
