"""What ``Session.run`` accepts as a feed: the fed tensor, and its value checked as TF does.

``feed_target`` turns a feed_dict key (a Tensor, a Variable, a ``"name:0"``
string) into the graph's tensor; ``feed_value`` turns the value into the
array the run uses, refusing what TensorFlow refuses (integers out of the
dtype's range, non-whole floats for integer tensors, strings for numbers,
ragged rows, symbolic tensors, a shape the tensor cannot take) with a message
naming the tensor and the cell/line of its op.  A fed variable gets a
``VarState`` of its own for the run, so its readers see the fed value and its
stored value stays as it was.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     n = fb.placeholder(fb.int32, [None], name="n")
    ...     feed_value(n, [1, 2]).dtype
    dtype('int32')
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from flowbook.graph import Graph
from flowbook.tensor import Tensor
from flowbook.tensor_shape import compatible, fmt
from flowbook.var_state import VarState


def feed_target(graph: Graph, key: Any) -> Tensor:
    try:
        t = graph.as_graph_element(key, allow_tensor=True, allow_operation=False)
    except (TypeError, ValueError, KeyError) as e:
        msg = e.args[0] if e.args else str(e)
        raise TypeError(f"Cannot interpret feed_dict key {key!r} as a Tensor: {msg}") from None
    return t  # type: ignore[return-value]


def feed_value(t: Tensor, value: Any) -> Any:
    """``value`` as the array fed to ``t``, checked as TensorFlow checks feeds.

    Integers must fit ``t``'s dtype (2**40 fed to an int32 is refused, never
    wrapped), floats fed to an integer tensor must be whole, rows must have
    equal lengths, strings feed only string tensors; every refusal names the
    tensor and where its op was made.  Feeding a variable gives this run its
    own ``VarState`` holding the value: readers see it, updates change only it,
    and the variable's stored value is untouched (TF1's semantics).
    """
    if isinstance(value, Tensor) or hasattr(value, "_as_tensor"):
        raise TypeError(
            f"The value fed to '{t.name}' is a symbolic tensor. Acceptable feed values are Python "
            "scalars, strings, lists and numpy arrays: run it first and feed the result."
        )
    target = t.dtype.np
    if type(value) is np.ndarray:
        arr = value
    else:
        try:
            arr = np.asarray(value)
        except ValueError:  # rows of different lengths
            raise ValueError(
                f"Cannot feed a ragged value to '{t.name}': its rows have different lengths; "
                f"feed a rectangular list or array ({_made_at(t)})"
            ) from None
    if arr.dtype != target:
        arr = _converted(t, arr)
    if not compatible(t._shape, arr.shape):
        raise ValueError(
            f"Cannot feed value of shape {fmt(arr.shape)} for Tensor '{t.name}', which has shape "
            f"{fmt(t._shape)} ({_made_at(t)})"
        )
    if t.op.type == "VariableV2":
        state = VarState(t.op)
        state.store(np, arr)
        return state
    return arr


def _made_at(t: Tensor) -> str:
    return f"{t.op.type} '{t.op.name}' created at {t.op.site.describe()}"


def _converted(t: Tensor, arr: np.ndarray) -> np.ndarray:
    """``arr`` as ``t``'s dtype, refusing what would change its values or make no sense.

    The common feeds (float64 to float32, int64 to int32) cost one cast and,
    for a narrowing integer cast, one comparison; the checks that walk values
    in Python run only for object arrays and floats fed to integers.
    """
    dt, kind, target = t.dtype, arr.dtype.kind, t.dtype.np
    if dt.name == "string":
        if kind not in "USO":
            raise TypeError(f"Cannot feed {arr.dtype} values to '{t.name}', which is string "
                            f"({_made_at(t)})")  # fmt: skip
        return arr.astype(target)
    if kind in "USO" and not (kind == "O" and _all_numbers(arr)):
        raise TypeError(
            f"Cannot feed {_kinds(arr)} to '{t.name}', which is {dt.name} ({_made_at(t)})"
        )
    if kind == "c" and not dt.is_complex:
        raise TypeError(
            f"Cannot feed complex values to '{t.name}', which is {dt.name}: the imaginary part "
            f"would be lost ({_made_at(t)})"
        )
    if dt.is_integer and arr.size and kind in "fO":
        _check_whole(t, arr)
        if kind == "O":
            _check_range(t, list(arr.flat))  # Python ints of any size
    try:
        if kind in "fO":  # a float too big for float32, or for the integer dtype
            with np.errstate(over="raise", invalid="raise"):
                out = arr.astype(target)
        else:
            out = arr.astype(target)
    except FloatingPointError:
        if dt.is_integer:
            _check_range(t, [arr.min().item(), arr.max().item()])
        big = float(np.abs(arr[np.isfinite(arr)]).max()) if kind == "f" else float("nan")
        raise ValueError(
            f"The value fed to '{t.name}' does not fit {dt.name}: {big:g} is beyond its "
            f"largest value {np.finfo(target).max:g} ({_made_at(t)})"
        ) from None
    except (TypeError, ValueError, OverflowError) as e:
        raise TypeError(
            f"Cannot convert the value fed to '{t.name}' to {dt.name}: {e} ({_made_at(t)})"
        ) from None
    narrowing = dt.is_integer and kind in "iu" and arr.size and not _fits(arr.dtype, target)
    if narrowing and (kind != target.kind or not (out == arr).all()):  # the cast wrapped
        _check_range(t, [arr.min().item(), arr.max().item()])
    return out


def _all_numbers(arr: np.ndarray) -> bool:
    """Whether an object array holds only Python/numpy numbers (big ints, say)."""
    return all(isinstance(v, int | float | np.number | np.bool_) for v in arr.flat)


def _check_whole(t: Tensor, arr: np.ndarray) -> None:
    """Floats fed to an integer tensor must be finite whole numbers."""
    values = arr.astype(np.float64) if arr.dtype.kind == "O" and not _all_ints(arr) else arr
    if values.dtype.kind == "f" and not (
        np.isfinite(values).all() and np.array_equal(values, np.trunc(values))
    ):
        raise TypeError(
            f"Cannot feed non-integer values of dtype {arr.dtype} to '{t.name}', which is "
            f"{t.dtype.name} ({_made_at(t)})"
        )


def _check_range(t: Tensor, values: list) -> None:
    """Refuse integers outside ``t``'s dtype, naming the first bound crossed."""
    info = _iinfo(t.dtype.np)
    low, high = min(values), max(values)
    if low < info.min or high > info.max:
        bad = low if low < info.min else high
        raise ValueError(
            f"The value fed to '{t.name}' does not fit {t.dtype.name}: {int(bad)} is outside "
            f"[{info.min}, {info.max}] ({_made_at(t)})"
        )


@functools.cache
def _iinfo(dtype: np.dtype) -> np.iinfo:
    return np.iinfo(dtype)  # slow to make (microseconds): made once per dtype


@functools.cache
def _fits(src: np.dtype, dst: np.dtype) -> bool:
    """Whether every value of integer dtype ``src`` is one of ``dst``."""
    a, b = _iinfo(src), _iinfo(dst)
    return b.min <= a.min and a.max <= b.max


def _all_ints(arr: np.ndarray) -> bool:
    return all(isinstance(v, int | np.integer) for v in arr.flat)


def _kinds(arr: np.ndarray) -> str:
    """``"strings"``, or the Python types an object array holds: for messages."""
    if arr.dtype.kind in "US":
        return "strings"
    names = sorted({type(v).__name__ for v in arr.flat})
    return "values of type " + ", ".join(names[:4])
