"""TensorArray ops: a per-run list of tensors, written and read through a flow tensor (TF1's V3 ops).

``TensorArrayV3(size)`` makes a new, empty array in every run (as ``Stack``
does, its handle is a string tensor whose run-time value is a
:class:`RunTensorArray`) and a *flow*: a float scalar that carries no data,
only order.  Every op that changes the array (``Write``, ``Scatter``,
``Split``) takes a flow and returns a new one, and every op that reads it
(``Read``, ``Gather``, ``Concat``, ``Size``) takes the latest flow, so the
dataflow graph orders the reads after the writes they need, across loop
iterations too (a loop carries the flow as a loop variable).  All are
stateful, host-only (a string handle) and never folded or cached.

``TensorArrayGradV3(handle, flow, source)`` gives the gradient array of a
forward array for one ``tf.gradients`` call (``source``, its name scope):
made on first use with the forward array's size, kept on the forward array,
its writes add up (TF's ``multiple_writes_aggregate``), and reading an
element nothing wrote gives zeros shaped like the forward element.  This
module holds the kernels; the ops are declared, each with its gradient, in
``flowbook.ops.control_flow.tensor_array``, beside the Python
:class:`~flowbook.ops.control_flow.tensor_array.TensorArray` that wraps them.

Errors are TensorFlow's, raised as ``InvalidArgumentError`` (the executor
adds the op, its type and the cell/line that made it): an index out of
range of a fixed-size array, reading an element never written, writing an
element twice, an element shape that differs from the array's.
flowbook keeps an element after it is read (``clear_after_read`` is
recorded, not enforced): a loop's gradient rebuilds the body and reads
the forward elements again.

    >>> import flowbook as fb
    >>> from flowbook.ops._builder import make, make1
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     h, flow = make("TensorArrayV3", [fb.constant(2)], {"dtype": fb.float32}).outputs
    ...     flow = make1("TensorArrayWriteV3", [h, fb.constant(1), fb.constant(5.0), flow])
    ...     float(s.run(make1("TensorArrayReadV3", [h, fb.constant(1), flow],
    ...                       {"dtype": fb.float32})))
    5.0
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowbook.framework import dtypes
from flowbook.framework.errors import InvalidArgumentError
from flowbook.framework.registry import Out
from flowbook.framework.tensor import Tensor
from flowbook.framework.tensor_shape import Shape, as_shape, compatible, fmt

__all__ = ["RunTensorArray"]


class RunTensorArray:
    """One run's TensorArray: its elements and what its ``TensorArrayV3`` op declared."""

    __slots__ = (
        "closed",
        "dtype",
        "dynamic",
        "element_shape",
        "forward",
        "grads",
        "identical",
        "name",
        "values",
    )

    def __init__(
        self,
        name: str,
        dtype: Any,
        size: int,
        dynamic: bool,
        element_shape: Shape,
        identical: bool,
        forward: RunTensorArray | None = None,
    ) -> None:
        self.name = name  # tensor_array_name, for messages
        self.dtype = dtype  # the elements' numpy dtype
        self.values: list[Any] = [None] * size  # element k, or None while unwritten
        self.dynamic = dynamic  # writes past the end grow the array
        self.element_shape = element_shape  # what every element must fit (refined by writes)
        self.identical = identical  # the first write fixes the shape of all elements
        self.forward = forward  # a gradient array's forward array (None: not a gradient)
        self.grads: dict[str, RunTensorArray] = {}  # source -> this array's gradient array
        self.closed = False  # CloseV3 ran: every later op is an error

    def error(self, message: str) -> InvalidArgumentError:
        return InvalidArgumentError(None, None, f"TensorArray {self.name}: {message}")

    def check_open(self) -> None:
        if self.closed:
            raise self.error("has already been closed.")

    def write(self, index: int, value: Any) -> None:
        """Element ``index`` := ``value`` (added to it, for a gradient array)."""
        self.check_open()
        if index < 0 or (index >= len(self.values) and not self.dynamic):
            raise self.error(
                f"Tried to write to index {index} but array is not resizeable and size is: "
                f"{len(self.values)}"
            )
        shape = tuple(value.shape)
        if not compatible(self.element_shape, shape):
            raise self.error(
                f"Could not write to TensorArray index {index} because the value shape is "
                f"{fmt(shape)} which is incompatible with the TensorArray's inferred element "
                f"shape: {fmt(self.element_shape)} (consider setting infer_shape=False)."
            )
        if self.identical:
            self.element_shape = shape
        if index >= len(self.values):
            self.values.extend([None] * (index + 1 - len(self.values)))
        old = self.values[index]
        if old is not None and self.forward is None:
            raise self.error(
                f"Could not write to TensorArray index {index} because it has already been "
                "written to."
            )
        self.values[index] = value if old is None else old + value

    def read(self, xp: Any, index: int) -> Any:
        """Element ``index`` (zeros for an unwritten element of a gradient array)."""
        self.check_open()
        if index < 0 or index >= len(self.values):
            raise self.error(
                f"Tried to read from index {index} but array size is: {len(self.values)}"
            )
        value = self.values[index]
        if value is not None:
            return value
        shape = self._zeros_shape(index)
        if shape is None:
            raise self.error(
                f"Could not read from TensorArray index {index} because it has not yet been "
                "written to."
            )
        return xp.zeros(shape, dtype=self.dtype)

    def _zeros_shape(self, index: int) -> tuple[int, ...] | None:
        if self.forward is None:
            return None
        fwd = self.forward.values
        if index < len(fwd) and fwd[index] is not None:
            return tuple(fwd[index].shape)
        known = self.element_shape
        return known if known is not None and None not in known else None  # type: ignore

    def stacked(self, xp: Any, indices: Any) -> Any:
        """The elements at ``indices``, stacked along a new first axis."""
        indices = np.asarray(indices).reshape(-1)
        items = [self.read(xp, int(i)) for i in indices]
        if not items:
            known = self.element_shape
            if known is None or None in known:
                raise self.error(
                    f"TensorArray has size zero, but element shape {fmt(known)} is not fully "
                    "defined. Currently only static shapes are supported when packing "
                    "zero-size TensorArrays."
                )
            return xp.zeros((0, *known), dtype=self.dtype)
        first = tuple(items[0].shape)
        for k, v in zip(indices, items):
            if tuple(v.shape) != first:
                raise self.error(
                    f"TensorArray has inconsistent shapes. Index {int(indices[0])} has shape: "
                    f"{fmt(first)} but index {int(k)} has shape: {fmt(tuple(v.shape))}"
                )
        return xp.stack(items)


