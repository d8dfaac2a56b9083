"""``tf.nn.rnn_cell`` (also ``tf.contrib.rnn``'s cells): TF1's recurrent cells.

The cells are in :mod:`flowbook.nets.rnn.cells`, the cells made of cells in
:mod:`flowbook.nets.rnn.wrappers`; this module is the namespace.

    >>> import flowbook as tf
    >>> tf.nn.rnn_cell.LSTMStateTuple is tf.contrib.rnn.LSTMStateTuple
    True
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
]
