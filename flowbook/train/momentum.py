"""``MomentumOptimizer``: TF's ApplyMomentum, with an ``accumulation`` slot ``W/Momentum``.

Per step, as the TF kernel computes it (in the variable's dtype)::

    accum = accum * momentum + grad
    var -= accum * lr                                   # use_nesterov=False
    var -= grad * lr + accum * momentum * lr            # use_nesterov=True

    >>> import flowbook as fb
    >>> from flowbook.train import MomentumOptimizer
    >>> with fb.Graph().as_default():
    ...     w = fb.Variable(1.0, name="w")
    ...     opt = MomentumOptimizer(0.5, momentum=0.9)
    ...     step = opt.apply_gradients([(fb.constant(1.0), w)])
    ...     opt.get_slot(w, "momentum").name
    'w/Momentum:0'
"""

from __future__ import annotations

from typing import Any

from flowbook.framework.tensor import Tensor
from flowbook.ops.state import state_ops
from flowbook.train.optimizer import Optimizer
from flowbook.variables.variables import Variable


class MomentumOptimizer(Optimizer):
    """Gradient descent with momentum (TF1's ``tf.train.MomentumOptimizer``)."""

    def __init__(
        self,
        learning_rate: Any,
        momentum: Any,
        use_locking: bool = False,
        name: str = "Momentum",
        use_nesterov: bool = False,
    ) -> None:
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate  # float, tensor or callable
        self._momentum = momentum  # float, tensor or callable
        self._use_nesterov = use_nesterov
        self._learning_rate_tensor: Tensor | None = None  # set by _prepare
        self._momentum_tensor: Tensor | None = None

    def _create_slots(self, var_list: list[Variable]) -> None:
        for v in var_list:
            self._zeros_slot(v, "momentum", self._name)

    def _prepare(self) -> None:
        self._learning_rate_tensor = self._hyper(self._learning_rate, "learning_rate")
        self._momentum_tensor = self._hyper(self._momentum, "momentum")

    def _apply_dense(self, grad: Tensor, var: Variable) -> Any:
        accum = self.get_slot(var, "momentum")
        lr = self._cast(self._learning_rate_tensor, var)
        momentum = self._cast(self._momentum_tensor, var)
        locking = self._use_locking
        accum_t = state_ops.assign(accum, accum * momentum + grad, use_locking=locking)
        if self._use_nesterov:
            delta = grad * lr + accum_t * momentum * lr
        else:
            delta = accum_t * lr
        return state_ops.assign_sub(var, delta, use_locking=locking)
