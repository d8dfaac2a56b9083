"""``AdagradOptimizer``: TF's ApplyAdagrad, with an ``accumulator`` slot ``W/Adagrad``.

Per step, as the TF kernel computes it (in the variable's dtype)::

    accum += grad ** 2                 # accum starts at initial_accumulator_value
    var -= grad * lr * rsqrt(accum)

    >>> import flowbook as fb
    >>> from flowbook.train import AdagradOptimizer
    >>> with fb.Graph().as_default():
    ...     w = fb.Variable(1.0, name="w")
    ...     step = AdagradOptimizer(0.1).apply_gradients([(fb.constant(3.0), w)])
    ...     with fb.Session() as s:
    ...         _ = s.run(fb.global_variables_initializer()); _ = s.run(step)
    ...         round(float(s.run(w)), 4)
    0.9006
"""

from __future__ import annotations

from typing import Any

from flowbook.framework.tensor import Tensor
from flowbook.ops.math import math_ops
from flowbook.ops.state import state_ops
from flowbook.train.optimizer import Optimizer
from flowbook.variables.variables import Variable


class AdagradOptimizer(Optimizer):
    """Adagrad (TF1's ``tf.train.AdagradOptimizer``)."""

    def __init__(
        self,
        learning_rate: Any,
        initial_accumulator_value: float = 0.1,
        use_locking: bool = False,
        name: str = "Adagrad",
    ) -> None:
        if initial_accumulator_value <= 0.0:
            raise ValueError(
                f"initial_accumulator_value must be positive: {initial_accumulator_value}"
            )
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate  # float, tensor or callable
        self._initial_accumulator_value = initial_accumulator_value  # the slot's fill value
        self._learning_rate_tensor: Tensor | None = None  # set by _prepare

    def _create_slots(self, var_list: list[Variable]) -> None:
        for v in var_list:
            self._slot(v, "accumulator", self._initial_accumulator_value)

    def _prepare(self) -> None:
        self._learning_rate_tensor = self._hyper(self._learning_rate, "learning_rate")

    def _apply_dense(self, grad: Tensor, var: Variable) -> Any:
        accum = self.get_slot(var, "accumulator")
        lr = self._cast(self._learning_rate_tensor, var)
        accum_t = state_ops.assign_add(accum, math_ops.square(grad), use_locking=self._use_locking)
        delta = grad * lr * math_ops.rsqrt(accum_t)
        return state_ops.assign_sub(var, delta, use_locking=self._use_locking)
