"""``AdadeltaOptimizer``: TF's ApplyAdadelta, slots ``W/Adadelta`` (accum), ``W/Adadelta_1``.

Per step, as the TF kernel computes it (in the variable's dtype)::

    accum = accum * rho + grad ** 2 * (1 - rho)
    update = sqrt(accum_update + epsilon) * rsqrt(accum + epsilon) * grad
    accum_update = accum_update * rho + update ** 2 * (1 - rho)
    var -= update * lr

Both slots start at zero, so the first step moves ``var`` by about
``lr * sqrt(epsilon / (1 - rho))`` whatever the gradient's scale.

    >>> import flowbook as fb
    >>> from flowbook.train import AdadeltaOptimizer
    >>> with fb.Graph().as_default():
    ...     w = fb.Variable(1.0, name="w")
    ...     opt = AdadeltaOptimizer(1.0)
    ...     step = opt.apply_gradients([(fb.constant(3.0), w)])
    ...     [v.op.name for v in opt.variables()]
    ['w/Adadelta', 'w/Adadelta_1']
"""

from __future__ import annotations

from typing import Any

from flowbook.framework.tensor import Tensor
from flowbook.ops.math import math_ops
from flowbook.ops.state import state_ops
from flowbook.train.optimizer import Optimizer
from flowbook.variables.variables import Variable


class AdadeltaOptimizer(Optimizer):
    """Adadelta (TF1's ``tf.train.AdadeltaOptimizer``)."""

    def __init__(
        self,
        learning_rate: Any = 0.001,
        rho: Any = 0.95,
        epsilon: Any = 1e-8,
        use_locking: bool = False,
        name: str = "Adadelta",
    ) -> None:
        super().__init__(use_locking, name)
        self._lr = learning_rate  # hyper-parameters: float, tensor or callable
        self._rho = rho
        self._epsilon = epsilon
        self._lr_t: Tensor | None = None  # their tensors, set by _prepare
        self._rho_t: Tensor | None = None
        self._epsilon_t: Tensor | None = None

    def _create_slots(self, var_list: list[Variable]) -> None:
        for v in var_list:
            self._zeros_slot(v, "accum", self._name)
            self._zeros_slot(v, "accum_update", self._name)

    def _prepare(self) -> None:
        self._lr_t = self._hyper(self._lr, "lr")
        self._rho_t = self._hyper(self._rho, "rho")
        self._epsilon_t = self._hyper(self._epsilon, "epsilon")

    def _apply_dense(self, grad: Tensor, var: Variable) -> Any:
        accum = self.get_slot(var, "accum")
        accum_update = self.get_slot(var, "accum_update")
        lr = self._cast(self._lr_t, var)
        rho = self._cast(self._rho_t, var)
        eps = self._cast(self._epsilon_t, var)
        locking = self._use_locking
        accum_t = state_ops.assign(
            accum, accum * rho + math_ops.square(grad) * (1 - rho), use_locking=locking
        )
        update = math_ops.sqrt(accum_update + eps) * math_ops.rsqrt(accum_t + eps) * grad
        update_t = state_ops.assign(
            accum_update,
            accum_update * rho + math_ops.square(update) * (1 - rho),
            use_locking=locking,
        )
        # the variable moves after accum_update is written, as in the fused kernel
        with var.graph.control_dependencies([update_t.op]):
            return state_ops.assign_sub(var, update * lr, use_locking=locking)
