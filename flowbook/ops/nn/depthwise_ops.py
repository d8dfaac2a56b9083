"""Depthwise 2-D convolution: DepthwiseConv2dNative and its two backprops.

Each input channel ``c`` of an NHWC image gets its own ``channel_multiplier``
filters: the filter is ``[KH, KW, C, M]`` and output channel ``c * M + m``
is the window of channel ``c`` weighted by ``filter[:, :, c, m]``.  The
windows are :mod:`flowbook.kernels.windows`' strided view (with its padding
arithmetic and checks, shared with Conv2D and the pools); the forward op and
the filter gradient are one ``einsum`` over it, the input gradient scatters
back window cell by window cell.  Gradients are declared beside each op,
built from these three ops, so the backprops are differentiable too.

    >>> import flowbook as fb, numpy as np
    >>> x = fb.constant(np.ones((1, 3, 3, 2), np.float32))
    >>> y = fb.nn.depthwise_conv2d_native(x, np.ones((2, 2, 2, 1), np.float32), [1, 1, 1, 1], "VALID")
    >>> with fb.Session() as s:
    ...     s.run(y).shape
    (1, 2, 2, 2)
"""

from __future__ import annotations

from typing import Any

from flowbook.framework.errors import InvalidArgumentError
from flowbook.framework.registry import OpDef, Out, op
from flowbook.framework.tensor import Tensor
from flowbook.framework.tensor_shape import Shape, fmt
from flowbook.kernels import windows as win
from flowbook.ops._builder import make1, operands, same_dtype
from flowbook.ops._shape_inputs import check_int, host_ints, int_input
from flowbook.ops.array import array_ops
from flowbook.ops.array.constant_op import partial_shape_value
from flowbook.ops.math.elementwise import FLOAT, check_dtype

__all__ = [
    "depthwise_conv2d_native",
    "depthwise_conv2d_native_backprop_filter",
    "depthwise_conv2d_native_backprop_input",
]

_ATTRS = ("strides", "padding", "data_format", "dilations")
_FWD = "DepthwiseConv2dNative"


def _check_attrs(op_type: str, strides: Any, padding: str, **attrs: Any) -> tuple[int, ...]:
    win.check_padding(op_type, padding)
    dil = attrs.get("dilations")
    if dil is not None and tuple(int(d) for d in dil) != (1, 1, 1, 1):
        raise ValueError(
            f"{op_type}: dilations other than [1, 1, 1, 1] are not supported, got {list(dil)} "
            "(tf.nn.depthwise_conv2d with rate= dilates through space_to_batch)"
        )
    fmt_ = attrs.get("data_format", "NHWC")
    if fmt_ != "NHWC":
        raise ValueError(f"{op_type}: data_format must be 'NHWC' (no NCHW kernel), got {fmt_!r}")
    return win.check_window_attr("strides", strides)


def _out_shape(op_type: str, x: Shape, f: Shape, st: Any, padding: str) -> Shape:
    """The forward output shape ``[N, OH, OW, C*M]``; checks that the channels agree."""
    xs, fs = win.rank4("input", x), win.rank4("filter", f)
    if xs[3] is not None and fs[2] is not None and xs[3] != fs[2]:
        raise ValueError(
            f"{op_type}: input depth {xs[3]} does not match the filter's in_channels {fs[2]}: "
            f"input{fmt(xs)}, filter{fmt(fs)} ([KH, KW, C, multiplier])"
        )
    shapes = f"input{fmt(xs)}, filter{fmt(fs)}"
    oh = win.static_out(xs[1], fs[0], st[1], padding, shapes)
    ow = win.static_out(xs[2], fs[1], st[2], padding, shapes)
    c = xs[3] if xs[3] is not None else fs[2]
    depth = None if c is None or fs[3] is None else c * fs[3]
    return (xs[0], oh, ow, depth)


def _geometry(x_shape: tuple, f_shape: tuple, strides: Any, padding: str) -> win.Geometry:
    if x_shape[3] != f_shape[2]:
        raise InvalidArgumentError(
            None,
            None,
            f"input depth {x_shape[3]} does not match filter in_channels {f_shape[2]}: "
            f"input{fmt(x_shape)}, filter{fmt(f_shape)}",
        )
    return win.window_geometry(x_shape[1:3], f_shape[:2], (strides[1], strides[2]), padding)


def _windows(xp: Any, x: Any, g: win.Geometry, k: tuple, strides: Any) -> Any:
    return win.windows(xp, win.pad_nhwc(xp, x, g), g, k, (strides[1], strides[2]))


