"""``tf.io``'s byte-level helpers: tensors and sparse tensors as TensorProto bytes, decompression,
file globbing.

Each is a host-side ``PyFunc`` over numpy values rather than an op type of
its own: the work is protobuf encoding, ``zlib`` or ``glob``, none of which a
device could do, so a dedicated kernel would add nothing but a name.

- ``serialize_tensor`` writes a value as the bytes of a ``TensorProto`` (the
  encoding :mod:`flowbook.graph_io.graph_def` uses for constants, byte for byte
  what TensorFlow writes), ``parse_tensor`` reads them back and checks the dtype.
- ``serialize_sparse`` is a ``[3]`` string vector: indices, values and dense
  shape, each serialized; ``serialize_many_sparse`` splits a sparse tensor along
  its first dimension into ``[N, 3]`` such rows, and ``deserialize_many_sparse``
  stacks rows back, the new first dimension prepended to every index and the
  dense shape the largest of each dimension.
- ``decode_compressed`` inflates ZLIB or GZIP strings element by element.
- ``matching_files`` globs one pattern or many: all matches, sorted, duplicates kept.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(parse_tensor(serialize_tensor([1.5, 2.5]), fb.float32)).tolist()
    [1.5, 2.5]
"""

from __future__ import annotations

import glob
import gzip
import zlib
from typing import Any

import numpy as np

from flowbook.framework import dtypes
from flowbook.framework.errors import InvalidArgumentError
from flowbook.framework.tensor import Tensor
from flowbook.graph_io import graph_def as gdef
from flowbook.graph_io.graph_def_import import tensor_value
from flowbook.ops._builder import tensor
from flowbook.ops.debugging.script_ops import py_func
from flowbook.ops.io.example_ops import SparseTensor

__all__ = [
    "decode_compressed",
    "deserialize_many_sparse",
    "matching_files",
    "parse_tensor",
    "serialize_many_sparse",
    "serialize_sparse",
    "serialize_tensor",
]


def _bytes(v: Any) -> bytes:
    return v if isinstance(v, bytes) else str(v).encode()


def _strings(values: list[bytes], shape: tuple | None = None) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out if shape is None else out.reshape(shape)


def to_proto_bytes(value: Any, dtype: dtypes.DType) -> bytes:
    """``value`` (as ``dtype``) serialized as a TensorProto."""
    from tensorboard.compat.proto import tensor_pb2  # lazy: tensorboard is slow to import

    arr = np.asarray(value, dtype=object if dtype is dtypes.string else dtype.np)
    if dtype is dtypes.string:
        arr = np.vectorize(_bytes, otypes=[object])(arr) if arr.size else arr
    proto = gdef._tensor_proto(np.array(arr, copy=True), tensor_pb2.TensorProto())
    proto.dtype = gdef.DT_ENUM[dtype.name]  # an empty string array has no dtype of its own
    return proto.SerializeToString()


def from_proto_bytes(raw: Any, dtype: dtypes.DType) -> np.ndarray:
    """The array a serialized TensorProto holds; an error when its dtype is not ``dtype``."""
    from tensorboard.compat.proto import tensor_pb2

    proto = tensor_pb2.TensorProto()
    try:
        proto.ParseFromString(_bytes(raw))
    except Exception:  # protobuf's DecodeError
        raise InvalidArgumentError(
            None, None, "Could not parse `serialized` as TensorProto"
        ) from None
    names = {v: k for k, v in gdef.DT_ENUM.items()}
    found = names.get(proto.dtype, str(proto.dtype))
    if found != dtype.name:
        raise InvalidArgumentError(
            None,
            None,
            f"Type mismatch between parsed tensor ({found}) and dtype ({dtype.name})",
        )
    value = np.asarray(tensor_value(proto, "parse_tensor"))
    if dtype is dtypes.string:
        value = np.vectorize(_bytes, otypes=[object])(value) if value.size else value
    return value


def serialize_tensor(tensor_: Any, name: str | None = None) -> Tensor:
    """A scalar string: ``tensor_``'s value as the bytes of a TensorProto.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     len(s.run(serialize_tensor(fb.constant([[1, 2], [3, 4]]))))
    30
    """
    t = tensor(tensor_)
    out = py_func(
        lambda v: _strings([to_proto_bytes(v, t.dtype)]).reshape(()),
        [t],
        dtypes.string,
        stateful=False,
        name=name or "SerializeTensor",
    )
    out.set_shape([])
    return out


def parse_tensor(serialized: Any, out_type: Any, name: str | None = None) -> Tensor:
    """The tensor a scalar string of TensorProto bytes holds; its dtype must be ``out_type``."""
    t = dtypes.as_dtype(out_type)
    return py_func(
        lambda raw: from_proto_bytes(np.asarray(raw).reshape(()).item(), t),
        [tensor(serialized, dtypes.string)],
        t,
        stateful=False,
        name=name or "ParseTensor",
    )


def _sparse_parts(sp_input: Any) -> tuple[Tensor, Tensor, Tensor]:
    indices, values, shape = sp_input
    return tensor(indices, dtypes.int64), tensor(values), tensor(shape, dtypes.int64)


def serialize_sparse(
    sp_input: Any, name: str | None = None, out_type: Any = dtypes.string
) -> Tensor:
    """A ``[3]`` string vector: the serialized indices, values and dense shape of ``sp_input``."""
    if dtypes.as_dtype(out_type) is not dtypes.string:
        raise TypeError(f"serialize_sparse: out_type must be string, got {out_type}")
    indices, values, shape = _sparse_parts(sp_input)
    vt = values.dtype

    def run(i: Any, v: Any, s: Any) -> np.ndarray:
        return _strings(
            [
                to_proto_bytes(i, dtypes.int64),
                to_proto_bytes(v, vt),
                to_proto_bytes(s, dtypes.int64),
            ]
        )

    out = py_func(
        run, [indices, values, shape], dtypes.string, stateful=False, name=name or "SerializeSparse"
    )
    out.set_shape([3])
    return out


