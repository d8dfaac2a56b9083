"""2-D convolution and bias: Conv2D, its two backprops, BiasAdd and BiasAddGrad.

Layout is TF1's default: images NHWC, filters HWIO, ``strides`` and
``ksize`` 4-lists whose batch and depth entries are 1.  ``SAME`` padding is
TensorFlow's arithmetic (``windows.out_size``): ``out = ceil(in / stride)``
and the ``max((out - 1) * stride + k - in, 0)`` padded cells split with the
smaller half before.  ``VALID`` takes ``(in - k) // stride + 1`` windows.

One kernel body serves numpy and CuPy, on ``windows`` and ``conv_patches``,
float32 through every GEMM (no upcast), with ``dilations`` (taps ``d``
apart: the window's geometry is that of its span ``(k - 1) * d + 1``):

- **Conv2D**: one GEMM (``flowbook.kernels.gemm.matmul``: every core when large and
  alone), the ``[N*OH*OW, KH*KW*C]`` patch matrix times the
  ``[KH*KW*C, O]`` filter; the matrix is lent to the filter gradient
  (``conv_patches.CACHE``: found by ``id(x)``, used only if ``x`` still has
  the bytes it was built from).
- **Conv2DBackpropFilter**: the lent matrix's transpose times ``dy``; without
  it, the matrix rebuilt, or past ``_ROWS_ABOVE_BYTES`` one GEMM per kernel
  row (``windows.row_windows``: a KH-th of the memory; 23.1 ms against 18.3).
- **Conv2DBackpropInput**: col2im (``windows.scatter_windows``: KH*KW
  strided slice-adds) of one GEMM per tap, ``dy @ F[i, j].T`` (one GEMM
  into the whole 40 MB matrix first: 33 ms against 26, CPU time); a large
  batch in a band of images per CPU (``gemm.in_bands``: 18.7
  ms whole, 9.8-11.3 in two bands; TensorFlow 2.21 on one thread: 10.8).

Each op's gradient, declared beside it, is built from these ops (second derivatives).

    >>> import flowbook as fb, numpy as np
    >>> x = fb.constant(np.ones((1, 3, 3, 1), np.float32))
    >>> y = fb.nn.conv2d(x, np.ones((2, 2, 1, 1), np.float32), [1, 1, 1, 1], "VALID")
    >>> with fb.Session() as s:
    ...     s.run(y)[0, :, :, 0].tolist()
    [[4.0, 4.0], [4.0, 4.0]]
"""

from __future__ import annotations

from typing import Any

from flowbook.framework.errors import InvalidArgumentError
from flowbook.framework.registry import Fusion, OpDef, Out, op
from flowbook.framework.tensor import Tensor
from flowbook.framework.tensor_shape import Shape, fmt
from flowbook.kernels import conv_patches as cp
from flowbook.kernels import gemm
from flowbook.kernels import windows as win
from flowbook.kernels.bias_kernels import add_bias
from flowbook.ops._builder import make1, operands, same_dtype, tensor
from flowbook.ops._shape_inputs import check_int, host_ints, int_input
from flowbook.ops.array import array_ops
from flowbook.ops.array.constant_op import partial_shape_value
from flowbook.ops.math.elementwise import FLOAT, NUMBER, check_dtype

__all__ = [
    "bias_add",
    "conv2d",
    "conv2d_backprop_filter",
    "conv2d_backprop_input",
    "conv2d_transpose",
]


def _conv_shapes(
    x: Shape, f: Shape, strides: Any, padding: str, dilations: Any = (1, 1, 1, 1)
) -> Shape:
    """The output shape of Conv2D(x, f); checks channels and window sizes."""
    xs, fs = win.rank4("input", x), win.rank4("filter", f)
    if xs[3] is not None and fs[2] is not None and xs[3] != fs[2]:
        raise ValueError(
            f"input depth {xs[3]} does not match the filter's in_channels {fs[2]}: "
            f"input{fmt(xs)}, filter{fmt(fs)} (HWIO)"
        )
    shapes = f"input{fmt(xs)}, filter{fmt(fs)}"
    kh, kw = (None if k is None else (k - 1) * r + 1 for k, r in zip(fs[:2], dilations[1:3]))
    oh = win.static_out(xs[1], kh, strides[1], padding, shapes)
    ow = win.static_out(xs[2], kw, strides[2], padding, shapes)
    return (xs[0], oh, ow, fs[3])


