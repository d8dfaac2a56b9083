"""Python functions as ops: ``py_func`` and ``numpy_function`` (PyFunc, PyFuncStateless).

The function itself cannot live in the graph, so, as in TF, the op holds a
``token`` string and this module's ``FUNCS`` maps the token to the function
(a graph imported from a GraphDef in the same process still finds it).
When the op runs, its kernel calls the function on the host with numpy
arrays and converts what it returns to the ``Tout`` dtypes; a wrong count
of results, a value that does not convert, or any exception the function
raises becomes an error naming the op and the line that built it.  The
outputs' shapes are unknown until the function has run.  Both ops are host
only and not differentiable (TF's ``NotDifferentiable``); ``PyFunc`` is
stateful (never folded or merged), ``PyFuncStateless`` is what
``stateful=False`` builds.

    >>> import flowbook as fb, numpy as np
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     y = fb.py_func(lambda a: np.sort(a)[::-1], [fb.constant([2, 9, 4])], fb.int32)
    ...     s.run(y).tolist()
    [9, 4, 2]
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np

from flowbook.framework import dtypes
from flowbook.framework.errors import InvalidArgumentError
from flowbook.framework.registry import NOT_DIFFERENTIABLE, Out, op
from flowbook.framework.tensor import Tensor
from flowbook.ops._builder import make, tensor

__all__ = ["numpy_function", "py_func"]

FUNCS: dict[str, Callable[..., Any]] = {}  # token -> the Python function a PyFunc op calls
_tokens = itertools.count()  # numbers the tokens: pyfunc_0, pyfunc_1...


def _call(xp: Any, *inputs: Any, token: str, Tout: list) -> Any:
    fn = FUNCS.get(token)
    if fn is None:
        raise InvalidArgumentError(None, None, f"No Python function is registered for {token!r}")
    result = fn(*[np.asarray(a) for a in inputs])  # host only: numpy arrays already
    values = list(result) if isinstance(result, list | tuple) else [result]
    if len(Tout) == 0 and result is None:
        values = []
    if len(values) != len(Tout):
        raise InvalidArgumentError(
            None, None, f"the function returned {len(values)} values, Tout lists {len(Tout)}"
        )
    out = []
    for k, (v, dt) in enumerate(zip(values, Tout)):
        a = np.asarray(v)
        if dt is dtypes.string:
            out.append(a.astype(object))
            continue
        try:
            out.append(a.astype(dt.np, casting="same_kind"))
        except TypeError:
            raise InvalidArgumentError(
                None, None, f"result {k} has dtype {a.dtype}, which does not convert to {dt.name}"
            ) from None
    return out[0] if len(out) == 1 else tuple(out)


def _infer(*inputs: Tensor, token: str, Tout: list) -> list[Out]:
    return [Out(dt, None) for dt in Tout]


op(
    "PyFunc",
    ("*input",),
    ("token", "Tout"),
    _infer,
    _call,
    stateful=True,
    host_only=True,
    grad=NOT_DIFFERENTIABLE,
    attr_kinds={"Tout": "list(type)"},
)
op(
    "PyFuncStateless",
    ("*input",),
    ("token", "Tout"),
    _infer,
    _call,
    stateful=False,
    host_only=True,
    grad=NOT_DIFFERENTIABLE,
    attr_kinds={"Tout": "list(type)"},
)


def py_func(
    func: Callable[..., Any],
    inp: Any,
    Tout: Any,
    stateful: bool = True,
    name: str | None = None,
) -> Any:
    """An op that calls ``func`` with the values of ``inp`` (numpy arrays) when it runs.

    ``Tout`` is a dtype (one output, returned bare) or a list of them (a
    list of outputs, possibly empty).  ``stateful=False`` promises the
    function is pure.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     lo, hi = fb.py_func(lambda a: (a.min(), a.max()), [[3.0, 1.0]], [fb.float32] * 2)
    ...     [float(v) for v in s.run([lo, hi])]
    [1.0, 3.0]
    """
    single = not isinstance(Tout, list | tuple)
    types = [dtypes.as_dtype(t) for t in ([Tout] if single else Tout)]
    token = f"pyfunc_{next(_tokens)}"
    FUNCS[token] = func
    inputs = [tensor(x) for x in (inp if isinstance(inp, list | tuple) else [inp])]
    op_type = "PyFunc" if stateful else "PyFuncStateless"
    op = make(op_type, inputs, {"token": token, "Tout": types}, name=name or "PyFunc")
    return op.outputs[0] if single else list(op.outputs) if types else op


def numpy_function(
    func: Callable[..., Any], inp: Any, Tout: Any, name: str | None = None, stateful: bool = True
) -> Any:
    """TF's later name for :func:`py_func`: ``func`` gets and returns numpy arrays.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.numpy_function(lambda a: a * 2, [fb.constant([1, 2])], fb.int32)).tolist()
    [2, 4]
    """
    return py_func(func, inp, Tout, stateful=stateful, name=name)
