"""TFRecord files: ``tf.io.TFRecordWriter`` and ``tf.io.tf_record_iterator`` (uncompressed).

A TFRecord file is a sequence of records, each framed as

    uint64 length (little-endian) | uint32 masked CRC-32C of the length bytes
    data[length]                  | uint32 masked CRC-32C of the data

TensorBoard's event files are TFRecord files.  TensorBoard reads them through
``tf.compat.v1.io.tf_record_iterator`` when the module it found as
``tensorflow`` has no ``pywrap_tensorflow``, which is the case while
``flowbook.tf1``'s alias is active; so this reader keeps TensorBoard's
contract: the iterator is an object, not a generator, and a ``next`` at the
end of the file (or before a record still being written) raises
``StopIteration`` *without* moving on, so a later ``next`` returns records
appended since.  A record whose checksum is wrong raises ``errors.DataLossError``
naming the file and the offset.  The CRC-32C comes from ``google-crc32c``
(hardware CRC instructions where the CPU has them), masked as TFRecord files
mask it.  ``flowbook.graph_io.record_files`` reads records in one pass for the
datasets and readers, sharing :func:`masked_crc32c`.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "data.tfrecord")
    >>> with TFRecordWriter(path) as w:
    ...     w.write(b"first"); w.write(b"second")
    >>> list(tf_record_iterator(path))
    [b'first', b'second']
"""

from __future__ import annotations

import struct
from typing import IO, Any

import google_crc32c

from flowbook.framework import errors
from flowbook.platform.gfile import GFile

_HEADER = 12  # uint64 length + uint32 crc of it


def masked_crc32c(data: bytes) -> int:
    """TFRecord's masked CRC-32C of ``data``: the CRC rotated right by 15 bits, plus a constant.

    >>> hex(masked_crc32c(b"abc"))
    '0x21f1576e'
    """
    crc = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


_masked_crc32c = masked_crc32c


def _check_options(options: Any) -> None:
    compression = getattr(options, "compression_type", options)
    if compression not in (None, "", 0):
        raise errors.UnimplementedError(
            None, None, f"flowbook reads and writes uncompressed TFRecords only, got {options!r}"
        )


class TFRecordWriter:
    """Writes records to a TFRecord file (TF's ``tf.io.TFRecordWriter``)."""

    def __init__(self, path: Any, options: Any = None) -> None:
        _check_options(options)
        self._file = GFile(path, "wb")  # TensorFlow's errors when the path is bad

    def write(self, record: bytes | str) -> None:
        """Append one record."""
        data = record.encode("utf-8") if isinstance(record, str) else bytes(record)
        header = struct.pack("<Q", len(data))
        self._file.write(header + struct.pack("<I", _masked_crc32c(header)))
        self._file.write(data + struct.pack("<I", _masked_crc32c(data)))

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> TFRecordWriter:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class tf_record_iterator:  # TensorFlow's name; it is called like a function
    """The records of a TFRecord file, one ``bytes`` per ``next``; resumable at its end."""

    def __init__(self, path: Any, options: Any = None) -> None:
        _check_options(options)
        self.path = str(path)
        self._file: IO[bytes] = GFile(path, "rb")._f()  # opened now: NotFoundError at once
        self._offset = 0  # where the next record starts

    def __iter__(self) -> tf_record_iterator:
        return self

    def __next__(self) -> bytes:
        self._file.seek(self._offset)
        header = self._file.read(_HEADER)
        if len(header) < _HEADER:
            raise StopIteration  # the end, or a record still being written: try again later
        (length,) = struct.unpack("<Q", header[:8])
        if struct.unpack("<I", header[8:])[0] != _masked_crc32c(header[:8]):
            raise self._corrupt("the length's checksum does not match")
        body = self._file.read(length + 4)
        if len(body) < length + 4:
            raise StopIteration
        data = body[:length]
        if struct.unpack("<I", body[length:])[0] != _masked_crc32c(data):
            raise self._corrupt("the data's checksum does not match")
        self._offset += _HEADER + length + 4
        return data

    def _corrupt(self, what: str) -> errors.OpError:
        return errors.DataLossError(
            None, None, f"{self.path}: corrupted record at offset {self._offset}: {what}"
        )

    def close(self) -> None:
        self._file.close()


__all__ = ["TFRecordWriter", "masked_crc32c", "tf_record_iterator"]
