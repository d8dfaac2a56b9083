"""Parsing ops: DecodeCSV, DecodeRaw, ReadFile and WriteFile (TF1's ``tf.decode_csv``...).

Strings are numpy object arrays of ``bytes`` (dtype ``string``), as
everywhere in flowbook; the kernels run on the host.

- **DecodeCSV**(records, *record_defaults): one output per column, each of
  ``records``' shape.  A column's dtype and default come from its
  ``record_defaults`` entry (a tensor of one value, or of none: the field is
  then required).  ``field_delim`` is one character; with
  ``use_quote_delim`` a field in double quotes may hold the delimiter, and
  ``""`` inside it is one quote; a field equal to ``na_value`` (when one is
  given) takes the default; ``select_cols`` picks columns.  A record with the
  wrong number of fields, a required field left empty, or a value that is not
  a number is an ``InvalidArgumentError`` naming the op, the line that built
  it, and the record.
- **DecodeRaw**(bytes): each string reinterpreted as ``out_type`` numbers
  (``little_endian`` or big), a new last dimension; the strings must have
  one length.
- **ReadFile**(filename): the file's bytes; **WriteFile**(filename,
  contents): writes them (no output), creating folders as TF does.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     a, b = fb.decode_csv(["1,x", "2,"], record_defaults=[[0], ["none"]])
    ...     s.run([a, b])
    [array([1, 2], dtype=int32), array([b'x', b'none'], dtype=object)]
"""

from __future__ import annotations

import csv
from typing import Any

import numpy as np

from flowbook.framework import dtypes
from flowbook.framework.errors import InvalidArgumentError
from flowbook.framework.registry import NOT_DIFFERENTIABLE, Out, op
from flowbook.framework.tensor import Tensor
from flowbook.ops._builder import make, make1, tensor
from flowbook.platform.gfile import GFile, makedirs

__all__ = ["decode_csv", "decode_raw", "read_file", "write_file"]

_CSV_TYPES = (dtypes.float32, dtypes.float64, dtypes.int32, dtypes.int64, dtypes.string)
_HOST = {"host_only": True, "grad": NOT_DIFFERENTIABLE}


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


# ------------------------------------------------------------------ DecodeCSV
def _csv_infer(
    records: Tensor,
    *defaults: Tensor,
    OUT_TYPE: list,
    field_delim: str,
    use_quote_delim: bool,
    na_value: str,
    select_cols: list,
) -> list[Out]:
    if records.dtype is not dtypes.string:
        raise TypeError(f"DecodeCSV: records must be strings, got {records.dtype.name}")
    for k, d in enumerate(defaults):
        if d._shape is not None and (
            len(d._shape) > 1 or (d._shape and d._shape[0] not in (0, 1, None))
        ):
            raise ValueError(
                f"DecodeCSV: record_defaults[{k}] must hold one value or none, got shape {list(d._shape)}"
            )
    if len(field_delim) != 1:
        raise ValueError(f"DecodeCSV: field_delim must be one character, got {field_delim!r}")
    return [Out(t, records._shape) for t in OUT_TYPE]


def _split(record: str, delim: str, quotes: bool) -> list[str]:
    if not quotes:
        return record.split(delim)
    return next(csv.reader([record], delimiter=delim, quotechar='"', doublequote=True, strict=True))


def _decode_csv(
    xp: Any,
    records: Any,
    *defaults: Any,
    OUT_TYPE: list,
    field_delim: str,
    use_quote_delim: bool,
    na_value: str,
    select_cols: list,
) -> Any:
    records = np.asarray(records, dtype=object)
    n = len(OUT_TYPE)
    want = max(select_cols) + 1 if select_cols else n
    columns = [np.empty(records.shape, dtype=t.np) for t in OUT_TYPE]
    for i, raw in enumerate(records.reshape(-1)):
        line = _text(raw)
        try:
            fields = _split(line, field_delim, use_quote_delim)
        except csv.Error as e:
            raise InvalidArgumentError(
                None, None, f"Quote error in record {i} ({line!r}): {e}"
            ) from None
        if (len(fields) != n and not select_cols) or len(fields) < want:
            raise InvalidArgumentError(
                None, None, f"Expect {n} fields but have {len(fields)} in record {i}: {line!r}"
            )
        picked = [fields[c] for c in select_cols] if select_cols else fields
        for k, (field, t, default) in enumerate(zip(picked, OUT_TYPE, defaults)):
            columns[k].reshape(-1)[i] = _field(field, t, default, na_value, i, k, line)
    return columns[0] if n == 1 else tuple(columns)


op(
    "DecodeCSV",
    ("records", "*record_defaults"),
    infer=_csv_infer,
    attrs=("OUT_TYPE", "field_delim", "use_quote_delim", "na_value", "select_cols"),
    kernel=_decode_csv,
    **_HOST,
    attr_kinds={
        "OUT_TYPE": "list(type)",
        "field_delim": "string",
        "na_value": "string",
        "select_cols": "list(int)",
    },
)


def _field(field: str, t: dtypes.DType, default: Any, na: str, i: int, k: int, line: str) -> Any:
    if field == "" or (na and field == na):
        default = np.asarray(default).reshape(-1)
        if default.size == 0:
            raise InvalidArgumentError(
                None, None, f"Field {k} is required but missing in record {i}: {line!r}"
            )
        value = default[0]
        return value.encode() if t is dtypes.string and isinstance(value, str) else value
    if t is dtypes.string:
        return field.encode("utf-8")
    try:
        return float(field) if t.is_floating else int(field)
    except ValueError:
        kind = "float" if t.is_floating else "int"
        raise InvalidArgumentError(
            None,
            None,
            f"Field {k} in record {i} is not a valid {kind}: {field!r} (record {line!r})",
        ) from None


