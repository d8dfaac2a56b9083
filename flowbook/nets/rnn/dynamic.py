"""``tf.nn.dynamic_rnn`` and ``bidirectional_dynamic_rnn``: the cell's step as one ``while_loop``.

Unlike ``static_rnn`` (one copy of the step per time step), the graph holds
the step once, in a loop that runs it for every time step of the fed
sequence, so the sequence length may be unknown until the run.  As in
TensorFlow, the time-major inputs are unstacked into one ``TensorArray``
each before the loop; per iteration ``t`` the loop reads element ``t`` of
each, calls the cell, and writes the output into an output ``TensorArray``
(a loop variable), stacked after the loop.

The cell's variables are made outside the loop (``Variable`` builds out of
control flow), so they are named as TensorFlow names them:
``rnn/basic_lstm_cell/kernel``.  ``sequence_length`` zeroes the outputs past
each row's end and freezes its state, as in ``static_rnn``.  The gradient is
the loop's (``flowbook.ops.control_flow.while_grad``).

    >>> import flowbook as tf, numpy as np
    >>> with tf.Graph().as_default(), tf.Session() as s:
    ...     x = tf.placeholder(tf.float32, [2, None, 3])
    ...     out, state = tf.nn.dynamic_rnn(tf.nn.rnn_cell.GRUCell(4), x, dtype=tf.float32)
    ...     s.run(tf.global_variables_initializer())
    ...     s.run(out, {x: np.ones((2, 5, 3))}).shape
    (2, 5, 4)
"""

from __future__ import annotations

from typing import Any

from flowbook.framework import dtypes, nest
from flowbook.framework.tensor import Tensor
from flowbook.nets.rnn.cells import _zeros
from flowbook.nets.rnn.static import _select
from flowbook.ops._builder import tensor
from flowbook.ops.array import array_ops
from flowbook.ops.array.sequence_ops import reverse_sequence
from flowbook.ops.control_flow.control_flow import while_loop
from flowbook.ops.control_flow.tensor_array import TensorArray
from flowbook.ops.math import math_ops
from flowbook.variables.variable_scope import variable_scope

__all__ = ["bidirectional_dynamic_rnn", "dynamic_rnn"]


def _swap_time_batch(x: Tensor) -> Tensor:
    rank = x.get_shape().ndims
    if rank is None or rank < 2:
        raise ValueError(f"dynamic_rnn inputs must have rank >= 2, got shape {x.get_shape()}")
    return array_ops.transpose(x, [1, 0, *range(2, rank)])


def _dim(x: Tensor, k: int) -> Any:
    """Dimension ``k`` of ``x``: an int when static, else a scalar tensor."""
    d = x.get_shape()[k].value
    return d if d is not None else array_ops.shape(x)[k]


