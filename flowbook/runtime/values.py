"""What goes into a run and what comes out: feeds checked as TensorFlow checks them, fetches.

**Feeds.** ``feed_target`` turns a feed_dict key (a Tensor, a Variable, a
``"name:0"`` string) into the graph's tensor; ``feed_value`` turns the value
into the array the run uses, refusing what TensorFlow refuses (integers out
of the dtype's range, non-whole or non-finite floats for integer tensors,
floats beyond float32, complex for real, strings for numbers, ragged rows,
symbolic tensors, a shape the tensor cannot take) with a message naming the
tensor and the cell/line of its op.  A fed variable gets a ``VarState`` of
its own for the run, so its readers see the fed value and its stored value
stays as it was.

**Fetches.** ``flatten`` turns a nest of fetches (tensors, ops, names like
``"c:0"``, variables, in lists, tuples, namedtuples and dicts) into unique
graph elements and a structure of indices; ``rebuild`` puts the fetched
values back into that structure.  ``to_numpy`` is what a fetched value looks
like to the user (a numpy array or scalar, never a device array or a
variable's state); ``host_value`` is the same as a copy, for values a run
still holds.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default() as g:
    ...     a = tf.constant(1.0, name="a")
    ...     n = tf.placeholder(tf.int32, [None], name="n")
    ...     elements, structure = flatten(g, {"x": a, "pair": (a, "a:0")})
    >>> [e.name for e in elements], rebuild(structure, [5]), feed_value(n, [1, 2]).dtype
    (['a:0'], {'x': 5, 'pair': (5, 5)}, dtype('int32'))
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from flowbook.framework.devices import to_host
from flowbook.framework.graph import Graph
from flowbook.framework.tensor import Operation, Tensor
from flowbook.framework.tensor_shape import compatible, fmt
from flowbook.state.var_state import VarState


# ---------------------------------------------------------------- fetches
def flatten(graph: Graph, fetches: Any) -> tuple[list[Any], Any]:
    """Unique graph elements of a nested fetch, and a structure of indices into them."""
    elements: list[Any] = []
    position: dict[Any, int] = {}

    def walk(f: Any) -> Any:
        if isinstance(f, list):
            return [walk(x) for x in f]
        if isinstance(f, tuple) and not hasattr(f, "_fields"):
            return tuple(walk(x) for x in f)
        if hasattr(f, "_fields"):  # namedtuple
            return type(f)(*[walk(x) for x in f])
        if isinstance(f, dict):
            return type(f)((k, walk(v)) for k, v in f.items())
        if f is None:
            raise TypeError("Fetch argument None has invalid type <class 'NoneType'>")
        element = fetch_element(graph, f)
        i = position.get(element)
        if i is None:
            i = position[element] = len(elements)
            elements.append(element)
        return _Leaf(i)

    return elements, walk(fetches)


class _Leaf:
    __slots__ = ("i",)

    def __init__(self, i: int) -> None:
        self.i = i


def rebuild(structure: Any, values: list[Any]) -> Any:
    if isinstance(structure, _Leaf):
        return values[structure.i]
    if isinstance(structure, list):
        return [rebuild(s, values) for s in structure]
    if hasattr(structure, "_fields"):
        return type(structure)(*[rebuild(s, values) for s in structure])
    if isinstance(structure, tuple):
        return tuple(rebuild(s, values) for s in structure)
    return type(structure)((k, rebuild(v, values)) for k, v in structure.items())


def fetch_element(graph: Graph, f: Any) -> Tensor | Operation:
    try:
        element = graph.as_graph_element(f, allow_tensor=True, allow_operation=True)
    except TypeError as e:
        raise TypeError(
            f"Fetch argument {f!r} has invalid type {type(f)}, must be a string or Tensor. ({e})"
        ) from None
    except KeyError as e:  # TensorFlow says ValueError, naming what is missing
        raise ValueError(
            f"Fetch argument {f!r} cannot be interpreted as a Tensor. ({e.args[0]})"
        ) from None
    except ValueError as e:
        raise ValueError(f"Fetch argument {f!r} cannot be interpreted as a Tensor. ({e})") from None
    return element


def to_numpy(value: Any) -> Any:
    """A fetched value as the user gets it: numpy, strings as ``bytes`` (as TensorFlow returns them).

    >>> to_numpy(np.array(["a", "b"], dtype=object)).tolist(), to_numpy(np.str_("c"))
    ([b'a', b'b'], b'c')
    """
    t = type(value)
    if t is np.ndarray:
        if value.dtype.kind in "OU":
            return _as_bytes(value)
        if value.ndim == 0:
            return value[()]
        return value if value.flags.writeable else value.copy()
    if isinstance(value, np.generic):
        return value.encode() if isinstance(value, str) else value
    if t is VarState:  # a fetch of a variable's own output ("W:0") gives its value
        return to_numpy(value.read())
    return np.asarray(value)


def _as_bytes(value: np.ndarray) -> Any:
    """A string array (object of ``str``, or unicode) as TF gives it: an object array of bytes."""
    out = np.empty(value.shape, dtype=object)
    out.flat[:] = [v.encode() if isinstance(v, str) else v for v in value.flat]
    return out[()] if out.ndim == 0 else out


def host_value(value: Any) -> Any:
    """A value as ``Session.run`` returns it, never sharing memory with the run's buffers.

    >>> host_value(np.arange(3)).tolist()
    [0, 1, 2]
    """
    if type(value) is VarState:
        value = value.read()
    v = to_numpy(to_host(value))  # a value on a GPU is copied to the host
    return v.copy() if isinstance(v, np.ndarray) else v


# ------------------------------------------------------------------ feeds
def feed_target(graph: Graph, key: Any) -> Tensor:
    if type(key) is Tensor and key.op.graph is graph:  # the common case, fast
        return key
    try:
        t = graph.as_graph_element(key, allow_tensor=True, allow_operation=False)
    except (TypeError, ValueError, KeyError) as e:
        msg = e.args[0] if e.args else str(e)
        raise TypeError(f"Cannot interpret feed_dict key {key!r} as a Tensor: {msg}") from None
    return t  # type: ignore[return-value]


def feed_items(graph: Graph, key: Any, value: Any) -> list[tuple[Tensor, Any]]:
    """The (tensor, checked value) pairs one ``feed_dict`` entry feeds.

    A SparseTensor key (a ``sparse_placeholder``) feeds its three parts from
    a ``SparseTensorValue``; any other key feeds its one tensor.
    """
    if hasattr(key, "_fields") and hasattr(key, "dense_shape"):  # a SparseTensor's parts
        out = []
        for part, part_value in zip(key, value, strict=True):
            t = feed_target(graph, part)
            out.append((t, feed_value(t, part_value)))
        return out
    t = feed_target(graph, key)
    return [(t, feed_value(t, value))]


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

    The common feeds (float64 to float32, int64 to int32) cost one cast (a
    narrowing integer cast uses numpy's ``same_value`` casting where numpy has
    it, numpy 2.4 on, else one comparison after it); the checks that walk
    values in Python run only for object arrays and floats fed to integers.
    """
    dt, kind, target = t.dtype, arr.dtype.kind, t.dtype.np
    if dt.name == "string":
        if kind not in "USO":
            raise TypeError(
                f"Cannot feed {arr.dtype} values to '{t.name}', which is string ({_made_at(t)})"
            )
        if kind == "S":
            return arr.astype(target)
        # a str fed becomes bytes: every string op's output holds bytes, as TF's do
        out = np.empty(arr.shape, dtype=object)
        out.flat[:] = [v.encode() if isinstance(v, str) else v for v in arr.flat]
        return out
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
    if SAME_VALUE and kind in "iu" and dt.is_integer and arr.size and not _fits(arr.dtype, target):
        try:  # a narrowing integer cast (int64 labels to int32): exact, or refused
            return arr.astype(target, casting="same_value")
        except ValueError:
            _check_range(t, [arr.min().item(), arr.max().item()])  # names the bound crossed
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


def _same_value_casting() -> bool:
    """Whether this numpy casts with ``casting="same_value"`` (numpy 2.4 on)."""
    try:
        np.zeros(1, np.int64).astype(np.int32, casting="same_value")
    except (TypeError, ValueError):
        return False
    return True


SAME_VALUE = _same_value_casting()  # exact integer narrowing in one cast


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
