"""Damaged and compressed TFRecord files through every reading path.

The paths: ``tf.python_io.tf_record_iterator``, ``tf.data.TFRecordDataset``
and TF1's ``TFRecordReader``; each over plain, GZIP and ZLIB files.  A file
cut anywhere inside a record (its length, the length's CRC, the data, the
data's CRC) is a ``DataLossError`` naming the file and the record's offset,
after the whole records before it; a length no file could hold is refused
before anything is allocated for it.  The compressed files TensorFlow wrote
(``TF_WRITTEN``: made with TensorFlow 2.21's ``tf.io.TFRecordWriter``) read
back here; the ones flowbook writes were checked to read back in TensorFlow.
"""

from __future__ import annotations

import base64
import gzip
import struct
import zlib
from pathlib import Path

import pytest

import flowbook as tf
from flowbook.framework import errors
from flowbook.framework.limits import claim_limit
from flowbook.graph_io.tfrecord import masked_crc32c

RECORDS = [b"first", b"", b"second" * 10]
KINDS = ["", "GZIP", "ZLIB"]
TF_WRITTEN = {  # tf.io.TFRecordWriter(path, tf.io.TFRecordOptions(kind)): b"tf", b"wrote" * 3
    "GZIP": "H4sIAAAAAAAAA2NigIAKdW6TkrTmqk4+fqhIbrA2Z3lRfkkqgnjYrr8fALM9THQxAAAA",
    "ZLIB": "eJxjYoCACnVuk5K05qpOPn6oSG6wNmd5UX5JKoJ42K6/HwDkYw07",
}


def framed(data: bytes, length: int | None = None) -> bytes:
    header = struct.pack("<Q", len(data) if length is None else length)
    return (
        header
        + struct.pack("<I", masked_crc32c(header))
        + data
        + struct.pack("<I", masked_crc32c(data))
    )


def compress(raw: bytes, kind: str) -> bytes:
    if kind == "GZIP":
        return gzip.compress(raw)
    if kind == "ZLIB":
        return zlib.compress(raw)
    return raw


def via_iterator(path: str, kind: str) -> list[bytes]:
    return list(tf.python_io.tf_record_iterator(path, tf.python_io.TFRecordOptions(kind)))


def via_dataset(path: str, kind: str) -> list[bytes]:
    with tf.Graph().as_default():
        x = tf.data.TFRecordDataset(path, compression_type=kind).make_one_shot_iterator().get_next()
        out = []
        with tf.Session() as sess:
            try:
                while True:
                    out.append(sess.run(x))
            except errors.OutOfRangeError:
                return out


def via_reader(path: str, kind: str) -> list[bytes]:
    with tf.Graph().as_default():
        q = tf.FIFOQueue(1, tf.string)
        options = tf.python_io.TFRecordOptions(kind)
        _, value = tf.TFRecordReader(options=options).read(q)
        out = []
        with tf.Session() as sess:
            sess.run(q.enqueue([path]))
            sess.run(q.close())
            try:
                while True:
                    out.append(sess.run(value))
            except errors.OutOfRangeError:
                return out


PATHS = [via_iterator, via_dataset, via_reader]


# ------------------------------------------------------------ whole files
@pytest.mark.parametrize("read", PATHS)
@pytest.mark.parametrize("kind", KINDS)
def test_written_files_read_back_every_path(tmp_path, kind, read):
    path = str(tmp_path / "r.tfrecord")
    with tf.python_io.TFRecordWriter(path, tf.python_io.TFRecordOptions(kind)) as w:
        for r in RECORDS:
            w.write(r)
    data = Path(path).read_bytes()
    if kind == "GZIP":
        assert data[:2] == b"\x1f\x8b"
        assert gzip.decompress(data) == b"".join(framed(r) for r in RECORDS)
    elif kind == "ZLIB":
        assert zlib.decompress(data) == b"".join(framed(r) for r in RECORDS)
    assert read(path, kind) == RECORDS


@pytest.mark.parametrize("read", PATHS)
@pytest.mark.parametrize("kind", ["GZIP", "ZLIB"])
def test_tensorflow_written_compressed_files_read(tmp_path, kind, read):
    path = str(tmp_path / f"tf.{kind}")
    Path(path).write_bytes(base64.b64decode(TF_WRITTEN[kind]))
    assert read(path, kind) == [b"tf", b"wrote" * 3]


def test_options_api_as_tf1():
    T = tf.python_io.TFRecordCompressionType
    assert (T.NONE, T.ZLIB, T.GZIP) == (0, 1, 2)
    get = tf.python_io.TFRecordOptions.get_compression_type_string
    assert get(tf.io.TFRecordOptions("GZIP")) == "GZIP"
    assert get(tf.python_io.TFRecordOptions(T.ZLIB)) == "ZLIB"
    assert get(None) == "" and get(T.GZIP) == "GZIP"
    with pytest.raises(ValueError, match='Not a valid compression_type: "BZ2"'):
        tf.io.TFRecordOptions("BZ2")


