"""Standard collection names, TF1's ``tf.GraphKeys``.

Graphs keep named collections (``Graph.add_to_collection``); these are the
names flowbook itself fills: variables, trainable variables, the global step,
losses, train ops.

    >>> GraphKeys.TRAINABLE_VARIABLES
    'trainable_variables'
"""


class GraphKeys:
    """Standard collection names (TF1's ``tf.GraphKeys``)."""

    GLOBAL_VARIABLES = "variables"
    VARIABLES = GLOBAL_VARIABLES
    LOCAL_VARIABLES = "local_variables"
    TRAINABLE_VARIABLES = "trainable_variables"
    MODEL_VARIABLES = "model_variables"
    UPDATE_OPS = "update_ops"
    SUMMARIES = "summaries"
    LOSSES = "losses"
    REGULARIZATION_LOSSES = "regularization_losses"
    GLOBAL_STEP = "global_step"
    QUEUE_RUNNERS = "queue_runners"
    INIT_OP = "init_op"
    TRAIN_OP = "train_op"
    MOVING_AVERAGE_VARIABLES = "moving_average_variables"
    SAVERS = "savers"
    SUMMARY_OP = "summary_op"
    READY_OP = "ready_op"
    LOCAL_INIT_OP = "local_init_op"
    TABLE_INITIALIZERS = "table_initializer"
