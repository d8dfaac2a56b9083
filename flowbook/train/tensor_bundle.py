"""TensorFlow's checkpoint format V2 ("tensor bundle"): written and read, hostile files included.

A V2 checkpoint ``<prefix>`` is two files:

``<prefix>.data-00000-of-00001``
    Every tensor's bytes back to back, in sorted key order, no padding.  A
    numeric or bool tensor is its elements little-endian in C order.  A string
    tensor is the varint64 length of each element, then a 4-byte
    little-endian masked CRC-32C of those lengths (each taken as a uint32
    little-endian, as a uint64 when it does not fit), then the element bytes.

``<prefix>.index``
    A LevelDB-format table (SSTable) mapping keys, in byte order, to protos.
    The empty key maps to a ``BundleHeaderProto`` (number of data shards,
    endianness, format version); each tensor name maps to a
    ``BundleEntryProto`` (dtype, shape, shard, offset and size in the data
    file, masked CRC-32C of the bytes there).  The table is:

    - data blocks, each a run of entries ``varint32 shared | varint32
      unshared | varint32 value length | key suffix | value`` whose keys share
      a prefix with the entry before, except at a *restart point* (every 16th
      entry) where the whole key is written; the block ends with the uint32
      offsets of its restart points and their uint32 count;
    - an empty metaindex block;
    - an index block whose entry per data block is a key at least its last
      key (and below the next block's first) mapped to the block's handle,
      ``varint64 offset | varint64 size``;
    - the 48-byte footer: the metaindex and index handles, zero padded to 40
      bytes, then the magic number ``0xdb4775248b80fb57`` little-endian.

    Every block is followed by a 5-byte trailer: its compression type (0,
    none, is all TensorFlow writes) and the masked CRC-32C of block + type.

The masked CRC-32C, as TFRecord's, is the CRC rotated right by 15 bits plus
``0xa282ead8``.  The two messages are not in tensorboard's compat protos; they
are built here at import time with TensorFlow's field numbers, on top of
tensorboard's ``TensorShapeProto``, ``DataType`` and ``VersionDef``.

Reading assumes the files may be damaged or hostile, as
``checkpoint_reader`` does for ``.npz``: the whole index is read (it is
small) and every varint, handle, block, restart point, key order, proto,
dtype and shape is checked, each problem a ``DataLossError`` naming the file
and, where known, the entry.  A tensor's bytes are read only once its size
is checked against dtype x shape and against the data file's size, so
nothing is allocated that the file cannot back.

    >>> import os, tempfile
    >>> import numpy as np
    >>> prefix = os.path.join(tempfile.mkdtemp(), "model.ckpt")
    >>> write_bundle(prefix, {"w": np.arange(3, dtype=np.float32), "step": np.int64(7)})
    >>> r = read_bundle(prefix)
    >>> r.keys(), r.shape("w"), r.dtype("step").name
    (['step', 'w'], (3,), 'int64')
    >>> r.get("w")
    array([0., 1., 2.], dtype=float32)
"""

from __future__ import annotations

import contextlib
import itertools
import math
import os
import struct
from collections.abc import Iterator
from typing import Any

import google_crc32c
import numpy as np
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError
from tensorboard.compat.proto import tensor_shape_pb2, types_pb2, versions_pb2

from flowbook.framework import dtypes
from flowbook.framework.errors import DataLossError, NotFoundError, UnimplementedError
from flowbook.platform.files import atomic_write

MAGIC = 0xDB4775248B80FB57  # the table footer's last 8 bytes, little-endian
FOOTER_SIZE = 48  # two BlockHandles padded to 40 bytes, then the magic
TRAILER_SIZE = 5  # after each block: compression type, masked CRC-32C
RESTART_INTERVAL = 16  # keys between full (unshared) keys in a data block
BLOCK_SIZE = 4096  # a data block is closed once it reaches this many bytes
HEADER_KEY = b""  # the key of the BundleHeaderProto
BUNDLE_VERSION = 1  # VersionDef.producer written; readers refuse min_consumer above it
MAX_NDIM = 32
_MASK_DELTA = 0xA282EAD8
_U32 = struct.Struct("<I")


