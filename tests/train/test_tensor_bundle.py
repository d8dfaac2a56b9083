"""TensorFlow checkpoint V2 (tensor bundle): round trips, the byte layout, TF's own files, damage.

The layout tests rebuild the expected bytes from the format's description
(varints, block entries, trailers, footer) independently of the writer; the
fixture ``tests/fixtures/tf_checkpoint_v2`` was written by TensorFlow itself.
"""

from __future__ import annotations

import os
import shutil
import struct
from pathlib import Path

import google_crc32c
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tensorboard.compat.proto import types_pb2

from flowbook.framework.errors import DataLossError, NotFoundError, UnimplementedError
from flowbook.train import tensor_bundle as tb
from tests.fuzzing import FIXTURES, FUZZ, bounded

TF_FIXTURE = FIXTURES / "tf_checkpoint_v2"
NUMERIC = [
    "float16",
    "float32",
    "float64",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "complex64",
    "complex128",
]


def _masked(data: bytes) -> int:
    crc = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _roundtrip(tmp_path: Path, tensors: dict) -> dict[str, np.ndarray]:
    prefix = str(tmp_path / "ckpt")
    tb.write_bundle(prefix, tensors)
    r = tb.read_bundle(prefix)
    assert r.keys() == sorted(tensors, key=lambda k: k.encode())
    return {k: r.get(k) for k in r}


def _assert_same(got: np.ndarray, want: np.ndarray) -> None:
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


# ------------------------------------------------------------------ round trips
@pytest.mark.parametrize("dtype", [*NUMERIC, "bool"])
def test_round_trip_every_dtype(tmp_path: Path, dtype: str) -> None:
    rng = np.random.default_rng(1)
    values = {
        "m": (rng.standard_normal((3, 4)) * 50).astype(dtype),
        "scalar": np.array(5, dtype),
        "empty": np.zeros((0, 3), dtype),
        "fortran": np.asfortranarray((rng.standard_normal((2, 5)) * 9).astype(dtype)),
    }
    if dtype.startswith("complex"):
        values["m"] = values["m"] + 1j * values["m"][::-1]
    got = _roundtrip(tmp_path, values)
    for k, v in values.items():
        _assert_same(got[k], v)
    assert tb.read_bundle(str(tmp_path / "ckpt")).dtype("m").name == dtype


def test_round_trip_big_endian_input(tmp_path: Path) -> None:
    x = np.arange(5, dtype=">i4")
    got = _roundtrip(tmp_path, {"x": x})["x"]
    assert got.dtype == np.int32 and got.tolist() == [0, 1, 2, 3, 4]
    assert Path(tb.data_filename(str(tmp_path / "ckpt"))).read_bytes() == x.astype("<i4").tobytes()


def test_round_trip_strings(tmp_path: Path) -> None:
    values = {
        "s": np.array([[b"a", b""], [b"\x00\xff", b"x" * 300]], dtype=object),
        "text": np.array(["caf\u00e9", "b"]),
        "empty": np.zeros((0, 2), dtype=object),
        "one": np.array(b"scalar", dtype=object),
    }
    got = _roundtrip(tmp_path, values)
    _assert_same(got["s"], values["s"])
    assert got["text"].tolist() == ["caf\u00e9".encode(), b"b"]
    assert got["empty"].shape == (0, 2) and got["one"].shape == () and got["one"][()] == b"scalar"


def test_many_keys_span_restart_points_and_blocks(tmp_path: Path) -> None:
    values = {f"layer_{i:03d}/kernel/Adam_1": np.full(i % 5, i, np.int32) for i in range(300)}
    got = _roundtrip(tmp_path, values)
    for k, v in values.items():
        _assert_same(got[k], v)
    index = Path(f"{tmp_path}/ckpt.index").read_bytes()
    assert len(index) > 2 * tb.BLOCK_SIZE
    pos = len(index) - tb.FOOTER_SIZE  # the footer: metaindex handle, index handle
    for _ in range(2):  # skip the metaindex handle's offset and size
        _, pos = tb._read_varint(index, pos, len(index))
    off, pos = tb._read_varint(index, pos, len(index))
    size, _ = tb._read_varint(index, pos, len(index))
    blocks = tb._parse_block(index, off, off + size)
    assert len(blocks) >= 3  # several data blocks
    first_off, pos = tb._read_varint(blocks[0][1], 0, 10)
    first_size, _ = tb._read_varint(blocks[0][1], pos, 20)
    (restarts,) = struct.unpack_from("<I", index, first_off + first_size - 4)
    assert restarts >= 2  # a restart point every 16 keys