_FLOW = np.float32(0.0)  # every flow's value: it carries order, not data


def _flow(xp: Any) -> Any:
    return xp.asarray(_FLOW)


def _ta_infer(
    size: Tensor,
    dtype: Any = None,
    element_shape: Any = None,
    dynamic_size: bool = False,
    clear_after_read: bool = True,
    identical_element_shapes: bool = False,
    tensor_array_name: str = "",
) -> list[Out]:
    if not size.dtype.is_integer or (size._shape is not None and len(size._shape) != 0):
        raise TypeError(
            f"TensorArray size must be an integer scalar, got {size.dtype.name} "
            f"of shape {fmt(size._shape)}"
        )
    return [Out(dtypes.string, ()), Out(dtypes.float32, ())]


def _ta_kernel(
    xp: Any,
    size: Any,
    dtype: Any = None,
    element_shape: Any = None,
    dynamic_size: bool = False,
    clear_after_read: bool = True,
    identical_element_shapes: bool = False,
    tensor_array_name: str = "",
) -> tuple:
    n = int(size)
    if n < 0:
        raise InvalidArgumentError(None, None, f"Size should be >= 0, got {n}")
    ta = RunTensorArray(
        tensor_array_name,
        dtypes.as_dtype(dtype).np,
        n,
        bool(dynamic_size),
        as_shape(element_shape),
        bool(identical_element_shapes),
    )
    return ta, _flow(xp)


def _flow_infer(*inputs: Tensor, **_: Any) -> Out:
    return Out(dtypes.float32, ())


def _index(ta: RunTensorArray, index: Any) -> int:
    a = np.asarray(index)
    if a.ndim != 0:
        raise ta.error(f"the index must be a scalar, got shape {fmt(a.shape)}")
    return int(a)


def _write(xp: Any, handle: RunTensorArray, index: Any, value: Any, flow_in: Any) -> Any:
    handle.write(_index(handle, index), value)
    return _flow(xp)


def _read_infer(handle: Tensor, index: Tensor, flow_in: Tensor, dtype: Any = None) -> Out:
    return Out(dtypes.as_dtype(dtype), None)


