"""``tf.contrib.rnn``: TF1's recurrent cells and static RNNs under their contrib names.

The same objects as ``tf.nn.rnn_cell.*`` and ``tf.nn.static_rnn``...

    >>> import flowbook as tf
    >>> tf.contrib.rnn.static_rnn is tf.nn.static_rnn, tf.contrib.rnn.GRUCell is tf.nn.rnn_cell.GRUCell
    (True, True)
"""

from flowbook.rnn import static_bidirectional_rnn, static_rnn, static_state_saving_rnn
from flowbook.rnn_cell import (
    BasicLSTMCell,
    BasicRNNCell,
    DeviceWrapper,
    DropoutWrapper,
    GRUCell,
    LayerRNNCell,
    LSTMCell,
    LSTMStateTuple,
    MultiRNNCell,
    ResidualWrapper,
    RNNCell,
)

__all__ = [
    "BasicLSTMCell", "BasicRNNCell", "DeviceWrapper", "DropoutWrapper", "GRUCell", "LSTMCell",
    "LSTMStateTuple", "LayerRNNCell", "MultiRNNCell", "RNNCell", "ResidualWrapper",
    "static_bidirectional_rnn", "static_rnn", "static_state_saving_rnn",
]  # fmt: skip
