"""The proximal optimizers: ``ProximalGradientDescentOptimizer``, ``ProximalAdagradOptimizer``
and ``AdagradDAOptimizer`` (TF's ApplyProximalGradientDescent, ApplyProximalAdagrad and
ApplyAdagradDA kernels), which apply l1/l2 regularisation in closed form after the gradient
step, so l1 drives weights to exactly zero.

Per step, in the variable's dtype (``shrink(x, t) = sign(x) * max(|x| - t, 0)``,
which is ``x`` when ``l1`` is 0)::

    # ProximalGradientDescent (no slots)
    var = shrink(var - grad * lr, lr * l1) / (1 + lr * l2)
    # ProximalAdagrad, slot W/ProximalAdagrad (accumulator, starts at 0.1)
    accum += grad ** 2;  a = lr * rsqrt(accum)
    var = shrink(var - grad * a, a * l1) / (1 + a * l2)
    # AdagradDA, slots W/AdagradDA (gradient_accumulator, 0) and W/AdagradDA_1
    # (gradient_squared_accumulator, starts at 0.1); t = global_step + 1
    g_acc += grad;  gg_acc += grad ** 2
    var = -lr * shrink(g_acc, l1 * t) / (l2 * t * lr + sqrt(gg_acc))

    >>> import flowbook as fb
    >>> from flowbook.train import ProximalGradientDescentOptimizer
    >>> with fb.Graph().as_default():
    ...     w = fb.Variable([1.0, 0.05], name="w")
    ...     step = ProximalGradientDescentOptimizer(0.1, 1.0).apply_gradients(
    ...         [(fb.constant([0.0, 0.0]), w)])
    ...     with fb.Session() as s:
    ...         _ = s.run(w.initializer); _ = s.run(step); [round(float(v), 4) for v in s.run(w)]
    [0.9, 0.0]
"""

from __future__ import annotations

from typing import Any

from flowbook.framework import dtypes
from flowbook.framework.tensor import Tensor
from flowbook.ops.math import math_ops
from flowbook.ops.state import state_ops
from flowbook.train.optimizer import Optimizer
from flowbook.variables.variables import Variable


def _shrink(x: Tensor, threshold: Tensor) -> Tensor:
    """Soft thresholding: ``sign(x) * max(|x| - threshold, 0)``."""
    return math_ops.sign(x) * math_ops.maximum(math_ops.abs(x) - threshold, 0.0)


class _Proximal(Optimizer):
    """Shared hyper-parameters: learning rate, l1 and l2 strengths."""

    def __init__(self, learning_rate: Any, l1: Any, l2: Any, use_locking: bool, name: str):
        super().__init__(use_locking, name)
        self._lr, self._l1, self._l2 = learning_rate, l1, l2  # float, tensor or callable
        self._t: dict[str, Tensor] = {}  # their tensors, set by _prepare

    def _prepare(self) -> None:
        self._t = {
            "lr": self._hyper(self._lr, "learning_rate"),
            "l1": self._hyper(self._l1, "l1_regularization_strength"),
            "l2": self._hyper(self._l2, "l2_regularization_strength"),
        }

    def _hypers(self, var: Variable) -> tuple[Tensor, Tensor, Tensor]:
        return tuple(self._cast(self._t[k], var) for k in ("lr", "l1", "l2"))  # type: ignore


class ProximalGradientDescentOptimizer(_Proximal):
    """Gradient descent with proximal l1/l2 (TF1's ``tf.train.ProximalGradientDescentOptimizer``)."""

    def __init__(
        self,
        learning_rate: Any,
        l1_regularization_strength: Any = 0.0,
        l2_regularization_strength: Any = 0.0,
        use_locking: bool = False,
        name: str = "ProximalGradientDescent",
    ) -> None:
        super().__init__(
            learning_rate, l1_regularization_strength, l2_regularization_strength, use_locking, name
        )

    def _apply_dense(self, grad: Tensor, var: Variable) -> Any:
        lr, l1, l2 = self._hypers(var)
        prox = var.value() - grad * lr
        new = _shrink(prox, lr * l1) / (1 + lr * l2)
        return state_ops.assign(var, new, use_locking=self._use_locking)


class ProximalAdagradOptimizer(_Proximal):
    """Adagrad with proximal l1/l2 (TF1's ``tf.train.ProximalAdagradOptimizer``)."""

    def __init__(
        self,
        learning_rate: Any,
        initial_accumulator_value: float = 0.1,
        l1_regularization_strength: Any = 0.0,
        l2_regularization_strength: Any = 0.0,
        use_locking: bool = False,
        name: str = "ProximalAdagrad",
    ) -> None:
        if initial_accumulator_value <= 0.0:
            raise ValueError(
                f"initial_accumulator_value must be positive: {initial_accumulator_value}"
            )
        super().__init__(
            learning_rate, l1_regularization_strength, l2_regularization_strength, use_locking, name
        )
        self._initial_accumulator_value = initial_accumulator_value  # the slot's fill value

    def _create_slots(self, var_list: list[Variable]) -> None:
        for v in var_list:
            self._slot(v, "accumulator", self._initial_accumulator_value)

    def _apply_dense(self, grad: Tensor, var: Variable) -> Any:
        lr, l1, l2 = self._hypers(var)
        accum = self.get_slot(var, "accumulator")
        accum_t = state_ops.assign_add(accum, math_ops.square(grad), use_locking=self._use_locking)
        a = lr * math_ops.rsqrt(accum_t)
        new = _shrink(var.value() - grad * a, a * l1) / (1 + a * l2)
        return state_ops.assign(var, new, use_locking=self._use_locking)


class AdagradDAOptimizer(_Proximal):
    """Adagrad dual averaging (TF1's ``tf.train.AdagradDAOptimizer``); needs the global step."""

    def __init__(
        self,
        learning_rate: Any,
        global_step: Any,
        initial_gradient_squared_accumulator_value: float = 0.1,
        l1_regularization_strength: Any = 0.0,
        l2_regularization_strength: Any = 0.0,
        use_locking: bool = False,
        name: str = "AdagradDA",
    ) -> None:
        if initial_gradient_squared_accumulator_value <= 0.0:
            raise ValueError(
                "initial_gradient_squared_accumulator_value must be positive: "
                f"{initial_gradient_squared_accumulator_value}"
            )
        super().__init__(
            learning_rate, l1_regularization_strength, l2_regularization_strength, use_locking, name
        )
        self._global_step = global_step  # the step counter t (t = global_step + 1 in the update)
        self._initial_gg = initial_gradient_squared_accumulator_value  # gg_acc's fill value

    def _create_slots(self, var_list: list[Variable]) -> None:
        for v in var_list:
            self._zeros_slot(v, "gradient_accumulator")
            self._slot(v, "gradient_squared_accumulator", self._initial_gg)

    def _apply_dense(self, grad: Tensor, var: Variable) -> Any:
        lr, l1, l2 = self._hypers(var)
        locking = self._use_locking
        step = math_ops.cast(self._global_step, dtypes.int64) + 1
        t = math_ops.cast(step, var.dtype.base_dtype)
        g_acc = state_ops.assign_add(
            self.get_slot(var, "gradient_accumulator"), grad, use_locking=locking
        )
        gg_acc = state_ops.assign_add(
            self.get_slot(var, "gradient_squared_accumulator"),
            math_ops.square(grad),
            use_locking=locking,
        )
        new = -lr * _shrink(g_acc, l1 * t) / (l2 * t * lr + math_ops.sqrt(gg_acc))
        return state_ops.assign(var, new, use_locking=locking)
