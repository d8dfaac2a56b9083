"""Sliding windows over NHWC images, and the pooling ops built on them.

The first half is the window machinery that ``conv_ops`` shares:
:func:`out_size` is TensorFlow's padding arithmetic (``SAME``: ``out =
ceil(in / stride)``, the ``max((out - 1) * stride + k - in, 0)`` padded cells
split with the smaller half before; ``VALID``: ``(in - k) // stride + 1``),
:func:`windows` is im2col without a loop (an ``as_strided`` view
``[N, OH, OW, KH, KW, C]`` of the padded input, which numpy and CuPy both
have) and :func:`scatter_windows` its transpose, col2im, as KH*KW slice-adds
(a loop over the window, never over pixels or images).

The second half declares MaxPool, AvgPool and their gradients:

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

from typing import Any, NamedTuple

from flowbook.errors import InvalidArgumentError
from flowbook.ops import array_ops
from flowbook.ops._builder import make1, same_dtype, tensor
from flowbook.ops.constant_op import partial_shape_value
from flowbook.ops.elementwise import FLOAT, REAL, check_dtype
from flowbook.ops.slicing import check_int, host_ints
from flowbook.registry import Out, register_gradient, register_op
from flowbook.tensor import Tensor
from flowbook.tensor_shape import Shape, fmt, num_elements

__all__ = ["avg_pool", "max_pool"]

PADDINGS = ("SAME", "VALID")


# ------------------------------------------------------------ window geometry
class Geometry(NamedTuple):
    """Where the windows of one spatial layout fall: output size and padding."""

    oh: int  # output rows
    ow: int  # output columns
    top: int  # padded rows before the first input row
    bottom: int
    left: int
    right: int


def out_size(size: int, k: int, stride: int, padding: str) -> tuple[int, int, int]:
    """(output size, pad before, pad after) of one dimension, TensorFlow's arithmetic.

    >>> out_size(5, 3, 2, "SAME"), out_size(4, 3, 2, "SAME"), out_size(5, 3, 2, "VALID")
    ((3, 1, 1), (2, 0, 1), (2, 0, 0))
    """
    if padding == "VALID":
        return (size - k) // stride + 1, 0, 0
    out = -(-size // stride)
    total = max((out - 1) * stride + k - size, 0)
    return out, total // 2, total - total // 2


def window_geometry(
    hw: tuple[int, int], k: tuple[int, int], s: tuple[int, int], padding: str
) -> Geometry:
    """The Geometry of ``hw`` windowed by ``k`` with strides ``s``; InvalidArgumentError if empty."""
    if padding == "VALID" and (hw[0] < k[0] or hw[1] < k[1]):
        raise InvalidArgumentError(
            None, None, f"window {list(k)} is larger than the VALID-padded input {list(hw)}"
        )
    oh, top, bottom = out_size(hw[0], k[0], s[0], padding)
    ow, left, right = out_size(hw[1], k[1], s[1], padding)
    return Geometry(oh, ow, top, bottom, left, right)


def pad_nhwc(xp: Any, x: Any, g: Geometry, value: Any = 0) -> Any:
    """``x`` with ``g``'s padding around its rows and columns (``x`` itself when none)."""
    if not (g.top or g.bottom or g.left or g.right):
        return x
    pads = ((0, 0), (g.top, g.bottom), (g.left, g.right), (0, 0))
    return xp.pad(x, pads, mode="constant", constant_values=value)


def windows(xp: Any, padded: Any, g: Geometry, k: tuple[int, int], s: tuple[int, int]) -> Any:
    """A strided view ``[N, OH, OW, KH, KW, C]`` of every window (no copy: im2col on demand)."""
    n, _, _, c = padded.shape
    s0, s1, s2, s3 = padded.strides
    return xp.lib.stride_tricks.as_strided(
        padded,
        shape=(n, g.oh, g.ow, k[0], k[1], c),
        strides=(s0, s1 * s[0], s2 * s[1], s1, s2, s3),
    )


