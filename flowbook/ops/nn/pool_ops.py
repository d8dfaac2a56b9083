"""Pooling over NHWC images: MaxPool, AvgPool and their gradients.

The geometry is :mod:`flowbook.kernels.windows`' (shared with the convolutions);
the kernel bodies are :mod:`flowbook.kernels.pool_kernels`' passes over one
strided slice per window cell (a running max or sum; each window's first-max
cell as a byte code beside the running max, scattered cell by cell, with one
write per cell for disjoint windows).  Each op's gradient is declared
beside it:

- MaxPool pads with the lowest value, so padding never wins; MaxPoolGrad
  routes each gradient to the first maximum of its window (row-major, as
  TF's CPU kernel does on ties); MaxPoolGradGrad gathers from the same place.
- AvgPool divides by the number of real (unpadded) cells under each window,
  as TensorFlow does; AvgPoolGrad spreads the gradient back the same way.

    >>> import flowbook as fb
    >>> x = fb.reshape(fb.range(16.0), [1, 4, 4, 1])
    >>> with fb.Session() as s:
    ...     s.run(fb.nn.max_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], "VALID"))[0, :, :, 0].tolist()
    [[5.0, 7.0], [13.0, 15.0]]
"""

from __future__ import annotations

from typing import Any

from flowbook.framework import dtypes
from flowbook.framework.registry import Fusion, OpDef, Out, op
from flowbook.framework.tensor import Tensor
from flowbook.framework.tensor_shape import Shape, fmt, num_elements
from flowbook.kernels.pool_kernels import (
    cells,
    first_max_codes,
    lowest,
    masked,
    max_pool_grad,
    window_max,
    window_sum,
)
from flowbook.kernels.windows import (
    Geometry,
    attrs_of,
    check_padding,
    check_runtime,
    check_static,
    check_window_attr,
    pad_nhwc,
    padding_str,
    rank4,
    scatter_windows,
    static_out,
    window_geometry,
    window_list,
)
from flowbook.ops._builder import make, make1, same_dtype, tensor
from flowbook.ops._shape_inputs import check_int, host_ints
from flowbook.ops.array import array_ops
from flowbook.ops.array.constant_op import partial_shape_value
from flowbook.ops.math.elementwise import FLOAT, REAL, check_dtype

__all__ = ["avg_pool", "max_pool", "max_pool_with_argmax"]


# ------------------------------------------------------------ pool ops
_POOL_ATTRS = ("ksize", "strides", "padding", "data_format")
_HEAVY_ELEMENTS = 1 << 16  # pools on fewer input elements run inline


def _pool_heavy(op: Any) -> bool:
    n = num_elements(op.inputs[-1]._shape)
    return n is None or n >= _HEAVY_ELEMENTS


def _pool_attrs(
    op_type: str, ksize: Any, strides: Any, padding: str, data_format: str = "NHWC"
) -> tuple:
    check_padding(op_type, padding)
    return check_window_attr("ksize", ksize, data_format), check_window_attr(
        "strides", strides, data_format
    )


def _pool_shape(x: Shape, k: tuple[int, ...], s: tuple[int, ...], padding: str) -> Shape:
    xs = rank4("input", x)
    shapes = f"input{fmt(xs)}, ksize {list(k)}"
    oh = static_out(xs[1], k[1], s[1], padding, shapes)
    return (xs[0], oh, static_out(xs[2], k[2], s[2], padding, shapes), xs[3])


def _pool_infer(op_type: str, allowed: frozenset) -> Any:
    def infer(
        value: Tensor, ksize: Any, strides: Any, padding: str, data_format: str = "NHWC"
    ) -> Out:
        check_dtype(value.dtype, allowed, "value")
        k, s = _pool_attrs(op_type, ksize, strides, padding, data_format)
        return Out(value.dtype, _pool_shape(value._shape, k, s, padding))

    return infer


def _geometry(shape: tuple[int, ...], ksize: Any, strides: Any, padding: str) -> tuple:
    k, s = (ksize[1], ksize[2]), (strides[1], strides[2])
    return window_geometry((shape[1], shape[2]), k, s, padding), k, s


def _check_grad(grad: Any, shape: tuple[int, ...], g: Geometry) -> None:
    check_runtime("grad", grad, (shape[0], g.oh, g.ow, shape[3]), "the pooled shape")


def _pool_grad_attrs(op: Any) -> dict[str, Any]:
    return attrs_of(op, _POOL_ATTRS)


# ------------------------------------------------------------ MaxPool
def _max_pool(xp: Any, x: Any, ksize: Any, strides: Any, padding: str, **_: Any) -> Any:
    g, k, s = _geometry(x.shape, ksize, strides, padding)
    return window_max(xp, pad_nhwc(xp, x, g, lowest(xp, x.dtype)), g, k, s)


