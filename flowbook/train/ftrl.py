"""``FtrlOptimizer``: FTRL-Proximal (TF's ApplyFtrl/ApplyFtrlV2), slots ``W/Ftrl``, ``W/Ftrl_1``.

The slots are ``accum`` (starts at ``initial_accumulator_value``) and
``linear`` (starts at zero).  Per step, in the variable's dtype, with
``p = -learning_rate_power`` (0.5 by default)::

    g_shrunk = grad + 2 * l2_shrinkage * var          # = grad without shrinkage
    accum_new = accum + grad ** 2
    linear += g_shrunk - (accum_new ** p - accum ** p) / lr * var
    quadratic = accum_new ** p / lr + 2 * l2
    var = (sign(linear) * l1 - linear) / quadratic  if |linear| > l1  else 0
    accum = accum_new

``beta`` (TF 1.15) adds ``beta / (2 * lr)`` to ``l2``.

    >>> import flowbook as fb
    >>> from flowbook.train import FtrlOptimizer
    >>> with fb.Graph().as_default():
    ...     w = fb.Variable(1.0, name="w")
    ...     opt = FtrlOptimizer(0.5, l1_regularization_strength=0.01)
    ...     step = opt.apply_gradients([(fb.constant(2.0), w)])
    ...     [v.op.name for v in opt.variables()]
    ['w/Ftrl', 'w/Ftrl_1']
"""

from __future__ import annotations

from typing import Any

from flowbook.framework.tensor import Tensor
from flowbook.ops.array import array_ops
from flowbook.ops.math import math_ops
from flowbook.ops.state import state_ops
from flowbook.train.optimizer import Optimizer
from flowbook.variables.variables import Variable


def _check(value: Any, what: str, allow_zero: bool = True) -> None:
    if isinstance(value, int | float) and (value < 0 or (value == 0 and not allow_zero)):
        raise ValueError(
            f"{what} {value} needs to be {'positive or zero' if allow_zero else 'positive'}"
        )


class FtrlOptimizer(Optimizer):
    """FTRL-Proximal (TF1's ``tf.train.FtrlOptimizer``)."""

    def __init__(
        self,
        learning_rate: Any,
        learning_rate_power: Any = -0.5,
        initial_accumulator_value: float = 0.1,
        l1_regularization_strength: Any = 0.0,
        l2_regularization_strength: Any = 0.0,
        use_locking: bool = False,
        name: str = "Ftrl",
        accum_name: str | None = None,
        linear_name: str | None = None,
        l2_shrinkage_regularization_strength: Any = 0.0,
        beta: Any = None,
    ) -> None:
        super().__init__(use_locking, name)
        _check(initial_accumulator_value, "initial_accumulator_value")
        if isinstance(learning_rate_power, int | float) and learning_rate_power > 0:
            raise ValueError(
                f"learning_rate_power {learning_rate_power} needs to be negative or zero"
            )
        _check(l1_regularization_strength, "l1_regularization_strength")
        _check(l2_regularization_strength, "l2_regularization_strength")
        _check(l2_shrinkage_regularization_strength, "l2_shrinkage_regularization_strength")
        self._lr = learning_rate  # hyper-parameters: float, tensor or callable
        self._lr_power = learning_rate_power
        self._initial_accumulator_value = initial_accumulator_value  # accum's fill value
        self._l1 = l1_regularization_strength
        self._l2 = l2_regularization_strength
        self._l2_shrinkage = l2_shrinkage_regularization_strength
        self._beta = 0.0 if beta is None else beta
        self._accum_name = accum_name  # slot variable suffixes (default: the optimizer's name)
        self._linear_name = linear_name
        self._t: dict[str, Tensor] = {}  # hyper-parameter tensors, set by _prepare

    def _create_slots(self, var_list: list[Variable]) -> None:
        for v in var_list:
            self._slot(v, "accum", self._initial_accumulator_value, self._accum_name)
            self._zeros_slot(v, "linear", self._linear_name)

    def _prepare(self) -> None:
        self._t = {
            "lr": self._hyper(self._lr, "learning_rate"),
            "lr_power": self._hyper(self._lr_power, "learning_rate_power"),
            "l1": self._hyper(self._l1, "l1_regularization_strength"),
            "l2": self._hyper(self._l2, "l2_regularization_strength"),
            "l2_shrinkage": self._hyper(self._l2_shrinkage, "l2_shrinkage_regularization_strength"),
            "beta": self._hyper(self._beta, "beta"),
        }

    def _apply_dense(self, grad: Tensor, var: Variable) -> Any:
        accum, linear = self.get_slot(var, "accum"), self.get_slot(var, "linear")
        t = {k: self._cast(v, var) for k, v in self._t.items()}
        lr, l1 = t["lr"], t["l1"]
        l2 = t["l2"] + t["beta"] / (2 * lr)
        p = -t["lr_power"]
        locking = self._use_locking
        old = accum.value()
        accum_new = old + math_ops.square(grad)
        g_shrunk = grad + 2 * t["l2_shrinkage"] * var.value()
        sigma = (math_ops.pow(accum_new, p) - math_ops.pow(old, p)) / lr
        linear_t = state_ops.assign_add(linear, g_shrunk - sigma * var.value(), use_locking=locking)
        quadratic = math_ops.pow(accum_new, p) / lr + 2 * l2
        shrunk = (math_ops.sign(linear_t) * l1 - linear_t) / quadratic
        new_var = array_ops.where(
            math_ops.greater(math_ops.abs(linear_t), l1), shrunk, array_ops.zeros_like(shrunk)
        )
        var_t = state_ops.assign(var, new_var, use_locking=locking)
        with var.graph.control_dependencies([var_t.op]):
            return state_ops.assign(accum, accum_new, use_locking=locking)
