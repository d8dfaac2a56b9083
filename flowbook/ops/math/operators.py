"""Python operators on tensors and variables: ``+ - * / // % ** @``, unary ``- abs ~``,
``< <= > >=``, ``& | ^`` and ``tensor[...]``.

As in TF1, ``a + b`` builds an op named ``add`` and a Python operand becomes a
constant of the tensor's dtype named after its side (``add/y``); ``==`` stays
identity, so tensors work as dict keys in ``feed_dict``.  The table maps each
dunder to the wrapper function it calls and the op name it uses.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     x = fb.constant(2.0); y = 3 * x + 1
    >>> y.op.name, y.op.inputs[1].op.name
    ('add', 'add/y')
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowbook.framework.tensor import Tensor
from flowbook.ops._builder import tensor
from flowbook.ops.array import array_ops
from flowbook.ops.math import math_ops

# dunder -> (module, function, op name); the reflected form (__radd__...) is added too
_BINARY = {
    "__add__": (math_ops, "add", "add"),
    "__sub__": (math_ops, "subtract", "sub"),
    "__mul__": (math_ops, "multiply", "mul"),
    "__truediv__": (math_ops, "truediv", "truediv"),
    "__floordiv__": (math_ops, "floordiv", "floordiv"),
    "__mod__": (math_ops, "floormod", "mod"),
    "__pow__": (math_ops, "pow", "pow"),
    "__matmul__": (math_ops, "matmul", "matmul"),
    "__and__": (math_ops, "logical_and", "and"),
    "__or__": (math_ops, "logical_or", "or"),
    "__xor__": (math_ops, "logical_xor", "xor"),
}
_COMPARE = {
    "__lt__": (math_ops, "less", "Less"),
    "__le__": (math_ops, "less_equal", "LessEqual"),
    "__gt__": (math_ops, "greater", "Greater"),
    "__ge__": (math_ops, "greater_equal", "GreaterEqual"),
}
_UNARY = {
    "__neg__": (math_ops, "negative", "Neg"),
    "__abs__": (math_ops, "abs", "Abs"),
    "__invert__": (math_ops, "logical_not", "LogicalNot"),
}


def _binary(module: Any, fn_name: str, op_name: str, reflected: bool) -> Any:
    def method(self: Any, other: Any) -> Tensor:
        x = tensor(self)
        graph = x.graph
        with graph.name_scope(op_name) as scope:
            if isinstance(other, Tensor) or hasattr(other, "_as_tensor"):
                y = tensor(other)
            else:
                y = tensor(
                    other,
                    dtype=None if _keeps_dtype(other) else x.dtype,
                    name="x" if reflected else "y",
                )
            a, b = (y, x) if reflected else (x, y)
            return getattr(module, fn_name)(a, b, name=scope)

    method.__name__ = f"__r{fn_name}__" if reflected else fn_name
    return method


def _keeps_dtype(value: Any) -> bool:
    return isinstance(value, np.ndarray | np.generic)


def _unary(module: Any, fn_name: str, op_name: str) -> Any:
    def method(self: Any) -> Tensor:
        return getattr(module, fn_name)(tensor(self), name=op_name)

    return method


def _getitem(self: Any, key: Any) -> Tensor:
    return array_ops.slice_helper(tensor(self), key)


def attach(cls: type) -> None:
    """Give ``cls`` (Tensor, Variable) the Python operators of the table above."""
    for dunder, (module, fn, op_name) in _BINARY.items():
        setattr(cls, dunder, _binary(module, fn, op_name, reflected=False))
        setattr(cls, dunder.replace("__", "__r", 1), _binary(module, fn, op_name, reflected=True))
    for dunder, (module, fn, op_name) in _COMPARE.items():
        setattr(cls, dunder, _binary(module, fn, op_name, reflected=False))
    for dunder, (module, fn, op_name) in _UNARY.items():
        setattr(cls, dunder, _unary(module, fn, op_name))
    cls.__getitem__ = _getitem  # type: ignore[attr-defined]