def _check_conv_attrs(
    op_type: str,
    strides: Any,
    padding: str,
    data_format: str = "NHWC",
    dilations: Any = None,
    **_: Any,
) -> Any:
    win.check_padding(op_type, padding)
    if dilations is not None:
        win.check_window_attr("dilations", dilations, data_format)
    return win.check_window_attr("strides", strides, data_format)


def _dil(dilations: Any) -> tuple[int, int]:
    """The (rows, cols) dilation of a ``dilations`` attr (None: 1, 1)."""
    return (1, 1) if dilations is None else (int(dilations[1]), int(dilations[2]))


# ------------------------------------------------------------ Conv2D
_CONV_ATTRS = ("strides", "padding", "data_format", "dilations", "use_cudnn_on_gpu")


def _conv2d_infer(
    input: Tensor,
    filter: Tensor,
    strides: Any,
    padding: str,
    data_format: str = "NHWC",
    dilations: Any = None,
    **_: Any,
) -> Out:
    dt = same_dtype("Conv2D", ("input", "filter"), input, filter)
    check_dtype(dt, FLOAT, "input")
    st = _check_conv_attrs("Conv2D", strides, padding, data_format, dilations)
    return Out(dt, _conv_shapes(input._shape, filter._shape, st, padding, (1, *_dil(dilations), 1)))


def _geometry_for(
    x_shape: tuple[int, ...], f_shape: tuple[int, ...], strides: Any, padding: str, d: Any
) -> win.Geometry:
    if x_shape[3] != f_shape[2]:
        raise InvalidArgumentError(
            None,
            None,
            f"input depth {x_shape[3]} does not match filter in_channels {f_shape[2]}: "
            f"input{fmt(x_shape)}, filter{fmt(f_shape)}",
        )
    span = win.span(tuple(f_shape[:2]), d)
    return win.window_geometry(x_shape[1:3], span, (strides[1], strides[2]), padding)


def _conv2d(
    xp: Any, x: Any, f: Any, strides: Any, padding: str, dilations: Any = None, **kw: Any
) -> Any:  # kw "tail": a fused conv's in-place steps, run band by band (conv_patches)
    d = _dil(dilations)
    g = _geometry_for(x.shape, f.shape, strides, padding, d)
    k, s = tuple(f.shape[:2]), (strides[1], strides[2])
    out, cols = cp.conv_gemm(xp, x, f, g, k, s, d, kw.get("tail"))
    cp.CACHE.put(xp, x, cp.lend_key(x, g, k, s, d), cols)  # for Conv2DBackpropFilter
    return out


def _conv_attrs(op: Any) -> dict[str, Any]:
    return win.attrs_of(op, _CONV_ATTRS)


def _conv2d_grad(op: Any, grad: Tensor) -> list[Tensor]:
    x, f = op.inputs
    attrs = _conv_attrs(op)
    return [
        make1("Conv2DBackpropInput", (array_ops.shape(x), f, grad), attrs),
        make1("Conv2DBackpropFilter", (x, array_ops.shape(f), grad), attrs),
    ]


op(
    "Conv2D",
    ("input", "filter"),
    infer=_conv2d_infer,
    attrs=_CONV_ATTRS,
    kernel=_conv2d,
    heavy=True,
    fusion=Fusion(head="_FusedConv2D"),
    grad=_conv2d_grad,
)


# ------------------------------------------------------------ Conv2DBackpropInput
def _sizes(op_type: str, sizes: Tensor, what: str) -> Shape:
    check_int(op_type, what, sizes)
    if sizes._shape is not None and sizes._shape not in ((4,), (None,)):
        raise ValueError(
            f"{op_type}: {what} must be a 1-D tensor of 4 elements, got shape {fmt(sizes._shape)}"
        )
    return partial_shape_value(sizes) or (None,) * 4


