"""Data types: TensorFlow's names over numpy's dtypes.

A :class:`DType` is a small immutable value naming a numpy dtype, with the
TensorFlow spelling (``float32``, ``int32``, ``string``...) and the predicates
TF1 programs use (``is_floating``, ``is_integer``, ``as_numpy_dtype``).  The
table covers the whitepaper's type list.  ``as_dtype`` accepts a DType, a
numpy dtype or type, or a name, so every public function can take any of them.

Each type has a reference twin, as in TensorFlow 1 (``float32_ref``): the
dtype of a reference variable's tensor, which names the variable's storage
rather than a value.  A ref dtype holds the same numpy dtype and predicates as
its base; it is a distinct object (``float32_ref is not float32``), its
``base_dtype`` is the value type and ``_as_ref`` goes the other way.  numpy
dtypes always map to the base types.

    >>> import flowbook as fb
    >>> fb.as_dtype("float32") is fb.float32
    True
"""

from __future__ import annotations

from typing import Any

import numpy as np


class DType:
    """A tensor element type: a TensorFlow name for a numpy dtype.

    >>> float32.name, float32.as_numpy_dtype
    ('float32', <class 'numpy.float32'>)
    """

    __slots__ = ("_base", "_np", "_ref", "name")

    def __init__(self, name: str, np_type: Any, base: DType | None = None) -> None:
        self.name = name  # TensorFlow's spelling, e.g. "float32", "float32_ref"
        self._np = np.dtype(np_type)  # the numpy dtype that holds the values
        self._base: DType = self if base is None else base  # the value type (self unless a ref)
        self._ref: DType | None = None  # the ref twin of a base type, set by _make_ref

    @property
    def as_numpy_dtype(self) -> type:
        """The numpy scalar type (``np.float32``...); ``object`` for strings."""
        return self._np.type

    @property
    def np(self) -> np.dtype:
        """The numpy dtype object."""
        return self._np

    @property
    def is_floating(self) -> bool:
        return self._np.kind == "f"

    @property
    def is_integer(self) -> bool:
        return self._np.kind in "iu"

    @property
    def is_unsigned(self) -> bool:
        return self._np.kind == "u"

    @property
    def is_complex(self) -> bool:
        return self._np.kind == "c"

    @property
    def is_bool(self) -> bool:
        return self._np.kind == "b"

    @property
    def is_numeric(self) -> bool:
        return self._np.kind in "fiuc"

    @property
    def base_dtype(self) -> DType:
        """The value type: ``float32`` for ``float32_ref``, the dtype itself otherwise."""
        return self._base

    @property
    def is_ref_dtype(self) -> bool:
        """Whether this is a reference type (``float32_ref``).

        >>> float32_ref.is_ref_dtype, float32_ref.base_dtype is float32, float32.is_ref_dtype
        (True, True, False)
        """
        return self._base is not self

    @property
    def _as_ref(self) -> DType:
        """The reference type of this dtype's base (``float32`` -> ``float32_ref``)."""
        ref = self._base._ref
        assert ref is not None  # every base type has its twin (_make_ref)
        return ref

    @property
    def size(self) -> int:
        return self._np.itemsize

    @property
    def min(self) -> Any:
        return _limits(self._np).min

    @property
    def max(self) -> Any:
        return _limits(self._np).max

    def is_compatible_with(self, other: Any) -> bool:
        """TF's rule: ``other``'s values fit here; a base type accepts its ref, not the reverse.

        >>> float32.is_compatible_with(float32_ref), float32_ref.is_compatible_with(float32)
        (True, False)
        """
        other = as_dtype(other)
        return self is other or self is other.base_dtype

    def __repr__(self) -> str:
        return f"tf.{self.name}"

    def __reduce__(self) -> tuple:
        return (as_dtype, (self.name,))


def _limits(dt: np.dtype) -> Any:
    if dt.kind == "f":
        return np.finfo(dt)
    if dt.kind in "iu":
        return np.iinfo(dt)
    if dt.kind == "b":
        return type("BoolLimits", (), {"min": False, "max": True})
    raise TypeError(f"dtype {dt} has no min/max")


float16 = DType("float16", np.float16)
half = float16
float32 = DType("float32", np.float32)
float64 = DType("float64", np.float64)
double = float64
int8 = DType("int8", np.int8)
int16 = DType("int16", np.int16)
int32 = DType("int32", np.int32)
int64 = DType("int64", np.int64)
uint8 = DType("uint8", np.uint8)
uint16 = DType("uint16", np.uint16)
bool = DType("bool", np.bool_)
string = DType("string", np.object_)
complex64 = DType("complex64", np.complex64)
complex128 = DType("complex128", np.complex128)

ALL: tuple[DType, ...] = (
    float16, float32, float64, int8, int16, int32, int64, uint8, uint16,
    bool, string, complex64, complex128,
)  # fmt: skip


def _make_ref(base: DType) -> DType:
    ref = DType(base.name + "_ref", base.np, base)
    base._ref = ref
    return ref


float16_ref = _make_ref(float16)
float32_ref = _make_ref(float32)
float64_ref = _make_ref(float64)
int8_ref = _make_ref(int8)
int16_ref = _make_ref(int16)
int32_ref = _make_ref(int32)
int64_ref = _make_ref(int64)
uint8_ref = _make_ref(uint8)
uint16_ref = _make_ref(uint16)
bool_ref = _make_ref(bool)
string_ref = _make_ref(string)
complex64_ref = _make_ref(complex64)
complex128_ref = _make_ref(complex128)
half_ref = float16_ref
double_ref = float64_ref

REFS: tuple[DType, ...] = tuple(d._as_ref for d in ALL)  # the ref twins, in ALL's order
_BY_NAME: dict[str, DType] = {d.name: d for d in ALL + REFS}
_BY_NAME.update({"half": float16, "float": float32, "double": float64})
_BY_NP: dict[np.dtype, DType] = {d.np: d for d in ALL}
_BY_NP[np.dtype("U")] = string
_BY_NP[np.dtype("S")] = string


def as_dtype(value: Any) -> DType:
    """Turn a DType, numpy dtype/type or name into a :class:`DType`.

    >>> as_dtype(np.float64).name
    'float64'
    """
    if isinstance(value, DType):
        return value
    if isinstance(value, str) and value in _BY_NAME:
        return _BY_NAME[value]
    try:
        dt = np.dtype(value)
    except TypeError:
        raise TypeError(f"Cannot convert {value!r} to a flowbook dtype") from None
    if dt.kind in "USO":
        return string
    try:
        return _BY_NP[dt]
    except KeyError:
        raise TypeError(f"numpy dtype {dt} has no flowbook counterpart") from None


def of_value(value: Any) -> DType:
    """The dtype TensorFlow gives a Python or numpy value.

    Python floats become float32 and ints int32 (int64 when they do not fit),
    as ``tf.constant`` does; numpy arrays keep their dtype.

    >>> of_value(1.5).name, of_value([1, 2]).name, of_value(np.zeros(2)).name
    ('float32', 'int32', 'float64')
    """
    if isinstance(value, np.ndarray | np.generic):
        return as_dtype(value.dtype)
    arr = np.asarray(value)
    kind = arr.dtype.kind
    if kind == "f":
        return float32
    if kind in "iu":
        if arr.size and (arr.max() > np.iinfo(np.int32).max or arr.min() < np.iinfo(np.int32).min):
            return int64
        return int32
    if kind == "c":
        return complex64
    return as_dtype(arr.dtype)
