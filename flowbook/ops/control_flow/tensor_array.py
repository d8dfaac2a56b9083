"""``tf.TensorArray``: the TensorArray ops with their gradients, and TF1's Python class over them.

A :class:`TensorArray` is a handle (the array, made once per run by its
``TensorArrayV3`` op) and a flow (see ``flowbook.ops.control_flow.tensor_array_ops``).
The class is immutable as TF's is: ``write``, ``scatter``, ``unstack`` and
``split`` return a *new* TensorArray with the same handle and the new flow,
and reads go through the flow of the object they are called on.  So a loop
carries a TensorArray as a loop variable: ``while_loop`` passes its flow
through the loop and builds the TensorArray again on the other side.  The
static element shape (``infer_shape``) is one list shared by every object of
one array, refined by each write, and given to what reads return.

Gradients, as TensorFlow declares them: the gradient of an array is another
array, ``grad(source)``, one per ``tf.gradients`` call (its name scope is the
source).  A read's gradient writes to it, a write's gradient reads from it;
gather/scatter, stack/unstack and concat/split are pairs the same way.  The
flow gradient carries the order: the gradient of a write's input flow is
the flow of the gradient array after the later reads' gradients wrote it.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     ta = fb.TensorArray(fb.float32, size=3).unstack([1.0, 2.0, 3.0])
    ...     y = ta.read(2) * ta.read(0)
    ...     [v.tolist() for v in s.run([y, ta.stack()])]
    [3.0, [1.0, 2.0, 3.0]]
"""

from __future__ import annotations

from typing import Any

from flowbook.framework import dtypes
from flowbook.framework.graph import get_default_graph
from flowbook.framework.registry import NOT_DIFFERENTIABLE, Out, op
from flowbook.framework.source import capture
from flowbook.framework.tensor import Operation, Tensor
from flowbook.framework.tensor_shape import TensorShape, as_shape, fmt, merge
from flowbook.ops._builder import make, make1, tensor
from flowbook.ops.array.shape_ops import identity, range, shape
from flowbook.ops.control_flow import tensor_array_ops as ta

__all__ = ["TensorArray"]


