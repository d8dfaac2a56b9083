"""TensorFlow's random distributions over its Philox words: uniform, normal, truncated, ints.

A seeded ``tf.random_uniform`` / ``random_normal`` / ``truncated_normal`` in
TensorFlow turns Philox blocks (:mod:`flowbook.kernels.philox`) into values in a
fixed way; doing the same here gives TF's values for the same seeds.  Each
function takes the generator a run reserved (TF reserves ``256`` blocks per
output element: ``ReserveRandomOutputs(n, 256)``) and returns ``n`` values
as an array of ``xp`` (numpy, or CuPy: the blocks are computed where the
values go, vectorised over blocks, nothing uploaded).

- **uniform** floats keep a word's low mantissa bits under the exponent of
  1.0 and subtract 1: float32 one word (23 bits), float16 one word (10 bits
  of its low half), float64 two words (20 + 32 bits); four, four and two
  values a block.
- **normal**: Box-Muller on pairs of uniforms (float32: ``u1`` clamped to at
  least 1e-7, ``sqrt(-2 log u1) * (sin, cos)(2 pi u2)``; float64 the same on
  two double uniforms, so two values a block; float16 is float32's, rounded).
  TF computes float32 with glibc's ``logf``/``sincosf``, which are not always
  correctly rounded; here they are (float64, then rounded), so about 1.5% of
  float32 normals differ from TF's in the last bit.
- **truncated normal**: output group ``g`` (4 values; float64: 2) reads its
  own stream ``g * 256`` blocks on (float64: ``g * 128``), word by word, and
  keeps the normals with ``|x| < 2`` in order until the group is full.
- **ints** in ``[lo, hi)``: ``lo + word % (hi - lo)`` (int64: two words
  make one 64-bit value).

    >>> from flowbook.kernels.philox import Philox
    >>> uniform(Philox(87654321, 3), 3, np.dtype(np.float32)).tolist()  # tf.random_uniform seed=3
    [0.38692939281463623, 0.3600262403488159, 0.9768795967102051]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowbook.kernels.philox import Philox

__all__ = ["normal", "truncated_normal", "uniform", "uniform_int"]

_U64 = np.uint64
_EPSILON = 1.0e-7  # Box-Muller's smallest u1


def _words(philox: Philox, n: int, per_block: int, xp: Any) -> Any:
    """The words of the blocks that ``n`` values need, ``per_block`` values a block."""
    return philox.blocks(-(-n // per_block), xp).ravel()


def _float(words: Any) -> Any:
    bits = words & np.uint32(0x7FFFFF)  # a new array: the rest works in place
    bits |= np.uint32(0x3F800000)
    out = bits.view(np.float32)
    out -= np.float32(1)
    return out


def _double(hi: Any, lo: Any) -> Any:
    bits = ((hi.astype(_U64) & _U64(0xFFFFF)) << _U64(32)) | lo.astype(_U64)
    return (bits | (_U64(1023) << _U64(52))).view(np.float64) - 1.0


def _half(words: Any) -> Any:
    bits = ((words & np.uint32(0x3FF)) | np.uint32(0x3C00)).astype(np.uint16)
    return bits.view(np.float16) - np.float16(1)


def uniform(philox: Philox, n: int, dtype: np.dtype, xp: Any = np) -> Any:
    """``n`` floats of ``dtype`` in ``[0, 1)``, TF's ``UniformDistribution``.

    >>> uniform(Philox(87654321, 3), 2, np.dtype(np.float64)).tolist()
    [0.0954352046549809, 0.8150370178493045]
    """
    if dtype == np.float64:
        w = _words(philox, n, 2, xp)
        return _double(w[0::2], w[1::2])[:n]
    w = _words(philox, n, 4, xp)[:n]
    return _half(w) if dtype == np.float16 else _float(w)


def _box_muller_float(x0: Any, x1: Any, xp: Any) -> Any:
    """Pairs of words -> pairs of float32 normals, interleaved (f0, f1, f0, f1, ...)."""
    # float32 arrays, worked in place; dtype=float64 computes in doubles, rounded once on output
    radius, angle = _float(x0), _float(x1)
    xp.maximum(radius, np.float32(_EPSILON), out=radius)
    xp.log(radius, dtype=np.float64, out=radius)
    radius *= np.float32(-2)
    xp.sqrt(radius, out=radius)
    xp.multiply(angle, 2 * np.pi, dtype=np.float64, out=angle)
    out = xp.empty((*x0.shape, 2), np.float32)
    xp.sin(angle, dtype=np.float64, out=out[..., 0])
    xp.cos(angle, dtype=np.float64, out=out[..., 1])
    out *= radius[..., None]
    return out.reshape(*x0.shape[:-1], -1)


def _box_muller_double(w: Any, xp: Any) -> Any:
    """Quadruples of words (the last axis, 4k long) -> pairs of float64 normals."""
    u1 = xp.maximum(_double(w[..., 0::4], w[..., 1::4]), _EPSILON)
    v1 = 2 * np.pi * _double(w[..., 2::4], w[..., 3::4])
    radius = xp.sqrt(-2.0 * xp.log(u1))
    return xp.stack([xp.sin(v1) * radius, xp.cos(v1) * radius], axis=-1).reshape(*w.shape[:-1], -1)


def normal(philox: Philox, n: int, dtype: np.dtype, xp: Any = np) -> Any:
    """``n`` standard normals of ``dtype``, TF's ``NormalDistribution``.

    >>> normal(Philox(87654321, 3), 2, np.dtype(np.float64)).tolist()
    [-1.9891512607565875, 0.8613319661711827]
    """
    if dtype == np.float64:
        return _box_muller_double(_words(philox, n, 2, xp)[None], xp)[0, :n]
    w = _words(philox, n, 4, xp)[None]
    return _box_muller_float(w[:, 0::2], w[:, 1::2], xp)[0, :n].astype(dtype)


def truncated_normal(philox: Philox, n: int, dtype: np.dtype, xp: Any = np) -> Any:
    """``n`` normals of ``dtype`` within 2 of 0, TF's ``TruncatedNormalDistribution``.

    >>> truncated_normal(Philox(87654321, 3), 3, np.dtype(np.float64)).round(4).tolist()
    [-1.9892, 0.8613, 0.5002]
    """
    wide = dtype == np.float64
    size, skip = (2, 128) if wide else (4, 256)  # values a group; blocks between groups
    groups = -(-n // size)
    out = xp.empty((groups, size), np.float64 if wide else np.float32)
    todo, reach = xp.arange(groups, dtype=_U64), 2  # groups left; blocks each reads
    while todo.size:
        at = todo[:, None] * _U64(skip) + xp.arange(reach, dtype=_U64)
        w = philox.blocks_at(at, xp).reshape(len(todo), -1)  # each group's words, in order
        drawn = _box_muller_double(w, xp) if wide else _box_muller_float(w[:, 0::2], w[:, 1::2], xp)
        kept = xp.abs(drawn) < 2
        full = kept.sum(axis=1) >= size
        place = xp.arange(drawn.shape[1])
        rank = xp.where(kept[full], place, place + drawn.shape[1])  # kept ones first, in order
        first = xp.argsort(rank, axis=1)[:, :size]
        out[todo[full].astype(np.intp)] = xp.take_along_axis(drawn[full], first, axis=1)
        todo, reach = todo[~full], reach * 4  # rare: a group that needs more blocks
    return out.ravel()[:n].astype(dtype)


def uniform_int(philox: Philox, n: int, lo: int, hi: int, dtype: np.dtype, xp: Any = np) -> Any:
    """``n`` integers in ``[lo, hi)``, TF's ``UniformDistribution`` for int32 / int64.

    >>> uniform_int(Philox(87654321, 3), 4, -5, 1000, np.dtype(np.int32)).tolist()
    [447, 923, 620, 585]
    """
    span = _U64((hi - lo) & ((1 << 64) - 1))
    if dtype == np.int64:
        w = _words(philox, n, 2, xp).astype(_U64)
        bits = w[0::2] | (w[1::2] << _U64(32))
    else:
        bits = _words(philox, n, 4, xp)[:n].astype(_U64)
    offset = bits[:n] % span
    return (offset.astype(np.int64) + lo).astype(dtype)  # hi - lo < 2**63 here
