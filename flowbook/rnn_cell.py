"""``tf.nn.rnn_cell`` (also ``tf.contrib.rnn``'s cells): TF1's recurrent cells.

The cells are in :mod:`flowbook.rnn_cell_impl`, the cells made of cells in
:mod:`flowbook.rnn_cell_wrappers`; this module is the namespace.

    >>> import flowbook as tf
    >>> tf.nn.rnn_cell.LSTMStateTuple is tf.contrib.rnn.LSTMStateTuple
    True
"""

from flowbook.rnn_cell_impl import (
    BasicLSTMCell,
    BasicRNNCell,
    GRUCell,
    LayerRNNCell,
    LSTMCell,
    LSTMStateTuple,
    RNNCell,
)
from flowbook.rnn_cell_wrappers import DeviceWrapper, DropoutWrapper, MultiRNNCell, ResidualWrapper

__all__ = [
    "BasicLSTMCell", "BasicRNNCell", "DeviceWrapper", "DropoutWrapper", "GRUCell", "LSTMCell",
    "LSTMStateTuple", "LayerRNNCell", "MultiRNNCell", "RNNCell", "ResidualWrapper",
]  # fmt: skip
