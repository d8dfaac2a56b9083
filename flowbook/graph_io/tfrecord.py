"""TFRecord files: ``tf.io.TFRecordWriter``, ``tf.io.tf_record_iterator``, ``TFRecordOptions``.

A TFRecord file is a sequence of records, each framed as

    uint64 length (little-endian) | uint32 masked CRC-32C of the length bytes
    data[length]                  | uint32 masked CRC-32C of the data

optionally compressed whole as one GZIP or ZLIB stream
(``TFRecordOptions(compression_type="GZIP")``, TF1's
``TFRecordCompressionType.GZIP``); TensorFlow reads the compressed files
flowbook writes, and the other way round.

**Reading never trusts the file.**  :func:`read_record` is the one parser of
the framing, shared by ``tf_record_iterator`` and, through
``flowbook.graph_io.record_files``, by ``tf.data.TFRecordDataset`` and
``TFRecordReader``:

- a file that ends inside a record -- in its length, the length's CRC, the
  data or the data's CRC -- is a ``DataLossError`` "<path>: truncated record
  at offset N" (TensorFlow's "truncated record at N"; TensorFlow itself
  treats a cut *header* as the end of the file, flowbook reports it too);
- a wrong CRC is a ``DataLossError`` "<path>: corrupted record at offset N";
- a length is checked before anything is allocated for it: in an
  uncompressed file it must fit in the bytes the file has left, in a
  compressed stream (whose size is unknown) it must stay within the claims
  budget of ``flowbook.framework.limits`` (512 MiB by default).  A length of
  2**62 is a ``DataLossError``, never a ``MemoryError`` (TensorFlow crashes);
- a damaged compressed stream (:class:`InflatingReader`) is a
  ``DataLossError`` naming the file and how far into the records it got,
  never a raw ``zlib.error`` or ``EOFError``; a stream that stops before its
  end is "truncated" like a record.

Offsets are byte offsets in the record stream (the decompressed stream for
compressed files), as TensorFlow counts them.

TensorBoard's event files are TFRecord files.  TensorBoard reads them through
``tf.compat.v1.io.tf_record_iterator`` when the module it found as
``tensorflow`` has no ``pywrap_tensorflow``, which is the case while
``flowbook.tf1``'s alias is active; so this iterator keeps TensorBoard's
contract: it is an object, not a generator; a ``next`` at the clean end of an
uncompressed file raises ``StopIteration``, and one at a record still being
written raises ``DataLossError`` -- both *without* moving on, so a later
``next`` returns the record once it is whole (TensorBoard catches both and
polls again).  The CRC-32C comes from ``google-crc32c`` (hardware CRC
instructions where the CPU has them), masked as TFRecord files mask it.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "data.tfrecord")
    >>> with TFRecordWriter(path) as w:
    ...     w.write(b"first"); w.write(b"second")
    >>> list(tf_record_iterator(path))
    [b'first', b'second']
    >>> gz = path + ".gz"
    >>> with TFRecordWriter(gz, TFRecordOptions("GZIP")) as w:
    ...     w.write(b"packed")
    >>> list(tf_record_iterator(gz, TFRecordOptions(TFRecordCompressionType.GZIP)))
    [b'packed']
"""

from __future__ import annotations

import io
import struct
import zlib
from typing import IO, Any

import google_crc32c

from flowbook.framework import errors
from flowbook.framework.limits import max_claim_bytes
from flowbook.platform.gfile import GFile

_HEADER = 12  # uint64 length + uint32 crc of it
_FOOTER = 4  # uint32 crc of the data
_CHUNK = 1 << 20  # the most bytes asked of a stream at once


def masked_crc32c(data: bytes) -> int:
    """TFRecord's masked CRC-32C of ``data``: the CRC rotated right by 15 bits, plus a constant.

    >>> hex(masked_crc32c(b"abc"))
    '0x21f1576e'
    """
    crc = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


_masked_crc32c = masked_crc32c


# ---------------------------------------------------------------- options
class TFRecordCompressionType:
    """TF1's ``tf.python_io.TFRecordCompressionType``: NONE, ZLIB, GZIP."""

    NONE = 0
    ZLIB = 1
    GZIP = 2


