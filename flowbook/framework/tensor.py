"""Operations and the tensors they produce: the nodes and edges of a Graph.

An :class:`Operation` is a node: its type (an entry of the op registry), a
unique name, input tensors, control inputs, attrs, a device string and the
site (cell or file, and line) that created it.  A :class:`Tensor` is one
output of an operation, named ``"op:0"``, with a dtype and a static shape
that may have unknown dims.  Graphs grow by adding operations; an op changes
only through TensorFlow 1's private edits (``_update_input``,
``_add_control_input(s)``, ``_remove_all_control_inputs``, ``_set_device``),
each recorded by the graph (``flowbook.framework.graph_edit.changed``) so that the
sessions' cached plans holding the op are dropped.  Python operators on tensors are attached by
``flowbook.ops.math.operators``.

    >>> import flowbook as fb
    >>> g = fb.Graph()
    >>> with g.as_default():
    ...     c = fb.constant([[1.0, 2.0]], name="c")
    >>> c.name, c.get_shape().as_list(), c.op.type
    ('c:0', [1, 2], 'Const')
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from flowbook.framework import hooks
from flowbook.framework.devices import DeviceSpec
from flowbook.framework.dtypes import DType
from flowbook.framework.source import Site
from flowbook.framework.tensor_shape import Shape, TensorShape, as_shape, fmt, merge

if TYPE_CHECKING:
    from flowbook.framework.graph import Graph
    from flowbook.framework.registry import OpDef


class Operation:
    """A node of the graph.  Built by ``Graph.create_op``, never directly.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     op = fb.no_op(name="nothing")
    >>> op.type, op.name, op.outputs
    ('NoOp', 'nothing', ())
    """

    __slots__ = (
        "__weakref__",
        "_cf_ctx",
        "_id",
        "_opdef",
        "attrs",
        "control_inputs",
        "device",
        "graph",
        "inputs",
        "name",
        "outputs",
        "site",
        "type",
    )

    def __init__(
        self,
        graph: Graph,
        opdef: OpDef,
        name: str,
        inputs: tuple[Tensor, ...],
        attrs: dict[str, Any],
        control_inputs: list[Operation],
        device: str,
        site: Site,
        op_id: int,
    ) -> None:
        self.graph = graph  # the Graph this op belongs to
        self.type: str = opdef.name  # the op type, e.g. "MatMul"
        self._opdef = opdef  # its registry entry
        self.name = name  # unique within the graph, scopes included: "layer1/MatMul"
        self.inputs = inputs  # data inputs, in the order the op type declares
        self.attrs = attrs  # attr name -> Python value (DType, shape tuple, ndarray, int...)
        self.control_inputs = control_inputs  # ops that must run before this one
        self.device = device  # requested device, canonical ("/device:CPU:0") or ""
        self.site = site  # where the user's code created it
        self._id = op_id  # creation order within the graph
        self.outputs: tuple[Tensor, ...] = ()  # filled by Graph.create_op
        self._cf_ctx: Any = None  # the cond/while context it was built in (None: top level)

    @property
    def op_def(self) -> Any:
        """TensorFlow's ``OpDef`` message of this op's type (shared by its ops, as in TF1).

        flowbook's own record of the type (kernel, ``infer``...) is ``_opdef``.

        >>> import flowbook as fb
        >>> with fb.Graph().as_default():
        ...     op = fb.identity(fb.constant(1.0)).op
        >>> op.op_def.name, [a.type_attr for a in op.op_def.input_arg], op._opdef.name
        ('Identity', ['T'], 'Identity')
        """
        return hooks.op_def_message(self.type)

    @property
    def node_def(self) -> Any:
        """This op as TensorFlow's ``NodeDef`` message, as ``Graph.as_graph_def()`` writes it.

        A fresh copy each time (editing it leaves the graph as it is).

        >>> import flowbook as fb
        >>> with fb.Graph().as_default():
        ...     c = fb.constant(1.0, name="c")
        >>> c.op.node_def.op, c.op.node_def.attr["dtype"].type
        ('Const', 1)
        """
        message = _node_defs(self.graph)[self.name]
        copy = type(message)()
        copy.CopyFrom(message)
        return copy

    @property
    def traceback(self) -> list[tuple[str, int, str, str]]:
        """TF1's ``Operation.traceback``: (file, line, function, source line) of the user
        code that made the op; flowbook records its innermost frame outside flowbook only.

        >>> import flowbook as fb
        >>> with fb.Graph().as_default():
        ...     op = fb.no_op()
        >>> [(line > 0, function) for _, line, function, _ in op.traceback]
        [(True, '<module>')]
        """
        site = self.site
        return [(site.file, site.line, site.function, site.source_line())]

    def get_attr(self, name: str) -> Any:
        """The value of one attr; ValueError names the op if it has none."""
        try:
            return self.attrs[name]
        except KeyError:
            raise ValueError(
                f"Operation '{self.name}' ({self.type}) has no attr named '{name}'"
            ) from None

    def values(self) -> tuple[Tensor, ...]:
        return self.outputs

    def describe(self) -> str:
        """``MatMul 'layer1/MatMul' (cell [4], line 2)``: the way messages name an op."""
        return f"{self.type} '{self.name}' ({self.site.describe()})"

    def run(self, feed_dict: dict | None = None, session: Any = None) -> None:
        """Run this op in ``session`` (the default session when None).

        >>> import flowbook as fb
        >>> with fb.Graph().as_default(), fb.Session() as s:
        ...     fb.no_op().run()
        """
        hooks.session_for(self.graph, session).run(self, feed_dict)

    def __repr__(self) -> str:
        return f"<flowbook.Operation '{self.name}' type={self.type}>"

    # ------------------------------------------------ edits (TF1's private API)
    def _update_input(self, index: int, tensor: Tensor, record: bool = True) -> None:
        """Make data input ``index`` read ``tensor`` (same dtype, same graph) instead.

        >>> import flowbook as fb
        >>> with fb.Graph().as_default(), fb.Session() as s:
        ...     a = fb.constant(1.0); y = a + 1.0; y.op._update_input(0, fb.constant(5.0))
        ...     float(s.run(y))
        6.0
        """
        old = self.inputs[index]
        if tensor.graph is not self.graph or tensor.dtype != old.dtype:
            where = "" if tensor.graph is self.graph else " of another graph"
            raise ValueError(
                f"{self.describe()}: input {index} is {old.dtype.name} '{old.name}'; it cannot "
                f"read {tensor.dtype.name} '{tensor.name}'{where} instead"
            )
        self.inputs = (*self.inputs[:index], tensor, *self.inputs[index + 1 :])
        if record:
            self.graph._changed([self])

    def _add_control_inputs(self, ops: Any) -> None:
        """Run this op only after ``ops`` too (ops of its graph)."""
        new = [op for op in ops if op not in self.control_inputs]
        for op in new:
            if not isinstance(op, Operation) or op.graph is not self.graph:
                raise ValueError(
                    f"{self.describe()}: control input {op!r} is not an op of its graph"
                )
        if new:
            self.control_inputs = [*self.control_inputs, *new]
            self.graph._changed([self])

    def _add_control_input(self, op: Operation) -> None:
        """Run this op only after ``op`` too."""
        self._add_control_inputs([op])

    def _remove_all_control_inputs(self) -> None:
        """Forget this op's control inputs."""
        if self.control_inputs:
            self.control_inputs = []
            self.graph._changed([self])

    def _set_device(self, device: Any) -> None:
        """Ask for another device (a string or ``DeviceSpec``; "" or None: none)."""
        spec = device if isinstance(device, DeviceSpec) else DeviceSpec.from_string(device or "")
        self.device = spec.to_string()
        self.graph._changed([self], placement=True)


