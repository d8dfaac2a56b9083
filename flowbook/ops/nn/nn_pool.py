"""``tf.nn``'s pooling front ends: 1-D, the ``*_pool2d``/``*_pool_v2`` names and N-D ``pool``.

All are MaxPool or AvgPool (``pool_ops``): a 1-D pool is a 2-D one over a
height of 1, and ``pool`` with a ``dilation_rate`` runs the plain pool on
space-to-batch tiles (:func:`flowbook.ops.nn.nn_conv.with_space_to_batch`, as
TensorFlow does).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.nn.max_pool1d(fb.zeros([2, 10, 3]), 2, 2, "VALID").shape.as_list()
    [2, 5, 3]
"""

from __future__ import annotations

from typing import Any

from flowbook.framework.graph import name_scope
from flowbook.framework.tensor import Tensor
from flowbook.ops._builder import tensor
from flowbook.ops.array import array_ops
from flowbook.ops.nn.nn_conv import with_space_to_batch
from flowbook.ops.nn.pool_ops import avg_pool, max_pool

__all__ = [
    "avg_pool1d",
    "avg_pool2d",
    "avg_pool_v2",
    "max_pool1d",
    "max_pool2d",
    "max_pool_v2",
    "pool",
]

_POOLS = {"MAX": max_pool, "AVG": avg_pool}


def _one(values: Any, what: str) -> int:
    """A 1-D window or stride: an int, ``[k]`` or ``[1, k, 1]``."""
    v = [int(values)] if isinstance(values, int) else [int(d) for d in values]
    if len(v) == 3 and v[0] == v[2] == 1:
        v = v[1:2]
    if len(v) != 1:
        raise ValueError(f"{what} must be an int, [k] or [1, k, 1], got {values}")
    return v[0]


def _pool1d(
    kind: str, x: Any, ksize: Any, strides: Any, padding: Any, fmt: str, name: Any
) -> Tensor:
    if fmt not in ("NWC", "NHWC"):
        raise ValueError(f"{kind.lower()}_pool1d: data_format must be 'NWC', got {fmt!r}")
    k, s = _one(ksize, "ksize"), _one(strides, "strides")
    with name_scope(name, f"{kind}Pool1D"):
        y = _POOLS[kind](array_ops.expand_dims(tensor(x), 1), [1, 1, k, 1], [1, 1, s, 1], padding)
        return array_ops.squeeze(y, [1])


def max_pool1d(
    input: Any, ksize: Any, strides: Any, padding: Any, data_format: str = "NWC", name: Any = None
) -> Tensor:
    """The maximum of each ``ksize`` window of ``[N, W, C]``.

    >>> import flowbook as fb
    >>> with fb.Session() as s:
    ...     s.run(fb.nn.max_pool1d(fb.reshape([1.0, 3.0, 2.0, 0.0], [1, 4, 1]), 2, 2, "VALID")).ravel().tolist()
    [3.0, 2.0]
    """
    return _pool1d("MAX", input, ksize, strides, padding, data_format, name)


def avg_pool1d(
    input: Any, ksize: Any, strides: Any, padding: Any, data_format: str = "NWC", name: Any = None
) -> Tensor:
    """The mean of each ``ksize`` window of ``[N, W, C]`` (padding not counted).

    >>> import flowbook as fb
    >>> with fb.Session() as s:
    ...     s.run(fb.nn.avg_pool1d(fb.reshape([1.0, 3.0, 2.0], [1, 3, 1]), 2, 2, "SAME")).ravel().tolist()
    [2.0, 2.0]
    """
    return _pool1d("AVG", input, ksize, strides, padding, data_format, name)


def max_pool2d(
    input: Any, ksize: Any, strides: Any, padding: Any, data_format: str = "NHWC", name: Any = None
) -> Tensor:
    """:func:`flowbook.api.nn.max_pool` under its TF 2 name.

    >>> import flowbook as fb
    >>> fb.nn.max_pool2d(fb.zeros([1, 4, 4, 1]), 2, 2, "VALID").shape.as_list()
    [1, 2, 2, 1]
    """
    return max_pool(input, ksize, strides, padding, data_format, name)


