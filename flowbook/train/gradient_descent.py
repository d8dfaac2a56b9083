"""``GradientDescentOptimizer``: ``var -= learning_rate * grad``, one ApplyGradientDescent per variable.

As TensorFlow 1 builds it: the learning rate cast to the variable's dtype, then
``ApplyGradientDescent(var, lr, grad)`` (``flowbook.ops.state.training_ops``) named
``<name>/update_<var>/ApplyGradientDescent``, so GraphDefs line up with TF's.

>>> import flowbook as fb
>>> from flowbook.train import GradientDescentOptimizer
>>> with fb.Graph().as_default():
...     w = fb.Variable(1.0, name="w")
...     step = GradientDescentOptimizer(0.1).apply_gradients([(fb.constant(2.0), w)])
...     with fb.Session() as s:
...         _ = s.run(w.initializer); _ = s.run(step); round(float(s.run(w)), 6)
0.8
"""

from __future__ import annotations

from typing import Any

from flowbook.framework.tensor import Tensor
from flowbook.ops.state import training_ops
from flowbook.train.optimizer import Optimizer
from flowbook.variables.variables import Variable


class GradientDescentOptimizer(Optimizer):
    """Plain gradient descent (TF1's ``tf.train.GradientDescentOptimizer``)."""

    def __init__(
        self, learning_rate: Any, use_locking: bool = False, name: str = "GradientDescent"
    ) -> None:
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate  # float, tensor or callable
        self._learning_rate_tensor: Tensor | None = None  # set by _prepare

    def _prepare(self) -> None:
        self._learning_rate_tensor = self._hyper(self._learning_rate, "learning_rate")

    def _apply_dense(self, grad: Tensor, var: Variable) -> Any:
        lr = self._cast(self._learning_rate_tensor, var)
        return training_ops.apply_gradient_descent(var, lr, grad, use_locking=self._use_locking)
