"""``tf.nn``'s convolution front ends, built from Conv2D, DepthwiseConv2dNative and SpaceToBatchND.

No new op types live here: as in TensorFlow, a 1-D convolution is a 2-D one
over a height of 1 (``conv1d``), and a dilated ("atrous") convolution is the
plain VALID one on the image cut into ``rate x rate`` interleaved
sub-images: :func:`with_space_to_batch` pads the image
(:func:`required_space_to_batch_paddings`: the filter's SAME padding, then up
to a multiple of the rate), moves the tiles into the batch
(SpaceToBatchND), runs the op and moves them back (BatchToSpaceND) cropping
the extra padding.  Gradients come from those ops.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     x = fb.placeholder(fb.float32, [None, 9, 9, 2])
    ...     fb.nn.atrous_conv2d(x, fb.zeros([3, 3, 2, 4]), 2, "SAME").shape.as_list()
    [None, 9, 9, 4]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flowbook.framework.graph import name_scope
from flowbook.framework.tensor import Tensor
from flowbook.kernels.windows import padding_str, window_list
from flowbook.ops._builder import tensor
from flowbook.ops._shape_inputs import const_ints, int_input, is_tensor
from flowbook.ops.array import array_ops
from flowbook.ops.array.space_ops import batch_to_space_nd, space_to_batch_nd
from flowbook.ops.nn.conv_ops import conv2d, conv2d_transpose
from flowbook.ops.nn.depthwise_ops import depthwise_conv2d_native

__all__ = [
    "atrous_conv2d",
    "atrous_conv2d_transpose",
    "conv1d",
    "conv1d_transpose",
    "conv_transpose",
    "convolution",
    "depthwise_conv2d",
    "required_space_to_batch_paddings",
    "separable_conv2d",
    "with_space_to_batch",
]


def _ints(values: Any, n: int, what: str) -> list[int]:
    """An int or a list of ``n`` ints (TF's ``dilation_rate``/``strides`` arguments)."""
    if values is None:
        return [1] * n
    v = [int(values)] * n if isinstance(values, int) else [int(d) for d in values]
    if len(v) == 1 and n > 1:
        v = v * n
    if len(v) != n or any(d < 1 for d in v):
        raise ValueError(f"{what} must be {n} positive ints, got {values}")
    return v


def _nhwc(fn: str, data_format: Any, allowed: tuple[str, ...]) -> None:
    if data_format is not None and data_format not in allowed:
        raise ValueError(
            f"{fn}: data_format {data_format!r} is not supported (flowbook has no "
            f"channels-first kernels; use {allowed[0]!r})"
        )


# ------------------------------------------------------------ space-to-batch
def required_space_to_batch_paddings(
    input_shape: Any, block_shape: Any, base_paddings: Any = None, name: str | None = None
) -> tuple[Any, Any]:
    """Paddings making ``input_shape`` (spatial dims) divisible by ``block_shape``, and the crops.

    Python lists in, lists out; a tensor among them gives int32 tensors.

    >>> required_space_to_batch_paddings([5, 4], [2, 2], [[1, 1], [0, 0]])
    ([[1, 2], [0, 0]], [[0, 1], [0, 0]])
    """
    block = [int(b) for b in block_shape]
    base = base_paddings if base_paddings is not None else [[0, 0]] * len(block)
    if not is_tensor(input_shape) and not is_tensor(base):
        pads, crops = [], []
        for size, b, (start, end) in zip(input_shape, block, base):
            extra = (b - (int(size) + start + end) % b) % b
            pads.append([int(start), int(end) + extra])
            crops.append([0, extra])
        return pads, crops
    with name_scope(name, "required_space_to_batch_paddings"):
        size, base_t = int_input(input_shape, "input_shape"), int_input(base, "base_paddings")
        b = int_input(block, "block_shape")
        extra = (b - (size + base_t[:, 0] + base_t[:, 1]) % b) % b
        pads = array_ops.stack([base_t[:, 0], base_t[:, 1] + extra], axis=1)
        return pads, array_ops.stack([array_ops.zeros_like(extra), extra], axis=1)


def _spatial(x: Tensor, m: int) -> Any:
    """The M spatial dims after the batch: Python ints when known, else a tensor."""
    s = x._shape
    if s is not None and all(d is not None for d in s[1 : m + 1]):
        return list(s[1 : m + 1])
    return array_ops.shape(x)[1 : m + 1]


def with_space_to_batch(
    input: Any,
    dilation_rate: Any,
    padding: Any,
    op: Callable[[Tensor, int, str], Tensor],
    filter_shape: Any = None,
    spatial_dims: Any = None,
    data_format: str | None = None,
) -> Tensor:
    """``op(input, num_spatial_dims, padding)`` with its windows dilated by ``dilation_rate``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     x = fb.zeros([1, 8, 8, 1])
    ...     pool = lambda t, n, p: fb.nn.max_pool(t, 2, 1, p)
    ...     fb.nn.with_space_to_batch(x, [2, 2], "VALID", pool).shape.as_list()
    [1, 6, 6, 1]
    """
    _nhwc("with_space_to_batch", data_format, ("NHWC", "NWC", "NDHWC"))
    x = tensor(input)
    rate = [int(d) for d in dilation_rate]
    m = len(rate)
    if spatial_dims is not None and list(spatial_dims) != list(range(1, m + 1)):
        raise ValueError(f"spatial_dims must be {list(range(1, m + 1))} (NHWC), got {spatial_dims}")
    padding = padding_str(padding)
    if all(r == 1 for r in rate):
        return op(x, m, padding)
    if padding == "SAME":
        if filter_shape is None:
            raise ValueError("with_space_to_batch: filter_shape is required for SAME padding")
        k = [(int(f) - 1) * r + 1 for f, r in zip(list(filter_shape)[:m], rate)]
        base = [[(d - 1) // 2, d - 1 - (d - 1) // 2] for d in k]
    elif padding == "VALID":
        base = [[0, 0]] * m
    else:
        raise ValueError(f"padding must be 'SAME' or 'VALID', got {padding!r}")
    pads, crops = required_space_to_batch_paddings(_spatial(x, m), rate, base)
    y = op(space_to_batch_nd(x, rate, pads), m, "VALID")
    return batch_to_space_nd(y, rate, crops)


# ------------------------------------------------------------ N-D front ends
def convolution(
    input: Any,
    filter: Any = None,
    padding: Any = None,
    strides: Any = None,
    dilation_rate: Any = None,
    name: str | None = None,
    data_format: str | None = None,
    filters: Any = None,
    dilations: Any = None,
) -> Tensor:
    """An N-D convolution (N = 1 or 2 spatial dims, from the filter's rank), maybe dilated.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     x = fb.zeros([2, 10, 3])
    ...     fb.nn.convolution(x, fb.zeros([3, 3, 5]), "VALID", dilation_rate=[2]).shape.as_list()
    [2, 6, 5]
    """
    f = tensor(filters if filter is None else filter)
    x = tensor(input)
    if f._shape is None:
        raise ValueError("convolution: the filter's rank must be known to choose 1-D or 2-D")
    m = len(f._shape) - 2
    if m not in (1, 2):
        raise ValueError(
            f"convolution: {m} spatial dims are not supported (1 or 2), filter{f._shape}"
        )
    _nhwc("convolution", data_format, ("NWC", "NHWC"))
    st = _ints(strides, m, "strides")
    rate = _ints(dilations if dilation_rate is None else dilation_rate, m, "dilation_rate")
    if max(st) > 1 and max(rate) > 1:
        raise ValueError(f"strides {st} > 1 not supported in conjunction with dilation_rate {rate}")

    def conv(t: Tensor, _: int, pad: str) -> Tensor:
        if m == 1:
            return conv1d(t, f, st[0], pad)
        return conv2d(t, f, [1, *st, 1], pad)

    with name_scope(name, "convolution"):
        return with_space_to_batch(x, rate, padding, conv, filter_shape=f._shape)


def conv1d(
    value: Any = None,
    filters: Any = None,
    stride: Any = None,
    padding: Any = None,
    use_cudnn_on_gpu: Any = None,
    data_format: str | None = None,
    name: str | None = None,
    input: Any = None,
    dilations: Any = None,
) -> Tensor:
    """1-D convolution of ``[N, W, C]`` with a ``[KW, C, O]`` filter: conv2d over a height of 1.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.nn.conv1d(fb.zeros([4, 10, 3]), fb.zeros([3, 3, 8]), 2, "SAME").shape.as_list()
    [4, 5, 8]
    """
    _nhwc("conv1d", data_format, ("NWC", "NHWC"))
    x, f = tensor(input if value is None else value), tensor(filters)
    s = _stride1(stride, "stride")
    if _stride1(dilations or 1, "dilations") != 1:
        return convolution(x, f, padding, [s], _stride1(dilations, "dilations"), name=name)
    with name_scope(name, "conv1d"):
        y = conv2d(array_ops.expand_dims(x, 1), array_ops.expand_dims(f, 0), [1, 1, s, 1], padding)
        return array_ops.squeeze(y, [1])


def _stride1(value: Any, what: str) -> int:
    """A 1-D stride or dilation: an int, ``[s]`` or ``[1, s, 1]``."""
    v = [int(value)] if isinstance(value, int) else [int(d) for d in value]
    if len(v) == 3 and v[0] == v[2] == 1:
        v = v[1:2]
    if len(v) != 1 or v[0] < 1:
        raise ValueError(f"{what} must be a positive int, [s] or [1, s, 1], got {value}")
    return v[0]


def _with_one(shape: Any, axis: int) -> Any:
    """``shape`` (a list or 1-D int tensor) with a 1 inserted at ``axis``."""
    if not is_tensor(shape):
        v = [int(d) for d in shape]
        return [*v[:axis], 1, *v[axis:]]
    t = tensor(shape)
    return array_ops.concat([t[:axis], array_ops.ones([1], t.dtype), t[axis:]], 0)


def conv1d_transpose(
    input: Any,
    filters: Any,
    output_shape: Any,
    strides: Any,
    padding: Any = "SAME",
    data_format: str = "NWC",
    dilations: Any = None,
    name: str | None = None,
) -> Tensor:
    """The transpose of :func:`conv1d`; ``filters`` is ``[KW, out_channels, in_channels]``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.nn.conv1d_transpose(fb.zeros([2, 5, 8]), fb.zeros([3, 4, 8]), [2, 10, 4], 2).shape.as_list()
    [2, 10, 4]
    """
    _nhwc("conv1d_transpose", data_format, ("NWC",))
    if _stride1(dilations or 1, "dilations") != 1:
        raise ValueError("conv1d_transpose: dilations other than 1 are not supported")
    s = _stride1(strides, "strides")
    with name_scope(name, "conv1d_transpose"):
        x = array_ops.expand_dims(tensor(input), 1)
        f = array_ops.expand_dims(tensor(filters), 0)
        y = conv2d_transpose(x, f, _with_one(output_shape, 1), [1, 1, s, 1], padding)
        return array_ops.squeeze(y, [1])


def conv_transpose(
    input: Any,
    filters: Any,
    output_shape: Any,
    strides: Any,
    padding: Any = "SAME",
    data_format: str | None = None,
    dilations: Any = None,
    name: str | None = None,
) -> Tensor:
    """The N-D transpose of :func:`convolution` (1 or 2 spatial dims, from the filter's rank).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     y = fb.nn.conv_transpose(fb.zeros([1, 4, 4, 8]), fb.zeros([3, 3, 2, 8]), [1, 8, 8, 2], 2)
    >>> y.shape.as_list()
    [1, 8, 8, 2]
    """
    f = tensor(filters)
    rank = None if f._shape is None else len(f._shape)
    if rank == 3:
        return conv1d_transpose(
            input, f, output_shape, strides, padding, data_format or "NWC", dilations, name
        )
    if rank != 4:
        raise ValueError(f"conv_transpose: filters must be rank 3 or 4 (1-D or 2-D), got {rank}")
    _nhwc("conv_transpose", data_format, ("NHWC",))
    if _ints(dilations, 2, "dilations") != [1, 1]:
        raise ValueError("conv_transpose: dilations other than 1 are not supported")
    st = (
        strides
        if isinstance(strides, list | tuple) and len(strides) == 4
        else _ints(strides, 2, "strides")
    )
    return conv2d_transpose(input, f, output_shape, window_list(st, "strides"), padding, name=name)


# ------------------------------------------------------------ atrous, depthwise, separable
def atrous_conv2d(
    value: Any, filters: Any, rate: int, padding: Any, name: str | None = None
) -> Tensor:
    """conv2d with its filter dilated by ``rate`` (holes between the taps), stride 1.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.nn.atrous_conv2d(fb.zeros([1, 9, 9, 2]), fb.zeros([3, 3, 2, 4]), 3, "VALID").shape.as_list()
    [1, 3, 3, 4]
    """
    if int(rate) < 1:
        raise ValueError(f"rate {rate} cannot be less than one")
    return convolution(value, filters, padding, dilation_rate=[int(rate)] * 2, name=name)


def atrous_conv2d_transpose(
    value: Any,
    filters: Any,
    output_shape: Any,
    rate: int,
    padding: Any,
    name: str | None = None,
) -> Tensor:
    """The transpose of :func:`atrous_conv2d` (its gradient with respect to the input).

    ``output_shape`` must be known when the graph is built.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     y = fb.nn.atrous_conv2d_transpose(fb.zeros([1, 9, 9, 4]), fb.zeros([3, 3, 2, 4]), [1, 9, 9, 2], 2, "SAME")
    >>> y.shape.as_list()
    [1, 9, 9, 2]
    """
    r = int(rate)
    if r < 1:
        raise ValueError(f"rate {rate} cannot be less than one")
    padding = padding_str(padding)
    if r == 1:
        return conv2d_transpose(value, filters, output_shape, [1, 1, 1, 1], padding, name=name)
    os = const_ints(int_input(output_shape, "output_shape"))
    if os is None or len(os) != 4:
        raise ValueError(
            f"atrous_conv2d_transpose: output_shape must be 4 ints known when the graph is "
            f"built, got {output_shape}"
        )
    f = tensor(filters)
    fs = f._shape
    if fs is None or fs[0] is None or fs[1] is None:
        raise ValueError("atrous_conv2d_transpose: the filter's height and width must be known")
    k = [(fs[0] - 1) * r + 1, (fs[1] - 1) * r + 1]
    base = [[0, 0], [0, 0]] if padding == "VALID" else [[(d - 1) // 2, d // 2] for d in k]
    pads, crops = required_space_to_batch_paddings(os[1:3], [r, r], base)
    inner = [os[0] * r * r, (os[1] + sum(pads[0])) // r, (os[2] + sum(pads[1])) // r, os[3]]
    with name_scope(name, "atrous_conv2d_transpose"):
        v = space_to_batch_nd(value, [r, r], crops)
        u = conv2d_transpose(v, f, inner, [1, 1, 1, 1], "VALID")
        return batch_to_space_nd(u, [r, r], pads)


def depthwise_conv2d(
    input: Any,
    filter: Any,
    strides: Any,
    padding: Any,
    rate: Any = None,
    name: str | None = None,
    data_format: str | None = None,
    dilations: Any = None,
) -> Tensor:
    """Depthwise conv (``[KH, KW, C, M]`` filter, C*M channels out), maybe dilated by ``rate``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     x = fb.zeros([2, 9, 9, 3])
    ...     fb.nn.depthwise_conv2d(x, fb.zeros([3, 3, 3, 2]), [1, 1, 1, 1], "SAME", rate=[2, 2]).shape.as_list()
    [2, 9, 9, 6]
    """
    _nhwc("depthwise_conv2d", data_format, ("NHWC",))
    f = tensor(filter)
    r = _ints(dilations if rate is None else rate, 2, "rate")
    st = list(strides)
    if max(r) > 1 and max(int(s) for s in st) > 1:
        raise ValueError(f"strides {st} > 1 not supported in conjunction with rate {r}")

    def op(t: Tensor, _: int, pad: str) -> Tensor:
        return depthwise_conv2d_native(t, f, st, pad)

    with name_scope(name, "depthwise"):
        return with_space_to_batch(input, r, padding, op, filter_shape=f._shape)


def separable_conv2d(
    input: Any,
    depthwise_filter: Any,
    pointwise_filter: Any,
    strides: Any,
    padding: Any,
    rate: Any = None,
    name: str | None = None,
    data_format: str | None = None,
    dilations: Any = None,
) -> Tensor:
    """A depthwise conv, then a 1x1 ``[1, 1, C*M, O]`` pointwise conv mixing the channels.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     x = fb.zeros([2, 8, 8, 3])
    ...     y = fb.nn.separable_conv2d(x, fb.zeros([3, 3, 3, 2]), fb.zeros([1, 1, 6, 5]), [1, 1, 1, 1], "SAME")
    >>> y.shape.as_list()
    [2, 8, 8, 5]
    """
    p = tensor(pointwise_filter)
    ps = p._shape
    if ps is not None and (len(ps) != 4 or ps[0] not in (1, None) or ps[1] not in (1, None)):
        raise ValueError(f"pointwise_filter must be [1, 1, in, out], got {list(ps)}")
    with name_scope(name, "separable_conv2d"):
        d = depthwise_conv2d(
            input, depthwise_filter, strides, padding, rate, None, data_format, dilations
        )
        return conv2d(d, p, [1, 1, 1, 1], "VALID")
