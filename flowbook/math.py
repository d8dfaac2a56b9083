"""``flowbook.math``: TF1's ``tf.math`` namespace, the math wrappers under their TF names.

Nothing is declared here: every name is the wrapper ``flowbook`` itself
exports (``fb.math.cumsum is fb.cumsum``), gathered so that code written
against ``tf.math`` runs.  Only names TF1's ``tf.math`` has are listed.

>>> import flowbook as fb
>>> with fb.Graph().as_default(), fb.Session() as s:
...     s.run(fb.math.top_k([1, 3, 2], 2).values).tolist()
[3, 2]
"""

from flowbook.ops.array_more import count_nonzero, log_sigmoid, reduce_logsumexp
from flowbook.ops.assert_ops import is_non_decreasing, is_strictly_increasing
from flowbook.ops.complex_ops import *
from flowbook.ops.counting_ops import bincount
from flowbook.ops.elementwise_more import (
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
from flowbook.ops.elementwise_more import (
    div_no_nan as divide_no_nan,
)
from flowbook.ops.math_more import *
from flowbook.ops.math_ops import (  # type: ignore[attr-defined]
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
from flowbook.ops.nn_ops import log_softmax, softmax, softplus, softsign
from flowbook.ops.nn_stats import zero_fraction
from flowbook.ops.norm_ops import l2_normalize
from flowbook.ops.scan_ops import cumprod, cumsum
from flowbook.ops.segment_ops import *
from flowbook.ops.selection_ops import unsorted_segment_sum
from flowbook.ops.sort_ops import in_top_k, top_k
from flowbook.ops.special_ops import *
from flowbook.ops.transpose_ops import invert_permutation
