"""Old names that TF1 code still calls: ``arg_max``/``arg_min`` and ``select``.

Nothing is declared here: each name builds the op its modern form builds
(ArgMax/ArgMin from ``reduction_ops``, Select from ``selection_ops``) with
the old signature, so old notebooks run unchanged and their graphs look like
the new ones.  (``mul``/``sub``/``neg``, ``pack``/``unpack`` and
``initialize_all_variables`` live beside their modern forms; ``concat``
accepts the old ``concat(axis, values)`` order itself.)

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.arg_max([[1, 9], [8, 2]], 1)).tolist()
    [1, 0]
"""

from __future__ import annotations

from typing import Any

from flowbook.framework import dtypes
from flowbook.framework.graph import name_scope
from flowbook.framework.tensor import Tensor
from flowbook.ops._builder import make1, operands
from flowbook.ops.array.constant_op import convert_to_tensor
from flowbook.ops.math.reduction_ops import argmax, argmin

__all__ = ["arg_max", "arg_min", "select"]


def arg_max(
    input: Any, dimension: Any, output_type: Any = dtypes.int64, name: str | None = None
) -> Tensor:
    """TF1's ``arg_max``: the index of the largest value along ``dimension`` (an ArgMax op).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.arg_max(fb.zeros([3, 4]), 0).op.type
    'ArgMax'
    """
    return argmax(input, axis=dimension, name=name, output_type=output_type)


def arg_min(
    input: Any, dimension: Any, output_type: Any = dtypes.int64, name: str | None = None
) -> Tensor:
    """TF1's ``arg_min``: the index of the smallest value along ``dimension`` (an ArgMin op).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.arg_min([[1, 9], [8, 2]], 1)).tolist()
    [0, 1]
    """
    return argmin(input, axis=dimension, name=name, output_type=output_type)


def select(condition: Any, t: Any, e: Any, name: str | None = None) -> Tensor:
    """TF 0.x's ``select``: ``t`` where ``condition``, else ``e`` (a Select op, as ``where``).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.select([True, False], [1, 2], [10, 20])).tolist()
    [1, 20]
    """
    with name_scope(name, "Select") as scope:
        c = convert_to_tensor(condition, name="condition")
        x, y = operands(t, e)
        return make1("Select", [c, x, y], name=scope)
