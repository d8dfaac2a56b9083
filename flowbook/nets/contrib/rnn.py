"""``tf.contrib.rnn``: TF1's recurrent cells and static RNNs under their contrib names.

The same objects as ``tf.nn.rnn_cell.*`` and ``tf.nn.static_rnn``...

    >>> import flowbook as tf
    >>> tf.contrib.rnn.static_rnn is tf.nn.static_rnn, tf.contrib.rnn.GRUCell is tf.nn.rnn_cell.GRUCell
    (True, True)
"""

from flowbook.nets.rnn.cells import (
    BasicLSTMCell,
    BasicRNNCell,
    GRUCell,
    LayerRNNCell,
    LSTMCell,
    LSTMStateTuple,
    RNNCell,
)
from flowbook.nets.rnn.static import static_bidirectional_rnn, static_rnn, static_state_saving_rnn
from flowbook.nets.rnn.wrappers import DeviceWrapper, DropoutWrapper, MultiRNNCell, ResidualWrapper

__all__ = [
    "BasicLSTMCell",
    "BasicRNNCell",
    "DeviceWrapper",
    "DropoutWrapper",
    "GRUCell",
    "LSTMCell",
    "LSTMStateTuple",
    "LayerRNNCell",
    "MultiRNNCell",
    "RNNCell",
    "ResidualWrapper",
    "static_bidirectional_rnn",
    "static_rnn",
    "static_state_saving_rnn",
]
