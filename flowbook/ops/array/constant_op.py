"""Constants, placeholders and turning Python values into tensors.

``Const`` holds its value as an attr (a read-only numpy array), so the graph
alone describes it; ``Placeholder`` has no kernel at all: a run that needs one
must feed it.  ``convert_to_tensor`` is how every op wrapper accepts Python
numbers, lists, numpy arrays, tensors and variables alike.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.constant([1, 2]) * 2).tolist()
    [2, 4]
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np

from flowbook.framework import dtypes
from flowbook.framework.errors import InvalidArgumentError
from flowbook.framework.graph import get_default_graph, name_scope
from flowbook.framework.registry import NOT_DIFFERENTIABLE, Out, op
from flowbook.framework.source import capture
from flowbook.framework.tensor import Tensor
from flowbook.framework.tensor_shape import as_shape, fmt, num_elements


def _const_bind(xp: Any, value: np.ndarray, dtype: Any) -> Any:
    on_device = value if xp is np else xp.asarray(value)
    return lambda: on_device


op(
    "Const",
    (),
    ("value", "dtype"),
    infer=lambda value, dtype: Out(dtype, value.shape),
    kernel=lambda xp, value, dtype: value if xp is np else xp.asarray(value),
    bind=_const_bind,
    doc="A constant tensor; its value is an attr.",
    type_attrs={},
    grad=NOT_DIFFERENTIABLE,
)


def _placeholder_kernel(xp: Any, dtype: Any, shape: Any) -> Any:
    raise InvalidArgumentError(
        None,
        None,
        f"You must feed a value for placeholder tensor with dtype {dtype.name} and shape {fmt(shape)}",
    )


op(
    "Placeholder",
    (),
    ("dtype", "shape"),
    infer=lambda dtype, shape: Out(dtype, shape),
    kernel=_placeholder_kernel,
    doc="A value the run must feed.",
    type_attrs={},
    grad=NOT_DIFFERENTIABLE,
)


def _const_array(
    value: Any, dtype: dtypes.DType | None, shape: Any, verify_shape: bool
) -> np.ndarray:
    if isinstance(value, Tensor):
        raise TypeError(f"constant() needs a Python or numpy value, got the tensor '{value.name}'")
    dt = dtypes.as_dtype(dtype) if dtype is not None else dtypes.of_value(value)
    try:
        arr = np.array(value, dtype=dt.np)
    except OverflowError:
        raise ValueError(f"Cannot convert {value!r} to a {dt.name} tensor: out of range") from None
    except (TypeError, ValueError) as e:
        raise TypeError(f"Cannot convert {value!r} to a {dt.name} tensor: {e}") from None
    if dt is dtypes.string:
        arr = _utf8(arr)
    if dt.is_integer and not isinstance(value, np.ndarray | np.generic):
        raw = np.asarray(value)
        if raw.dtype.kind == "f" and not np.array_equal(raw, arr):
            raise TypeError(
                f"Expected {dt.name}, got {value!r} of type '{type(value).__name__}' instead."
            )
    if shape is not None:
        target = as_shape(shape)
        if None in target:  # type: ignore[operator]
            raise ValueError(f"A constant's shape must be fully known, got {fmt(target)}")
        if arr.shape != target:
            if verify_shape:
                raise TypeError(f"Expected Tensor's shape: {fmt(target)}, got {fmt(arr.shape)}.")
            if arr.size == 1:
                arr = np.full(target, arr.reshape(()), dtype=dt.np)
            elif arr.size == num_elements(target):
                arr = arr.reshape(target)
            else:
                raise ValueError(
                    f"Too many or too few elements ({arr.size}) for a constant of shape {fmt(target)}"
                )
    arr.flags.writeable = False  # the graph owns it; a fetch hands out a copy
    return arr


def _utf8(arr: np.ndarray) -> np.ndarray:
    """A string array with every ``str`` encoded: a string tensor holds ``bytes``, as TF's do.

    Every op producing strings (DecodeCSV, StringJoin, feeds...) yields
    ``bytes``, so a ``str`` kept here would compare unequal to them.
    """
    out = np.empty(arr.shape, dtype=object)
    out.flat[:] = [v.encode() if isinstance(v, str) else v for v in arr.flat]
    return out


def constant(
    value: Any,
    dtype: Any = None,
    shape: Any = None,
    name: str = "Const",
    verify_shape: bool = False,
) -> Tensor:
    """A constant tensor (TF1's ``tf.constant``).

    Python floats give float32 and ints int32, as in TensorFlow; a scalar
    value with a ``shape`` fills that shape.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.constant(0.5, shape=[2, 3]).get_shape().as_list()
    [2, 3]
    """
    arr = _const_array(value, dtype, shape, verify_shape)
    dt = dtypes.as_dtype(arr.dtype) if dtype is None else dtypes.as_dtype(dtype)
    op = get_default_graph().create_op(
        "Const", (), {"value": arr, "dtype": dt}, name=name, site=capture(2)
    )
    return op.outputs[0]


def placeholder(dtype: Any, shape: Any = None, name: str | None = None) -> Tensor:
    """A tensor whose value every run must feed (TF1's ``tf.placeholder``).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.placeholder(fb.float32, [None, 784], name="x").name
    'x:0'
    """
    attrs = {"dtype": dtypes.as_dtype(dtype), "shape": as_shape(shape)}
    op = get_default_graph().create_op(
        "Placeholder", (), attrs, name=name or "Placeholder", site=capture(2)
    )
    return op.outputs[0]


def convert_to_tensor(
    value: Any, dtype: Any = None, name: str | None = None, preferred_dtype: Any = None
) -> Tensor:
    """A Tensor for ``value``: itself if a Tensor, a Variable's value, else a new Const.

    A Python number takes ``dtype`` (or ``preferred_dtype``) when given, so
    ``x * 2`` with a float32 ``x`` multiplies by a float32 2.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.convert_to_tensor(3, dtype=fb.float32).dtype
    tf.float32
    """
    if isinstance(value, Tensor):
        if dtype is not None and value.dtype is not dtypes.as_dtype(dtype):
            raise ValueError(
                f"Tensor conversion requested dtype {dtypes.as_dtype(dtype).name} for the "
                f"{value.dtype.name} tensor '{value.name}'"
            )
        return value
    as_tensor = getattr(value, "_as_tensor", None)
    if as_tensor is not None:  # a Variable
        return convert_to_tensor(as_tensor(), dtype=dtype, name=name)
    if isinstance(value, list | tuple) and any(
        isinstance(v, Tensor) or hasattr(v, "_as_tensor") for v in value
    ):
        return _pack([convert_to_tensor(v, dtype=dtype) for v in value], name or "packed")
    if dtype is None and preferred_dtype is not None:
        try:
            return _const_tensor(value, preferred_dtype, name)
        except (TypeError, ValueError):
            pass
    return _const_tensor(value, dtype, name)


def _const_tensor(value: Any, dtype: Any, name: str | None) -> Tensor:
    arr = _const_array(value, dtype, None, False)
    dt = dtypes.as_dtype(arr.dtype) if dtype is None else dtypes.as_dtype(dtype)
    op = get_default_graph().create_op(
        "Const", (), {"value": arr, "dtype": dt}, name=name or "Const", site=capture(3)
    )
    return op.outputs[0]


def _pack(tensors: list[Tensor], name: str) -> Tensor:
    """A list holding tensors as one tensor: the ``Pack`` that ``stack`` builds.

    Built by type: ``concat_ops`` (which declares Pack and ``stack``) imports
    this module, so this one does not import it.
    """
    with name_scope(name, "stack") as scope:
        attrs = {"N": len(tensors), "axis": 0}
        return get_default_graph().create_op("Pack", tensors, attrs, name=scope).outputs[0]


FOLD_LIMIT = 4096  # largest input (in elements) constant_value folds at build time

# While a plan works out its shapes for given feeds (``flowbook.runtime.codegen.compile.shapes_given_feeds``):
# (tensor -> its actual shape, the fed tensors, whose values the graph does not determine)
_GIVEN: ContextVar[tuple[dict[Tensor, Any], set[Tensor]] | None] = ContextVar(
    "given_shapes", default=None
)


@contextmanager
def given_shapes(shapes: dict[Tensor, Any], fed: set[Tensor]) -> Iterator[None]:
    """Inside, ``constant_value`` reads ``shapes`` before the graph's static shapes, and
    knows no value of a tensor in ``fed``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     x = fb.placeholder(fb.float32, [None, 3]); n = fb.shape(x)[0] * 2
    ...     with given_shapes({x: (5, 3)}, {x}):
    ...         int(constant_value(n))
    ...     constant_value(n) is None
    10
    True
    """
    token = _GIVEN.set((shapes, fed))
    try:
        yield
    finally:
        _GIVEN.reset(token)


def _static_shape(t: Tensor) -> Any:
    """``t``'s shape as far as known: its given shape (see ``given_shapes``), else static."""
    given = _GIVEN.get()
    return t._shape if given is None else given[0].get(t, t._shape)


def constant_value(tensor: Tensor, _depth: int = 0) -> np.ndarray | None:
    """The value of a tensor when the graph alone determines it, else None.

    Shape inference uses it for shape-like inputs (``reshape(x, [-1, 10])``).
    Const is its value; Shape, Size and Rank of a known shape are known; any
    other stateless op whose inputs are all known (and small) is folded by
    running its own kernel on numpy, so ``fb.shape(x)[0]`` or ``stack([n, 10])``
    are known whenever their parts are.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     constant_value(fb.shape(fb.zeros([2, 3]))[1:] * 2).tolist()
    [6]
    """
    op = tensor.op
    t = op.type
    given = _GIVEN.get()
    if given is not None and op.outputs[tensor.value_index] in given[1]:
        return None  # fed: its value is the feed's
    if t == "Const":
        return op.attrs["value"]
    if t == "Shape":
        s = _static_shape(op.inputs[0])
        if s is not None and None not in s:
            return np.array(s, dtype=op.outputs[0].dtype.np)
        return None
    if t == "Size":
        n = num_elements(_static_shape(op.inputs[0]))
        return None if n is None else np.array(n, dtype=op.outputs[0].dtype.np)
    if t == "Rank":
        s = _static_shape(op.inputs[0])
        return None if s is None else np.array(len(s), dtype=np.int32)
    opdef = op._opdef
    if opdef.stateful or opdef.kernel is None or t == "Placeholder" or _depth > 32:
        return None
    values = []
    for x in op.inputs:
        v = constant_value(x, _depth + 1)
        if v is None or np.size(v) > FOLD_LIMIT:
            return None
        values.append(v)
    try:
        with np.errstate(all="ignore"):
            result = opdef.bound_kernel(np, op.attrs)(*values)
    except Exception:
        return None
    if len(op.outputs) != 1:
        result = result[tensor.value_index]
    return np.asarray(result)


def partial_shape_value(tensor: Tensor) -> tuple[int | None, ...] | None:
    """A shape-valued 1-D tensor as a static shape, with None where unknown.

    ``reshape(x, fb.stack([fb.shape(x)[0], 10]))`` knows the 10 even when the
    batch size is unknown.
    """
    v = constant_value(tensor)
    if v is not None:
        return tuple(None if int(d) == -1 else int(d) for d in np.ravel(v))
    op = tensor.op
    if op.type == "Shape":
        return _static_shape(op.inputs[0])
    if op.type == "Pack":
        dims: list[int | None] = []
        for x in op.inputs:
            c = constant_value(x)
            dims.append(None if c is None or int(c) == -1 else int(c))
        return tuple(dims)
    s = tensor._shape
    if s is not None and len(s) == 1 and s[0] is not None:
        return (None,) * s[0]
    return None
