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

import threading
from typing import Any

import numpy as np

__all__ = ["OpRandom", "Philox", "Words", "fisher_yates", "fresh_seeds", "philox_rounds"]

_M0, _M1 = 0xD2511F53, 0xCD9E8D57  # the round multipliers
_W0, _W1 = 0x9E3779B9, 0xBB67AE85  # the key's Weyl increments
_MASK32, _MASK64, _MASK128 = (1 << 32) - 1, (1 << 64) - 1, (1 << 128) - 1


def philox_rounds(counter: list[Any], key: tuple[int, int], xp: Any = np) -> list[Any]:
    """Philox4x32-10 of ``counter`` (four uint32 arrays, word 0 the lowest) under ``key``.

    >>> [hex(w[0]) for w in philox_rounds([np.zeros(1, np.uint32)] * 4, (0, 0))]  # the paper's
    ['0x6627e8d5', '0xe169c58d', '0xbc57ac4c', '0x9b00dbd8']
    """
    # words (0, 2) and (1, 3) as two rows of uint64 holding 32 bits each: one array op a step
    even = xp.stack([counter[0], counter[2]]).astype(xp.uint64)
    odd = xp.stack([counter[1], counter[3]]).astype(xp.uint64)
    column = (2,) + (1,) * (even.ndim - 1)  # a value per row, over any shape of counters
    mult = xp.full(column, _M0, dtype=xp.uint64)  # made where the words are: nothing uploaded
    mult[1] = _M1
    mask, shift = xp.uint64(_MASK32), xp.uint64(32)
    k0, k1 = key
    for r in range(10):
        if r:
            k0, k1 = (k0 + _W0) & _MASK32, (k1 + _W1) & _MASK32
        product = even * mult
        even = (product >> shift)[::-1]  # (hi1, hi0) ...
        even ^= odd  # ... ^ (c1, c3) ...
        even[0] ^= xp.uint64(k0)  # ... ^ (k0, k1)
        even[1] ^= xp.uint64(k1)
        odd = (product & mask)[::-1]  # (lo1, lo0)
    even, odd = even.astype(xp.uint32), odd.astype(xp.uint32)
    return [even[0], odd[0], even[1], odd[1]]


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
        out = self.blocks_at(xp.arange(n, dtype=xp.uint64), xp)
        self.skip(n)
        return out

    def blocks_at(self, offsets: Any, xp: Any = np) -> Any:
        """The blocks ``offsets`` (uint64, any shape) past the counter, as ``(*shape, 4)``."""
        lo, hi = self.counter & _MASK64, self.counter >> 64
        low = offsets.astype(xp.uint64) + xp.uint64(lo)  # wraps at 2**64 ...
        high = xp.uint64(hi) + (low < xp.uint64(lo)).astype(xp.uint64)  # ... and carries
        shift = xp.uint64(32)
        words = [low.astype(xp.uint32), (low >> shift).astype(xp.uint32)]
        words += [high.astype(xp.uint32), (high >> shift).astype(xp.uint32)]
        return xp.stack(philox_rounds(words, self.key, xp), axis=-1)


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
        self._buffer = np.empty(0, np.uint32)
        self._at = 0  # the next unused word of _buffer

    def take(self, n: int) -> np.ndarray:
        """The next ``n`` words (uint32)."""
        left = len(self._buffer) - self._at
        if n > left:
            more = -(-(n - left) // 4)
            fresh = self.generator.blocks(max(more, self.AHEAD)).ravel()
            self._buffer = np.concatenate([self._buffer[self._at :], fresh])
            self._at = 0
        out = self._buffer[self._at : self._at + n]
        self._at += n
        return out

    def __call__(self) -> int:
        """The next word, as a Python int."""
        if self._at >= len(self._buffer):
            self.take(1)  # refills the buffer ...
            self._at -= 1  # ... and leaves that word unread
        value = int(self._buffer[self._at])
        self._at += 1
        return value


def fisher_yates(n: int, words: Words) -> np.ndarray:
    """TF's shuffle order of ``n`` items: ``i`` swaps with ``i + word % (n - i)`` for ``i < n - 1``.

    The swaps depend on each other, but not in a way that needs a loop:
    position ``i`` is final after step ``i``, and it receives what step ``m``
    (the last one before ``i`` that swapped into the same place) put there,
    which is what position ``m`` held when its own step came, and so on back
    to an item no step moved.  Those chains are followed for all positions
    at once by pointer doubling (a handful of gathers).

    >>> fisher_yates(1, Words(Philox(5, 5))).tolist()
    [0]
    """
    if n <= 1:
        return np.arange(n, dtype=np.int64)
    steps = np.arange(n, dtype=np.int64)
    span = np.arange(n, 1, -1, dtype=np.uint64)  # n - i for i = 0 .. n-2
    target = steps.copy()  # the last step swaps with itself
    target[:-1] += (words.take(n - 1).astype(np.uint64) % span).astype(np.int64)
    by_target = np.argsort(target, kind="stable")  # steps grouped by target, in order
    t, s = target[by_target], steps[by_target]
    same = t[1:] == t[:-1]
    before = np.full(n, -1, np.int64)  # the last earlier step with the same target
    before[s[1:][same]] = s[:-1][same]
    last = np.full(n, -1, np.int64)  # the last step whose target is this position
    ends = np.append(~same, True)
    last[t[ends]] = s[ends]
    feeder = np.where(target == steps, before, last)  # whose item a position holds at its step
    source = np.where(feeder >= 0, feeder, steps)
    while True:  # pointer doubling: every position to the item no step moved before it
        deeper = source[source]
        if np.array_equal(deeper, source):
            break
        source = deeper
    return np.where(before >= 0, source[np.maximum(before, 0)], target)


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