def _backprop_infer(op_type: str) -> Any:
    """``infer`` of Conv2DBackpropInput or Conv2DBackpropFilter: one of x and the filter is
    given by its sizes (the op's result), the other as a tensor; both must fit ``out_backprop``.
    """
    sizes_name = "input_sizes" if op_type == "Conv2DBackpropInput" else "filter_sizes"

    def infer(a: Tensor, b: Tensor, out_backprop: Tensor, **attrs: Any) -> Out:
        sizes, given, given_name = (
            (a, b, "filter") if sizes_name == "input_sizes" else (b, a, "input")
        )
        dt = same_dtype(op_type, (given_name, "out_backprop"), given, out_backprop)
        check_dtype(dt, FLOAT, given_name)
        st, padding = _check_conv_attrs(op_type, **attrs), attrs["padding"]
        out = win.rank4(sizes_name, _sizes(op_type, sizes, sizes_name))
        xs, fs = (out, given._shape) if given_name == "filter" else (given._shape, out)
        forward = _conv_shapes(xs, fs, st, padding, (1, *_dil(attrs.get("dilations")), 1))
        win.check_static(
            op_type, "out_backprop", out_backprop._shape, forward, "the forward output"
        )
        if given_name == "input":
            return Out(dt, out)
        batch, depth = win.rank4("out_backprop", out_backprop._shape)[0], win.rank4("filter", fs)[2]
        return Out(
            dt,
            (
                out[0] if out[0] is not None else batch,
                out[1],
                out[2],
                depth if out[3] is None else out[3],
            ),
        )

    return infer


def _backprop_op(op_type: str, inputs: tuple[str, ...], kernel: Any, **fields: Any) -> OpDef:
    """Declare a conv backprop with its kernel; its ``*_sizes`` input stays on the host."""
    sizes = next(i for i, name in enumerate(inputs) if name.endswith("_sizes"))
    infer = _backprop_infer(op_type)
    return op(
        op_type, inputs, _CONV_ATTRS, infer, kernel, heavy=True, host_inputs=(sizes,), **fields
    )


def _check_dy(dy: Any, x_shape: tuple[int, ...], g: win.Geometry, o: int) -> None:
    """InvalidArgumentError unless ``dy`` has the forward conv's output shape."""
    win.check_runtime("out_backprop", dy, (x_shape[0], g.oh, g.ow, o), "the forward output")


def _conv2d_backprop_input(
    xp: Any, input_sizes: Any, f: Any, dy: Any, strides: Any, padding: str, **attrs: Any
) -> Any:
    shape, d = host_ints(input_sizes), _dil(attrs.get("dilations"))
    g = _geometry_for(shape, f.shape, strides, padding, d)
    _check_dy(dy, shape, g, f.shape[3])
    k, s = tuple(f.shape[:2]), (strides[1], strides[2])

    def band(lo: int, hi: int) -> Any:  # images lo..hi: their taps' GEMMs and col2im
        part = lambda i, j: xp.tensordot(dy[lo:hi], f[i, j], axes=((3,), (1,)))
        return win.scatter_windows(xp, (hi - lo, *shape[1:]), g, k, s, part, d)

    if not gemm.bands(xp, dy.shape, dy.itemsize):
        return band(0, shape[0])
    out = xp.empty(shape, dtype=xp.result_type(dy, f))  # a band per CPU: rows of each GEMM
    gemm.in_bands(shape[0], lambda lo, hi: out.__setitem__(slice(lo, hi), band(lo, hi)))
    return out


def _conv2d_backprop_input_grad(op: Any, grad: Tensor) -> list[Tensor | None]:
    _, f, dy = op.inputs
    attrs = _conv_attrs(op)
    return [
        None,
        make1("Conv2DBackpropFilter", (grad, array_ops.shape(f), dy), attrs),
        make1("Conv2D", (grad, f), attrs),
    ]