# ------------------------------------------------------------------ the protos
def _bundle_file() -> descriptor_pb2.FileDescriptorProto:
    """The descriptor of the two bundle messages, TensorFlow's field numbers."""
    f = descriptor_pb2.FileDescriptorProto(
        name="flowbook/train/tensor_bundle.proto",
        package="flowbook.tensor_bundle",
        syntax="proto3",
        dependency=[
            tensor_shape_pb2.DESCRIPTOR.name,
            types_pb2.DESCRIPTOR.name,
            versions_pb2.DESCRIPTOR.name,
        ],
    )
    fd = descriptor_pb2.FieldDescriptorProto
    opt, rep = fd.LABEL_OPTIONAL, fd.LABEL_REPEATED

    def field(msg: Any, name: str, number: int, kind: int, type_name: str = "") -> None:
        fld = msg.field.add(name=name, number=number, label=opt, type=kind)
        if type_name:
            fld.type_name = type_name

    header = f.message_type.add(name="BundleHeaderProto")
    header.enum_type.add(name="Endianness").value.extend(
        [
            descriptor_pb2.EnumValueDescriptorProto(name="LITTLE", number=0),
            descriptor_pb2.EnumValueDescriptorProto(name="BIG", number=1),
        ]
    )
    field(header, "num_shards", 1, fd.TYPE_INT32)
    field(
        header,
        "endianness",
        2,
        fd.TYPE_ENUM,
        ".flowbook.tensor_bundle.BundleHeaderProto.Endianness",
    )
    field(header, "version", 3, fd.TYPE_MESSAGE, ".tensorboard.VersionDef")

    entry = f.message_type.add(name="BundleEntryProto")
    field(entry, "dtype", 1, fd.TYPE_ENUM, ".tensorboard.DataType")
    field(entry, "shape", 2, fd.TYPE_MESSAGE, ".tensorboard.TensorShapeProto")
    field(entry, "shard_id", 3, fd.TYPE_INT32)
    field(entry, "offset", 4, fd.TYPE_INT64)
    field(entry, "size", 5, fd.TYPE_INT64)
    field(entry, "crc32c", 6, fd.TYPE_FIXED32)
    # TensorSliceProto messages of a partitioned variable, kept as their bytes:
    # enough to see that an entry is sliced, which this module does not read.
    entry.field.add(name="slices", number=7, label=rep, type=fd.TYPE_BYTES)
    return f


def _message_classes() -> tuple[type, type]:
    pool = descriptor_pool.Default()
    proto = _bundle_file()
    try:
        pool.FindFileByName(proto.name)
    except KeyError:
        pool.Add(proto)
    header = pool.FindMessageTypeByName("flowbook.tensor_bundle.BundleHeaderProto")
    entry = pool.FindMessageTypeByName("flowbook.tensor_bundle.BundleEntryProto")
    return message_factory.GetMessageClass(header), message_factory.GetMessageClass(entry)


BundleHeaderProto, BundleEntryProto = _message_classes()


# ------------------------------------------------------------------ dtypes
_TF_ENUM: dict[str, int] = {  # flowbook dtype name -> TensorFlow's DataType enum
    "float32": types_pb2.DT_FLOAT,
    "float64": types_pb2.DT_DOUBLE,
    "float16": types_pb2.DT_HALF,
    "int8": types_pb2.DT_INT8,
    "int16": types_pb2.DT_INT16,
    "int32": types_pb2.DT_INT32,
    "int64": types_pb2.DT_INT64,
    "uint8": types_pb2.DT_UINT8,
    "uint16": types_pb2.DT_UINT16,
    "bool": types_pb2.DT_BOOL,
    "complex64": types_pb2.DT_COMPLEX64,
    "complex128": types_pb2.DT_COMPLEX128,
    "string": types_pb2.DT_STRING,
}
_FROM_TF: dict[int, dtypes.DType] = {v: dtypes.as_dtype(k) for k, v in _TF_ENUM.items()}


