"""TensorFlow's random stream: Philox4x32-10, its seeding, and its word-by-word use.

TensorFlow draws every seeded random value (shuffles, queues, ``tf.data``,
the ``random_*`` ops) from one counter-based generator, Philox4x32-10
(Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011).
Matching TF's orders and values means drawing the same 32-bit words in the
same order, so this module is that generator, written against numpy's uint32
and uint64 arithmetic and vectorised over blocks (any array module ``xp``
with numpy's API serves, CuPy included).

**The generator** (:class:`Philox`): a 128-bit counter and a 64-bit key.
One *block* is 10 rounds of the Philox S-box over the counter (the key bumped
by the Weyl constants between rounds), giving four uint32 words; the counter
then goes up by one.  TF seeds it from an op's two int64 seeds: the key is
``seed`` (low word first), the counter's upper 64 bits are ``seed2`` and its
lower 64 bits start at 0.  ``reserve(n)`` hands out a copy at the current
counter and moves on by ``n`` blocks (TF's ``GuardedPhiloxRandom``: each run
of a random op reserves its blocks, so runs draw disjoint parts).

**Word by word** (:class:`Words`): TF's ``SingleSampleAdapter`` hands out a
block's four words one at a time, in order, before drawing the next block.
A ``Words`` owns its generator, so it may draw blocks ahead in batches
without changing which word comes next.

**Orders** built on the words: :func:`fisher_yates` is TF's ``RandomShuffle``
(forward: position ``i`` swaps with ``i + word % (n - i)``), which is also
how ``Dataset.shuffle`` empties a buffer holding the whole input.

Seeds of ``(0, 0)`` mean "unseeded" in TF; :func:`fresh_seeds` gives two from
the OS for that case, so seeded and unseeded draws share one code path.

**A random op's state** (:class:`OpRandom`, what a Session binds as a random
kernel's ``rng``): the op's Philox generator, reserved from under a lock as
TF's ``GuardedPhiloxRandom``, next to the device's own generator (numpy's or
CuPy's), whose methods it passes through for the kernels that draw from that.

    >>> words = Words(Philox(87654321, 1))
    >>> [words() % 10 for _ in range(3)]  # the stream of seed=1 (TF's (87654321, 1)), mod 10
    [7, 9, 3]
    >>> fisher_yates(10, Words(Philox(87654321, 1))).tolist()  # tf.random_shuffle(range(10), 1)
    [7, 9, 3, 6, 5, 1, 8, 4, 0, 2]
"""

from __future__ import annotations

import functools
import sys
import threading
from typing import Any

import numpy as np

__all__ = ["OpRandom", "Philox", "Words", "fisher_yates", "fresh_seeds", "philox_rounds"]

_M0, _M1 = 0xD2511F53, 0xCD9E8D57  # the round multipliers
_W0, _W1 = 0x9E3779B9, 0xBB67AE85  # the key's Weyl increments
_MASK32, _MASK64, _MASK128 = (1 << 32) - 1, (1 << 64) - 1, (1 << 128) - 1
_CHUNK = 4096  # blocks computed at once on numpy (more go chunk by chunk)
_HI = 1 if sys.byteorder == "little" else 0  # where a uint64's high half lies in its two uint32


def philox_rounds(counter: list[Any], key: tuple[int, int], xp: Any = np) -> list[Any]:
    """Philox4x32-10 of ``counter`` (four uint32 arrays, word 0 the lowest) under ``key``.

    >>> [hex(w[0]) for w in philox_rounds([np.zeros(1, np.uint32)] * 4, (0, 0))]  # the paper's
    ['0x6627e8d5', '0xe169c58d', '0xbc57ac4c', '0x9b00dbd8']
    """
    shape = xp.broadcast_shapes(*(xp.shape(c) for c in counter))
    flat = [xp.broadcast_to(xp.asarray(c), shape).ravel() for c in counter]
    out = _rounds(*flat, key, xp, flat[0].size)
    return [out[:, w].reshape(shape) for w in range(4)]


