"""Static (unrolled) RNNs: ``tf.nn.static_rnn``, ``static_bidirectional_rnn``, ``static_state_saving_rnn``.

``static_rnn(cell, inputs)`` takes a Python list of ``T`` inputs, each
``[batch, depth]``, and builds ``T`` copies of the cell's step inside
``variable_scope(scope or "rnn")``, all sharing one set of variables (the
scope is set to reuse after the first step, and a cell re-enters its own
scope with ``reuse=True``).  No control flow is needed: the graph is as
long as the sequence.

With ``sequence_length`` (a ``[batch]`` vector), each row stops at its own
length: past it, the output is zero and the state stays what it was.  That
is an element-wise ``where(time >= sequence_length, old, new)`` per step, for
every leaf of the state and the output -- TF computes the same values (it
also skips whole steps with ``cond`` when every row is done, which changes
no number).

``static_bidirectional_rnn`` runs a forward cell over the inputs in scope
``bidirectional_rnn/fw`` and a backward cell over them reversed in
``bidirectional_rnn/bw`` (each row reversed within its own length, by
``reverse_sequence``), then concatenates the two outputs of each step along
the depth.  ``static_state_saving_rnn`` reads its initial state from a state
saver and saves the final state before the last output is produced.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     xs = [tf.ones([2, 3]) for _ in range(4)]
    ...     cell = tf.nn.rnn_cell.GRUCell(5)
    ...     outputs, state = tf.nn.static_rnn(cell, xs, dtype=tf.float32, sequence_length=[4, 2])
    ...     len(outputs), state.shape.as_list(), [v.op.name for v in tf.global_variables()][0]
    (4, [2, 5], 'rnn/gru_cell/gates/kernel')
"""

from __future__ import annotations

from typing import Any

from flowbook.framework import dtypes, nest
from flowbook.framework.graph import control_dependencies
from flowbook.framework.tensor import Tensor
from flowbook.nets.rnn.cells import RNNCell, _zeros
from flowbook.ops._builder import tensor
from flowbook.ops.array import array_ops
from flowbook.ops.array.sequence_ops import reverse_sequence
from flowbook.ops.math import math_ops
from flowbook.variables.variable_scope import variable_scope

__all__ = ["static_bidirectional_rnn", "static_rnn", "static_state_saving_rnn"]


def _check_inputs(inputs: Any) -> list[Any]:
    if not nest.is_sequence(inputs) or isinstance(inputs, dict):
        raise TypeError("inputs must be a sequence")
    if not inputs:
        raise ValueError("inputs must not be empty")
    return list(inputs)


def _batch_size(first: Any) -> Any:
    """The batch size of the first step's inputs: an int when known, else a tensor."""
    for x in nest.flatten(first):
        shape = x.get_shape()
        if shape.ndims is not None and shape.ndims < 2:
            raise ValueError(f"Expected inputs of rank >= 2, saw shape {shape}")
        if shape.ndims is not None and shape[-1].value is None:
            raise ValueError(
                "Input size (depth of inputs) must be accessible via shape inference, but saw "
                "value None."
            )
        if shape.ndims is not None and shape[0].value is not None:
            return shape[0].value
    return array_ops.shape(nest.flatten(first)[0])[0]


def _select(done: Tensor, old: Any, new: Any) -> Any:
    """Per row: ``old`` where ``done`` (a [batch] bool vector), else ``new``; leaf by leaf."""
    return nest.map_structure(lambda o, n: array_ops.where(done, tensor(o), n), old, new)


def static_rnn(
    cell: RNNCell,
    inputs: Any,
    initial_state: Any = None,
    dtype: Any = None,
    sequence_length: Any = None,
    scope: Any = None,
) -> tuple[list[Any], Any]:
    """``(outputs, final_state)``: ``cell`` applied along the list ``inputs`` (see the module doc).

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     cell = tf.nn.rnn_cell.BasicRNNCell(2)
    ...     outs, last = tf.nn.static_rnn(cell, [tf.zeros([1, 3])] * 2, dtype=tf.float32)
    ...     [o.name for o in outs]
    ['rnn/basic_rnn_cell/Tanh:0', 'rnn/basic_rnn_cell/Tanh_1:0']
    """
    inputs = _check_inputs(inputs)
    outputs: list[Any] = []
    with variable_scope(scope or "rnn") as varscope:
        inputs = [nest.map_structure(tensor, x) for x in inputs]
        batch_size = _batch_size(inputs[0])
        if initial_state is not None:
            state = initial_state
        else:
            if dtype is None:
                raise ValueError("If no initial_state is provided, dtype must be specified")
            state = cell.zero_state(batch_size, dtype)
        if sequence_length is not None:
            sequence_length = math_ops.cast(tensor(sequence_length), dtypes.int32)
            if sequence_length.get_shape().ndims not in (None, 1):
                raise ValueError(
                    f"sequence_length must be a vector of length batch_size, but saw shape: "
                    f"{sequence_length.get_shape()}"
                )
            sequence_length = array_ops.identity(sequence_length, name="sequence_length")
            out_dtype = dtype or nest.flatten(state)[0].dtype
            zero_output = nest.map_structure(
                lambda size: _zeros(batch_size, size, out_dtype), cell.output_size
            )
        for time, input_ in enumerate(inputs):
            if time > 0:
                varscope.reuse_variables()
            output, new_state = cell(input_, state)
            if sequence_length is not None:
                done = math_ops.greater_equal(time, sequence_length)
                output = _select(done, zero_output, output)
                new_state = _select(done, state, new_state)
            state = new_state
            outputs.append(output)
        return outputs, state


