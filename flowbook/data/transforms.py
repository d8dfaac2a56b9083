"""The transformations that run a traced function: ``map``, ``filter``, ``flat_map``, ``interleave``.

Each traces its function once, when the cell builds it (``function``), and
makes a ``Runner`` per iterator start, kept in the ``Context``'s state so a
``repeat`` does not rebuild it.  ``map`` and ``filter`` run the function on a
whole chunk where that is provably the same as per element (the runner says
``vectorized``), else element by element; either way on flowbook's executor.
With ``num_parallel_calls`` > 1 (or ``AUTOTUNE``) a map run element by
element runs up to twice that many elements at once on a bounded pool of
its own, and hands them on in order (TF's ``deterministic``): worth it when
the function releases the GIL (large numpy kernels, a ``py_func`` that reads
or decodes files).  Inside a pool thread (a map within a ``flat_map`` of a
parallel map) elements run in turn, so the pool never waits on itself.
``flat_map``/``interleave`` functions return a dataset built from the
element; the traced function computes that dataset's captured tensors, and
each input element starts a pass of it with those values.

    >>> import flowbook as fb
    >>> ds = fb.data.Dataset.range(3).flat_map(lambda x: fb.data.Dataset.from_tensors(x).repeat(2))
    >>> [int(v) for v in ds.as_numpy_iterator()]
    [0, 0, 1, 1, 2, 2]
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import Any

import numpy as np

from flowbook.data.dataset import MAKERS, Chunk, Context, Dataset, rows, split
from flowbook.data.function import Function, Runner
from flowbook.framework import dtypes
from flowbook.runtime.pool import CountingPool

_pool: CountingPool | None = None  # shared by parallel maps, made on first use
_pool_lock = threading.Lock()
_local = threading.local()  # .in_pool: this thread is one of the pool's


def _map_pool() -> CountingPool:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = CountingPool(os.cpu_count() or 2, thread_name_prefix="flowbook-data")
    return _pool


def _call_in_pool(runner: Runner, values: list[Any]) -> list[Any]:
    _local.in_pool = True
    return runner.call(values)


def _in_order(runner: Runner, elements: Iterator[tuple], width: int) -> Iterator[list[Any]]:
    """``runner.call`` of each element, up to ``2 * width`` at once on the pool, in order."""
    pool = _map_pool()
    window: deque[Future] = deque()
    for element in elements:
        window.append(pool.submit(_call_in_pool, runner, list(element)))
        if len(window) >= 2 * width:
            yield window.popleft().result()
    while window:
        yield window.popleft().result()


def _width(num_parallel_calls: Any) -> int:
    """How many elements a map runs at once (1: in turn on the calling thread)."""
    if num_parallel_calls is None:
        return 1
    n = int(num_parallel_calls)
    return os.cpu_count() or 2 if n < 0 else max(1, n)


def _runner(ctx: Context, owner: Dataset, compiled: Any) -> Runner:
    runner = ctx.state.get(id(owner))
    if runner is None:
        runner = ctx.state[id(owner)] = compiled.runner()
    return runner


class MapDataset(Dataset):
    """``Dataset.map``: the function's result for each element."""

    def __init__(self, input: Dataset, fn: Callable[..., Any], num_parallel_calls: Any) -> None:
        self.function = Function(fn, input._spec, "map")
        spec = self.function.as_element()
        self.compiled = self.function.compile()
        self.width = _width(num_parallel_calls)  # elements run at once, element by element
        super().__init__(spec, (input,))

    def _chunks(self, ctx: Context) -> Iterator[Chunk]:
        runner = _runner(ctx, self, self.compiled)
        chunks = self._inputs[0]._chunks(ctx)
        if runner.vectorized:
            for chunk in chunks:
                yield [np.asarray(v) for v in runner.call(chunk)]
        elif self.width > 1 and not getattr(_local, "in_pool", False):
            for outputs in _in_order(runner, split(chunks), self.width):
                yield [np.asarray(v)[None] for v in outputs]
        else:
            for element in split(chunks):
                yield [np.asarray(v)[None] for v in runner.call(list(element))]


