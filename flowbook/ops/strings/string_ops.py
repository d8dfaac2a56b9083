"""String ops: joins, splits, strips, substrings, base64, regexes, numbers, hash buckets.

Strings are numpy object arrays of ``bytes`` (dtype ``string``), as
everywhere in flowbook; every kernel here runs on the host, element by
element (``np.frompyfunc``), and none is differentiable.  The semantics are
TF1's: ``string_split`` splits on *each* character of ``delimiter`` and
returns a SparseTensor (``indices``, ``values``, ``dense_shape``);
``encode_base64`` writes web-safe base64 (``-`` and ``_``), unpadded unless
``pad``; ``substr`` counts bytes; ``as_string`` formats as C's ``printf``.

Hash buckets: ``string_to_hash_bucket_strong`` is SipHash-2-4 keyed by
``key`` as TensorFlow's, so its buckets match TensorFlow's.  TensorFlow's
``_fast`` (FarmHash Fingerprint64) and plain (its Hash64) buckets are not
reproduced: flowbook uses the first 8 bytes of BLAKE2b (little-endian) for
both -- deterministic across runs and machines, but different bucket numbers
from TensorFlow's, so a model's hashed features line up only with itself.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.string_join(["a", ["b", "c"]], separator="-")).tolist()
    [b'a-b', b'a-c']
"""

from __future__ import annotations

import base64
import hashlib
import re
from typing import Any

import numpy as np

from flowbook.framework import dtypes
from flowbook.framework.errors import InvalidArgumentError
from flowbook.framework.registry import NOT_DIFFERENTIABLE, Out, op
from flowbook.framework.tensor import Tensor
from flowbook.framework.tensor_shape import broadcast
from flowbook.ops._builder import make, make1, tensor
from flowbook.ops._shape_inputs import const_ints
from flowbook.ops.io.example_ops import SparseTensor

__all__ = [
    "as_string",
    "decode_base64",
    "encode_base64",
    "reduce_join",
    "regex_replace",
    "string_join",
    "string_split",
    "string_strip",
    "string_to_hash_bucket",
    "string_to_hash_bucket_fast",
    "string_to_hash_bucket_strong",
    "string_to_number",
    "substr",
]

_HOST = {"host_only": True, "grad": NOT_DIFFERENTIABLE}
_MASK = (1 << 64) - 1


def _b(v: Any) -> bytes:
    return v if isinstance(v, bytes) else str(v).encode()


def _each(fn: Any, *arrays: Any, out: Any = object) -> np.ndarray:
    """``fn`` on every element (broadcast), as an array of ``out`` dtype."""
    result = np.frompyfunc(fn, len(arrays), 1)(*(np.asarray(a, dtype=object) for a in arrays))
    return np.asarray(result, dtype=out)


def _strings(op_type: str, *xs: Tensor) -> None:
    for x in xs:
        if x.dtype is not dtypes.string:
            raise TypeError(f"{op_type} needs string input, got {x.dtype.name}")


def _same_shape(op_type: str, dtype: Any = dtypes.string) -> Any:
    def infer(x: Tensor, **_: Any) -> Out:
        _strings(op_type, x)
        return Out(dtype, x._shape)

    return infer


# ----------------------------------------------------- element-wise string ops
def _join_infer(*inputs: Tensor, N: int, separator: str) -> Out:
    _strings("StringJoin", *inputs)
    shape: Any = ()
    for x in inputs:
        shape = None if shape is None or x._shape is None else broadcast(shape, x._shape)
    return Out(dtypes.string, shape)


def _string_join(xp: Any, *inputs: Any, N: int, separator: str) -> Any:
    sep = _b(separator)
    return _each(lambda *parts: sep.join(_b(p) for p in parts), *inputs)


op(
    "StringJoin",
    ("*inputs",),
    infer=_join_infer,
    attrs=("N", "separator"),
    kernel=_string_join,
    **_HOST,
)


def _string_strip(xp: Any, input: Any) -> Any:
    return _each(lambda s: _b(s).strip(), input)


op("StringStrip", ("input",), infer=_same_shape("StringStrip"), kernel=_string_strip, **_HOST)


def _string_length(xp: Any, input: Any) -> Any:
    return _each(lambda s: len(_b(s)), input, out=np.int32)


op(
    "StringLength",
    ("input",),
    infer=_same_shape("StringLength", dtypes.int32),
    kernel=_string_length,
    **_HOST,
)


def _string_lower(xp: Any, input: Any, encoding: str) -> Any:
    return _each(lambda s: _b(s).lower(), input)


