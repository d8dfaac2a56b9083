"""RNN cells: TF1's ``tf.nn.rnn_cell`` base class and its four cells, with TF's names and math.

A cell is one time step: ``output, new_state = cell(inputs, state)``.  It is
a :class:`flowbook.nets.layers.Layer`, so its variables come from ``get_variable``
inside a variable scope named after it, opened on the first call inside the
caller's scope (``rnn/basic_lstm_cell/kernel``) and re-entered with
``reuse=True`` on every later call: calling a cell at each step of
``static_rnn`` shares one set of weights, as in TensorFlow.  Two cell objects
in the same scope get ``basic_lstm_cell`` and ``basic_lstm_cell_1``.
``cell(x, state, scope="name")`` puts the variables in ``name`` instead.

The cells (``x`` the input, ``h`` the previous output, ``W``/``b`` kernel
and bias over the concatenation ``[x, h]``, ``sig`` the sigmoid):

- ``BasicRNNCell``: ``h' = act([x, h] W + b)``, output and state ``h'``;
- ``BasicLSTMCell``: ``i, j, f, o = split([x, h] W + b, 4)``,
  ``c' = c sig(f + forget_bias) + sig(i) act(j)``, ``h' = act(c') sig(o)``; state
  ``LSTMStateTuple(c', h')`` (or their concatenation, ``state_is_tuple=False``);
- ``LSTMCell``: the same gates, plus peepholes (``sig(f + forget_bias +
  w_f_diag c)``, ``sig(i + w_i_diag c)``, ``sig(o + w_o_diag c')``), ``cell_clip``
  on ``c'``, a projection ``h' = (act(c') sig(o)) P`` (``num_proj``) and
  ``proj_clip`` on it;
- ``GRUCell``: ``r, u = split(sig([x, h] G + g), 2)``,
  ``c = act([x, r h] C + k)``, ``h' = u h + (1 - u) c``; its variables are
  ``gates/kernel``, ``gates/bias`` (ones), ``candidate/kernel``,
  ``candidate/bias``.

Kernels start from the scope's initializer (Glorot uniform by default),
biases from zeros.  ``zero_state(batch, dtype)`` builds zeros shaped like
``state_size`` in a name scope ``<Class>ZeroState``.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     cell = tf.nn.rnn_cell.BasicLSTMCell(4)
    ...     x = tf.zeros([2, 3])
    ...     out, state = cell(x, cell.zero_state(2, tf.float32))
    ...     out2, _ = cell(x, state)  # the same weights
    ...     [v.name for v in tf.global_variables()], out2.shape.as_list()
    (['basic_lstm_cell/kernel:0', 'basic_lstm_cell/bias:0'], [2, 4])
"""

from __future__ import annotations

import collections
from typing import Any

from flowbook.framework import dtypes, nest
from flowbook.framework.graph import name_scope
from flowbook.framework.tensor import Tensor
from flowbook.framework.tensor_shape import TensorShape
from flowbook.nets.layers.base import Layer
from flowbook.ops._builder import tensor
from flowbook.ops.array import array_ops
from flowbook.ops.math import math_ops
from flowbook.ops.math.clip_ops import clip_by_value
from flowbook.ops.nn.conv_ops import bias_add
from flowbook.variables import initializers
from flowbook.variables.variable_scope import variable_scope

__all__ = [
    "BasicLSTMCell",
    "BasicRNNCell",
    "GRUCell",
    "LSTMCell",
    "LSTMStateTuple",
    "LayerRNNCell",
    "RNNCell",
]


class LSTMStateTuple(collections.namedtuple("LSTMStateTuple", ("c", "h"))):
    """An LSTM's state: the memory ``c`` and the output ``h``.

    >>> LSTMStateTuple(c=1, h=2).h
    2
    """

    __slots__ = ()

    @property
    def dtype(self) -> Any:
        if self.c.dtype != self.h.dtype:
            raise TypeError(f"Inconsistent internal state: {self.c.dtype} vs {self.h.dtype}")
        return self.c.dtype


def _zeros(batch_size: Any, size: Any, dtype: Any) -> Tensor:
    dims = TensorShape(size).as_list() if not isinstance(size, int) else [size]
    if isinstance(batch_size, int):
        return array_ops.zeros([batch_size, *dims], dtype=dtype)
    shape = array_ops.concat([array_ops.reshape(batch_size, [1]), tensor(dims, dtypes.int32)], 0)
    return array_ops.zeros(shape, dtype=dtype)