_backprop_op(
    "Conv2DBackpropInput",
    ("input_sizes", "filter", "out_backprop"),
    _conv2d_backprop_input,
    type_attrs={"T": 1},
    grad=_conv2d_backprop_input_grad,
)


# ------------------------------------------------------------ Conv2DBackpropFilter
_ROWS_ABOVE_BYTES = 16 << 20  # a larger im2col matrix is built and multiplied row by row


def _conv2d_backprop_filter(
    xp: Any, x: Any, filter_sizes: Any, dy: Any, strides: Any, padding: str, **attrs: Any
) -> Any:
    fshape, d = host_ints(filter_sizes), _dil(attrs.get("dilations"))
    g = _geometry_for(x.shape, fshape, strides, padding, d)
    _check_dy(dy, x.shape, g, fshape[3])
    k, s, dy2 = tuple(fshape[:2]), (strides[1], strides[2]), dy.reshape(-1, fshape[3])
    cols = cp.CACHE.take(xp, x, cp.lend_key(x, g, k, s, d))  # the forward's, if x is unchanged
    if cols is None and dy2.shape[0] * k[0] * k[1] * x.shape[3] * x.itemsize <= _ROWS_ABOVE_BYTES:
        cols = cp.patches(xp, x, g, k, s, d)
    if cols is not None:
        return gemm.matmul(cols.T, dy2).reshape(fshape)
    padded = win.pad_nhwc(xp, x, g)
    out = xp.empty(fshape, dtype=dy.dtype)
    for i in range(k[0]):  # one GEMM per kernel row: 1/KH of im2col's memory
        rows = win.row_windows(xp, padded, g, k, s, i, d).T
        out[i] = gemm.matmul(rows, dy2).reshape(fshape[1:])
    return out


def _conv2d_backprop_filter_grad(op: Any, grad: Tensor) -> list[Tensor | None]:
    x, _, dy = op.inputs
    attrs = _conv_attrs(op)
    return [
        make1("Conv2DBackpropInput", (array_ops.shape(x), grad, dy), attrs),
        None,
        make1("Conv2D", (x, grad), attrs),
    ]


_backprop_op(
    "Conv2DBackpropFilter",
    ("input", "filter_sizes", "out_backprop"),
    _conv2d_backprop_filter,
    grad=_conv2d_backprop_filter_grad,
)


# ------------------------------------------------------------ BiasAdd
def _channel_axis(rank: int, data_format: str) -> int:
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError(f"data_format must be 'NHWC' or 'NCHW', got {data_format!r}")
    return 1 if data_format == "NCHW" else rank - 1


def _bias_add_infer(value: Tensor, bias: Tensor, data_format: str = "NHWC") -> Out:
    dt = same_dtype("BiasAdd", ("value", "bias"), value, bias)
    check_dtype(dt, NUMBER, "value")
    vs, bs = value._shape, bias._shape
    if bs is not None and len(bs) != 1:
        raise ValueError(f"bias must be 1-D, got shape {fmt(bs)}")
    if vs is None:
        return Out(dt, None)
    if len(vs) < 2:
        raise ValueError(f"Shape must be at least rank 2 but is rank {len(vs)} for value{fmt(vs)}")
    c = vs[_channel_axis(len(vs), data_format)]
    if bs is not None and c is not None and bs[0] is not None and bs[0] != c:
        raise ValueError(
            f"Dimensions must be equal, but are {c} and {bs[0]}: the channel dimension of "
            f"value{fmt(vs)} ({data_format}) and bias{fmt(bs)}"
        )
    if c is None and bs is not None and bs[0] is not None:
        vs = tuple(
            bs[0] if d == _channel_axis(len(vs), data_format) else v for d, v in enumerate(vs)
        )
    return Out(dt, vs)


