"""``tf.data.Dataset``: the base class, its methods, and how elements move.

A Dataset is a Python description of a pipeline, built in a cell: a source
(``sources``) and transformations (``transforms``) over it, each knowing its
element ``Spec`` (nesting, dtypes, static shapes).  Nothing runs until an
iterator op runs in a Session (``flowbook.ops.io.iterator_ops``), which calls
``elements(values)``: ``values`` are those of the graph tensors the pipeline
reads (``captured()``: the tensors given to ``from_tensor_slices`` and
friends, computed or fed in that run), and the result is a Python iterator
over the elements, each a tuple of numpy arrays.

**Chunks.**  Inside, a dataset yields *chunks*: lists of component arrays
that share a leading dimension of ``k >= 1`` elements.  A source yields big
chunks, ``map`` runs its traced function once per chunk where that is the
same as running it per element (``function``), ``batch`` reads them through
a ``Reader`` (a slice of one chunk, or a join of several), and only the
iterator splits them into elements.  An
element whose shape differs from its neighbours' travels alone (``k = 1``).

**Iteration state.**  ``_chunks(ctx)`` is one pass over the dataset; ``ctx``
(a ``Context``) carries the captured values and the state of one iterator
start (shuffle generators, caches), keyed by dataset, so ``repeat`` can make
a new pass that reshuffles while a re-initialised iterator starts again.

Transformations register their classes in ``MAKERS`` (a plain dict) under
their method names; the methods here look them up, so this module does not
import the modules that subclass it.

    >>> import flowbook as fb
    >>> ds = fb.data.Dataset.range(10).filter(lambda x: x % 3 > 0).batch(4)
    >>> ds.output_shapes, list(ds.as_numpy_iterator())[0].tolist()
    (TensorShape([Dimension(None)]), [1, 2, 4, 5])
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from flowbook.data.structure import Spec, pack
from flowbook.framework.errors import InvalidArgumentError
from flowbook.framework.tensor import Tensor
from flowbook.ops.array.constant_op import constant_value

Chunk = list  # component arrays sharing a leading dimension (the chunk's element count)
MAKERS: dict[str, Callable[..., Any]] = {}  # method name -> the transformation's class


class Context:
    """One iterator start: the captured tensors' values and the per-dataset state."""

    __slots__ = ("own", "state", "values")

    def __init__(self, values: dict[Tensor, Any]) -> None:
        self.values = values  # captured tensor -> its value in the run that started the iterator
        self.state: dict[int, Any] = {}  # id(dataset) -> what it keeps across its passes
        self.own: dict[int, Any] = {}  # the same, never shared with a function's inner datasets


