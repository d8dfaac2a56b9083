"""``Optimizer``: the TF1 base class that turns a loss into update ops.

``minimize(loss)`` is ``compute_gradients`` (``fb.gradients`` of the loss with
respect to each variable, as graph) followed by ``apply_gradients``, which
builds, for every variable with a gradient, the ops of one update step under
the name scope ``<Optimizer>/update_<var>`` and groups them into one op.

State an optimizer keeps between steps lives in real flowbook Variables, so a
Session holds it, ``global_variables_initializer()`` initialises it and a
``Saver`` saves it, as in TensorFlow:

- **slots**: one non-trainable Variable per (trained variable, slot name),
  named ``W/Momentum``, ``W/Adam``, ``W/Adam_1``...; ``_slots`` maps the slot
  name (``"m"``) to ``{(graph, var name): slot Variable}``;
- **non-slot variables**: per-optimizer state such as Adam's ``beta1_power``,
  in ``_non_slot_dict`` keyed by ``(name, graph)``.

Both are created outside any ``control_dependencies`` block and at the top
name scope, so building a train op inside a scope does not tie initialisation
to it.  Subclasses implement ``_create_slots``, ``_prepare`` (convert the
hyper-parameters to tensors once per ``apply_gradients``), ``_apply_dense``
(one variable's update, from existing ops and ``assign``/``assign_add``/
``assign_sub``) and optionally ``_finish``.

    >>> import flowbook as fb
    >>> from flowbook.train import GradientDescentOptimizer
    >>> with fb.Graph().as_default():
    ...     w = fb.Variable([1.0, 2.0], name="w")
    ...     step = GradientDescentOptimizer(0.5).apply_gradients([(fb.constant([2.0, 2.0]), w)])
    ...     with fb.Session() as s:
    ...         _ = s.run(w.initializer); _ = s.run(step); s.run(w).tolist()
    [0.0, 1.0]
"""

from __future__ import annotations

from typing import Any

from flowbook.autodiff.gradients import gradients
from flowbook.framework import dtypes
from flowbook.framework.graph import Graph, GraphKeys, get_default_graph
from flowbook.framework.tensor import Operation, Tensor
from flowbook.ops.array import array_ops
from flowbook.ops.array.constant_op import constant, convert_to_tensor
from flowbook.ops.control_flow.control_flow_ops import group
from flowbook.ops.control_flow.control_flow_ops import tuple as tuple_
from flowbook.ops.math import math_ops
from flowbook.ops.state import state_ops
from flowbook.variables.variables import Variable

_VALID_DTYPES = frozenset(
    [dtypes.float16, dtypes.float32, dtypes.float64, dtypes.complex64, dtypes.complex128]
)


def _var_key(var: Variable) -> tuple[Graph, str]:
    """The key of a variable in the slot tables: its graph and op name."""
    return (var.graph, var.op.name)


def _check_variable(v: Any, what: str) -> Variable:
    if not isinstance(v, Variable):
        raise NotImplementedError(
            f"Trying to {what} unsupported type {v!r}: optimizers update flowbook Variables "
            "(fb.Variable), not tensors."
        )
    return v