def _argmax(xp: Any, x: Any, g: Geometry, k: tuple[int, int], s: tuple[int, int]) -> tuple:
    """(The window max, per output cell the flat window index (row-major) of its first max).

    Ties go to the first, as in TF's CPU kernel (``pool_kernels.first_max_codes``); a
    window whose maximum is NaN points at its first cell.
    """
    top, codes = first_max_codes(xp, pad_nhwc(xp, x, g, lowest(xp, x.dtype)), g, k, s)
    arg = codes.astype(xp.int64)
    arg[(arg < 0) | (arg >= k[0] * k[1])] = 0
    return top, arg


def _max_pool_grad(op: Any, grad: Tensor) -> Tensor:
    x, y = op.inputs[0], op.outputs[0]
    return make1("MaxPoolGrad", (x, y, grad), _pool_grad_attrs(op))


op(
    "MaxPool",
    ("input",),
    infer=_pool_infer("MaxPool", REAL),
    attrs=_POOL_ATTRS,
    kernel=_max_pool,
    heavy=_pool_heavy,
    grad=_max_pool_grad,
)


def _max_pool_backprop_infer(op_type: str) -> Any:
    """``infer`` of MaxPoolGrad or MaxPoolGradGrad: the same inputs, checked the same way.

    MaxPoolGrad's grad is pooled and its result shaped like x; MaxPoolGradGrad's
    the other way round.
    """
    grad_grad = op_type == "MaxPoolGradGrad"

    def infer(orig_input: Tensor, orig_output: Tensor, grad: Tensor, **attrs: Any) -> Out:
        names = ("orig_input", "orig_output", "grad")
        dt = same_dtype(op_type, names, orig_input, orig_output, grad)
        check_dtype(dt, REAL, "orig_input")
        k, s = _pool_attrs(op_type, **attrs)
        xs = rank4("orig_input", orig_input._shape)
        pooled = _pool_shape(xs, k, s, attrs["padding"])
        check_static(op_type, "orig_output", orig_output._shape, pooled, "the pooled shape")
        if grad_grad:
            check_static(op_type, "grad", grad._shape, xs, "orig_input")
            return Out(dt, pooled)
        check_static(op_type, "grad", grad._shape, pooled, "the pooled shape")
        return Out(dt, xs)

    return infer


def _max_pool_backprop(op_type: str, kernel: Any, **fields: Any) -> OpDef:
    """Declare MaxPoolGrad or MaxPoolGradGrad (one set of inputs) with its kernel."""
    inputs, infer = ("orig_input", "orig_output", "grad"), _max_pool_backprop_infer(op_type)
    return op(op_type, inputs, _POOL_ATTRS, infer, kernel, heavy=_pool_heavy, **fields)


def _max_pool_grad_kernel(
    xp: Any,
    x: Any,
    y: Any,
    grad: Any,
    ksize: Any,
    strides: Any,
    padding: str,
    relu: bool = False,
    pooled: bool = False,
    **_: Any,
) -> Any:
    """``relu``: ReluGrad(MaxPoolGrad(x, y, grad), x) bit for bit, in one kernel; ``pooled``:
    ``y`` is known to be MaxPool(x), each window's maximum (``_FusedMaxPoolGrad``,
    optimiser-made; ``pool_kernels.max_pool_grad``).  Otherwise, as TF's CPU kernel, the
    maxima are found in ``x`` again and ``y`` gives only a shape."""
    g, k, s = _geometry(x.shape, ksize, strides, padding)
    _check_grad(grad, x.shape, g)
    return max_pool_grad(xp, x, grad, g, k, s, relu, y if pooled else None)


def _max_pool_grad_grad(op: Any, grad: Tensor) -> list[Tensor]:
    x, y, _ = op.inputs
    gg = make1("MaxPoolGradGrad", (x, y, grad), _pool_grad_attrs(op))
    return [array_ops.zeros_like(x), array_ops.zeros_like(y), gg]


_max_pool_backprop(
    "MaxPoolGrad",
    _max_pool_grad_kernel,
    fusion=Fusion(head="_FusedMaxPoolGrad"),
    grad=_max_pool_grad_grad,
)


def _max_pool_grad_grad_kernel(
    xp: Any, x: Any, y: Any, grad: Any, ksize: Any, strides: Any, padding: str, **_: Any
) -> Any:
    g, k, s = _geometry(x.shape, ksize, strides, padding)
    check_runtime("grad", grad, tuple(x.shape), "orig_input")
    top, codes = first_max_codes(xp, pad_nhwc(xp, x, g, lowest(xp, x.dtype)), g, k, s)
    grad_padded = pad_nhwc(xp, grad, g)
    out = xp.zeros(top.shape, dtype=grad.dtype)
    for t, idx in enumerate(cells(g, k, s)):  # the grad at each window's first max
        out += masked(xp, codes == t, grad_padded[idx])
    return out


