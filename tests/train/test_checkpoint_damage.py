"""Damaged and hostile checkpoints: every one is a DataLossError naming the file and the entry.

A table of broken ``.npz`` files -- cut short, not a zip, no or garbage
``__index__``, fields of the wrong types, npy headers claiming 10^12
elements, pickled objects -- each read by ``read_checkpoint``, by
``Saver.restore`` and by ``list_variables``; and garbled ``checkpoint`` state
files, which are ignored with a warning naming them, as TensorFlow does.
"""

from __future__ import annotations

import io
import json
import logging
import zipfile
from pathlib import Path

import numpy as np
import pytest

import flowbook as fb
from flowbook import train
from flowbook.framework.errors import DataLossError
from flowbook.train.checkpoint_reader import read_checkpoint
from flowbook.train.checkpoint_utils import write_checkpoint

W = np.arange(6, dtype=np.float32).reshape(2, 3)
GOOD_ENTRY = {"name": "W", "key": "t0", "dtype": "float32", "shape": [2, 3]}


def _index(doc) -> bytes:
    """The ``__index__`` member holding ``doc`` (JSON, or raw bytes as given)."""
    raw = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
    return _npy_of(np.frombuffer(raw, np.uint8))


def _npy_of(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, arr, allow_pickle=True)
    return buf.getvalue()