def test_writer_rejects_bad_names_and_dtypes(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="non-empty"):
        tb.write_bundle(str(tmp_path / "c"), {"": np.zeros(1)})
    with pytest.raises(UnimplementedError, match="datetime64"):
        tb.write_bundle(str(tmp_path / "c"), {"t": np.zeros(1, "datetime64[s]")})


def test_missing_checkpoint_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError):
        tb.read_bundle(str(tmp_path / "nothing"))
    tb.write_bundle(str(tmp_path / "c"), {"a": np.zeros(1)})
    with pytest.raises(NotFoundError):
        tb.read_bundle(str(tmp_path / "c")).get("b")


# ------------------------------------------------------------------ the byte layout
def test_exact_layout_of_a_tiny_bundle(tmp_path: Path) -> None:
    prefix = str(tmp_path / "tiny")
    tb.write_bundle(prefix, {"a": np.float32(1.0)})
    data = Path(f"{prefix}.data-00000-of-00001").read_bytes()
    assert data == struct.pack("<f", 1.0)
    index = Path(f"{prefix}.index").read_bytes()
    assert index[-8:] == bytes.fromhex("57fb808b247547db")  # 0xdb4775248b80fb57 little-endian
    header = tb.BundleHeaderProto(num_shards=1)
    header.version.producer = 1
    entry = tb.BundleEntryProto(dtype=types_pb2.DT_FLOAT, offset=0, size=4, crc32c=_masked(data))
    entry.shape.SetInParent()
    h, e = header.SerializeToString(), entry.SerializeToString()
    block = bytes([0, 0, len(h)]) + h + bytes([0, 1, len(e)]) + b"a" + e + struct.pack("<II", 0, 1)
    assert index[: len(block)] == block
    assert index[len(block)] == 0  # no compression
    assert struct.unpack_from("<I", index, len(block) + 1)[0] == _masked(block + b"\x00")
    meta = struct.pack("<II", 0, 1)  # an empty block: one restart point at 0
    at = len(block) + 5
    assert index[at : at + 8] == meta
    assert struct.unpack_from("<I", index, at + 9)[0] == _masked(meta + b"\x00")
    index_at = at + 13
    handle = bytes([0, len(block)])
    index_block = bytes([0, 1, len(handle)]) + b"a" + handle + struct.pack("<II", 0, 1)
    assert index[index_at : index_at + len(index_block)] == index_block
    footer = bytes([at, 8, index_at, len(index_block)]).ljust(40, b"\x00")
    assert index[-48:-8] == footer
    assert len(index) == index_at + len(index_block) + 5 + 48
    parsed = tb.BundleHeaderProto.FromString(h)
    assert (parsed.num_shards, parsed.endianness, parsed.version.producer) == (1, 0, 1)


def test_masked_crc_matches_tfrecord() -> None:
    assert tb.masked_crc32c(b"abc") == 0x21F1576E == _masked(b"abc")


# ------------------------------------------------------------------ TensorFlow's own files
def test_reads_a_checkpoint_tensorflow_wrote() -> None:
    r = tb.read_bundle(str(TF_FIXTURE / "model.ckpt-3"))
    assert len(r.keys()) == 45
    _assert_same(r.get("weights"), np.arange(6, dtype=np.float32).reshape(2, 3) / 4)
    _assert_same(r.get("global_step"), np.array(42, np.int64))
    _assert_same(r.get("flags"), np.array([True, False, True]))
    _assert_same(r.get("scalar_f"), np.array(-1.5, np.float32))
    names = np.array([[b"hello", b""], [b"tf", b"x" * 200]], dtype=object)
    _assert_same(r.get("names"), names)
    for i in range(40):
        _assert_same(r.get(f"layer_{i:02d}/bias"), np.array(i * 7 - 100, np.int32))
    assert r.dtype("names").name == "string" and r.shape("weights") == (2, 3)


def test_rewriting_tensorflows_checkpoint_gives_its_data_file(tmp_path: Path) -> None:
    r = tb.read_bundle(str(TF_FIXTURE / "model.ckpt-3"))
    tb.write_bundle(str(tmp_path / "again"), {k: r.get(k) for k in r})
    ours = Path(f"{tmp_path}/again.data-00000-of-00001").read_bytes()
    assert ours == (TF_FIXTURE / "model.ckpt-3.data-00000-of-00001").read_bytes()