def tf_enum(dtype: Any) -> int:
    """TensorFlow's ``DataType`` number of a flowbook or numpy dtype.

    >>> tf_enum("float32"), tf_enum(np.int64), tf_enum(np.dtype("S3"))
    (1, 9, 7)
    """
    if isinstance(dtype, np.dtype):
        if dtype.kind in "OSU":
            return types_pb2.DT_STRING
        dtype = dtype.newbyteorder("=")  # ">i4" is int32 too
    name = dtypes.as_dtype(dtype).name
    if name not in _TF_ENUM:
        raise UnimplementedError(None, None, f"no TensorFlow DataType for {name}")
    return _TF_ENUM[name]


# ------------------------------------------------------------------ CRC, varints
def masked_crc32c(data: bytes, crc: int = 0) -> int:
    """The masked CRC-32C of ``data`` (extending the unmasked ``crc``).

    >>> hex(masked_crc32c(b"abc"))
    '0x21f1576e'
    """
    return _mask(google_crc32c.extend(crc, data))


def _mask(crc: int) -> int:
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def varint(n: int) -> bytes:
    """``n`` as a protobuf/LevelDB varint.

    >>> varint(300).hex()
    'ac02'
    """
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


class _Corrupt(Exception):
    """Damage found while parsing bytes; the reader adds the file and the entry."""


def _read_varint(buf: bytes, pos: int, end: int, max_bytes: int = 10) -> tuple[int, int]:
    """(value, position after it) of the varint at ``buf[pos:end]``; at most ``max_bytes``."""
    value = shift = 0
    for i in range(max_bytes):
        if pos + i >= end:
            raise _Corrupt(f"a varint runs past its end at byte {pos}")
        b = buf[pos + i]
        value |= (b & 0x7F) << shift
        if b < 0x80:
            if value >> (32 if max_bytes == 5 else 64):
                raise _Corrupt(f"a varint at byte {pos} overflows")
            return value, pos + i + 1
        shift += 7
    raise _Corrupt(f"a varint at byte {pos} is longer than {max_bytes} bytes")


# ------------------------------------------------------------------ writing
def _block(entries: list[tuple[bytes, bytes]], restart_interval: int) -> bytes:
    """One table block: prefix-compressed entries, then restart offsets and their count."""
    out = bytearray()
    restarts = [0]
    prev = b""
    for i, (key, value) in enumerate(entries):
        shared = 0
        if i % restart_interval == 0:
            if i:
                restarts.append(len(out))
        else:
            limit = min(len(prev), len(key))
            while shared < limit and prev[shared] == key[shared]:
                shared += 1
        out += varint(shared) + varint(len(key) - shared) + varint(len(value))
        out += key[shared:] + value
        prev = key
    for r in restarts:
        out += _U32.pack(r)
    out += _U32.pack(len(restarts))
    return bytes(out)


def _handle(offset: int, size: int) -> bytes:
    return varint(offset) + varint(size)


def build_table(items: list[tuple[bytes, bytes]], block_size: int = BLOCK_SIZE) -> bytes:
    """A LevelDB-format table of ``items`` (sorted by key, unique, uncompressed).

    >>> t = build_table([(b"a", b"1")])
    >>> len(t), t[-8:] == MAGIC.to_bytes(8, "little")
    (98, True)
    """
    out = bytearray()
    index: list[tuple[bytes, bytes]] = []

    def emit(contents: bytes) -> bytes:
        handle = _handle(len(out), len(contents))
        out.extend(contents + b"\x00" + _U32.pack(masked_crc32c(contents + b"\x00")))
        return handle

    pending: list[tuple[bytes, bytes]] = []
    size = 0
    for key, value in items:
        pending.append((key, value))
        size += len(key) + len(value) + 8
        if size >= block_size:
            index.append((key, emit(_block(pending, RESTART_INTERVAL))))
            pending, size = [], 0
    if pending:
        index.append((pending[-1][0], emit(_block(pending, RESTART_INTERVAL))))
    metaindex = emit(_block([], 1))
    index_handle = emit(_block(index, 1))
    footer = (metaindex + index_handle).ljust(FOOTER_SIZE - 8, b"\x00")
    out += footer + MAGIC.to_bytes(8, "little")
    return bytes(out)


