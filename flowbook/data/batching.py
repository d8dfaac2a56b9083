"""Transformations that regroup, reorder or bound elements: batch, shuffle, repeat, take...

All work on chunks (``dataset``): ``batch`` reads ``n`` elements through a
``dataset.Reader`` (a slice of one chunk, or a join of several), and hands
the batch on as a chunk of one element.

**shuffle** is TF's buffer shuffle, draw for draw: a ring of
``buffer_size`` elements is filled, then each output is the element at
``start + word % held`` (``start`` the ring's oldest slot, ``held`` how many
it holds), the oldest moves into its place and the next input element into
the oldest's slot; once the input ends the ring drains the same way.  Each
``word`` is the next of TF's Philox words (:mod:`flowbook.kernels.philox`) for this
pass, whose seeds are, as in TF, the op's ``(seed, seed2)`` (TF's
``get_seed`` rules; both 0: fresh from the OS) when not
``reshuffle_each_iteration``, else the next two words of a seed stream
started from them at each iterator start (and for each dataset that a
``flat_map`` / ``interleave`` function returns, a new dataset in TF): so a
seeded shuffle gives TensorFlow's order, every pass.  An unseeded one (no op
or graph seed), whose order TF draws fresh from the OS, draws from numpy's
generator instead (:class:`FreshWords`: faster, and the same per-pass rules).  When the whole input fits in the buffer
that is TF's Fisher-Yates, drawn as one order and applied to the joined
chunk.

``cache`` keeps the first complete pass in memory (also when given a file
name) and replays it.  (``prefetch`` is in ``prefetch``.)

    >>> import flowbook as fb
    >>> [v.tolist() for v in fb.data.Dataset.range(5).batch(2).as_numpy_iterator()]
    [[0, 1], [2, 3], [4]]
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from flowbook.data.dataset import (
    MAKERS,
    Chunk,
    Context,
    Dataset,
    Reader,
    concat,
    int_arg,
    int_value,
    rows,
)
from flowbook.data.structure import Spec, batched, flatten, unbatched
from flowbook.framework import dtypes
from flowbook.framework.errors import InvalidArgumentError
from flowbook.framework.tensor_shape import as_shape, fmt
from flowbook.kernels.philox import Philox, Words, fisher_yates, fresh_seeds
from flowbook.ops.random.random_ops import get_seed


class BatchDataset(Dataset):
    """``Dataset.batch``: ``batch_size`` consecutive elements stacked (the last may be short)."""

    def __init__(self, input: Dataset, batch_size: int, drop_remainder: bool) -> None:
        self.batch_size, tensors = int_arg(batch_size)
        if not tensors and self.batch_size <= 0:
            raise ValueError(f"batch_size must be greater than zero, got {batch_size}")
        self.drop_remainder = bool(drop_remainder)
        n = self.batch_size if self.drop_remainder and not tensors else None
        spec = input._spec.with_shapes([batched(s, n) for s in input._spec.shapes])
        super().__init__(spec, (input,), tensors)

    def _chunks(self, ctx: Context) -> Iterator[Chunk]:
        reader = Reader(self._inputs[0]._chunks(ctx))
        size = int_value(self.batch_size, ctx)
        if size <= 0:
            raise InvalidArgumentError(
                None, None, f"batch_size must be greater than zero, got {size}"
            )
        while True:
            chunk = reader.read(size)
            if chunk is None or (self.drop_remainder and len(chunk[0]) < size):
                return
            yield [a[None] for a in chunk]


class PaddedBatchDataset(Dataset):
    """``Dataset.padded_batch``: elements padded to ``padded_shapes`` (None: the batch's longest)."""

    def __init__(
        self,
        input: Dataset,
        batch_size: int,
        padded_shapes: Any,
        padding_values: Any,
        drop_remainder: bool,
    ) -> None:
        spec = input._spec
        self.batch_size = int(batch_size)
        self.drop_remainder = bool(drop_remainder)
        if padded_shapes is None:
            shapes = [None if s is None else (None,) * len(s) for s in spec.shapes]
        else:
            shapes = [as_shape(s) for s in _leaves(spec.template, padded_shapes)]
        for k, (want, have) in enumerate(zip(shapes, spec.shapes)):
            if want is None or (have is not None and len(have) != len(want)):
                raise ValueError(
                    f"padded_batch: component {k} has shape {fmt(have)}, which padded shape "
                    f"{fmt(want)} does not fit"
                )
        self.padded = shapes
        if padding_values is None:
            self.fill = [b"" if t is dtypes.string else 0 for t in spec.types]
        else:
            self.fill = flatten(padding_values)
        n = self.batch_size if self.drop_remainder else None
        super().__init__(spec.with_shapes([batched(s, n) for s in shapes]), (input,))

    def _chunks(self, ctx: Context) -> Iterator[Chunk]:
        reader = Reader(self._inputs[0]._chunks(ctx))
        while True:
            elements: list[Chunk] = []
            while len(elements) < self.batch_size and reader.available():
                elements.extend(rows(reader.read(1, "padded_batch")))  # type: ignore[arg-type]
            if not elements or (self.drop_remainder and len(elements) < self.batch_size):
                return
            yield [self._pad(c, [e[c][0] for e in elements]) for c in range(len(self.padded))]

    def _pad(self, c: int, parts: list[np.ndarray]) -> np.ndarray:
        want = self.padded[c]
        longest = np.max([p.shape for p in parts], axis=0) if parts[0].ndim else ()
        shape = [int(m) if w is None else w for w, m in zip(want, longest)]
        out = np.full((len(parts), *shape), self.fill[c], dtype=parts[0].dtype)
        for i, p in enumerate(parts):
            if any(h > s for h, s in zip(p.shape, shape)):
                raise InvalidArgumentError(
                    None,
                    None,
                    f"padded_batch: component {c} of an element has shape "
                    f"{list(p.shape)}, larger than the padded shape {shape}",
                )
            out[(i, *(slice(0, h) for h in p.shape))] = p
        return out[None]


def _leaves(template: Any, value: Any) -> list[Any]:
    """The per-component values of ``value`` (a shape-like nest in ``template``'s nesting)."""
    if isinstance(template, dict):
        return [x for k in sorted(template) for x in _leaves(template[k], value[k])]
    if isinstance(template, tuple):
        return [x for t, v in zip(template, value) for x in _leaves(t, v)]
    return [value]


class UnbatchDataset(Dataset):
    """``Dataset.unbatch``: each element split along its first dimension."""

    def __init__(self, input: Dataset) -> None:
        super().__init__(
            input._spec.with_shapes([unbatched(s) for s in input._spec.shapes]), (input,)
        )

    def _chunks(self, ctx: Context) -> Iterator[Chunk]:
        for chunk in self._inputs[0]._chunks(ctx):
            for i in range(len(chunk[0])):
                parts = [a[i] for a in chunk]
                if len({len(p) for p in parts}) > 1:
                    raise InvalidArgumentError(
                        None,
                        None,
                        "unbatch: the components' first dimensions differ: "
                        f"{[len(p) for p in parts]}",
                    )
                if len(parts[0]):
                    yield parts


class ShuffleDataset(Dataset):
    """``Dataset.shuffle``: TF's buffer shuffle (module docstring)."""

    def __init__(
        self, input: Dataset, buffer_size: int, seed: Any, reshuffle_each_iteration: bool
    ) -> None:
        self.buffer_size = int(buffer_size)
        if self.buffer_size <= 0:
            raise ValueError(f"buffer_size must be greater than zero, got {buffer_size}")
        seed1, seed2 = get_seed(seed)
        self.seeds = None if seed1 is None else (int(seed1), int(seed2 or 0))
        self.reshuffle = bool(reshuffle_each_iteration)
        super().__init__(input._spec, (input,))

    def _pass_seeds(self, ctx: Context) -> tuple[int, int]:
        """This pass's Philox seeds: TF's fixed or reshuffling seed generator."""
        state = ctx.own.get(id(self))
        if state is None:  # one per iterator start, and per dataset a function returns
            seeds = self.seeds or fresh_seeds()
            state = ctx.own[id(self)] = Words(Philox(*seeds)) if self.reshuffle else seeds
        return (state(), state()) if self.reshuffle else state

    def _chunks(self, ctx: Context) -> Iterator[Chunk]:
        seeds = self._pass_seeds(ctx)
        words: Words | FreshWords = (
            Words(Philox(*seeds)) if self.seeds is not None else FreshWords(seeds)
        )
        reader = Reader(self._inputs[0]._chunks(ctx))
        size = self.buffer_size
        pieces: list[Chunk] = []
        held = 0
        while held < size and reader.available():
            piece = reader.read(min(reader.available(), size - held))
            assert piece is not None
            pieces.append(piece)
            held += len(piece[0])
        if not reader.available():  # the input fits: TF's Fisher-Yates, as one order
            yield from _permuted(pieces, held, words)
            return
        ring = [r for p in pieces for r in rows(p)]
        start, end = 0, size  # elements start .. end-1 are in the ring, at index % size
        while start < end:
            k = (start + words() % (end - start)) % size
            oldest = start % size
            yield ring[k]
            ring[k] = ring[oldest]
            start += 1
            if reader.available():
                ring[oldest] = reader.read(1)  # type: ignore[assignment]
                end += 1


class FreshWords:
    """The words of an unseeded shuffle: numpy's generator, seeded with the pass's seeds.

    TensorFlow's order of an unseeded shuffle is fresh from the OS each time,
    so no run can reproduce it; drawing it from numpy's generator (as
    unseeded random ops do) costs a fraction of TF's Philox stream and
    Fisher-Yates in numpy calls, and keeps what TF does define: without
    ``reshuffle_each_iteration`` every pass of one iterator takes the same
    order (the same seeds), with it each pass a new one.

    >>> w = FreshWords((1, 2))
    >>> sorted(w.order(4).tolist()), w() < 2**32
    ([0, 1, 2, 3], True)
    """

    __slots__ = ("_left", "rng")

    BLOCK = 1024  # words drawn at once for one-at-a-time use

    def __init__(self, seeds: tuple[int, int]) -> None:
        self.rng = np.random.default_rng(seeds)
        self._left: list[int] = []

    def __call__(self) -> int:
        """The next word (a Python int below 2**32)."""
        if not self._left:
            self._left = self.rng.integers(0, 2**32, self.BLOCK, np.uint64).tolist()[::-1]
        return self._left.pop()

    def order(self, n: int) -> np.ndarray:
        """A random order of ``n`` items."""
        return self.rng.permutation(n)


def _permuted(pieces: list[Chunk], n: int, words: Words | FreshWords) -> Iterator[Chunk]:
    if n == 0:
        return
    order = words.order(n) if isinstance(words, FreshWords) else fisher_yates(n, words)
    try:
        joined = concat(pieces, "shuffle")
    except InvalidArgumentError:  # elements of different shapes: one by one
        elements = [r for p in pieces for r in rows(p)]
        yield from (elements[j] for j in order)
        return
    yield [np.take(a, order, axis=0) for a in joined]  # take: faster than a[order]


class RepeatDataset(Dataset):
    """``Dataset.repeat``: ``count`` passes over the input (None or -1: forever)."""

    def __init__(self, input: Dataset, count: Any) -> None:
        self.count, tensors = int_arg(-1 if count is None else count)
        super().__init__(input._spec, (input,), tensors)

    def _chunks(self, ctx: Context) -> Iterator[Chunk]:
        done, count = 0, int_value(self.count, ctx)
        while count < 0 or done < count:
            empty = True
            for chunk in self._inputs[0]._chunks(ctx):
                empty = False
                yield chunk
            done += 1
            if empty:
                return  # an empty input repeats to nothing, not to a hang


class TakeDataset(Dataset):
    """``Dataset.take``: the first ``count`` elements (-1: all)."""

    def __init__(self, input: Dataset, count: int) -> None:
        self.count, tensors = int_arg(count)
        super().__init__(input._spec, (input,), tensors)

    def _chunks(self, ctx: Context) -> Iterator[Chunk]:
        left = int_value(self.count, ctx)
        if left == 0:
            return
        for chunk in self._inputs[0]._chunks(ctx):
            if 0 <= left <= len(chunk[0]):
                yield [a[:left] for a in chunk]
                return
            left -= len(chunk[0])
            yield chunk


class SkipDataset(Dataset):
    """``Dataset.skip``: all but the first ``count`` elements (-1: none)."""

    def __init__(self, input: Dataset, count: int) -> None:
        self.count, tensors = int_arg(count)
        super().__init__(input._spec, (input,), tensors)

    def _chunks(self, ctx: Context) -> Iterator[Chunk]:
        left = int_value(self.count, ctx)
        for chunk in self._inputs[0]._chunks(ctx):
            if left < 0:
                return
            if left >= len(chunk[0]):
                left -= len(chunk[0])
                continue
            yield [a[left:] for a in chunk] if left else chunk
            left = 0


class CacheDataset(Dataset):
    """``Dataset.cache``: the first complete pass, kept in memory and replayed."""

    def __init__(self, input: Dataset, filename: str) -> None:
        super().__init__(input._spec, (input,))

    def _chunks(self, ctx: Context) -> Iterator[Chunk]:
        kept = ctx.state.get(id(self))
        if kept is not None:
            yield from kept
            return
        seen = []
        for chunk in self._inputs[0]._chunks(ctx):
            seen.append(chunk)
            yield chunk
        ctx.state[id(self)] = seen


class ConcatenateDataset(Dataset):
    """``Dataset.concatenate``: this dataset's elements, then ``other``'s."""

    def __init__(self, input: Dataset, other: Dataset) -> None:
        a, b = input._spec, other._spec
        if a.types != b.types or flatten(a.template) != flatten(b.template):
            raise TypeError(f"Datasets to concatenate differ: {a.output_types} vs {b.output_types}")
        shapes = [x if x == y else _common(x, y) for x, y in zip(a.shapes, b.shapes)]
        super().__init__(Spec(a.template, a.types, shapes), (input, other))

    def _chunks(self, ctx: Context) -> Iterator[Chunk]:
        for d in self._inputs:
            yield from d._chunks(ctx)


def _common(x: Any, y: Any) -> Any:
    if x is None or y is None or len(x) != len(y):
        return None
    return tuple(p if p == q else None for p, q in zip(x, y))


MAKERS.update(batch=BatchDataset, padded_batch=PaddedBatchDataset, unbatch=UnbatchDataset)
MAKERS.update(shuffle=ShuffleDataset, repeat=RepeatDataset, take=TakeDataset, skip=SkipDataset)
MAKERS.update(cache=CacheDataset, concatenate=ConcatenateDataset)
