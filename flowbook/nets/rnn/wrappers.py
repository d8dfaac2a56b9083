"""Cells made of cells: ``MultiRNNCell`` and the wrappers (dropout, residual, device).

``MultiRNNCell([c0, c1])`` is a layer of its own (scope ``multi_rnn_cell``)
and calls cell ``i`` inside ``variable_scope("cell_i")``, so the variables are
``rnn/multi_rnn_cell/cell_0/basic_lstm_cell/kernel``; cell ``i``'s output is
cell ``i+1``'s input, and the state is the tuple of the cells' states (or
their concatenation, ``state_is_tuple=False``).

The wrappers open no scope (TF's don't either): the wrapped cell's variables
keep their names.  ``DropoutWrapper`` drops the cell's input, its output and
its new state with the given keep probabilities (a probability of exactly
1.0 adds no op); an ``LSTMStateTuple``'s memory ``c`` is left alone, only ``h``
is dropped, as TF's default state filter does.  Each dropout gets its own
seed derived from ``seed`` (so a seeded graph repeats its masks).  With
``variational_recurrent=True`` one mask of shape ``[1, depth]`` per tensor is
drawn on the first call and kept for every time step (Gal & Ghahramani).
``ResidualWrapper`` adds the input to the output (``residual_fn`` to do
otherwise); ``DeviceWrapper`` builds the cell's ops on a device.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     cells = [tf.nn.rnn_cell.GRUCell(3), tf.nn.rnn_cell.GRUCell(3)]
    ...     cell = tf.nn.rnn_cell.ResidualWrapper(tf.nn.rnn_cell.MultiRNNCell(cells))
    ...     out, state = cell(tf.ones([2, 3]), cell.zero_state(2, tf.float32))
    ...     len(state), [v.op.name for v in tf.global_variables()][0]
    (2, 'multi_rnn_cell/cell_0/gru_cell/gates/kernel')
"""

from __future__ import annotations

import hashlib
import numbers
from typing import Any

from flowbook.framework import nest
from flowbook.framework.graph import device, name_scope
from flowbook.framework.tensor import Tensor
from flowbook.nets.rnn.cells import LSTMStateTuple, RNNCell
from flowbook.ops._builder import tensor
from flowbook.ops.array import array_ops
from flowbook.ops.math import math_ops
from flowbook.ops.nn.loss_ops import dropout
from flowbook.ops.random import random_ops
from flowbook.variables.variable_scope import variable_scope

__all__ = ["DeviceWrapper", "DropoutWrapper", "MultiRNNCell", "ResidualWrapper"]


class MultiRNNCell(RNNCell):
    """Cells stacked in depth: each cell's output feeds the next.

    >>> import flowbook as tf
    >>> cell = tf.nn.rnn_cell.MultiRNNCell([tf.nn.rnn_cell.BasicRNNCell(n) for n in (4, 2)])
    >>> cell.state_size, cell.output_size
    ((4, 2), 2)
    """

    def __init__(self, cells: Any, state_is_tuple: bool = True) -> None:
        super().__init__()
        if not cells:
            raise ValueError("Must specify at least one cell for MultiRNNCell.")
        if not nest.is_sequence(cells):
            raise TypeError(f"cells must be a list or tuple, but saw: {cells}.")
        self._cells = list(cells)
        self._state_is_tuple = state_is_tuple
        if not state_is_tuple and any(nest.is_sequence(c.state_size) for c in self._cells):
            raise ValueError(
                "Some cells return tuples of states, but the flag state_is_tuple is not set.  "
                f"State sizes are: {[c.state_size for c in self._cells]}"
            )

    @property
    def state_size(self) -> Any:
        sizes = tuple(cell.state_size for cell in self._cells)
        return sizes if self._state_is_tuple else sum(sizes)

    @property
    def output_size(self) -> Any:
        return self._cells[-1].output_size

    def zero_state(self, batch_size: Any, dtype: Any) -> Any:
        if not self._state_is_tuple:
            return super().zero_state(batch_size, dtype)
        with name_scope(type(self).__name__ + "ZeroState"):
            return tuple(cell.zero_state(batch_size, dtype) for cell in self._cells)

    def call(self, inputs: Tensor, state: Any) -> tuple[Any, Any]:
        current, new_states, start = inputs, [], 0
        for i, cell in enumerate(self._cells):
            with variable_scope(f"cell_{i}"):
                if self._state_is_tuple:
                    if not nest.is_sequence(state):
                        raise ValueError(
                            f"Expected state to be a tuple of length {len(self.state_size)}, "
                            f"but received: {state}"
                        )
                    cell_state = state[i]
                else:
                    cell_state = tensor(state)[:, start : start + cell.state_size]
                    start += cell.state_size
                current, new_state = cell(current, cell_state)
                new_states.append(new_state)
        if self._state_is_tuple:
            return current, tuple(new_states)
        return current, array_ops.concat(new_states, 1)