def scatter_windows(
    xp: Any, shape: tuple[int, ...], g: Geometry, k: tuple[int, int], s: tuple[int, int], part: Any
) -> Any:
    """Sum window contributions back onto an NHWC array of ``shape`` (col2im, KH*KW slice-adds).

    ``part(i, j)`` gives the ``[N, OH, OW, C]`` values that window cell (i, j) sends back.
    """
    n, h, w, c = shape
    out = None
    for i in range(k[0]):
        for j in range(k[1]):
            v = part(i, j)
            if out is None:
                full = (n, h + g.top + g.bottom, w + g.left + g.right, c)
                out = xp.zeros(full, dtype=v.dtype)
            rows = slice(i, i + s[0] * (g.oh - 1) + 1, s[0])
            cols = slice(j, j + s[1] * (g.ow - 1) + 1, s[1])
            out[:, rows, cols, :] += v
    if not (g.top or g.bottom or g.left or g.right):
        return out
    return xp.ascontiguousarray(out[:, g.top : g.top + h, g.left : g.left + w, :])


# ------------------------------------------------------------ static checks
def check_padding(op_type: str, padding: Any) -> str:
    """The padding attr, or TensorFlow's ValueError naming the allowed values."""
    if padding not in PADDINGS:
        raise ValueError(
            f"Attr 'padding' of '{op_type}' Op passed string '{padding}' not in: \"SAME\", \"VALID\"."
        )
    return padding


def check_window_attr(what: str, values: Any, data_format: str = "NHWC") -> tuple[int, ...]:
    """A ``strides``/``ksize`` attr: 4 positive ints with 1 for batch and depth."""
    if data_format != "NHWC":
        raise ValueError(
            f"data_format must be 'NHWC' (flowbook has no NCHW kernels), got {data_format!r}"
        )
    v = tuple(int(d) for d in values)
    if len(v) != 4:
        raise ValueError(f"{what} must have 4 elements ([1, rows, cols, 1]), got {list(v)}")
    if v[0] != 1 or v[3] != 1:
        raise ValueError(
            f"{what} {list(v)}: windows and strides over the batch and depth dimensions are "
            "not supported (use [1, rows, cols, 1])"
        )
    if v[1] < 1 or v[2] < 1:
        raise ValueError(f"{what} must be positive, got {list(v)}")
    return v


def rank4(what: str, shape: Shape) -> tuple[int | None, ...]:
    """``shape`` as 4 dims (all unknown for an unknown rank); ValueError for another rank."""
    if shape is None:
        return (None,) * 4
    if len(shape) != 4:
        raise ValueError(f"Shape must be rank 4 but is rank {len(shape)} for {what}{fmt(shape)}")
    return shape