def _npy(descr: str, shape: tuple, data: bytes) -> bytes:
    """An npy member with a hand-written header (whatever it claims) and ``data``."""
    header = repr({"descr": descr, "fortran_order": False, "shape": shape}).encode()
    header += b" " * (63 - (len(header) + 10) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + data


def _doc(*entries) -> dict:
    return {"format": "flowbook-checkpoint", "version": 1, "variables": list(entries)}


def _archive(path, members: dict[str, bytes], compression=zipfile.ZIP_STORED) -> str:
    with zipfile.ZipFile(path, "w", compression) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return str(path)


def _valid(tmp_path) -> str:
    prefix = str(tmp_path / "model.ckpt")
    write_checkpoint(prefix, {"W": W, "b": np.ones(3, np.float32)}, write_version=1)
    return prefix + ".npz"


def _members(**extra) -> dict[str, bytes]:
    members = {"__index__.npy": _index(_doc(GOOD_ENTRY)), "t0.npy": _npy_of(W)}
    members.update(extra)
    return {k: v for k, v in members.items() if v is not None}


def _index_case(doc):
    return lambda tmp_path: _archive(tmp_path / "m.npz", _members(**{"__index__.npy": _index(doc)}))


def _entry_case(**fields):
    entry = {**GOOD_ENTRY, **fields}
    return _index_case(_doc({k: v for k, v in entry.items() if v is not ...}))


def _cut(fraction):
    def make(tmp_path):
        path = _valid(tmp_path)
        data = Path(path).read_bytes()
        Path(path).write_bytes(data[: int(len(data) * fraction)])
        return path

    return make


def _flip_data_byte(tmp_path):
    path = _valid(tmp_path)
    data = bytearray(Path(path).read_bytes())
    at = data.index(np.float32(5.0).tobytes())  # inside t0's data
    data[at] ^= 0xFF
    with open(path, "wb") as f:
        f.write(data)
    return path


def _bytes(raw):
    return lambda tmp_path: _archive_raw(tmp_path / "m.npz", raw)


def _archive_raw(path, raw: bytes) -> str:
    with open(path, "wb") as f:
        f.write(raw)
    return str(path)


IDX0 = "'__index__' (variable #0)"  # the entry an error in the index's first variable names
IDXW = "'__index__' (variable 'W')"
HUGE = (10**6, 10**6)  # 10^12 elements: numpy would try to allocate 4 TB
CASES = {
    # (make the file, entry the message names, words it says)
    "empty file": (_bytes(b""), None, "not a zip"),
    "not a zip": (_bytes(b"hello, this is not a checkpoint" * 10), None, "not a zip"),
    "cut to 90%": (_cut(0.9), None, ""),
    "cut to 50%": (_cut(0.5), None, ""),
    "cut to 10%": (_cut(0.1), None, ""),
    "a flipped data byte (CRC)": (_flip_data_byte, "'t0' (variable 'W')", "CRC"),
    "no __index__": (
        lambda p: _archive(p / "m.npz", _members(**{"__index__.npy": None})),
        "'__index__'",
        "no '__index__.npy'",
    ),
    "index not UTF-8": (_index_case(b"\xff\xfe{}"), "'__index__'", "UnicodeDecodeError"),
    "index not JSON": (_index_case(b"{variables: W}"), "'__index__'", "JSONDecodeError"),
    "index nested 100000 deep": (_index_case(b"[" * 100000), "'__index__'", "nested too deeply"),
    "index is a list": (_index_case([GOOD_ENTRY]), "'__index__'", "format 'list'"),
    "index of another format": (_index_case({"format": "npz"}), "'__index__'", "format 'npz'"),
    "index version from the future": (
        _index_case({**_doc(GOOD_ENTRY), "version": 99}),
        "'__index__'",
        "version 99",
    ),
    "index version a string": (
        _index_case({**_doc(GOOD_ENTRY), "version": "1"}),
        "'__index__'",
        "version '1'",
    ),
    "variables a dict": (
        _index_case({**_doc(), "variables": {"W": GOOD_ENTRY}}),
        "'__index__'",
        "not a list",
    ),
    "entry a list": (_index_case(_doc(["W", "t0"])), IDX0, "expected an object"),
    "name an int": (_entry_case(name=5), IDX0, "name is 5"),
    "name missing": (_entry_case(name=...), IDX0, "name is None"),
    "key missing": (_entry_case(key=...), IDXW, "key None"),
    "key names no array": (_entry_case(key="t9"), IDXW, "key 't9'"),
    "key is the index": (_entry_case(key="__index__"), IDXW, "key '__index__'"),
    "dtype unknown": (_entry_case(dtype="float99"), IDXW, "unknown dtype 'float99'"),
    "dtype a list": (_entry_case(dtype=["float32"]), IDXW, "unknown dtype"),
    "shape a string": (_entry_case(shape="2,3"), IDXW, "shape '2,3'"),
    "shape negative": (_entry_case(shape=[-2, 3]), IDXW, "shape [-2, 3]"),
    "shape of floats": (_entry_case(shape=[2.0, 3]), IDXW, "shape [2.0, 3]"),
    "shape disagrees": (_entry_case(shape=[3, 2]), "'t0' (variable 'W')", "index says float32"),
    "dtype disagrees": (_entry_case(dtype="int32"), "'t0' (variable 'W')", "index says int32"),
    "names twice": (
        _index_case(_doc(GOOD_ENTRY, {**GOOD_ENTRY, "key": "t0"})),
        "'__index__'",
        "more than once: ['W']",
    ),
    "npy header claims 10^12 elements": (
        lambda p: _archive(p / "m.npz", _members(**{"t0.npy": _npy("<f4", HUGE, b"\0" * 24)})),
        "'t0' (variable 'W')",
        "claims shape (1000000, 1000000) of float32 (4000000000000 bytes)",
    ),
    "npy header claims a 2^64-element dim": (
        lambda p: _archive(p / "m.npz", _members(**{"t0.npy": _npy("<f4", (2**64,), b"")})),
        "'t0' (variable 'W')",
        "unusable npy header",
    ),
    "npy header with 0 and a huge dim": (
        lambda p: _archive(p / "m.npz", _members(**{"t0.npy": _npy("<f4", (0, 2**61), b"")})),
        "'t0' (variable 'W')",
        "array is too big",
    ),
    "pickled object array": (
        lambda p: _archive(
            p / "m.npz", _members(**{"t0.npy": _npy_of(np.array([{"a": 1}, None], dtype=object))})
        ),
        "'t0' (variable 'W')",
        "bad npy header",
    ),
    "index stored as floats": (
        lambda p: _archive(p / "m.npz", _members(**{"__index__.npy": _npy_of(np.zeros(3))})),
        "'__index__'",
        "expected bytes, found float64",
    ),
    "npy magic missing": (
        lambda p: _archive(p / "m.npz", _members(**{"t0.npy": b"just some bytes"})),
        "'t0' (variable 'W')",
        "not an npy array",
    ),
    "npy header length beyond the limit": (
        lambda p: _archive(
            p / "m.npz",
            _members(**{"t0.npy": b"\x93NUMPY\x02\x00" + (2**31).to_bytes(4, "little")}),
        ),
        "'t0' (variable 'W')",
        "header claims 2147483648 bytes",
    ),
    "bzip2 member": (
        lambda p: _archive(p / "m.npz", _members(), compression=zipfile.ZIP_BZIP2),
        "'__index__'",
        "unsupported compression 12",
    ),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_damaged_checkpoints_raise_data_loss_naming_file_and_entry(tmp_path, case):
    make, entry, words = CASES[case]
    path = make(tmp_path)
    prefix = path[: -len(".npz")]
    with pytest.raises(DataLossError) as info:
        read_checkpoint(prefix)
    message = str(info.value)
    assert path in message
    assert entry is None or f"entry {entry}" in message, message
    assert words.lower() in message.lower(), message
    with pytest.raises(DataLossError):
        train.list_variables(prefix)


def test_restore_of_a_damaged_checkpoint_changes_nothing(tmp_path):
    w = fb.Variable(np.zeros((2, 3), np.float32), name="W")
    saver = train.Saver()
    path = CASES["npy header claims 10^12 elements"][0](tmp_path)
    with fb.Session() as sess:
        sess.run(w.initializer)
        with pytest.raises(DataLossError, match="4000000000000 bytes"):
            saver.restore(sess, path[: -len(".npz")])
        assert sess.run(w).tolist() == [[0.0] * 3] * 2


def test_valid_variants_still_read(tmp_path):
    """What numpy itself may write: compressed members, Fortran order, big-endian data."""
    doc = _doc(GOOD_ENTRY, {"name": "s", "key": "t1", "dtype": "string", "shape": [2]})
    members = {
        "__index__.npy": _index(doc),
        "t0.npy": _npy_of(np.asfortranarray(W.astype(">f4"))),
        "t1.npy": _npy_of(np.array([b"ab", b""])),
    }
    path = _archive(tmp_path / "m.npz", members, compression=zipfile.ZIP_DEFLATED)
    got = read_checkpoint(path[: -len(".npz")])
    np.testing.assert_array_equal(got["W"], W)
    assert got["W"].dtype == np.float32 and got["W"].dtype.isnative
    assert got["s"].tolist() == [b"ab", b""]


# ------------------------------------------------------- the state file
def test_state_file_not_utf8_is_ignored_with_a_warning_naming_it(tmp_path, caplog):
    """Was a bare UnicodeDecodeError from latest_checkpoint."""
    state = tmp_path / "checkpoint"
    state.write_bytes(b'model_checkpoint_path: "model.ckpt-\xff\xfe"\n')
    with caplog.at_level(logging.WARNING, logger="flowbook"):
        assert train.latest_checkpoint(str(tmp_path)) is None
        assert train.get_checkpoint_state(str(tmp_path)) is None
    assert str(state) in caplog.text
    assert "not UTF-8 text (byte 0xff at offset 35)" in caplog.text


@pytest.mark.parametrize(
    "text, words",
    [
        (b"\x00\x01\x02 garbage\n", "cannot parse"),
        (b'model_checkpoint_path: "a\\u0000b"\n', "NUL character"),
        (b"PK\x03\x04 a zip, not a state file\n", "cannot parse"),
    ],
)
def test_garbled_state_file_is_ignored_with_a_warning_naming_it(tmp_path, caplog, text, words):
    (tmp_path / "checkpoint").write_bytes(text)
    with caplog.at_level(logging.WARNING, logger="flowbook"):
        assert train.latest_checkpoint(str(tmp_path)) is None
    assert str(tmp_path / "checkpoint") in caplog.text and words in caplog.text


def test_state_file_naming_no_checkpoint_is_an_error_naming_it(tmp_path):
    (tmp_path / "checkpoint").write_text("last_preserved_timestamp: 1699999999.0\n")
    with pytest.raises(ValueError, match=f"{tmp_path / 'checkpoint'}: it names no"):
        train.latest_checkpoint(str(tmp_path))


def test_a_garbled_state_file_is_rewritten_by_the_next_save(tmp_path):
    (tmp_path / "checkpoint").write_bytes(b"\xff" * 100)
    fb.Variable(W, name="W")
    with fb.Session() as sess:
        sess.run(fb.global_variables_initializer())
        prefix = train.Saver().save(sess, str(tmp_path / "model.ckpt"), global_step=1)
    assert train.latest_checkpoint(str(tmp_path)) == prefix
