"""Reading record files in one pass: text lines and TFRecords, plain or compressed.

The file-reading half shared by ``tf.data.TextLineDataset`` /
``TFRecordDataset`` / ``FixedLengthRecordDataset`` and TF1's readers
(``TextLineReader``, ``TFRecordReader``, ``FixedLengthRecordReader``):
each function opens one file and yields ``(key, record)`` pairs, the key
being what a reader reports beside the record (the line number, or the
record's byte offset).  ``compression_type`` is ``""``/None, ``"GZIP"`` or
``"ZLIB"``, as in TensorFlow.  A TFRecord whose checksum is wrong, or which
the file cuts short, is a ``DataLossError`` naming the file and the offset
(``flowbook.graph_io.tfrecord.tf_record_iterator``, which TensorBoard uses to follow
files still being written, stops quietly at a short record instead).

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "a.txt")
    >>> with open(path, "w") as f:
    ...     _ = f.write("x,1\\ny,2\\n")
    >>> list(text_lines(path))
    [(1, b'x,1'), (2, b'y,2')]
"""

from __future__ import annotations

import gzip
import io
import struct
import zlib
from collections.abc import Iterator
from typing import IO, Any

from flowbook.framework import errors
from flowbook.graph_io.tfrecord import masked_crc32c
from flowbook.platform.gfile import GFile

_HEADER = 12  # uint64 length + uint32 masked crc of it
_COMPRESSIONS = ("", "GZIP", "ZLIB")


def open_records(path: Any, compression_type: str | None = None) -> IO[bytes]:
    """``path`` opened for reading bytes, decompressed as ``compression_type`` says."""
    kind = (compression_type or "").upper()
    if kind not in _COMPRESSIONS:
        raise errors.InvalidArgumentError(
            None, None, f"Unsupported compression_type {compression_type!r}: use '', GZIP or ZLIB"
        )
    raw: IO[bytes] = GFile(path, "rb")._f()  # NotFoundError naming the path
    if kind == "GZIP":
        return gzip.GzipFile(fileobj=raw)  # type: ignore[return-value]
    if kind == "ZLIB":
        return io.BytesIO(zlib.decompress(raw.read()))
    return raw


def text_lines(
    path: Any, compression_type: str | None = None, skip_header_lines: int = 0
) -> Iterator[tuple[int, bytes]]:
    """``(line number, line)`` for each line of a text file, its ``\\n`` or ``\\r\\n`` dropped."""
    with open_records(path, compression_type) as f:
        for number, line in enumerate(f, 1):
            if number <= skip_header_lines:
                continue
            yield number, line.rstrip(b"\n").removesuffix(b"\r")


def tfrecords(path: Any, compression_type: str | None = None) -> Iterator[tuple[int, bytes]]:
    """``(offset, record)`` for each record of a TFRecord file; DataLossError when damaged."""
    name = str(path)
    with open_records(path, compression_type) as f:
        offset = 0
        while True:
            header = f.read(_HEADER)
            if not header:
                return
            if len(header) < _HEADER:
                raise _loss(name, offset, "truncated record header")
            (length,) = struct.unpack("<Q", header[:8])
            if struct.unpack("<I", header[8:])[0] != masked_crc32c(header[:8]):
                raise _loss(name, offset, "the length's checksum does not match")
            body = f.read(length + 4)
            if len(body) < length + 4:
                raise _loss(name, offset, f"truncated record (length {length})")
            data = body[:length]
            if struct.unpack("<I", body[length:])[0] != masked_crc32c(data):
                raise _loss(name, offset, "the data's checksum does not match")
            yield offset, data
            offset += _HEADER + length + 4


def fixed_length_records(
    path: Any,
    record_bytes: int,
    header_bytes: int = 0,
    footer_bytes: int = 0,
    compression_type: str | None = None,
) -> Iterator[tuple[int, bytes]]:
    """``(offset, record)`` for each ``record_bytes``-long record between header and footer.

    A body whose length is not a whole number of records is a ``DataLossError``.
    """
    with open_records(path, compression_type) as f:
        data = f.read()
    body = data[header_bytes : len(data) - footer_bytes if footer_bytes else len(data)]
    if record_bytes <= 0 or len(body) % record_bytes:
        raise errors.DataLossError(
            None,
            None,
            f"{path}: {len(body)} bytes between header and footer are not a whole "
            f"number of {record_bytes}-byte records",
        )
    for start in range(0, len(body), record_bytes):
        yield header_bytes + start, body[start : start + record_bytes]


def _loss(path: str, offset: int, what: str) -> errors.DataLossError:
    return errors.DataLossError(None, None, f"{path}: corrupted record at offset {offset}: {what}")


__all__ = ["fixed_length_records", "open_records", "text_lines", "tfrecords"]