def _string_bytes(arr: np.ndarray) -> tuple[bytes, int]:
    """(data-file bytes, masked CRC-32C) of a string tensor, in TensorFlow's layout."""
    elems = [x.encode("utf-8") if isinstance(x, str) else bytes(x) for x in arr.reshape(-1)]
    crc = 0
    for e in elems:
        n = len(e)
        crc = google_crc32c.extend(crc, struct.pack("<I" if n <= 0xFFFFFFFF else "<Q", n))
    length_sum = _U32.pack(_mask(crc))
    body = b"".join(elems)
    crc = google_crc32c.extend(google_crc32c.extend(crc, length_sum), body)
    return b"".join(varint(len(e)) for e in elems) + length_sum + body, _mask(crc)


def _tensor_bytes(name: str, value: Any) -> tuple[int, tuple[int, ...], bytes, int]:
    """(DataType, shape, data-file bytes, masked CRC-32C) of one tensor."""
    arr = np.asarray(value)
    if arr.dtype.kind in "OSU":
        data, crc = _string_bytes(arr)
        return types_pb2.DT_STRING, arr.shape, data, crc
    try:
        enum = tf_enum(arr.dtype)
    except (TypeError, ValueError, UnimplementedError) as e:
        raise UnimplementedError(None, None, f"tensor {name!r}: {arr.dtype} ({e})") from None
    data = np.ascontiguousarray(arr, arr.dtype.newbyteorder("<")).tobytes()
    return enum, arr.shape, data, masked_crc32c(data)


def data_filename(prefix: str, shard: int = 0, num_shards: int = 1) -> str:
    """The data file of shard ``shard``: ``<prefix>.data-00000-of-00001``.

    >>> data_filename("ckpt")
    'ckpt.data-00000-of-00001'
    """
    return f"{prefix}.data-{shard:05d}-of-{num_shards:05d}"


def index_filename(prefix: str) -> str:
    """The index file: ``<prefix>.index``."""
    return f"{prefix}.index"


def write_bundle(prefix: str, tensors: dict[str, Any]) -> None:
    """Write ``tensors`` as TensorFlow checkpoint V2 ``<prefix>.index`` + ``.data-00000-of-00001``.

    Numeric, bool and string (bytes, str or object arrays of them) tensors.
    Each file is written whole by ``flowbook.platform.files.atomic_write``,
    the data file first, so an index never points into a missing data file.

    >>> import tempfile
    >>> write_bundle(os.path.join(tempfile.mkdtemp(), "c"), {"x": np.zeros(2)})
    """
    names = {}
    for name in tensors:
        if not isinstance(name, str) or not name:
            raise ValueError(f"a tensor name must be a non-empty string, got {name!r}")
        names[name.encode("utf-8")] = name
    items: list[tuple[bytes, bytes]] = []
    chunks: list[bytes] = []
    offset = 0
    for key in sorted(names):
        enum, shape, data, crc = _tensor_bytes(names[key], tensors[names[key]])
        entry = BundleEntryProto(dtype=enum, offset=offset, size=len(data), crc32c=crc)
        entry.shape.SetInParent()
        entry.shape.dim.extend(tensor_shape_pb2.TensorShapeProto.Dim(size=d) for d in shape)
        items.append((key, entry.SerializeToString()))
        chunks.append(data)
        offset += len(data)
    header = BundleHeaderProto(num_shards=1, endianness=0)
    header.version.producer = BUNDLE_VERSION
    items.insert(0, (HEADER_KEY, header.SerializeToString()))
    directory = os.path.dirname(prefix)
    if directory:
        os.makedirs(directory, exist_ok=True)
    atomic_write(data_filename(prefix), lambda f: [f.write(c) for c in chunks])
    atomic_write(index_filename(prefix), build_table(items))