def _read(xp: Any, handle: RunTensorArray, index: Any, flow_in: Any, dtype: Any = None) -> Any:
    return handle.read(xp, _index(handle, index))


def _gather_infer(
    handle: Tensor, indices: Tensor, flow_in: Tensor, dtype: Any = None, element_shape: Any = None
) -> Out:
    n = indices._shape[0] if indices._shape is not None and len(indices._shape) == 1 else None
    elem = as_shape(element_shape)
    return Out(dtypes.as_dtype(dtype), None if elem is None else (n, *elem))


def _gather(
    xp: Any,
    handle: RunTensorArray,
    indices: Any,
    flow_in: Any,
    dtype: Any = None,
    element_shape: Any = None,
) -> Any:
    handle.check_open()
    return handle.stacked(xp, indices)


def _scatter(xp: Any, handle: RunTensorArray, indices: Any, value: Any, flow_in: Any) -> Any:
    idx = np.asarray(indices).reshape(-1)
    if value.ndim == 0 or value.shape[0] != len(idx):
        raise handle.error(
            f"Expected len(indices) == values.shape[0], but saw: {len(idx)} vs. "
            f"{value.shape[0] if value.ndim else 'a scalar'}"
        )
    for k, i in enumerate(idx):
        handle.write(int(i), value[k])
    return _flow(xp)


def _concat_infer(
    handle: Tensor, flow_in: Tensor, dtype: Any = None, element_shape_except0: Any = None
) -> list[Out]:
    rest = as_shape(element_shape_except0)
    return [
        Out(dtypes.as_dtype(dtype), None if rest is None else (None, *rest)),
        Out(dtypes.int64, (None,)),
    ]


def _concat(
    xp: Any,
    handle: RunTensorArray,
    flow_in: Any,
    dtype: Any = None,
    element_shape_except0: Any = None,
) -> tuple:
    handle.check_open()
    items = [handle.read(xp, k) for k in range(len(handle.values))]
    lengths = np.array([v.shape[0] if v.ndim else 0 for v in items], dtype=np.int64)
    if any(v.ndim == 0 for v in items):
        raise handle.error("Concat saw a scalar shape; every element needs at least one dim")
    if not items:
        rest = as_shape(element_shape_except0)
        if rest is None or None in rest:
            raise handle.error(
                "Concat of an empty TensorArray needs a fully known "
                f"element_shape_except0, got {fmt(rest)}"
            )
        return xp.zeros((0, *rest), dtype=handle.dtype), lengths
    return xp.concatenate(items, axis=0), lengths


def _split(xp: Any, handle: RunTensorArray, value: Any, lengths: Any, flow_in: Any) -> Any:
    lens = [int(n) for n in np.asarray(lengths).reshape(-1)]
    if value.ndim == 0 or sum(lens) != value.shape[0] or min(lens, default=0) < 0:
        raise handle.error(
            f"Expected sum of lengths to be equal to values.shape[0], but sum of lengths is "
            f"{sum(lens)} and value's shape is: {fmt(tuple(value.shape))}"
        )
    if len(lens) > len(handle.values) and not handle.dynamic:
        raise handle.error(
            f"Tried to split into {len(lens)} elements but array is not resizeable and size "
            f"is: {len(handle.values)}"
        )
    start = 0
    for k, n in enumerate(lens):
        handle.write(k, value[start : start + n])
        start += n
    return _flow(xp)


def _size(xp: Any, handle: RunTensorArray, flow_in: Any) -> Any:
    handle.check_open()
    return np.int32(len(handle.values))


def _close(xp: Any, handle: RunTensorArray) -> tuple:
    handle.check_open()
    handle.closed = True
    handle.values = []
    return ()


def _grad_infer(handle: Tensor, flow_in: Tensor, source: str = "") -> list[Out]:
    return [Out(dtypes.string, ()), Out(dtypes.float32, ())]


def _grad(xp: Any, handle: RunTensorArray, flow_in: Any, source: str = "") -> tuple:
    handle.check_open()
    g = handle.grads.get(source)
    if g is None:
        g = handle.grads[source] = RunTensorArray(
            f"{handle.name}@{source}",
            handle.dtype,
            len(handle.values),
            False,
            handle.element_shape,
            False,
            forward=handle,
        )
    return g, _flow(xp)
