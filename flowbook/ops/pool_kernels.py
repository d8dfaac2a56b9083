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
- **scatter** (:func:`scatter_codes`): each cell's masked gradient goes to
  its slice of the padded shape.  Overlapping windows add into zeros;
  disjoint ones (``stride >= ksize``) write each slice once, as ``value +
  0`` so the bits are those the adds would give (``-0.0`` becomes ``0.0``).
  Windows that tile the input exactly (``stride == ksize``, the size a
  multiple: the CNN's 2x2 pool) with a finite gradient take the reshape fast
  path: each cell's gradient times its mask written into its slice of the
  ``[N, OH, KH, OW, KW, C]`` view of the NHWC result, then one ``+ 0`` pass
  (earlier: contiguous blocks and one transposing copy, 1.4 ms against 1.9
  for a broadcast one-hot product and 2.1 for the per-cell path, CPU time,
  cold caches, at [64,28,28,32]; the direct writes are ~15% faster again).

**No argmax cache.**  The first-max codes are recomputed by MaxPoolGrad from
``orig_input``, as TF's CPU kernel does, rather than kept from the forward
pass: a decision taken on these figures at the CNN's [64,28,28,32] 2x2/2
pool (best of 30): the running max alone 0.45 ms, with the codes 0.91 ms.
Keeping the codes would move their 0.46 ms from the gradient into the
forward pass, which every inference run would then pay, to save 0.46 ms per
training step -- less the proof a cache keyed by array identity needs that
neither ``x`` nor ``y`` changed in between (a copy of ``x`` and a
comparison: 0.36 ms).  A net 0.1 ms per step, against a cost on every
inference and a cache to keep right: not kept.  With nothing kept, nothing
can be stale.  (The convolutions do keep their patch matrix: there the
saving is the whole im2col copy, KH*KW times the size of that proof;
``flowbook.ops.conv_patches``.)

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

__all__ = [
    "NONE",
    "cells",
    "first_max_codes",
    "lowest",
    "masked",
    "max_pool_grad",
    "scatter_codes",
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


def window_max(xp: Any, padded: Any, g: Geometry, k: tuple[int, int], s: tuple[int, int]) -> Any:
    """``[N, OH, OW, C]``: the maximum of each window of the (already padded) input."""
    out = None
    for idx in cells(g, k, s):
        if out is None:
            out = padded[idx].copy()
        else:
            xp.maximum(out, padded[idx], out=out)
    return out


def window_sum(xp: Any, padded: Any, g: Geometry, k: tuple[int, int], s: tuple[int, int]) -> Any:
    """``[N, OH, OW, C]``: the sum of each window, added in row-major cell order."""
    out = None
    for idx in cells(g, k, s):
        if out is None:
            out = padded[idx].copy()
        else:
            out += padded[idx]
    return out


def first_max_codes(
    xp: Any, padded: Any, g: Geometry, k: tuple[int, int], s: tuple[int, int]
) -> tuple[Any, Any]:
    """(window max, row-major index of each window's first max) of the padded input.

    >>> import numpy as np
    >>> from flowbook.ops.windows import window_geometry
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
    xp: Any,
    codes: Any,
    grad: Any,
    padded_shape: tuple[int, ...],
    g: Geometry,
    k: tuple[int, int],
    s: tuple[int, int],
) -> Any:
    """An array of ``padded_shape``: each window's gradient on the cell its code names."""
    tiled = tuple(s) == tuple(k) and tuple(padded_shape[1:3]) == (g.oh * k[0], g.ow * k[1])
    if tiled and grad.dtype.kind == "f" and bool(xp.isfinite(grad).all()):
        return _scatter_tiled(xp, codes, grad, padded_shape, k)
    disjoint = s[0] >= k[0] and s[1] >= k[1]
    out = (xp.empty if tiled else xp.zeros)(padded_shape, dtype=grad.dtype)
    zero = grad.dtype.type(0)
    for t, idx in enumerate(cells(g, k, s)):
        part = masked(xp, codes == t, grad)
        if disjoint:
            xp.add(part, zero, out=out[idx])  # one write; + 0 as the adds into zeros would
        else:
            out[idx] += part
    return out


def _scatter_tiled(
    xp: Any, codes: Any, grad: Any, shape: tuple[int, ...], k: tuple[int, int]
) -> Any:
    """:func:`scatter_codes` for windows that tile the input, a finite ``grad``.

    Per cell, the gradient times the mask of its code, written straight into
    that cell's slice of the ``[N, OH, KH, OW, KW, C]`` view of the result
    (runs of C contiguous elements); then ``+ 0`` over the whole result turns
    the ``-0.0`` of a negative gradient times 0 into the ``0.0`` the adds into
    zeros give.  (Not for inf or NaN: ``inf * 0`` is NaN.)  At [64,28,28,32]
    0.78 ms against 0.94 for per-cell contiguous blocks interleaved by one
    transposing copy (best of 20, warm heap).
    """
    n, oh, ow, c = grad.shape
    out = xp.empty(shape, dtype=grad.dtype)
    cells6 = out.reshape(n, oh, k[0], ow, k[1], c)
    for t in range(k[0] * k[1]):
        xp.multiply(grad, codes == t, out=cells6[:, :, t // k[1], :, t % k[1]])
    out += grad.dtype.type(0)
    return out


def max_pool_grad(
    xp: Any,
    x: Any,
    grad: Any,
    g: Geometry,
    k: tuple[int, int],
    s: tuple[int, int],
    positive_only: bool = False,
) -> Any:
    """MaxPoolGrad's body: each window's gradient added onto its first maximum in ``x``.

    ``positive_only``: windows whose maximum is not > 0 pass nothing (their code
    becomes :data:`NONE`).  Where ``x`` is a ReLU's output that is the
    ReLU's gradient applied after, bit for bit: a cell gets gradient only as
    some window's maximum, and ``ReluGrad`` keeps a cell's gradient where the
    cell, that maximum, is > 0 (else ``+0.0``, the bits a window passing
    nothing leaves).

    >>> import numpy as np
    >>> from flowbook.ops.windows import window_geometry
    >>> x = np.array([0.0, -1.0, 2.0, 1.0]).reshape(1, 1, 4, 1)
    >>> g = window_geometry((1, 4), (1, 2), (1, 2), "VALID")
    >>> dy = np.array([5.0, 7.0]).reshape(1, 1, 2, 1)
    >>> max_pool_grad(np, x, dy, g, (1, 2), (1, 2), positive_only=True).ravel().tolist()
    [0.0, 0.0, 7.0, 0.0]
    """
    padded = pad_nhwc(xp, x, g, lowest(xp, x.dtype))
    top, codes = first_max_codes(xp, padded, g, k, s)
    if positive_only:  # all bits set is NONE (uint8) or -1 (int32): no cell's code
        none = codes.dtype.type(NONE if codes.dtype == np.uint8 else -1)
        codes |= xp.logical_not(top > 0).astype(codes.dtype) * none
    out = scatter_codes(xp, codes, grad, padded.shape, g, k, s)
    if not (g.top or g.bottom or g.left or g.right):
        return out
    h, w = x.shape[1:3]
    return xp.ascontiguousarray(out[:, g.top : g.top + h, g.left : g.left + w, :])