op(
    "StringLower",
    ("input",),
    infer=_same_shape("StringLower"),
    attrs=("encoding",),
    kernel=_string_lower,
    **_HOST,
)


def _string_upper(xp: Any, input: Any, encoding: str) -> Any:
    return _each(lambda s: _b(s).upper(), input)


op(
    "StringUpper",
    ("input",),
    infer=_same_shape("StringUpper"),
    attrs=("encoding",),
    kernel=_string_upper,
    **_HOST,
)


def _encode_base64(xp: Any, input: Any, pad: bool) -> Any:
    def one(s: Any) -> bytes:
        out = base64.urlsafe_b64encode(_b(s))
        return out if pad else out.rstrip(b"=")

    return _each(one, input)


op(
    "EncodeBase64",
    ("input",),
    infer=_same_shape("EncodeBase64"),
    attrs=("pad",),
    kernel=_encode_base64,
    **_HOST,
)


def _decode_base64(xp: Any, input: Any) -> Any:
    def one(s: Any) -> bytes:
        raw = _b(s).rstrip(b"=")
        try:
            return base64.urlsafe_b64decode(raw + b"=" * (-len(raw) % 4))
        except ValueError as e:
            raise InvalidArgumentError(None, None, f"Invalid base64 data: {raw[:40]!r}") from e

    return _each(one, input)


op("DecodeBase64", ("input",), infer=_same_shape("DecodeBase64"), kernel=_decode_base64, **_HOST)


def _regex_infer(input: Tensor, pattern: Tensor, rewrite: Tensor, replace_global: bool) -> Out:
    _strings("RegexReplace", input, pattern, rewrite)
    return Out(dtypes.string, input._shape)


def _regex_replace(xp: Any, input: Any, pattern: Any, rewrite: Any, replace_global: bool) -> Any:
    try:
        regex = re.compile(_b(np.asarray(pattern, dtype=object).item()))
    except re.error as e:
        raise InvalidArgumentError(None, None, f"Invalid pattern: {e}") from e
    repl = _b(np.asarray(rewrite, dtype=object).item())
    count = 0 if replace_global else 1
    return _each(lambda s: regex.sub(repl, _b(s), count=count), input)


op(
    "RegexReplace",
    ("input", "pattern", "rewrite"),
    infer=_regex_infer,
    attrs=("replace_global",),
    kernel=_regex_replace,
    **_HOST,
)


def _substr_infer(input: Tensor, pos: Tensor, len: Tensor, unit: str) -> Out:
    _strings("Substr", input)
    shape = (
        None if input._shape is None or pos._shape is None else broadcast(input._shape, pos._shape)
    )
    return Out(dtypes.string, shape)


def _substr(xp: Any, input: Any, pos: Any, len: Any, unit: str) -> Any:
    def one(s: Any, p: Any, n: Any) -> bytes:
        s, p, n = _b(s), int(p), int(n)
        size = builtins_len(s)
        if p < -size or p > size:
            raise InvalidArgumentError(None, None, f"pos {p} out of range for string {s!r}")
        p = p + size if p < 0 else p
        return s[p : p + max(n, 0)]

    return _each(one, input, pos, len)


op("Substr", ("input", "pos", "len"), infer=_substr_infer, attrs=("unit",), kernel=_substr, **_HOST)


builtins_len = len


def _to_number_infer(string_tensor: Tensor, out_type: Any) -> Out:
    _strings("StringToNumber", string_tensor)
    return Out(out_type, string_tensor._shape)


def _string_to_number(xp: Any, string_tensor: Any, out_type: Any) -> Any:
    def one(s: Any) -> Any:
        text = _b(s).decode("utf-8", "replace").strip()
        try:
            return float(text) if out_type.is_floating else int(text, 10)
        except ValueError:
            raise InvalidArgumentError(
                None, None, f"StringToNumberOp could not correctly convert string: {text}"
            ) from None

    return _each(one, string_tensor, out=out_type.np)


op(
    "StringToNumber",
    ("string_tensor",),
    infer=_to_number_infer,
    attrs=("out_type",),
    kernel=_string_to_number,
    **_HOST,
)


def _as_string_infer(input: Tensor, **_: Any) -> Out:
    if input.dtype is dtypes.string:
        raise TypeError("AsString needs a number or bool tensor, got string")
    return Out(dtypes.string, input._shape)