# ------------------------------------------------------------------ reading the table
def _parse_block(buf: bytes, start: int, end: int) -> list[tuple[bytes, bytes]]:
    """The (key, value) entries of the block ``buf[start:end]``, restart points checked."""
    if end - start < 4:
        raise _Corrupt(f"a block at byte {start} is {end - start} bytes, too short")
    (count,) = _U32.unpack_from(buf, end - 4)
    limit = end - 4 - 4 * count  # where the entries end and the restart array starts
    if count < 1 or limit < start:
        raise _Corrupt(f"a block at byte {start} claims {count} restart points")
    restarts = [start + _U32.unpack_from(buf, limit + 4 * i)[0] for i in range(count)]
    entries: list[tuple[bytes, bytes]] = []
    starts: dict[int, int] = {}  # entry position -> its shared length
    pos, prev = start, b""
    while pos < limit:
        entry_at = pos
        shared, pos = _read_varint(buf, pos, limit, 5)
        unshared, pos = _read_varint(buf, pos, limit, 5)
        length, pos = _read_varint(buf, pos, limit, 5)
        if shared > len(prev) or pos + unshared + length > limit:
            raise _Corrupt(f"the entry at byte {entry_at} runs past its block")
        key = prev[:shared] + buf[pos : pos + unshared]
        pos += unshared
        entries.append((key, buf[pos : pos + length]))
        starts[entry_at] = shared
        pos += length
        prev = key
    if restarts[0] != start or any(starts.get(r, 1) != 0 for r in restarts if entries):
        raise _Corrupt(f"a block at byte {start} has restart points off its entries")
    return entries


class _Table:
    """A LevelDB-format table held in memory: its blocks checked, its items in key order."""

    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.body = len(buf) - FOOTER_SIZE  # blocks must end before the footer
        if self.body < 0:
            raise _Corrupt(f"the file is {len(buf)} bytes, shorter than a table footer")
        if int.from_bytes(buf[-8:], "little") != MAGIC:
            raise _Corrupt(f"bad table magic number {buf[-8:].hex()}")
        meta, pos = self._handle(self.body, self.body + 40)
        index, _ = self._handle(pos, self.body + 40)
        self._block(meta)  # no meta blocks are used, but it must be intact
        self.items: list[tuple[bytes, bytes]] = []
        for last_key, handle in self._block(index):
            block, used = self._handle(0, len(handle), handle)
            if used != len(handle):
                raise _Corrupt("an index entry holds more than a block handle")
            entries = self._block(block)
            if not entries or entries[-1][0] > last_key:
                raise _Corrupt(f"data block at byte {block[0]} disagrees with the index")
            if self.items and entries[0][0] <= self.items[-1][0]:
                raise _Corrupt(f"keys out of order at data block at byte {block[0]}")
            self.items.extend(entries)

    def _handle(self, pos: int, end: int, buf: bytes | None = None) -> tuple[tuple[int, int], int]:
        src = self.buf if buf is None else buf
        offset, pos = _read_varint(src, pos, end)
        size, pos = _read_varint(src, pos, end)
        return (offset, size), pos

    def _block(self, handle: tuple[int, int]) -> list[tuple[bytes, bytes]]:
        offset, size = handle
        if offset + size + TRAILER_SIZE > self.body:
            raise _Corrupt(
                f"a block handle claims {size} bytes at {offset}, past the table's {self.body}"
            )
        kind = self.buf[offset + size]
        if kind != 0:
            raise _Corrupt(f"the block at byte {offset} is compressed (type {kind})")
        (stored,) = _U32.unpack_from(self.buf, offset + size + 1)
        if stored != masked_crc32c(self.buf[offset : offset + size + 1]):
            raise _Corrupt(f"the block at byte {offset} fails its CRC-32C check")
        entries = _parse_block(self.buf, offset, offset + size)
        if any(a[0] >= b[0] for a, b in itertools.pairwise(entries)):
            raise _Corrupt(f"keys out of order in the block at byte {offset}")
        return entries


