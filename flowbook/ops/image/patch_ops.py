"""``tf.extract_image_patches``: every (dilated) window of an NHWC image, flattened into depth.

``ExtractImagePatches`` takes TF1's ``ksizes``, ``strides`` and ``rates``
(each ``[1, rows, cols, 1]``) and ``padding``; a window of ``k`` cells with
rate ``r`` spans ``(k - 1) * r + 1`` input cells, and TensorFlow's padding
arithmetic (:mod:`flowbook.kernels.windows`) is applied to that span.  The kernel
is the shared im2col view of the padded input, every ``r``-th cell kept, laid
out as ``[N, OH, OW, KH * KW * C]`` (row, then column, then channel).  Its
gradient, ``ExtractImagePatchesGrad`` (given the images' sizes as a host int
input, as ``AvgPoolGrad`` is), sums each patch cell back where it
came from (KH*KW slice-adds, col2im); being linear, that op's own gradient
is ``ExtractImagePatches`` again.

    >>> import flowbook as fb, numpy as np
    >>> img = np.arange(16.0).reshape(1, 4, 4, 1)
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     p = fb.extract_image_patches(img, [1, 2, 2, 1], [1, 2, 2, 1], [1, 1, 1, 1], "VALID")
    ...     s.run(p)[0, 0, 1].tolist()
    [2.0, 3.0, 6.0, 7.0]
"""

from __future__ import annotations

from typing import Any

from flowbook.framework.registry import Out, op
from flowbook.framework.tensor import Operation, Tensor
from flowbook.kernels.windows import (
    check_padding,
    check_window_attr,
    pad_nhwc,
    rank4,
    static_out,
    window_geometry,
    windows,
)
from flowbook.ops._builder import make1, tensor
from flowbook.ops._shape_inputs import const_ints, host_ints, int_input
from flowbook.ops.array import array_ops

__all__ = ["extract_image_patches"]

_ATTRS = ("ksizes", "strides", "rates", "padding")


def _span(k: int, r: int) -> int:
    return (k - 1) * r + 1


def _patches_infer(
    images: Tensor, ksizes: Any, strides: Any, rates: Any, padding: str, **_: Any
) -> Out:
    k, s, r = (check_window_attr(w, v) for w, v in zip(_ATTRS, (ksizes, strides, rates)))
    check_padding("ExtractImagePatches", padding)
    n, h, w, c = rank4("images", images._shape)
    where = f"images{list(images._shape or [])}, ksizes {list(k)}, rates {list(r)}"
    oh = static_out(h, _span(k[1], r[1]), s[1], padding, where)
    ow = static_out(w, _span(k[2], r[2]), s[2], padding, where)
    return Out(images.dtype, (n, oh, ow, None if c is None else k[1] * k[2] * c))


def _geometry(shape: tuple, ksizes: Any, strides: Any, rates: Any, padding: str) -> tuple:
    span = (_span(ksizes[1], rates[1]), _span(ksizes[2], rates[2]))
    g = window_geometry((shape[1], shape[2]), span, (strides[1], strides[2]), padding)
    return g, span


def _patches(xp: Any, images: Any, ksizes: Any, strides: Any, rates: Any, padding: str) -> Any:
    g, span = _geometry(images.shape, ksizes, strides, rates, padding)
    view = windows(xp, pad_nhwc(xp, images, g), g, span, (strides[1], strides[2]))
    cells = view[:, :, :, :: rates[1], :: rates[2], :]
    return xp.ascontiguousarray(cells).reshape(*cells.shape[:3], -1)


def _patches_grad_kernel(
    xp: Any, grad: Any, input_sizes: Any, ksizes: Any, strides: Any, rates: Any, padding: str
) -> Any:
    n, h, w, c = shape = host_ints(input_sizes)
    g, _ = _geometry(shape, ksizes, strides, rates, padding)
    parts = grad.reshape(n, g.oh, g.ow, ksizes[1], ksizes[2], c)
    out = xp.zeros((n, h + g.top + g.bottom, w + g.left + g.right, c), grad.dtype)
    for i in range(ksizes[1]):
        for j in range(ksizes[2]):
            top, left = i * rates[1], j * rates[2]
            rows = slice(top, top + strides[1] * (g.oh - 1) + 1, strides[1])
            cols = slice(left, left + strides[2] * (g.ow - 1) + 1, strides[2])
            out[:, rows, cols, :] += parts[:, :, :, i, j, :]
    return xp.ascontiguousarray(out[:, g.top : g.top + h, g.left : g.left + w, :])


def _sizes(sizes: Tensor) -> tuple[int | None, ...]:
    known = const_ints(sizes)
    return (None,) * 4 if known is None else tuple(known)


def _attrs(op: Operation) -> dict[str, Any]:
    return {a: op.attrs[a] for a in _ATTRS}


def _patches_grad(op: Operation, g: Tensor) -> Tensor:
    images = op.inputs[0]
    known = images._shape is not None and None not in images._shape
    sizes = int_input(list(images._shape), "input_sizes") if known else array_ops.shape(images)  # type: ignore[arg-type]
    return make1("ExtractImagePatchesGrad", (g, sizes), _attrs(op))


op("ExtractImagePatches", ("images",), _ATTRS, _patches_infer, _patches, grad=_patches_grad)


def _patches_grad_grad(op: Operation, g: Tensor) -> tuple[Tensor, None]:
    """Linear: the transpose of the transpose; the sizes are ints, with no gradient."""
    return make1("ExtractImagePatches", (g,), _attrs(op)), None


op(
    "ExtractImagePatchesGrad",
    ("grad", "input_sizes"),
    _ATTRS,
    lambda grad, sizes, **_: Out(grad.dtype, _sizes(sizes)),
    _patches_grad_kernel,
    host_inputs=(1,),
    grad=_patches_grad_grad,
)


def extract_image_patches(
    images: Any,
    ksizes: Any = None,
    strides: Any = None,
    rates: Any = None,
    padding: str = "VALID",
    name: str | None = None,
    sizes: Any = None,
) -> Tensor:
    """The ``ksizes`` windows of ``images`` [N, H, W, C] (cells ``rates`` apart, windows
    ``strides`` apart) as ``[N, OH, OW, KH * KW * C]``.

    >>> import flowbook as fb, numpy as np
    >>> with fb.Graph().as_default():
    ...     p = fb.extract_image_patches(np.zeros((2, 5, 5, 3)), [1, 3, 3, 1], [1, 1, 1, 1],
    ...                                  [1, 2, 2, 1], "SAME")
    >>> p.shape.as_list()
    [2, 5, 5, 27]
    """
    attrs = {
        "ksizes": [int(d) for d in (ksizes if ksizes is not None else sizes)],
        "strides": [int(d) for d in strides],
        "rates": [int(d) for d in rates],
        "padding": padding,
    }
    return make1("ExtractImagePatches", (tensor(images),), attrs, name=name)