class TFRecordOptions:
    """How a TFRecord file is compressed (TF's ``tf.io.TFRecordOptions``).

    ``compression_type`` is ``""``/None, ``"ZLIB"``, ``"GZIP"`` or a
    :class:`TFRecordCompressionType`; ``compression_level``, ``window_bits``,
    ``mem_level`` and ``compression_strategy`` tune zlib when writing; the
    buffer sizes and ``flush_mode`` are accepted and ignored.

    >>> TFRecordOptions.get_compression_type_string(TFRecordOptions("GZIP"))
    'GZIP'
    >>> TFRecordOptions("BZ2")
    Traceback (most recent call last):
    ...
    ValueError: Not a valid compression_type: "BZ2"
    """

    compression_type_map = {
        TFRecordCompressionType.ZLIB: "ZLIB",
        TFRecordCompressionType.GZIP: "GZIP",
        TFRecordCompressionType.NONE: "",
    }

    def __init__(
        self,
        compression_type: Any = None,
        flush_mode: Any = None,
        input_buffer_size: Any = None,
        output_buffer_size: Any = None,
        window_bits: int | None = None,
        compression_level: int | None = None,
        compression_method: Any = None,
        mem_level: int | None = None,
        compression_strategy: int | None = None,
    ) -> None:
        self.get_compression_type_string(compression_type)  # ValueError for a bad one
        self.compression_type = compression_type
        self.flush_mode = flush_mode
        self.input_buffer_size = input_buffer_size
        self.output_buffer_size = output_buffer_size
        self.window_bits = window_bits
        self.compression_level = compression_level
        self.compression_method = compression_method
        self.mem_level = mem_level
        self.compression_strategy = compression_strategy

    @classmethod
    def get_compression_type_string(cls, options: Any) -> str:
        """``""``, ``"ZLIB"`` or ``"GZIP"`` for options, a compression type or a string."""
        if options is None:
            return ""
        if isinstance(options, TFRecordOptions):
            return cls.get_compression_type_string(options.compression_type)
        if isinstance(options, int) and options in cls.compression_type_map:
            return cls.compression_type_map[options]
        if isinstance(options, str) and options.upper() in ("", "ZLIB", "GZIP"):
            return options.upper()
        raise ValueError(f'Not a valid compression_type: "{options}"')

    def __repr__(self) -> str:
        return f"TFRecordOptions(compression_type={self.compression_type!r})"


def compression_kind(options: Any) -> str:
    """``""``, ``"ZLIB"`` or ``"GZIP"`` for what a reader or writer was given.

    >>> compression_kind(None), compression_kind("gzip"), compression_kind(1)
    ('', 'GZIP', 'ZLIB')
    """
    if isinstance(options, bytes):
        options = options.decode()
    compression = getattr(options, "compression_type", options)
    return TFRecordOptions.get_compression_type_string(compression)


# ---------------------------------------------------------------- writing
class TFRecordWriter:
    """Writes records to a TFRecord file (TF's ``tf.io.TFRecordWriter``), compressed if asked."""

    def __init__(self, path: Any, options: Any = None) -> None:
        kind = compression_kind(options)
        self._deflate: Any = None
        if kind:
            opts = options if isinstance(options, TFRecordOptions) else TFRecordOptions(kind)
            bits = opts.window_bits or zlib.MAX_WBITS
            bits = bits % 16 or zlib.MAX_WBITS  # 8..15; GZIP adds 16 below
            level = -1 if opts.compression_level is None else opts.compression_level
            self._deflate = zlib.compressobj(
                level,
                zlib.DEFLATED,
                bits + 16 if kind == "GZIP" else bits,
                opts.mem_level or zlib.DEF_MEM_LEVEL,
                opts.compression_strategy or zlib.Z_DEFAULT_STRATEGY,
            )
        self._file = GFile(path, "wb")  # TensorFlow's errors when the path is bad

    def _put(self, data: bytes) -> None:
        self._file.write(self._deflate.compress(data) if self._deflate is not None else data)

    def write(self, record: bytes | str) -> None:
        """Append one record."""
        data = record.encode("utf-8") if isinstance(record, str) else bytes(record)
        header = struct.pack("<Q", len(data))
        self._put(header + struct.pack("<I", _masked_crc32c(header)))
        self._put(data + struct.pack("<I", _masked_crc32c(data)))

    def flush(self) -> None:
        """Write out what is buffered; a compressed stream is sync-flushed (readable so far)."""
        if self._deflate is not None:
            self._file.write(self._deflate.flush(zlib.Z_SYNC_FLUSH))
        self._file.flush()

    def close(self) -> None:
        """Finish the compressed stream, if any, and close the file; idempotent."""
        if self._deflate is not None:
            self._file.write(self._deflate.flush())
            self._deflate = None
        self._file.close()

    def __enter__(self) -> TFRecordWriter:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


# ---------------------------------------------------------------- reading
def _loss(path: str, offset: int, what: str, kind: str = "corrupted") -> errors.DataLossError:
    return errors.DataLossError(None, None, f"{path}: {kind} record at offset {offset}: {what}")


