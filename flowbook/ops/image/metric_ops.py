"""Image measures as TF composes them: ``total_variation``, ``image_gradients``,
``sobel_edges``, ``psnr`` and ``ssim``.  None declares an op: each is built of
slices, reductions and a depthwise convolution, so each is differentiable.

- ``total_variation``: the sum of absolute differences of neighbouring
  pixels, down and across, per image (a scalar for one image).
- ``image_gradients``: the forward differences ``dy`` and ``dx`` of a batch,
  zero in the last row and column, the input's shape.
- ``sobel_edges``: the 3x3 Sobel filters (dy, then dx) by depthwise
  convolution of the image padded by reflection, ``[n, h, w, c, 2]``.
- ``psnr``: ``20 log10(max_val) - 10 log10(mse)`` per image.
- ``ssim``: the mean of luminance times contrast-structure over a
  ``filter_size`` square Gaussian window (``filter_sigma``), valid positions only,
  with ``c1 = (k1 max_val)^2`` and ``c2 = (k2 max_val)^2``; the images are
  converted to float32 by ``convert_image_dtype`` first.

    >>> import flowbook as fb, numpy as np
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.image.total_variation(np.array([[[0.0], [1.0]], [[1.0], [3.0]]])))
    np.float64(6.0)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowbook.framework import dtypes
from flowbook.framework.graph import name_scope
from flowbook.framework.tensor import Tensor
from flowbook.ops._builder import tensor
from flowbook.ops.array import array_ops
from flowbook.ops.image.color_ops import convert_image_dtype
from flowbook.ops.math import math_ops
from flowbook.ops.nn import nn_conv

__all__ = ["image_gradients", "psnr", "sobel_edges", "ssim", "total_variation"]


def total_variation(images: Any, name: str | None = None) -> Tensor:
    """Sum of absolute neighbour differences: per image of a batch, or a scalar for one."""
    with name_scope(name, "total_variation", [images]):
        images = tensor(images)
        rank = len(images._shape or ())
        if rank not in (3, 4):
            raise ValueError("'images' must be either 3 or 4-dimensional.")
        lead = [slice(None)] * (rank - 3)
        down = math_ops.subtract(images[(*lead, slice(1, None))], images[(*lead, slice(None, -1))])
        across = math_ops.subtract(
            images[(*lead, slice(None), slice(1, None))],
            images[(*lead, slice(None), slice(None, -1))],
        )
        axes = [-3, -2, -1]
        return math_ops.add(
            math_ops.reduce_sum(math_ops.abs(down), axis=axes),
            math_ops.reduce_sum(math_ops.abs(across), axis=axes),
        )


def image_gradients(image: Any) -> tuple[Tensor, Tensor]:
    """``(dy, dx)``: forward differences of a batch [n, h, w, c], zero at the far edges."""
    image = tensor(image)
    if len(image._shape or ()) != 4:
        raise ValueError("image_gradients expects a 4D tensor [batch_size, h, w, d]")
    with name_scope(None, "image_gradients", [image]):
        dy = math_ops.subtract(image[:, 1:], image[:, :-1])
        dx = math_ops.subtract(image[:, :, 1:], image[:, :, :-1])
        dy = array_ops.pad(dy, [[0, 0], [0, 1], [0, 0], [0, 0]])
        dx = array_ops.pad(dx, [[0, 0], [0, 0], [0, 1], [0, 0]])
        return dy, dx


def sobel_edges(image: Any) -> Tensor:
    """The Sobel responses (dy, dx) of each channel: ``[n, h, w, c, 2]``."""
    with name_scope(None, "sobel_edges", [image]):
        image = tensor(image)
        shape = image._shape
        if shape is None or len(shape) != 4 or shape[-1] is None:
            raise ValueError("sobel_edges needs a 4-D image with known channels")
        c = int(shape[-1])
        ky = np.array([[-1, -2, -1], [0, 0, 0], [1, 2, 1]], np.float64)
        kernels = np.stack([ky, ky.T], axis=-1)  # [3, 3, 2]
        filt = np.tile(kernels[:, :, None, :], (1, 1, c, 1)).astype(image.dtype.np)
        padded = array_ops.pad(image, [[0, 0], [1, 1], [1, 1], [0, 0]], mode="REFLECT")
        out = nn_conv.depthwise_conv2d(padded, filt, [1, 1, 1, 1], "VALID")
        s = array_ops.shape(image)
        return array_ops.reshape(out, array_ops.concat([s, [2]], 0))


def psnr(a: Any, b: Any, max_val: Any, name: str | None = None) -> Tensor:
    """Peak signal-to-noise ratio of ``a`` and ``b`` per image, in decibels."""
    with name_scope(name, "PSNR", [a, b]):
        a, b = tensor(a), tensor(b)
        top = math_ops.cast(max_val, dtypes.float32)
        a = convert_image_dtype(a, dtypes.float32)
        b = convert_image_dtype(b, dtypes.float32)
        mse = math_ops.reduce_mean(math_ops.square(math_ops.subtract(a, b)), axis=[-3, -2, -1])
        ten = np.float32(10 / np.log(10))
        peak = math_ops.divide(math_ops.multiply(20.0, math_ops.log(top)), np.float32(np.log(10)))
        return math_ops.subtract(peak, math_ops.multiply(ten, math_ops.log(mse)), name="psnr")


def _gauss(size: int, sigma: float) -> np.ndarray:
    coords = np.arange(size, dtype=np.float32) - np.float32(size - 1) / 2
    g = coords**2 * np.float32(-0.5 / sigma**2)
    g = (g[None, :] + g[:, None]).reshape(-1)
    g = np.exp(g - g.max())
    return (g / g.sum()).reshape(size, size, 1, 1).astype(np.float32)


def ssim(
    img1: Any,
    img2: Any,
    max_val: Any,
    filter_size: int = 11,
    filter_sigma: float = 1.5,
    k1: float = 0.01,
    k2: float = 0.03,
) -> Tensor:
    """Structural similarity of two batches (or images), per image, channels averaged."""
    with name_scope(None, "SSIM", [img1, img2]):
        x = convert_image_dtype(tensor(img1), dtypes.float32)
        y = convert_image_dtype(tensor(img2), dtypes.float32)
        shape = x._shape
        if shape is None or None in shape[-3:]:
            raise ValueError("ssim needs the images' shapes known")
        c = int(shape[-1])  # type: ignore[arg-type]
        filt = np.tile(_gauss(filter_size, filter_sigma), (1, 1, c, 1))
        top = math_ops.cast(max_val, dtypes.float32)
        c1 = math_ops.square(math_ops.multiply(k1, top))
        c2 = math_ops.square(math_ops.multiply(k2, top))
        batched = len(shape) == 4

        def blur(t: Tensor) -> Tensor:
            t = t if batched else array_ops.expand_dims(t, 0)
            return nn_conv.depthwise_conv2d(t, filt, [1, 1, 1, 1], "VALID")

        mx, my = blur(x), blur(y)
        num0 = math_ops.multiply(math_ops.multiply(mx, my), 2.0)
        den0 = math_ops.add(math_ops.square(mx), math_ops.square(my))
        luminance = math_ops.divide(math_ops.add(num0, c1), math_ops.add(den0, c1))
        num1 = math_ops.multiply(blur(math_ops.multiply(x, y)), 2.0)
        den1 = blur(math_ops.add(math_ops.square(x), math_ops.square(y)))
        cs = math_ops.divide(
            math_ops.add(math_ops.subtract(num1, num0), c2),
            math_ops.add(math_ops.subtract(den1, den0), c2),
        )
        per_channel = math_ops.reduce_mean(math_ops.multiply(luminance, cs), axis=[-3, -2])
        out = math_ops.reduce_mean(per_channel, axis=[-1])
        return out if batched else array_ops.squeeze(out, [0])
