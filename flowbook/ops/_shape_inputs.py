"""Shape-like inputs: the int tensors (``shape``, ``perm``, ``axis``...) that ops read at build time.

As in TensorFlow's GraphDefs, an op's shape-like arguments are int32 (or
int64) *input* tensors.  A wrapper given a Python list turns it into a Const
with :func:`int_input`; ``infer`` reads it back with :func:`const_ints` or
:func:`const_int` (None when the graph does not determine it, so the output
keeps only what is known), and a kernel reads the array with
:func:`host_ints`.  Every array, conv, pool and random op module shares these.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     const_ints(int_input([2, 3], "shape"))
    [2, 3]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowbook.framework import dtypes
from flowbook.framework.tensor import Tensor
from flowbook.framework.tensor_shape import fmt
from flowbook.ops.array.constant_op import constant_value, convert_to_tensor

INT_TYPES = (dtypes.int32, dtypes.int64)  # the dtypes a shape-like input may have


def is_tensor(value: Any) -> bool:
    """Whether ``value`` is a graph tensor (a Tensor, or a Variable), not a Python or numpy value.

    It is ``tf.is_tensor``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.is_tensor(fb.constant(1)), fb.is_tensor(1)
    (True, False)
    """
    return isinstance(value, Tensor) or hasattr(value, "_as_tensor")


def int_input(value: Any, name: str, dtype: dtypes.DType = dtypes.int32) -> Tensor:
    """A shape-like argument as a tensor: Python ints and lists become an int32 Const
    (int64 where a value does not fit int32, as TensorFlow does).
    """
    if is_tensor(value):
        return convert_to_tensor(value)
    if isinstance(value, np.ndarray | np.generic) and value.dtype.kind in "iu":
        return convert_to_tensor(value, name=name)  # keeps int64 when given int64
    if dtype == dtypes.int32 and _beyond_int32(value):
        dtype = dtypes.int64
    return convert_to_tensor(value, dtype=dtype, name=name)


def _beyond_int32(value: Any) -> bool:
    """Whether a Python int (or a nested list of them) holds one outside int32."""
    if isinstance(value, int):
        return not -(2**31) <= value < 2**31
    if isinstance(value, list | tuple):
        return any(_beyond_int32(v) for v in value)
    return False


def check_int(op_type: str, input_name: str, t: Tensor) -> None:
    """TensorFlow's TypeError when a shape-like input is not int32/int64."""
    if t.dtype not in INT_TYPES:
        raise TypeError(
            f"Input '{input_name}' of '{op_type}' Op has type {t.dtype.name} that does not "
            "match expected type of int32, int64."
        )


def const_ints(t: Tensor) -> list[int] | None:
    """A tensor's value as a flat list of ints when the graph alone determines it."""
    v = constant_value(t)
    return None if v is None else [int(d) for d in np.ravel(v)]


def const_int(t: Tensor) -> int | None:
    """A scalar tensor's value as an int when the graph alone determines it."""
    v = constant_value(t)
    return None if v is None else int(np.ravel(v)[0])


def norm_axis(axis: int, rank: int, what: str = "axis") -> int:
    """``axis`` in ``[0, rank)``; negative counts from the end; ValueError when out of range."""
    if not -rank <= axis < rank:
        raise ValueError(
            f"{what} {axis} is out of range for a tensor of rank {rank} "
            f"(expected [{-rank}, {rank}))"
        )
    return axis % rank


def vector_len(t: Tensor) -> int | None:
    """The static length of a 1-D tensor (from its value or its shape)."""
    v = constant_value(t)
    if v is not None:
        return int(np.size(v))
    s = t._shape
    return s[0] if s is not None and len(s) == 1 else None


def per_dim_ints(op_type: str, input_name: str, x: Tensor, t: Tensor) -> tuple[Any, Any]:
    """Read ``t``, an int vector with one entry per dimension of ``x`` (a perm, multiples).

    Returns its values (None when not known at build time) and the static
    shape to give the output in that case: ``x``'s rank, every dim unknown.
    Values of the wrong length for ``x``'s known rank raise ``ValueError``.
    """
    check_int(op_type, input_name, t)
    n = len(x._shape) if x._shape is not None else vector_len(t)
    values = const_ints(t)
    if values is not None and x._shape is not None and len(values) != n:
        raise ValueError(
            f"{input_name} {values} must have one entry per dimension of the input "
            f"{fmt(x._shape)} (rank {n})"
        )
    return values, None if n is None else (None,) * n


def host_ints(a: Any) -> tuple[int, ...]:
    """An int array (numpy or CuPy) as a tuple of Python ints."""
    return tuple(a.ravel().tolist())