class _Wrapper(RNNCell):
    """A cell around ``cell``: the same sizes, no scope of its own."""

    def __init__(self, cell: RNNCell) -> None:
        super().__init__()
        if not (hasattr(cell, "state_size") and hasattr(cell, "output_size") and callable(cell)):
            raise TypeError(f"The argument 'cell' ({cell!r}) is not an RNNCell")
        self.cell = cell

    @property
    def state_size(self) -> Any:
        return self.cell.state_size

    @property
    def output_size(self) -> Any:
        return self.cell.output_size

    @property
    def variables(self) -> list[Any]:  # type: ignore[override]
        return self.cell.variables

    def zero_state(self, batch_size: Any, dtype: Any) -> Any:
        with name_scope(type(self).__name__ + "ZeroState"):
            return self.cell.zero_state(batch_size, dtype)


def _should_drop(p: Any) -> bool:
    return not isinstance(p, numbers.Real) or p < 1


class DropoutWrapper(_Wrapper):
    """Dropout on a cell's inputs, outputs and state (see the module docstring).

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     cell = tf.nn.rnn_cell.DropoutWrapper(tf.nn.rnn_cell.BasicRNNCell(3),
    ...                                          output_keep_prob=0.5, seed=1)
    ...     out, _ = cell(tf.ones([2, 3]), tf.zeros([2, 3]))
    ...     out.op.type
    'Mul'
    """

    def __init__(
        self,
        cell: RNNCell,
        input_keep_prob: Any = 1.0,
        output_keep_prob: Any = 1.0,
        state_keep_prob: Any = 1.0,
        variational_recurrent: bool = False,
        input_size: Any = None,
        dtype: Any = None,
        seed: int | None = None,
        dropout_state_filter_visitor: Any = None,
    ) -> None:
        super().__init__(cell)
        for p, what in (
            (input_keep_prob, "input"),
            (output_keep_prob, "output"),
            (state_keep_prob, "state"),
        ):
            if isinstance(p, numbers.Real) and not 0 < p <= 1:
                raise ValueError(f"Parameter {what}_keep_prob must be between 0 and 1: {p}")
        self._keep = {
            "input": input_keep_prob,
            "output": output_keep_prob,
            "state": state_keep_prob,
        }
        self._variational = variational_recurrent
        self._seed = seed
        self._state_filter = dropout_state_filter_visitor or _default_state_filter
        self._masks: dict[tuple[str, int], Tensor] = {}  # variational: (what, index) -> mask

    def _gen_seed(self, prefix: str, index: int) -> int | None:
        if self._seed is None:
            return None
        digest = hashlib.md5(f"{self._seed}{prefix}_{index}".encode()).hexdigest()
        return int(digest[:8], 16) & 0x7FFFFFFF

    def _drop_one(self, value: Tensor, what: str, index: int) -> Tensor:
        keep, seed = self._keep[what], self._gen_seed(what, index)
        if not self._variational:
            return dropout(value, keep_prob=keep, seed=seed)
        if (what, index) not in self._masks:
            keep_t = tensor(keep, dtype=value.dtype)
            depth = value.shape[-1].value
            size = depth if depth is not None else array_ops.shape(value)[-1:]
            shape = [1, size] if depth is not None else array_ops.concat([[1], size], 0)
            noise = random_ops.random_uniform(shape, seed=seed, dtype=value.dtype)
            self._masks[(what, index)] = math_ops.floor(keep_t + noise)
        return value / tensor(keep, dtype=value.dtype) * self._masks[(what, index)]

    def _drop(self, values: Any, what: str, keep_mask: Any = True) -> Any:
        flat, mask = nest.flatten(values), nest.flatten(keep_mask)
        if len(mask) != len(flat):
            mask = [True] * len(flat)
        out = [
            self._drop_one(tensor(v), what, i) if m else v
            for i, (v, m) in enumerate(zip(flat, mask, strict=True))
        ]
        return nest.pack_sequence_as(values, out)

    def __call__(self, inputs: Any, state: Any, scope: Any = None) -> Any:
        if _should_drop(self._keep["input"]):
            inputs = self._drop(inputs, "input")
        output, new_state = self.cell(inputs, state, scope=scope)
        if _should_drop(self._keep["state"]):
            keep_mask = _state_mask(new_state, self._state_filter)
            new_state = self._drop(new_state, "state", keep_mask)
        if _should_drop(self._keep["output"]):
            output = self._drop(output, "output")
        return output, new_state


