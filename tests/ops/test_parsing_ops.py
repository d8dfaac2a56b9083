"""Parsing ops: decode_csv, decode_raw, read_file/write_file, parse_example and tf.train.Example.

CSV rows are checked against Python's ``csv`` module and int/float
conversions, raw decoding against ``numpy.frombuffer``, and Examples against
the values they were built from.  Errors must name the op, the line that
built it, and the offending record or key.
"""

from __future__ import annotations

import numpy as np
import pytest

import flowbook as tf
from flowbook.framework.errors import InvalidArgumentError


def run(fetches, feed=None):
    with tf.Session() as s:
        return s.run(fetches, feed)


# ---------------------------------------------------------------- decode_csv
CSV = [
    # (records, defaults, keyword args, expected columns)
    ("ints_floats_strings", ["1,2.5,a", "3,4,b"], [[0], [0.0], [""]], {},
     [[1, 3], [2.5, 4.0], [b"a", b"b"]]),
    ("defaults_fill_empty", ["1,,", ",7,"], [[5], [6.0], ["none"]], {},
     [[1, 5], [6.0, 7.0], [b"none", b"none"]]),
    ("quotes", ['"x,y",1', '"say ""hi""",2'], [[""], [0]], {}, [[b"x,y", b'say "hi"'], [1, 2]]),
    ("no_quote_delim", ['"a"|1'], [[""], [0]], {"field_delim": "|", "use_quote_delim": False},
     [[b'"a"'], [1]]),
    ("tab", ["1\t2"], [[0], [0]], {"field_delim": "\t"}, [[1], [2]]),
    ("na_value", ["NA,3", "4,NA"], [[-1], [-2]], {"na_value": "NA"}, [[-1, 4], [3, -2]]),
    ("select_cols", ["1,2,3", "4,5,6"], [[0], [0]], {"select_cols": [0, 2]}, [[1, 4], [3, 6]]),
    ("int64_float64", ["9000000000,0.1"], [np.array([0], np.int64), np.array([0.0])], {},
     [[9000000000], [0.1]]),
]  # fmt: skip


@pytest.mark.parametrize(
    "records, defaults, kwargs, want", [r[1:] for r in CSV], ids=[r[0] for r in CSV]
)
def test_decode_csv(records, defaults, kwargs, want):
    cols = tf.decode_csv(records, defaults, **kwargs)
    got = run(cols)
    assert [c.tolist() for c in got] == want
    for c, d in zip(cols, defaults):
        assert c.dtype == tf.constant(d).dtype
        assert c.shape.as_list() == [len(records)]


def test_decode_csv_keeps_the_records_shape():
    a, b = tf.decode_csv([["1,2", "3,4"]], [[0], [0]])
    assert a.shape.as_list() == [1, 2]
    assert run(b).tolist() == [[2, 4]]


@pytest.mark.parametrize(
    "record, defaults, message",
    [
        ("1,2,3", [[0], [0]], r"Expect 2 fields but have 3 in record 1: '1,2,3'"),
        ("1", [[0], [0]], r"Expect 2 fields but have 1 in record 1: '1'"),
        ("x,2", [[0], [0]], r"Field 0 in record 1 is not a valid int: 'x'"),
        ("1,", [[0], np.zeros(0, np.int32)], r"Field 1 is required but missing in record 1"),
    ],
)
def test_decode_csv_errors_name_the_op_line_and_record(record, defaults, message):
    cols = tf.decode_csv(["5,6", record], defaults, name="parse_rows")
    with pytest.raises(
        InvalidArgumentError, match=r"DecodeCSV 'parse_rows' \(.*test_parsing_ops.py"
    ):
        run(cols)
    with pytest.raises(InvalidArgumentError, match=message):
        run(cols)


def test_decode_csv_rejects_bad_defaults_at_build():
    with pytest.raises(TypeError, match="record_defaults"):
        tf.decode_csv(["1"], [[True]])
    with pytest.raises(ValueError, match="field_delim"):
        tf.decode_csv(["1"], [[0]], field_delim=",,")


# ---------------------------------------------------------------- decode_raw
@pytest.mark.parametrize("dtype", [tf.uint8, tf.int16, tf.int32, tf.float32, tf.float64, tf.int64])
@pytest.mark.parametrize("little", [True, False])
def test_decode_raw_matches_numpy(dtype, little):
    values = np.arange(6).reshape(2, 3).astype(dtype.as_numpy_dtype)
    order = "<" if little else ">"
    raw = [row.astype(values.dtype.newbyteorder(order)).tobytes() for row in values]
    out = tf.decode_raw(raw, dtype, little_endian=little)
    assert out.shape.as_list() == [2, None]
    got = run(out)
    assert got.dtype == values.dtype and got.tolist() == values.tolist()


def test_decode_raw_needs_equal_lengths():
    with pytest.raises(InvalidArgumentError, match=r"DecodeRaw.*same size"):
        run(tf.decode_raw([b"ab", b"abcd"], tf.int16))
    with pytest.raises(InvalidArgumentError, match="not a multiple of 4"):
        run(tf.decode_raw([b"abc"], tf.int32))


# ----------------------------------------------------------------- files
def test_write_file_then_read_file(tmp_path):
    path = str(tmp_path / "sub" / "blob.bin")
    data = bytes(range(256))
    name = tf.placeholder(tf.string, [])
    write = tf.io.write_file(name, tf.constant(data))
    with tf.Session() as s:
        s.run(write, {name: path})
        assert s.run(tf.read_file(name), {name: path}) == data
        with pytest.raises(tf.errors.NotFoundError):
            s.run(tf.io.read_file(str(tmp_path / "missing")))


