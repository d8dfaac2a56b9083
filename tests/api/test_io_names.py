"""``tf.io``'s names: aliases of the codecs and queues, and the serialization helpers, with
expected bytes and values as TensorFlow 1 gives them."""

from __future__ import annotations

import gzip
import zlib

import numpy as np
import pytest

import flowbook as tf
from flowbook.framework.errors import InvalidArgumentError

ALIASES = [
    ("decode_and_crop_jpeg", tf.image.decode_and_crop_jpeg),
    ("decode_bmp", tf.image.decode_bmp),
    ("decode_gif", tf.image.decode_gif),
    ("decode_image", tf.image.decode_image),
    ("decode_jpeg", tf.image.decode_jpeg),
    ("decode_png", tf.image.decode_png),
    ("encode_jpeg", tf.image.encode_jpeg),
    ("encode_png", tf.image.encode_png),
    ("extract_jpeg_shape", tf.image.extract_jpeg_shape),
    ("is_jpeg", tf.image.is_jpeg),
    ("decode_base64", tf.decode_base64),
    ("encode_base64", tf.encode_base64),
    ("PaddingFIFOQueue", tf.PaddingFIFOQueue),
    ("PriorityQueue", tf.PriorityQueue),
    ("QueueBase", tf.QueueBase),
    ("RandomShuffleQueue", tf.RandomShuffleQueue),
]


@pytest.mark.parametrize(("name", "target"), ALIASES, ids=[a[0] for a in ALIASES])
def test_alias_is_the_same_object(name, target):
    assert getattr(tf.io, name) is target


def _run(fetch, feed=None):
    with tf.Session() as s:
        return s.run(fetch, feed)


# Each: the value, its dtype, and the bytes TensorFlow's serialize_tensor writes for it.
SERIALIZED = [
    ([[1, 2], [3, 4]], tf.int32, b'\x08\x03\x12\x08\x12\x02\x08\x02\x12\x02\x08\x02"\x10'
     b"\x01\x00\x00\x00\x02\x00\x00\x00\x03\x00\x00\x00\x04\x00\x00\x00"),
    ([1.5, 2.5], tf.float32, b'\x08\x01\x12\x04\x12\x02\x08\x02"\x08\x00\x00\xc0?\x00\x00 @'),
    ([3, 4], tf.int64, b'\x08\t\x12\x04\x12\x02\x08\x02"\x10'
     b"\x03\x00\x00\x00\x00\x00\x00\x00\x04\x00\x00\x00\x00\x00\x00\x00"),
]  # fmt: skip


@pytest.mark.parametrize(("value", "dtype", "expected"), SERIALIZED)
def test_serialize_tensor_bytes_match_tensorflow_and_parse_back(value, dtype, expected):
    with tf.Graph().as_default():
        raw = tf.io.serialize_tensor(tf.constant(value, dtype))
        assert raw.shape.as_list() == []
        back = tf.io.parse_tensor(raw, dtype)
        got_raw, got = _run([raw, back])
    assert got_raw == expected
    np.testing.assert_array_equal(got, np.asarray(value, dtype.np))


def test_parse_tensor_strings_and_dtype_mismatch():
    with tf.Graph().as_default():
        raw = tf.io.serialize_tensor(tf.constant(["a", "bc"]))
        assert _run(tf.io.parse_tensor(raw, tf.string)).tolist() == [b"a", b"bc"]
        with pytest.raises(InvalidArgumentError, match=r"Type mismatch.*\(string\).*\(float32\)"):
            _run(tf.io.parse_tensor(raw, tf.float32))