def _default_state_filter(substate: Any) -> Any:
    """Which parts of a state to drop: all but an ``LSTMStateTuple``'s memory ``c``."""
    if isinstance(substate, LSTMStateTuple):
        return LSTMStateTuple(c=False, h=True)
    return True


def _state_mask(state: Any, visitor: Any) -> Any:
    """Which leaves of ``state`` to drop: ``visitor`` answers a bool (for the whole part; True
    on a tuple looks inside it) or a structure of bools for the part's children."""
    decision = visitor(state)
    if not nest.is_sequence(state):
        return bool(decision)
    if decision is False:
        return nest.map_structure(lambda _: False, state)
    children = list(state)
    answers = [True] * len(children) if decision is True else list(decision)
    return nest.sequence_like(
        state,
        [
            _state_mask(c, visitor)
            if a is True and nest.is_sequence(c)
            else nest.map_structure(lambda _, a=a: bool(a), c)
            for c, a in zip(children, answers, strict=True)
        ],
    )


class ResidualWrapper(_Wrapper):
    """``output + input`` (or ``residual_fn(inputs, outputs)``) as the cell's output.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     cell = tf.nn.rnn_cell.ResidualWrapper(tf.nn.rnn_cell.BasicRNNCell(2))
    ...     out, _ = cell(tf.ones([1, 2]), tf.zeros([1, 2]))
    ...     out.op.type
    'Add'
    """

    def __init__(self, cell: RNNCell, residual_fn: Any = None) -> None:
        super().__init__(cell)
        self._residual_fn = residual_fn

    def __call__(self, inputs: Any, state: Any, scope: Any = None) -> Any:
        outputs, new_state = self.cell(inputs, state, scope=scope)

        def add(x: Any, y: Any) -> Tensor:
            x, y = tensor(x), tensor(y)
            x.get_shape().assert_is_compatible_with(y.get_shape())
            return x + y

        if self._residual_fn is not None:
            return self._residual_fn(inputs, outputs), new_state
        nest.assert_same_structure(inputs, outputs)
        return nest.map_structure(add, inputs, outputs), new_state


class DeviceWrapper(_Wrapper):
    """Builds the wrapped cell's ops (and its zero state) on ``device``.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     cell = tf.nn.rnn_cell.DeviceWrapper(tf.nn.rnn_cell.BasicRNNCell(2), "/cpu:0")
    ...     out, _ = cell(tf.ones([1, 2]), tf.zeros([1, 2]))
    ...     out.device
    '/device:CPU:0'
    """

    def __init__(self, cell: RNNCell, device: str) -> None:
        super().__init__(cell)
        self._device = device

    def zero_state(self, batch_size: Any, dtype: Any) -> Any:
        with name_scope(type(self).__name__ + "ZeroState"), device(self._device):
            return self.cell.zero_state(batch_size, dtype)

    def __call__(self, inputs: Any, state: Any, scope: Any = None) -> Any:
        with device(self._device):
            return self.cell(inputs, state, scope=scope)