def _dy5(dy: Any, x_shape: tuple, g: win.Geometry, f_shape: tuple) -> Any:
    """``out_backprop`` checked against the forward output and split as ``[N, OH, OW, C, M]``."""
    n, c, m = x_shape[0], f_shape[2], f_shape[3]
    win.check_runtime("out_backprop", dy, (n, g.oh, g.ow, c * m), "the forward output")
    return dy.reshape(n, g.oh, g.ow, c, m)


# ------------------------------------------------------------ DepthwiseConv2dNative
def _fwd_infer(input: Tensor, filter: Tensor, strides: Any, padding: str, **attrs: Any) -> Out:
    dt = same_dtype(_FWD, ("input", "filter"), input, filter)
    check_dtype(dt, FLOAT, "input")
    st = _check_attrs(_FWD, strides, padding, **attrs)
    return Out(dt, _out_shape(_FWD, input._shape, filter._shape, st, padding))


def _depthwise(xp: Any, x: Any, f: Any, strides: Any, padding: str, **_: Any) -> Any:
    g = _geometry(x.shape, f.shape, strides, padding)
    w = _windows(xp, x, g, f.shape[:2], strides)
    y = xp.einsum("nhwijc,ijcm->nhwcm", w, f)
    return y.reshape(x.shape[0], g.oh, g.ow, f.shape[2] * f.shape[3])


def _depthwise_grad(op: Any, grad: Tensor) -> list[Tensor]:
    x, f = op.inputs
    attrs = win.attrs_of(op, _ATTRS)
    return [
        make1(_FWD + "BackpropInput", (array_ops.shape(x), f, grad), attrs),
        make1(_FWD + "BackpropFilter", (x, array_ops.shape(f), grad), attrs),
    ]


op(
    _FWD,
    ("input", "filter"),
    infer=_fwd_infer,
    attrs=_ATTRS,
    kernel=_depthwise,
    heavy=True,
    grad=_depthwise_grad,
)


# ------------------------------------------------------------ the backprops
def _backprop_infer(op_type: str) -> Any:
    """``infer`` of either backprop: one of input and filter comes as its sizes."""
    wants_input = op_type.endswith("Input")
    sizes_name = "input_sizes" if wants_input else "filter_sizes"

    def infer(a: Tensor, b: Tensor, out_backprop: Tensor, **attrs: Any) -> Out:
        sizes, given = (a, b) if wants_input else (b, a)
        given_name = "filter" if wants_input else "input"
        dt = same_dtype(op_type, (given_name, "out_backprop"), given, out_backprop)
        check_dtype(dt, FLOAT, given_name)
        st = _check_attrs(op_type, **attrs)
        check_int(op_type, sizes_name, sizes)
        out = win.rank4(sizes_name, partial_shape_value(sizes) or (None,) * 4)
        xs, fs = (out, given._shape) if wants_input else (given._shape, out)
        forward = _out_shape(op_type, xs, fs, st, attrs["padding"])
        win.check_static(op_type, "out_backprop", out_backprop._shape, forward, "the forward out")
        return Out(dt, out)

    return infer


def _backprop(
    op_type: str, inputs: tuple[str, ...], sizes: int, kernel: Any, **fields: Any
) -> OpDef:
    """Declare a depthwise backprop with its kernel; its ``*_sizes`` input stays on the host."""
    infer = _backprop_infer(op_type)
    return op(op_type, inputs, _ATTRS, infer, kernel, heavy=True, host_inputs=(sizes,), **fields)


def _depthwise_backprop_input(
    xp: Any, input_sizes: Any, f: Any, dy: Any, strides: Any, padding: str, **_: Any
) -> Any:
    shape = host_ints(input_sizes)
    g = _geometry(shape, f.shape, strides, padding)
    d5 = _dy5(dy, shape, g, f.shape)
    k, s = f.shape[:2], (strides[1], strides[2])
    return win.scatter_windows(
        xp, shape, g, k, s, lambda i, j: xp.einsum("nhwcm,cm->nhwc", d5, f[i, j])
    )


def _depthwise_backprop_input_grad(op: Any, grad: Tensor) -> list[Tensor | None]:
    _, f, dy = op.inputs
    attrs = win.attrs_of(op, _ATTRS)
    return [
        None,
        make1(_FWD + "BackpropFilter", (grad, array_ops.shape(f), dy), attrs),
        make1(_FWD, (grad, f), attrs),
    ]


