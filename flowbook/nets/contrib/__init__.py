"""``tf.contrib``: the common corners of TF1's contrib that classic code uses (``layers``, ``rnn``).

>>> import flowbook as tf
>>> tf.contrib.layers.xavier_initializer.__name__
'xavier_initializer'
"""

from flowbook.nets.contrib import layers, rnn

__all__ = ["layers", "rnn"]