def _bias_add(xp: Any, value: Any, bias: Any, data_format: str = "NHWC", out: Any = None) -> Any:
    axis = _channel_axis(value.ndim, data_format)
    if value.shape[axis] != bias.shape[0]:
        raise InvalidArgumentError(
            None,
            None,
            f"Must provide as many biases as the channel dimension of the input: "
            f"{bias.shape[0]} vs. {value.shape[axis]} (value{fmt(value.shape)})",
        )
    if axis == value.ndim - 1:  # out: a dead input's buffer (flowbook.runtime.memory_plan)
        return add_bias(xp, value, bias, out=out)
    return xp.add(value, bias.reshape((-1,) + (1,) * (value.ndim - 1 - axis)), out=out)


def _bias_add_grad(op: Any, grad: Tensor) -> list[Tensor]:
    fmt_ = op.attrs.get("data_format", "NHWC")
    return [grad, make1("BiasAddGrad", (grad,), {"data_format": fmt_})]


op(
    "BiasAdd",
    ("value", "bias"),
    infer=_bias_add_infer,
    attrs=("data_format",),
    kernel=_bias_add,
    takes_out=True,
    fusion=Fusion(step="add", order="bias"),
    grad=_bias_add_grad,
)


def _bias_add_grad_infer(out_backprop: Tensor, data_format: str = "NHWC") -> Out:
    check_dtype(out_backprop.dtype, NUMBER, "out_backprop")
    s = out_backprop._shape
    if s is None:
        return Out(out_backprop.dtype, (None,))
    if len(s) < 2:
        raise ValueError(
            f"Shape must be at least rank 2 but is rank {len(s)} for out_backprop{fmt(s)}"
        )
    return Out(out_backprop.dtype, (s[_channel_axis(len(s), data_format)],))