_backprop(
    _FWD + "BackpropInput",
    ("input_sizes", "filter", "out_backprop"),
    0,
    _depthwise_backprop_input,
    type_attrs={"T": 1},
    grad=_depthwise_backprop_input_grad,
)


def _depthwise_backprop_filter(
    xp: Any, x: Any, filter_sizes: Any, dy: Any, strides: Any, padding: str, **_: Any
) -> Any:
    fshape = host_ints(filter_sizes)
    g = _geometry(x.shape, fshape, strides, padding)
    d5 = _dy5(dy, x.shape, g, fshape)
    return xp.einsum("nhwijc,nhwcm->ijcm", _windows(xp, x, g, fshape[:2], strides), d5)


def _depthwise_backprop_filter_grad(op: Any, grad: Tensor) -> list[Tensor | None]:
    x, _, dy = op.inputs
    attrs = win.attrs_of(op, _ATTRS)
    return [
        make1(_FWD + "BackpropInput", (array_ops.shape(x), grad, dy), attrs),
        None,
        make1(_FWD, (x, grad), attrs),
    ]


_backprop(
    _FWD + "BackpropFilter",
    ("input", "filter_sizes", "out_backprop"),
    1,
    _depthwise_backprop_filter,
    grad=_depthwise_backprop_filter_grad,
)


# ------------------------------------------------------------ wrappers
def _attrs(strides: Any, padding: Any, data_format: str | None, dilations: Any) -> dict:
    dil = (1, 1, 1, 1) if dilations is None else tuple(win.window_list(dilations, "dilations"))
    return {
        "strides": tuple(win.window_list(strides, "strides")),
        "padding": win.padding_str(padding),
        "data_format": data_format or "NHWC",
        "dilations": dil,
    }


def depthwise_conv2d_native(
    input: Any,
    filter: Any,
    strides: Any,
    padding: Any,
    data_format: str | None = "NHWC",
    dilations: Any = None,
    name: str | None = None,
) -> Tensor:
    """Depthwise conv of NHWC ``input`` with a ``[KH, KW, C, M]`` filter: C*M output channels.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     x = fb.zeros([2, 8, 8, 3])
    ...     fb.nn.depthwise_conv2d_native(x, fb.zeros([3, 3, 3, 2]), [1, 2, 2, 1], "SAME").shape.as_list()
    [2, 4, 4, 6]
    """
    x, f = operands(input, filter)
    return make1(_FWD, (x, f), _attrs(strides, padding, data_format, dilations), name=name)


def depthwise_conv2d_native_backprop_input(
    input_sizes: Any,
    filter: Any,
    out_backprop: Any,
    strides: Any,
    padding: Any,
    data_format: str | None = "NHWC",
    dilations: Any = None,
    name: str | None = None,
) -> Tensor:
    """The gradient of :func:`depthwise_conv2d_native` with respect to its input.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     dy = fb.zeros([1, 4, 4, 6])
    ...     fb.nn.depthwise_conv2d_native_backprop_input([1, 4, 4, 3], fb.zeros([3, 3, 3, 2]), dy, [1, 1, 1, 1], "SAME").shape
    TensorShape([Dimension(1), Dimension(4), Dimension(4), Dimension(3)])
    """
    f, dy = operands(filter, out_backprop)
    sizes = int_input(input_sizes, "input_sizes")
    attrs = _attrs(strides, padding, data_format, dilations)
    return make1(_FWD + "BackpropInput", (sizes, f, dy), attrs, name=name)


def depthwise_conv2d_native_backprop_filter(
    input: Any,
    filter_sizes: Any,
    out_backprop: Any,
    strides: Any,
    padding: Any,
    data_format: str | None = "NHWC",
    dilations: Any = None,
    name: str | None = None,
) -> Tensor:
    """The gradient of :func:`depthwise_conv2d_native` with respect to its filter.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     x, dy = fb.zeros([1, 4, 4, 3]), fb.zeros([1, 4, 4, 6])
    ...     fb.nn.depthwise_conv2d_native_backprop_filter(x, [3, 3, 3, 2], dy, [1, 1, 1, 1], "SAME").shape.as_list()
    [3, 3, 3, 2]
    """
    x, dy = operands(input, out_backprop)
    sizes = int_input(filter_sizes, "filter_sizes")
    attrs = _attrs(strides, padding, data_format, dilations)
    return make1(_FWD + "BackpropFilter", (x, sizes, dy), attrs, name=name)