# ------------------------------------------------------------------ damage
@pytest.fixture
def bundle(tmp_path: Path) -> str:
    prefix = str(tmp_path / "ckpt")
    values = {f"v{i:02d}": np.arange(i, dtype=np.float32) for i in range(20)}
    values["z"] = np.array([b"abc", b"de"], dtype=object)  # last in the data file
    tb.write_bundle(prefix, values)
    return prefix


def _read_all(prefix: str) -> None:
    r = tb.read_bundle(prefix)
    for k in r:
        r.get(k)


def _damage(path: str, edit) -> None:
    p = Path(path)
    p.write_bytes(edit(bytearray(p.read_bytes())))


def _flip(at: int):
    def edit(b: bytearray) -> bytes:
        b[at] ^= 0x40
        return bytes(b)

    return edit


@pytest.mark.parametrize(
    ("what", "edit"),
    [
        ("truncated", lambda b: bytes(b[: len(b) // 2])),
        ("empty", lambda b: b""),
        ("flipped block byte", _flip(5)),
        ("wrong magic", _flip(-1)),
        ("flipped handle", _flip(-48)),
    ],
)
def test_damaged_index_is_data_loss(bundle: str, what: str, edit) -> None:
    _damage(f"{bundle}.index", edit)
    with pytest.raises(DataLossError, match=f"{bundle}.index".replace(".", r"\.")):
        tb.read_bundle(bundle)


def test_short_data_file_names_file_and_entry(bundle: str) -> None:
    data = tb.data_filename(bundle)
    _damage(data, lambda b: bytes(b[:-3]))
    r = tb.read_bundle(bundle)
    with pytest.raises(DataLossError, match=r"data-00000-of-00001, entry 'z'"):
        r.get("z")
    r.get("v00")


def test_flipped_data_byte_fails_crc(bundle: str) -> None:
    _damage(tb.data_filename(bundle), _flip(10))
    with pytest.raises(DataLossError, match="CRC-32C"):
        _read_all(bundle)


def test_flipped_string_byte_fails_crc(bundle: str) -> None:
    _damage(tb.data_filename(bundle), _flip(-1))
    with pytest.raises(DataLossError, match=r"entry 'z'.*CRC-32C"):
        tb.read_bundle(bundle).get("z")


def _hostile_index(prefix: str, entry: object) -> None:
    header = tb.BundleHeaderProto(num_shards=1)
    header.version.producer = 1
    items = [(b"", header.SerializeToString()), (b"x", entry.SerializeToString())]
    Path(f"{prefix}.index").write_bytes(tb.build_table(items))
    Path(tb.data_filename(prefix)).write_bytes(b"\x00" * 64)


def _entry(dims: list[int], size: int, dtype: int = types_pb2.DT_FLOAT) -> object:
    e = tb.BundleEntryProto(dtype=dtype, offset=0, size=size)
    e.shape.dim.add().size = 0  # replaced below; makes the shape present
    del e.shape.dim[:]
    for d in dims:
        e.shape.dim.add().size = d
    return e


def test_huge_shape_with_a_small_size_is_data_loss(tmp_path: Path) -> None:
    prefix = str(tmp_path / "h")
    _hostile_index(prefix, _entry([2**40, 2**40], 16))
    with pytest.raises(DataLossError, match=r"h\.index, entry 'x'.*bytes"):
        tb.read_bundle(prefix)


def test_huge_shape_with_its_size_is_data_loss_before_allocating(tmp_path: Path) -> None:
    prefix = str(tmp_path / "h")
    _hostile_index(prefix, _entry([2**20, 2**20], 4 * 2**40))
    with bounded("huge entry"), pytest.raises(DataLossError, match=r"entry 'x'.*the file has 64"):
        tb.read_bundle(prefix).get("x")


@pytest.mark.parametrize(
    "entry",
    [
        _entry([-1], 4),
        _entry([2], 8, dtype=999),
        _entry([1] * 40, 4),
        _entry([10**6], 10**6, dtype=types_pb2.DT_STRING),
        tb.BundleEntryProto(dtype=types_pb2.DT_FLOAT, offset=-5, size=0),
        tb.BundleEntryProto(dtype=types_pb2.DT_FLOAT, shard_id=3, size=4),
    ],
)
def test_hostile_entries_are_data_loss(tmp_path: Path, entry: object) -> None:
    prefix = str(tmp_path / "h")
    _hostile_index(prefix, entry)
    with pytest.raises(DataLossError, match="entry 'x'"):
        tb.read_bundle(prefix).get("x")


def test_unparseable_proto_and_missing_header(tmp_path: Path) -> None:
    prefix = str(tmp_path / "p")
    Path(f"{prefix}.index").write_bytes(tb.build_table([(b"", b"\xff\xff\xff")]))
    with pytest.raises(DataLossError, match=r"p\.index, entry ''"):
        tb.read_bundle(prefix)
    Path(f"{prefix}.index").write_bytes(tb.build_table([(b"a", b"")]))
    with pytest.raises(DataLossError, match="no header"):
        tb.read_bundle(prefix)


def test_tensorflow_dtype_flowbook_lacks_is_unimplemented(tmp_path: Path) -> None:
    prefix = str(tmp_path / "b")
    _hostile_index(prefix, _entry([2], 4, dtype=types_pb2.DT_BFLOAT16))
    r = tb.read_bundle(prefix)
    assert r.keys() == ["x"]
    with pytest.raises(UnimplementedError, match="DT_BFLOAT16"):
        r.get("x")


# ------------------------------------------------------------------ fuzzing
_EDITS = st.lists(
    st.tuples(
        st.sampled_from(["flip", "set", "cut"]), st.integers(0, 1 << 20), st.integers(0, 255)
    ),
    min_size=1,
    max_size=4,
)


def _apply(data: bytes, edits: list[tuple[str, int, int]]) -> bytes:
    b = bytearray(data)
    for kind, where, value in edits:
        if not b:
            break
        at = where % len(b)
        if kind == "flip":
            b[at] ^= 1 << (value % 8)
        elif kind == "set":
            b[at] = value
        else:
            del b[at:]
    return bytes(b)


def _check(prefix: str, expected: dict[str, np.ndarray] | None, allowed: tuple) -> None:
    """Read every tensor of ``prefix``: the expected values, or one of the ``allowed`` errors."""
    with bounded(prefix):
        try:
            r = tb.read_bundle(prefix)
            for k in r:
                got = r.get(k)
                if expected is not None:  # the index is CRC-protected: only data can change
                    _assert_same(got, expected[k])
        except allowed:
            pass


@pytest.fixture(scope="module")
def valid(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, np.ndarray]]:
    prefix = str(tmp_path_factory.mktemp("fuzz") / "ckpt")
    values = {f"w{i:02d}": np.arange(i % 7, dtype=np.int16) for i in range(40)}
    values["s"] = np.array([b"x", b"yz", b""], dtype=object)
    values["b"] = np.array([True, False])
    tb.write_bundle(prefix, values)
    return prefix, values


@FUZZ
@given(which=st.sampled_from(["index", "data"]), edits=_EDITS)
def test_fuzz_byte_edits(
    valid: tuple[str, dict[str, np.ndarray]],
    tmp_path_factory: pytest.TempPathFactory,
    which: str,
    edits: list,
) -> None:
    src, values = valid
    prefix = str(tmp_path_factory.mktemp("edit") / "ckpt")
    shutil.copy(f"{src}.index", f"{prefix}.index")
    shutil.copy(tb.data_filename(src), tb.data_filename(prefix))
    target = f"{prefix}.index" if which == "index" else tb.data_filename(prefix)
    _damage(target, lambda b: _apply(bytes(b), edits))
    _check(prefix, values, (DataLossError,))


@FUZZ
@given(entry=st.integers(0, 42), edits=_EDITS)
def test_fuzz_entry_protos_behind_valid_crcs(
    valid: tuple[str, dict[str, np.ndarray]],
    tmp_path_factory: pytest.TempPathFactory,
    entry: int,
    edits: list,
) -> None:
    src, _ = valid
    items = tb._Table(Path(f"{src}.index").read_bytes()).items
    key, value = items[entry % len(items)]
    items[entry % len(items)] = (key, _apply(value, edits) if value else b"")
    prefix = str(tmp_path_factory.mktemp("proto") / "ckpt")
    Path(f"{prefix}.index").write_bytes(tb.build_table(items))
    shutil.copy(tb.data_filename(src), tb.data_filename(prefix))
    # An edited entry may be a valid one (another shape of the same bytes), name a
    # TensorFlow dtype flowbook lacks (bfloat16...) or carry slices: UnimplementedError.
    _check(prefix, None, (DataLossError, UnimplementedError))


def test_data_path_layout() -> None:
    assert tb.data_filename("a/b", 1, 3) == "a/b.data-00001-of-00003"
    assert tb.index_filename("a/b") == os.path.join("a", "b.index")