def _rounds(c0: Any, c1: Any, c2: Any, c3: Any, key: tuple[int, int], xp: Any, n: int) -> Any:
    """The ``n`` blocks of counters ``(c0, c1, c2, c3)`` (arrays or ints) as ``(n, 4)`` uint32.

    Words (0, 2) and (1, 3) go as two rows, so a round is three array ops
    (few calls matter most: a shuffle's few hundred blocks cost mostly call
    overhead): both 64-bit products at once, into one of two buffers taken in
    turn; their high halves (a uint32 view, rows swapped) xor the odd words;
    then xor the round's key, from a table made whole so that no operand is
    broadcast (off numpy: per row).  The low halves are the next round's odd
    words as they lie in the product buffer, never copied; the last round
    writes into the output.  Many blocks go a chunk at a time (twice as fast
    for 250,000 blocks as all at once, which leaves the cache each op).
    """
    if xp is np and n > _CHUNK:  # a chunk at a time: its arrays stay in the cache
        out = np.empty((n, 4), np.uint32)
        for a in range(0, n, _CHUNK):
            b = min(a + _CHUNK, n)
            part = [c[a:b] if np.ndim(c) else c for c in (c0, c1, c2, c3)]
            out[a:b] = _rounds(*part, key, xp, b - a)
        return out
    even = xp.empty((2, n), xp.uint32)
    even[0], even[1] = c0, c2
    odd: Any = xp.empty((2, n), xp.uint32)
    odd[0], odd[1] = c1, c3
    mult = xp.empty((2, n), xp.uint64)  # made where the words are: nothing uploaded
    mult[0], mult[1] = _M0, _M1
    halves = []  # per product buffer: its (high, low) uint32 halves, rows swapped
    for buffer in (xp.empty((2, n), xp.uint64), xp.empty((2, n), xp.uint64)):
        words = buffer.view(xp.uint32).reshape(2, n, 2)[::-1]
        halves.append((buffer, words[:, :, _HI], words[:, :, 1 - _HI]))
    keys = [((key[0] + r * _W0) & _MASK32, (key[1] + r * _W1) & _MASK32) for r in range(10)]
    table = None
    if xp is np:
        table = np.empty((10, 2, n), np.uint32)
        table[...] = np.array(keys, np.uint32)[:, :, None]
    out = xp.empty((n, 4), xp.uint32)
    for r in range(10):
        product, high, low = halves[r & 1]
        xp.multiply(even, mult, out=product)
        target = out[:, 0::2].T if r == 9 else even
        xp.bitwise_xor(high, odd, out=target)
        if table is not None:
            target ^= table[r]
        else:
            target[0] ^= xp.uint32(keys[r][0])
            target[1] ^= xp.uint32(keys[r][1])
        odd = low
    out[:, 1::2].T[...] = odd
    return out


