"""``ExponentialMovingAverage``: shadow copies of variables that track their moving average.

``apply(var_list)`` makes, once per variable or tensor, a non-trainable
*shadow* Variable named ``<var>/ExponentialMovingAverage`` (TF's
``average_name``), starting at the variable's initial value (zeros for a
tensor), and returns one op that moves every shadow towards its source::

    decay = min(decay, (1 + num_updates) / (10 + num_updates))   # with num_updates
    shadow -= (1 - decay) * (shadow - value)

A tensor's average is zero-debiased when ``zero_debias=True`` (as TF, only
tensors): the biased average is kept in ``<shadow>/biased`` with a step count
``<shadow>/local_step``, and the shadow holds ``biased / (1 - decay ** t)``.

Averaged variables join the MOVING_AVERAGE_VARIABLES collection;
``variables_to_restore()`` maps the shadow names to the model variables so a
``Saver`` built on it loads the averages into the model for evaluation.

State: ``_averages``: {source key: shadow Variable}, the key a variable's
``(graph, op name)`` or a tensor's ``(graph, tensor name)``.

    >>> import flowbook as fb
    >>> from flowbook import train
    >>> with fb.Graph().as_default():
    ...     w = fb.Variable(1.0, name="w")
    ...     ema = train.ExponentialMovingAverage(0.9)
    ...     op = ema.apply([w])
    ...     with fb.Session() as s:
    ...         _ = s.run(fb.global_variables_initializer())
    ...         _ = s.run(fb.assign(w, 2.0)); _ = s.run(op)
    ...         ema.average_name(w), round(float(s.run(ema.average(w))), 4)
    ('w/ExponentialMovingAverage', 1.1)
"""

from __future__ import annotations

from typing import Any

from flowbook.framework import dtypes
from flowbook.framework.graph import Graph, GraphKeys, get_default_graph, name_scope
from flowbook.framework.tensor import Operation, Tensor
from flowbook.ops.array import array_ops
from flowbook.ops.array.constant_op import convert_to_tensor
from flowbook.ops.control_flow.control_flow_ops import group
from flowbook.ops.math import math_ops
from flowbook.ops.state import state_ops
from flowbook.variables.variables import Variable


def _key(x: Variable | Tensor) -> tuple[Graph, str]:
    return (x.graph, x.op.name if isinstance(x, Variable) else x.name)


def _base_name(x: Variable | Tensor) -> str:
    return x.op.name