def _max_pool_grad_grad_grad(op: Any, grad: Tensor) -> list[Tensor]:
    x, y, _ = op.inputs
    back = make1("MaxPoolGrad", (x, y, grad), _pool_grad_attrs(op))
    return [array_ops.zeros_like(x), array_ops.zeros_like(y), back]


_max_pool_backprop("MaxPoolGradGrad", _max_pool_grad_grad_kernel, grad=_max_pool_grad_grad_grad)


# ------------------------------------------------------------ MaxPoolWithArgmax
def _argmax_infer(
    input: Tensor,
    ksize: Any,
    strides: Any,
    padding: str,
    Targmax: Any = dtypes.int64,
    include_batch_in_index: bool = False,
) -> list[Out]:
    check_dtype(input.dtype, REAL, "input")
    if Targmax not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"MaxPoolWithArgmax: Targmax must be int32 or int64, got {Targmax}")
    k, s = _pool_attrs("MaxPoolWithArgmax", ksize, strides, padding)
    shape = _pool_shape(input._shape, k, s, padding)
    return [Out(input.dtype, shape), Out(Targmax, shape)]


def _max_pool_with_argmax(
    xp: Any,
    x: Any,
    ksize: Any,
    strides: Any,
    padding: str,
    Targmax: Any = dtypes.int64,
    include_batch_in_index: bool = False,
) -> tuple[Any, Any]:
    """The pool and, per output cell, where its first maximum is in the flattened input:
    ``(y * W + x) * C + c``, plus ``b * H * W * C`` with ``include_batch_in_index``."""
    g, k, s = _geometry(x.shape, ksize, strides, padding)
    y, arg = _argmax(xp, x, g, k, s)
    n, h, w, c = x.shape
    rows = (xp.arange(g.oh) * s[0] - g.top)[None, :, None, None] + arg // k[1]
    cols = (xp.arange(g.ow) * s[1] - g.left)[None, None, :, None] + arg % k[1]
    flat = (rows * w + cols) * c + xp.arange(c)
    if include_batch_in_index:
        flat = flat + (xp.arange(n) * (h * w * c))[:, None, None, None]
    return y, flat.astype(Targmax.as_numpy_dtype)


def _max_pool_with_argmax_grad(op: Any, grad: Tensor, _: Tensor) -> Tensor:
    attrs = {**attrs_of(op, ("ksize", "strides", "padding")), "data_format": "NHWC"}
    return make1("MaxPoolGrad", (op.inputs[0], op.outputs[0], grad), attrs)


op(
    "MaxPoolWithArgmax",
    ("input",),
    infer=_argmax_infer,
    attrs=("ksize", "strides", "padding", "Targmax", "include_batch_in_index"),
    kernel=_max_pool_with_argmax,
    heavy=_pool_heavy,
    num_outputs=2,
    grad=_max_pool_with_argmax_grad,
)


# ------------------------------------------------------------ AvgPool
def _counts(
    xp: Any, g: Geometry, hw: tuple[int, int], k: tuple[int, int], s: tuple[int, int], dtype: Any
) -> Any:
    """``[OH, OW, 1]``: how many real (unpadded) input cells each window covers."""
    r = xp.arange(g.oh) * s[0] - g.top
    c = xp.arange(g.ow) * s[1] - g.left
    rows = xp.minimum(r + k[0], hw[0]) - xp.maximum(r, 0)
    cols = xp.minimum(c + k[1], hw[1]) - xp.maximum(c, 0)
    return (rows[:, None] * cols[None, :])[:, :, None].astype(dtype)


def _avg_pool(xp: Any, x: Any, ksize: Any, strides: Any, padding: str, **_: Any) -> Any:
    g, k, s = _geometry(x.shape, ksize, strides, padding)
    total = window_sum(xp, pad_nhwc(xp, x, g), g, k, s)
    return total / _counts(xp, g, x.shape[1:3], k, s, x.dtype)


def _avg_pool_grad(op: Any, grad: Tensor) -> Tensor:
    shape = array_ops.shape(op.inputs[0])
    return make1("AvgPoolGrad", (shape, grad), _pool_grad_attrs(op))


op(
    "AvgPool",
    ("value",),
    infer=_pool_infer("AvgPool", FLOAT),
    attrs=_POOL_ATTRS,
    kernel=_avg_pool,
    heavy=_pool_heavy,
    grad=_avg_pool_grad,
)