def avg_pool2d(
    input: Any, ksize: Any, strides: Any, padding: Any, data_format: str = "NHWC", name: Any = None
) -> Tensor:
    """:func:`flowbook.api.nn.avg_pool` under its TF 2 name.

    >>> import flowbook as fb
    >>> fb.nn.avg_pool2d(fb.zeros([1, 4, 4, 1]), 2, 2, "VALID").shape.as_list()
    [1, 2, 2, 1]
    """
    return avg_pool(input, ksize, strides, padding, data_format, name)


def _pool_nd(
    kind: str, x: Any, ksize: Any, strides: Any, padding: Any, fmt: Any, name: Any
) -> Tensor:
    t = tensor(x)
    rank = None if t._shape is None else len(t._shape)
    if rank == 3:
        return _pool1d(kind, t, ksize, strides, padding, fmt or "NWC", name)
    if rank == 4:
        return _POOLS[kind](t, ksize, strides, padding, fmt or "NHWC", name)
    raise ValueError(
        f"{kind.lower()}_pool_v2: input must be rank 3 or 4 (1 or 2 spatial dims), got {rank}"
    )


def max_pool_v2(
    input: Any, ksize: Any, strides: Any, padding: Any, data_format: Any = None, name: Any = None
) -> Tensor:
    """Max pooling over 1 or 2 spatial dims, chosen by ``input``'s rank (3 or 4).

    >>> import flowbook as fb
    >>> fb.nn.max_pool_v2(fb.zeros([1, 6, 2]), 3, 3, "VALID").shape.as_list()
    [1, 2, 2]
    """
    return _pool_nd("MAX", input, ksize, strides, padding, data_format, name)


def avg_pool_v2(
    input: Any, ksize: Any, strides: Any, padding: Any, data_format: Any = None, name: Any = None
) -> Tensor:
    """Average pooling over 1 or 2 spatial dims, chosen by ``input``'s rank (3 or 4).

    >>> import flowbook as fb
    >>> fb.nn.avg_pool_v2(fb.zeros([1, 6, 6, 2]), 3, 3, "VALID").shape.as_list()
    [1, 2, 2, 2]
    """
    return _pool_nd("AVG", input, ksize, strides, padding, data_format, name)


def _n_ints(values: Any, n: int, what: str) -> list[int]:
    v = [1] * n if values is None else [int(d) for d in values]
    if len(v) != n or any(d < 1 for d in v):
        raise ValueError(f"{what} must be {n} positive ints, got {values}")
    return v


def pool(
    input: Any,
    window_shape: Any,
    pooling_type: str,
    padding: Any,
    dilation_rate: Any = None,
    strides: Any = None,
    name: str | None = None,
    data_format: str | None = None,
    dilations: Any = None,
) -> Tensor:
    """N-D pooling ("MAX" or "AVG") over 1 or 2 spatial dims, maybe with dilated windows.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     x = fb.zeros([1, 9, 9, 2])
    ...     fb.nn.pool(x, [2, 2], "MAX", "SAME", dilation_rate=[2, 2]).shape.as_list()
    [1, 9, 9, 2]
    """
    if pooling_type not in _POOLS:
        raise ValueError(f"pooling_type must be 'MAX' or 'AVG', got {pooling_type!r}")
    if data_format not in (None, "NWC", "NHWC"):
        raise ValueError(f"pool: data_format {data_format!r} is not supported (NWC or NHWC)")
    window = [int(d) for d in window_shape]
    m = len(window)
    if m not in (1, 2):
        raise ValueError(f"pool: {m} spatial dims are not supported (1 or 2)")
    st = _n_ints(strides, m, "strides")
    rate = _n_ints(dilations if dilation_rate is None else dilation_rate, m, "dilation_rate")
    if max(st) > 1 and max(rate) > 1:
        raise ValueError(f"strides {st} > 1 not supported in conjunction with dilation_rate {rate}")
    fn = _POOLS[pooling_type]

    def op(t: Tensor, _: int, pad: str) -> Tensor:
        if m == 1:
            return _pool1d(pooling_type, t, window[0], st[0], pad, "NWC", None)
        return fn(t, [1, *window, 1], [1, *st, 1], pad)

    with name_scope(name, f"{pooling_type.lower()}_pool"):
        return with_space_to_batch(input, rate, padding, op, filter_shape=window)
