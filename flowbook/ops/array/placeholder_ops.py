"""PlaceholderWithDefault: a value the graph computes unless the run feeds another, and
``get_static_value``.

The op passes its input through; a feed replaces its output as it replaces
any tensor's, so ``placeholder_with_default(True, [])`` is the TF1 idiom for
an ``is_training`` switch that is fed only while evaluating.  Its static
shape is the declared ``shape`` (which may be less specific than the
default's), so the graph built on it accepts every feed of that shape.
As in TF, no gradient flows into the default.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     training = fb.placeholder_with_default(True, [])
    ...     bool(s.run(training)), bool(s.run(training, {training: False}))
    (True, False)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowbook.framework.registry import NOT_DIFFERENTIABLE, Out, op
from flowbook.framework.tensor import Tensor
from flowbook.framework.tensor_shape import TensorShape, compatible, fmt
from flowbook.ops._builder import make1, tensor
from flowbook.ops.array.constant_op import constant_value

__all__ = ["get_static_value", "placeholder_with_default"]


def _infer(input: Tensor, dtype: Any, shape: Any) -> Out:
    want = TensorShape(shape).as_tuple()
    if input.dtype is not dtype:
        raise TypeError(f"the default has dtype {input.dtype.name}, the op {dtype.name}")
    if not compatible(want, input._shape):
        raise ValueError(
            f"the default's shape {fmt(input._shape)} is not compatible with {fmt(want)}"
        )
    return Out(dtype, want)


op(
    "PlaceholderWithDefault",
    ("input",),
    ("dtype", "shape"),
    _infer,
    lambda xp, input, dtype, shape: input,
    grad=NOT_DIFFERENTIABLE,
    type_attrs={},
)


def placeholder_with_default(input: Any, shape: Any, name: str | None = None) -> Tensor:
    """``input`` unless the run feeds this tensor another value of a compatible ``shape``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.placeholder_with_default([1.0, 2.0], [None]).shape.as_list()
    [None]
    """
    x = tensor(input)
    attrs = {"dtype": x.dtype, "shape": TensorShape(shape).as_tuple()}
    return make1("PlaceholderWithDefault", (x,), attrs, name=name)


def get_static_value(tensor: Any, partial: bool = False) -> np.ndarray | None:
    """The value of ``tensor`` when the graph alone determines it (constants, shapes known
    where built...), else None.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.get_static_value(fb.shape(fb.zeros([2, 3]))).tolist()
    [2, 3]
    """
    if not isinstance(tensor, Tensor):
        return np.asarray(tensor)
    return constant_value(tensor)