class Dataset:
    """A pipeline of elements (TF's ``tf.data.Dataset``); see the module docstring."""

    def __init__(self, spec: Spec, inputs: tuple[Dataset, ...] = (), tensors: tuple = ()) -> None:
        self._spec = spec  # the element's nesting, dtypes and static shapes
        self._inputs = inputs  # the datasets this one reads
        self._tensors: tuple[Tensor, ...] = tensors  # graph tensors this one reads itself

    # ------------------------------------------------------------ what it holds
    @property
    def output_types(self) -> Any:
        return self._spec.output_types

    @property
    def output_shapes(self) -> Any:
        return self._spec.output_shapes

    @property
    def output_classes(self) -> Any:
        return pack(self._spec.template, [Tensor] * len(self._spec.types))

    @property
    def element_spec(self) -> Any:
        return self._spec.element_spec

    def captured(self) -> list[Tensor]:
        """The graph tensors the pipeline reads, each once, in a fixed order."""
        seen: dict[Tensor, None] = {}
        for d in self._inputs:
            seen.update(dict.fromkeys(d.captured()))
        seen.update(dict.fromkeys(self._tensors))
        return list(seen)

    # ------------------------------------------------------------ reading it
    def elements(self, values: list[Any]) -> Iterator[tuple]:
        """The elements, each a tuple of numpy arrays, with ``values`` for ``captured()``."""
        return split(self._chunks(Context(dict(zip(self.captured(), values)))))

    def _chunks(self, ctx: Context) -> Iterator[Chunk]:
        """One pass over the dataset, as chunks (module docstring)."""
        raise NotImplementedError

    def as_numpy_iterator(self, values: list[Any] | None = None) -> Iterator[Any]:
        """The elements as numpy values in the element's nesting (no session; constants only).

        >>> import flowbook as fb
        >>> [int(x) for x in fb.data.Dataset.range(3).as_numpy_iterator()]
        [0, 1, 2]
        """
        if values is None:
            values = [_static(t) for t in self.captured()]
        for element in self.elements(values):
            yield pack(self._spec.template, [_host(a) for a in element])

    # -------------------------------------------------------- transformations
    def map(self, map_func: Callable[..., Any], num_parallel_calls: Any = None) -> Dataset:
        """``map_func`` of each element (a tuple element is passed as arguments).

        >>> [int(v) for v in Dataset.range(3).map(lambda x: x * 10).as_numpy_iterator()]
        [0, 10, 20]
        """
        return MAKERS["map"](self, map_func, num_parallel_calls)

    def filter(self, predicate: Callable[..., Any]) -> Dataset:
        """The elements for which ``predicate`` (a scalar bool tensor) is True.

        >>> [int(v) for v in Dataset.range(5).filter(lambda x: x > 2).as_numpy_iterator()]
        [3, 4]
        """
        return MAKERS["filter"](self, predicate)

    def flat_map(self, map_func: Callable[..., Any]) -> Dataset:
        """The elements of the dataset ``map_func`` returns for each element, in turn."""
        return MAKERS["flat_map"](self, map_func)

    def interleave(
        self,
        map_func: Callable[..., Any],
        cycle_length: int | None = None,
        block_length: int = 1,
        num_parallel_calls: Any = None,
    ) -> Dataset:
        """Elements of ``map_func``'s datasets, ``cycle_length`` at once, ``block_length`` each."""
        return MAKERS["interleave"](self, map_func, cycle_length, block_length)

    def batch(self, batch_size: int, drop_remainder: bool = False) -> Dataset:
        """Consecutive elements stacked ``batch_size`` at a time (the last may be short).

        >>> [b.tolist() for b in Dataset.range(3).batch(2).as_numpy_iterator()]
        [[0, 1], [2]]
        """
        return MAKERS["batch"](self, batch_size, drop_remainder)

    def padded_batch(
        self,
        batch_size: int,
        padded_shapes: Any = None,
        padding_values: Any = None,
        drop_remainder: bool = False,
    ) -> Dataset:
        """``batch`` with each component padded to ``padded_shapes`` (None: the longest)."""
        return MAKERS["padded_batch"](
            self, batch_size, padded_shapes, padding_values, drop_remainder
        )

    def unbatch(self) -> Dataset:
        """Each element split along its first dimension."""
        return MAKERS["unbatch"](self)

    def shuffle(
        self, buffer_size: int, seed: int | None = None, reshuffle_each_iteration: bool = True
    ) -> Dataset:
        """TF's buffer shuffle (``batching``'s docstring), seeded by TF's seed rules."""
        return MAKERS["shuffle"](self, buffer_size, seed, reshuffle_each_iteration)

    def repeat(self, count: int | None = None) -> Dataset:
        """``count`` passes over the dataset (None or -1: forever).

        >>> [int(v) for v in Dataset.range(2).repeat(2).as_numpy_iterator()]
        [0, 1, 0, 1]
        """
        return MAKERS["repeat"](self, count)

    def take(self, count: int) -> Dataset:
        """The first ``count`` elements (-1: all)."""
        return MAKERS["take"](self, count)

    def skip(self, count: int) -> Dataset:
        """All but the first ``count`` elements (-1: none)."""
        return MAKERS["skip"](self, count)

    def prefetch(self, buffer_size: int) -> Dataset:
        """The same elements (flowbook computes an element in the run that asks for it)."""
        return MAKERS["prefetch"](self, buffer_size)

    def cache(self, filename: str = "") -> Dataset:
        """The first complete pass, kept in memory and replayed by later passes."""
        return MAKERS["cache"](self, filename)

    def concatenate(self, dataset: Dataset) -> Dataset:
        """This dataset's elements, then those of ``dataset``."""
        return MAKERS["concatenate"](self, dataset)

    def enumerate(self, start: int = 0) -> Dataset:
        """``(index, element)`` pairs, counting from ``start``."""
        return Dataset.zip((Dataset.range(start, np.iinfo(np.int64).max), self))

    def apply(self, transformation_func: Callable[[Dataset], Dataset]) -> Dataset:
        """``transformation_func(self)``."""
        return transformation_func(self)

    # ----------------------------------------------------------- sources
    @staticmethod
    def from_tensor_slices(tensors: Any) -> Dataset:
        """The slices of ``tensors`` (a nest of tensors or values) along their first dimension."""
        return MAKERS["from_tensor_slices"](tensors)

    @staticmethod
    def from_tensors(tensors: Any) -> Dataset:
        """One element: ``tensors`` themselves."""
        return MAKERS["from_tensors"](tensors)

    @staticmethod
    def range(*args: int, output_type: Any = None) -> Dataset:
        """int64 numbers as Python's ``range(start, stop, step)``."""
        return MAKERS["range"](*args, output_type=output_type)

    @staticmethod
    def from_generator(
        generator: Callable[[], Any], output_types: Any, output_shapes: Any = None, args: Any = None
    ) -> Dataset:
        """The elements ``generator(*args)`` yields, converted to ``output_types``."""
        return MAKERS["from_generator"](generator, output_types, output_shapes, args)

    @staticmethod
    def list_files(
        file_pattern: Any, shuffle: bool | None = None, seed: int | None = None
    ) -> Dataset:
        """The names of the files matching ``file_pattern``, shuffled unless ``shuffle=False``."""
        return MAKERS["list_files"](file_pattern, shuffle, seed)

    @staticmethod
    def zip(datasets: Any) -> Dataset:
        """A tuple (or dict) of datasets read side by side, up to the shortest."""
        return MAKERS["zip"](datasets)

    # ----------------------------------------------------------- iterators
    def make_one_shot_iterator(self) -> Any:
        """An iterator that starts itself on its first ``get_next`` run."""
        return MAKERS["one_shot"](self)

    def make_initializable_iterator(self, shared_name: str | None = None) -> Any:
        """An iterator whose ``initializer`` op (re)starts it; the dataset may read placeholders."""
        return MAKERS["initializable"](self, shared_name)

    def __iter__(self) -> Any:
        raise TypeError(
            "a tf.data.Dataset is not iterable in graph mode: use "
            "dataset.make_one_shot_iterator().get_next() and run it in a Session"
        )


