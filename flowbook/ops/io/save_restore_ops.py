"""The ops of TensorFlow's Saver graph: ``SaveV2``, ``RestoreV2``, ``MergeV2Checkpoints``,
``ShardedFilename``, ``ShardedFilespec`` and ``StaticRegexFullMatch``.

A TF1 ``Saver`` builds its saving and restoring into the graph: a filename
tensor (``save/Const``), ``SaveV2(prefix, tensor_names, shape_and_slices,
*tensors)`` writing one checkpoint (bundle) of format V2, ``RestoreV2(prefix,
tensor_names, shape_and_slices)`` reading tensors back (one output per entry
of its ``dtypes`` attr) and ``Assign`` ops from those.  A sharded Saver (the
SavedModel builder's) writes each shard to a temporary prefix made by
``StringJoin``, ``ShardedFilename`` and ``StaticRegexFullMatch``, then
``MergeV2Checkpoints`` joins the shards into the final prefix.  These ops
make such a graph, imported from a MetaGraph, run in flowbook.

The bundle format itself is read and written by ``flowbook.train.tensor_bundle``,
a layer above the ops: it lends its ``read_bundle`` and ``write_bundle`` through
:data:`BUNDLE_IO` when it is imported (``flowbook.train`` does so), which these
kernels call.  Only whole tensors are saved and restored: a non-empty
``shape_and_slices`` entry (a partitioned variable's slice) is an
``UnimplementedError``.

    >>> from flowbook.framework.registry import OPS
    >>> OPS["ShardedFilename"].kernel(None, b"ckpt/part", 1, 4)
    b'ckpt/part-00001-of-00004'
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from typing import Any

import numpy as np

from flowbook.framework import dtypes
from flowbook.framework.errors import InvalidArgumentError, NotFoundError, UnimplementedError
from flowbook.framework.registry import NOT_DIFFERENTIABLE, Out, op
from flowbook.framework.tensor import Tensor
from flowbook.ops.strings import regex

__all__ = ["BUNDLE_IO", "lend_bundle_io"]

# {"read": read_bundle(prefix) -> reader, "write": write_bundle(prefix, {name: array})},
# lent by flowbook.train.tensor_bundle's user (flowbook.train) when it is imported
BUNDLE_IO: dict[str, Callable[..., Any]] = {}
_STATE = {"stateful": True, "host_only": True, "grad": NOT_DIFFERENTIABLE, "type_attrs": {}}
_PURE = {"host_only": True, "grad": NOT_DIFFERENTIABLE, "type_attrs": {}}


def lend_bundle_io(read: Callable[..., Any], write: Callable[..., Any]) -> None:
    """Give the kernels the bundle reader and writer (``flowbook.train`` calls it)."""
    BUNDLE_IO["read"] = read
    BUNDLE_IO["write"] = write


def _bundle(kind: str) -> Callable[..., Any]:
    fn = BUNDLE_IO.get(kind)
    if fn is None:
        raise RuntimeError(
            "the checkpoint ops need flowbook.train (import flowbook.train, or use tf.train)"
        )
    return fn


def _text(v: Any) -> str:
    v = v.item() if isinstance(v, np.ndarray) else v
    return v.decode("utf-8") if isinstance(v, bytes) else str(v)


def _texts(v: Any) -> list[str]:
    return [_text(x) for x in np.asarray(v, dtype=object).reshape(-1)]


def _check_names(op_type: str, names: list[str], slices: list[str], n: int) -> None:
    if len(names) != n or len(slices) != n:
        raise InvalidArgumentError(
            None,
            None,
            f"{op_type}: {len(names)} tensor names and {len(slices)} shape_and_slices "
            f"for {n} tensors",
        )
    sliced = [name for name, s in zip(names, slices) if s]
    if sliced:
        raise UnimplementedError(
            None, None, f"{op_type}: saving or restoring slices is not supported ({sliced})"
        )


# ------------------------------------------------------------------ SaveV2
def _save_infer(
    prefix: Tensor, tensor_names: Tensor, shape_and_slices: Tensor, *tensors: Tensor, dtypes: Any
) -> list[Out]:
    return []


def _save_v2(
    xp: Any, prefix: Any, tensor_names: Any, shape_and_slices: Any, *tensors: Any, dtypes: Any
) -> tuple:
    names, slices = _texts(tensor_names), _texts(shape_and_slices)
    _check_names("SaveV2", names, slices, len(tensors))
    _bundle("write")(_text(prefix), {n: np.asarray(t) for n, t in zip(names, tensors)})
    return ()


op(
    "SaveV2",
    ("prefix", "tensor_names", "shape_and_slices", "*tensors"),
    ("dtypes",),
    _save_infer,
    _save_v2,
    num_outputs=0,
    attr_kinds={"dtypes": "list(type)"},
    **_STATE,
)


# --------------------------------------------------------------- RestoreV2
def _restore_infer(
    prefix: Tensor, tensor_names: Tensor, shape_and_slices: Tensor, dtypes: Any
) -> list[Out]:
    return [Out(d, None) for d in dtypes]


def _restore_v2(xp: Any, prefix: Any, tensor_names: Any, shape_and_slices: Any, dtypes: Any) -> Any:
    names, slices = _texts(tensor_names), _texts(shape_and_slices)
    _check_names("RestoreV2", names, slices, len(dtypes))
    path = _text(prefix)
    reader = _bundle("read")(path)
    out = []
    for name, want in zip(names, dtypes):
        if name not in reader:
            raise NotFoundError(None, None, f"Key {name} not found in checkpoint {path}")
        got = reader.dtype(name)
        if got.name != want.name:
            raise InvalidArgumentError(
                None,
                None,
                f"tensor '{name}' of checkpoint {path} is {got.name}, the graph expects "
                f"{want.name}",
            )
        out.append(reader.get(name))
    return out[0] if len(out) == 1 else tuple(out)


op(
    "RestoreV2",
    ("prefix", "tensor_names", "shape_and_slices"),
    ("dtypes",),
    _restore_infer,
    _restore_v2,
    num_outputs=-1,
    attr_kinds={"dtypes": "list(type)"},
    **_STATE,
)


# ------------------------------------------------------ MergeV2Checkpoints
def _merge_infer(
    checkpoint_prefixes: Tensor,
    destination_prefix: Tensor,
    delete_old_dirs: bool = True,
    allow_missing_files: bool = False,
) -> list[Out]:
    return []


def _merge_v2(
    xp: Any,
    checkpoint_prefixes: Any,
    destination_prefix: Any,
    delete_old_dirs: bool = True,
    allow_missing_files: bool = False,
) -> tuple:
    merged: dict[str, np.ndarray] = {}
    sources = _texts(checkpoint_prefixes)
    for prefix in sources:
        reader = _bundle("read")(prefix)
        for name in reader:
            merged[name] = reader.get(name)
    _bundle("write")(_text(destination_prefix), merged)
    for prefix in sources:
        folder = os.path.dirname(prefix)
        for path in (f"{prefix}.index", *_data_files(prefix)):
            if os.path.exists(path):
                os.remove(path)
        if delete_old_dirs and folder and os.path.isdir(folder) and not os.listdir(folder):
            shutil.rmtree(folder, ignore_errors=True)
    return ()


def _data_files(prefix: str) -> list[str]:
    folder, base = os.path.split(prefix)
    pattern = re.compile(re.escape(base) + r"\.data-\d{5}-of-\d{5}$")
    return [os.path.join(folder, f) for f in os.listdir(folder or ".") if pattern.match(f)]


op(
    "MergeV2Checkpoints",
    ("checkpoint_prefixes", "destination_prefix"),
    ("delete_old_dirs", "allow_missing_files"),
    _merge_infer,
    _merge_v2,
    num_outputs=0,
    attr_kinds={"delete_old_dirs": "bool", "allow_missing_files": "bool"},
    tf_implicit={"allow_missing_files": False},
    **_STATE,
)


# ------------------------------------------------------------ file names
def _string_scalar(*inputs: Tensor, **attrs: Any) -> Out:
    return Out(dtypes.string, ())


def _sharded_filename(xp: Any, basename: Any, shard: Any, num_shards: Any) -> bytes:
    return f"{_text(basename)}-{int(shard):05d}-of-{int(num_shards):05d}".encode()


def _sharded_filespec(xp: Any, basename: Any, num_shards: Any) -> bytes:
    return f"{_text(basename)}-?????-of-{int(num_shards):05d}".encode()


op(
    "ShardedFilename",
    ("basename", "shard", "num_shards"),
    (),
    _string_scalar,
    _sharded_filename,
    **_PURE,
)
op("ShardedFilespec", ("basename", "num_shards"), (), _string_scalar, _sharded_filespec, **_PURE)


def _regex_infer(input: Tensor, pattern: str) -> Out:
    return Out(dtypes.bool, input._shape)


def _static_regex_full_match(xp: Any, input: Any, pattern: str) -> Any:
    rx = regex.compiled("StaticRegexFullMatch", pattern)  # RE2, as every regex op
    flat = [
        regex.full_match(rx, _text(x).encode("utf-8"))
        for x in np.asarray(input, object).reshape(-1)
    ]
    return np.array(flat, dtype=bool).reshape(np.shape(input))


op(
    "StaticRegexFullMatch",
    ("input",),
    ("pattern",),
    _regex_infer,
    _static_regex_full_match,
    attr_kinds={"pattern": "string"},
    **_PURE,
)