def _reverse_seq(sequence: list[Any], lengths: Any) -> list[Any]:
    """The list reversed; with ``lengths``, each row reversed within its own length."""
    if lengths is None:
        return list(reversed(sequence))
    flat_steps = [nest.flatten(step) for step in sequence]
    reversed_parts = []
    for part in zip(*flat_steps, strict=True):  # one leaf of the structure, over time
        stacked = array_ops.stack(list(part))  # [time, batch, ...]
        rev = reverse_sequence(stacked, math_ops.cast(lengths, dtypes.int64), 0, 1)
        reversed_parts.append(array_ops.unstack(rev, num=len(part)))
    return [
        nest.pack_sequence_as(sequence[t], [steps[t] for steps in reversed_parts])
        for t in range(len(sequence))
    ]


def static_bidirectional_rnn(
    cell_fw: RNNCell,
    cell_bw: RNNCell,
    inputs: Any,
    initial_state_fw: Any = None,
    initial_state_bw: Any = None,
    dtype: Any = None,
    sequence_length: Any = None,
    scope: Any = None,
) -> tuple[list[Any], Any, Any]:
    """``(outputs, final_state_fw, final_state_bw)``, outputs the depth-wise concat of both ways.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     fw, bw = tf.nn.rnn_cell.BasicRNNCell(2), tf.nn.rnn_cell.BasicRNNCell(3)
    ...     outs, _, _ = tf.nn.static_bidirectional_rnn(fw, bw, [tf.ones([1, 4])] * 2,
    ...                                                  dtype=tf.float32)
    ...     outs[0].shape.as_list(), tf.global_variables()[2].op.name
    ([1, 5], 'bidirectional_rnn/bw/basic_rnn_cell/kernel')
    """
    for cell, which in ((cell_fw, "cell_fw"), (cell_bw, "cell_bw")):
        if not (hasattr(cell, "state_size") and callable(cell)):
            raise TypeError(f"{which} must be an instance of RNNCell")
    inputs = _check_inputs(inputs)
    with variable_scope(scope or "bidirectional_rnn"):
        with variable_scope("fw") as fw_scope:
            output_fw, state_fw = static_rnn(
                cell_fw, inputs, initial_state_fw, dtype, sequence_length, scope=fw_scope
            )
        with variable_scope("bw") as bw_scope:
            reversed_inputs = _reverse_seq(inputs, sequence_length)
            tmp, state_bw = static_rnn(
                cell_bw, reversed_inputs, initial_state_bw, dtype, sequence_length, scope=bw_scope
            )
    output_bw = _reverse_seq(tmp, sequence_length)
    flat = [
        array_ops.concat([fw, bw], 1)
        for fw, bw in zip(nest.flatten(output_fw), nest.flatten(output_bw), strict=True)
    ]
    return nest.pack_sequence_as(output_fw, flat), state_fw, state_bw


def static_state_saving_rnn(
    cell: RNNCell,
    inputs: Any,
    state_saver: Any,
    state_name: Any,
    sequence_length: Any = None,
    scope: Any = None,
) -> tuple[list[Any], Any]:
    """``static_rnn`` starting from ``state_saver.state(name)`` and saving its final state.

    ``state_name`` has the structure of ``cell.state_size`` (one name per state
    tensor); the last output depends on the ``save_state`` ops, so fetching it saves.

    >>> import flowbook as tf
    >>> class Saver:
    ...     def __init__(self): self.v = tf.Variable(tf.zeros([1, 2]))
    ...     def state(self, name): return self.v.value()
    ...     def save_state(self, name, value): return tf.assign(self.v, value)
    >>> with tf.Graph().as_default():
    ...     saver = Saver()
    ...     outs, _ = tf.nn.static_state_saving_rnn(tf.nn.rnn_cell.BasicRNNCell(2),
    ...                                            [tf.ones([1, 2])], saver, "h")
    ...     outs[-1].op.control_inputs[0].type
    'Assign'
    """
    state_size = cell.state_size
    if nest.is_sequence(state_size) != nest.is_sequence(state_name):
        raise ValueError(
            f"state_name should be the same type as cell.state_size.  state_name: {state_name!s}, "
            f"cell.state_size: {state_size!s}"
        )
    names, sizes = nest.flatten(state_name), nest.flatten(state_size)
    if len(names) != len(sizes):
        raise ValueError(
            f"Number of elements in argument `state_name` must equal the number of elements in "
            f"`cell.state_size` ({len(names)} vs {len(sizes)})"
        )
    initial = nest.pack_sequence_as(state_size, [state_saver.state(n) for n in names])
    outputs, state = static_rnn(cell, inputs, initial, sequence_length=sequence_length, scope=scope)
    saves = [state_saver.save_state(n, s) for n, s in zip(names, nest.flatten(state), strict=True)]
    with control_dependencies(saves):
        last = outputs[-1]
        outputs[-1] = nest.pack_sequence_as(
            last, [array_ops.identity(o) for o in nest.flatten(last)]
        )
    return outputs, state
