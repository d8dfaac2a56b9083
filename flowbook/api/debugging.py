"""``flowbook.api.debugging``: TF1's ``tf.debugging`` namespace, the assertions and checks by name.

Nothing is declared here: every name is the function ``flowbook`` itself
exports (``fb.debugging.assert_equal is fb.assert_equal``).

>>> import flowbook as fb
>>> with fb.Graph().as_default():
...     fb.debugging.assert_rank(fb.zeros([2]), 1).type
'NoOp'
"""

from flowbook.ops.debugging.assert_ops import (
    Assert,
    assert_equal,
    assert_greater,
    assert_greater_equal,
    assert_integer,
    assert_less,
    assert_less_equal,
    assert_near,
    assert_negative,
    assert_non_negative,
    assert_non_positive,
    assert_none_equal,
    assert_positive,
    assert_proper_iterable,
    assert_rank,
    assert_rank_at_least,
    assert_rank_in,
    assert_same_float_dtype,
    assert_scalar,
    assert_type,
    is_non_decreasing,
    is_strictly_increasing,
)
from flowbook.ops.debugging.debug_ops import check_numerics
from flowbook.ops.math.elementwise_ops import is_finite, is_inf, is_nan

__all__ = [
    "Assert",
    "assert_equal",
    "assert_greater",
    "assert_greater_equal",
    "assert_integer",
    "assert_less",
    "assert_less_equal",
    "assert_near",
    "assert_negative",
    "assert_non_negative",
    "assert_non_positive",
    "assert_none_equal",
    "assert_positive",
    "assert_proper_iterable",
    "assert_rank",
    "assert_rank_at_least",
    "assert_rank_in",
    "assert_same_float_dtype",
    "assert_scalar",
    "assert_type",
    "check_numerics",
    "is_finite",
    "is_inf",
    "is_nan",
    "is_non_decreasing",
    "is_strictly_increasing",
]
