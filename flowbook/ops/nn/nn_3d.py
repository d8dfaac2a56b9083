"""3-D convolution and pooling over ``NDHWC`` volumes, built from the 2-D ops.

``conv3d`` is a sum over the filter's depth taps: for tap ``k`` the input
slices at depths ``k * dilation + j * stride`` (``j`` the output depth,
after TF's SAME/VALID padding of the depth axis, ``windows.out_size``) are
folded into the batch and convolved in 2-D with ``filter[k]``; the taps'
results add up.  Pooling is separable: the maximum (or mean over the cells
inside the input) of a ``kd x kh x kw`` box is the maximum (mean) over
depth of the ``kh x kw`` pools, so ``max_pool3d``/``avg_pool3d`` pool H and
W with the 2-D op, then depth with a second 2-D pool of height ``kd``.
Values and gradients are therefore the 2-D ops' -- the same numbers
TensorFlow's Conv3D/MaxPool3D/AvgPool3D give, in more, smaller kernels.
The depth, its kernel size and strides must be known when the graph is built.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     x = fb.reshape(fb.range(8.0), [1, 2, 2, 2, 1])
    ...     s.run(fb.nn.max_pool3d(x, [1, 2, 2, 2, 1], [1, 2, 2, 2, 1], "VALID")).ravel().tolist()
    [7.0]
"""

from __future__ import annotations

from typing import Any

from flowbook.framework.graph import name_scope
from flowbook.framework.tensor import Tensor
from flowbook.kernels.windows import PADDINGS, out_size
from flowbook.ops.array import array_ops
from flowbook.ops.array.constant_op import convert_to_tensor
from flowbook.ops.math import math_ops
from flowbook.ops.nn.conv_ops import conv2d
from flowbook.ops.nn.pool_ops import avg_pool, max_pool

__all__ = ["avg_pool3d", "conv3d", "max_pool3d"]


def _five(name: str, value: Any) -> list[int]:
    v = [int(n) for n in value]
    if len(v) != 5 or v[0] != 1 or v[4] != 1:
        raise ValueError(f"{name} must have 5 entries, 1 for batch and channels: got {value}")
    return v


def _check(x: Tensor, padding: str, data_format: str, op: str) -> int:
    if data_format != "NDHWC":
        raise ValueError(f"{op}: only data_format 'NDHWC' is supported, got {data_format!r}")
    if padding not in PADDINGS:
        raise ValueError(f"{op}: padding must be 'SAME' or 'VALID', got {padding!r}")
    if x.shape.ndims != 5 or x.shape.as_list()[1] is None:
        raise ValueError(f"{op} needs a 5-D NDHWC input with a known depth, got {x.shape}")
    return x.shape.as_list()[1]


def _rest(t: Tensor, lead: list[Any]) -> Tensor:
    """``t`` [A, H, W, C] reshaped to ``lead + [H, W, C]``."""
    tail = array_ops.shape(t)[1:]
    return array_ops.reshape(t, array_ops.concat([array_ops.stack(lead), tail], 0))


def conv3d(
    input: Any,
    filter: Any,
    strides: Any,
    padding: str,
    data_format: str = "NDHWC",
    dilations: Any = (1, 1, 1, 1, 1),
    name: str | None = None,
) -> Tensor:
    """3-D convolution of ``[N, D, H, W, C]`` by ``filter [kd, kh, kw, C, F]``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.nn.conv3d(fb.zeros([2, 5, 6, 6, 3]), fb.zeros([3, 3, 3, 3, 4]), [1, 2, 1, 1, 1], "SAME").shape.as_list()
    [2, 3, 6, 6, 4]
    """
    with name_scope(name, "Conv3D"):
        x, f = convert_to_tensor(input, name="input"), convert_to_tensor(filter, name="filter")
        depth = _check(x, padding, data_format, "conv3d")
        st, dil = _five("strides", strides), _five("dilations", dilations)
        kd = f.shape.as_list()[0] if f.shape.ndims == 5 else None
        if kd is None:
            raise ValueError(f"conv3d needs a 5-D filter with a known depth, got {f.shape}")
        span = (kd - 1) * dil[1] + 1
        out_d, before, after = out_size(depth, span, st[1], padding)
        if out_d <= 0:
            raise ValueError(
                f"conv3d: a filter of depth {span} does not fit the input's depth {depth}"
            )
        if before or after:
            x = array_ops.pad(x, [[0, 0], [before, after], [0, 0], [0, 0], [0, 0]])
        n = array_ops.shape(x)[0]
        total = None
        for k in range(kd):
            start = k * dil[1]
            taps = x[:, start : start + (out_d - 1) * st[1] + 1 : st[1]]
            folded = array_ops.reshape(taps, array_ops.concat([[-1], array_ops.shape(taps)[2:]], 0))
            part = conv2d(
                folded, f[k], [1, st[2], st[3], 1], padding, dilations=[1, dil[2], dil[3], 1]
            )
            total = part if total is None else total + part
        out = _rest(total, [n, out_d])
        static = x.shape.as_list()
        h, w = total.shape.as_list()[1:3]
        out.set_shape([static[0], out_d, h, w, f.shape.as_list()[4]])
        return out


def _pool3d(
    pool: Any,
    op: str,
    input: Any,
    ksize: Any,
    strides: Any,
    padding: str,
    data_format: str,
    name: Any,
) -> Tensor:
    with name_scope(name, op):
        x = convert_to_tensor(input, name="input")
        depth = _check(x, padding, data_format, op)
        k, s = _five("ksize", ksize), _five("strides", strides)
        n = array_ops.shape(x)[0]
        planes = array_ops.reshape(x, array_ops.concat([[-1], array_ops.shape(x)[2:]], 0))
        flat = pool(planes, [1, k[2], k[3], 1], [1, s[2], s[3], 1], padding)
        hw = array_ops.shape(flat)[1:3]
        cells = math_ops.reduce_prod(hw)
        column = array_ops.reshape(
            flat, array_ops.stack([n, depth, cells, array_ops.shape(flat)[3]])
        )
        deep = pool(column, [1, k[1], 1, 1], [1, s[1], 1, 1], padding)
        out_d = out_size(depth, k[1], s[1], padding)[0]
        out = array_ops.reshape(
            deep, array_ops.concat([array_ops.stack([n, out_d]), hw, array_ops.shape(flat)[3:]], 0)
        )
        h, w = flat.shape.as_list()[1:3]
        out.set_shape([x.shape.as_list()[0], out_d, h, w, x.shape.as_list()[4]])
        return out


def max_pool3d(
    input: Any,
    ksize: Any,
    strides: Any,
    padding: str,
    data_format: str = "NDHWC",
    name: str | None = None,
) -> Tensor:
    """The maximum of each ``kd x kh x kw`` window of an NDHWC volume."""
    return _pool3d(max_pool, "MaxPool3D", input, ksize, strides, padding, data_format, name)


def avg_pool3d(
    input: Any,
    ksize: Any,
    strides: Any,
    padding: str,
    data_format: str = "NDHWC",
    name: str | None = None,
) -> Tensor:
    """The mean of each ``kd x kh x kw`` window of an NDHWC volume (padding not counted).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     x = fb.reshape(fb.range(8.0), [1, 2, 2, 2, 1])
    ...     s.run(fb.nn.avg_pool3d(x, [1, 2, 2, 2, 1], [1, 1, 1, 1, 1], "SAME"))[0, :, 0, 0, 0].tolist()
    [3.5, 5.5]
    """
    return _pool3d(avg_pool, "AvgPool3D", input, ksize, strides, padding, data_format, name)
