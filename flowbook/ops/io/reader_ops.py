"""TF1's readers: ``tf.TextLineReader``, ``WholeFileReader``, ``FixedLengthRecordReader``,
``TFRecordReader``, ``IdentityReader`` and ``tf.ReaderBase``, over a queue of file names.

A reader op (``TextLineReaderV2``...) outputs the reader's state, kept per
session in a container as a queue is (``resource="container"``,
``flowbook.state.resources``).  The state (:class:`ReaderState`) holds the records
left in the files taken so far, read in one pass by ``flowbook.graph_io.record_files``
(so a damaged TFRecord is a ``DataLossError`` naming the file and the offset).

``ReaderReadV2(reader, queue)`` returns the next ``(key, value)``;
``ReaderReadUpToV2(reader, queue, n)`` up to ``n`` of them.  When the files
taken are used up, the reader dequeues the next file name: asynchronously
(``flowbook.state.pending``), so a reader waiting for a file name holds no thread,
and once the queue is closed and drained the read is an ``OutOfRangeError``.
Keys are TensorFlow's: ``file:line`` (text), ``file:offset`` (TFRecords),
``file:record number`` (fixed length), the file name (whole files), the work
string itself (identity).  ``ReaderNumRecordsProducedV2``,
``ReaderNumWorkUnitsCompletedV2`` and ``ReaderResetV2`` report and reset.

    >>> import os, tempfile
    >>> import flowbook as tf
    >>> path = os.path.join(tempfile.mkdtemp(), "a.csv")
    >>> with open(path, "w") as f:
    ...     _ = f.write("1,2\\n3,4\\n")
    >>> with tf.Graph().as_default(), tf.Session() as s:
    ...     q = tf.FIFOQueue(1, tf.string); s.run(q.enqueue(path)); s.run(q.close())
    ...     key, value = tf.TextLineReader().read(q)
    ...     print(s.run(value), s.run(value))
    b'1,2' b'3,4'
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from flowbook.framework import dtypes
from flowbook.framework.errors import OutOfRangeError
from flowbook.framework.graph import get_default_graph
from flowbook.framework.registry import NOT_DIFFERENTIABLE, OpDef, Out, op
from flowbook.framework.tensor import Operation, Tensor
from flowbook.graph_io import record_files
from flowbook.ops._builder import make, make1, tensor
from flowbook.platform.gfile import GFile
from flowbook.state.pending import Pending, settle
from flowbook.state.queue_state import QueueState
from flowbook.state.resources import ResourceCell

__all__ = [
    "FixedLengthRecordReader",
    "IdentityReader",
    "ReaderBase",
    "TFRecordReader",
    "TextLineReader",
    "WholeFileReader",
]

_STATE = {"stateful": True, "host_only": True, "grad": NOT_DIFFERENTIABLE}
Records = Callable[[str], Iterator[tuple[Any, bytes]]]  # file name -> (key part, record)


class ReaderState:
    """One reader in one session: the records left, and its counters."""

    def __init__(self, records: Records, key: Callable[[str, Any], bytes]) -> None:
        self.records = records  # opens one work unit (a file name)
        self.key = key  # (work, key part) -> the key
        self.files: deque[tuple[str, Iterator]] = deque()  # work units taken, not used up
        self.produced = 0  # records returned
        self.completed = 0  # work units used up
        self.lock = threading.RLock()  # guards the fields above

    def take(self, n: int, out: list) -> None:
        """Move up to ``n - len(out)`` records into ``out`` from the work units taken."""
        with self.lock:
            while len(out) < n and self.files:
                work, it = self.files[0]
                for part, record in it:
                    out.append((self.key(work, part), record))
                    self.produced += 1
                    if len(out) == n:
                        break
                else:
                    self.files.popleft()
                    self.completed += 1

    def read(self, queue: QueueState, n: int, up_to: bool) -> Pending:
        """``n`` records (fewer with ``up_to`` once the queue is drained), dequeuing work."""
        done = Pending(f"a file name from queue '{queue.name}'")
        out: list = []

        def step() -> None:
            try:
                self.take(n, out)
            except Exception as e:
                done.fail(e)
                return
            if len(out) == n:
                done.resolve(out)
                return
            wait = queue.dequeue(-1, False, None)
            done.on_cancel = lambda: wait.cancel() or True
            wait.then(arrived)

        def arrived(taken: Any, error: BaseException | None) -> None:
            done.woke_ns = time.perf_counter_ns()  # for the profile: reading is the kernel's
            if error is not None:
                if isinstance(error, OutOfRangeError) and out and up_to:
                    done.resolve(out)
                else:
                    done.fail(error)
                return
            work = _text(taken[0][0])
            with self.lock:
                self.files.append((work, iter(self.records(work))))
            step()

        step()
        return done


def _text(v: Any) -> str:
    if isinstance(v, np.ndarray):  # a 0-d string array: its one element
        v = v.item()
    return v.decode() if isinstance(v, bytes) else str(v)


def _whole(work: str) -> Iterator[tuple[Any, bytes]]:
    with GFile(work, "rb") as f:
        yield None, f.read()


def _reader_kernel(make_fns: Any) -> Any:
    def kernel(xp: Any, *, cell: ResourceCell, **attrs: Any) -> ReaderState:
        return cell.get(lambda: ReaderState(*make_fns(attrs)))

    return kernel


def reader(name: str, attrs: tuple[str, ...], make_fns: Any) -> OpDef:
    """Declare a reader op: ``make_fns(attrs)`` gives its records and key functions."""
    infer = lambda **a: Out(dtypes.string, ())
    kernel = _reader_kernel(make_fns)
    all_attrs = (*attrs, "container", "shared_name")
    return op(name, (), all_attrs, infer, kernel, resource="container", **_STATE)


reader(
    "TextLineReaderV2",
    ("skip_header_lines",),
    lambda a: (
        lambda w: record_files.text_lines(w, None, a["skip_header_lines"]),
        lambda w, p: f"{w}:{p}".encode(),
    ),
)
reader("WholeFileReaderV2", (), lambda a: (_whole, lambda w, p: w.encode()))
reader(
    "IdentityReaderV2",
    (),
    lambda a: (lambda w: iter([(None, w.encode())]), lambda w, p: w.encode()),
)
reader(
    "TFRecordReaderV2",
    ("compression_type",),
    lambda a: (
        lambda w: record_files.tfrecords(w, a["compression_type"]),
        lambda w, p: f"{w}:{p}".encode(),
    ),
)
reader(
    "FixedLengthRecordReaderV2",
    ("header_bytes", "record_bytes", "footer_bytes", "hop_bytes"),
    lambda a: (
        lambda w: (
            ((off - a["header_bytes"]) // a["record_bytes"], r)
            for off, r in record_files.fixed_length_records(
                w, a["record_bytes"], a["header_bytes"], a["footer_bytes"]
            )
        ),
        lambda w, p: f"{w}:{p}".encode(),
    ),
)


def _as_arrays(records: list, single: bool) -> Any:
    keys = np.array([k for k, _ in records], dtype=object)
    values = np.array([v for _, v in records] or [], dtype=object)
    if single:
        return keys[0, ...], values[0, ...]  # 0-d arrays
    return keys, values


def _read(xp: Any, reader: ReaderState, queue: QueueState) -> Any:
    p = reader.read(queue, 1, False)
    return settle(_mapped(p, lambda out: _as_arrays(out, True)))


def _read_up_to(xp: Any, reader: ReaderState, queue: QueueState, n: Any) -> Any:
    p = reader.read(queue, int(n), True)
    return settle(_mapped(p, lambda out: _as_arrays(out, False)))


def _mapped(p: Pending, fn: Callable[[Any], Any]) -> Pending:
    """A Pending settling to ``fn(p's result)``; cancelling it cancels ``p``."""
    q = Pending(p.what)
    q.on_cancel = lambda: p.cancel() or True

    def done(result: Any, error: BaseException | None) -> None:
        q.woke_ns = p.woke_ns  # the profile's wait ends where p's did
        if error is None:
            try:
                result = fn(result)
            except Exception as e:
                error = e
        q.fail(error) if error is not None else q.resolve(result)

    p.then(done)
    return q


op(
    "ReaderReadV2",
    ("reader_handle", "queue_handle"),
    (),
    lambda r, q: [Out(dtypes.string, ()), Out(dtypes.string, ())],
    _read,
    blocking=True,
    **_STATE,
)
op(
    "ReaderReadUpToV2",
    ("reader_handle", "queue_handle", "num_records"),
    (),
    lambda r, q, n: [Out(dtypes.string, (None,)), Out(dtypes.string, (None,))],
    _read_up_to,
    blocking=True,
    **_STATE,
)


def _reset(xp: Any, reader: ReaderState) -> tuple:
    with reader.lock:
        reader.files.clear()
        reader.produced = reader.completed = 0
    return ()


op(
    "ReaderNumRecordsProducedV2",
    ("reader_handle",),
    (),
    lambda r: Out(dtypes.int64, ()),
    lambda xp, r: np.int64(r.produced),
    **_STATE,
)
op(
    "ReaderNumWorkUnitsCompletedV2",
    ("reader_handle",),
    (),
    lambda r: Out(dtypes.int64, ()),
    lambda xp, r: np.int64(r.completed),
    **_STATE,
)
op("ReaderResetV2", ("reader_handle",), (), lambda r: [], _reset, **_STATE)


# ----------------------------------------------------------- Python classes
class ReaderBase:
    """What every reader shares: its handle and the ops reading through it (``tf.ReaderBase``)."""

    def __init__(self, reader_ref: Tensor, supports_serialize: bool = False) -> None:
        self._reader_ref = reader_ref
        self._supports_serialize = supports_serialize

    @property
    def reader_ref(self) -> Tensor:
        return self._reader_ref

    @property
    def supports_serialize(self) -> bool:
        return self._supports_serialize

    def _queue_ref(self, queue: Any) -> Tensor:
        return getattr(queue, "queue_ref", queue)

    def read(self, queue: Any, name: str | None = None) -> tuple[Tensor, Tensor]:
        """The next record: ``(key, value)`` string tensors."""
        op = make("ReaderReadV2", (self._reader_ref, self._queue_ref(queue)), name=name)
        return op.outputs[0], op.outputs[1]

    def read_up_to(
        self, queue: Any, num_records: Any, name: str | None = None
    ) -> tuple[Tensor, Tensor]:
        """Up to ``num_records`` records: ``(keys, values)``, vectors."""
        n = tensor(num_records, dtype=dtypes.int64)
        op = make("ReaderReadUpToV2", (self._reader_ref, self._queue_ref(queue), n), name=name)
        return op.outputs[0], op.outputs[1]

    def num_records_produced(self, name: str | None = None) -> Tensor:
        return make1("ReaderNumRecordsProducedV2", (self._reader_ref,), name=name)

    def num_work_units_completed(self, name: str | None = None) -> Tensor:
        return make1("ReaderNumWorkUnitsCompletedV2", (self._reader_ref,), name=name)

    def reset(self, name: str | None = None) -> Operation:
        return make("ReaderResetV2", (self._reader_ref,), name=name)


def _reader(op_type: str, name: str | None, default: str, **attrs: Any) -> Tensor:
    from_graph = {"container": getattr(get_default_graph(), "_container", ""), "shared_name": ""}
    return make1(op_type, (), {**attrs, **from_graph}, name=name or default)


class TextLineReader(ReaderBase):
    """Reads the lines of text files (the newline dropped); key ``file:line``."""

    def __init__(self, skip_header_lines: int | None = None, name: str | None = None) -> None:
        super().__init__(
            _reader(
                "TextLineReaderV2",
                name,
                "TextLineReaderV2",
                skip_header_lines=int(skip_header_lines or 0),
            )
        )


class WholeFileReader(ReaderBase):
    """Reads each file whole; key: the file name."""

    def __init__(self, name: str | None = None) -> None:
        super().__init__(_reader("WholeFileReaderV2", name, "WholeFileReaderV2"))


class IdentityReader(ReaderBase):
    """Returns each work string as both key and value."""

    def __init__(self, name: str | None = None) -> None:
        super().__init__(_reader("IdentityReaderV2", name, "IdentityReaderV2"))


class TFRecordReader(ReaderBase):
    """Reads the records of TFRecord files (CRC-checked); key ``file:offset``."""

    def __init__(self, name: str | None = None, options: Any = None) -> None:
        kind = getattr(options, "compression_type", options) or ""
        kind = {0: "", 1: "ZLIB", 2: "GZIP"}.get(kind, kind) if isinstance(kind, int) else kind
        super().__init__(
            _reader("TFRecordReaderV2", name, "TFRecordReaderV2", compression_type=str(kind))
        )


class FixedLengthRecordReader(ReaderBase):
    """Reads records of ``record_bytes`` bytes between a header and a footer."""

    def __init__(
        self,
        record_bytes: int,
        header_bytes: int | None = None,
        footer_bytes: int | None = None,
        hop_bytes: int | None = None,
        name: str | None = None,
        encoding: str | None = None,
    ) -> None:
        super().__init__(
            _reader(
                "FixedLengthRecordReaderV2",
                name,
                "FixedLengthRecordReaderV2",
                header_bytes=int(header_bytes or 0),
                record_bytes=int(record_bytes),
                footer_bytes=int(footer_bytes or 0),
                hop_bytes=int(hop_bytes or 0),
            )
        )
