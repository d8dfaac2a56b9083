"""``flowbook.api.nn``: TF1's ``tf.nn`` namespace: activations, conv and pool layers, losses.

>>> import flowbook as fb
>>> with fb.Graph().as_default(), fb.Session() as s:
...     s.run(fb.nn.sigmoid(0.0)).item()
0.5
"""

from flowbook.api import rnn_cell
from flowbook.nets.rnn.dynamic import bidirectional_dynamic_rnn, dynamic_rnn
from flowbook.nets.rnn.static import static_bidirectional_rnn, static_rnn, static_state_saving_rnn
from flowbook.ops.array.space_ops import depth_to_space, space_to_batch, space_to_depth
from flowbook.ops.math.math_ops import sigmoid, tanh  # type: ignore[attr-defined]
from flowbook.ops.math.sort_ops import in_top_k, top_k
from flowbook.ops.nn.conv_ops import (
    bias_add,
    conv2d,
    conv2d_backprop_filter,
    conv2d_backprop_input,
    conv2d_transpose,
)
from flowbook.ops.nn.depthwise_ops import *
from flowbook.ops.nn.depthwise_ops import __all__ as _depthwise
from flowbook.ops.nn.depthwise_ops import (
    depthwise_conv2d_native_backprop_filter as depthwise_conv2d_backprop_filter,
)
from flowbook.ops.nn.depthwise_ops import (
    depthwise_conv2d_native_backprop_input as depthwise_conv2d_backprop_input,
)
from flowbook.ops.nn.embedding_ops import embedding_lookup
from flowbook.ops.nn.logit_losses import log_poisson_loss, weighted_cross_entropy_with_logits
from flowbook.ops.nn.loss_ops import (
    dropout,
    l2_loss,
    sigmoid_cross_entropy_with_logits,
    softmax_cross_entropy_with_logits,
    softmax_cross_entropy_with_logits_v2,
    sparse_softmax_cross_entropy_with_logits,
)
from flowbook.ops.nn.nn_3d import *
from flowbook.ops.nn.nn_3d import __all__ as _3d
from flowbook.ops.nn.nn_conv import *
from flowbook.ops.nn.nn_conv import __all__ as _conv
from flowbook.ops.nn.nn_ops import (
    crelu,
    elu,
    leaky_relu,
    log_softmax,
    relu,
    relu6,
    relu_layer,
    selu,
    softmax,
    softplus,
    softsign,
    xw_plus_b,
)
from flowbook.ops.nn.nn_pool import *
from flowbook.ops.nn.nn_pool import __all__ as _pool
from flowbook.ops.nn.nn_sparse import *
from flowbook.ops.nn.nn_sparse import __all__ as _sparse
from flowbook.ops.nn.nn_stats import *
from flowbook.ops.nn.nn_stats import __all__ as _stats
from flowbook.ops.nn.norm_ops import (
    batch_normalization,
    fused_batch_norm,
    l2_normalize,
    local_response_normalization,
    lrn,
    moments,
)
from flowbook.ops.nn.pool_ops import avg_pool, max_pool, max_pool_with_argmax
from flowbook.ops.nn.sampled_losses import nce_loss, sampled_softmax_loss
from flowbook.ops.random.candidate_sampling_ops import (
    log_uniform_candidate_sampler,
    uniform_candidate_sampler,
)

__all__ = [
    "avg_pool",
    "batch_normalization",
    "bias_add",
    "conv2d",
    "conv2d_backprop_filter",
    "conv2d_backprop_input",
    "conv2d_transpose",
    "crelu",
    "dropout",
    "elu",
    "embedding_lookup",
    "fused_batch_norm",
    "in_top_k",
    "l2_loss",
    "l2_normalize",
    "leaky_relu",
    "local_response_normalization",
    "log_poisson_loss",
    "log_softmax",
    "log_uniform_candidate_sampler",
    "lrn",
    "max_pool",
    "moments",
    "nce_loss",
    "relu",
    "relu6",
    "relu_layer",
    "sampled_softmax_loss",
    "selu",
    "sigmoid",
    "sigmoid_cross_entropy_with_logits",
    "softmax",
    "softmax_cross_entropy_with_logits",
    "softmax_cross_entropy_with_logits_v2",
    "softplus",
    "softsign",
    "sparse_softmax_cross_entropy_with_logits",
    "tanh",
    "top_k",
    "uniform_candidate_sampler",
    "weighted_cross_entropy_with_logits",
    "xw_plus_b",
    # the conv/pool/spatial tail
    *_depthwise, *_conv, *_pool, *_stats, *_sparse, *_3d,
    "depthwise_conv2d_backprop_filter", "depthwise_conv2d_backprop_input",
    "depth_to_space", "max_pool_with_argmax", "space_to_batch", "space_to_depth",
    # recurrent cells and static RNNs
    "rnn_cell", "dynamic_rnn", "bidirectional_dynamic_rnn", "static_bidirectional_rnn", "static_rnn", "static_state_saving_rnn",
]  # fmt: skip
