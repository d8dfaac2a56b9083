"""Colour: TF1's colour-space conversions, adjustments and ``convert_image_dtype``.

Where TensorFlow has a kernel, so does flowbook: ``RGBToHSV``, ``HSVToRGB``,
``AdjustContrastv2``, ``AdjustHue`` and ``AdjustSaturation`` (each on the
last axis, 3 channels, float).  HSV is TF's: hue in [0, 1) (0 for grays),
saturation ``range / max`` (0 for black), value the max; back, the hue's
sextant picks the channel order.  Hue and saturation adjust in HSV and come
back; contrast scales each channel's distance from its mean over the image.

The rest is TF's composition of other ops: brightness adds, gamma is
``gain * x ** gamma``, grayscale and YUV/YIQ are dot products with TF's
weights on the channel axis, ``per_image_standardization`` divides by the
standard deviation bounded below by ``1 / sqrt(pixels)``.  An integer image
given to an adjustment is converted to float32 first and back after, by
``convert_image_dtype``: integers to floats scale by ``1 / max``, floats to
integers by ``max + 0.5`` (``saturate`` clamps before the cast), integers to
integers shift by the ratio of the two ranges.  ``random_*`` draw their
factor with ``random_uniform`` (the op seed by TF's rules).

    >>> import flowbook as fb, numpy as np
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.image.rgb_to_hsv([[1.0, 0.5, 0.0]])).tolist()
    [[0.0833333358168602, 1.0, 1.0]]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowbook.framework import dtypes
from flowbook.framework.errors import InvalidArgumentError
from flowbook.framework.graph import name_scope
from flowbook.framework.registry import NOT_DIFFERENTIABLE, Out, op
from flowbook.framework.tensor import Operation, Tensor
from flowbook.ops._builder import make1, tensor
from flowbook.ops.array import array_ops
from flowbook.ops.linalg import einsum_ops
from flowbook.ops.math import clip_ops, math_ops
from flowbook.ops.math.elementwise import FLOAT, check_dtype
from flowbook.ops.random import random_ops

__all__ = [
    "adjust_brightness",
    "adjust_contrast",
    "adjust_gamma",
    "adjust_hue",
    "adjust_saturation",
    "convert_image_dtype",
    "grayscale_to_rgb",
    "hsv_to_rgb",
    "per_image_standardization",
    "random_brightness",
    "random_contrast",
    "random_hue",
    "random_saturation",
    "rgb_to_grayscale",
    "rgb_to_hsv",
    "rgb_to_yiq",
    "rgb_to_yuv",
    "yiq_to_rgb",
    "yuv_to_rgb",
]

_GRAY = [0.2989, 0.5870, 0.1140]
_RGB_TO_YUV = [
    [0.299, -0.14714119, 0.61497538],
    [0.587, -0.28886916, -0.51496512],
    [0.114, 0.43601035, -0.10001026],
]
_YUV_TO_RGB = [[1, 1, 1], [0, -0.394642334, 2.03206185], [1.13988303, -0.58062185, 0]]
_RGB_TO_YIQ = [
    [0.299, 0.59590059, 0.2115],
    [0.587, -0.27455667, -0.52273617],
    [0.114, -0.32134392, 0.31119955],
]
_YIQ_TO_RGB = [
    [1, 1, 1],
    [0.95598634, -0.27201283, -1.10674021],
    [0.6208248, -0.64720424, 1.70423049],
]


# ------------------------------------------------------------------ HSV kernels
def _to_hsv(xp: Any, rgb: Any) -> Any:
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    value = xp.maximum(xp.maximum(r, g), b)
    spread = value - xp.minimum(xp.minimum(r, g), b)
    one = rgb.dtype.type(1)
    with np.errstate(divide="ignore", invalid="ignore"):
        sat = xp.where(value > 0, spread / value, 0)
        norm = one / (6 * spread)
    hue = xp.where(
        r == value,
        norm * (g - b),
        xp.where(g == value, norm * (b - r) + one * 2 / 6, norm * (r - g) + one * 4 / 6),
    )
    hue = xp.where(spread > 0, hue, 0)
    hue = xp.where(hue < 0, hue + one, hue)
    return xp.stack([hue, sat, value], axis=-1).astype(rgb.dtype)


def _to_rgb(xp: Any, hsv: Any) -> Any:
    h, s, v = hsv[..., 0], hsv[..., 1], hsv[..., 2]
    c = s * v
    m = v - c
    dh = h * 6
    sextant = xp.floor(dh)
    x = c * (1 - xp.abs(xp.fmod(dh, 2) - 1))
    zero = xp.zeros_like(c)
    table = [(c, x, zero), (x, c, zero), (zero, c, x), (zero, x, c), (x, zero, c), (c, zero, x)]
    out = [zero, zero, zero]
    for k, channels in enumerate(table):
        hit = sextant == k
        out = [xp.where(hit, new, old) for new, old in zip(channels, out)]
    return xp.stack([o + m for o in out], axis=-1).astype(hsv.dtype)


def _color_infer(op_type: str) -> Any:
    def infer(images: Tensor, *scalars: Tensor) -> Out:
        check_dtype(images.dtype, FLOAT, "images")
        shape = images._shape
        if shape is not None and (not shape or shape[-1] not in (None, 3)):
            raise ValueError(f"{op_type}: the last dimension must be 3, got shape {images.shape}")
        return Out(images.dtype, shape)

    return infer


def _checked(op_type: str, images: Any) -> None:
    if images.ndim < 1 or images.shape[-1] != 3:
        raise InvalidArgumentError(
            None, None, f"{op_type}: the last dimension must be 3, got {list(images.shape)}"
        )


def _rgb_to_hsv(xp: Any, images: Any) -> Any:
    _checked("RGBToHSV", images)
    return _to_hsv(xp, images)


def _hsv_to_rgb(xp: Any, images: Any) -> Any:
    _checked("HSVToRGB", images)
    return _to_rgb(xp, images)


def _adjust_hue(xp: Any, images: Any, delta: Any) -> Any:
    _checked("AdjustHue", images)
    hsv = _to_hsv(xp, images)
    hue = xp.fmod(hsv[..., 0] + delta.astype(images.dtype), 1)
    hue = xp.where(hue < 0, hue + 1, hue)
    return _to_rgb(xp, xp.stack([hue, hsv[..., 1], hsv[..., 2]], axis=-1))


def _adjust_saturation(xp: Any, images: Any, scale: Any) -> Any:
    _checked("AdjustSaturation", images)
    hsv = _to_hsv(xp, images)
    sat = xp.clip(hsv[..., 1] * scale.astype(images.dtype), 0, 1)
    return _to_rgb(xp, xp.stack([hsv[..., 0], sat, hsv[..., 2]], axis=-1))


def _adjust_contrast(xp: Any, images: Any, factor: Any) -> Any:
    if images.ndim < 3:
        raise InvalidArgumentError(None, None, "AdjustContrastv2: images must be at least 3-D")
    mean = images.mean(axis=(-3, -2), keepdims=True, dtype=images.dtype)
    return ((images - mean) * factor.astype(images.dtype) + mean).astype(images.dtype)


# no gradients: TensorFlow has none for AdjustHue, AdjustSaturation and HSVToRGB; its
# RGBToHSV gradient is not here yet (docs/tf1-compatibility.md)
op("RGBToHSV", ("images",), (), _color_infer("RGBToHSV"), _rgb_to_hsv, grad=NOT_DIFFERENTIABLE)
op("HSVToRGB", ("images",), (), _color_infer("HSVToRGB"), _hsv_to_rgb, grad=NOT_DIFFERENTIABLE)
op(
    "AdjustHue",
    ("images", "delta"),
    (),
    _color_infer("AdjustHue"),
    _adjust_hue,
    grad=NOT_DIFFERENTIABLE,
)
op(
    "AdjustSaturation",
    ("images", "scale"),
    (),
    _color_infer("AdjustSaturation"),
    _adjust_saturation,
    grad=NOT_DIFFERENTIABLE,
)


def _contrast_infer(images: Tensor, factor: Tensor) -> Out:
    check_dtype(images.dtype, FLOAT, "images")
    return Out(images.dtype, images._shape)


def _contrast_grad(op: Operation, g: Tensor) -> tuple[Tensor, Tensor]:
    """d/dx: g*f + (1-f)*mean(g) per channel; d/df: sum(g * (x - mean))."""
    x, f = op.inputs
    f = math_ops.cast(f, x.dtype)
    mean_g = math_ops.reduce_mean(g, axis=[-3, -2], keepdims=True)
    dx = math_ops.add(math_ops.multiply(g, f), math_ops.multiply(math_ops.subtract(1.0, f), mean_g))
    centred = math_ops.subtract(x, math_ops.reduce_mean(x, axis=[-3, -2], keepdims=True))
    df = math_ops.cast(math_ops.reduce_sum(math_ops.multiply(g, centred)), op.inputs[1].dtype)
    return dx, df


op(
    "AdjustContrastv2",
    ("images", "contrast_factor"),
    (),
    _contrast_infer,
    _adjust_contrast,
    grad=_contrast_grad,
)


# ------------------------------------------------------------------ convert_image_dtype
def _int_max(dt: dtypes.DType) -> int:
    return int(np.iinfo(dt.np).max)


def convert_image_dtype(
    image: Any, dtype: Any, saturate: bool = False, name: str | None = None
) -> Tensor:
    """``image`` as ``dtype``, its values scaled between the types' ranges (TF1's rules).

    Floats are in [0, 1], integers in [0, max]; float to int scales by
    ``max + 0.5`` (with ``saturate``, clamped to the type first).
    """
    image = tensor(image, name="image")
    dtype = dtypes.as_dtype(dtype)
    with name_scope(name, "convert_image", [image]):
        src = image.dtype
        if src == dtype:
            return array_ops.identity(image, name=name)
        if src.is_integer and dtype.is_integer:
            top_in, top_out = _int_max(src), _int_max(dtype)
            if top_in > top_out:
                scale = (top_in + 1) // (top_out + 1)
                return math_ops.cast(math_ops.floordiv(image, scale), dtype)
            widened = math_ops.cast(image, dtype)
            return math_ops.multiply(widened, (top_out + 1) // (top_in + 1))
        if src.is_floating and dtype.is_floating:
            return math_ops.cast(image, dtype)
        if src.is_integer:
            return math_ops.multiply(math_ops.cast(image, dtype), 1.0 / _int_max(src))
        scaled = math_ops.multiply(image, _int_max(dtype) + 0.5)
        if saturate:
            low, high = float(np.iinfo(dtype.np).min), float(_int_max(dtype))
            scaled = clip_ops.clip_by_value(scaled, low, high)
        return math_ops.cast(scaled, dtype)


def _as_float(image: Any) -> tuple[Tensor, dtypes.DType]:
    image = tensor(image, name="image")
    orig = image.dtype
    if orig in (dtypes.float16, dtypes.float32, dtypes.float64):
        return image, orig
    return convert_image_dtype(image, dtypes.float32), orig


def _back(image: Tensor, orig: dtypes.DType) -> Tensor:
    return convert_image_dtype(image, orig, saturate=True)


# ------------------------------------------------------------------ wrappers
def rgb_to_hsv(images: Any, name: str | None = None) -> Tensor:
    """RGB (last axis) to HSV, all in [0, 1]."""
    return make1("RGBToHSV", (tensor(images),), name=name or "RGBToHSV")


def hsv_to_rgb(images: Any, name: str | None = None) -> Tensor:
    """HSV (last axis) to RGB."""
    return make1("HSVToRGB", (tensor(images),), name=name or "HSVToRGB")


def _float_op(op_type: str, image: Any, scalar: Any, name: str) -> Tensor:
    with name_scope(None, name, [image]):
        flt, orig = _as_float(image)
        out = make1(op_type, (flt, tensor(scalar, dtypes.float32)))
        return _back(out, orig)


def adjust_hue(image: Any, delta: float, name: str | None = None) -> Tensor:
    """Shift the hue by ``delta`` (in [-1, 1], a whole turn being 1)."""
    return _float_op("AdjustHue", image, delta, name or "adjust_hue")


def adjust_saturation(image: Any, saturation_factor: float, name: str | None = None) -> Tensor:
    """Scale the saturation by ``saturation_factor`` (clamped to [0, 1])."""
    return _float_op("AdjustSaturation", image, saturation_factor, name or "adjust_saturation")


def adjust_contrast(images: Any, contrast_factor: float) -> Tensor:
    """``(x - mean) * contrast_factor + mean``, the mean per image and channel."""
    return _float_op("AdjustContrastv2", images, contrast_factor, "adjust_contrast")


def adjust_brightness(image: Any, delta: float) -> Tensor:
    """Add ``delta`` to every value (integer images: in float, then saturated back)."""
    with name_scope(None, "adjust_brightness", [image]):
        flt, orig = _as_float(image)
        return _back(math_ops.add(flt, math_ops.cast(delta, flt.dtype)), orig)


def adjust_gamma(image: Any, gamma: float = 1, gain: float = 1) -> Tensor:
    """``gain * image ** gamma`` (integer images: in float, then saturated back)."""
    with name_scope(None, "adjust_gamma", [image]):
        flt, orig = _as_float(image)
        g = math_ops.cast(gamma, flt.dtype)
        out = math_ops.multiply(math_ops.cast(gain, flt.dtype), math_ops.pow(flt, g))
        return _back(out, orig)


def _mix(images: Any, kernel: list, name: str) -> Tensor:
    with name_scope(None, name, [images]):
        images = tensor(images)
        k = tensor(np.asarray(kernel, dtype=images.dtype.np), name="kernel")
        rank = len(images._shape or [None])
        return einsum_ops.tensordot(images, k, axes=[[rank - 1], [0]])


def rgb_to_yuv(images: Any) -> Tensor:
    """RGB to YUV (float images)."""
    return _mix(images, _RGB_TO_YUV, "rgb_to_yuv")


def yuv_to_rgb(images: Any) -> Tensor:
    """YUV to RGB (float images)."""
    return _mix(images, _YUV_TO_RGB, "yuv_to_rgb")


def rgb_to_yiq(images: Any) -> Tensor:
    """RGB to YIQ (float images)."""
    return _mix(images, _RGB_TO_YIQ, "rgb_to_yiq")


def yiq_to_rgb(images: Any) -> Tensor:
    """YIQ to RGB (float images)."""
    return _mix(images, _YIQ_TO_RGB, "yiq_to_rgb")


def rgb_to_grayscale(images: Any, name: str | None = None) -> Tensor:
    """One channel: ``0.2989 r + 0.5870 g + 0.1140 b`` (the dtype kept)."""
    with name_scope(name, "rgb_to_grayscale", [images]):
        flt, orig = _as_float(images)
        gray = _mix(flt, [[w] for w in _GRAY], "weighted_sum")
        return convert_image_dtype(gray, orig)


def grayscale_to_rgb(images: Any, name: str | None = None) -> Tensor:
    """The one channel repeated three times."""
    with name_scope(name, "grayscale_to_rgb", [images]):
        images = tensor(images)
        rank = len(images._shape or [None, None, None])
        return array_ops.tile(images, [1] * (rank - 1) + [3])


def per_image_standardization(image: Any) -> Tensor:
    """``(x - mean) / max(stddev, 1 / sqrt(pixels))`` per image (float32 out)."""
    with name_scope(None, "per_image_standardization", [image]):
        image = tensor(image)
        if not image.dtype.is_floating:
            image = math_ops.cast(image, dtypes.float32)
        axes = [-1, -2, -3]
        shape = image._shape
        if shape is None or None in shape[-3:]:
            raise ValueError("per_image_standardization needs the image's shape known")
        pixels = float(np.prod(shape[-3:]))
        mean = math_ops.reduce_mean(image, axis=axes, keepdims=True)
        centred = math_ops.subtract(image, mean)
        var = math_ops.reduce_mean(math_ops.square(centred), axis=axes, keepdims=True)
        floor = math_ops.cast(1.0 / np.sqrt(pixels), image.dtype)
        return math_ops.divide(centred, math_ops.maximum(math_ops.sqrt(var), floor))


def _uniform(low: float, high: float, seed: int | None) -> Tensor:
    return random_ops.random_uniform([], low, high, seed=seed)


def random_brightness(image: Any, max_delta: float, seed: int | None = None) -> Tensor:
    """``adjust_brightness`` by a delta drawn from [-max_delta, max_delta)."""
    if max_delta < 0:
        raise ValueError("max_delta must be non-negative.")
    return adjust_brightness(image, _uniform(-max_delta, max_delta, seed))


def random_contrast(image: Any, lower: float, upper: float, seed: int | None = None) -> Tensor:
    """``adjust_contrast`` by a factor drawn from [lower, upper)."""
    if upper <= lower or lower < 0:
        raise ValueError("need 0 <= lower < upper")
    return adjust_contrast(image, _uniform(lower, upper, seed))


def random_saturation(image: Any, lower: float, upper: float, seed: int | None = None) -> Tensor:
    """``adjust_saturation`` by a factor drawn from [lower, upper)."""
    if upper <= lower or lower < 0:
        raise ValueError("need 0 <= lower < upper")
    return adjust_saturation(image, _uniform(lower, upper, seed))


def random_hue(image: Any, max_delta: float, seed: int | None = None) -> Tensor:
    """``adjust_hue`` by a delta drawn from [-max_delta, max_delta), max_delta <= 0.5."""
    if not 0 <= max_delta <= 0.5:
        raise ValueError("max_delta must be in the interval [0, 0.5].")
    return adjust_hue(image, _uniform(-max_delta, max_delta, seed))
