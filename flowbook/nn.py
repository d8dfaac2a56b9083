"""``flowbook.nn``: TF1's ``tf.nn`` namespace: activations, conv and pool layers, losses.

>>> import flowbook as fb
>>> with fb.Graph().as_default(), fb.Session() as s:
...     s.run(fb.nn.sigmoid(0.0)).item()
0.5
"""

from flowbook.ops.conv_ops import (
    bias_add,
    conv2d,
    conv2d_backprop_filter,
    conv2d_backprop_input,
    conv2d_transpose,
)
from flowbook.ops.loss_ops import (
    dropout,
    l2_loss,
    sigmoid_cross_entropy_with_logits,
    softmax_cross_entropy_with_logits,
    softmax_cross_entropy_with_logits_v2,
    sparse_softmax_cross_entropy_with_logits,
)
from flowbook.ops.math_ops import sigmoid, tanh  # type: ignore[attr-defined]
from flowbook.ops.nn_impl import batch_normalization, moments
from flowbook.ops.nn_ops import elu, log_softmax, relu, relu6, softmax, softplus
from flowbook.ops.pool_ops import avg_pool, max_pool

__all__ = [
    "avg_pool",
    "batch_normalization",
    "bias_add",
    "conv2d",
    "conv2d_backprop_filter",
    "conv2d_backprop_input",
    "conv2d_transpose",
    "dropout",
    "elu",
    "l2_loss",
    "log_softmax",
    "max_pool",
    "moments",
    "relu",
    "relu6",
    "sigmoid",
    "sigmoid_cross_entropy_with_logits",
    "softmax",
    "softmax_cross_entropy_with_logits",
    "softmax_cross_entropy_with_logits_v2",
    "softplus",
    "sparse_softmax_cross_entropy_with_logits",
    "tanh",
]