def int_arg(value: Any) -> tuple[Any, tuple[Tensor, ...]]:
    """A count given as a Python int (kept) or a tensor (captured): (value, captured tensors)."""
    if isinstance(value, Tensor):
        return value, (value,)
    return int(value), ()


def int_value(value: Any, ctx: Context) -> int:
    """An ``int_arg``'s value in this iterator start."""
    return int(ctx.values[value]) if isinstance(value, Tensor) else value


def _static(t: Tensor) -> Any:
    value = constant_value(t)
    if value is None:
        raise ValueError(
            f"as_numpy_iterator: {t.name} is not a constant; use an iterator in a Session"
        )
    return value


def _host(a: np.ndarray) -> Any:
    """As a Session fetches it: a scalar string as ``bytes``."""
    return a.item() if a.ndim == 0 and a.dtype == object else a


def split(chunks: Iterator[Chunk]) -> Iterator[tuple]:
    """The elements of ``chunks``, one tuple of arrays (views) per element."""
    for chunk in chunks:
        for i in range(len(chunk[0])):
            yield tuple(a[i, ...] for a in chunk)


def rows(chunk: Chunk) -> Iterator[Chunk]:
    """The elements of one chunk, each a chunk of one (views)."""
    for i in range(len(chunk[0])):
        yield [a[i : i + 1] for a in chunk]


def concat(pieces: list[Chunk], what: str) -> Chunk:
    """One chunk of ``pieces`` (same component shapes), or an error naming the mismatch."""
    if len(pieces) == 1:
        return pieces[0]
    out = []
    for c in range(len(pieces[0])):
        parts = [p[c] for p in pieces]
        first = parts[0].shape[1:]
        for p in parts:
            if p.shape[1:] != first:
                raise InvalidArgumentError(
                    None,
                    None,
                    f"{what}: Cannot batch tensors with different shapes in component {c}. "
                    f"First element had shape {list(first)} and another had shape "
                    f"{list(p.shape[1:])}.",
                )
        out.append(np.concatenate(parts))
    return out


class Reader:
    """Reads a chunk stream ``n`` elements at a time, slicing and joining chunks."""

    def __init__(self, chunks: Iterator[Chunk]) -> None:
        self._chunks = chunks  # where chunks come from
        self._head: Chunk | None = None  # the current chunk, from _at on
        self._at = 0  # elements of _head already read

    def available(self) -> int:
        """Elements left in the current chunk (loading the next one); 0 at the end."""
        while self._head is None or self._at >= len(self._head[0]):
            self._head = next(self._chunks, None)
            self._at = 0
            if self._head is None:
                return 0
        return len(self._head[0]) - self._at

    def read(self, n: int, what: str = "batch") -> Chunk | None:
        """Up to ``n`` elements as one chunk; None at the end."""
        head, at = self._head, self._at
        if head is not None and len(head[0]) - at >= n:  # the common case: a slice of one chunk
            self._at = at + n
            return [a[at : at + n] for a in head]
        pieces: list[Chunk] = []
        while n > 0:
            have = self.available()
            if have == 0:
                break
            take = min(have, n)
            head, at = self._head, self._at
            assert head is not None
            pieces.append(
                head if at == 0 and take == len(head[0]) else [a[at : at + take] for a in head]
            )
            self._at += take
            n -= take
        return concat(pieces, what) if pieces else None
