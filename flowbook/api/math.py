"""``flowbook.api.math``: TF1's ``tf.math`` namespace, the math wrappers under their TF names.

Nothing is declared here: every name is the wrapper ``flowbook`` itself
exports (``fb.math.cumsum is fb.cumsum``), gathered so that code written
against ``tf.math`` runs.  Only names TF1's ``tf.math`` has are listed.

>>> import flowbook as fb
>>> with fb.Graph().as_default(), fb.Session() as s:
...     s.run(fb.math.top_k([1, 3, 2], 2).values).tolist()
[3, 2]
"""

from flowbook.ops.array.broadcast_ops import count_nonzero, log_sigmoid, reduce_logsumexp
from flowbook.ops.array.selection_ops import unsorted_segment_sum
from flowbook.ops.array.transpose_ops import invert_permutation
from flowbook.ops.debugging.assert_ops import is_non_decreasing, is_strictly_increasing
from flowbook.ops.math.complex_ops import *
from flowbook.ops.math.composite_ops import *
from flowbook.ops.math.counting_ops import bincount
from flowbook.ops.math.elementwise_ops import (
    acos,
    acosh,
    asin,
    asinh,
    atan,
    atan2,
    atanh,
    cosh,
    expm1,
    rint,
    sinh,
    tan,
    truncatediv,
    truncatemod,
)
from flowbook.ops.math.elementwise_ops import (
    div_no_nan as divide_no_nan,
)
from flowbook.ops.math.math_ops import (  # type: ignore[attr-defined]
    abs,
    add,
    add_n,
    argmax,
    argmin,
    ceil,
    conj,
    cos,
    divide,
    equal,
    exp,
    floor,
    floordiv,
    floormod,
    greater,
    greater_equal,
    is_finite,
    is_inf,
    is_nan,
    less,
    less_equal,
    log,
    log1p,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    maximum,
    minimum,
    mod,
    multiply,
    negative,
    not_equal,
    pow,
    reciprocal,
    reduce_all,
    reduce_any,
    reduce_max,
    reduce_mean,
    reduce_min,
    reduce_prod,
    reduce_sum,
    round,
    rsqrt,
    scalar_mul,
    sigmoid,
    sign,
    sin,
    sqrt,
    square,
    squared_difference,
    subtract,
    tanh,
    truediv,
)
from flowbook.ops.math.scan_ops import cumprod, cumsum
from flowbook.ops.math.segment_ops import *
from flowbook.ops.math.sort_ops import in_top_k, top_k
from flowbook.ops.math.special_ops import *
from flowbook.ops.nn.nn_ops import log_softmax, softmax, softplus, softsign
from flowbook.ops.nn.nn_stats import zero_fraction
from flowbook.ops.nn.norm_ops import l2_normalize
