"""The op library: each module declares its ops in the registry and the TF1 wrappers.

Importing this package registers every op.  ``constant_op`` comes first:
every other module converts Python values with it.
"""

from flowbook.ops.array import (
    array_ops,  # noqa: F401  (importing registers the ops)
    broadcast_ops,  # noqa: F401  (importing registers the ops)
    compat_ops,  # noqa: F401  (importing registers the ops)
    constant_op,  # noqa: F401  (importing registers the ops)
    partition_ops,  # noqa: F401  (importing registers the ops)
    placeholder_ops,  # noqa: F401  (importing registers the ops)
    select_v2_ops,  # noqa: F401  (importing registers the ops)
    selection_ops,  # noqa: F401  (importing registers the ops)
    sequence_ops,  # noqa: F401  (importing registers the ops)
    set_ops,  # noqa: F401  (importing registers the ops)
    space_ops,  # noqa: F401  (importing registers the ops)
)
from flowbook.ops.control_flow import (
    control_flow,  # noqa: F401  (importing registers the ops)
    control_flow_ops,  # noqa: F401  (importing registers the ops)
    control_flow_prims,  # noqa: F401  (importing registers the ops)
    stack_ops,  # noqa: F401  (importing registers the ops)
    tensor_array,  # noqa: F401  (importing registers the ops)
)
from flowbook.ops.debugging import (
    assert_ops,  # noqa: F401  (importing registers the ops)
    debug_ops,  # noqa: F401  (importing registers the ops)
    script_ops,  # noqa: F401  (importing registers the ops)
)
from flowbook.ops.io import (
    example_ops,  # noqa: F401  (importing registers the ops)
    iterator_ops,  # noqa: F401  (importing registers the ops)
    parsing_ops,  # noqa: F401  (importing registers the ops)
    queue_ops,  # noqa: F401  (importing registers the ops)
    reader_ops,  # noqa: F401  (importing registers the ops)
    summary_ops,  # noqa: F401  (importing registers the ops)
)
from flowbook.ops.linalg import (
    einsum_ops,  # noqa: F401  (importing registers the ops)
    linalg_ops,  # noqa: F401  (importing registers the ops)
    matrix_diag_ops,  # noqa: F401  (importing registers the ops)
)
from flowbook.ops.math import (
    counting_ops,  # noqa: F401  (importing registers the ops)
    fft_ops,  # noqa: F401  (importing registers the ops)
    math_ops,  # noqa: F401  (importing registers the ops)
    scan_ops,  # noqa: F401  (importing registers the ops)
    segment_ops,  # noqa: F401  (importing registers the ops)
    sort_ops,  # noqa: F401  (importing registers the ops)
)
from flowbook.ops.nn import (
    activation_grads,  # noqa: F401  (importing registers the ops)
    conv_ops,  # noqa: F401  (importing registers the ops)
    depthwise_ops,  # noqa: F401  (importing registers the ops)
    fake_quant_ops,  # noqa: F401  (importing registers the ops)
    fused_ops,  # noqa: F401  (importing registers the ops)
    logit_losses,  # noqa: F401  (importing registers the ops)
    nn_3d,  # noqa: F401  (importing registers the ops)
    nn_ops,  # noqa: F401  (importing registers the ops)
    nn_sparse,  # noqa: F401  (importing registers the ops)
    norm_ops,  # noqa: F401  (importing registers the ops)
    pool_ops,  # noqa: F401  (importing registers the ops)
)
from flowbook.ops.random import (
    candidate_sampling_ops,  # noqa: F401  (importing registers the ops)
    multinomial_ops,  # noqa: F401  (importing registers the ops)
    random_ops,  # noqa: F401  (importing registers the ops)
)
from flowbook.ops.sparse import (
    sparse_ops,  # noqa: F401  (importing registers the ops)
)
from flowbook.ops.state import (
    accumulator_ops,  # noqa: F401  (importing registers the ops)
    scatter_ops,  # noqa: F401  (importing registers the ops)
    state_ops,  # noqa: F401  (importing registers the ops)
    training_ops,  # noqa: F401  (importing registers the ops)
)
from flowbook.ops.strings import string_ops  # noqa: F401  (importing registers the ops)
