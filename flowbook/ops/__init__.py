"""The op library: each module declares its ops in the registry and the TF1 wrappers.

Importing this package registers every op.  ``constant_op`` comes first:
every other module converts Python values with it.
"""

from flowbook.ops import (  # noqa: F401  (importing registers the ops)
    activation_grads,
    array_more,
    array_ops,
    assert_ops,
    candidate_sampling_ops,
    compat_ops,
    constant_op,
    control_flow_ops,
    conv_ops,
    counting_ops,
    debug_ops,
    depthwise_ops,
    einsum_ops,
    linalg_more,
    logit_losses,
    math_ops,
    matrix_diag_ops,
    multinomial_ops,
    nn_ops,
    norm_ops,
    partition_ops,
    placeholder_ops,
    pool_ops,
    random_ops,
    scan_ops,
    scatter_ops,
    script_ops,
    segment_ops,
    select_v2_ops,
    selection_ops,
    sequence_ops,
    set_ops,
    sort_ops,
    space_ops,
    state_ops,
    summary_ops,
)
