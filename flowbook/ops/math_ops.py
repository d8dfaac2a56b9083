"""TF1's math namespace: every math wrapper, gathered from the modules that declare them.

Nothing is declared here; it is the one import for the math wrappers
(``flowbook/__init__`` re-exports ``__all__``, the Python operators call
through it).  The ops themselves live by concept:

* ``elementwise``: how an element-wise op is declared (the row factories
  ``binary`` and ``unary``), the dtype sets and ``check_dtype``;
* ``elementwise_ops``: the element-wise rows, each with its gradient and
  docstring, and the TF1 functions built of them (``truediv``, ``round``...);
* ``cast_ops``: Cast and its wrappers;
* ``reduction_ops``: Sum, Mean... ArgMax/ArgMin and AddN;
* ``linalg_ops``: MatMul and the matrix ops.

``BINARY`` and ``UNARY`` (the element-wise rows) and the dtype sets are
re-exported for the modules and tests that walk them.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.add(fb.constant([[1.0, 2.0]]), [[1.0], [2.0]]).shape.as_list()
    [2, 2]
"""

from __future__ import annotations

from flowbook.ops.cast_ops import cast, saturate_cast, to_double, to_float, to_int32, to_int64
from flowbook.ops.elementwise import (  # noqa: F401  (re-exported)
    ANY,
    BINARY,
    BOOL,
    COMPLEX,
    FLOAT,
    INEXACT,
    INT,
    NUMBER,
    REAL,
    UNARY,
    Elementwise,
    check_dtype,
)
from flowbook.ops.elementwise_ops import (
    abs,
    add,
    ceil,
    conj,
    cos,
    div,
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
    mul,
    multiply,
    neg,
    negative,
    not_equal,
    pow,
    realdiv,
    reciprocal,
    round,
    rsqrt,
    scalar_mul,
    sigmoid,
    sign,
    sin,
    sqrt,
    square,
    squared_difference,
    sub,
    subtract,
    tanh,
    truediv,
)
from flowbook.ops.linalg_ops import matmul, matrix_determinant, matrix_inverse
from flowbook.ops.reduction_ops import (
    add_n,
    argmax,
    argmin,
    reduce_all,
    reduce_any,
    reduce_max,
    reduce_mean,
    reduce_min,
    reduce_prod,
    reduce_sum,
)

__all__ = [
    "abs",
    "add",
    "add_n",
    "argmax",
    "argmin",
    "cast",
    "ceil",
    "conj",
    "cos",
    "div",
    "divide",
    "equal",
    "exp",
    "floor",
    "floordiv",
    "floormod",
    "greater",
    "greater_equal",
    "is_finite",
    "is_inf",
    "is_nan",
    "less",
    "less_equal",
    "log",
    "log1p",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "matmul",
    "matrix_determinant",
    "matrix_inverse",
    "maximum",
    "minimum",
    "mod",
    "mul",
    "multiply",
    "neg",
    "negative",
    "not_equal",
    "pow",
    "realdiv",
    "reciprocal",
    "reduce_all",
    "reduce_any",
    "reduce_max",
    "reduce_mean",
    "reduce_min",
    "reduce_prod",
    "reduce_sum",
    "round",
    "rsqrt",
    "saturate_cast",
    "scalar_mul",
    "sigmoid",
    "sign",
    "sin",
    "sqrt",
    "square",
    "squared_difference",
    "sub",
    "subtract",
    "tanh",
    "to_double",
    "to_float",
    "to_int32",
    "to_int64",
    "truediv",
]