def decode_csv(
    records: Any,
    record_defaults: Any,
    field_delim: str = ",",
    use_quote_delim: bool = True,
    name: str | None = None,
    na_value: str = "",
    select_cols: Any = None,
) -> list[Tensor]:
    """Parse CSV ``records`` into one tensor per column (TF1's ``tf.decode_csv``).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     x, = fb.decode_csv('"a,b"', [[""]])
    ...     s.run(x)
    b'a,b'
    """
    records = tensor(records, dtypes.string)
    defaults = [d if isinstance(d, Tensor) else tensor(d) for d in record_defaults]
    for k, d in enumerate(defaults):
        if d.dtype not in _CSV_TYPES:
            raise TypeError(
                f"decode_csv: record_defaults[{k}] must be float, int or string, got {d.dtype.name}"
            )
    attrs = {
        "OUT_TYPE": [d.dtype for d in defaults], "field_delim": field_delim,
        "use_quote_delim": bool(use_quote_delim), "na_value": na_value,
        "select_cols": [int(c) for c in select_cols or ()],
    }  # fmt: skip
    op = make("DecodeCSV", [records, *defaults], attrs, name=name or "DecodeCSV")
    return list(op.outputs)


# ------------------------------------------------------------------ DecodeRaw
def _raw_infer(bytes: Tensor, out_type: dtypes.DType, little_endian: bool) -> Out:
    shape = None if bytes._shape is None else (*bytes._shape, None)
    return Out(out_type, shape)


def _decode_raw(xp: Any, bytes: Any, out_type: dtypes.DType, little_endian: bool) -> Any:
    items = np.asarray(bytes, dtype=object)
    dtype = np.dtype(out_type.np).newbyteorder("<" if little_endian else ">")
    flat = items.reshape(-1)
    sizes = {len(b) for b in flat}
    if len(sizes) > 1:
        raise InvalidArgumentError(
            None,
            None,
            f"DecodeRaw requires input strings to all be the same size, got {sorted(sizes)}",
        )
    width = sizes.pop() if sizes else 0
    if width % dtype.itemsize:
        raise InvalidArgumentError(
            None,
            None,
            f"Input to DecodeRaw has length {width} that is not a multiple of "
            f"{dtype.itemsize}, the size of {out_type.name}",
        )
    count = width // dtype.itemsize
    out = np.frombuffer(b"".join(flat), dtype=dtype) if flat.size else np.empty(0, dtype)
    return out.astype(out_type.np).reshape((*items.shape, count))


op(
    "DecodeRaw",
    ("bytes",),
    infer=_raw_infer,
    attrs=("out_type", "little_endian"),
    kernel=_decode_raw,
    **_HOST,
    attr_kinds={"little_endian": "bool"},
)


def decode_raw(
    input_bytes: Any = None,
    out_type: Any = None,
    little_endian: bool = True,
    name: str | None = None,
    bytes: Any = None,
) -> Tensor:
    """Reinterpret the bytes of strings as numbers (TF1's ``tf.decode_raw``).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.decode_raw(b"\\x01\\x00\\x02\\x00", fb.int16)).tolist()
    [1, 2]
    """
    value = tensor(bytes if input_bytes is None else input_bytes, dtypes.string)
    attrs = {"out_type": dtypes.as_dtype(out_type), "little_endian": bool(little_endian)}
    return make1("DecodeRaw", [value], attrs, name=name or "DecodeRaw")


# -------------------------------------------------------- ReadFile, WriteFile
def _read_infer(filename: Tensor) -> Out:
    return Out(dtypes.string, ())


def _read_file(xp: Any, filename: Any) -> Any:
    with GFile(_text(np.asarray(filename, dtype=object).item()), "rb") as f:
        data = f.read()
    out = np.empty((), dtype=object)
    out[()] = data
    return out


op("ReadFile", ("filename",), infer=_read_infer, kernel=_read_file, stateful=True, **_HOST)


def _write_infer(filename: Tensor, contents: Tensor) -> list[Out]:
    return []


def _write_file(xp: Any, filename: Any, contents: Any) -> tuple:
    path = _text(np.asarray(filename, dtype=object).item())
    folder = path.rpartition("/")[0]
    if folder:
        makedirs(folder)
    data = np.asarray(contents, dtype=object).item()
    with GFile(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else str(data).encode())
    return ()


op(
    "WriteFile",
    ("filename", "contents"),
    infer=_write_infer,
    kernel=_write_file,
    stateful=True,
    **_HOST,
)


def read_file(filename: Any, name: str | None = None) -> Tensor:
    """The contents of a file, as a string scalar (TF1's ``tf.read_file``)."""
    return make1("ReadFile", [tensor(filename, dtypes.string)], name=name or "ReadFile")


def write_file(filename: Any, contents: Any, name: str | None = None) -> Any:
    """An op writing ``contents`` to a file (TF's ``tf.io.write_file``).

    >>> import flowbook as fb, os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "out", "x.txt")
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(write_file(path, "hello"))
    ...     s.run(read_file(path))
    b'hello'
    """
    inputs = [tensor(filename, dtypes.string), tensor(contents, dtypes.string)]
    return make("WriteFile", inputs, name=name or "WriteFile")