def _as_string(
    xp: Any, input: Any, precision: int, scientific: bool, shortest: bool, width: int, fill: str
) -> Any:
    kind = np.asarray(input).dtype.kind
    spec = "%" + (fill if fill else "") + (str(width) if width > -1 else "")
    if kind in "fc":
        spec += (f".{precision}" if precision > -1 else "") + (
            "e" if scientific else "g" if shortest else "f"
        )
    else:
        spec += "d"
    if kind == "b":
        return _each(lambda v: b"true" if v else b"false", input)
    if kind == "c":
        return _each(lambda v: ("(" + spec + "," + spec + ")") % (v.real, v.imag), input)
    return _each(lambda v: (spec % v).encode(), input)


op(
    "AsString",
    ("input",),
    infer=_as_string_infer,
    attrs=("precision", "scientific", "shortest", "width", "fill"),
    kernel=_as_string,
    **_HOST,
)


# ------------------------------------------------------------- hash buckets
def _hash_infer(op_type: str) -> Any:
    def infer(input: Tensor, **_: Any) -> Out:
        _strings(op_type, input)
        return Out(dtypes.int64, input._shape)

    return infer


def _blake8(s: bytes) -> int:
    return int.from_bytes(hashlib.blake2b(s, digest_size=8).digest(), "little")


def _rotl(x: int, b: int) -> int:
    return ((x << b) | (x >> (64 - b))) & _MASK


def siphash24(k0: int, k1: int, data: bytes) -> int:
    """SipHash-2-4 of ``data`` under the 128-bit key ``(k0, k1)``, as TensorFlow computes it.

    >>> hex(siphash24(0x0706050403020100, 0x0F0E0D0C0B0A0908, b""))
    '0x726fdb47dd0e0e31'
    """
    v0, v1 = k0 ^ 0x736F6D6570736575, k1 ^ 0x646F72616E646F6D
    v2, v3 = k0 ^ 0x6C7967656E657261, k1 ^ 0x7465646279746573

    def rounds(n: int) -> None:
        nonlocal v0, v1, v2, v3
        for _ in range(n):
            v0 = (v0 + v1) & _MASK
            v1 = _rotl(v1, 13) ^ v0
            v0 = _rotl(v0, 32)
            v2 = (v2 + v3) & _MASK
            v3 = _rotl(v3, 16) ^ v2
            v0 = (v0 + v3) & _MASK
            v3 = _rotl(v3, 21) ^ v0
            v2 = (v2 + v1) & _MASK
            v1 = _rotl(v1, 17) ^ v2
            v2 = _rotl(v2, 32)

    tail = len(data) % 8
    for i in range(0, len(data) - tail, 8):
        m = int.from_bytes(data[i : i + 8], "little")
        v3 ^= m
        rounds(2)
        v0 ^= m
    m = ((len(data) & 0xFF) << 56) | int.from_bytes(data[len(data) - tail :], "little")
    v3 ^= m
    rounds(2)
    v0 ^= m
    v2 ^= 0xFF
    rounds(4)
    return v0 ^ v1 ^ v2 ^ v3


def _buckets(values: Any, fn: Any, num_buckets: int) -> Any:
    return _each(lambda s: fn(_b(s)) % num_buckets, values, out=np.int64)


def _hash_fast(xp: Any, input: Any, num_buckets: int) -> Any:
    return _buckets(input, _blake8, num_buckets)


op(
    "StringToHashBucketFast",
    ("input",),
    infer=_hash_infer("StringToHashBucketFast"),
    attrs=("num_buckets",),
    kernel=_hash_fast,
    **_HOST,
)


def _hash_plain(xp: Any, string_tensor: Any, num_buckets: int) -> Any:
    return _buckets(string_tensor, _blake8, num_buckets)


op(
    "StringToHashBucket",
    ("string_tensor",),
    infer=_hash_infer("StringToHashBucket"),
    attrs=("num_buckets",),
    kernel=_hash_plain,
    **_HOST,
)


def _hash_strong(xp: Any, input: Any, num_buckets: int, key: list) -> Any:
    return _buckets(input, lambda s: siphash24(key[0], key[1], s), num_buckets)


op(
    "StringToHashBucketStrong",
    ("input",),
    infer=_hash_infer("StringToHashBucketStrong"),
    attrs=("num_buckets", "key"),
    kernel=_hash_strong,
    **_HOST,
)


# ------------------------------------------------ reductions and splitting
def _reduce_join_infer(
    inputs: Tensor, reduction_indices: Tensor, keep_dims: bool, separator: str
) -> Out:
    _strings("ReduceJoin", inputs)
    axes = const_ints(reduction_indices)
    s = inputs._shape
    if s is None or axes is None:
        return Out(dtypes.string, None)
    axes = [a % len(s) for a in axes] if axes else list(range(len(s)))
    shape = tuple(1 if k in axes else d for k, d in enumerate(s) if keep_dims or k not in axes)
    return Out(dtypes.string, shape)