class RNNCell(Layer):
    """The abstract cell: ``state_size``, ``output_size``, ``zero_state``, ``cell(x, state)``."""

    def __init__(
        self, trainable: bool = True, name: str | None = None, dtype: Any = None, **kwargs: Any
    ) -> None:
        if "reuse" in kwargs:
            kwargs["_reuse"] = kwargs.pop("reuse")
        super().__init__(trainable=trainable, name=name, dtype=dtype, **kwargs)

    @property
    def state_size(self) -> Any:
        """The size(s) of the state: an int, a TensorShape, or a tuple of them."""
        raise NotImplementedError(f"{type(self).__name__} must define state_size")

    @property
    def output_size(self) -> Any:
        """The size of the output (an int or TensorShape)."""
        raise NotImplementedError(f"{type(self).__name__} must define output_size")

    def __call__(self, inputs: Any, state: Any, scope: Any = None) -> Any:
        """``(output, new_state)``; the first call makes the variables (in ``scope`` if given)."""
        if scope is not None and self._scope is None:
            with variable_scope(scope) as captured:
                self._scope = captured
        return super().__call__(inputs, state)

    def get_initial_state(
        self, inputs: Any = None, batch_size: Any = None, dtype: Any = None
    ) -> Any:
        """``zero_state`` with the batch size and dtype taken from ``inputs`` when given."""
        if inputs is not None:
            inputs = tensor(inputs)
            batch_size = inputs.shape[0].value
            if batch_size is None:
                batch_size = array_ops.shape(inputs)[0]
            dtype = inputs.dtype
        return self.zero_state(batch_size, dtype)

    def zero_state(self, batch_size: Any, dtype: Any) -> Any:
        """Zeros shaped ``[batch_size, size]`` for each part of ``state_size``.

        >>> import flowbook as tf
        >>> with tf.Graph().as_default():
        ...     s = tf.nn.rnn_cell.BasicLSTMCell(3).zero_state(2, tf.float32)
        ...     s.c.shape.as_list(), s.h.name
        ([2, 3], 'BasicLSTMCellZeroState/zeros_1:0')
        """
        with name_scope(type(self).__name__ + "ZeroState"):
            return nest.map_structure(lambda s: _zeros(batch_size, s, dtype), self.state_size)


LayerRNNCell = RNNCell  # TF1 splits the two; here every cell is a layer


def _input_depth(shape: Any, cell: str) -> int:
    if shape is None or shape[-1] is None:
        raise ValueError(f"{cell}: expected inputs.shape[-1] to be known, saw shape: {shape}")
    return int(shape[-1])


def _activation(activation: Any) -> Any:
    return math_ops.tanh if activation is None else activation


def _linear(parts: list[Tensor], kernel: Any, bias: Any = None) -> Tensor:
    out = math_ops.matmul(array_ops.concat(parts, 1), kernel)
    return out if bias is None else bias_add(out, bias)


