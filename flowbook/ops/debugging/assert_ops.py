"""Assertions: the Assert op, and TF1's ``tf.assert_*`` functions built on it.

``Assert(condition, *data)`` has no outputs; when it runs and ``condition``
is False it raises InvalidArgumentError (which the executor prefixes with
the op's name and the line that built it) with ``data`` in TF1's format,
each value cut to ``summarize`` elements.  It is stateful, so it is never
folded away, and host only, as TF's kernel.  Run it by fetching it, or
make it a control input: ``with tf.control_dependencies([tf.assert_positive(x)])``.

Each ``assert_*`` function first checks statically: when the values are
known where the graph is built (constants) and the assertion fails, it
raises InvalidArgumentError there, at the line that wrote it.  Rank and
dtype assertions are static when the rank or dtype is known, as in TF1.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     x = fb.placeholder(fb.float32, [2])
    ...     check = fb.assert_positive(x, message="x must be positive")
    ...     s.run(check, {x: [1.0, 2.0]}) is None
    True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from flowbook.framework import dtypes
from flowbook.framework.errors import InvalidArgumentError
from flowbook.framework.graph import name_scope
from flowbook.framework.registry import NOT_DIFFERENTIABLE, op
from flowbook.framework.tensor import Operation, Tensor
from flowbook.ops._builder import make, operands, tensor
from flowbook.ops.array import array_ops
from flowbook.ops.array.constant_op import constant_value
from flowbook.ops.control_flow.control_flow_ops import no_op
from flowbook.ops.debugging.debug_ops import check_numerics
from flowbook.ops.debugging.debug_ops import summarize as _summarize
from flowbook.ops.math.elementwise_ops import (
    abs,
    equal,
    greater,
    greater_equal,
    less,
    less_equal,
    not_equal,
)
from flowbook.ops.math.reduction_ops import reduce_all, reduce_any

__all__ = [
    "Assert",
    "assert_equal",
    "assert_greater",
    "assert_greater_equal",
    "assert_integer",
    "assert_less",
    "assert_less_equal",
    "assert_near",
    "assert_negative",
    "assert_non_negative",
    "assert_non_positive",
    "assert_none_equal",
    "assert_positive",
    "assert_proper_iterable",
    "assert_rank",
    "assert_rank_at_least",
    "assert_rank_in",
    "assert_same_float_dtype",
    "assert_scalar",
    "assert_type",
    "is_non_decreasing",
    "is_strictly_increasing",
    "verify_tensor_all_finite",
]


def _text(value: Any, limit: int) -> str:
    a = np.asarray(value) if not hasattr(value, "get") else value.get()
    if a.dtype.kind in "SO" and a.ndim == 0:
        v = a[()]
        return v.decode() if isinstance(v, bytes) else str(v)
    return _summarize(a, limit)


def _assert_bind(xp: Any, summarize: int = 3) -> Callable[..., tuple]:
    def run(condition: Any, *data: Any) -> tuple:
        if not bool(np.asarray(condition)):
            texts = " ".join(_text(d, summarize) for d in data)
            raise InvalidArgumentError(None, None, f"assertion failed: {texts}")
        return ()

    return run


def _assert_infer(condition: Tensor, *data: Tensor, summarize: int = 3) -> list:
    if condition.dtype is not dtypes.bool:
        raise TypeError(f"condition must be a bool tensor, got {condition.dtype.name}")
    if condition._shape not in (None, ()):
        raise ValueError(f"condition must be a scalar, got shape {list(condition._shape)}")
    return []


op(
    "Assert",
    ("condition", "*data"),
    ("summarize",),
    _assert_infer,
    kernel=lambda xp, condition, *data, summarize=3: _assert_bind(xp, summarize)(condition, *data),
    bind=_assert_bind,
    stateful=True,
    host_only=True,
    grad=NOT_DIFFERENTIABLE,
    type_attrs={},
    num_outputs=0,
)


def Assert(
    condition: Any, data: Any, summarize: int | None = None, name: str | None = None
) -> Operation:
    """An op that raises InvalidArgumentError showing ``data`` when it runs and ``condition``
    (a bool scalar) is False.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.Assert(fb.constant(False), ["x is", fb.constant([1, 2])]))
    Traceback (most recent call last):
    ...
    flowbook.framework.errors.InvalidArgumentError: ...assertion failed: x is [1 2]
    """
    with name_scope(name, "Assert", [condition, data]) as scope:
        items = [tensor(d) for d in (data if isinstance(data, list | tuple) else [data])]
        attrs = {"summarize": 3 if summarize is None else int(summarize)}
        return make("Assert", [tensor(condition), *items], attrs, name=scope)


# ------------------------------------------------------------------ static checks
def _static_fail(data: list[Any], summarize: int | None) -> None:
    texts = []
    for d in data:
        v = d if not isinstance(d, Tensor) else constant_value(d)
        texts.append(d.name if v is None else _text(v, 3 if summarize is None else summarize))
    raise InvalidArgumentError(None, None, "\n".join(texts))


def _label(t: Tensor, what: str) -> str:
    return f"{what} (name: {t.name}) = "


def _checked(
    condition: Tensor,
    static_ok: Any,
    data: list[Any],
    summarize: int | None,
    name: str | None,
) -> Operation:
    """The Assert op, after the static check: ``static_ok`` False raises here, None defers."""
    if static_ok is not None and not bool(static_ok):
        _static_fail(data, summarize)
    return Assert(condition, data, summarize=summarize, name=name)


def _binary(
    op: Callable[..., Tensor], np_op: Callable[..., Any], symbol: str, default: str
) -> Callable[..., Operation]:
    def check(
        x: Any,
        y: Any,
        data: Any = None,
        summarize: int | None = None,
        message: str | None = None,
        name: str | None = None,
    ) -> Operation:
        with name_scope(name, default, [x, y, data]):
            x, y = operands(x, y)
            if data is None:
                data = [f"Condition x {symbol} y did not hold element-wise:"]
                data += [_label(x, "x"), x, _label(y, "y"), y]
            if message is not None:
                data = [message, *data]
            cx, cy = constant_value(x), constant_value(y)
            ok = None if cx is None or cy is None else np.all(np_op(cx, cy))
            return _checked(reduce_all(op(x, y)), ok, list(data), summarize, None)

    check.__name__ = check.__qualname__ = default
    check.__doc__ = f"""An Assert op that ``x {symbol} y`` holds element-wise (with broadcasting).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.{default}(fb.placeholder(fb.float32), 1.0).type
    'Assert'
    """
    return check


assert_equal = _binary(equal, np.equal, "==", "assert_equal")
assert_none_equal = _binary(not_equal, np.not_equal, "!=", "assert_none_equal")
assert_less = _binary(less, np.less, "<", "assert_less")
assert_less_equal = _binary(less_equal, np.less_equal, "<=", "assert_less_equal")
assert_greater = _binary(greater, np.greater, ">", "assert_greater")
assert_greater_equal = _binary(greater_equal, np.greater_equal, ">=", "assert_greater_equal")


def _sign(
    compare: Callable[..., Operation], zero_first: bool, what: str, default: str
) -> Callable[..., Operation]:
    def check(
        x: Any,
        data: Any = None,
        summarize: int | None = None,
        message: str | None = None,
        name: str | None = None,
    ) -> Operation:
        with name_scope(name, default, [x, data]):
            x = tensor(x)
            if data is None:
                data = [f"Condition x {what} did not hold element-wise:", _label(x, "x"), x]
            zero = tensor(np.zeros((), x.dtype.np))
            pair = (zero, x) if zero_first else (x, zero)
            return compare(*pair, data=data, summarize=summarize, message=message)

    check.__name__ = check.__qualname__ = default
    check.__doc__ = f"""An Assert op that every element of ``x`` is {what.split()[0]} {what.split()[1]}.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.{default}(fb.placeholder(fb.float32)).type
    'Assert'
    """
    return check


assert_positive = _sign(assert_less, True, "> 0", "assert_positive")  # 0 < x
assert_negative = _sign(assert_less, False, "< 0", "assert_negative")  # x < 0
assert_non_negative = _sign(assert_less_equal, True, ">= 0", "assert_non_negative")
assert_non_positive = _sign(assert_less_equal, False, "<= 0", "assert_non_positive")


def assert_near(
    x: Any,
    y: Any,
    rtol: Any = None,
    atol: Any = None,
    data: Any = None,
    summarize: int | None = None,
    message: str | None = None,
    name: str | None = None,
) -> Operation:
    """An Assert op that ``|x - y| <= atol + rtol * |y|`` element-wise (default tolerances:
    10 machine epsilons of the dtype).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.assert_near([1.0, 2.0], [1.0, 2.0000001])) is None
    True
    """
    with name_scope(name, "assert_near", [x, y, data]):
        x, y = operands(x, y)
        eps = float(np.finfo(x.dtype.np).eps)
        rt, at = (10 * eps if v is None else v for v in (rtol, atol))
        tol = tensor(at, dtype=x.dtype) + tensor(rt, dtype=x.dtype) * abs(y)
        diff = abs(x - y)
        if data is None:
            data = [f"x and y not equal to tolerance rtol = {rt}, atol = {at}"]
            data += [_label(x, "x"), x, _label(y, "y"), y]
        if message is not None:
            data = [message, *data]
        cx, cy = constant_value(x), constant_value(y)
        ok = None if cx is None or cy is None else np.all(np.abs(cx - cy) <= at + rt * np.abs(cy))
        return _checked(reduce_all(less_equal(diff, tol)), ok, list(data), summarize, None)


def _rank_check(
    x: Any,
    ok: Callable[[int], bool],
    dynamic: Callable[[Tensor], Tensor],
    what: str,
    default: str,
    message: str | None,
    name: str | None,
) -> Operation:
    """Static when the rank is known (ValueError, as TF1), else an Assert on the Rank op."""
    with name_scope(name, default, [x]):
        x = tensor(x)
        text = f"{message + ' ' if message else ''}Tensor {x.name} must have rank {what}."
        if x._shape is not None:
            if not ok(len(x._shape)):
                raise ValueError(f"{text} Received shape: {list(x._shape)}")
            return no_op()
        r = array_ops.rank(x)
        return Assert(dynamic(r), [text, "Received rank:", r])


def assert_rank(
    x: Any,
    rank: int,
    data: Any = None,
    summarize: int | None = None,
    message: str | None = None,
    name: str | None = None,
) -> Operation:
    """Check that ``x`` has rank ``rank``: statically when its rank is known, else when it runs.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.assert_rank(fb.zeros([2, 3]), 2).type
    'NoOp'
    """
    test = lambda r: equal(r, rank)
    return _rank_check(x, lambda n: n == rank, test, str(rank), "assert_rank", message, name)


def assert_rank_at_least(
    x: Any,
    rank: int,
    data: Any = None,
    summarize: int | None = None,
    message: str | None = None,
    name: str | None = None,
) -> Operation:
    """Check that ``x`` has rank ``rank`` or more.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.assert_rank_at_least(fb.zeros([2, 3]), 1).type
    'NoOp'
    """
    test = lambda r: greater_equal(r, rank)
    what = f"at least {rank}"
    return _rank_check(x, lambda n: n >= rank, test, what, "assert_rank_at_least", message, name)


def assert_rank_in(
    x: Any,
    ranks: Any,
    data: Any = None,
    summarize: int | None = None,
    message: str | None = None,
    name: str | None = None,
) -> Operation:
    """Check that the rank of ``x`` is one of ``ranks``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.assert_rank_in(fb.zeros([2]), [1, 2]).type
    'NoOp'
    """
    allowed = [int(r) for r in ranks]

    def test(r: Tensor) -> Tensor:
        return reduce_any(array_ops.stack([equal(r, k) for k in allowed]))

    what = f"in {allowed}"
    return _rank_check(x, lambda n: n in allowed, test, what, "assert_rank_in", message, name)


def assert_scalar(tensor: Any, name: str | None = None, message: str | None = None) -> Tensor:
    """``tensor`` itself when its static rank is 0; ValueError otherwise (also when unknown).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.assert_scalar(fb.constant(1.0)).shape.as_list()
    []
    """
    t = _to_tensor(tensor)
    if t._shape != ():
        prefix = f"{message} " if message else ""
        raise ValueError(f"{prefix}Expected scalar shape for {t.name}, saw shape: {t.get_shape()}.")
    return t


def assert_integer(x: Any, message: str | None = None, name: str | None = None) -> Operation:
    """TypeError unless ``x`` has an integer dtype (a static check); returns a no-op.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.assert_integer(fb.constant(1)).type
    'NoOp'
    """
    t = _to_tensor(x)
    if not t.dtype.is_integer:
        prefix = f"{message}: " if message else ""
        raise TypeError(f"{prefix}Expected integer type for {t.name}, got {t.dtype.name}.")
    return no_op(name=name)


def assert_type(
    tensor: Any, tf_type: Any, message: str | None = None, name: str | None = None
) -> Operation:
    """TypeError unless ``tensor`` has dtype ``tf_type`` (a static check); returns a no-op.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.assert_type(fb.constant(1.0), fb.float32).type
    'NoOp'
    """
    t, want = _to_tensor(tensor), dtypes.as_dtype(tf_type)
    if t.dtype is not want:
        prefix = f"{message}: " if message else ""
        raise TypeError(f"{prefix}{t.name} must be of type {want.name}; got {t.dtype.name}")
    return no_op(name=name)


def assert_same_float_dtype(tensors: Any = None, dtype: Any = None) -> dtypes.DType:
    """The one float dtype of ``tensors`` (and ``dtype``); ValueError when they differ or are
    not floats.  float32 when there is none.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.assert_same_float_dtype([fb.constant(1.0, fb.float64)]).name
    'float64'
    """
    found = [dtypes.as_dtype(dtype)] if dtype is not None else []
    found += [t.dtype for t in tensors or [] if t is not None]
    if any(d is not found[0] for d in found):
        raise ValueError(f"Expected the same dtype, got {[d.name for d in found]}")
    if found and not found[0].is_floating:
        raise ValueError(f"Expected floating point type, got {found[0].name}.")
    return found[0] if found else dtypes.float32


def assert_proper_iterable(values: Any) -> None:
    """TypeError when ``values`` is a tensor, an array or a string rather than a list of them.

    >>> assert_proper_iterable([1, 2]) is None
    True
    """
    if isinstance(values, Tensor | np.ndarray | str | bytes) or hasattr(values, "_as_tensor"):
        raise TypeError(f"Expected argument values to be a proper iterable, got {type(values)}")
    if not hasattr(values, "__iter__"):
        raise TypeError(f"Expected argument values to be iterable, got {type(values)}")


def _monotonic(x: Any, strict: bool, name: str | None, default: str) -> Tensor:
    with name_scope(name, default, [x]) as scope:
        flat = array_ops.reshape(_to_tensor(x), [-1])
        pair = (flat[:-1], flat[1:])
        return reduce_all(less(*pair) if strict else less_equal(*pair), name=scope)


def is_non_decreasing(x: Any, name: str | None = None) -> Tensor:
    """A bool scalar: each element of ``x`` (flattened) is >= the one before.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     bool(s.run(fb.is_non_decreasing([1, 1, 2])))
    True
    """
    return _monotonic(x, False, name, "is_non_decreasing")


def is_strictly_increasing(x: Any, name: str | None = None) -> Tensor:
    """A bool scalar: each element of ``x`` (flattened) is > the one before.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     bool(s.run(fb.is_strictly_increasing([1, 1, 2])))
    False
    """
    return _monotonic(x, True, name, "is_strictly_increasing")


def verify_tensor_all_finite(t: Any, msg: str, name: str | None = None) -> Tensor:
    """``t`` unchanged, after a CheckNumerics op that fails with ``msg`` on NaN or Inf.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.verify_tensor_all_finite([1.0, 2.0], "bad")).tolist()
    [1.0, 2.0]
    """
    return check_numerics(_to_tensor(t), msg, name=name or "VerifyFinite")


_to_tensor = tensor  # the builder's, for functions whose TF1 argument is named ``tensor``