def _reduce_join(
    xp: Any, inputs: Any, reduction_indices: Any, keep_dims: bool, separator: str
) -> Any:
    x = np.asarray(inputs, dtype=object)
    axes = [int(a) % max(x.ndim, 1) for a in np.ravel(reduction_indices)] or list(range(x.ndim))
    sep = _b(separator)
    for a in sorted(axes, reverse=True):
        moved = np.moveaxis(x, a, -1)
        joined = np.empty(moved.shape[:-1], dtype=object)
        for idx in np.ndindex(joined.shape):
            joined[idx] = sep.join(_b(v) for v in moved[idx])
        x = np.expand_dims(joined, a) if keep_dims else joined
    return x


op(
    "ReduceJoin",
    ("inputs", "reduction_indices"),
    infer=_reduce_join_infer,
    attrs=("keep_dims", "separator"),
    kernel=_reduce_join,
    host_inputs=(1,),
    **_HOST,
)


def _split_infer(input: Tensor, delimiter: Tensor, skip_empty: bool) -> list[Out]:
    _strings("StringSplit", input, delimiter)
    if input._shape is not None and len(input._shape) != 1:
        raise ValueError(f"StringSplit needs a vector of strings, got shape {list(input._shape)}")
    return [Out(dtypes.int64, (None, 2)), Out(dtypes.string, (None,)), Out(dtypes.int64, (2,))]


def _string_split(xp: Any, input: Any, delimiter: Any, skip_empty: bool) -> Any:
    delims = _b(np.asarray(delimiter, dtype=object).item())
    rows = []
    for s in np.asarray(input, dtype=object).reshape(-1):
        s = _b(s)
        if not delims:
            parts = [s[i : i + 1] for i in range(len(s))]
        else:
            parts = re.split(b"[" + re.escape(delims) + b"]", s)
        rows.append([p for p in parts if p] if skip_empty else parts)
    indices = [(r, c) for r, parts in enumerate(rows) for c in range(len(parts))]
    values = np.empty(len(indices), dtype=object)
    values[:] = [p for parts in rows for p in parts]
    width = max((len(p) for p in rows), default=0)
    return (
        np.asarray(indices, np.int64).reshape(-1, 2),
        values,
        np.asarray([len(rows), width], np.int64),
    )


op(
    "StringSplit",
    ("input", "delimiter"),
    infer=_split_infer,
    attrs=("skip_empty",),
    kernel=_string_split,
    **_HOST,
)


# ------------------------------------------------------------------ wrappers
def _s(x: Any) -> Tensor:
    return tensor(x, dtypes.string)


def string_join(inputs: Any, separator: str = "", name: str | None = None) -> Tensor:
    """The strings of ``inputs`` (broadcast) joined element-wise by ``separator``."""
    xs = [_s(x) for x in inputs]
    return make1(
        "StringJoin", xs, {"N": len(xs), "separator": separator}, name=name or "StringJoin"
    )


def string_strip(input: Any, name: str | None = None) -> Tensor:
    """Each string without leading and trailing whitespace.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.string_strip([" a ", "b\\n"])).tolist()
    [b'a', b'b']
    """
    return make1("StringStrip", [_s(input)], name=name or "StringStrip")


def encode_base64(input: Any, pad: bool = False, name: str | None = None) -> Tensor:
    """Web-safe base64 of each string (``=`` padding only with ``pad``).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.encode_base64(["hi?"])).tolist()
    [b'aGk_']
    """
    return make1("EncodeBase64", [_s(input)], {"pad": bool(pad)}, name=name or "EncodeBase64")


def decode_base64(input: Any, name: str | None = None) -> Tensor:
    """The bytes of web-safe base64 strings (padded or not)."""
    return make1("DecodeBase64", [_s(input)], name=name or "DecodeBase64")


def regex_replace(
    input: Any, pattern: Any, rewrite: Any, replace_global: bool = True, name: str | None = None
) -> Tensor:
    """Each string with ``pattern``'s matches replaced by ``rewrite`` (``\\1`` groups).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.regex_replace(["a1b22"], "[0-9]+", "#")).tolist()
    [b'a#b#']
    """
    inputs = [_s(input), _s(pattern), _s(rewrite)]
    attrs = {"replace_global": bool(replace_global)}
    return make1("RegexReplace", inputs, attrs, name=name or "RegexReplace")