# ------------------------------------------------------------------ reading the bundle
def _loss(path: str, entry: str | None, why: str) -> DataLossError:
    where = f"checkpoint {path}" + (f", entry {entry!r}" if entry is not None else "")
    return DataLossError(
        None,
        None,
        f"Unable to read {where}: {why}. The file is damaged (cut short while copying?) "
        "or is not a TensorFlow V2 checkpoint.",
    )


@contextlib.contextmanager
def _reading(path: str, entry: str | None = None) -> Iterator[None]:
    """Turn parsing damage into DataLossError naming ``path`` and ``entry``."""
    try:
        yield
    except _Corrupt as e:
        raise _loss(path, entry, str(e)) from None
    except (DecodeError, UnicodeDecodeError, struct.error, ValueError, OSError) as e:
        raise _loss(path, entry, f"{type(e).__name__}: {e}") from None


class _Entry:
    """One tensor's checked metadata."""

    __slots__ = ("crc", "dtype", "enum", "offset", "shape", "shard", "size", "sliced")

    def __init__(self, proto: Any, num_shards: int) -> None:
        self.enum = int(proto.dtype)
        if self.enum not in types_pb2.DataType.values() or self.enum == types_pb2.DT_INVALID:
            raise _Corrupt(f"unknown dtype number {self.enum}")
        self.dtype = _FROM_TF.get(self.enum)  # None: a TensorFlow dtype flowbook lacks
        shape = proto.shape
        if shape.unknown_rank or len(shape.dim) > MAX_NDIM or any(d.size < 0 for d in shape.dim):
            raise _Corrupt(f"bad shape {[d.size for d in shape.dim]}")
        self.shape = tuple(int(d.size) for d in shape.dim)
        self.shard, self.offset, self.size = proto.shard_id, proto.offset, proto.size
        self.crc, self.sliced = proto.crc32c, len(proto.slices) > 0
        if self.sliced:
            return  # a partitioned variable's full entry: no data of its own
        if not 0 <= self.shard < num_shards or self.offset < 0 or self.size < 0:
            raise _Corrupt(f"shard {self.shard}, offset {self.offset}, size {self.size}")
        count = math.prod(self.shape)
        if self.enum == types_pb2.DT_STRING:
            if self.size < count + 4 or (count == 0 and self.size != 4):
                raise _Corrupt(f"{self.size} bytes cannot hold {count} strings")
        elif self.dtype is not None and self.size != count * self.dtype.size:
            raise _Corrupt(
                f"shape {list(self.shape)} of {self.dtype.name} is "
                f"{count * self.dtype.size} bytes, the entry says {self.size}"
            )