def test_compressed_writer_flush_makes_records_readable(tmp_path):
    path = str(tmp_path / "live.gz")
    w = tf.python_io.TFRecordWriter(path, tf.python_io.TFRecordOptions("GZIP", compression_level=9))
    w.write(b"a")
    w.flush()  # a sync flush: what is written so far inflates, the stream is unfinished
    z = zlib.decompressobj(31)
    assert z.decompress(Path(path).read_bytes()) == framed(b"a")
    w.write(b"b")
    w.close()
    w.close()
    assert via_iterator(path, "GZIP") == [b"a", b"b"]


# ------------------------------------------------------------ truncation
WHOLE = framed(b"ok")  # 18 bytes: the record before the cut one
CUT = framed(b"payload!")  # 24 bytes: 8 length, 4 crc, 8 data, 4 crc
CUTS = {"length": 5, "length's checksum": 10, "data": 15, "data's checksum": 22}


@pytest.mark.parametrize("read", PATHS)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("where", list(CUTS))
def test_a_file_cut_inside_a_record_is_data_loss(tmp_path, kind, read, where):
    path = str(tmp_path / "cut.tfrecord")
    raw = WHOLE + CUT[: CUTS[where]]
    Path(path).write_bytes(compress(raw, kind))  # a whole stream of a cut file
    got = []

    def collect() -> None:
        if read is via_iterator:  # the records before the cut come out first
            it = tf.python_io.tf_record_iterator(path, tf.python_io.TFRecordOptions(kind))
            got.append(next(it))
            next(it)
        else:
            got.extend(read(path, kind))

    with pytest.raises(errors.DataLossError, match="truncated record at offset 18") as info:
        collect()
    assert path in str(info.value)
    assert read is not via_iterator or got == [b"ok"]


@pytest.mark.parametrize("read", PATHS)
@pytest.mark.parametrize("kind", ["GZIP", "ZLIB"])
def test_a_compressed_stream_cut_short_is_data_loss(tmp_path, kind, read):
    path = str(tmp_path / "cut.z")
    whole = compress(WHOLE + CUT, kind)
    for end in (len(whole) // 2, len(whole) - 1):
        Path(path).write_bytes(whole[:end])
        with pytest.raises(errors.DataLossError, match=f"truncated {kind} stream at offset") as i:
            read(path, kind)
        assert path in str(i.value)


@pytest.mark.parametrize("read", PATHS)
@pytest.mark.parametrize("kind", ["GZIP", "ZLIB"])
def test_a_corrupted_compressed_stream_is_data_loss(tmp_path, kind, read):
    path = str(tmp_path / "bad.z")
    data = bytearray(compress(WHOLE + CUT, kind))
    data[len(data) // 2] ^= 0xFF
    Path(path).write_bytes(bytes(data))
    with pytest.raises(errors.DataLossError, match=f"{path}: corrupted"):
        read(path, kind)


def test_iterator_resumes_after_a_record_still_being_written(tmp_path):
    path = tmp_path / "live.tfrecord"
    path.write_bytes(WHOLE + CUT[:7])
    it = tf.python_io.tf_record_iterator(str(path))
    assert next(it) == b"ok"
    with pytest.raises(errors.DataLossError, match="truncated record at offset 18"):
        next(it)
    with open(path, "ab") as f:
        f.write(CUT[7:])
    assert next(it) == b"payload!"
    with pytest.raises(StopIteration):
        next(it)


# ------------------------------------------------------------ impossible lengths
@pytest.mark.parametrize("read", PATHS)
@pytest.mark.parametrize("kind", KINDS)
def test_a_huge_length_is_refused_before_allocating(tmp_path, kind, read):
    path = str(tmp_path / "huge.tfrecord")
    header = struct.pack("<Q", 2**62)
    raw = WHOLE + header + struct.pack("<I", masked_crc32c(header)) + b"tiny"
    Path(path).write_bytes(compress(raw, kind))
    with pytest.raises(errors.DataLossError, match=r"offset 18.*4611686018427387904") as info:
        read(path, kind)
    assert path in str(info.value)


def test_a_compressed_record_over_the_claims_budget_is_refused(tmp_path):
    path = str(tmp_path / "big.gz")
    Path(path).write_bytes(gzip.compress(framed(b"x" * 5000)))
    with claim_limit(4096), pytest.raises(errors.DataLossError, match="over the 4096"):
        via_iterator(path, "GZIP")
    assert via_iterator(path, "GZIP") == [b"x" * 5000]  # within the default budget


def test_a_decompression_bomb_inflates_only_what_is_read(tmp_path):
    path = str(tmp_path / "bomb.z")
    header = struct.pack("<Q", 2**40)  # one record claiming a terabyte of zeros
    bomb = zlib.compressobj()
    parts = [bomb.compress(header + struct.pack("<I", masked_crc32c(header)))]
    parts += [bomb.compress(b"\0" * (1 << 20)) for _ in range(64)]  # 64 MiB of zeros, 64 KiB
    Path(path).write_bytes(b"".join(parts) + bomb.flush())
    with pytest.raises(errors.DataLossError, match="1099511627776 bytes, over the"):
        via_dataset(path, "ZLIB")


def test_empty_files_hold_no_records(tmp_path):
    for kind in KINDS:
        path = str(tmp_path / f"empty{kind}")
        Path(path).write_bytes(b"")
        assert via_iterator(path, kind) == [] and via_dataset(path, kind) == []