_NODE_DEFS: weakref.WeakKeyDictionary[Any, tuple[int, dict[str, Any]]] = (
    weakref.WeakKeyDictionary()
)  # graph -> (its version, op name -> NodeDef), rebuilt when the graph changes


def _node_defs(graph: Graph) -> dict[str, Any]:
    """The NodeDef of every op of ``graph`` by name, from its GraphDef (cached per version)."""
    cached = _NODE_DEFS.get(graph)
    if cached is None or cached[0] != graph.version:
        nodes = {node.name: node for node in hooks.as_graph_def(graph, None, False).node}
        cached = _NODE_DEFS[graph] = (graph.version, nodes)
    return cached[1]


class Tensor:
    """One output of an Operation: a symbolic value with a dtype and static shape.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     x = fb.placeholder(fb.float32, [None, 3], name="x")
    >>> x, x.shape.as_list()
    (<flowbook.Tensor 'x:0' shape=(?, 3) dtype=float32>, [None, 3])
    """

    __slots__ = ("__weakref__", "_shape", "dtype", "op", "value_index")
    __array_priority__ = 100  # so ndarray + tensor calls Tensor.__radd__

    def __init__(self, op: Operation, value_index: int, dtype: DType, shape: Shape) -> None:
        self.op = op  # the Operation that produces this tensor
        self.value_index = value_index  # which output of op
        self.dtype = dtype  # element type
        self._shape = shape  # static shape: tuple of int/None, or None for unknown rank

    @property
    def name(self) -> str:
        return f"{self.op.name}:{self.value_index}"

    @property
    def graph(self) -> Graph:
        return self.op.graph

    @property
    def device(self) -> str:
        return self.op.device

    @property
    def shape(self) -> TensorShape:
        return TensorShape(self._shape)

    def get_shape(self) -> TensorShape:
        """The static shape; unknown dims are None in ``as_list()``."""
        return TensorShape(self._shape)

    def set_shape(self, shape: Any) -> None:
        """Refine the static shape (TF1's ``set_shape``); must be compatible."""
        try:
            self._shape = merge(self._shape, as_shape(shape))
        except ValueError:
            raise ValueError(
                f"Tensor '{self.name}' has shape {fmt(self._shape)}, "
                f"which is not compatible with {fmt(as_shape(shape))}"
            ) from None

    def consumers(self) -> list[Operation]:
        """The ops of the graph that take this tensor as a data input."""
        return [op for op in self.graph.get_operations() if any(t is self for t in op.inputs)]

    def eval(self, feed_dict: dict | None = None, session: Any = None) -> Any:
        """Compute this tensor in ``session`` (the default session when None).

        >>> import flowbook as fb
        >>> with fb.Graph().as_default(), fb.Session():
        ...     float(fb.constant(2.0).eval())
        2.0
        """
        return hooks.session_for(self.graph, session).run(self, feed_dict)

    def __repr__(self) -> str:
        shape = "<unknown>" if self._shape is None else TensorShape(self._shape)
        return f"<flowbook.Tensor '{self.name}' shape={shape} dtype={self.dtype.name}>"

    def __str__(self) -> str:
        return (
            f'Tensor("{self.name}", shape={self.get_shape()}, dtype={self.dtype.name}'
            + (f", device={self.device}" if self.device else "")
            + ")"
        )

    def __bool__(self) -> bool:
        raise TypeError(
            f"Using the symbolic tensor '{self.name}' as a Python bool is not allowed: it has no "
            "value until a session runs it. Use flowbook.cond, or fetch it with sess.run first."
        )

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        raise TypeError(
            f"Cannot convert the symbolic tensor '{self.name}' to a numpy array: it has no value "
            "until a session runs it. Fetch it with sess.run(tensor)."
        )

    def __iter__(self) -> Any:
        shape = self._shape
        if shape is None or not shape or shape[0] is None:
            raise TypeError(
                f"Tensor '{self.name}' with shape {fmt(shape)} is not iterable: "
                "only tensors with a known first dimension are."
            )
        return (self[i] for i in range(shape[0]))

    # Tensors compare by identity (TF1 semantics), so they work as dict keys in feed_dict.
    __hash__ = object.__hash__