def dynamic_rnn(
    cell: Any,
    inputs: Any,
    sequence_length: Any = None,
    initial_state: Any = None,
    dtype: Any = None,
    parallel_iterations: int | None = None,
    swap_memory: bool = False,
    time_major: bool = False,
    scope: Any = None,
) -> tuple[Any, Any]:
    """``(outputs, final_state)`` of ``cell`` run over ``inputs`` (``[batch, time, depth]``, or
    ``[time, batch, depth]`` with ``time_major``) in a while loop.  See the module docstring."""
    with variable_scope(scope or "rnn"):
        flat = [tensor(x) for x in nest.flatten(inputs)]
        if not time_major:
            flat = [_swap_time_batch(x) for x in flat]
        steps = _dim(flat[0], 0)
        batch = _dim(flat[0], 1)
        if initial_state is not None:
            state = initial_state
        else:
            if dtype is None:
                raise ValueError("If there is no initial_state, you must give a dtype.")
            state = cell.zero_state(batch, dtype)
            for t, n in zip(nest.flatten(state), nest.flatten(cell.state_size)):
                if isinstance(n, int):  # a fed batch size leaves the zeros' shape open
                    t.set_shape([batch if isinstance(batch, int) else None, n])
        out_dtype = dtype or nest.flatten(state)[0].dtype
        seq = None
        if sequence_length is not None:
            seq = math_ops.cast(tensor(sequence_length), dtypes.int32)
            if seq.get_shape().ndims not in (None, 1):
                raise ValueError(
                    "sequence_length must be a vector of length batch_size, but saw shape: "
                    f"{seq.get_shape()}"
                )
            seq = array_ops.identity(seq, name="sequence_length")
        sizes = nest.flatten(cell.output_size)
        zero_out = nest.map_structure(lambda n: _zeros(batch, n, out_dtype), cell.output_size)
        batch_static = batch if isinstance(batch, int) else None
        in_tas = [
            TensorArray(
                x.dtype,
                size=steps,
                element_shape=x.get_shape()[1:].as_list()
                if x.get_shape().ndims is not None
                else None,
                tensor_array_name="input_ta",
            ).unstack(x)
            for x in flat
        ]
        accs = [
            TensorArray(
                out_dtype,
                size=steps,
                element_shape=[batch_static, n],
                tensor_array_name="output_ta",
            )
            for n in sizes
        ]
        state_shapes = [s.get_shape() for s in nest.flatten(state)]

        def body(time: Tensor, state: Any, outs: list[TensorArray]) -> Any:
            x_t = nest.pack_sequence_as(inputs, [ta.read(time) for ta in in_tas])
            out, new_state = cell(x_t, state)
            if seq is not None:
                done = math_ops.greater_equal(time, seq)
                out = _select(done, zero_out, out)
                new_state = _select(done, state, new_state)
            new_outs = [ta.write(time, o) for ta, o in zip(outs, nest.flatten(out))]
            return time + 1, new_state, new_outs

        invariants = [(), nest.pack_sequence_as(state, state_shapes), [() for _ in sizes]]
        _, final_state, outs = while_loop(
            lambda time, state, outs: time < steps,
            body,
            [tensor(0), state, accs],
            shape_invariants=invariants,
            parallel_iterations=parallel_iterations or 32,
            swap_memory=swap_memory,
        )
        outs = [ta.stack() for ta in outs]
        for o, n in zip(outs, sizes):
            o.set_shape([steps if isinstance(steps, int) else None, batch_static, n])
        if not time_major:
            outs = [_swap_time_batch(o) for o in outs]
        return nest.pack_sequence_as(cell.output_size, outs), final_state


def bidirectional_dynamic_rnn(
    cell_fw: Any,
    cell_bw: Any,
    inputs: Any,
    sequence_length: Any = None,
    initial_state_fw: Any = None,
    initial_state_bw: Any = None,
    dtype: Any = None,
    parallel_iterations: int | None = None,
    swap_memory: bool = False,
    time_major: bool = False,
    scope: Any = None,
) -> tuple[tuple[Any, Any], tuple[Any, Any]]:
    """``((output_fw, output_bw), (state_fw, state_bw))``: ``cell_bw`` runs over each row
    reversed within its length (``bidirectional_rnn/fw`` and ``/bw`` scopes, as TensorFlow).

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     fw, bw = tf.nn.rnn_cell.BasicRNNCell(2), tf.nn.rnn_cell.BasicRNNCell(3)
    ...     (o_fw, o_bw), _ = tf.nn.bidirectional_dynamic_rnn(fw, bw, tf.ones([1, 4, 5]),
    ...                                                       dtype=tf.float32)
    ...     o_fw.shape.as_list(), o_bw.shape.as_list()
    ([1, 4, 2], [1, 4, 3])
    """
    time_axis, batch_axis = (0, 1) if time_major else (1, 0)

    def reverse(x: Tensor) -> Tensor:
        if sequence_length is None:
            return array_ops.reverse(x, [time_axis])
        lengths = math_ops.cast(tensor(sequence_length), dtypes.int64)
        return reverse_sequence(x, lengths, time_axis, batch_axis)

    with variable_scope(scope or "bidirectional_rnn"):
        with variable_scope("fw") as fw_scope:
            out_fw, state_fw = dynamic_rnn(
                cell_fw,
                inputs,
                sequence_length,
                initial_state_fw,
                dtype,
                parallel_iterations,
                swap_memory,
                time_major,
                scope=fw_scope,
            )
        with variable_scope("bw") as bw_scope:
            rev_in = nest.map_structure(lambda x: reverse(tensor(x)), inputs)
            rev_out, state_bw = dynamic_rnn(
                cell_bw,
                rev_in,
                sequence_length,
                initial_state_bw,
                dtype,
                parallel_iterations,
                swap_memory,
                time_major,
                scope=bw_scope,
            )
        out_bw = nest.map_structure(reverse, rev_out)
    return (out_fw, out_bw), (state_fw, state_bw)