class Philox:
    """TF's ``PhiloxRandom`` seeded with ``(seed, seed2)``: a counter and a key.

    >>> g = Philox(1, 2)
    >>> g.blocks(2).shape, g.counter - (2 << 64)
    ((2, 4), 2)
    """

    __slots__ = ("counter", "key")

    def __init__(self, seed: int, seed2: int) -> None:
        seed, seed2 = seed & _MASK64, seed2 & _MASK64  # int64 attrs, read as uint64
        self.key = (seed & _MASK32, seed >> 32)
        self.counter = seed2 << 64  # a 128-bit integer; words 2 and 3 hold seed2

    def copy(self) -> Philox:
        """An independent generator at the same place."""
        other = Philox.__new__(Philox)
        other.key, other.counter = self.key, self.counter
        return other

    def skip(self, n: int) -> None:
        """Move on by ``n`` blocks (TF's ``Skip``)."""
        self.counter = (self.counter + n) & _MASK128

    def reserve(self, n: int) -> Philox:
        """A copy here, then skip ``n`` blocks (TF's ``GuardedPhiloxRandom.ReserveSamples128``)."""
        out = self.copy()
        self.skip(n)
        return out

    def blocks(self, n: int, xp: Any = np) -> Any:
        """The next ``n`` blocks as an ``(n, 4)`` uint32 array; the counter moves on by ``n``."""
        lo, hi = self.counter & _MASK64, self.counter >> 64
        if (lo & _MASK32) + n > 1 << 32:  # word 0 wraps within these blocks: carry
            out = self.blocks_at(xp.arange(n, dtype=xp.uint64), xp)
        else:  # only word 0 counts: the others are the same for all n
            first = lo & _MASK32
            c0 = xp.arange(first, first + n, dtype=xp.uint64)
            out = _rounds(c0, lo >> 32, hi & _MASK32, hi >> 32, self.key, xp, n)
        self.skip(n)
        return out

    def blocks_at(self, offsets: Any, xp: Any = np) -> Any:
        """The blocks ``offsets`` (uint64, any shape) past the counter, as ``(*shape, 4)``."""
        lo, hi = self.counter & _MASK64, self.counter >> 64
        low = offsets.astype(xp.uint64) + xp.uint64(lo)  # wraps at 2**64 ...
        high = xp.uint64(hi) + (low < xp.uint64(lo)).astype(xp.uint64)  # ... and carries
        mask, shift = xp.uint64(_MASK32), xp.uint64(32)
        low, high = low.ravel(), high.ravel()
        out = _rounds(low & mask, low >> shift, high & mask, high >> shift, self.key, xp, low.size)
        return out.reshape(*offsets.shape, 4)


