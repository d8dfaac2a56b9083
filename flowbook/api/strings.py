"""``tf.strings``: TF1's string ops under their shorter names, plus length/lower/upper.

The ops are declared in ``flowbook.ops.strings.string_ops`` (host-only, element by
element, bytes in and out); this module only names them as ``tf.strings``
does (``tf.strings.join`` is ``tf.string_join``...).

    >>> import flowbook as tf
    >>> with tf.Graph().as_default(), tf.Session() as s:
    ...     s.run(tf.strings.length(["ab", ""])).tolist(), s.run(tf.strings.upper("ab"))
    ([2, 0], b'AB')
"""

from __future__ import annotations

from typing import Any

from flowbook.framework import dtypes
from flowbook.framework.tensor import Tensor
from flowbook.ops._builder import make1, tensor
from flowbook.ops.strings.string_ops import (
    as_string,
    decode_base64,
    encode_base64,
    reduce_join,
    regex_replace,
    string_join,
    string_split,
    string_strip,
    string_to_hash_bucket,
    string_to_hash_bucket_fast,
    string_to_hash_bucket_strong,
    string_to_number,
    substr,
)

__all__ = [
    "as_string",
    "from_base64",
    "join",
    "length",
    "lower",
    "reduce_join",
    "regex_replace",
    "split",
    "strip",
    "substr",
    "to_base64",
    "to_hash_bucket",
    "to_hash_bucket_fast",
    "to_hash_bucket_strong",
    "to_number",
    "upper",
]

join = string_join
strip = string_strip
split = string_split
to_number = string_to_number
to_hash_bucket = string_to_hash_bucket
to_hash_bucket_fast = string_to_hash_bucket_fast
to_hash_bucket_strong = string_to_hash_bucket_strong
to_base64 = encode_base64
from_base64 = decode_base64
_ = (as_string, reduce_join, regex_replace, substr)  # tf.strings keeps these names


def length(input: Any, name: str | None = None, unit: str = "BYTE") -> Tensor:
    """The length in bytes of each string."""
    if unit != "BYTE":
        raise ValueError(f"length: unit {unit!r} is not supported (only 'BYTE')")
    return make1("StringLength", [tensor(input, dtypes.string)], name=name or "StringLength")


def lower(input: Any, encoding: str = "", name: str | None = None) -> Tensor:
    """Each string with ASCII letters lower-cased."""
    attrs = {"encoding": encoding}
    return make1("StringLower", [tensor(input, dtypes.string)], attrs, name=name or "StringLower")


def upper(input: Any, encoding: str = "", name: str | None = None) -> Tensor:
    """Each string with ASCII letters upper-cased."""
    attrs = {"encoding": encoding}
    return make1("StringUpper", [tensor(input, dtypes.string)], attrs, name=name or "StringUpper")
