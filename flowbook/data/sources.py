"""Where datasets start: tensors, ranges, Python generators, zips and files.

Each source is a ``Dataset`` whose ``_chunks`` yields big chunks (module
docstring of ``dataset``).  Values given as Python or numpy data become
constants of the default graph, as in TF; tensors (a placeholder fed when
the iterator's initializer runs, file names) are the dataset's captured
tensors, read from the ``Context`` of the run that started the iterator.
Files are read by ``flowbook.graph_io.record_files``, which TF1's readers share.

    >>> import numpy as np
    >>> ds = TensorSliceDataset((np.arange(3), np.array([b"a", b"b", b"c"])))
    >>> [(int(a), b) for a, b in ds.as_numpy_iterator()]
    [(0, b'a'), (1, b'b'), (2, b'c')]
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from flowbook.data.dataset import MAKERS, Chunk, Context, Dataset, Reader
from flowbook.data.structure import Spec, flatten, is_nested, pack, unbatched
from flowbook.framework import dtypes
from flowbook.framework.errors import InvalidArgumentError, OpError
from flowbook.framework.tensor import Tensor
from flowbook.framework.tensor_shape import as_shape, compatible
from flowbook.graph_io.record_files import fixed_length_records, text_lines, tfrecords
from flowbook.ops.array.constant_op import convert_to_tensor
from flowbook.platform.gfile import glob

CHUNK = 4096  # the most elements a source puts in one chunk


def _tensors(structure: Any) -> tuple[Any, list[Tensor]]:
    """(template, flat tensors) of a nested structure of values; lists are values."""
    flat = [c if isinstance(c, Tensor) else convert_to_tensor(c) for c in flatten(structure)]
    template = pack(structure, [0] * len(flat)) if is_nested(structure) else 0
    return template, flat


def host_array(value: Any, dtype: dtypes.DType) -> np.ndarray:
    """``value`` as a numpy array of ``dtype`` (strings as an object array of bytes)."""
    if dtype is dtypes.string:
        a = np.asarray(value, dtype=object)
        return np.vectorize(_as_bytes, otypes=[object])(a) if a.size else a
    return np.asarray(value, dtype=dtype.np)


def _as_bytes(v: Any) -> bytes:
    return v.encode("utf-8") if isinstance(v, str) else bytes(v)


class TensorSliceDataset(Dataset):
    """``Dataset.from_tensor_slices``: the slices of tensors along their first dimension."""

    def __init__(self, tensors: Any) -> None:
        template, flat = _tensors(tensors)
        shapes = [unbatched(t._shape) for t in flat]
        super().__init__(Spec(template, [t.dtype for t in flat], shapes), (), tuple(flat))

    def _chunks(self, ctx: Context) -> Iterator[Chunk]:
        values = [ctx.values[t] for t in self._tensors]
        kept = ctx.state.get(id(self))  # (values, arrays) of this iterator start's last pass
        if kept is None or any(a is not b for a, b in zip(kept[0], values)):
            kept = ctx.state[id(self)] = (
                values,
                [host_array(v, t.dtype) for v, t in zip(values, self._tensors)],
            )
        arrays = kept[1]  # converted once per iterator start (and values), not once per pass
        n = len(arrays[0])
        for k, a in enumerate(arrays):
            if a.ndim == 0 or len(a) != n:
                raise InvalidArgumentError(
                    None,
                    None,
                    f"from_tensor_slices: component {k} has shape {list(a.shape)}, the first "
                    f"has {n} slices; all components need the same first dimension",
                )
        for start in range(0, n, CHUNK):
            yield [a[start : start + CHUNK] for a in arrays]


class TensorDataset(Dataset):
    """``Dataset.from_tensors``: one element, the tensors themselves."""

    def __init__(self, tensors: Any) -> None:
        template, flat = _tensors(tensors)
        spec = Spec(template, [t.dtype for t in flat], [t._shape for t in flat])
        super().__init__(spec, (), tuple(flat))

    def _chunks(self, ctx: Context) -> Iterator[Chunk]:
        yield [host_array(ctx.values[t], t.dtype)[None] for t in self._tensors]


class RangeDataset(Dataset):
    """``Dataset.range([start,] stop[, step])``: int64 numbers, as Python's ``range``."""

    def __init__(self, *args: int, output_type: Any = None) -> None:
        self.range = range(*(int(a) for a in args))
        dtype = dtypes.as_dtype(output_type) if output_type is not None else dtypes.int64
        super().__init__(Spec(0, [dtype], [()]))

    def _chunks(self, ctx: Context) -> Iterator[Chunk]:
        r, dtype = self.range, self._spec.types[0].np
        for first in range(0, len(r), CHUNK):
            part = r[first : first + CHUNK]
            yield [np.arange(part.start, part.stop, part.step, dtype=dtype)]


