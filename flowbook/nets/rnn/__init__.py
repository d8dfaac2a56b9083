"""Recurrent nets: TF1's cells and the loops that run them.

``cells`` (RNNCell and its four cells), ``wrappers`` (cells made of cells),
``static`` (unrolled RNNs) and ``dynamic`` (``dynamic_rnn``, one ``while_loop``)."""