class TensorArray:
    """A list of tensors of one dtype, written and read inside the graph (TF1's ``TensorArray``).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     ta = fb.TensorArray(fb.int32, size=0, dynamic_size=True)
    ...     ta = ta.write(0, 7).write(1, 8)
    ...     [v.tolist() for v in s.run([ta.stack(), ta.size()])]
    [[7, 8], 2]
    """

    def __init__(
        self,
        dtype: Any,
        size: Any = None,
        dynamic_size: bool | None = None,
        clear_after_read: bool | None = None,
        tensor_array_name: str | None = None,
        handle: Tensor | None = None,
        flow: Tensor | None = None,
        infer_shape: bool = True,
        element_shape: Any = None,
        colocate_with_first_write_call: bool = True,
        name: str | None = None,
    ) -> None:
        if handle is not None and flow is None:
            raise ValueError("flow must not be None if handle is not None.")
        if handle is not None and size is not None:
            raise ValueError("Cannot provide both a handle and size at the same time")
        if handle is None and size is None:
            raise ValueError("Size must be provided if handle is not provided")
        if handle is not None and (dynamic_size is not None or clear_after_read is not None):
            raise ValueError("Cannot provide both a handle and dynamic_size/clear_after_read")
        self._dtype = dtypes.as_dtype(dtype)
        self._infer_shape = infer_shape
        self._dynamic_size = bool(dynamic_size)
        shape_ = as_shape(element_shape)
        self._element_shape: list[Any] = [shape_]  # shared by every object of this array
        if handle is not None:
            self._handle, self._flow = handle, tensor(flow)
            return
        attrs = {
            "dtype": self._dtype,
            "element_shape": shape_,
            "dynamic_size": self._dynamic_size,
            "clear_after_read": True if clear_after_read is None else bool(clear_after_read),
            "identical_element_shapes": bool(infer_shape),
            "tensor_array_name": tensor_array_name or "",
        }
        op = make("TensorArrayV3", (tensor(size, dtypes.int32),), attrs, name=name or "TensorArray")
        if not tensor_array_name:
            op.attrs["tensor_array_name"] = op.name
        self._handle, self._flow = op.outputs

    # ------------------------------------------------------------ properties
    @property
    def flow(self) -> Tensor:
        """The flow tensor: what orders this array's reads after its writes."""
        return self._flow

    @property
    def handle(self) -> Tensor:
        """The array's handle (a string tensor)."""
        return self._handle

    @property
    def dtype(self) -> dtypes.DType:
        return self._dtype

    @property
    def dynamic_size(self) -> bool:
        return self._dynamic_size

    @property
    def element_shape(self) -> TensorShape:
        """The static shape every element has (as far as the writes so far tell)."""
        return TensorShape(self._element_shape[0])

    def _with_flow(self, flow: Tensor) -> TensorArray:
        """This array seen through ``flow`` (same handle, shared element shape)."""
        ta = object.__new__(TensorArray)
        ta.__dict__.update(self.__dict__)
        ta._flow = flow
        return ta

    def _merge_shape(self, shape: Any) -> None:
        if not self._infer_shape:
            return
        try:
            self._element_shape[0] = merge(self._element_shape[0], as_shape(shape))
        except ValueError:
            raise ValueError(
                f"Inconsistent shapes: saw {fmt(as_shape(shape))} but expected "
                f"{fmt(self._element_shape[0])} (TensorArray '{self._handle.op.name}', at "
                f"{capture().describe()})"
            ) from None

    def _value(self, value: Any) -> Tensor:
        t = tensor(value) if isinstance(value, Tensor) else tensor(value, self._dtype)
        if t.dtype != self._dtype:
            raise TypeError(
                f"TensorArray dtype is {self._dtype.name} but Op is trying to write dtype "
                f"{t.dtype.name} ('{t.name}', at {capture().describe()})"
            )
        return t

    def _shaped(self, t: Tensor, lead: tuple = ()) -> Tensor:
        if self._infer_shape and self._element_shape[0] is not None:
            t.set_shape((*lead, *self._element_shape[0]))
        return t

    # ------------------------------------------------------------ methods
    def identity(self) -> TensorArray:
        """The same array, through an Identity of the flow (for control dependencies)."""
        return self._with_flow(identity(self._flow))

    def grad(self, source: str, flow: Tensor | None = None, name: str | None = None) -> TensorArray:
        """The gradient array of this one for the gradient computation ``source``."""
        flow = self._flow if flow is None else flow
        g_handle, g_flow = make(
            "TensorArrayGradV3",
            (self._handle, flow),
            {"source": source},
            name=name or "TensorArrayGrad",
        ).outputs
        g = TensorArray(self._dtype, handle=g_handle, flow=g_flow, infer_shape=self._infer_shape)
        g._element_shape = self._element_shape
        return g

    def read(self, index: Any, name: str | None = None) -> Tensor:
        """Element ``index`` (an error at run time if it was never written)."""
        t = make1(
            "TensorArrayReadV3",
            (self._handle, tensor(index, dtypes.int32), self._flow),
            {"dtype": self._dtype},
            name=name or "TensorArrayReadV3",
        )
        return self._shaped(t)

    def write(self, index: Any, value: Any, name: str | None = None) -> TensorArray:
        """A TensorArray with element ``index`` set to ``value``."""
        value = self._value(value)
        self._merge_shape(value._shape)
        flow = make1(
            "TensorArrayWriteV3",
            (self._handle, tensor(index, dtypes.int32), value, self._flow),
            name=name or "TensorArrayWrite",
        )
        return self._with_flow(flow)

    def gather(self, indices: Any, name: str | None = None) -> Tensor:
        """The elements at ``indices``, stacked along a new first axis."""
        attrs = {"dtype": self._dtype, "element_shape": self._element_shape[0]}
        t = make1(
            "TensorArrayGatherV3",
            (self._handle, tensor(indices, dtypes.int32), self._flow),
            attrs,
            name=name or "TensorArrayGatherV3",
        )
        return self._shaped(t, (t._shape[0] if t._shape else None,))

    def stack(self, name: str | None = None) -> Tensor:
        """Every element, stacked along a new first axis: ``gather(range(size()))``."""
        graph = get_default_graph()
        with graph.name_scope(name or "TensorArrayStack"):
            return self.gather(range(0, self.size()), name="TensorArrayGatherV3")

    def concat(self, name: str | None = None) -> Tensor:
        """Every element, concatenated along their first axis."""
        known = self._element_shape[0]
        rest = None if known is None or not known else tuple(known[1:])
        t = make(
            "TensorArrayConcatV3",
            (self._handle, self._flow),
            {"dtype": self._dtype, "element_shape_except0": rest},
            name=name or "TensorArrayConcatV3",
        ).outputs[0]
        return t

    def unstack(self, value: Any, name: str | None = None) -> TensorArray:
        """Element k := ``value[k]``: ``scatter(range(len(value)), value)``."""
        value = self._value(value)
        graph = get_default_graph()
        with graph.name_scope(name or "TensorArrayUnstack"):
            n = shape(value)[0]
            return self.scatter(range(0, n), value, name="TensorArrayScatter")

    def scatter(self, indices: Any, value: Any, name: str | None = None) -> TensorArray:
        """Element ``indices[k]`` := ``value[k]`` for every k."""
        value = self._value(value)
        if value._shape is not None and value._shape:
            self._merge_shape(value._shape[1:])
        flow = make1(
            "TensorArrayScatterV3",
            (self._handle, tensor(indices, dtypes.int32), value, self._flow),
            name=name or "TensorArrayScatter",
        )
        return self._with_flow(flow)

    def split(self, value: Any, lengths: Any, name: str | None = None) -> TensorArray:
        """``value`` cut along its first axis into pieces of ``lengths``, one per element."""
        value = self._value(value)
        same = isinstance(lengths, list | tuple) and lengths and len(set(lengths)) == 1
        if same and value._shape is not None and value._shape:
            self._merge_shape((int(lengths[0]), *value._shape[1:]))
        flow = make1(
            "TensorArraySplitV3",
            (self._handle, value, tensor(lengths, dtypes.int64), self._flow),
            name=name or "TensorArraySplit",
        )
        return self._with_flow(flow)

    def size(self, name: str | None = None) -> Tensor:
        """The number of elements (an int32 scalar)."""
        return make1(
            "TensorArraySizeV3", (self._handle, self._flow), name=name or "TensorArraySize"
        )

    def close(self, name: str | None = None) -> Operation:
        """Close the array: an op after which every use of it is an error."""
        return make("TensorArrayCloseV3", (self._handle,), name=name or "TensorArrayCloseV3")

    def __repr__(self) -> str:
        return (
            f"<flowbook.TensorArray '{self._handle.op.name}' dtype={self._dtype.name} "
            f"element_shape={self.element_shape}>"
        )


