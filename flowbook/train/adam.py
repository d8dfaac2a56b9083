"""``AdamOptimizer``: TF1's Adam (its ApplyAdam kernel), slots ``W/Adam`` (m), ``W/Adam_1`` (v).

TF1's form, with the bias corrections folded into the step size; the
non-trainable variables ``beta1_power`` and ``beta2_power`` start at beta1
and beta2 and are multiplied by them after each step's updates (``_finish``).
Per step, in the variable's dtype::

    lr_t = lr * sqrt(1 - beta2_power) / (1 - beta1_power)
    m += (grad - m) * (1 - beta1)
    v += (grad ** 2 - v) * (1 - beta2)
    var -= m * lr_t / (sqrt(v) + epsilon)

    >>> import flowbook as fb
    >>> from flowbook.train import AdamOptimizer
    >>> with fb.Graph().as_default():
    ...     w = fb.Variable(1.0, name="w")
    ...     opt = AdamOptimizer(0.1)
    ...     step = opt.apply_gradients([(fb.constant(0.5), w)])
    ...     [v.op.name for v in opt.variables()]
    ['beta1_power', 'beta2_power', 'w/Adam', 'w/Adam_1']
"""

from __future__ import annotations

from typing import Any

from flowbook.framework.tensor import Operation, Tensor
from flowbook.ops.control_flow.control_flow_ops import group
from flowbook.ops.math import math_ops
from flowbook.ops.state import state_ops
from flowbook.train.optimizer import Optimizer
from flowbook.variables.variables import Variable


class AdamOptimizer(Optimizer):
    """Adam (TF1's ``tf.train.AdamOptimizer``)."""

    def __init__(
        self,
        learning_rate: Any = 0.001,
        beta1: Any = 0.9,
        beta2: Any = 0.999,
        epsilon: Any = 1e-08,
        use_locking: bool = False,
        name: str = "Adam",
    ) -> None:
        super().__init__(use_locking, name)
        self._lr = learning_rate  # hyper-parameters: float, tensor or callable
        self._beta1 = beta1
        self._beta2 = beta2
        self._epsilon = epsilon
        self._lr_t: Tensor | None = None  # their tensors, set by _prepare
        self._beta1_t: Tensor | None = None
        self._beta2_t: Tensor | None = None
        self._epsilon_t: Tensor | None = None
        self._graph: Any = None  # the graph of the last apply_gradients (for the accumulators)

    def _get_beta_accumulators(self) -> tuple[Variable, Variable]:
        graph = self._graph
        b1 = self._get_non_slot_variable("beta1_power", graph)
        b2 = self._get_non_slot_variable("beta2_power", graph)
        assert b1 is not None and b2 is not None
        return b1, b2

    def _create_slots(self, var_list: list[Variable]) -> None:
        first = min(var_list, key=lambda v: v.name)
        self._graph = first.graph
        beta1 = self._beta1() if callable(self._beta1) else self._beta1
        beta2 = self._beta2() if callable(self._beta2) else self._beta2
        self._non_slot_variable(beta1, "beta1_power", first.graph)
        self._non_slot_variable(beta2, "beta2_power", first.graph)
        for v in var_list:
            self._zeros_slot(v, "m", self._name)
            self._zeros_slot(v, "v", self._name)

    def _prepare(self) -> None:
        self._lr_t = self._hyper(self._lr, "learning_rate")
        self._beta1_t = self._hyper(self._beta1, "beta1")
        self._beta2_t = self._hyper(self._beta2, "beta2")
        self._epsilon_t = self._hyper(self._epsilon, "epsilon")

    def _apply_dense(self, grad: Tensor, var: Variable) -> Any:
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        beta1_power, beta2_power = self._get_beta_accumulators()
        b1p = self._cast(beta1_power.value(), var)
        b2p = self._cast(beta2_power.value(), var)
        lr = self._cast(self._lr_t, var)
        beta1 = self._cast(self._beta1_t, var)
        beta2 = self._cast(self._beta2_t, var)
        epsilon = self._cast(self._epsilon_t, var)
        locking = self._use_locking
        alpha = lr * math_ops.sqrt(1 - b2p) / (1 - b1p)
        m_t = state_ops.assign_add(m, (grad - m) * (1 - beta1), use_locking=locking)
        v_t = state_ops.assign_add(
            v, (math_ops.square(grad) - v) * (1 - beta2), use_locking=locking
        )
        return state_ops.assign_sub(
            var, (m_t * alpha) / (math_ops.sqrt(v_t) + epsilon), use_locking=locking
        )

    def _finish(self, update_ops: list[Operation], name_scope: str) -> Operation:
        beta1_power, beta2_power = self._get_beta_accumulators()
        graph = beta1_power.graph
        with graph.control_dependencies(update_ops):
            update_beta1 = state_ops.assign(
                beta1_power, beta1_power * self._beta1_t, use_locking=self._use_locking
            )
            update_beta2 = state_ops.assign(
                beta2_power, beta2_power * self._beta2_t, use_locking=self._use_locking
            )
        return group(*update_ops, update_beta1, update_beta2, name=name_scope)
