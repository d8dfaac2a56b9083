"""``tf.make_tensor_proto`` and ``tf.make_ndarray``: ndarrays to TensorFlow's TensorProto and back.

The message is TensorFlow's own (``tensorboard`` ships it, imported on first
use); the conversion is the one GraphDef export and import use for ``Const``
values (``flowbook.graph_io.graph_def._tensor_proto`` and
``flowbook.graph_io.graph_def_import.tensor_value``), so a proto made here reads back
the same in TensorFlow.

    >>> import flowbook as fb
    >>> proto = fb.make_tensor_proto([[1, 2], [3, 4]], fb.float32)
    >>> [d.size for d in proto.tensor_shape.dim], fb.make_ndarray(proto).tolist()
    ([2, 2], [[1.0, 2.0], [3.0, 4.0]])
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from flowbook.framework import dtypes
from flowbook.graph_io import graph_def as gdef
from flowbook.graph_io.graph_def_import import tensor_value

__all__ = ["make_ndarray", "make_tensor_proto"]


def make_tensor_proto(
    values: Any,
    dtype: Any = None,
    shape: Any = None,
    verify_shape: bool = False,
    allow_broadcast: bool = False,
) -> Any:
    """A TensorProto holding ``values`` (as ``dtype``), reshaped to ``shape`` or filled from one
    value.

    >>> import flowbook as fb
    >>> fb.make_ndarray(fb.make_tensor_proto(7, shape=[2])).tolist()
    [7, 7]
    """
    from tensorboard.compat.proto import tensor_pb2  # lazy: tensorboard is slow to import

    arr = np.asarray(values, dtype=None if dtype is None else dtypes.as_dtype(dtype).np)
    if dtype is None and arr.dtype == np.float64 and not isinstance(values, np.ndarray):
        arr = arr.astype(np.float32)  # Python floats become float32, as in TF
    if shape is not None:
        shape = tuple(int(d) for d in shape)
        if verify_shape and arr.shape != shape:
            raise TypeError(f"Expected Tensor's shape: {shape}, got {arr.shape}.")
        if arr.size == math.prod(shape):
            arr = arr.reshape(shape)
        elif arr.size == 1 or allow_broadcast:
            arr = np.broadcast_to(arr.reshape(()) if arr.size == 1 else arr, shape).copy()
        else:
            raise ValueError(
                f"Too many elements provided. Needed at most {math.prod(shape)}, "
                f"but received {arr.size}"
            )
    return gdef._tensor_proto(arr, tensor_pb2.TensorProto())


def make_ndarray(tensor: Any) -> np.ndarray:
    """The ndarray a TensorProto holds (strings as ``bytes``, as TensorFlow gives them).

    >>> import flowbook as fb
    >>> fb.make_ndarray(fb.make_tensor_proto([True, False])).tolist()
    [True, False]
    >>> fb.make_ndarray(fb.make_tensor_proto(["a"])).tolist()
    [b'a']
    """
    value = tensor_value(tensor, "make_ndarray")
    if value.dtype == object:
        return np.vectorize(lambda v: v.encode() if isinstance(v, str) else v, otypes=[object])(
            value
        )
    return value
