"""Reading record files in one pass: text lines and TFRecords, plain or compressed.

The file-reading half shared by ``tf.data.TextLineDataset`` /
``TFRecordDataset`` / ``FixedLengthRecordDataset`` and TF1's readers
(``TextLineReader``, ``TFRecordReader``, ``FixedLengthRecordReader``):
each function opens one file and yields ``(key, record)`` pairs, the key
being what a reader reports beside the record (the line number, or the
record's byte offset).  ``compression_type`` is ``""``/None, ``"GZIP"`` or
``"ZLIB"``, as in TensorFlow, decompressed as it is read
(``flowbook.graph_io.tfrecord.InflatingReader``: a damaged or cut stream is a
``DataLossError``, and no more is inflated than is read).  TFRecords are
parsed by ``flowbook.graph_io.tfrecord.read_record``, the one parser every
reading path shares: a record whose checksum is wrong, which the file cuts
short (anywhere in its framing), or whose length cannot be (more than an
uncompressed file has left, more than the claims budget in a compressed
stream) is a ``DataLossError`` naming the file and the offset, raised before
anything is allocated for it.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "a.txt")
    >>> with open(path, "w") as f:
    ...     _ = f.write("x,1\\ny,2\\n")
    >>> list(text_lines(path))
    [(1, b'x,1'), (2, b'y,2')]
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import IO, Any

from flowbook.framework import errors
from flowbook.graph_io.tfrecord import open_stream, read_record

_HEADER = 12  # uint64 length + uint32 masked crc of it
_FOOTER = 4  # uint32 masked crc of the data
_COMPRESSIONS = ("", "GZIP", "ZLIB")


def open_records(path: Any, compression_type: str | None = None) -> IO[bytes]:
    """``path`` opened for reading bytes, decompressed as ``compression_type`` says."""
    kind = (compression_type or "").upper()
    if kind not in _COMPRESSIONS:
        raise errors.InvalidArgumentError(
            None, None, f"Unsupported compression_type {compression_type!r}: use '', GZIP or ZLIB"
        )
    return open_stream(path, kind)  # NotFoundError naming the path


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
    kind = (compression_type or "").upper()
    with open_records(path, compression_type) as f:
        room = None  # a compressed stream's size is unknown
        if not kind:
            room = f.seek(0, os.SEEK_END)
            f.seek(0)
        offset = 0
        while True:
            data = read_record(f, name, offset, None if room is None else room - offset)
            if data is None:
                return
            yield offset, data
            offset += _HEADER + len(data) + _FOOTER


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


__all__ = ["fixed_length_records", "open_records", "text_lines", "tfrecords"]