class FilterDataset(Dataset):
    """``Dataset.filter``: the elements for which the predicate gives True."""

    def __init__(self, input: Dataset, predicate: Callable[..., Any]) -> None:
        self.function = Function(predicate, input._spec, "filter")
        out = self.function.as_element()
        if out.types != [dtypes.bool] or out.shapes[0] not in ((), None):
            raise ValueError(
                f"filter: the predicate must return a scalar bool tensor, got {out.types} "
                f"of shapes {out.shapes}"
            )
        self.compiled = self.function.compile()
        super().__init__(input._spec, (input,))

    def _chunks(self, ctx: Context) -> Iterator[Chunk]:
        runner = _runner(ctx, self, self.compiled)
        for chunk in self._inputs[0]._chunks(ctx):
            if runner.vectorized:
                keep = np.asarray(runner.call(chunk)[0], dtype=bool)
                if keep.all():
                    yield chunk
                elif keep.any():
                    yield [a[keep] for a in chunk]
                continue
            for row, element in zip(rows(chunk), split([chunk])):
                if bool(runner.call(list(element))[0]):
                    yield row


class _DatasetFunction:
    """A function of an element returning a dataset: traced once, run per element."""

    def __init__(self, input: Dataset, fn: Callable[..., Any], name: str) -> None:
        self.function = Function(fn, input._spec, name)
        inner = self.function.result
        if not isinstance(inner, Dataset):
            raise TypeError(f"{name}: the function must return a Dataset, got {inner!r}")
        self.inner = inner  # the dataset it returns, built on the function's placeholders
        self.compiled = self.function.compile(inner.captured())

    def passes(self, ctx: Context, owner: Dataset) -> Iterator[Iterator[tuple]]:
        """One element iterator per input element: a pass of the returned dataset."""
        runner = _runner(ctx, owner, self.compiled)
        captured = self.inner.captured()
        for element in split(owner._inputs[0]._chunks(ctx)):
            values = runner.call(list(element)) if captured else []
            sub = Context(dict(zip(captured, values)))
            sub.state = ctx.state
            yield split(self.inner._chunks(sub))


class FlatMapDataset(Dataset):
    """``Dataset.flat_map``: the elements of the dataset the function returns, in turn."""

    def __init__(self, input: Dataset, fn: Callable[..., Any]) -> None:
        self.fn = _DatasetFunction(input, fn, "flat_map")
        super().__init__(self.fn.inner._spec, (input,))

    def _chunks(self, ctx: Context) -> Iterator[Chunk]:
        for elements in self.fn.passes(ctx, self):
            for element in elements:
                yield [a[None] for a in element]


class InterleaveDataset(Dataset):
    """``Dataset.interleave``: ``cycle_length`` returned datasets read ``block_length`` at a time.

    As TF: slots are visited in turn; a slot gives up to ``block_length``
    elements; an exhausted slot is refilled from the next input element on
    the next visit; the end comes when the input and every slot are done.
    """

    def __init__(
        self, input: Dataset, fn: Callable[..., Any], cycle_length: Any, block_length: int
    ) -> None:
        self.fn = _DatasetFunction(input, fn, "interleave")
        cycle = None if cycle_length is None or cycle_length < 0 else int(cycle_length)
        self.cycle_length = cycle or os.cpu_count() or 1  # AUTOTUNE: the CPU count, as TF
        self.block_length = int(block_length)
        super().__init__(self.fn.inner._spec, (input,))

    def _chunks(self, ctx: Context) -> Iterator[Chunk]:
        sources = self.fn.passes(ctx, self)
        slots: list[Iterator[tuple] | None] = [None] * self.cycle_length
        more = True  # whether input elements remain
        i = 0
        while more or any(s is not None for s in slots):
            if slots[i] is None and more:
                slots[i] = next(sources, None)
                more = slots[i] is not None
            slot = slots[i]
            if slot is not None:
                for _ in range(self.block_length):
                    element = next(slot, None)
                    if element is None:
                        slots[i] = None
                        break
                    yield [a[None] for a in element]
            i = (i + 1) % self.cycle_length


MAKERS.update(map=MapDataset, filter=FilterDataset, flat_map=FlatMapDataset)
MAKERS.update(interleave=InterleaveDataset)