def static_out(
    size: int | None, k: int | None, stride: int, padding: str, shapes: str
) -> int | None:
    """One output dim when known; TensorFlow's ValueError for an empty VALID window."""
    if size is None or (k is None and padding == "VALID"):
        return None
    if padding == "SAME":
        return -(-size // stride)
    if size < k:  # type: ignore[operator]
        raise ValueError(
            f"Negative dimension size caused by subtracting {k} from {size} ({shapes})"
        )
    return (size - k) // stride + 1  # type: ignore[operator]


def window_list(values: Any, what: str) -> list[int]:
    """TF's ``_get_sequence``: an int or 1-, 2- or 4-list as the 4-list ``[1, rows, cols, 1]``."""
    v = [int(values)] if isinstance(values, int) else [int(d) for d in values]
    if len(v) == 1:
        return [1, v[0], v[0], 1]
    if len(v) == 2:
        return [1, v[0], v[1], 1]
    if len(v) == 4:
        return v
    raise ValueError(f"{what} should be of length 1, 2 or 4 but was {len(v)}: {v}")


def padding_str(padding: Any) -> Any:
    return padding.decode() if isinstance(padding, bytes) else padding


# ------------------------------------------------------------ pool ops
_POOL_ATTRS = ("ksize", "strides", "padding", "data_format")
_HEAVY_ELEMENTS = 1 << 16  # pools on fewer input elements run inline


def _pool_heavy(op: Any) -> bool:
    n = num_elements(op.inputs[-1]._shape)
    return n is None or n >= _HEAVY_ELEMENTS


def _pool_attrs(op_type: str, ksize: Any, strides: Any, padding: str, data_format: str) -> tuple:
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
    want = (shape[0], g.oh, g.ow, shape[3])
    if tuple(grad.shape) != want:
        raise InvalidArgumentError(
            None, None, f"grad{fmt(tuple(grad.shape))} does not match the pooled shape {fmt(want)}"
        )


def _lowest(xp: Any, dtype: Any) -> Any:
    return -xp.inf if dtype.kind == "f" else xp.iinfo(dtype).min


def _pool_grad_attrs(op: Any) -> dict[str, Any]:
    return {a: op.attrs[a] for a in _POOL_ATTRS if a in op.attrs}


# ------------------------------------------------------------ MaxPool
@register_op("MaxPool", ("input",), _pool_infer("MaxPool", REAL), _POOL_ATTRS, heavy=_pool_heavy)
def _max_pool(xp: Any, x: Any, ksize: Any, strides: Any, padding: str, **_: Any) -> Any:
    g, k, s = _geometry(x.shape, ksize, strides, padding)
    return windows(xp, pad_nhwc(xp, x, g, _lowest(xp, x.dtype)), g, k, s).max(axis=(3, 4))


def _argmax(xp: Any, x: Any, g: Geometry, k: tuple[int, int], s: tuple[int, int]) -> Any:
    """Per output cell, the flat window index (row-major) of its first maximum.

    The window max, then a backward pass over the KH*KW window cells keeping
    the earliest one equal to it: ties go to the first, as in TF's CPU kernel.
    """
    w = windows(xp, pad_nhwc(xp, x, g, _lowest(xp, x.dtype)), g, k, s)
    top = w.max(axis=(3, 4))
    arg = xp.zeros(top.shape, dtype=xp.int32)
    for idx in range(k[0] * k[1] - 1, -1, -1):
        arg = xp.where(w[:, :, :, idx // k[1], idx % k[1], :] == top, xp.int32(idx), arg)
    return arg


@register_gradient("MaxPool")
def _max_pool_grad(op: Any, grad: Tensor) -> Tensor:
    x, y = op.inputs[0], op.outputs[0]
    return make1("MaxPoolGrad", (x, y, grad), _pool_grad_attrs(op))


def _max_pool_grad_infer(
    orig_input: Tensor,
    orig_output: Tensor,
    grad: Tensor,
    ksize: Any,
    strides: Any,
    padding: str,
    data_format: str = "NHWC",
) -> Out:
    dt = same_dtype(
        "MaxPoolGrad", ("orig_input", "orig_output", "grad"), orig_input, orig_output, grad
    )
    check_dtype(dt, REAL, "orig_input")
    k, s = _pool_attrs("MaxPoolGrad", ksize, strides, padding, data_format)
    pooled = _pool_shape(orig_input._shape, k, s, padding)
    for what, t in (("orig_output", orig_output), ("grad", grad)):
        got = rank4(what, t._shape)
        if any(a is not None and b is not None and a != b for a, b in zip(got, pooled)):
            raise ValueError(f"{what}{fmt(got)} does not match the pooled shape {fmt(pooled)}")
    return Out(dt, rank4("orig_input", orig_input._shape))


@register_op(
    "MaxPoolGrad",
    ("orig_input", "orig_output", "grad"),
    _max_pool_grad_infer,
    _POOL_ATTRS,
    heavy=_pool_heavy,
)
def _max_pool_grad_kernel(
    xp: Any, x: Any, y: Any, grad: Any, ksize: Any, strides: Any, padding: str, **_: Any
) -> Any:
    g, k, s = _geometry(x.shape, ksize, strides, padding)
    _check_grad(grad, x.shape, g)
    arg = _argmax(xp, x, g, k, s)
    zero = xp.zeros((), dtype=grad.dtype)
    return scatter_windows(
        xp, x.shape, g, k, s, lambda i, j: xp.where(arg == i * k[1] + j, grad, zero)
    )


@register_gradient("MaxPoolGrad")
def _max_pool_grad_grad(op: Any, grad: Tensor) -> list[Tensor]:
    x, y, _ = op.inputs
    gg = make1("MaxPoolGradGrad", (x, y, grad), _pool_grad_attrs(op))
    return [array_ops.zeros_like(x), array_ops.zeros_like(y), gg]


def _max_pool_grad_grad_infer(
    orig_input: Tensor,
    orig_output: Tensor,
    grad: Tensor,
    ksize: Any,
    strides: Any,
    padding: str,
    data_format: str = "NHWC",
) -> Out:
    dt = same_dtype(
        "MaxPoolGradGrad", ("orig_input", "orig_output", "grad"), orig_input, orig_output, grad
    )
    check_dtype(dt, REAL, "orig_input")
    k, s = _pool_attrs("MaxPoolGradGrad", ksize, strides, padding, data_format)
    xs = rank4("orig_input", orig_input._shape)
    gs = rank4("grad", grad._shape)
    if any(a is not None and b is not None and a != b for a, b in zip(xs, gs)):
        raise ValueError(f"grad{fmt(gs)} must have the shape of orig_input{fmt(xs)}")
    return Out(dt, _pool_shape(xs, k, s, padding))


@register_op(
    "MaxPoolGradGrad",
    ("orig_input", "orig_output", "grad"),
    _max_pool_grad_grad_infer,
    _POOL_ATTRS,
    heavy=_pool_heavy,
)
def _max_pool_grad_grad_kernel(
    xp: Any, x: Any, y: Any, grad: Any, ksize: Any, strides: Any, padding: str, **_: Any
) -> Any:
    g, k, s = _geometry(x.shape, ksize, strides, padding)
    if tuple(grad.shape) != tuple(x.shape):
        raise InvalidArgumentError(
            None, None, f"grad{fmt(grad.shape)} must match orig_input{fmt(x.shape)}"
        )
    arg = _argmax(xp, x, g, k, s)
    n, _, _, c = x.shape
    gw = windows(xp, pad_nhwc(xp, grad, g), g, k, s).reshape(n, g.oh, g.ow, k[0] * k[1], c)
    return xp.take_along_axis(gw, arg[:, :, :, None, :], axis=3)[:, :, :, 0, :]


@register_gradient("MaxPoolGradGrad")
def _max_pool_grad_grad_grad(op: Any, grad: Tensor) -> list[Tensor]:
    x, y, _ = op.inputs
    back = make1("MaxPoolGrad", (x, y, grad), _pool_grad_attrs(op))
    return [array_ops.zeros_like(x), array_ops.zeros_like(y), back]


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


@register_op("AvgPool", ("value",), _pool_infer("AvgPool", FLOAT), _POOL_ATTRS, heavy=_pool_heavy)
def _avg_pool(xp: Any, x: Any, ksize: Any, strides: Any, padding: str, **_: Any) -> Any:
    g, k, s = _geometry(x.shape, ksize, strides, padding)
    total = windows(xp, pad_nhwc(xp, x, g), g, k, s).sum(axis=(3, 4))
    return total / _counts(xp, g, x.shape[1:3], k, s, x.dtype)


@register_gradient("AvgPool")
def _avg_pool_grad(op: Any, grad: Tensor) -> Tensor:
    shape = array_ops.shape(op.inputs[0])
    return make1("AvgPoolGrad", (shape, grad), _pool_grad_attrs(op))


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
    pooled, gs = _pool_shape(xs, k, s, padding), rank4("grad", grad._shape)
    if any(a is not None and b is not None and a != b for a, b in zip(gs, pooled)):
        raise ValueError(f"grad{fmt(gs)} does not match the pooled shape {fmt(pooled)}")
    return Out(grad.dtype, xs)


@register_op(
    "AvgPoolGrad",
    ("orig_input_shape", "grad"),
    _avg_pool_grad_infer,
    _POOL_ATTRS,
    heavy=_pool_heavy,
    host_inputs=(0,),
)
def _avg_pool_grad_kernel(
    xp: Any, orig_input_shape: Any, grad: Any, ksize: Any, strides: Any, padding: str, **_: Any
) -> Any:
    shape = host_ints(orig_input_shape)
    g, k, s = _geometry(shape, ksize, strides, padding)
    _check_grad(grad, shape, g)
    spread = grad / _counts(xp, g, shape[1:3], k, s, grad.dtype)
    return scatter_windows(xp, shape, g, k, s, lambda i, j: spread)


@register_gradient("AvgPoolGrad")
def _avg_pool_grad_grad(op: Any, grad: Tensor) -> list[Tensor | None]:
    return [None, make1("AvgPool", (grad,), _pool_grad_attrs(op))]


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