# ---------------------------------------------------------------- gradients
def _source(op: Operation) -> str:
    """The gradient computation building now: the name scope of the ``tf.gradients`` call
    (its first ``gradients*`` part, which a loop's gradient, built inside, shares)."""
    parts = op.graph.get_name_scope().split("/")
    for k, p in enumerate(parts):
        if p.startswith("gradients"):
            return "/".join(parts[: k + 1])
    raise ValueError(
        f"The gradient of '{op.name}' ({op.type}) must be built inside tf.gradients (a name "
        f"scope starting with 'gradients'), not under '{op.graph.get_name_scope()}'"
    )


def _grad_array(op: Operation, flow: Tensor, dtype: Any) -> TensorArray:
    ta = TensorArray(dtype, handle=op.inputs[0], flow=flow)
    return ta.grad(_source(op), flow)


def _read_grad(op: Operation, grad: Tensor) -> list:
    g = _grad_array(op, op.inputs[2], op.attrs["dtype"])
    return [None, None, g.write(op.inputs[1], grad).flow]


def _write_grad(op: Operation, flow: Tensor) -> list:
    value = op.inputs[2]
    grad = _grad_array(op, flow, value.dtype).read(op.inputs[1])
    grad.set_shape(value._shape)
    return [None, None, grad, flow]


def _gather_grad(op: Operation, grad: Tensor) -> list:
    g = _grad_array(op, op.inputs[2], op.attrs["dtype"])
    return [None, None, g.scatter(op.inputs[1], grad).flow]


