"""A fuzzer for the checkpoint reader: any bytes end in the variables or in DataLossError.

Three sources of inputs, all drawn by hypothesis:

- **mutations** of real checkpoints (written by ``write_checkpoint``, plus a
  deflated one): flipped bytes, 32-bit fields overwritten with telling values
  (0, 2^31, 2^32-1), inserted and deleted runs, truncation;
- **member mutations**: the same edits inside one member (mostly its npy
  header or the index's JSON), zipped again so that its CRC is right and the
  damage reaches the parsers behind the zip layer;
- **structures**: zip archives built member by member, with an ``__index__``
  that is random JSON or a flowbook index with fields of random types, and
  npy members whose hand-written headers claim random dtypes (``object``
  included) and shapes (up to 10^18 elements) over data of a random length.

Each input is written to a file and read by ``read_checkpoint`` while
tracemalloc watches (numpy reports its array buffers to it): the read must
return or raise DataLossError, allocate at most what the file can justify
(``MAX_DEFLATE_RATIO`` x its size, plus a little), and finish within
``SLOW_S``.  A failing input is saved to ``test-output/fuzz-checkpoint/``;
keep it in ``tests/fixtures/checkpoint_fuzz/`` and
:func:`test_replay_kept_inputs` replays it ever after.

By default a run takes a few seconds; ``FLOWBOOK_FUZZ_EXAMPLES`` (shared by
every fuzzer, see ``fuzzing.py``) draws more examples, and
``FLOWBOOK_FUZZ_SECONDS=600`` fuzzes for ten minutes (fresh random examples
round after round).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import struct
import tempfile
import time
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flowbook.framework.errors import DataLossError
from flowbook.train.checkpoint_reader import MAX_DEFLATE_RATIO, read_checkpoint
from flowbook.train.checkpoint_utils import write_checkpoint
from tests.fuzzing import EXAMPLES

pytestmark = pytest.mark.fuzz

ROOT = Path(__file__).resolve().parents[2]
KEPT = ROOT / "tests" / "fixtures" / "checkpoint_fuzz"  # inputs that once failed: replayed
FOUND = ROOT / "test-output" / "fuzz-checkpoint"  # where a failing input is saved
FUZZ_SECONDS = float(os.environ.get("FLOWBOOK_FUZZ_SECONDS", "0"))
SLOW_S = 2.0  # CPU seconds: one read of a small input taking more is a failure
SETTINGS = settings(
    max_examples=max(60, EXAMPLES // 4),  # fuzzing.EXAMPLES: FLOWBOOK_FUZZ_EXAMPLES, as all fuzzers
    deadline=None,  # timed by check_input itself, tracemalloc makes the first calls slow
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# ------------------------------------------------------------------ the check
def check_input(data: bytes, directory: Path) -> None:
    """Read ``data`` as a checkpoint: variables or DataLossError, in bounded memory and time."""
    path = directory / "fuzz.npz"
    path.write_bytes(data)
    tracemalloc.start()
    started = time.thread_time()  # the reading thread's CPU time: a busy machine can't stretch it
    try:
        got = read_checkpoint(str(directory / "fuzz"))
    except DataLossError as e:
        assert str(path) in str(e)
    except BaseException:
        _save(data)
        raise
    else:
        assert all(isinstance(v, np.ndarray) for v in got.values())
        assert all(
            v.dtype != object or v.size == 0 or isinstance(v.flat[0], bytes) for v in got.values()
        )
    finally:
        elapsed = time.thread_time() - started
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    bound = MAX_DEFLATE_RATIO * len(data) + (4 << 20)
    if peak > bound or elapsed > SLOW_S:
        _save(data)
    assert peak <= bound, f"reading {len(data)} bytes allocated {peak} bytes"
    assert elapsed <= SLOW_S, f"reading {len(data)} bytes took {elapsed:.1f} s of CPU time"


def _save(data: bytes) -> None:
    FOUND.mkdir(parents=True, exist_ok=True)
    (FOUND / f"{hashlib.sha1(data).hexdigest()[:16]}.npz").write_bytes(data)


# --------------------------------------------------------------- the inputs
def _valid_checkpoints() -> list[bytes]:
    """Real checkpoints to mutate: several dtypes and shapes, one with deflated members."""
    values = {
        "W": np.arange(6, dtype=np.float32).reshape(2, 3),
        "step": np.array(7, np.int64),
        "mask": np.array([True, False]),
        "names": np.array([b"ab", b"c"], dtype=object),
        "empty": np.zeros((0, 3), np.float64),
    }
    out = []
    with tempfile.TemporaryDirectory() as d:
        for i, chosen in enumerate([["W"], ["step", "mask"], list(values)]):
            write_checkpoint(
                os.path.join(d, f"c{i}"), {k: values[k] for k in chosen}, write_version=1
            )
            out.append(Path(d, f"c{i}.npz").read_bytes())
    with zipfile.ZipFile(io.BytesIO(out[0])) as z:
        members = {n: z.read(n) for n in z.namelist()}
    out.append(_zip(members, zipfile.ZIP_DEFLATED))
    return out


def _zip(members: dict[str, bytes], compression: int = zipfile.ZIP_STORED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def _npy(descr: str, fortran: bool, shape: tuple, data: bytes, version: int = 1) -> bytes:
    header = repr({"descr": descr, "fortran_order": fortran, "shape": shape}).encode()
    size_bytes = 2 if version == 1 else 4
    header += b" " * (63 - (len(header) + 8 + size_bytes) % 64) + b"\n"
    return (
        b"\x93NUMPY"
        + bytes([version, 0])
        + len(header).to_bytes(size_bytes, "little")
        + header
        + data
    )


VALID = _valid_checkpoints()
TELLING = [0, 1, 0x7F, 0xFF, 0xFFFF, 2**31 - 1, 2**31, 2**32 - 1]

flip = st.tuples(st.just("flip"), st.integers(0, 10**6), st.integers(1, 255))
u32 = st.tuples(
    st.just("u32"), st.integers(0, 10**6), st.sampled_from(TELLING) | st.integers(0, 2**32 - 1)
)
insert = st.tuples(st.just("insert"), st.integers(0, 10**6), st.binary(min_size=1, max_size=16))
delete = st.tuples(st.just("delete"), st.integers(0, 10**6), st.integers(1, 64))
cut = st.tuples(st.just("cut"), st.integers(0, 10**6), st.just(0))


def _mutate(data: bytes, edits: list[tuple]) -> bytes:
    out = bytearray(data)
    for kind, where, what in edits:
        at = where % (len(out) + 1)
        if kind == "flip" and at < len(out):
            out[at] ^= what
        elif kind == "u32" and at + 4 <= len(out):
            out[at : at + 4] = struct.pack("<I", what)
        elif kind == "insert":
            out[at:at] = what
        elif kind == "delete":
            del out[at : at + what]
        elif kind == "cut":
            del out[at:]
    return bytes(out)


mutated = st.builds(
    _mutate,
    st.sampled_from(VALID),
    st.lists(st.one_of(flip, u32, insert, delete, cut), min_size=1, max_size=6),
)


def _mutate_member(data: bytes, which: int, edits: list[tuple], deflate: bool) -> bytes:
    """Mutate one member of a checkpoint and zip it again (so its CRC is right)."""
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        members = {n: z.read(n) for n in z.namelist()}
    name = sorted(members)[which % len(members)]
    members[name] = _mutate(members[name], edits)
    return _zip(members, zipfile.ZIP_DEFLATED if deflate else zipfile.ZIP_STORED)


member_mutated = st.builds(
    _mutate_member,
    st.sampled_from(VALID),
    st.integers(0, 10),
    st.lists(st.one_of(flip, u32, insert, delete, cut), min_size=1, max_size=4).map(
        lambda edits: [(k, w % 200, x) for k, w, x in edits]  # mostly in the npy header
    ),
    st.booleans(),
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
keys = st.sampled_from(["t0", "t0", "t0", "t1", "t2", "__index__", ""])
entry_fields = {
    "name": st.sampled_from(["W", "b", ""]) | st.text(max_size=4),
    "key": keys,
    "dtype": st.sampled_from(["float32", "float32", "int64", "bool", "string", "uint8", "x"]),
    "shape": st.lists(st.sampled_from([0, 1, 2, 3, 10**6, 2**62]), max_size=3),
}
entries = st.one_of(
    st.fixed_dictionaries(entry_fields),  # well typed: the damage is in the values
    st.fixed_dictionaries({}, optional={k: v | json_values for k, v in entry_fields.items()}),
)
indexes = st.builds(
    lambda entries, version: {
        "format": "flowbook-checkpoint",
        "version": version,
        "variables": entries,
    },
    st.lists(entries, max_size=2, unique_by=lambda e: str(e.get("name"))),
    st.sampled_from([1, 1, 1, 1, 1, 0, 2, "1", None]),
)
descrs = st.sampled_from(
    ["<f4", "<f4", ">f4", "|b1", "<i8", "|u1", "|S3", "|O", "<U2", "<f3", "V8", "|S0"]
) | st.text(max_size=6)
shapes = st.lists(st.sampled_from([0, 1, 2, 2, 3, 10**6, 2**31, 2**62, 10**18]), max_size=3).map(
    tuple
)
arrays = st.builds(
    _npy, descrs, st.booleans(), shapes, st.binary(max_size=64), st.sampled_from([1, 2, 3])
)


def _structure(index, raw_index: bytes | None, members: dict[str, bytes], deflate: bool) -> bytes:
    raw = raw_index if raw_index is not None else json.dumps(index).encode()
    doc = _npy("|u1", False, (len(raw),), raw)
    return _zip({"__index__.npy": doc, **members}, zipfile.ZIP_DEFLATED if deflate else 0)


structured = st.builds(
    _structure,
    indexes,
    st.none() | st.none() | st.binary(max_size=32),
    st.dictionaries(st.sampled_from(["t0.npy", "t1.npy", "t2"]), arrays, min_size=1, max_size=3),
    st.booleans(),
)


# ---------------------------------------------------------------- the tests
def _fuzz(strategy, directory: Path) -> None:
    @SETTINGS
    @given(strategy)
    def one_round(data: bytes) -> None:
        check_input(data, directory)

    deadline = time.monotonic() + FUZZ_SECONDS
    one_round()
    while time.monotonic() < deadline:
        one_round()


def test_mutated_checkpoints_read_or_raise_data_loss(tmp_path_factory):
    _fuzz(mutated, tmp_path_factory.mktemp("fuzz-mutated"))


def test_mutated_members_read_or_raise_data_loss(tmp_path_factory):
    _fuzz(member_mutated, tmp_path_factory.mktemp("fuzz-members"))


def test_random_structures_read_or_raise_data_loss(tmp_path_factory):
    _fuzz(structured, tmp_path_factory.mktemp("fuzz-structured"))


def test_the_unmutated_checkpoints_read(tmp_path):
    for data in VALID:
        (tmp_path / "c.npz").write_bytes(data)
        assert read_checkpoint(str(tmp_path / "c"))


@pytest.mark.parametrize("kept", sorted(KEPT.glob("*.npz")), ids=lambda p: p.name)
def test_replay_kept_inputs(kept, tmp_path):
    """Inputs that once failed (or that stand for a whole class of damage) stay fixed."""
    check_input(kept.read_bytes(), tmp_path)
