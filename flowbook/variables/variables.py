"""``Variable``: state that persists across runs, TF1 style.

A Variable is four ops built together under its name scope, as in TF1:

- ``W`` (VariableV2): the variable itself; reading it before initialisation
  raises FailedPreconditionError naming ``W`` and the cell that defined it;
- ``W/initial_value`` (when the initial value is a Python or numpy value,
  else the tensor given, here ``zeros``);
- ``W/Assign``: the initializer, ``W.initializer``;
- ``W/read`` (Identity): the value other ops consume when ``W`` is used as a
  tensor (``W + 1``, ``matmul(x, W)``).

Variables join the GLOBAL_VARIABLES collection (and TRAINABLE_VARIABLES when
trainable), which ``global_variables_initializer()`` groups into ``init``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     W = fb.Variable(fb.zeros([2, 2]), name="W")
    ...     [op.name for op in W.graph.get_operations()]
    ['zeros', 'W', 'W/Assign', 'W/read']
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from flowbook.framework import dtypes, hooks
from flowbook.framework.graph import Graph, GraphKeys, get_default_graph
from flowbook.framework.tensor import Operation, Tensor
from flowbook.framework.tensor_shape import TensorShape, fmt
from flowbook.ops._builder import make, make1, tensor
from flowbook.ops.array import array_ops
from flowbook.ops.control_flow.control_flow_ops import group
from flowbook.ops.math import math_ops
from flowbook.ops.state import state_ops


@contextlib.contextmanager
def outside_control_flow(graph: Graph) -> Iterator[None]:
    """Build at the top level, out of any cond branch or loop body (TF's ``init_scope``):
    a variable made by a cell called inside ``dynamic_rnn``'s loop is made once, outside.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default() as g, outside_control_flow(g):
    ...     g._state.cf_context is None
    True
    """
    state = graph._state
    old, state.cf_context = state.cf_context, None
    try:
        yield
    finally:
        state.cf_context = old


class Variable:
    """A tensor whose value persists across ``Session.run`` calls.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     v = fb.Variable([1.0, 2.0], name="v")
    ...     with fb.Session() as s:
    ...         s.run(fb.global_variables_initializer()); s.run(v * 2).tolist()
    [2.0, 4.0]
    """

    def __init__(
        self,
        initial_value: Any = None,
        trainable: bool = True,
        collections: list[str] | None = None,
        validate_shape: bool = True,
        name: str | None = None,
        dtype: Any = None,
        expected_shape: Any = None,
    ) -> None:
        if initial_value is None:
            raise ValueError("initial_value must be specified.")
        graph = get_default_graph()
        with (
            graph.control_dependencies(None),
            outside_control_flow(graph),
            graph.name_scope(name or "Variable") as scope,
        ):
            if callable(initial_value):
                initial_value = initial_value()
            init = tensor(initial_value, dtype=dtype, name="initial_value")
            shape = init._shape
            if validate_shape and (shape is None or None in shape):
                raise ValueError(
                    f"initial_value must have a shape specified: {init.name} has shape {fmt(shape)} "
                    "(pass validate_shape=False for a variable of unknown shape)"
                )
            self._initial_value = init  # the tensor the initializer assigns
            self._variable = state_ops.variable_op_v2(
                shape if validate_shape else None, init.dtype, scope
            )
            self._initializer_op = state_ops.assign(
                self._variable, init, validate_shape=validate_shape, name="Assign"
            ).op
            self._snapshot = make1("Identity", (self._variable,), name="read")
        self._trainable = trainable
        keys = list(collections) if collections is not None else [GraphKeys.GLOBAL_VARIABLES]
        if trainable and GraphKeys.TRAINABLE_VARIABLES not in keys:
            keys.append(GraphKeys.TRAINABLE_VARIABLES)
        graph.add_to_collections(keys, self)

    # ----------------------------------------------------------- properties
    @property
    def name(self) -> str:
        return self._variable.name

    @property
    def op(self) -> Operation:
        return self._variable.op

    @property
    def graph(self) -> Graph:
        return self._variable.graph

    @property
    def dtype(self) -> dtypes.DType:
        return self._variable.dtype

    @property
    def device(self) -> str:
        return self._variable.device

    @property
    def shape(self) -> TensorShape:
        return self._variable.get_shape()

    def get_shape(self) -> TensorShape:
        return self._variable.get_shape()

    @property
    def initializer(self) -> Operation:
        """The op that assigns the initial value."""
        return self._initializer_op

    @property
    def initial_value(self) -> Tensor:
        return self._initial_value

    @property
    def trainable(self) -> bool:
        return self._trainable

    # --------------------------------------------------------------- reading
    def value(self) -> Tensor:
        """The snapshot tensor ``W/read`` that ops consume."""
        return self._snapshot

    def read_value(self) -> Tensor:
        """A new Identity op reading the variable: place it under control_dependencies
        to read after an update.
        """
        return make1("Identity", (self._variable,), name=f"{self.op.name}/read_value")

    def initialized_value(self) -> Tensor:
        """The value, after running the initializer if needed."""
        with self.graph.control_dependencies([self._initializer_op]):
            return make1("Identity", (self._variable,), name=f"{self.op.name}/initialized_value")

    def eval(self, session: Any = None) -> Any:
        return self._variable.eval(session=session)

    def _as_tensor(self) -> Tensor:
        return self._snapshot

    def _as_graph_element(self) -> Tensor:
        return self._variable

    # -------------------------------------------------------------- updating
    def assign(
        self,
        value: Any,
        use_locking: bool = False,
        name: str | None = None,
        read_value: bool = True,
    ) -> Any:
        """An op setting the variable to ``value``; its output is the new value."""
        t = state_ops.assign(self, value, use_locking=use_locking, name=name)
        return t if read_value else t.op

    def assign_add(
        self,
        delta: Any,
        use_locking: bool = False,
        name: str | None = None,
        read_value: bool = True,
    ) -> Any:
        """An op adding ``delta`` to the variable; its output is the new value."""
        t = state_ops.assign_add(self, delta, use_locking=use_locking, name=name)
        return t if read_value else t.op

    def assign_sub(
        self,
        delta: Any,
        use_locking: bool = False,
        name: str | None = None,
        read_value: bool = True,
    ) -> Any:
        """An op subtracting ``delta`` from the variable; its output is the new value."""
        t = state_ops.assign_sub(self, delta, use_locking=use_locking, name=name)
        return t if read_value else t.op

    def load(self, value: Any, session: Any = None) -> None:
        """Set the variable's value in ``session`` by feeding the initializer."""
        hooks.session_for(self.graph, session).run(
            self._initializer_op, {self._initial_value: value}
        )

    def __repr__(self) -> str:
        return f"<flowbook.Variable '{self.name}' shape={self.shape} dtype={self.dtype.name}>"

    __hash__ = object.__hash__


def global_variables(scope: str | None = None) -> list[Variable]:
    """The variables of the default graph's GLOBAL_VARIABLES collection."""
    return get_default_graph().get_collection(GraphKeys.GLOBAL_VARIABLES, scope)


def local_variables(scope: str | None = None) -> list[Variable]:
    return get_default_graph().get_collection(GraphKeys.LOCAL_VARIABLES, scope)


def moving_average_variables(scope: str | None = None) -> list[Variable]:
    """The variables an ``ExponentialMovingAverage.apply`` averages (MOVING_AVERAGE_VARIABLES).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     v = fb.Variable(1.0, name="w")
    ...     _ = fb.train.ExponentialMovingAverage(0.9).apply([v])
    ...     [x.op.name for x in fb.moving_average_variables()]
    ['w']
    """
    return get_default_graph().get_collection(GraphKeys.MOVING_AVERAGE_VARIABLES, scope)


def trainable_variables(scope: str | None = None) -> list[Variable]:
    """The variables created with ``trainable=True``."""
    return get_default_graph().get_collection(GraphKeys.TRAINABLE_VARIABLES, scope)


def variables_initializer(var_list: list[Variable], name: str = "init") -> Operation:
    """One op that runs the initializers of ``var_list``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.variables_initializer([]).type
    'NoOp'
    """
    if not var_list:
        return make("NoOp", (), name=name)
    return group(*[v.initializer for v in var_list], name=name)


def global_variables_initializer() -> Operation:
    """The op ``init`` that initialises every global variable."""
    return variables_initializer(global_variables())


def local_variables_initializer() -> Operation:
    return variables_initializer(local_variables(), name="init_1")


all_variables = global_variables  # TF 0.x names, still accepted
initialize_all_variables = global_variables_initializer
initialize_local_variables = local_variables_initializer


def initialize_variables(var_list: list[Variable], name: str = "init") -> Operation:
    return variables_initializer(var_list, name)


def report_uninitialized_variables(
    var_list: list[Variable] | None = None, name: str = "report_uninitialized_variables"
) -> Tensor:
    """A string tensor of the names of variables that have no value yet."""
    variables = global_variables() if var_list is None else var_list
    with get_default_graph().name_scope(name):
        if not variables:
            return tensor([], dtype=dtypes.string)
        flags = array_ops.stack([state_ops.is_variable_initialized(v) for v in variables])
        names = tensor([v.op.name.encode() for v in variables], dtype=dtypes.string)
        return array_ops.boolean_mask(names, math_ops.logical_not(flags))


def assert_variables_initialized(var_list: list[Variable] | None = None) -> Operation | None:
    """An op that, when run, reads every variable (all global ones by default), so one with no
    value yet raises FailedPreconditionError naming it; None when there are no variables.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     v = fb.Variable(1.0)
    ...     check = fb.assert_variables_initialized()
    ...     with fb.Session() as s:
    ...         s.run(v.initializer)
    ...         s.run(check) is None
    True
    """
    variables = global_variables() if var_list is None else var_list
    if not variables:
        return None
    with get_default_graph().name_scope("assert_variables_initialized"):
        return group(*[array_ops.identity(v) for v in variables])