def _bias_add_grad_kernel(xp: Any, dy: Any, data_format: str = "NHWC") -> Any:
    """The sum over all but the channel axis; for floats a product with a ones vector.

    BLAS's blocked product sums ~10x faster than ``xp.sum`` over the outer axes
    (and no less accurately: 8e-4 against 5e-3 off the float64 sum of 1.6M
    normal float32 values).
    """
    axis = _channel_axis(dy.ndim, data_format)
    if dy.dtype.kind != "f" or dy.size == 0:
        return xp.sum(dy, axis=tuple(d for d in range(dy.ndim) if d != axis))
    c = dy.shape[axis]
    if axis == dy.ndim - 1:  # channels last: one [rows, C] product
        rows = dy.reshape(-1, c)
        return xp.ones(rows.shape[0], dtype=dy.dtype) @ rows
    per_image = dy.reshape(dy.shape[0], c, -1) @ xp.ones(dy.size // (dy.shape[0] * c), dy.dtype)
    return xp.ones(dy.shape[0], dtype=dy.dtype) @ per_image  # NCHW: [N, C] then over N


def _bias_add_grad_grad(op: Any, grad: Tensor) -> list[Tensor]:
    fmt_ = op.attrs.get("data_format", "NHWC")
    zeros = array_ops.zeros_like(op.inputs[0])
    return [make1("BiasAdd", (zeros, grad), {"data_format": fmt_})]


op(
    "BiasAddGrad",
    ("out_backprop",),
    infer=_bias_add_grad_infer,
    attrs=("data_format",),
    kernel=_bias_add_grad_kernel,
    grad=_bias_add_grad_grad,
)


# ------------------------------------------------------------ wrappers
def _attrs(
    strides: Any, padding: Any, data_format: str, dilations: Any, cudnn: bool
) -> dict[str, Any]:
    dil = (1, 1, 1, 1) if dilations is None else tuple(win.window_list(dilations, "dilations"))
    return {
        "strides": tuple(win.window_list(strides, "strides")),
        "padding": win.padding_str(padding),
        "data_format": data_format,
        "dilations": dil,
        "use_cudnn_on_gpu": bool(cudnn),
    }


def conv2d(
    input: Any,
    filter: Any,
    strides: Any,
    padding: Any,
    use_cudnn_on_gpu: bool = True,
    data_format: str = "NHWC",
    dilations: Any = None,
    name: str | None = None,
) -> Tensor:
    """2-D convolution of NHWC ``input`` with an HWIO ``filter`` (cross-correlation, as TF).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     x = fb.placeholder(fb.float32, [None, 28, 28, 1])
    ...     fb.nn.conv2d(x, fb.zeros([5, 5, 1, 32]), [1, 2, 2, 1], "SAME").shape.as_list()
    [None, 14, 14, 32]
    """
    x, f = operands(input, filter)
    attrs = _attrs(strides, padding, data_format, dilations, use_cudnn_on_gpu)
    return make1("Conv2D", (x, f), attrs, name=name)


def conv2d_backprop_input(
    input_sizes: Any,
    filter: Any,
    out_backprop: Any,
    strides: Any,
    padding: Any,
    use_cudnn_on_gpu: bool = True,
    data_format: str = "NHWC",
    dilations: Any = None,
    name: str | None = None,
) -> Tensor:
    """The gradient of conv2d with respect to its input, of shape ``input_sizes``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     dy = fb.zeros([2, 4, 4, 8])
    ...     dx = fb.nn.conv2d_backprop_input([2, 8, 8, 3], fb.zeros([3, 3, 3, 8]), dy, [1, 2, 2, 1], "SAME")
    >>> dx.shape.as_list()
    [2, 8, 8, 3]
    """
    f, dy = operands(filter, out_backprop)
    attrs = _attrs(strides, padding, data_format, dilations, use_cudnn_on_gpu)
    return make1(
        "Conv2DBackpropInput", (int_input(input_sizes, "input_sizes"), f, dy), attrs, name=name
    )


def conv2d_backprop_filter(
    input: Any,
    filter_sizes: Any,
    out_backprop: Any,
    strides: Any,
    padding: Any,
    use_cudnn_on_gpu: bool = True,
    data_format: str = "NHWC",
    dilations: Any = None,
    name: str | None = None,
) -> Tensor:
    """The gradient of conv2d with respect to its filter, of shape ``filter_sizes``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     x, dy = fb.zeros([2, 8, 8, 3]), fb.zeros([2, 8, 8, 4])
    ...     fb.nn.conv2d_backprop_filter(x, [3, 3, 3, 4], dy, [1, 1, 1, 1], "SAME").shape.as_list()
    [3, 3, 3, 4]
    """
    x, dy = operands(input, out_backprop)
    attrs = _attrs(strides, padding, data_format, dilations, use_cudnn_on_gpu)
    return make1(
        "Conv2DBackpropFilter", (x, int_input(filter_sizes, "filter_sizes"), dy), attrs, name=name
    )


def conv2d_transpose(
    value: Any,
    filter: Any,
    output_shape: Any,
    strides: Any,
    padding: Any = "SAME",
    data_format: str = "NHWC",
    name: str | None = None,
) -> Tensor:
    """The transpose of conv2d ("deconvolution"); ``filter`` is [h, w, out_channels, in_channels].

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     y = fb.nn.conv2d_transpose(fb.zeros([1, 4, 4, 8]), fb.zeros([3, 3, 2, 8]), [1, 8, 8, 2], [1, 2, 2, 1])
    >>> y.shape.as_list()
    [1, 8, 8, 2]
    """
    x, f = operands(value, filter)
    cx, cf = win.rank4("value", x._shape)[3], win.rank4("filter", f._shape)[3]
    if cx is not None and cf is not None and cx != cf:
        raise ValueError(f"input channels does not match filter's input channels, {cx} != {cf}")
    sizes = int_input(output_shape, "output_shape")
    attrs = _attrs(strides, padding, data_format, None, True)
    return make1("Conv2DBackpropInput", (sizes, f, x), attrs, name=name or "conv2d_transpose")


def bias_add(
    value: Any, bias: Any, data_format: str | None = None, name: str | None = None
) -> Tensor:
    """``value + bias`` with the 1-D ``bias`` along the channel (last, for NHWC) dimension.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.nn.bias_add([[1.0, 2.0]], [10.0, 20.0])).tolist()
    [[11.0, 22.0]]
    """
    v, b = operands(value, bias)
    return make1("BiasAdd", (v, tensor(b)), {"data_format": data_format or "NHWC"}, name=name)
