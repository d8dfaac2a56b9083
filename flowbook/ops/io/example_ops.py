"""``tf.parse_example`` / ``tf.parse_single_example``: ``tf.train.Example`` protos into tensors.

The ``Example`` messages are protobuf classes from the ``tfrecord`` package
(its ``example_pb2``: TensorFlow's ``example.proto`` and ``feature.proto``,
package ``tensorflow``), imported on first use; ``tf.train.Example`` and its
parts are those classes.

**ParseExample**(serialized, *dense_defaults): for a vector of serialized
Examples, one output per feature asked for, as TF's op lays them out:
for each ``VarLenFeature`` its indices (int64 ``[n, 2]``: example, position),
values (``[n]``) and dense shape (int64 ``[2]``: batch, longest list), then
for each ``FixedLenFeature`` a dense ``[batch, *shape]`` tensor.  flowbook has
no SparseTensor type, so a VarLenFeature comes back as the namedtuple
``SparseTensor(indices, values, dense_shape)`` of tensors (fetching it gives
the same namedtuple of arrays, as TF's ``SparseTensorValue``).  A missing
fixed-length feature takes its default, or is an error naming the key when
it has none; a list of the wrong length or kind is an error naming the key
and the example.  ``parse_single_example`` parses a scalar string: the batch
dimension is dropped from its outputs.

    >>> import flowbook as fb
    >>> ex = fb.train.Example(features=fb.train.Features(feature={
    ...     "x": fb.train.Feature(float_list=fb.train.FloatList(value=[1.5, 2.0]))}))
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     out = fb.parse_single_example(ex.SerializeToString(),
    ...                                   {"x": fb.FixedLenFeature([2], fb.float32)})
    ...     s.run(out["x"]).tolist()
    [1.5, 2.0]
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from flowbook.framework import dtypes
from flowbook.framework.errors import InvalidArgumentError
from flowbook.framework.registry import NOT_DIFFERENTIABLE, Out, op
from flowbook.framework.tensor import Tensor
from flowbook.framework.tensor_shape import Shape, as_shape
from flowbook.ops._builder import make, tensor
from flowbook.ops.array.shape_ops import reshape

__all__ = [
    "FixedLenFeature",
    "SparseTensor",
    "SparseTensorValue",
    "VarLenFeature",
    "parse_example",
    "parse_single_example",
]

_KINDS = {dtypes.float32: "float_list", dtypes.int64: "int64_list", dtypes.string: "bytes_list"}


class FixedLenFeature(NamedTuple):
    """A feature with a fixed number of values: parsed to a dense tensor of ``shape``."""

    shape: Any
    dtype: Any
    default_value: Any = None


class VarLenFeature(NamedTuple):
    """A feature with any number of values: parsed to a SparseTensor."""

    dtype: Any


class SparseTensor(NamedTuple):
    """A sparse tensor as three tensors (or, fetched, three arrays): TF's SparseTensor fields.

    >>> SparseTensor([[0, 1]], [7], [1, 2]).dense_shape
    [1, 2]
    """

    indices: Any
    values: Any
    dense_shape: Any


SparseTensorValue = SparseTensor  # what fetching a SparseTensor gives (TF's name)


def example_pb2() -> Any:
    """The ``Example`` protobuf module (``tfrecord``'s copy of TF's), imported on first use."""
    from tfrecord import example_pb2 as module  # lazy: protobuf is slow to import

    return module


def _check_dtype(key: str, dtype: dtypes.DType) -> dtypes.DType:
    if dtype not in _KINDS:
        raise ValueError(
            f"Feature {key!r}: dtype must be float32, int64 or string, got {dtype.name}"
        )
    return dtype


# ---------------------------------------------------------------------- the op
def _infer(
    serialized: Tensor,
    *dense_defaults: Tensor,
    sparse_keys: list,
    sparse_types: list,
    dense_keys: list,
    dense_types: list,
    dense_shapes: list,
) -> list[Out]:
    if serialized.dtype is not dtypes.string:
        raise TypeError(f"ParseExample: serialized must be strings, got {serialized.dtype.name}")
    batch = None if serialized._shape is None or not serialized._shape else serialized._shape[0]
    outs = [Out(dtypes.int64, (None, 2)) for _ in sparse_keys]
    outs += [Out(t, (None,)) for t in sparse_types]
    outs += [Out(dtypes.int64, (2,)) for _ in sparse_keys]
    outs += [Out(t, (batch, *s)) for t, s in zip(dense_types, dense_shapes)]
    return outs


def _parse_example(
    xp: Any,
    serialized: Any,
    *dense_defaults: Any,
    sparse_keys: list,
    sparse_types: list,
    dense_keys: list,
    dense_types: list,
    dense_shapes: list,
) -> Any:
    pb = example_pb2()
    records = np.asarray(serialized, dtype=object).reshape(-1)
    features = []
    for b, raw in enumerate(records):
        try:
            features.append(pb.Example.FromString(bytes(raw)).features.feature)
        except Exception as e:  # protobuf's DecodeError
            raise InvalidArgumentError(
                None, None, f"Could not parse example input {b}: {e}"
            ) from None
    outs: list[Any] = []
    sparse = [_sparse(key, t, features) for key, t in zip(sparse_keys, sparse_types)]
    outs += [s[0] for s in sparse] + [s[1] for s in sparse] + [s[2] for s in sparse]
    for key, t, shape, default in zip(dense_keys, dense_types, dense_shapes, dense_defaults):
        outs.append(_dense(key, t, tuple(shape), default, features))
    return outs[0] if len(outs) == 1 else tuple(outs)


op(
    "ParseExample",
    ("serialized", "*dense_defaults"),
    infer=_infer,
    attrs=("sparse_keys", "sparse_types", "dense_keys", "dense_types", "dense_shapes"),
    kernel=_parse_example,
    host_only=True,
    grad=NOT_DIFFERENTIABLE,
    attr_kinds={
        "sparse_keys": "list(string)",
        "dense_keys": "list(string)",
        "sparse_types": "list(type)",
        "dense_types": "list(type)",
        "dense_shapes": "list(shape)",
    },
)


def _values(feature: Any, key: str, t: dtypes.DType, b: int) -> list[Any]:
    kind = feature.WhichOneof("kind")
    if kind is None:
        return []
    if kind != _KINDS[t]:
        raise InvalidArgumentError(
            None,
            None,
            f"Name: <unknown>, Key: {key}, Index: {b}.  Data types don't match. "
            f"Expected type: {t.name}, but the feature holds a {kind}",
        )
    return list(getattr(feature, kind).value)


def _array(values: list[Any], t: dtypes.DType) -> np.ndarray:
    if t is dtypes.string:
        out = np.empty(len(values), dtype=object)
        out[:] = values
        return out
    return np.asarray(values, dtype=t.np)


def _sparse(key: str, t: dtypes.DType, features: list[Any]) -> tuple[Any, Any, Any]:
    indices, values, longest = [], [], 0
    for b, feature in enumerate(features):
        found = _values(feature[key], key, t, b) if key in feature else []
        indices += [(b, j) for j in range(len(found))]
        values += found
        longest = max(longest, len(found))
    index = np.asarray(indices, dtype=np.int64).reshape(-1, 2)
    return index, _array(values, t), np.asarray([len(features), longest], dtype=np.int64)


def _dense(key: str, t: dtypes.DType, shape: tuple, default: Any, features: list[Any]) -> Any:
    size = int(np.prod(shape))
    out = []
    for b, feature in enumerate(features):
        if key in feature:
            found = _values(feature[key], key, t, b)
            if len(found) != size:
                raise InvalidArgumentError(
                    None,
                    None,
                    f"Name: <unknown>, Key: {key}, Index: {b}.  Number of {t.name} "
                    f"values != expected.  Values size: {len(found)} but output shape: {list(shape)}",
                )
            out.append(_array(found, t).reshape(shape))
        elif np.size(default) == 0:
            raise InvalidArgumentError(
                None,
                None,
                f"Name: <unknown>, Feature: {key} (data type: {t.name}) is required "
                "but could not be found.",
            )
        else:
            out.append(
                np.broadcast_to(
                    np.asarray(default, dtype=object if t is dtypes.string else t.np), shape
                )
            )
    if not out:
        return np.empty((0, *shape), dtype=object if t is dtypes.string else t.np)
    return np.stack(out)


# ------------------------------------------------------------------ wrappers
def parse_example(
    serialized: Any, features: dict[str, Any], name: str | None = None, example_names: Any = None
) -> dict[str, Any]:
    """Parse a vector of serialized Examples into a dict of tensors (and SparseTensors).

    >>> import flowbook as fb
    >>> ex = fb.train.Example(features=fb.train.Features(feature={
    ...     "w": fb.train.Feature(bytes_list=fb.train.BytesList(value=[b"a", b"b"]))}))
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     w = parse_example([ex.SerializeToString()], {"w": VarLenFeature(fb.string)})["w"]
    ...     s.run(w).values.tolist()
    [b'a', b'b']
    """
    serialized = tensor(serialized, dtypes.string)
    sparse = sorted(k for k, f in features.items() if isinstance(f, VarLenFeature))
    dense = sorted(k for k, f in features.items() if isinstance(f, FixedLenFeature))
    other = sorted(set(features) - set(sparse) - set(dense))
    if other:
        raise ValueError(f"parse_example: unsupported feature kinds for {other}")
    dense_types = [_check_dtype(k, dtypes.as_dtype(features[k].dtype)) for k in dense]
    dense_shapes: list[Shape] = [as_shape(features[k].shape) for k in dense]
    defaults = []
    for k, t, shape in zip(dense, dense_types, dense_shapes):
        default = features[k].default_value
        value = (
            np.zeros(0) if default is None else np.broadcast_to(np.asarray(default), shape or ())
        )
        if t is dtypes.string and default is not None:
            value = np.asarray(value, dtype=object)
        defaults.append(tensor(value, t))
    attrs = {
        "sparse_keys": sparse,
        "sparse_types": [_check_dtype(k, dtypes.as_dtype(features[k].dtype)) for k in sparse],
        "dense_keys": dense, "dense_types": dense_types, "dense_shapes": dense_shapes,
    }  # fmt: skip
    op = make("ParseExample", [serialized, *defaults], attrs, name=name or "ParseExample")
    outs, n = list(op.outputs), len(sparse)
    result: dict[str, Any] = {}
    for j, k in enumerate(sparse):
        result[k] = SparseTensor(outs[j], outs[n + j], outs[2 * n + j])
    for j, k in enumerate(dense):
        result[k] = outs[3 * n + j]
    return result


def parse_single_example(
    serialized: Any, features: dict[str, Any], name: str | None = None, example_names: Any = None
) -> dict[str, Any]:
    """Parse one serialized Example (a scalar string): ``parse_example`` without the batch."""
    batch = reshape(tensor(serialized, dtypes.string), [1])
    parsed = parse_example(batch, features, name=name or "ParseSingleExample")
    out: dict[str, Any] = {}
    for k, v in parsed.items():
        if isinstance(v, SparseTensor):
            out[k] = SparseTensor(v.indices[:, 1:], v.values, v.dense_shape[1:])
        else:
            out[k] = reshape(v, [d if d is not None else -1 for d in v.shape.as_list()[1:]])
    return out
