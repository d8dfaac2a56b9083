"""Small helpers shared by the op wrappers: create an op, convert operands, infer.

>>> import flowbook as fb
>>> from flowbook.ops._builder import make1
>>> with fb.Graph().as_default():
...     make1("Identity", [fb.constant(1.0)]).op.type
'Identity'
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowbook.framework.dtypes import DType
from flowbook.framework.graph import get_default_graph
from flowbook.framework.registry import Out
from flowbook.framework.tensor import Operation, Tensor
from flowbook.ops.array.constant_op import convert_to_tensor


def make(
    op_type: str, inputs: Any = (), attrs: dict[str, Any] | None = None, name: str | None = None
) -> Operation:
    """Create an op of ``op_type`` in the default graph; returns the Operation."""
    return get_default_graph().create_op(op_type, tuple(inputs), attrs, name=name)


def make1(
    op_type: str, inputs: Any = (), attrs: dict[str, Any] | None = None, name: str | None = None
) -> Tensor:
    """Create a single-output op; returns its output tensor."""
    return get_default_graph().create_op(op_type, tuple(inputs), attrs, name=name).outputs[0]


def tensor(value: Any, dtype: Any = None, name: str | None = None) -> Tensor:
    """``convert_to_tensor``, with a fast path for a tensor that needs nothing."""
    if type(value) is Tensor and dtype is None:
        return value
    return convert_to_tensor(value, dtype=dtype, name=name)


def operands(x: Any, y: Any) -> tuple[Tensor, Tensor]:
    """Convert a binary op's operands; a Python number takes the other side's dtype.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     a, b = operands(fb.constant(1.5), 2)
    >>> b.dtype
    tf.float32
    """
    if type(x) is Tensor and type(y) is Tensor:
        return x, y
    x_is = isinstance(x, Tensor) or hasattr(x, "_as_tensor")
    y_is = isinstance(y, Tensor) or hasattr(y, "_as_tensor")
    if x_is or not y_is:
        x = tensor(x)
        y = _convert_like(y, x.dtype)
    else:
        y = tensor(y)
        x = _convert_like(x, y.dtype)
    return x, y


def _convert_like(value: Any, dtype: DType) -> Tensor:
    if isinstance(value, Tensor) or hasattr(value, "_as_tensor"):
        return tensor(value)
    if isinstance(value, np.ndarray | np.generic):  # numpy values keep their own dtype
        return tensor(value)
    return tensor(value, dtype=dtype)


def same_dtype(op_type: str, names: tuple[str, ...], *tensors: Tensor) -> DType:
    """The common dtype of an op's inputs, or TF's TypeError naming the mismatch."""
    first = tensors[0].dtype
    for n, t in zip(names[1:], tensors[1:]):
        if t.dtype is not first:
            raise TypeError(
                f"Input '{n}' of '{op_type}' Op has type {t.dtype.name} that does not match type "
                f"{first.name} of argument '{names[0]}'."
            )
    return first


def same_as_input(x: Tensor, **_: Any) -> Out:
    """``infer`` for ops whose output looks exactly like their first input."""
    return Out(x.dtype, x._shape)