class BasicRNNCell(RNNCell):
    """``h' = activation([x, h] @ kernel + bias)``; output and state are ``h'``.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     cell = tf.nn.rnn_cell.BasicRNNCell(4)
    ...     out, _ = cell(tf.ones([1, 2]), tf.zeros([1, 4]))
    ...     [v.shape.as_list() for v in cell.variables]
    [[6, 4], [4]]
    """

    def __init__(
        self,
        num_units: int,
        activation: Any = None,
        reuse: Any = None,
        name: str | None = None,
        dtype: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(name=name, dtype=dtype, reuse=reuse, **kwargs)
        self._num_units = int(num_units)
        self._activation = _activation(activation)

    @property
    def state_size(self) -> int:
        return self._num_units

    @property
    def output_size(self) -> int:
        return self._num_units

    def build(self, inputs_shape: Any) -> None:
        depth = _input_depth(inputs_shape, type(self).__name__)
        self._kernel = self.add_weight("kernel", [depth + self._num_units, self._num_units])
        self._bias = self.add_weight(
            "bias", [self._num_units], initializer=initializers.zeros_initializer()
        )
        self.built = True

    def call(self, inputs: Tensor, state: Any) -> tuple[Tensor, Tensor]:
        output = self._activation(_linear([inputs, tensor(state)], self._kernel, self._bias))
        return output, output


class BasicLSTMCell(RNNCell):
    """The LSTM without peepholes or projection; gates ``i, j, f, o``, ``forget_bias`` on ``f``.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     cell = tf.nn.rnn_cell.BasicLSTMCell(2, state_is_tuple=False)
    ...     out, state = cell(tf.ones([1, 3]), cell.zero_state(1, tf.float32))
    ...     cell.state_size, state.shape.as_list()
    (4, [1, 4])
    """

    def __init__(
        self,
        num_units: int,
        forget_bias: float = 1.0,
        state_is_tuple: bool = True,
        activation: Any = None,
        reuse: Any = None,
        name: str | None = None,
        dtype: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(name=name, dtype=dtype, reuse=reuse, **kwargs)
        self._num_units = int(num_units)
        self._forget_bias = forget_bias
        self._state_is_tuple = state_is_tuple
        self._activation = _activation(activation)

    @property
    def state_size(self) -> Any:
        n = self._num_units
        return LSTMStateTuple(n, n) if self._state_is_tuple else 2 * n

    @property
    def output_size(self) -> int:
        return self._num_units

    def build(self, inputs_shape: Any) -> None:
        depth = _input_depth(inputs_shape, type(self).__name__)
        n = self._num_units
        self._kernel = self.add_weight("kernel", [depth + n, 4 * n])
        self._bias = self.add_weight("bias", [4 * n], initializer=initializers.zeros_initializer())
        self.built = True

    def call(self, inputs: Tensor, state: Any) -> tuple[Tensor, Any]:
        if self._state_is_tuple:
            c, h = (tensor(s) for s in state)
        else:
            c, h = array_ops.split(tensor(state), 2, axis=1)
        i, j, f, o = array_ops.split(_linear([inputs, h], self._kernel, self._bias), 4, axis=1)
        forget = tensor(self._forget_bias, dtype=f.dtype)
        act, sigmoid = self._activation, math_ops.sigmoid
        new_c = c * sigmoid(f + forget) + sigmoid(i) * act(j)
        new_h = act(new_c) * sigmoid(o)
        if self._state_is_tuple:
            return new_h, LSTMStateTuple(new_c, new_h)
        return new_h, array_ops.concat([new_c, new_h], 1)


class LSTMCell(RNNCell):
    """The full LSTM: optional peepholes, cell clipping, and a clipped output projection.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     cell = tf.nn.rnn_cell.LSTMCell(4, use_peepholes=True, num_proj=2)
    ...     out, state = cell(tf.ones([1, 3]), cell.zero_state(1, tf.float32))
    ...     out.shape.as_list(), [v.op.name for v in cell.variables][2:]
    ([1, 2], ['lstm_cell/w_f_diag', 'lstm_cell/w_i_diag', 'lstm_cell/w_o_diag', 'lstm_cell/projection/kernel'])
    """

    def __init__(
        self,
        num_units: int,
        use_peepholes: bool = False,
        cell_clip: Any = None,
        initializer: Any = None,
        num_proj: int | None = None,
        proj_clip: Any = None,
        num_unit_shards: Any = None,
        num_proj_shards: Any = None,
        forget_bias: float = 1.0,
        state_is_tuple: bool = True,
        activation: Any = None,
        reuse: Any = None,
        name: str | None = None,
        dtype: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(name=name, dtype=dtype, reuse=reuse, **kwargs)
        if num_unit_shards is not None or num_proj_shards is not None:
            raise ValueError(
                "LSTMCell: num_unit_shards and num_proj_shards are deprecated in TF1 and not "
                "supported here (flowbook has no partitioned variables); leave them None"
            )
        self._num_units = int(num_units)
        self._use_peepholes = use_peepholes
        self._cell_clip, self._proj_clip = cell_clip, proj_clip
        self._initializer = initializer
        self._num_proj = int(num_proj) if num_proj else None
        self._forget_bias = forget_bias
        self._state_is_tuple = state_is_tuple
        self._activation = _activation(activation)

    @property
    def state_size(self) -> Any:
        n, m = self._num_units, self._num_proj or self._num_units
        return LSTMStateTuple(n, m) if self._state_is_tuple else n + m

    @property
    def output_size(self) -> int:
        return self._num_proj or self._num_units

    def build(self, inputs_shape: Any) -> None:
        depth = _input_depth(inputs_shape, type(self).__name__)
        n, init = self._num_units, self._initializer
        h_depth = self._num_proj or n
        self._kernel = self.add_weight("kernel", [depth + h_depth, 4 * n], initializer=init)
        self._bias = self.add_weight("bias", [4 * n], initializer=initializers.zeros_initializer())
        if self._use_peepholes:
            self._w_f_diag = self.add_weight("w_f_diag", [n], initializer=init)
            self._w_i_diag = self.add_weight("w_i_diag", [n], initializer=init)
            self._w_o_diag = self.add_weight("w_o_diag", [n], initializer=init)
        if self._num_proj is not None:
            self._proj_kernel = self.add_weight(
                "projection/kernel", [n, self._num_proj], initializer=init
            )
        self.built = True

    def _split_state(self, state: Any) -> tuple[Tensor, Tensor]:
        if self._state_is_tuple:
            c, m = (tensor(s) for s in state)
            return c, m
        state = tensor(state)
        n = self._num_units
        return state[:, :n], state[:, n : n + (self._num_proj or n)]

    def call(self, inputs: Tensor, state: Any) -> tuple[Tensor, Any]:
        c_prev, m_prev = self._split_state(state)
        i, j, f, o = array_ops.split(_linear([inputs, m_prev], self._kernel, self._bias), 4, 1)
        sigmoid, act = math_ops.sigmoid, self._activation
        forget = tensor(self._forget_bias, dtype=f.dtype)
        if self._use_peepholes:
            c = sigmoid(f + forget + self._w_f_diag * c_prev) * c_prev + sigmoid(
                i + self._w_i_diag * c_prev
            ) * act(j)
        else:
            c = sigmoid(f + forget) * c_prev + sigmoid(i) * act(j)
        if self._cell_clip is not None:
            c = clip_by_value(c, -self._cell_clip, self._cell_clip)
        o_gate = sigmoid(o + self._w_o_diag * c) if self._use_peepholes else sigmoid(o)
        m = o_gate * act(c)
        if self._num_proj is not None:
            m = math_ops.matmul(m, self._proj_kernel)
            if self._proj_clip is not None:
                m = clip_by_value(m, -self._proj_clip, self._proj_clip)
        if self._state_is_tuple:
            return m, LSTMStateTuple(c, m)
        return m, array_ops.concat([c, m], 1)


class GRUCell(RNNCell):
    """The gated recurrent unit (Cho et al. 2014): reset ``r`` and update ``u`` gates.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     cell = tf.nn.rnn_cell.GRUCell(2)
    ...     out, _ = cell(tf.ones([1, 3]), tf.zeros([1, 2]))
    ...     [v.op.name for v in cell.variables]
    ['gru_cell/gates/kernel', 'gru_cell/gates/bias', 'gru_cell/candidate/kernel', 'gru_cell/candidate/bias']
    """

    def __init__(
        self,
        num_units: int,
        activation: Any = None,
        reuse: Any = None,
        kernel_initializer: Any = None,
        bias_initializer: Any = None,
        name: str | None = None,
        dtype: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(name=name, dtype=dtype, reuse=reuse, **kwargs)
        self._num_units = int(num_units)
        self._activation = _activation(activation)
        self._kernel_initializer = kernel_initializer
        self._bias_initializer = bias_initializer

    @property
    def state_size(self) -> int:
        return self._num_units

    @property
    def output_size(self) -> int:
        return self._num_units

    def build(self, inputs_shape: Any) -> None:
        depth = _input_depth(inputs_shape, type(self).__name__)
        n, k_init, b_init = self._num_units, self._kernel_initializer, self._bias_initializer
        self._gate_kernel = self.add_weight("gates/kernel", [depth + n, 2 * n], initializer=k_init)
        self._gate_bias = self.add_weight(
            "gates/bias", [2 * n], initializer=b_init or initializers.constant_initializer(1.0)
        )
        self._candidate_kernel = self.add_weight(
            "candidate/kernel", [depth + n, n], initializer=k_init
        )
        self._candidate_bias = self.add_weight(
            "candidate/bias", [n], initializer=b_init or initializers.zeros_initializer()
        )
        self.built = True

    def call(self, inputs: Tensor, state: Any) -> tuple[Tensor, Tensor]:
        state = tensor(state)
        value = math_ops.sigmoid(_linear([inputs, state], self._gate_kernel, self._gate_bias))
        r, u = array_ops.split(value, 2, axis=1)
        candidate = _linear([inputs, r * state], self._candidate_kernel, self._candidate_bias)
        c = self._activation(candidate)
        new_h = u * state + (1 - u) * c
        return new_h, new_h