def substr(input: Any, pos: Any, len: Any, name: str | None = None, unit: str = "BYTE") -> Tensor:
    """``input[pos:pos + len]`` for each string (bytes; a negative ``pos`` counts from the end).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.substr(["hello", "world"], 1, 3)).tolist()
    [b'ell', b'orl']
    """
    if unit != "BYTE":
        raise ValueError(f"substr: unit {unit!r} is not supported (only 'BYTE')")
    p, n = tensor(pos, dtypes.int32), tensor(len, dtypes.int32)
    return make1("Substr", [_s(input), p, n], {"unit": unit}, name=name or "Substr")


def string_to_number(string_tensor: Any, out_type: Any = dtypes.float32, name=None) -> Tensor:
    """Each string parsed as a number of ``out_type``; a non-number is an error.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.string_to_number(["1.5", " -2"])).tolist()
    [1.5, -2.0]
    """
    attrs = {"out_type": dtypes.as_dtype(out_type)}
    return make1("StringToNumber", [_s(string_tensor)], attrs, name=name or "StringToNumber")


def as_string(
    input: Any,
    precision: int = -1,
    scientific: bool = False,
    shortest: bool = False,
    width: int = -1,
    fill: str = "",
    name: str | None = None,
) -> Tensor:
    """Each number formatted as a string (``printf``'s ``%f``/``%e``/``%g``/``%d``).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.as_string([1.5, 2.0], precision=2)).tolist()
    [b'1.50', b'2.00']
    """
    attrs = {
        "precision": int(precision),
        "scientific": bool(scientific),
        "shortest": bool(shortest),
        "width": int(width),
        "fill": str(fill),
    }
    return make1("AsString", [tensor(input)], attrs, name=name or "AsString")


def string_to_hash_bucket_fast(input: Any, num_buckets: int, name: str | None = None) -> Tensor:
    """Each string's bucket in ``[0, num_buckets)`` (BLAKE2b, not TF's FarmHash: see the module)."""
    attrs = {"num_buckets": int(num_buckets)}
    return make1(
        "StringToHashBucketFast", [_s(input)], attrs, name=name or "StringToHashBucketFast"
    )


def string_to_hash_bucket(string_tensor: Any, num_buckets: int, name: str | None = None) -> Tensor:
    """Each string's bucket in ``[0, num_buckets)`` (BLAKE2b, not TF's Hash64: see the module)."""
    attrs = {"num_buckets": int(num_buckets)}
    return make1(
        "StringToHashBucket", [_s(string_tensor)], attrs, name=name or "StringToHashBucket"
    )


def string_to_hash_bucket_strong(input: Any, num_buckets: int, key: Any, name=None) -> Tensor:
    """Each string's bucket by SipHash-2-4 under ``key`` (two ints): TensorFlow's buckets."""
    k = [int(v) & _MASK for v in key]
    if builtins_len(k) != 2:
        raise ValueError(f"string_to_hash_bucket_strong: key must hold two ints, got {key!r}")
    attrs = {"num_buckets": int(num_buckets), "key": k}
    return make1(
        "StringToHashBucketStrong", [_s(input)], attrs, name=name or "StringToHashBucketStrong"
    )


def reduce_join(
    inputs: Any,
    axis: Any = None,
    keep_dims: bool = False,
    separator: str = "",
    name: str | None = None,
    reduction_indices: Any = None,
) -> Tensor:
    """The strings joined along ``axis`` (all axes when None) by ``separator``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.reduce_join([["a", "b"], ["c", "d"]], 1, separator=",")).tolist()
    [b'a,b', b'c,d']
    """
    axes = reduction_indices if axis is None else axis
    axes = tensor([] if axes is None else axes, dtypes.int32)
    attrs = {"keep_dims": bool(keep_dims), "separator": separator}
    return make1("ReduceJoin", [_s(inputs), axes], attrs, name=name or "ReduceJoin")


def string_split(source: Any, delimiter: Any = " ", skip_empty: bool = True, name=None):
    """Split each string on every character of ``delimiter``: a SparseTensor of the pieces.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     st = s.run(fb.string_split(["a b", "c"]))
    ...     st.values.tolist(), st.dense_shape.tolist()
    ([b'a', b'b', b'c'], [2, 2])
    """
    op = make(
        "StringSplit",
        [_s(source), _s(delimiter)],
        {"skip_empty": bool(skip_empty)},
        name=name or "StringSplit",
    )
    return SparseTensor(*op.outputs)