# ------------------------------------------------------------ tf.train.Example
def example(**features):
    def feature(v):
        v = list(np.atleast_1d(v))
        if isinstance(v[0], bytes):
            return tf.train.Feature(bytes_list=tf.train.BytesList(value=v))
        if isinstance(v[0], float | np.floating):
            return tf.train.Feature(float_list=tf.train.FloatList(value=v))
        return tf.train.Feature(int64_list=tf.train.Int64List(value=v))

    feats = tf.train.Features(feature={k: feature(v) for k, v in features.items()})
    return tf.train.Example(features=feats).SerializeToString()


def test_example_is_a_real_protobuf_message():
    from google.protobuf.message import Message

    raw = example(a=[1, 2], b=[0.5], c=[b"x"])
    back = tf.train.Example.FromString(raw)
    assert isinstance(back, Message)
    assert list(back.features.feature["a"].int64_list.value) == [1, 2]
    assert tf.train.Example.FromString(back.SerializeToString()) == back  # (map order varies)


def test_parse_example_dense_sparse_and_defaults():
    batch = [example(x=[1.0, 2.0], ids=[3, 4, 5], w=[b"a"]), example(ids=[7], w=[b"b"])]
    spec = {
        "x": tf.FixedLenFeature([2], tf.float32, default_value=[-1.0, -1.0]),
        "ids": tf.VarLenFeature(tf.int64),
        "w": tf.FixedLenFeature([], tf.string),
    }
    parsed = tf.parse_example(batch, spec)
    assert parsed["x"].shape.as_list() == [2, 2] and parsed["w"].dtype is tf.string
    got = run(parsed)
    assert got["x"].tolist() == [[1.0, 2.0], [-1.0, -1.0]]
    assert got["w"].tolist() == [b"a", b"b"]
    ids = got["ids"]
    assert ids.indices.tolist() == [[0, 0], [0, 1], [0, 2], [1, 0]]
    assert ids.values.tolist() == [3, 4, 5, 7] and ids.dense_shape.tolist() == [2, 3]


def test_parse_single_example():
    spec = {"m": tf.io.FixedLenFeature([2, 2], tf.int64), "t": tf.io.VarLenFeature(tf.string)}
    parsed = tf.io.parse_single_example(example(m=[1, 2, 3, 4], t=[b"p", b"q"]), spec)
    assert parsed["m"].shape.as_list() == [2, 2]
    got = run(parsed)
    assert got["m"].tolist() == [[1, 2], [3, 4]]
    assert got["t"].indices.tolist() == [[0], [1]] and got["t"].dense_shape.tolist() == [2]


@pytest.mark.parametrize(
    "raw, spec, message",
    [
        (example(), {"x": tf.FixedLenFeature([1], tf.float32)}, "Feature: x .* is required"),
        (
            example(x=[1.0, 2.0]),
            {"x": tf.FixedLenFeature([3], tf.float32)},
            "Key: x.*Values size: 2",
        ),
        (example(x=[1]), {"x": tf.FixedLenFeature([1], tf.float32)}, "Key: x.*types don't match"),
        (b"\xff\xff", {"x": tf.VarLenFeature(tf.int64)}, "Could not parse example input 0"),
    ],
)
def test_parse_example_errors_name_the_op_and_key(raw, spec, message):
    out = tf.parse_example([raw], spec, name="parse_it")
    with pytest.raises(InvalidArgumentError, match=f"ParseExample 'parse_it'.*{message}"):
        run(out)


# --------------------------------------------------------------- pipelines
def test_tfrecords_of_examples_through_a_dataset(tmp_path):
    path = str(tmp_path / "ex.tfrecord")
    with tf.io.TFRecordWriter(path) as w:
        for i in range(5):
            w.write(example(x=[float(i), float(i * i)], y=[i % 2]))
    spec = {"x": tf.FixedLenFeature([2], tf.float32), "y": tf.FixedLenFeature([], tf.int64)}
    ds = tf.data.TFRecordDataset(path).map(lambda r: tf.parse_single_example(r, spec)).batch(2)
    nxt = ds.make_one_shot_iterator().get_next()
    with tf.Session() as s:
        first = s.run(nxt)
    assert first["x"].tolist() == [[0.0, 0.0], [1.0, 1.0]] and first["y"].tolist() == [0, 1]


def test_csv_lines_through_a_dataset(tmp_path):
    path = tmp_path / "rows.csv"
    path.write_text("1,0.5,a\n2,1.5,b\n3,bad,c\n")
    ds = tf.data.TextLineDataset(str(path)).map(
        lambda line: tf.decode_csv(line, [[0], [0.0], [""]])
    )
    nxt = ds.make_one_shot_iterator().get_next()
    with tf.Session() as s:
        assert [np.asarray(v).tolist() for v in s.run(nxt)] == [1, 0.5, b"a"]
        assert [np.asarray(v).tolist() for v in s.run(nxt)] == [2, 1.5, b"b"]
        with pytest.raises(InvalidArgumentError, match=r"not a valid float: 'bad'.*'3,bad,c'"):
            s.run(nxt)


def test_masked_crc_matches_tensorboards():
    pytest.importorskip("tensorboard")
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c

    from flowbook.graph_io.tfrecord import masked_crc32c as ours

    for data in (b"", b"a", bytes(range(256)) * 7):
        assert ours(data) == masked_crc32c(data)
