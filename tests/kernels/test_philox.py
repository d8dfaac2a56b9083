"""The fast paths of ``flowbook.kernels.philox`` give the words and orders of the plain algorithms.

Philox blocks are checked against Philox4x32-10 written out on Python ints
(one block at a time, as the paper states it) across the places where the
vectorised code changes path: word 0 of the counter wrapping (a carry), the
128-bit counter wrapping, and more blocks than one chunk.  Fisher-Yates is
checked against TF's loop of swaps above the size where its grouping sort
stops being a 16-bit radix sort, and ``Words`` against its generator's blocks
when ``take`` and word-by-word draws are mixed.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flowbook.kernels import philox
from flowbook.kernels.philox import Philox, Words, fisher_yates

M32 = (1 << 32) - 1


def reference_block(counter: int, key: tuple[int, int]) -> list[int]:
    """One Philox4x32-10 block of a 128-bit ``counter`` under ``key``, on Python ints."""
    c = [(counter >> (32 * i)) & M32 for i in range(4)]
    k0, k1 = key
    for _ in range(10):
        p0, p1 = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k0, p1 & M32, (p0 >> 32) ^ c[3] ^ k1, p0 & M32]
        k0, k1 = (k0 + 0x9E3779B9) & M32, (k1 + 0xBB67AE85) & M32
    return c


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**64 - 1),
    seed2=st.integers(0, 2**64 - 1),
    low=st.sampled_from([0, 5, M32 - 3, (1 << 64) - 2, 123456789012345]),
    n=st.sampled_from([1, 3, 449, philox._CHUNK + 7]),
)
def test_blocks_are_the_reference(seed: int, seed2: int, low: int, n: int) -> None:
    g = Philox(seed, seed2)
    g.counter = (g.counter & ~((1 << 64) - 1)) | low  # near a carry or the wrap, or not
    start = g.counter
    got = g.blocks(n)
    assert g.counter == (start + n) % (1 << 128)
    picks = sorted({0, 1, n // 2, n - 2, n - 1} & set(range(n)))
    for i in picks:
        assert got[i].tolist() == reference_block((start + i) % (1 << 128), g.key)
    offsets = np.array([[0, n - 1], [7, 2**64 - 1]], np.uint64)
    at = Philox(seed, seed2)
    at.counter = start
    for (r, c), block in np.ndenumerate(offsets):
        want = reference_block((start + int(block)) % (1 << 128), g.key)
        assert at.blocks_at(offsets)[r, c].tolist() == want


def swap_loop(n: int, words: list[int]) -> list[int]:
    order = list(range(n))
    for i in range(n - 1):
        j = i + words[i] % (n - i)
        order[i], order[j] = order[j], order[i]
    return order


@pytest.mark.parametrize("n", [2, 3, 65536, 65537, 70001])
def test_fisher_yates_is_the_swap_loop_at_the_edges(n: int) -> None:
    """Past 65,536 items the grouping sorts 64-bit targets; the order stays the loop's."""
    words = Words(Philox(n, 7)).take(n - 1).tolist()
    assert fisher_yates(n, Words(Philox(n, 7))).tolist() == swap_loop(n, words)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**63 - 1),
    draws=st.lists(st.one_of(st.integers(0, 300), st.just(-1)), min_size=1, max_size=40),
)
def test_words_in_order_however_drawn(seed: int, draws: list[int]) -> None:
    """``take(k)`` and word-by-word calls (-1), mixed, read the blocks' words in order."""
    words, got = Words(Philox(seed, 3)), []
    for k in draws:
        got += [words()] if k < 0 else words.take(k).tolist()
    blocks = Philox(seed, 3).blocks(len(got) // 4 + 1).ravel()
    assert got == blocks[: len(got)].tolist()
    assert all(type(w) is int for w in got)