class ExponentialMovingAverage:
    """Moving averages of variables and tensors (TF1's ``tf.train.ExponentialMovingAverage``)."""

    def __init__(
        self,
        decay: Any,
        num_updates: Any = None,
        zero_debias: bool = False,
        name: str = "ExponentialMovingAverage",
    ) -> None:
        self._decay = decay  # float or scalar tensor
        self._num_updates = num_updates  # optional step count that caps the decay early on
        self._zero_debias = zero_debias  # debias the averages of tensors
        self._name = name  # the scope of apply() and the suffix of shadow names
        self._averages: dict[tuple[Graph, str], Variable] = {}  # source key -> shadow

    @property
    def name(self) -> str:
        return self._name

    def apply(self, var_list: Any = None) -> Operation:
        """The op updating the averages of ``var_list`` (default: the trainable variables).

        Shadows are created the first time a variable is seen.
        """
        graph = get_default_graph()
        if var_list is None:
            var_list = graph.get_collection(GraphKeys.TRAINABLE_VARIABLES)
        var_list = [v if isinstance(v, Variable) else convert_to_tensor(v) for v in var_list]
        debiased: set[tuple[Graph, str]] = set()
        for v in var_list:
            if v.dtype.base_dtype not in (dtypes.float16, dtypes.float32, dtypes.float64):
                raise TypeError(
                    f"The variables must be half, float, or double: {v.name} is {v.dtype.name}"
                )
            if _key(v) in self._averages:
                continue
            self._averages[_key(v)] = self._make_shadow(v)
            if isinstance(v, Variable):
                if v not in graph.get_collection(GraphKeys.MOVING_AVERAGE_VARIABLES):
                    graph.add_to_collection(GraphKeys.MOVING_AVERAGE_VARIABLES, v)
            elif self._zero_debias:
                debiased.add(_key(v))
        with name_scope(self._name) as scope:
            decay = convert_to_tensor(self._decay, name="decay")
            if self._num_updates is not None:
                n = math_ops.cast(self._num_updates, dtypes.float32)
                decay = math_ops.minimum(
                    math_ops.cast(decay, dtypes.float32), (1.0 + n) / (10.0 + n)
                )
            updates = []
            for v in var_list:
                shadow = self._averages[_key(v)]
                d = math_ops.cast(decay, shadow.dtype.base_dtype)
                if _key(v) in debiased:
                    updates.append(self._debiased_update(shadow, v, d))
                else:
                    value = v.value() if isinstance(v, Variable) else v
                    updates.append(state_ops.assign_sub(shadow, (shadow - value) * (1 - d)).op)
            return group(*updates, name=scope)

    def _make_shadow(self, v: Variable | Tensor) -> Variable:
        graph = v.graph
        with graph.as_default(), graph.control_dependencies(None), graph.name_scope(None):
            if isinstance(v, Variable):
                init: Any = v.initialized_value
            else:
                shape = v.get_shape()
                if not shape.is_fully_defined():
                    raise ValueError(f"Averaging a tensor needs a fully defined shape: {v}")
                dims, dtype = shape.as_list(), v.dtype.base_dtype

                def init() -> Tensor:
                    return array_ops.zeros(dims, dtype=dtype)

            return Variable(init, trainable=False, name=f"{_base_name(v)}/{self._name}")

    def _debiased_update(self, shadow: Variable, value: Tensor, decay: Tensor) -> Operation:
        """TF's zero-debiased update: ``shadow = biased / (1 - decay ** t)``."""
        graph = shadow.graph
        dims, dtype = shadow.get_shape().as_list(), shadow.dtype.base_dtype
        with graph.control_dependencies(None), graph.name_scope(None):
            biased = Variable(
                lambda: array_ops.zeros(dims, dtype=dtype),
                trainable=False,
                name=f"{shadow.op.name}/biased",
            )
            local_step = Variable(
                lambda: array_ops.zeros([], dtype=dtype),
                trainable=False,
                name=f"{shadow.op.name}/local_step",
            )
        biased_t = state_ops.assign_sub(biased, (biased - value) * (1 - decay))
        step_t = state_ops.assign_add(local_step, 1.0)
        bias = 1 - math_ops.pow(decay, step_t)
        return state_ops.assign(shadow, biased_t / bias).op

    def average(self, var: Any) -> Variable | None:
        """The shadow Variable of ``var``, or None if ``apply`` never saw it."""
        return self._averages.get(_key(var))

    def average_name(self, var: Any) -> str:
        """The checkpoint name of ``var``'s average: ``<var op name>/<name>``."""
        shadow = self.average(var)
        if shadow is not None:
            return shadow.op.name
        return f"{_base_name(var)}/{self._name}"

    def variables_to_restore(self, moving_avg_variables: Any = None) -> dict[str, Any]:
        """{checkpoint name: variable}: averaged variables load from their shadows' names,
        the rest of the global variables (shadows excepted) from their own.

        >>> import flowbook as fb
        >>> with fb.Graph().as_default():
        ...     w = fb.Variable(1.0, name="w"); n = fb.Variable(0, name="n", trainable=False)
        ...     ema = ExponentialMovingAverage(0.9); _ = ema.apply([w])
        ...     sorted(ema.variables_to_restore())
        ['n', 'w/ExponentialMovingAverage']
        """
        graph = get_default_graph()
        if moving_avg_variables is None:
            moving_avg_variables = graph.get_collection(
                GraphKeys.TRAINABLE_VARIABLES
            ) + graph.get_collection(GraphKeys.MOVING_AVERAGE_VARIABLES)
        averaged = {_key(v) for v in moving_avg_variables}
        shadows = {_key(s) for s in self._averages.values()}
        out: dict[str, Any] = {}
        for v in graph.get_collection(GraphKeys.GLOBAL_VARIABLES):
            if _key(v) in shadows:
                continue
            out[self.average_name(v) if _key(v) in averaged else v.op.name] = v
        return out