def _scatter_grad(op: Operation, flow: Tensor) -> list:
    value = op.inputs[2]
    grad = _grad_array(op, flow, value.dtype).gather(op.inputs[1])
    grad.set_shape(value._shape)
    return [None, None, grad, flow]


def _concat_grad(op: Operation, grad: Tensor, lengths_grad: Tensor) -> list:
    g = _grad_array(op, op.inputs[1], op.attrs["dtype"])
    return [None, g.split(grad, op.outputs[1]).flow]


def _split_grad(op: Operation, flow: Tensor) -> list:
    value = op.inputs[1]
    grad = _grad_array(op, flow, value.dtype).concat()
    grad.set_shape(value._shape)
    return [None, grad, None, flow]


_TA = (
    "dtype",
    "element_shape",
    "dynamic_size",
    "clear_after_read",
    "identical_element_shapes",
    "tensor_array_name",
)
# The ops, their kernels in flowbook.ops.control_flow.tensor_array_ops: each is stateful and
# host only, with the gradient above (or none); the rest of each row is how it looks in a
# GraphDef: TF's output count, the "T" of the value written, attr kinds.
_TA_OP = {"stateful": True, "host_only": True}
op(
    "TensorArrayV3",
    ("size",),
    _TA,
    ta._ta_infer,
    ta._ta_kernel,
    num_outputs=2,
    type_attrs={},
    attr_kinds={
        "element_shape": "shape",
        "dynamic_size": "bool",
        "clear_after_read": "bool",
        "identical_element_shapes": "bool",
        "tensor_array_name": "string",
    },
    grad=NOT_DIFFERENTIABLE,
    **_TA_OP,
)
op(
    "TensorArrayWriteV3",
    ("handle", "index", "value", "flow_in"),
    (),
    ta._flow_infer,
    ta._write,
    type_attrs={"T": 2},
    grad=_write_grad,
    **_TA_OP,
)
op(
    "TensorArrayReadV3",
    ("handle", "index", "flow_in"),
    ("dtype",),
    ta._read_infer,
    ta._read,
    type_attrs={},
    grad=_read_grad,
    **_TA_OP,
)
op(
    "TensorArrayGatherV3",
    ("handle", "indices", "flow_in"),
    ("dtype", "element_shape"),
    ta._gather_infer,
    ta._gather,
    type_attrs={},
    attr_kinds={"element_shape": "shape"},
    grad=_gather_grad,
    **_TA_OP,
)
op(
    "TensorArrayScatterV3",
    ("handle", "indices", "value", "flow_in"),
    (),
    ta._flow_infer,
    ta._scatter,
    type_attrs={"T": 2},
    grad=_scatter_grad,
    **_TA_OP,
)
op(
    "TensorArrayConcatV3",
    ("handle", "flow_in"),
    ("dtype", "element_shape_except0"),
    ta._concat_infer,
    ta._concat,
    num_outputs=2,
    type_attrs={},
    attr_kinds={"element_shape_except0": "shape"},
    grad=_concat_grad,
    **_TA_OP,
)
op(
    "TensorArraySplitV3",
    ("handle", "value", "lengths", "flow_in"),
    (),
    ta._flow_infer,
    ta._split,
    type_attrs={"T": 1},
    grad=_split_grad,
    **_TA_OP,
)
op(
    "TensorArraySizeV3",
    ("handle", "flow_in"),
    (),
    lambda h, f: Out(dtypes.int32, ()),
    ta._size,
    type_attrs={},
    grad=NOT_DIFFERENTIABLE,
    **_TA_OP,
)
op(
    "TensorArrayCloseV3",
    ("handle",),
    (),
    lambda h: [],
    ta._close,
    num_outputs=0,
    type_attrs={},
    grad=NOT_DIFFERENTIABLE,
    **_TA_OP,
)
op(
    "TensorArrayGradV3",
    ("handle", "flow_in"),
    ("source",),
    ta._grad_infer,
    ta._grad,
    num_outputs=2,
    type_attrs={},
    attr_kinds={"source": "string"},
    grad=NOT_DIFFERENTIABLE,
    **_TA_OP,
)