class GeneratorDataset(Dataset):
    """``Dataset.from_generator``: the elements a Python generator yields, checked and converted."""

    def __init__(
        self, generator: Callable[..., Any], output_types: Any, output_shapes: Any, args: Any
    ) -> None:
        types = [dtypes.as_dtype(t) for t in flatten(output_types)]
        if output_shapes is None:
            shapes: list[Any] = [None] * len(types)
        else:
            shapes = [as_shape(s.shape) for s in flatten(_shapes_like(output_types, output_shapes))]
        template = pack(output_types, [0] * len(types)) if is_nested(output_types) else 0
        self.generator = generator
        self.args = tuple(args or ())
        super().__init__(Spec(template, types, shapes))

    def _chunks(self, ctx: Context) -> Iterator[Chunk]:
        spec = self._spec
        for value in self.generator(*self.args):
            parts = flatten(
                tuple(value) if isinstance(value, list) and spec.template != 0 else value
            )
            if len(parts) != len(spec.types):
                raise InvalidArgumentError(
                    None,
                    None,
                    f"from_generator: yielded {value!r}, which does not match the "
                    f"structure of output_types {spec.output_types!r}",
                )
            chunk = []
            for k, (v, t, s) in enumerate(zip(parts, spec.types, spec.shapes)):
                try:
                    a = host_array(v, t)
                except (TypeError, ValueError) as e:
                    raise InvalidArgumentError(
                        None, None, f"from_generator: component {k} ({v!r}) is not {t.name}: {e}"
                    ) from None
                if not compatible(a.shape, s):
                    raise InvalidArgumentError(
                        None,
                        None,
                        f"from_generator: `generator` yielded an element of shape "
                        f"{list(a.shape)} where an element of shape {list(s or ())} was expected",
                    )
                chunk.append(a[None])
            yield chunk


def _shapes_like(types: Any, shapes: Any) -> Any:
    """``shapes`` with each shape kept whole (a tuple/list of ints is one shape, not a nest)."""
    if isinstance(types, dict):
        return {k: _shapes_like(types[k], shapes[k]) for k in types}
    if isinstance(types, tuple):
        return tuple(_shapes_like(t, s) for t, s in zip(types, shapes))
    return _Leaf(shapes)


class _Leaf:
    """One shape held as a leaf of a nest (flatten must not open it)."""

    def __init__(self, shape: Any) -> None:
        self.shape = shape


class ZipDataset(Dataset):
    """``Dataset.zip``: a tuple (or dict) of datasets read side by side, to the shortest."""

    def __init__(self, datasets: Any) -> None:
        parts = flatten(datasets)
        for d in parts:
            if not isinstance(d, Dataset):
                raise TypeError(f"Dataset.zip takes a nest of datasets, got {type(d).__name__}")
        self.parts = parts
        template = pack(datasets, [d._spec.template for d in parts])
        types = [t for d in parts for t in d._spec.types]
        shapes = [s for d in parts for s in d._spec.shapes]
        super().__init__(Spec(template, types, shapes), tuple(parts))

    def _chunks(self, ctx: Context) -> Iterator[Chunk]:
        readers = [Reader(d._chunks(ctx)) for d in self.parts]
        while True:
            k = min(r.available() for r in readers)
            if k == 0:
                return
            yield [a for r in readers for a in r.read(k)]


class TextLineDataset(Dataset):
    """``tf.data.TextLineDataset``: the lines of text files (bytes, newline dropped)."""

    def __init__(
        self,
        filenames: Any,
        compression_type: str | None = None,
        buffer_size: Any = None,
        num_parallel_reads: Any = None,
    ) -> None:
        names = convert_to_tensor(filenames, dtype=dtypes.string)
        self.compression_type = compression_type
        super().__init__(Spec(0, [dtypes.string], [()]), (), (names,))

    def _records(self, path: Any) -> Iterator[bytes]:
        return (line for _, line in text_lines(path, self.compression_type))

    def _chunks(self, ctx: Context) -> Iterator[Chunk]:
        names = host_array(ctx.values[self._tensors[0]], dtypes.string).reshape(-1)
        for name in names:
            batch: list[bytes] = []
            try:
                for record in self._records(name.decode()):
                    batch.append(record)
                    if len(batch) == CHUNK:
                        yield [_objects(batch)]
                        batch = []
            except OpError:  # a damaged record: the good ones before it come out first
                if batch:
                    yield [_objects(batch)]
                raise
            if batch:
                yield [_objects(batch)]


class TFRecordDataset(TextLineDataset):
    """``tf.data.TFRecordDataset``: the records of TFRecord files (bytes)."""

    def _records(self, path: Any) -> Iterator[bytes]:
        return (record for _, record in tfrecords(path, self.compression_type))


class FixedLengthRecordDataset(TextLineDataset):
    """``tf.data.FixedLengthRecordDataset``: fixed-size records of binary files (bytes)."""

    def __init__(
        self,
        filenames: Any,
        record_bytes: int,
        header_bytes: int | None = None,
        footer_bytes: int | None = None,
        buffer_size: Any = None,
        compression_type: str | None = None,
        num_parallel_reads: Any = None,
    ) -> None:
        super().__init__(filenames, compression_type)
        self.sizes = (int(record_bytes), int(header_bytes or 0), int(footer_bytes or 0))

    def _records(self, path: Any) -> Iterator[bytes]:
        found = fixed_length_records(path, *self.sizes, self.compression_type)
        return (record for _, record in found)


def list_files(file_pattern: Any, shuffle: bool | None = None, seed: int | None = None) -> Dataset:
    """The file names matching ``file_pattern`` (a pattern or list), shuffled unless told not to.

    The patterns are matched when the dataset is built (TF matches them when
    the iterator starts); no match is an ``InvalidArgumentError``.
    """
    patterns = [file_pattern] if isinstance(file_pattern, str | bytes) else list(file_pattern)
    names = sorted({n for p in patterns for n in glob(p.decode() if isinstance(p, bytes) else p)})
    if not names:
        raise InvalidArgumentError(
            None, None, f"Expected 'file_pattern' argument to match at least one file: {patterns}"
        )
    ds = TensorSliceDataset(np.array(names, dtype=object))
    return ds.shuffle(len(names), seed) if shuffle is None or shuffle else ds


def _objects(items: list[bytes]) -> np.ndarray:
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out


MAKERS.update(
    from_tensor_slices=TensorSliceDataset,
    from_tensors=TensorDataset,
    range=RangeDataset,
    from_generator=GeneratorDataset,
    zip=ZipDataset,
    list_files=list_files,
)