def _avg_pool_grad_infer(
    orig_input_shape: Tensor,
    grad: Tensor,
    ksize: Any,
    strides: Any,
    padding: str,
    data_format: str = "NHWC",
) -> Out:
    check_int("AvgPoolGrad", "orig_input_shape", orig_input_shape)
    check_dtype(grad.dtype, FLOAT, "grad")
    k, s = _pool_attrs("AvgPoolGrad", ksize, strides, padding, data_format)
    xs = rank4("orig_input_shape", partial_shape_value(orig_input_shape) or (None,) * 4)
    check_static(
        "AvgPoolGrad", "grad", grad._shape, _pool_shape(xs, k, s, padding), "the pooled shape"
    )
    return Out(grad.dtype, xs)


def _avg_pool_grad_kernel(
    xp: Any, orig_input_shape: Any, grad: Any, ksize: Any, strides: Any, padding: str, **_: Any
) -> Any:
    shape = host_ints(orig_input_shape)
    g, k, s = _geometry(shape, ksize, strides, padding)
    _check_grad(grad, shape, g)
    spread = grad / _counts(xp, g, shape[1:3], k, s, grad.dtype)
    return scatter_windows(xp, shape, g, k, s, lambda i, j: spread)


def _avg_pool_grad_grad(op: Any, grad: Tensor) -> list[Tensor | None]:
    return [None, make1("AvgPool", (grad,), _pool_grad_attrs(op))]


op(
    "AvgPoolGrad",
    ("orig_input_shape", "grad"),
    infer=_avg_pool_grad_infer,
    attrs=_POOL_ATTRS,
    kernel=_avg_pool_grad_kernel,
    heavy=_pool_heavy,
    host_inputs=(0,),
    type_attrs={"T": 1},
    grad=_avg_pool_grad_grad,
)


# ------------------------------------------------------------ wrappers
def _pool(
    op_type: str,
    value: Any,
    ksize: Any,
    strides: Any,
    padding: Any,
    data_format: str,
    name: str | None,
) -> Tensor:
    attrs = {
        "ksize": tuple(window_list(ksize, "ksize")),
        "strides": tuple(window_list(strides, "strides")),
        "padding": padding_str(padding),
        "data_format": data_format,
    }
    return make1(op_type, (tensor(value),), attrs, name=name)


def max_pool(
    value: Any,
    ksize: Any,
    strides: Any,
    padding: Any,
    data_format: str = "NHWC",
    name: str | None = None,
) -> Tensor:
    """The maximum of each ``ksize`` window of the NHWC ``value``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     x = fb.placeholder(fb.float32, [None, 28, 28, 32])
    ...     fb.nn.max_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], "SAME").shape.as_list()
    [None, 14, 14, 32]
    """
    return _pool("MaxPool", value, ksize, strides, padding, data_format, name)


def avg_pool(
    value: Any,
    ksize: Any,
    strides: Any,
    padding: Any,
    data_format: str = "NHWC",
    name: str | None = None,
) -> Tensor:
    """The mean of each ``ksize`` window of the NHWC ``value`` (padding not counted).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     x = fb.reshape(fb.range(4.0), [1, 2, 2, 1])
    ...     s.run(fb.nn.avg_pool(x, [1, 2, 2, 1], [1, 1, 1, 1], "SAME"))[0, :, :, 0].tolist()
    [[1.5, 2.0], [2.5, 3.0]]
    """
    return _pool("AvgPool", value, ksize, strides, padding, data_format, name)


def max_pool_with_argmax(
    input: Any,
    ksize: Any,
    strides: Any,
    padding: Any,
    data_format: str = "NHWC",
    Targmax: Any = None,
    name: str | None = None,
    output_dtype: Any = None,
    include_batch_in_index: bool = False,
) -> tuple[Tensor, Tensor]:
    """:func:`max_pool` and the flattened input index of each maximum (``(y * W + x) * C + c``).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     x = fb.reshape(fb.constant([1.0, 4.0, 3.0, 2.0]), [1, 2, 2, 1])
    ...     y, i = fb.nn.max_pool_with_argmax(x, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
    ...     s.run(i).ravel().tolist()
    [1]
    """
    if data_format != "NHWC":
        raise ValueError(f"MaxPoolWithArgmax: data_format must be 'NHWC', got {data_format!r}")
    attrs = {
        "ksize": tuple(window_list(ksize, "ksize")),
        "strides": tuple(window_list(strides, "strides")),
        "padding": padding_str(padding),
        "Targmax": dtypes.as_dtype(output_dtype or Targmax or dtypes.int64),
        "include_batch_in_index": bool(include_batch_in_index),
    }
    op = make("MaxPoolWithArgmax", (tensor(input),), attrs, name=name)
    return op.outputs[0], op.outputs[1]
