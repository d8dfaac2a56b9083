"""String ops: joins, splits, strips, substrings, base64, regexes, numbers, hash buckets.

Strings are numpy object arrays of ``bytes`` (dtype ``string``), as
everywhere in flowbook; every kernel here runs on the host, element by
element (``np.frompyfunc``), and none is differentiable.  The semantics are
TF1's: ``string_split`` splits on *each* character of ``delimiter`` and
returns a SparseTensor (``indices``, ``values``, ``dense_shape``);
``encode_base64`` writes web-safe base64 (``-`` and ``_``), unpadded unless
``pad``; ``substr`` counts bytes; ``as_string`` formats as C's ``printf``.

Hardening, where a string op differs from a numeric one:

- **Regexes** run on RE2 (``flowbook.ops.strings.regex``): linear time, RE2's
  syntax and rewrites, as TensorFlow's.
- **Sizes**: a string result is built one object at a time, so every op
  whose result can be far larger than its inputs (``string_join``,
  ``reduce_join``, ``string_split``, ``substr``, ``as_string``,
  ``regex_replace``) first works out the bytes it needs from the inputs'
  lengths and shapes and refuses, with the ``ResourceExhaustedError`` a
  numeric op out of memory raises, what cannot fit
  (``flowbook.ops.strings.result_sizes``).
- **Decoders** refuse what TensorFlow refuses: ``decode_base64`` takes the
  web-safe alphabet only, ``=`` only as the padding of a last group of four,
  and no length of 1 modulo 4; ``string_to_number`` reads C's ``strtod``
  grammar (hex floats, ``inf``, ``nan``) and ``strtol``'s for ints, with
  ASCII spaces around, and refuses anything else (``1_000``, non-ASCII
  digits, an int out of range).
- ``string_split`` splits each row with ``bytes.split`` (several delimiters
  are first translated to one) and builds its indices with numpy, so it
  holds little more than its result.

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

import binascii
import hashlib
from typing import Any

import numpy as np

from flowbook.framework import dtypes
from flowbook.framework.errors import InvalidArgumentError
from flowbook.framework.registry import NOT_DIFFERENTIABLE, Out, op
from flowbook.framework.tensor import Tensor
from flowbook.framework.tensor_shape import broadcast
from flowbook.ops._builder import make, make1, tensor
from flowbook.ops._shape_inputs import const_ints
from flowbook.ops.array.constant_op import constant_value
from flowbook.ops.io.example_ops import SparseTensor
from flowbook.ops.strings import regex as re2_ops
from flowbook.ops.strings.result_sizes import (
    PER_STRING,
    check_result,
    max_string_bytes,
    total_length,
)

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
    arrays = [np.asarray(x, dtype=object) for x in inputs]
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    size = int(np.prod(shape, dtype=np.int64)) if shape else 1
    limit = max_string_bytes()
    payload = len(sep) * max(len(arrays) - 1, 0) * size
    for a in arrays:
        if a.size:
            payload += total_length("StringJoin", a, size // a.size, limit - payload, size)
    check_result("StringJoin", payload, size, limit)
    return _each(lambda *parts: sep.join(_b(p) for p in parts), *arrays)


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


_TO_STD = bytes.maketrans(b"-_", b"+/")
_TO_WEB = bytes.maketrans(b"+/", b"-_")
_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def _encode_base64(xp: Any, input: Any, pad: bool) -> Any:
    def one(s: Any) -> bytes:
        out = binascii.b2a_base64(_b(s), newline=False).translate(_TO_WEB)
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


def _b64_error(message: str, s: bytes) -> InvalidArgumentError:
    shown = s[:40] + (b"..." if len(s) > 40 else b"")
    return InvalidArgumentError(None, None, f"Invalid base64 data {shown!r}: {message}")


def decode_base64_bytes(s: bytes) -> bytes:
    """TensorFlow's ``Base64Decode``: web-safe alphabet; ``=`` only pads the last four.

    >>> decode_base64_bytes(b"aGk_"), decode_base64_bytes(b"YQ"), decode_base64_bytes(b"YQ==")
    (b'hi?', b'a', b'a')
    >>> decode_base64_bytes(b"YQ=")
    Traceback (most recent call last):
    ...
    flowbook.framework.errors.InvalidArgumentError: Invalid base64 data b'YQ=': Invalid character found in base64.
    """
    if not s:
        return b""
    cut = (len(s) - 1) // 4 * 4  # the groups before the last (1 to 4 characters)
    head, tail = s[:cut], s[cut:]
    if len(tail) == 4 and tail[2:] == b"==":
        tail = tail[:2]
    elif len(tail) == 4 and tail[3:] == b"=":
        tail = tail[:3]
    if head.translate(None, _ALPHABET):
        raise _b64_error("Invalid character found in base64.", s)
    if len(tail) == 1:
        raise _b64_error("Base64 string length cannot be 1 modulo 4.", s)
    if tail.translate(None, _ALPHABET):
        raise _b64_error("Invalid character found in base64.", s)
    body = (head + tail).translate(_TO_STD)
    return binascii.a2b_base64(body + b"=" * (-len(body) % 4))


def _decode_base64(xp: Any, input: Any) -> Any:
    return _each(lambda s: decode_base64_bytes(_b(s)), input)


op("DecodeBase64", ("input",), infer=_same_shape("DecodeBase64"), kernel=_decode_base64, **_HOST)


def _regex_infer(input: Tensor, pattern: Tensor, rewrite: Tensor, replace_global: bool) -> Out:
    _strings("RegexReplace", input, pattern, rewrite)
    for what, t in (("pattern", pattern), ("rewrite", rewrite)):
        if t._shape not in (None, ()):
            raise ValueError(f"RegexReplace: {what} must be a scalar, got shape {list(t._shape)}")
    if pattern.op.type == "Const":  # a pattern known now is checked now, as TF's static op
        re2_ops.compiled("RegexReplace", _b(np.asarray(constant_value(pattern)).item()))
    return Out(dtypes.string, input._shape)


def _scalar(op_type: str, what: str, value: Any) -> bytes:
    v = np.asarray(value, dtype=object)
    if v.ndim:
        raise InvalidArgumentError(
            None, None, f"{op_type}: {what} must be a scalar, got shape {list(v.shape)}"
        )
    return _b(v.item())


def _regex_replace(xp: Any, input: Any, pattern: Any, rewrite: Any, replace_global: bool) -> Any:
    regex = re2_ops.compiled("", _scalar("RegexReplace", "pattern", pattern))
    pieces, valid, top = re2_ops.rewrite(_scalar("RegexReplace", "rewrite", rewrite))
    x = np.asarray(input, dtype=object)
    limit = max_string_bytes()
    total_length("RegexReplace", x, 1, limit, x.size)
    budget = re2_ops.Budget("RegexReplace", limit - x.size * PER_STRING)
    if replace_global:
        return _each(lambda s: re2_ops.replace_all(regex, _b(s), pieces, valid, top, budget), x)
    return _each(lambda s: re2_ops.replace_first(regex, _b(s), pieces, valid, top), x)


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
    x = np.asarray(input, dtype=object)
    shape = np.broadcast_shapes(x.shape, np.shape(pos), np.shape(len))
    size = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if size > x.size:  # broadcasting repeats strings: bound each piece by its string and len
        limit = max_string_bytes()
        total_length("Substr", x, size // max(x.size, 1), limit, size)
        lengths = np.fromiter(map(builtins_len, map(_b, x.reshape(-1))), np.int64, x.size)
        pieces = np.minimum(
            np.broadcast_to(lengths.reshape(x.shape), shape),
            np.maximum(np.broadcast_to(np.asarray(len, np.int64), shape), 0),
        )
        check_result("Substr", int(pieces.sum()), size, limit)

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


_SPACES = b" \t\n\v\f\r"
_INT = re2_ops.compiled("StringToNumber", rb"[+-]?[0-9]+")
_DEC = re2_ops.compiled("StringToNumber", rb"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_HEX = re2_ops.compiled(
    "StringToNumber",
    rb"[+-]?0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?[0-9]+)?",
)
_SPECIAL = re2_ops.compiled(
    "StringToNumber", rb"(?i)([+-]?)(?:(inf|infinity)|nan(?:\([0-9A-Za-z_]*\))?)"
)


def parse_number(s: bytes, floating: bool) -> float | int | None:
    """``s`` read as C's ``strtod`` (``floating``) or ``strtol`` reads a whole number
    between ASCII spaces, as TensorFlow's StringToNumber; None when it is not one.

    >>> parse_number(b" 0x1p3 ", True), parse_number(b"-Infinity", True), parse_number(b"1_000", False)
    (8.0, -inf, None)
    """
    text = s.strip(_SPACES)
    if not floating:  # past 20 digits no int type holds it (and int() would refuse 4300)
        digits = builtins_len(text.lstrip(b"+-").lstrip(b"0"))
        return int(text) if _INT.fullmatch(text) and digits <= 20 else None
    if _DEC.fullmatch(text):
        return float(text)
    if _HEX.fullmatch(text):
        sign = -1.0 if text[:1] == b"-" else 1.0
        return sign * float.fromhex(text.lstrip(b"+-").decode())
    special = _SPECIAL.fullmatch(text)
    if special is None:
        return None
    sign = -1.0 if special.group(1) == b"-" else 1.0
    return sign * float("inf") if special.group(2) else float("nan")


def _string_to_number(xp: Any, string_tensor: Any, out_type: Any) -> Any:
    floating = out_type.is_floating
    bounds = None if floating else np.iinfo(out_type.np)

    def one(s: Any) -> Any:
        value = parse_number(_b(s), floating)
        if value is None or (bounds is not None and not bounds.min <= value <= bounds.max):
            text = _b(s).decode("utf-8", "replace")
            raise InvalidArgumentError(
                None, None, f"StringToNumberOp could not correctly convert string: {text}"
            )
        return value

    values = _each(one, string_tensor)
    with np.errstate(over="ignore"):  # a float too large for float32 is inf, as strtof says
        return np.asarray(values, dtype=np.float64 if floating else object).astype(out_type.np)


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
    _check_as_string(input, kind, precision, scientific, width)
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


def _check_as_string(input: Any, kind: str, precision: int, scientific: bool, width: int) -> None:
    """Refuse a result past the limit: each number takes at most ``width``, or its own digits."""
    x = np.asarray(input)
    digits = 24  # an int64, a bool
    if kind in "fc" and x.size:
        prec = 6 if precision < 0 else precision
        parts = np.concatenate([x.real.ravel(), x.imag.ravel()]) if kind == "c" else x.ravel()
        big = float(np.max(np.abs(parts[np.isfinite(parts)]), initial=1.0))
        digits = prec + 10 + (0 if scientific else int(np.log10(max(big, 1.0))) + 1)
        digits *= 2 if kind == "c" else 1
    check_result("AsString", x.size * max(width, digits), x.size)


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
    axes = sorted(set(axes))
    joins = int(np.prod([x.shape[a] for a in axes], dtype=np.int64)) if x.ndim else 1
    outputs = x.size // joins if joins else 0
    limit = max_string_bytes()
    payload = (
        total_length("ReduceJoin", x, 1, limit, outputs) + len(sep) * max(joins - 1, 0) * outputs
    )
    check_result("ReduceJoin", payload, outputs, limit)
    kept = [k for k in range(x.ndim) if k not in axes]
    moved = np.transpose(x, kept + axes).reshape(*(x.shape[k] for k in kept), -1)
    joined = np.empty(moved.shape[:-1], dtype=object)
    for idx in np.ndindex(joined.shape):
        joined[idx] = sep.join([_b(v) for v in moved[idx]])
    if keep_dims:
        joined = joined.reshape([1 if k in axes else d for k, d in enumerate(x.shape)])
    return joined


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


def _split_row(s: bytes, delims: bytes, table: bytes | None, skip_empty: bool) -> list[bytes]:
    if not delims:
        parts = [s[i : i + 1] for i in range(len(s))]
    else:
        parts = (s.translate(table) if table else s).split(delims[:1])
    return [p for p in parts if p] if skip_empty else parts


def _most_tokens(rows: np.ndarray, delims: bytes) -> int:
    """The most tokens ``rows`` can split into; refused (MemoryError) as soon as they cannot fit."""
    limit = max_string_bytes()
    payload = total_length("StringSplit", rows, 1, limit, rows.size)
    per = PER_STRING + 16  # a token's object, its pointer, its two indices
    chars, tokens = set(delims), 0
    for i, s in enumerate(rows):
        s = s if type(s) is bytes else _b(s)
        tokens += sum(s.count(d) for d in chars) + 1 if delims else builtins_len(s)
        if not i & 1023 and payload + tokens * per > limit:
            check_result("StringSplit", payload + tokens * 16, tokens, limit, at_least=True)
    check_result("StringSplit", payload + tokens * 16, tokens, limit)
    return tokens


def _string_split(xp: Any, input: Any, delimiter: Any, skip_empty: bool) -> Any:
    delims = _scalar("StringSplit", "delimiter", delimiter)
    rows = np.asarray(input, dtype=object).reshape(-1)
    tokens = _most_tokens(rows, delims)
    table = None
    if builtins_len(set(delims)) > 1:
        table = bytes.maketrans(delims, delims[:1] * builtins_len(delims))
    counts = np.zeros(rows.size, np.int64)
    values = np.empty(tokens, dtype=object)
    n = 0
    for r, s in enumerate(rows):
        parts = _split_row(_b(s), delims, table, skip_empty)
        counts[r] = builtins_len(parts)
        values[n : n + counts[r]] = parts
        n += counts[r]
    values = values[:n].copy() if n < tokens else values
    starts = np.cumsum(counts) - counts
    indices = np.empty((n, 2), np.int64)
    indices[:, 0] = np.repeat(np.arange(rows.size, dtype=np.int64), counts)
    indices[:, 1] = np.arange(n, dtype=np.int64) - np.repeat(starts, counts)
    width = int(counts.max()) if counts.size else 0
    return indices, values, np.asarray([rows.size, width], np.int64)


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