class InflatingReader(io.RawIOBase):
    """The decompressed bytes of a GZIP or ZLIB stream; damage is a ``DataLossError``.

    Output is produced only as it is asked for (``decompressobj`` with a
    ``max_length``), so a small stream that inflates to gigabytes costs no
    more memory than the reads made of it.  Concatenated streams (several
    GZIP members) are read one after another.  An empty file holds no
    records.
    """

    def __init__(self, raw: IO[bytes], kind: str, path: str) -> None:
        super().__init__()
        self._raw, self._kind, self._path = raw, kind, path
        self._bits = zlib.MAX_WBITS + 16 if kind == "GZIP" else zlib.MAX_WBITS
        self._z = zlib.decompressobj(self._bits)
        self._in = b""  # compressed bytes read but not yet given to self._z
        self._begun = False  # whether any compressed byte was seen
        self.position = 0  # decompressed bytes handed out

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        out = self._inflate(len(buffer))
        buffer[: len(out)] = out
        return len(out)

    def _inflate(self, n: int) -> bytes:
        while n > 0:
            if self._z.eof:  # a stream ended: the file ends too, or another one begins
                self._in = self._z.unused_data or self._raw.read(_CHUNK)
                if not self._in:
                    return b""
                self._z = zlib.decompressobj(self._bits)
            elif not self._in:
                self._in = self._raw.read(_CHUNK)
                if not self._in:
                    if not self._begun:
                        return b""  # an empty file
                    raise self._damage("truncated", "the file ends before the stream does")
            self._begun = True
            try:
                out = self._z.decompress(self._in, n)
            except zlib.error as e:
                raise self._damage("corrupted", str(e)) from None
            self._in = self._z.unconsumed_tail
            if out:
                self.position += len(out)
                return out
        return b""

    def _damage(self, how: str, what: str) -> errors.DataLossError:
        where = f"{self._path}: {how} {self._kind} stream at offset {self.position}"
        return errors.DataLossError(None, None, f"{where}: {what}")

    def close(self) -> None:
        if not self.closed:
            self._raw.close()
        super().close()


def open_stream(path: Any, options: Any = None) -> IO[bytes]:
    """``path`` opened for reading the record stream, decompressed as ``options`` says."""
    kind = compression_kind(options)
    raw: IO[bytes] = GFile(path, "rb")._f()  # NotFoundError naming the path, at once
    if not kind:
        return raw
    return io.BufferedReader(InflatingReader(raw, kind, str(path)), _CHUNK)


def _read_up_to(f: IO[bytes], n: int) -> bytes:
    """Up to ``n`` bytes of ``f`` (fewer only at its end), asked for at most a chunk at a time."""
    parts, left = [], n
    while left > 0:
        part = f.read(min(left, _CHUNK))
        if not part:
            break
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def read_record(f: IO[bytes], path: str, offset: int, room: int | None) -> bytes | None:
    """The record at ``offset``, where ``f`` stands; None at a clean end of the stream.

    ``room`` is how many bytes the stream has from ``offset`` on (None when
    unknown, for a compressed stream).  Every kind of damage is a
    ``DataLossError`` naming ``path`` and ``offset`` (see the module docstring).
    """
    header = _read_up_to(f, _HEADER)
    if not header:
        return None
    if len(header) < _HEADER:
        where = "length" if len(header) < 8 else "length's checksum"
        raise _loss(path, offset, f"the file ends inside its {where}", "truncated")
    (length,) = struct.unpack("<Q", header[:8])
    if struct.unpack("<I", header[8:])[0] != _masked_crc32c(header[:8]):
        raise _loss(path, offset, "the length's checksum does not match")
    if room is not None and _HEADER + length + _FOOTER > room:
        what = f"its length says {length} bytes, the file has {room - _HEADER - _FOOTER} left"
        raise _loss(path, offset, what, "truncated")
    if room is None and length > max_claim_bytes():
        raise _loss(
            path,
            offset,
            f"its length says {length} bytes, over the {max_claim_bytes()} a compressed "
            "record may have (FLOWBOOK_MAX_CLAIM_BYTES)",
        )
    body = _read_up_to(f, length + _FOOTER)
    if len(body) < length + _FOOTER:
        where = "data" if len(body) < length else "data's checksum"
        raise _loss(path, offset, f"the file ends inside its {where}", "truncated")
    data = body[:length]
    if struct.unpack("<I", body[length:])[0] != _masked_crc32c(data):
        raise _loss(path, offset, "the data's checksum does not match")
    return data


def _size(f: IO[bytes]) -> int:
    here = f.tell()
    end = f.seek(0, io.SEEK_END)
    f.seek(here)
    return end


class tf_record_iterator:  # TensorFlow's name; it is called like a function
    """The records of a TFRecord file, one ``bytes`` per ``next``; resumable at its end."""

    def __init__(self, path: Any, options: Any = None) -> None:
        self.path = str(path)
        self._compressed = bool(compression_kind(options))
        self._file = open_stream(path, options)  # opened now: NotFoundError at once
        self._offset = 0  # where the next record starts

    def __iter__(self) -> tf_record_iterator:
        return self

    def __next__(self) -> bytes:
        if self._compressed:  # one pass: a stream cannot seek back
            room = None
        else:  # seek: a record still being written is read again once whole
            self._file.seek(self._offset)
            room = _size(self._file) - self._offset
        data = read_record(self._file, self.path, self._offset, room)
        if data is None:
            raise StopIteration  # the end (of what is written so far)
        self._offset += _HEADER + len(data) + _FOOTER
        return data

    def close(self) -> None:
        self._file.close()


__all__ = [
    "InflatingReader",
    "TFRecordCompressionType",
    "TFRecordOptions",
    "TFRecordWriter",
    "compression_kind",
    "masked_crc32c",
    "open_stream",
    "read_record",
    "tf_record_iterator",
]