def test_serialize_sparse_and_many_sparse_match_tensorflow():
    with tf.Graph().as_default():
        sp = tf.io.SparseTensor([[0, 1], [2, 3]], [1.5, 2.5], [3, 4])
        one = tf.io.serialize_sparse(sp)
        assert one.shape.as_list() == [3]
        many_in = tf.io.SparseTensor([[0, 1], [1, 0], [1, 2]], tf.constant([1, 2, 3]), [2, 3])
        many = tf.io.serialize_many_sparse(many_in)
        assert many.shape.as_list() == [None, 3]
        back = tf.io.deserialize_many_sparse(many, tf.int32, rank=2)
        assert back.indices.shape.as_list() == [None, 2]
        got_one, got_many, got_back = _run([one, many, back])
    assert got_one.tolist() == [
        b'\x08\t\x12\x08\x12\x02\x08\x02\x12\x02\x08\x02" '
        + b"\x00" * 8 + b"\x01" + b"\x00" * 7 + b"\x02" + b"\x00" * 7 + b"\x03" + b"\x00" * 7,
        b'\x08\x01\x12\x04\x12\x02\x08\x02"\x08\x00\x00\xc0?\x00\x00 @',
        b'\x08\t\x12\x04\x12\x02\x08\x02"\x10\x03' + b"\x00" * 7 + b"\x04" + b"\x00" * 7,
    ]  # fmt: skip
    assert got_many[0].tolist() == [
        b'\x08\t\x12\x08\x12\x02\x08\x01\x12\x02\x08\x01"\x08\x01' + b"\x00" * 7,
        b'\x08\x03\x12\x04\x12\x02\x08\x01"\x04\x01\x00\x00\x00',
        b'\x08\t\x12\x04\x12\x02\x08\x01"\x08\x03' + b"\x00" * 7,
    ]  # fmt: skip
    assert got_back.indices.tolist() == [[0, 1], [1, 0], [1, 2]]
    assert got_back.values.tolist() == [1, 2, 3]
    assert got_back.dense_shape.tolist() == [2, 3]


def test_deserialize_many_sparse_takes_the_largest_shape():
    with tf.Graph().as_default():
        rows = tf.stack(
            [
                tf.io.serialize_sparse(tf.io.SparseTensor([[0]], [5.0], [2])),
                tf.io.serialize_sparse(tf.io.SparseTensor([[3]], [6.0], [4])),
            ]
        )
        got = _run(tf.io.deserialize_many_sparse(rows, tf.float32))
    assert got.indices.tolist() == [[0, 0], [1, 3]]
    assert got.values.tolist() == [5.0, 6.0]
    assert got.dense_shape.tolist() == [2, 4]


@pytest.mark.parametrize(
    ("kind", "compress"),
    [("ZLIB", zlib.compress), ("GZIP", gzip.compress), ("", lambda b: b)],
)
def test_decode_compressed(kind, compress):
    with tf.Graph().as_default():
        out = tf.io.decode_compressed([compress(b"hello"), compress(b"")], kind)
        assert out.shape.as_list() == [2]
        assert _run(out).tolist() == [b"hello", b""]


def test_decode_compressed_bad_data_is_an_error():
    with tf.Graph().as_default():
        with pytest.raises(InvalidArgumentError):
            _run(tf.io.decode_compressed(b"not zlib", "ZLIB"))
        with pytest.raises(ValueError, match="compression"):
            tf.io.decode_compressed(b"x", "LZ4")


def test_matching_files_sorts_all_matches_and_keeps_duplicates(tmp_path):
    for f in ("b.txt", "a.txt", "c.csv"):
        (tmp_path / f).write_text("")
    d = str(tmp_path)
    with tf.Graph().as_default():
        got = _run(tf.io.matching_files([f"{d}/*.txt", f"{d}/*", f"{d}/zz*"]))
        single = _run(tf.io.matching_files(f"{d}/*.csv"))
    names = [g.decode().rsplit("/", 1)[1] for g in got]
    assert names == ["a.txt", "a.txt", "b.txt", "b.txt", "c.csv"]
    assert [g.decode() for g in single] == [f"{d}/c.csv"]


def test_match_filenames_once_is_a_local_variable(tmp_path):
    (tmp_path / "a.txt").write_text("")
    with tf.Graph().as_default():
        files = tf.io.match_filenames_once(str(tmp_path / "*.txt"))
        assert files in tf.local_variables() and files not in tf.trainable_variables()
        with tf.Session() as s:
            s.run(tf.local_variables_initializer())
            (tmp_path / "b.txt").write_text("")  # found once: later files are not seen
            assert [f.decode().rsplit("/", 1)[1] for f in s.run(files)] == ["a.txt"]