class Words:
    """TF's ``SingleSampleAdapter``: a generator's words one at a time, block by block.

    >>> w = Words(Philox(1, 2))
    >>> w.take(6).tolist() == Philox(1, 2).blocks(2).ravel()[:6].tolist()
    True
    """

    __slots__ = ("_at", "_buffer", "generator")

    AHEAD = 64  # blocks drawn at once when the buffer runs out

    def __init__(self, generator: Philox) -> None:
        self.generator = generator  # owned: no one else draws from it
        # the words drawn: an array for take, a list of ints for one by one (as last used)
        self._buffer: np.ndarray | list[int] = []
        self._at = 0  # the next unused word of _buffer

    def take(self, n: int) -> np.ndarray:
        """The next ``n`` words (uint32)."""
        left = len(self._buffer) - self._at
        if isinstance(self._buffer, list):
            self._buffer, self._at = np.array(self._buffer[self._at :], np.uint32), 0
        if n > left:
            more = -(-(n - left) // 4)
            fresh = self.generator.blocks(max(more, self.AHEAD)).ravel()
            self._buffer = np.concatenate([self._buffer[self._at :], fresh]) if left else fresh
            self._at = 0
        out = self._buffer[self._at : self._at + n]
        self._at += n
        return out  # type: ignore[return-value]

    def __call__(self) -> int:
        """The next word, as a Python int (from a list: a queue's dequeue allocates nothing)."""
        at, buffer = self._at, self._buffer
        if at >= len(buffer):
            buffer, at = self.generator.blocks(self.AHEAD).ravel().tolist(), 0
        elif not isinstance(buffer, list):
            buffer, at = buffer[at:].tolist(), 0
        self._buffer, self._at = buffer, at + 1
        return buffer[at]


def fisher_yates(n: int, words: Words) -> np.ndarray:
    """TF's shuffle order of ``n`` items: ``i`` swaps with ``i + word % (n - i)`` for ``i < n - 1``.

    The swaps depend on each other, but not in a way that needs a loop.  Call
    the steps that swap with position ``p`` (all at or before ``p``) its
    *group*.  An item ``x`` that some step takes from its own place ends where
    the first of ``x``'s group took it; any other item is the one step ``x``
    carries to ``x + word % (n - x)``.  What step ``p`` carries to ``t =
    target(p)`` ends where the next step of ``t``'s group (after ``p``) takes
    it; if ``p`` was the group's last step it stays (``t == p``) or is what
    step ``t`` carries on, and so on.  Grouping the steps (a stable sort of
    the targets: a radix sort below 65,537 items) gives all of that, and the
    chains of "carried on by step ``t``" are followed for all steps at once
    by pointer doubling (a handful of gathers).

    >>> fisher_yates(1, Words(Philox(5, 5))).tolist()
    [0]
    """
    if n <= 1:
        return np.arange(n, dtype=np.int64)
    steps, span = _steps(n)
    target = np.empty(n, np.int64)
    target[-1] = n - 1  # the last step swaps with itself
    np.add(steps[:-1], words.take(n - 1) % span, out=target[:-1])
    group = np.argsort(target.astype(np.uint16) if n <= 1 << 16 else target, kind="stable")
    padded = np.empty(n + 2, np.int64)  # the sorted targets, -1 either side
    padded[0] = padded[-1] = -1
    at = np.take(target, group, out=padded[1:-1])
    # node p < n: step p; node n + q: the place q, where items end.  A step that is not its
    # group's last points to the place of the next (which takes its item there), the last
    # to the step its target is (which carries the item on); unless that is itself, whose
    # item no one reads (its group's first step places it), so any place does
    node = np.empty(2 * n, np.int64)
    np.add(steps, n, out=node[n:])
    after = np.empty(n + 1, np.int64)  # the place of the next step of the group
    np.add(group, n, out=after[:n])
    after[n] = n
    moves = (at != padded[2:]) & (at != group)  # the last step of its group, not to itself
    node[group] = np.where(moves, at, after[1:])
    while True:  # pointer doubling, two steps a look: every step to the place its item ends
        node = np.take(node, np.take(node, node))
        if node[:n].min() >= n:
            break
    ends = node[:n] - n
    first = at != padded[:-2]  # the first step of its group: takes x = its target in place
    ends[at[first]] = group[first]
    order = np.empty(n, np.int64)
    order[ends] = steps
    return order


@functools.lru_cache(maxsize=8)
def _steps(n: int) -> tuple[np.ndarray, np.ndarray]:
    """``0 .. n-1`` and the spans ``n - i`` of the steps ``i < n - 1`` (read-only)."""
    steps = np.arange(n, dtype=np.int64)
    span = np.arange(n, 1, -1, dtype=np.uint32 if n < 1 << 32 else np.uint64)
    steps.flags.writeable = span.flags.writeable = False
    return steps, span


def fresh_seeds() -> tuple[int, int]:
    """Two seeds from the OS, for an unseeded (``seed == seed2 == 0``) draw.

    >>> all(0 <= s < 2**63 for s in fresh_seeds())
    True
    """
    a, b = np.random.SeedSequence().generate_state(2, np.uint64).tolist()
    return a >> 1, b >> 1


class OpRandom:
    """One random op's generators in one session: TF's Philox and the device's generator.

    >>> import numpy as np
    >>> r = OpRandom(87654321, 1, np.random.default_rng(0))
    >>> r.reserve(3).counter - r.reserve(0).counter, r.random() < 1
    (-3, True)
    """

    __slots__ = ("_lock", "generator", "philox", "seeded")

    def __init__(self, seed: int, seed2: int, generator: Any) -> None:
        self.seeded = bool(seed or seed2)
        self.philox = Philox(*((seed, seed2) if self.seeded else fresh_seeds()))
        self.generator = generator  # the device's: what the other kernels draw from
        self._lock = threading.Lock()  # runs on several threads reserve in turn

    @classmethod
    def of(cls, attrs: dict[str, Any], device: Any) -> OpRandom:
        """The state for a random op with ``attrs`` (its seeds) run on ``device``."""
        seeds = attrs.get("seed", 0), attrs.get("seed2", 0)
        return cls(*seeds, device.rng(*seeds))

    def reserve(self, n: int) -> Philox:
        """A generator for ``n`` blocks of this run's draws (TF's ``ReserveSamples128``)."""
        with self._lock:
            return self.philox.reserve(n)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.generator, name)
