"""Fuzzing the TFRecord readers: damaged files give whole records, then ``DataLossError``.

Valid TFRecord files (plain, GZIP, ZLIB) are cut short, have bytes flipped
or spliced in -- in the record stream before compression or in the
compressed bytes -- and are read through every path: the
``tf_record_iterator``, ``tf.data.TFRecordDataset`` and ``TFRecordReader``.
Each read must end in a prefix of the records written (a flip the CRCs do
not catch is a 2**-32 chance) or in ``DataLossError``: never
``MemoryError``, ``ValueError``, ``zlib.error``, ``EOFError``, an
``OverflowError``...  The direct reader runs inside ``fuzzing.bounded`` (memory
and CPU time); the examples are sized by ``FLOWBOOK_FUZZ_EXAMPLES``.
"""

from __future__ import annotations

import struct
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import flowbook as tf
from flowbook.framework import errors
from flowbook.graph_io import record_files
from tests.fuzzing import FUZZ, bounded
from tests.graph_io.test_records_hardening import compress, framed, via_dataset, via_reader

pytestmark = pytest.mark.fuzz

FOLDER = Path(tempfile.mkdtemp(prefix="flowbook-fuzz-records-"))
RECORDS = st.lists(st.binary(max_size=64), max_size=5)


@st.composite
def damaged(draw: st.DrawFn) -> tuple[list[bytes], str, bytes]:
    records = draw(RECORDS)
    kind = draw(st.sampled_from(["", "GZIP", "ZLIB"]))
    stream = bytearray(b"".join(framed(r) for r in records))
    before = draw(st.booleans())  # damage the record stream, or the compressed bytes
    data = stream if before else bytearray(compress(bytes(stream), kind))
    for _ in range(draw(st.integers(1, 4))):
        how = draw(st.sampled_from(["cut", "flip", "splice", "length"]))
        at = draw(st.integers(0, max(0, len(data) - 1)))
        if how == "cut":
            del data[at:]
        elif how == "flip" and data:
            data[at] ^= draw(st.integers(1, 255))
        elif how == "splice":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        else:  # a well-checksummed record of any claimed length
            length = draw(st.sampled_from([0, 7, 2**31, 2**40, 2**62, 2**64 - 1]))
            data[at:at] = framed(b"", length)[:12]
    raw = compress(bytes(data), kind) if before else bytes(data)
    return records, kind, raw


def _direct(path: str, kind: str) -> list[bytes]:
    return [r for _, r in record_files.tfrecords(path, kind)]


def _iterator(path: str, kind: str) -> list[bytes]:
    out: list[bytes] = []
    try:
        for record in tf.python_io.tf_record_iterator(path, tf.python_io.TFRecordOptions(kind)):
            out.append(record)
    except errors.DataLossError:
        pass
    return out


def _outcome(read, path: str, kind: str) -> list[bytes] | str:
    try:
        return read(path, kind)
    except errors.DataLossError as e:
        assert path in str(e)
        return "DataLossError"


def _check(case: tuple[list[bytes], str, bytes], reads) -> None:
    records, kind, raw = case
    path = str(FOLDER / "fuzzed.tfrecord")
    Path(path).write_bytes(raw)
    for read in reads:
        got = _outcome(read, path, kind)
        if got != "DataLossError":
            assert got == records[: len(got)], (read.__name__, got, records)
    with bounded("TFRecord reading"):
        _outcome(_direct, path, kind)
        prefix = _iterator(path, kind)
    assert prefix == records[: len(prefix)]


@FUZZ
@given(damaged())
def test_damaged_record_files_direct(case):
    _check(case, [_direct])


@FUZZ
@given(damaged())
def test_damaged_record_files_every_path(case):
    _check(case, [via_dataset, via_reader])


def test_a_length_over_the_int64_range_is_refused(tmp_path):
    path = str(tmp_path / "max.tfrecord")
    header = struct.pack("<Q", 2**64 - 1)
    Path(path).write_bytes(framed(b"", 2**64 - 1)[:12] + b"x")
    assert header == framed(b"", 2**64 - 1)[:8]
    for kind in ("", "GZIP", "ZLIB"):
        Path(path).write_bytes(compress(framed(b"", 2**64 - 1)[:12] + b"x", kind))
        with pytest.raises(errors.DataLossError, match="18446744073709551615"):
            _direct(path, kind)
