"""Networks built of ops: ``tf.layers``, recurrent nets, ``tf.losses``, ``tf.contrib``.

``layers`` (TF1's layer classes and functions), ``rnn`` (cells, wrappers,
static and dynamic RNNs), ``losses`` (weighted, reduced losses) and
``contrib`` (the ``tf.contrib`` names TF1 code still uses).  Everything here
builds graphs from the op library and variables; nothing runs kernels."""
