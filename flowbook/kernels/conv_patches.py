"""The convolutions' patch matrix (im2col), and the bounded cache that lends it to the filter gradient.

**The matrix.**  Conv2D is one GEMM: the ``[N*OH*OW, KH*KW*C]`` matrix of
every window's taps (:func:`patches`) times the ``[KH*KW*C, O]`` filter.  It
is a copy of the ``as_strided`` view ``windows.windows`` makes of the padded
input, in one of two layouts, both plain operands to BLAS (a transposed
operand is a flag, not a copy):

- rows per output pixel (C-contiguous), the copy of the 6-D view: for C > 2;
- rows per tap (:func:`_tap_rows`, the transpose of a C-contiguous
  ``[KH*KW*C, N*OH*OW]``), one slice copy per tap: for C <= 2, where the
  6-D copy moves one or two floats at a time.  [64,28,28,1] with a 5x5
  filter: 0.30 ms against 1.22 ms (C=2: 0.98 against 1.24; C=4: 2.2 against 1.5).

**The cache.**  Conv2DBackpropFilter(x, sizes, dy) is ``patches(x).T @ dy``:
the same matrix the forward conv just built from the same ``x``.  The
forward hands it to :data:`CACHE` (:meth:`PatchCache.put`), and the filter
gradient takes it back (:meth:`PatchCache.take`) instead of rebuilding it.
Entries are found by ``id(x)`` and the window geometry, and each holds a
private copy of ``x``: ``take`` returns the matrix only when the array it is
given has the same shape, dtype and *bytes* as that copy (compared as
unsigned words, so ``-0.0``/``0.0`` and NaN payloads count).  The matrix is a
function of exactly those bytes and the geometry, so a hit is always the
matrix that rebuilding would give: an ``x`` changed in place, a new array
at a reused ``id``, a stale entry from an earlier run -- each is a miss, never
a wrong answer.  The copy and the comparison cost two passes over ``x``,
which is KH*KW times smaller than the matrix.  A hit removes the entry (one
forward, one filter gradient); the cache holds at most :data:`BUDGET_BYTES`
of matrices and copies, dropping the least recently stored first, and never
takes one larger than that.

    >>> import numpy as np
    >>> from flowbook.kernels.windows import window_geometry
    >>> x = np.arange(8.0).reshape(1, 2, 4, 1)
    >>> g = window_geometry((2, 4), (2, 2), (1, 2), "VALID")
    >>> patches(np, x, g, (2, 2), (1, 2)).tolist()
    [[0.0, 1.0, 4.0, 5.0], [2.0, 3.0, 6.0, 7.0]]
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np

from flowbook.kernels import gemm
from flowbook.kernels import windows as win

__all__ = ["BUDGET_BYTES", "CACHE", "PatchCache", "conv_gemm", "lend_key", "patches"]

BUDGET_BYTES = 64 << 20  # matrices and copies the cache may hold at once
TAP_ROWS_MAX_CHANNELS = 2  # at most this many input channels: the per-tap layout


def patches(
    xp: Any,
    x: Any,
    g: win.Geometry,
    k: tuple[int, int],
    s: tuple[int, int],
    d: tuple[int, int] = (1, 1),
) -> Any:
    """The ``[N*OH*OW, KH*KW*C]`` patch matrix of ``x`` (maybe a transposed view)."""
    padded = win.pad_nhwc(xp, x, g)
    n, c = x.shape[0], x.shape[3]
    if c <= TAP_ROWS_MAX_CHANNELS:
        taps = _tap_rows(xp, padded, g, k)
        _fill_taps(taps, padded, g, k, s, d, 0, n)
        return taps.reshape(k[0] * k[1] * c, n * g.oh * g.ow).T
    view = win.windows(xp, padded, g, k, s, d)
    return view.reshape(n * g.oh * g.ow, k[0] * k[1] * c)


def conv_gemm(
    xp: Any,
    x: Any,
    f: Any,
    g: win.Geometry,
    k: tuple[int, int],
    s: tuple[int, int],
    d: tuple[int, int] = (1, 1),
    tail: Callable[[Any], Any] | None = None,
) -> tuple[Any, Any]:
    """Conv2D's product: (the ``[N, OH, OW, O]`` output, the patch matrix), ``tail`` applied
    in place to the output (a fused conv's bias and ReLU).

    A large batch (``gemm.bands``) of an input with few channels (the per-tap
    layout) runs in bands of images, up to two per CPU, on the caller and
    ``gemm``'s helpers: each band writes its rows of the patch matrix,
    multiplies them (its rows of the one GEMM), and runs the
    tail on its rows while they are in cache.  [64,28,28,1] * [5,5,1,32] with
    bias and ReLU: 1.7 ms in four bands on two cores against 2.1-2.4 whole.
    Wider inputs build the matrix whole and split the product (``gemm.matmul``):
    banding [64,14,14,32] * [5,5,32,64] took 13.1 ms against 11.6 (its 40 MB
    matrix copied on both cores at once); their tail still runs in bands.
    """
    n, c, o = x.shape[0], x.shape[3], f.shape[3]
    f2, rows = f.reshape(-1, o), g.oh * g.ow
    pieces = gemm.bands(xp, (n, g.oh, g.ow, o), x.itemsize)
    if not pieces or c > TAP_ROWS_MAX_CHANNELS:
        cols = patches(xp, x, g, k, s, d)  # whole: a large product splits by rows (gemm)
        out = gemm.matmul(cols, f2).reshape(n, g.oh, g.ow, o)
        if tail is not None and pieces:
            gemm.in_bands(n, lambda lo, hi: tail(out[lo:hi]), pieces)
        elif tail is not None:
            tail(out)
        return out, cols
    padded = win.pad_nhwc(xp, x, g)
    taps = _tap_rows(xp, padded, g, k)  # patches()'s layout
    cols = taps.reshape(k[0] * k[1] * c, n * rows).T
    out = xp.empty((n * rows, o), dtype=xp.result_type(cols, f2))
    out4 = out.reshape(n, g.oh, g.ow, o)

    def band(lo: int, hi: int) -> None:
        _fill_taps(taps, padded, g, k, s, d, lo, hi)
        xp.matmul(cols[lo * rows : hi * rows], f2, out=out[lo * rows : hi * rows])
        if tail is not None:
            tail(out4[lo:hi])

    ways = gemm.ways()  # bands: a multiple of the CPUs, at most two each
    gemm.in_bands(n, band, ways * max(1, min(2, pieces // ways)))
    return out4, cols


def lend_key(x: Any, g: win.Geometry, k: Any, s: Any, d: Any) -> tuple:
    """What a patch matrix depends on besides the bytes of ``x`` (a :class:`PatchCache` key)."""
    return (x.shape, x.dtype.str, g, tuple(k), tuple(s), tuple(d))


def _tap_rows(xp: Any, padded: Any, g: win.Geometry, k: tuple[int, int]) -> Any:
    """An empty ``[KH, KW, C, N, OH, OW]`` array: reshaped ``[KH*KW*C, N*OH*OW]``, row block
    (i, j) is tap (i, j) of every window, channel-major, once :func:`_fill_taps` wrote it."""
    n, c = padded.shape[0], padded.shape[3]
    return xp.empty((k[0], k[1], c, n, g.oh, g.ow), dtype=padded.dtype)


def _fill_taps(
    taps: Any, padded: Any, g: win.Geometry, k: Any, s: Any, d: Any, lo: int, hi: int
) -> None:
    """Write images ``lo:hi`` of :func:`_tap_rows`' array, one slice copy per tap."""
    for i in range(k[0]):
        for j in range(k[1]):
            taps[i, j, :, lo:hi] = padded[lo:hi][win.tap(i, j, g, s, d)].transpose(3, 0, 1, 2)


def _same_bytes(xp: Any, a: Any, b: Any) -> bool:
    """Whether two arrays hold the same values bit for bit (type, shape and dtype included)."""
    if type(a) is not type(b) or a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind not in "biufc":  # not plain numbers: no reliable word view
        return False
    word = np.dtype(f"u{a.dtype.itemsize}") if a.dtype.itemsize in (1, 2, 4, 8) else None
    if word is None:
        return False
    return bool(xp.array_equal(a.view(word), b.view(word)))


class PatchCache:
    """Patch matrices lent from Conv2D to Conv2DBackpropFilter; see the module docstring.

    >>> import numpy as np
    >>> cache, x, m = PatchCache(1 << 20), np.ones((1, 2, 2, 1)), np.ones((4, 1))
    >>> cache.put(np, x, "geometry", m)
    >>> x[0, 0, 0, 0] = 5.0  # changed in place: the entry no longer answers
    >>> cache.take(np, x, "geometry") is None
    True
    """

    def __init__(self, budget: int) -> None:
        self.budget = budget  # bytes of matrices and copies held at most
        self.lock = threading.Lock()  # guards the two fields below
        self.entries: OrderedDict[tuple, tuple[Any, Any]] = OrderedDict()  # key -> (copy, matrix)
        self.held = 0  # bytes the entries hold

    def put(self, xp: Any, x: Any, geometry: Any, matrix: Any) -> None:
        """Keep ``matrix`` (made from ``x`` with ``geometry``) for one later :meth:`take`."""
        size = matrix.nbytes + x.nbytes
        if size > self.budget:
            return
        entry = (x.copy(), matrix)
        key = (id(x), geometry)
        with self.lock:
            old = self.entries.pop(key, None)
            if old is not None:
                self.held -= old[0].nbytes + old[1].nbytes
            while self.entries and self.held + size > self.budget:
                _, (c, m) = self.entries.popitem(last=False)
                self.held -= c.nbytes + m.nbytes
            self.entries[key] = entry
            self.held += size

    def take(self, xp: Any, x: Any, geometry: Any) -> Any:
        """The matrix put for exactly these bytes of ``x`` and ``geometry``, else None."""
        with self.lock:
            entry = self.entries.pop((id(x), geometry), None)
            if entry is not None:
                self.held -= entry[0].nbytes + entry[1].nbytes
        if entry is None or not _same_bytes(xp, entry[0], x):
            return None
        return entry[1]

    def clear(self) -> None:
        """Drop every entry."""
        with self.lock:
            self.entries.clear()
            self.held = 0


CACHE = PatchCache(BUDGET_BYTES)