class Optimizer:
    """Base class for optimizers (TF1's ``tf.train.Optimizer``); use a subclass.

    >>> Optimizer.GATE_OP
    1
    """

    GATE_NONE = 0  # gradients may be used as soon as each is computed
    GATE_OP = 1  # all gradients of one op are computed before any is used
    GATE_GRAPH = 2  # all gradients are computed before any variable is updated

    def __init__(self, use_locking: bool, name: str) -> None:
        if not name:
            raise ValueError("Must specify the optimizer name")
        self._use_locking = use_locking  # passed to the assign ops
        self._name = name  # name scope of apply_gradients and suffix of slot names
        self._slots: dict[str, dict[tuple[Graph, str], Variable]] = {}  # slot -> var key -> slot
        self._non_slot_dict: dict[tuple[str, Graph], Variable] = {}  # (name, graph) -> variable

    def get_name(self) -> str:
        return self._name

    # ------------------------------------------------------------- the API
    def minimize(
        self,
        loss: Any,
        global_step: Any = None,
        var_list: Any = None,
        gate_gradients: int = GATE_OP,
        aggregation_method: Any = None,
        colocate_gradients_with_ops: bool = False,
        name: str | None = None,
        grad_loss: Any = None,
    ) -> Any:
        """Add ops that update ``var_list`` (default: all trainable variables) to reduce ``loss``.

        Returns the train op; with ``global_step`` it also increments that
        variable, after the updates.
        """
        grads_and_vars = self.compute_gradients(
            loss,
            var_list=var_list,
            gate_gradients=gate_gradients,
            aggregation_method=aggregation_method,
            colocate_gradients_with_ops=colocate_gradients_with_ops,
            grad_loss=grad_loss,
        )
        if not [v for g, v in grads_and_vars if g is not None]:
            raise ValueError(
                "No gradients provided for any variable, check your graph for ops that do not "
                f"support gradients, between variables {[str(v) for _, v in grads_and_vars]} "
                f"and loss {loss}."
            )
        return self.apply_gradients(grads_and_vars, global_step=global_step, name=name)

    def compute_gradients(
        self,
        loss: Any,
        var_list: Any = None,
        gate_gradients: int = GATE_OP,
        aggregation_method: Any = None,
        colocate_gradients_with_ops: bool = False,
        grad_loss: Any = None,
    ) -> list[tuple[Tensor | None, Variable]]:
        """``[(gradient, variable), ...]`` of ``loss``; the gradient is None where loss does not
        depend on the variable.
        """
        if callable(loss):
            loss = loss()
        if gate_gradients not in (Optimizer.GATE_NONE, Optimizer.GATE_OP, Optimizer.GATE_GRAPH):
            raise ValueError(
                "gate_gradients must be one of: Optimizer.GATE_NONE, Optimizer.GATE_OP, "
                f"Optimizer.GATE_GRAPH.  Not {gate_gradients}"
            )
        loss = convert_to_tensor(loss)
        self._assert_valid_dtypes([loss])
        if grad_loss is not None:
            self._assert_valid_dtypes([convert_to_tensor(grad_loss)])
        if var_list is None:
            var_list = loss.graph.get_collection(GraphKeys.TRAINABLE_VARIABLES)
        elif isinstance(var_list, dict):
            var_list = list(var_list.values())
        else:
            var_list = list(var_list)
        if not var_list:
            raise ValueError("No variables to optimize.")
        var_list = [_check_variable(v, "optimize") for v in var_list]
        grads = gradients(
            loss,
            var_list,
            grad_ys=grad_loss,
            gate_gradients=(gate_gradients == Optimizer.GATE_OP),
            aggregation_method=aggregation_method,
            colocate_gradients_with_ops=colocate_gradients_with_ops,
        )
        if gate_gradients == Optimizer.GATE_GRAPH:
            grads = tuple_(grads)
        grads_and_vars = list(zip(grads, var_list))
        self._assert_valid_dtypes([v for g, v in grads_and_vars if g is not None])
        return grads_and_vars

    def apply_gradients(
        self, grads_and_vars: Any, global_step: Any = None, name: str | None = None
    ) -> Any:
        """The op that applies ``[(gradient, variable), ...]``, then increments ``global_step``.

        Without ``global_step`` this is a NoOp grouping the per-variable
        updates; with it, as in TF, the ``assign_add`` of the step (its output
        is the new step), which runs after all the updates.
        """
        grads_and_vars = tuple(grads_and_vars)
        if not grads_and_vars:
            raise ValueError("No variables provided.")
        converted: list[tuple[Tensor | None, Variable]] = []
        for g, v in grads_and_vars:
            v = _check_variable(v, "update")
            if g is not None:
                try:
                    g = convert_to_tensor(g)
                except (TypeError, ValueError) as e:
                    raise TypeError(
                        f"Gradient must be convertible to a Tensor or None: {g!r} ({e})"
                    ) from None
                if g.dtype is not v.dtype:
                    raise TypeError(
                        f"The gradient {g.name} for variable {v.name} is {g.dtype.name}, "
                        f"but the variable is {v.dtype.name}"
                    )
            converted.append((g, v))
        var_list = [v for g, v in converted if g is not None]
        if not var_list:
            raise ValueError(
                f"No gradients provided for any variable: {[str(v) for _, v in converted]}."
            )
        graph = var_list[0].graph
        with graph.as_default(), graph.control_dependencies(None), graph.name_scope(None):
            self._create_slots(var_list)
        with graph.as_default(), graph.name_scope(name or self._name) as scope:
            self._prepare()
            update_ops: list[Operation] = []
            for g, v in converted:
                if g is None:
                    continue
                with graph.name_scope(f"update_{v.op.name}"):
                    update_ops.append(_as_op(self._apply_dense(g, v)))
            if global_step is None:
                apply_updates: Any = self._finish(update_ops, scope)
            else:
                with graph.control_dependencies([self._finish(update_ops, "update")]):
                    apply_updates = state_ops.assign_add(global_step, 1, name=scope)
        train_ops = graph.get_collection_ref(GraphKeys.TRAIN_OP)
        if not any(apply_updates is t for t in train_ops):
            train_ops.append(apply_updates)
        return apply_updates

    # --------------------------------------------------------------- slots
    def get_slot(self, var: Variable, name: str) -> Variable | None:
        """The slot variable ``name`` (see ``get_slot_names``) kept for ``var``, or None."""
        named = self._slots.get(name)
        if not named:
            return None
        return named.get(_var_key(var))

    def get_slot_names(self) -> list[str]:
        """The names of the slots this optimizer creates, sorted: ``["m", "v"]`` for Adam."""
        return sorted(self._slots)

    def variables(self) -> list[Variable]:
        """The optimizer's variables (slots and non-slot state) in the default graph, by name."""
        graph = get_default_graph()
        found = [v for (_, g), v in self._non_slot_dict.items() if g is graph]
        for named in self._slots.values():
            found.extend(v for v in named.values() if v.graph is graph)
        return sorted(found, key=lambda v: v.name)

    def _slot(
        self, var: Variable, slot_name: str, fill: float = 0.0, op_name: str | None = None
    ) -> Variable:
        """Get or make the slot ``slot_name`` of ``var``: ``fill`` in ``var``'s shape and dtype,
        in a Variable named ``<var>/<op_name>`` (op_name defaults to the optimizer's name).
        """
        named = self._slots.setdefault(slot_name, {})
        key = _var_key(var)
        if key not in named:
            named[key] = _make_slot(var, fill, op_name or self._name)
        return named[key]

    def _zeros_slot(self, var: Variable, slot_name: str, op_name: str | None = None) -> Variable:
        return self._slot(var, slot_name, 0.0, op_name)

    def _non_slot_variable(self, initial_value: Any, name: str, graph: Graph) -> Variable:
        """Get or make the per-graph optimizer variable ``name`` (Adam's ``beta1_power``)."""
        key = (name, graph)
        v = self._non_slot_dict.get(key)
        if v is None:
            v = Variable(initial_value, name=name, trainable=False)
            self._non_slot_dict[key] = v
        return v

    def _get_non_slot_variable(self, name: str, graph: Graph | None = None) -> Variable | None:
        return self._non_slot_dict.get((name, graph or get_default_graph()))

    # ------------------------------------------------------ for subclasses
    def _create_slots(self, var_list: list[Variable]) -> None:
        """Create the slot variables of ``var_list`` (none by default)."""

    def _prepare(self) -> None:
        """Convert hyper-parameters to tensors, once per ``apply_gradients``."""

    def _apply_dense(self, grad: Tensor, var: Variable) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not implement _apply_dense")

    def _finish(self, update_ops: list[Operation], name_scope: str) -> Operation:
        """The op grouping ``update_ops``; subclasses add their own last updates here."""
        return group(*update_ops, name=name_scope)

    def _assert_valid_dtypes(self, tensors: list[Any]) -> None:
        for t in tensors:
            if t.dtype.base_dtype not in _VALID_DTYPES:
                raise ValueError(
                    f"Invalid type {t.dtype!r} for {t.name}, expected: "
                    f"{sorted(d.name for d in _VALID_DTYPES)}."
                )

    @staticmethod
    def _hyper(value: Any, name: str) -> Tensor:
        """A hyper-parameter (Python number, tensor, variable or callable) as a tensor."""
        if callable(value) and not isinstance(value, Tensor | Variable):
            value = value()
        return convert_to_tensor(value, name=name)

    @staticmethod
    def _cast(t: Tensor, var: Variable) -> Tensor:
        """A hyper-parameter tensor in ``var``'s dtype (the kernels compute in it, as TF's do)."""
        return math_ops.cast(t, var.dtype.base_dtype)


def _as_op(update: Any) -> Operation:
    return update.op if isinstance(update, Tensor) else update


def _make_slot(var: Variable, fill: float, op_name: str) -> Variable:
    """A non-trainable Variable ``<var>/<op_name>`` holding ``fill`` in ``var``'s shape."""
    graph = var.graph
    shape = var.get_shape()
    dtype = var.dtype.base_dtype
    known = shape.is_fully_defined()

    def initial_value() -> Tensor:
        dims = shape.as_list() if known else array_ops.shape(var.initialized_value())
        if not fill:
            return array_ops.zeros(dims, dtype=dtype)
        return array_ops.fill(dims, constant(fill, dtype=dtype))

    with graph.as_default(), graph.control_dependencies(None), graph.name_scope(None):
        return Variable(
            initial_value, trainable=False, name=f"{var.op.name}/{op_name}", validate_shape=known
        )