def serialize_many_sparse(
    sp_input: Any, name: str | None = None, out_type: Any = dtypes.string
) -> Tensor:
    """``[N, 3]`` strings: each row the ``serialize_sparse`` of one slice along dimension 0."""
    if dtypes.as_dtype(out_type) is not dtypes.string:
        raise TypeError(f"serialize_many_sparse: out_type must be string, got {out_type}")
    indices, values, shape = _sparse_parts(sp_input)
    vt = values.dtype

    def run(i: Any, v: Any, s: Any) -> np.ndarray:
        i, s = np.asarray(i, np.int64).reshape(-1, len(s)), np.asarray(s, np.int64)
        if s.size < 2:
            raise InvalidArgumentError(
                None, None, f"Rank of input SparseTensor should be > 1, but saw rank: {s.size}"
            )
        rows = []
        for b in range(int(s[0])):
            keep = i[:, 0] == b
            rows += [
                to_proto_bytes(i[keep, 1:], dtypes.int64),
                to_proto_bytes(np.asarray(v)[keep], vt),
                to_proto_bytes(s[1:], dtypes.int64),
            ]
        return _strings(rows, (int(s[0]), 3))

    out = py_func(
        run,
        [indices, values, shape],
        dtypes.string,
        stateful=False,
        name=name or "SerializeManySparse",
    )
    out.set_shape([None, 3])
    return out


def deserialize_many_sparse(
    serialized_sparse: Any, dtype: Any, rank: int | None = None, name: str | None = None
) -> SparseTensor:
    """The SparseTensor an ``[N, 3]`` matrix of ``serialize_sparse`` rows stacks into.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     sp = SparseTensor([[0, 1], [1, 0]], [7, 8], [2, 3])
    ...     s.run(deserialize_many_sparse(serialize_many_sparse(sp), fb.int32)).dense_shape.tolist()
    [2, 3]
    """
    t = dtypes.as_dtype(dtype)

    def run(rows: Any) -> tuple:
        rows = np.asarray(rows, dtype=object)
        if rows.ndim != 2 or rows.shape[1] != 3:
            raise InvalidArgumentError(
                None, None, f"Serialized sparse should be a matrix [N, 3], got {list(rows.shape)}"
            )
        parts = [
            [
                from_proto_bytes(r[0], dtypes.int64),
                from_proto_bytes(r[1], t),
                from_proto_bytes(r[2], dtypes.int64),
            ]
            for r in rows
        ]
        if not parts:
            raise InvalidArgumentError(None, None, "Serialized sparse should have at least one row")
        width = max(p[2].size for p in parts)
        if any(p[2].size != width for p in parts):
            raise InvalidArgumentError(None, None, "Inconsistent shape across SparseTensors")
        index = np.concatenate(
            [
                np.hstack(
                    [np.full((p[0].reshape(-1, width).shape[0], 1), b), p[0].reshape(-1, width)]
                )
                for b, p in enumerate(parts)
            ]
        ).astype(np.int64)
        values = np.concatenate([p[1].reshape(-1) for p in parts])
        dense = np.concatenate([[len(parts)], np.max([p[2] for p in parts], axis=0)]).astype(
            np.int64
        )
        return index, values.astype(object if t is dtypes.string else t.np), dense

    outs = py_func(
        run,
        [tensor(serialized_sparse, dtypes.string)],
        [dtypes.int64, t, dtypes.int64],
        stateful=False,
        name=name or "DeserializeManySparse",
    )
    outs[0].set_shape([None, rank])
    outs[1].set_shape([None])
    outs[2].set_shape([rank])
    return SparseTensor(*outs)


_DECOMPRESS = {"": lambda b: b, "ZLIB": zlib.decompress, "GZIP": gzip.decompress}


def decode_compressed(bytes: Any, compression_type: str = "", name: str | None = None) -> Tensor:
    """Each string of ``bytes`` inflated (``"ZLIB"``, ``"GZIP"``; ``""`` leaves it as it is).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(decode_compressed(zlib.compress(b"hi"), "ZLIB"))
    b'hi'
    """
    if compression_type not in _DECOMPRESS:
        raise ValueError(f"Unsupported compression type: {compression_type!r}")
    inflate = _DECOMPRESS[compression_type]

    def run(v: Any) -> np.ndarray:
        v = np.asarray(v, dtype=object)
        try:
            flat = [inflate(_bytes(x)) for x in v.reshape(-1)]
        except (zlib.error, OSError, EOFError) as e:
            raise InvalidArgumentError(None, None, f"decode_compressed: {e}") from None
        return _strings(flat, v.shape)

    t = tensor(bytes, dtypes.string)
    out = py_func(run, [t], dtypes.string, stateful=False, name=name or "DecodeCompressed")
    out.set_shape(t.shape)
    return out


def matching_files(pattern: Any, name: str | None = None) -> Tensor:
    """A string vector: the files matching ``pattern`` (a glob, or a vector of them), sorted."""

    def run(p: Any) -> np.ndarray:
        found = sorted(
            f.encode()
            for q in np.atleast_1d(np.asarray(p, dtype=object))
            for f in glob.glob(_bytes(q).decode())
        )
        return _strings(found)

    out = py_func(
        run,
        [tensor(pattern, dtypes.string)],
        dtypes.string,
        stateful=True,
        name=name or "MatchingFiles",
    )
    out.set_shape([None])
    return out