class BundleReader:
    """The tensors of a V2 checkpoint; the index is read and checked when it is built.

    >>> import tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "c")
    >>> write_bundle(p, {"s": np.array([b"hi", b""], dtype=object)})
    >>> read_bundle(p).get("s")
    array([b'hi', b''], dtype=object)
    """

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.index_path = index_filename(prefix)
        if not os.path.isfile(self.index_path):
            raise NotFoundError(
                None, None, f"Checkpoint {prefix} not found: no file {self.index_path}"
            )
        with _reading(self.index_path), open(self.index_path, "rb") as f:
            table = _Table(f.read())
        self._entries = self._parse(table.items)

    def _parse(self, items: list[tuple[bytes, bytes]]) -> dict[str, _Entry]:
        path = self.index_path
        if not items or items[0][0] != HEADER_KEY:
            raise _loss(path, None, "there is no header entry (the empty key)")
        with _reading(path, ""):
            header = BundleHeaderProto.FromString(items[0][1])
            if header.num_shards < 1 or header.endianness not in (0, 1):
                raise _Corrupt(f"header {header.num_shards} shards, endianness {header.endianness}")
            if header.version.min_consumer > BUNDLE_VERSION:
                raise _Corrupt(f"format version needs consumer {header.version.min_consumer}")
        self.num_shards = header.num_shards
        self._order = ">" if header.endianness == 1 else "<"
        entries: dict[str, _Entry] = {}
        for key, value in items[1:]:
            with _reading(path, repr(key)[2:-1]):
                name = key.decode("utf-8")
            with _reading(path, name):
                entries[name] = _Entry(BundleEntryProto.FromString(value), self.num_shards)
        return entries

    def keys(self) -> list[str]:
        """The tensor names, sorted."""
        return list(self._entries)

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __contains__(self, name: str) -> bool:
        return name in self._entries

    def _entry(self, name: str) -> _Entry:
        if name not in self._entries:
            raise NotFoundError(None, None, f"Key {name} not found in checkpoint {self.prefix}")
        return self._entries[name]

    def shape(self, name: str) -> tuple[int, ...]:
        """The shape of tensor ``name``."""
        return self._entry(name).shape

    def dtype(self, name: str) -> dtypes.DType:
        """The flowbook dtype of tensor ``name`` (UnimplementedError for one flowbook lacks)."""
        e = self._entry(name)
        if e.dtype is None:
            kind = types_pb2.DataType.Name(e.enum)
            raise UnimplementedError(None, None, f"tensor {name!r} of {self.prefix} is {kind}")
        return e.dtype

    def get(self, name: str) -> np.ndarray:
        """The value of tensor ``name``: an ndarray (``object`` of bytes for strings)."""
        e = self._entry(name)
        dtype = self.dtype(name)
        if e.sliced:
            raise UnimplementedError(
                None, None, f"tensor {name!r} of {self.prefix} is partitioned (saved in slices)"
            )
        path = data_filename(self.prefix, e.shard, self.num_shards)
        with _reading(path, name):
            with open(path, "rb") as f:
                have = os.fstat(f.fileno()).st_size
                if e.offset + e.size > have:
                    raise _Corrupt(
                        f"it claims bytes {e.offset}..{e.offset + e.size}, the file has {have}"
                    )
                f.seek(e.offset)
                data = f.read(e.size)
            if len(data) != e.size:
                raise _Corrupt(f"the file ended after {len(data)} of {e.size} bytes")
            if e.enum == types_pb2.DT_STRING:
                return _decode_strings(data, e).reshape(e.shape)
            if masked_crc32c(data) != e.crc:
                raise _Corrupt("its bytes fail their CRC-32C check")
            if dtype.is_bool:
                return (np.frombuffer(data, np.uint8) != 0).reshape(e.shape)
            arr = np.frombuffer(bytearray(data), dtype.np.newbyteorder(self._order))
            return arr.astype(dtype.np, copy=False).reshape(e.shape)


def _decode_strings(data: bytes, e: _Entry) -> np.ndarray:
    """The elements of a string tensor's bytes, lengths and checksums checked."""
    count = math.prod(e.shape)
    lengths: list[int] = []
    pos = 0
    crc = 0
    for _ in range(count):
        n, pos = _read_varint(data, pos, len(data))
        lengths.append(n)
        crc = google_crc32c.extend(crc, struct.pack("<I" if n <= 0xFFFFFFFF else "<Q", n))
    if pos + 4 > len(data) or data[pos : pos + 4] != _U32.pack(_mask(crc)):
        raise _Corrupt("its string lengths fail their CRC-32C check")
    body = pos + 4
    if body + sum(lengths) != len(data):
        raise _Corrupt(
            f"its strings total {sum(lengths)} bytes, the entry holds {len(data) - body}"
        )
    if masked_crc32c(data[pos:], crc) != e.crc:
        raise _Corrupt("its bytes fail their CRC-32C check")
    out = np.empty(count, dtype=object)
    for i, n in enumerate(lengths):
        out[i] = data[body : body + n]
        body += n
    return out


def read_bundle(prefix: str) -> BundleReader:
    """Open V2 checkpoint ``prefix`` (``<prefix>.index`` and its data files) for reading.

    NotFoundError if there is no index file; DataLossError, naming the file
    and the entry, for any damage.
    """
    return BundleReader(prefix)
