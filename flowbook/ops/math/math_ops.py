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

Each of those modules lists its wrappers in ``__all__``; this one is their
sum.  ``BINARY`` and ``UNARY`` (the element-wise rows) are re-exported for
the tests that walk them.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.add(fb.constant([[1.0, 2.0]]), [[1.0], [2.0]]).shape.as_list()
    [2, 2]
"""

from __future__ import annotations

from flowbook.ops.array import cast_ops
from flowbook.ops.array.cast_ops import *  # noqa: F403
from flowbook.ops.linalg import linalg_ops
from flowbook.ops.linalg.linalg_ops import *  # noqa: F403
from flowbook.ops.math import elementwise_ops, reduction_ops
from flowbook.ops.math.elementwise import BINARY, UNARY  # noqa: F401  (the rows, for tests)
from flowbook.ops.math.elementwise_ops import *  # noqa: F403
from flowbook.ops.math.reduction_ops import *  # noqa: F403

__all__ = elementwise_ops.__all__ + cast_ops.__all__ + reduction_ops.__all__ + linalg_ops.__all__
