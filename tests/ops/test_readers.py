"""Readers over a queue of file names: keys, values, damage named by file and record."""

from __future__ import annotations

import numpy as np
import pytest

import flowbook as tf


def _files_queue(s, names):
    q = tf.FIFOQueue(len(names) + 1, tf.string)
    s.run(q.enqueue_many([[str(n) for n in names]]))
    s.run(q.close())
    return q


def _read_all(s, fetch):
    out = []
    while True:
        try:
            out.append(s.run(fetch))
        except tf.errors.OutOfRangeError:
            return out


def test_text_line_reader_keys_skip_header_and_counts(tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text("h\n1,2\n3,4\n")
    b.write_text("h\n5,6\n")
    with tf.Session() as s:
        q = _files_queue(s, [a, b])
        reader = tf.TextLineReader(skip_header_lines=1)
        key, value = reader.read(q)
        got = _read_all(s, [key, value])
        assert [v for _, v in got] == [b"1,2", b"3,4", b"5,6"]
        assert got[0][0] == f"{a}:2".encode()  # TF's key: file:line
        assert s.run(reader.num_records_produced()) == 3
        assert s.run(reader.num_work_units_completed()) == 2


def test_decode_csv_of_a_wrong_arity_line_names_the_record(tmp_path):
    f = tmp_path / "d.csv"
    f.write_text("1,2\n3\n")
    with tf.Session() as s:
        q = _files_queue(s, [f])
        key, value = tf.TextLineReader().read(q)
        cols = tf.decode_csv(value, record_defaults=[[0], [0]])
        assert s.run(cols) == [1, 2]
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            s.run([key, *cols])
        assert "3" in str(info.value)


def test_tfrecord_reader_and_corrupt_record(tmp_path):
    path = tmp_path / "r.tfrecord"
    with tf.python_io.TFRecordWriter(str(path)) as w:
        for r in (b"one", b"two", b"three"):
            w.write(r)
    with tf.Session() as s:
        q = _files_queue(s, [path])
        keys, values = tf.TFRecordReader().read_up_to(q, 2)
        got = _read_all(s, [keys, values])
        assert [list(v) for _, v in got] == [[b"one", b"two"], [b"three"]]
        assert got[0][0][1] == f"{path}:19".encode()  # file:offset (12 + 3 + 4)
    data = bytearray(path.read_bytes())
    data[12 + 3 + 4 + 12] ^= 0xFF  # the second record's data
    path.write_bytes(bytes(data))
    with tf.Session() as s:
        q = _files_queue(s, [path])
        _, value = tf.TFRecordReader().read(q)
        assert s.run(value) == b"one"
        with pytest.raises(tf.errors.DataLossError, match=f"{path}.*offset 19"):
            s.run(value)


def test_whole_file_identity_and_fixed_length_readers(tmp_path):
    f = tmp_path / "w.bin"
    f.write_bytes(b"HH" + bytes(range(6)) + b"F")
    with tf.Session() as s:
        key, value = tf.WholeFileReader().read(_files_queue(s, [f]))
        assert s.run([key, value]) == [str(f).encode(), f.read_bytes()]
        k, v = tf.IdentityReader().read(_files_queue(s, ["work"]))
        assert s.run([k, v]) == [b"work", b"work"]
        reader = tf.FixedLengthRecordReader(3, header_bytes=2, footer_bytes=1)
        k, v = reader.read(_files_queue(s, [f]))
        got = _read_all(s, [k, tf.decode_raw(v, tf.uint8)])
        assert [list(x) for _, x in got] == [[0, 1, 2], [3, 4, 5]]
        assert got[1][0] == f"{f}:1".encode()


def test_a_reader_waits_for_file_names_fed_later(tmp_path):
    f = tmp_path / "late.txt"
    f.write_text("x\n")
    q = tf.FIFOQueue(2, tf.string)
    _, value = tf.TextLineReader().read(q)
    with tf.Session() as s:
        with pytest.raises(tf.errors.DeadlineExceededError, match="ReaderReadV2"):
            s.run(value, options=tf.RunOptions(timeout_in_ms=50))
        s.run(q.enqueue(str(f)))
        assert s.run(value) == b"x"


def test_reader_pipeline_with_runners_and_shuffle_batch(tmp_path):
    names = []
    for k in range(3):
        p = tmp_path / f"part{k}.csv"
        p.write_text("".join(f"{k * 10 + i},{i}\n" for i in range(10)))
        names.append(str(p))
    files = tf.train.string_input_producer(names, num_epochs=1, shuffle=False)
    _, line = tf.TextLineReader().read(files)
    a, b = tf.decode_csv(line, [[0], [0]])
    xa, _xb = tf.train.shuffle_batch(
        [a, b], 7, capacity=20, min_after_dequeue=5, seed=1, allow_smaller_final_batch=True
    )
    with tf.Session() as s:
        s.run(tf.local_variables_initializer())
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(s, coord)
        got = []
        try:
            while True:
                got.append(s.run(xa))
        except tf.errors.OutOfRangeError:
            pass
        coord.request_stop()
        coord.join(threads)
    values = np.concatenate(got)
    assert sorted(values) == [k * 10 + i for k in range(3) for i in range(10)]
