"""``RMSPropOptimizer``: TF1's RMSProp (ApplyRMSProp / ApplyCenteredRMSProp kernels).

Slots: ``rms`` (``W/RMSProp``, starts at ones), ``mg`` when centered, and
``momentum`` (zeros).  Per step, in the variable's dtype::

    ms += (grad ** 2 - ms) * (1 - decay)
    mg += (grad - mg) * (1 - decay)                              # centered only
    mom = mom * momentum + grad * lr / sqrt(ms + epsilon)        # centered: ms - mg**2 + epsilon
    var -= mom

    >>> import flowbook as fb
    >>> from flowbook.train import RMSPropOptimizer
    >>> with fb.Graph().as_default():
    ...     w = fb.Variable(1.0, name="w")
    ...     opt = RMSPropOptimizer(0.01)
    ...     _ = opt.apply_gradients([(fb.constant(1.0), w)])
    ...     opt.get_slot_names(), opt.get_slot(w, "rms").name
    (['momentum', 'rms'], 'w/RMSProp:0')
"""

from __future__ import annotations

from typing import Any

from flowbook.framework.tensor import Tensor
from flowbook.ops.math import math_ops
from flowbook.ops.state import state_ops
from flowbook.train.optimizer import Optimizer
from flowbook.variables.variables import Variable


class RMSPropOptimizer(Optimizer):
    """RMSProp (TF1's ``tf.train.RMSPropOptimizer``)."""

    def __init__(
        self,
        learning_rate: Any,
        decay: Any = 0.9,
        momentum: Any = 0.0,
        epsilon: Any = 1e-10,
        use_locking: bool = False,
        centered: bool = False,
        name: str = "RMSProp",
    ) -> None:
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate  # hyper-parameters: float, tensor or callable
        self._decay = decay
        self._momentum = momentum
        self._epsilon = epsilon
        self._centered = centered  # divide by an estimate of the variance, not the 2nd moment
        self._learning_rate_tensor: Tensor | None = None  # their tensors, set by _prepare
        self._decay_tensor: Tensor | None = None
        self._momentum_tensor: Tensor | None = None
        self._epsilon_tensor: Tensor | None = None

    def _create_slots(self, var_list: list[Variable]) -> None:
        for v in var_list:
            self._slot(v, "rms", 1.0, self._name)
            if self._centered:
                self._zeros_slot(v, "mg", self._name)
            self._zeros_slot(v, "momentum", self._name)

    def _prepare(self) -> None:
        self._learning_rate_tensor = self._hyper(self._learning_rate, "learning_rate")
        self._decay_tensor = self._hyper(self._decay, "decay")
        self._momentum_tensor = self._hyper(self._momentum, "momentum")
        self._epsilon_tensor = self._hyper(self._epsilon, "epsilon")

    def _apply_dense(self, grad: Tensor, var: Variable) -> Any:
        rms, mom = self.get_slot(var, "rms"), self.get_slot(var, "momentum")
        lr = self._cast(self._learning_rate_tensor, var)
        rho = self._cast(self._decay_tensor, var)
        momentum = self._cast(self._momentum_tensor, var)
        epsilon = self._cast(self._epsilon_tensor, var)
        locking = self._use_locking
        ms_t = state_ops.assign_add(
            rms, (math_ops.square(grad) - rms) * (1 - rho), use_locking=locking
        )
        if self._centered:
            mg = self.get_slot(var, "mg")
            mg_t = state_ops.assign_add(mg, (grad - mg) * (1 - rho), use_locking=locking)
            denom = (ms_t - math_ops.square(mg_t)) + epsilon
        else:
            denom = ms_t + epsilon
        mom_t = state_ops.assign(
            mom, mom * momentum + (grad * lr) / math_ops.sqrt(denom), use_locking=locking
        )
        return state_ops.assign_sub(var, mom_t, use_locking=locking)
