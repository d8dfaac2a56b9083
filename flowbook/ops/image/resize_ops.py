"""Resizing images: TF1's ``resize_bilinear``, ``resize_nearest_neighbor``, ``resize_bicubic``,
``resize_area`` and ``resize_images`` with its helpers.

Each resize op takes NHWC ``images`` and ``size`` (a host int32 ``[2]``) and
has TF1's attrs ``align_corners`` and ``half_pixel_centers`` (both off by
default, as in ``tf.compat.v1``).  Every method but nearest neighbour is
linear and separable, so its kernel is two small matrix products: the row
weights ``Ry [out_h, in_h]`` and column weights ``Rx [out_w, in_w]``, built
on the host with TF's sampling rules, applied as ``Ry @ image @ Rx^T`` per
channel (float32 out, as TF's kernels give).  The weights follow TF's
kernels:

- the scale is ``in / out``, or ``(in - 1) / (out - 1)`` with
  ``align_corners``; a sample sits at ``out * scale``, or at ``(out + 0.5) *
  scale - 0.5`` with half-pixel centers (nearest neighbour: ``(out + 0.5) *
  scale``, rounded instead of floored with ``align_corners``);
- bilinear: the two neighbours, clamped to the image, weighted by the
  fraction;
- bicubic: Keys' cubic on four neighbours at the fraction quantised to
  1/1024 (TF's table), ``a = -0.75`` with the legacy sampling, ``a = -0.5``
  with half-pixel centers, where samples outside the image get weight 0 and
  the rest are renormalised;
- area: each output cell averages the input cells its box covers, partial
  cells by the covered fraction.

The gradient of a linear resize is the transposed product ``Ry^T g Rx``:
``ResizeBilinearGrad`` and ``ResizeBicubicGrad`` take the gradient and the
original image (for its size and dtype); nearest neighbour's gradient op
``ResizeNearestNeighborGrad`` takes the original size and sums every output
cell into the input cell it copied.  ``resize_images`` chooses among the
four (``ResizeMethod``), and keeps TF1's rules: a 3-D image is batched and
unbatched, a size equal to the image's returns it as it is, and
``preserve_aspect_ratio`` scales both sides by the smaller factor.

    >>> import flowbook as fb, numpy as np
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     y = fb.image.resize_bilinear(np.array([[[[0.0], [2.0]]]]), [1, 4])
    ...     s.run(y)[0, 0, :, 0].tolist()
    [0.0, 1.0, 2.0, 2.0]
"""

from __future__ import annotations

import enum
import math
from typing import Any

import numpy as np

from flowbook.framework import dtypes
from flowbook.framework.errors import InvalidArgumentError
from flowbook.framework.graph import name_scope
from flowbook.framework.registry import NOT_DIFFERENTIABLE, Out, op
from flowbook.framework.tensor import Operation, Tensor
from flowbook.ops._builder import make1, tensor
from flowbook.ops._shape_inputs import const_ints, host_ints, int_input
from flowbook.ops.array import shape_ops
from flowbook.ops.image import geometry_ops

__all__ = [
    "ResizeMethod",
    "resize_area",
    "resize_bicubic",
    "resize_bilinear",
    "resize_image_with_crop_or_pad",
    "resize_image_with_pad",
    "resize_images",
    "resize_nearest_neighbor",
]

_F32 = np.float32
_ATTRS = ("align_corners", "half_pixel_centers")
_KINDS = {"align_corners": "bool", "half_pixel_centers": "bool"}
_TABLE = 1024  # TF's legacy bicubic: the fraction quantised to 1/1024


class ResizeMethod(enum.IntEnum):
    """TF1's resize methods (the values ``resize_images`` takes)."""

    BILINEAR = 0
    NEAREST_NEIGHBOR = 1
    BICUBIC = 2
    AREA = 3


# ------------------------------------------------------------------ weights
def _scale(n_in: int, n_out: int, align_corners: bool) -> Any:
    if align_corners and n_out > 1:
        return _F32(n_in - 1) / _F32(n_out - 1)
    return _F32(n_in) / _F32(n_out)


def _samples(n_in: int, n_out: int, align: bool, half: bool) -> np.ndarray:
    scale = _scale(n_in, n_out, align)
    pos = np.arange(n_out, dtype=_F32)
    return (pos + _F32(0.5)) * scale - _F32(0.5) if half else pos * scale


def _bilinear_weights(n_in: int, n_out: int, align: bool, half: bool) -> np.ndarray:
    src = _samples(n_in, n_out, align, half)
    floor = np.floor(src)
    lower = np.maximum(floor, 0).astype(np.int64)
    upper = np.minimum(np.ceil(src), n_in - 1).astype(np.int64)
    lerp = src - floor
    m = np.zeros((n_out, n_in), _F32)
    rows = np.arange(n_out)
    np.add.at(m, (rows, lower), _F32(1) - lerp)
    np.add.at(m, (rows, upper), lerp)
    return m


def _keys(x: np.ndarray, a: float) -> np.ndarray:
    """Keys' cubic convolution kernel at distances ``x`` (0 <= x < 2)."""
    a = _F32(a)
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return np.where(x <= 1, near, far).astype(_F32)


def _bicubic_weights(n_in: int, n_out: int, align: bool, half: bool) -> np.ndarray:
    src = _samples(n_in, n_out, align, half)
    base = np.floor(src)
    delta = (src - base).astype(_F32)
    delta = (np.rint(delta * _TABLE) / _TABLE).astype(_F32)  # TF's table: in 1/1024ths
    dist = np.stack([1 + delta, delta, 1 - delta, 2 - delta], axis=1)
    w = _keys(dist, -0.5 if half else -0.75)
    index = base.astype(np.int64)[:, None] + np.arange(-1, 3)
    if half:  # samples outside the image weigh nothing; the rest renormalised
        w = np.where((index >= 0) & (index < n_in), w, _F32(0))
        total = w.sum(axis=1, keepdims=True)
        w = np.where(np.abs(total) >= 1000 * np.finfo(_F32).tiny, w / total, w).astype(_F32)
    m = np.zeros((n_out, n_in), _F32)
    rows = np.repeat(np.arange(n_out), 4)
    np.add.at(m, (rows, np.clip(index, 0, n_in - 1).ravel()), w.ravel())
    return m


def _area_weights(n_in: int, n_out: int, align: bool, half: bool) -> np.ndarray:
    scale = _scale(n_in, n_out, align)
    m = np.zeros((n_out, n_in), _F32)
    for y in range(n_out):
        lo, hi = _F32(y) * scale, _F32(y + 1) * scale
        for i in range(math.floor(lo), math.ceil(hi)):
            part = min(_F32(i + 1), hi) - max(_F32(i), lo)
            m[y, min(i, n_in - 1)] += part
    return m / scale


def _nearest_index(n_in: int, n_out: int, align: bool, half: bool) -> np.ndarray:
    scale = _scale(n_in, n_out, align)
    pos = np.arange(n_out, dtype=_F32)
    src = (pos + _F32(0.5)) * scale if half else pos * scale
    near = np.floor(src + _F32(0.5)) if align else np.floor(src)
    return np.clip(near, 0, n_in - 1).astype(np.int64)


_WEIGHTS = {
    "ResizeBilinear": _bilinear_weights,
    "ResizeBicubic": _bicubic_weights,
    "ResizeArea": _area_weights,
}


# ------------------------------------------------------------------ kernels
def _check(op_type: str, images: Any, size: tuple[int, ...], align: bool, half: bool) -> None:
    if images.ndim != 4:
        raise InvalidArgumentError(None, None, f"{op_type}: input must be 4-dimensional")
    if len(size) != 2 or min(size) <= 0:
        raise InvalidArgumentError(
            None, None, f"{op_type}: size must be 2 positive ints, got {list(size)}"
        )
    if align and half:
        raise InvalidArgumentError(
            None, None, f"{op_type}: align_corners and half_pixel_centers cannot both be true"
        )


def _apply(xp: Any, images: Any, ry: np.ndarray, rx: np.ndarray) -> Any:
    """``Ry @ image @ Rx^T`` per image and channel, in float32."""
    x = images.astype(_F32)
    rows = xp.einsum("ih,nhwc->niwc", xp.asarray(ry), x)
    return xp.ascontiguousarray(xp.einsum("jw,niwc->nijc", xp.asarray(rx), rows))


def _linear_kernel(op_type: str) -> Any:
    weights = _WEIGHTS[op_type]

    def kernel(
        xp: Any, images: Any, size: Any, align_corners: bool, half_pixel_centers: bool
    ) -> Any:
        out_h, out_w = size = host_ints(size)
        _check(op_type, images, size, align_corners, half_pixel_centers)
        ry = weights(images.shape[1], out_h, align_corners, half_pixel_centers)
        rx = weights(images.shape[2], out_w, align_corners, half_pixel_centers)
        return _apply(xp, images, ry, rx)

    return kernel


def _linear_grad_kernel(op_type: str) -> Any:
    weights = _WEIGHTS[op_type]

    def kernel(
        xp: Any, grads: Any, original: Any, align_corners: bool, half_pixel_centers: bool
    ) -> Any:
        n_h, n_w = original.shape[1], original.shape[2]
        ry = weights(n_h, grads.shape[1], align_corners, half_pixel_centers)
        rx = weights(n_w, grads.shape[2], align_corners, half_pixel_centers)
        return _apply(xp, grads, ry.T.copy(), rx.T.copy()).astype(original.dtype)

    return kernel


def _nearest_kernel(
    xp: Any, images: Any, size: Any, align_corners: bool, half_pixel_centers: bool
) -> Any:
    out_h, out_w = size = host_ints(size)
    _check("ResizeNearestNeighbor", images, size, align_corners, half_pixel_centers)
    iy = _nearest_index(images.shape[1], out_h, align_corners, half_pixel_centers)
    ix = _nearest_index(images.shape[2], out_w, align_corners, half_pixel_centers)
    return xp.ascontiguousarray(images[:, xp.asarray(iy)][:, :, xp.asarray(ix)])


def _nearest_grad_kernel(
    xp: Any, grads: Any, size: Any, align_corners: bool, half_pixel_centers: bool
) -> Any:
    n_h, n_w = host_ints(size)
    iy = _nearest_index(n_h, grads.shape[1], align_corners, half_pixel_centers)
    ix = _nearest_index(n_w, grads.shape[2], align_corners, half_pixel_centers)
    ry = np.zeros((grads.shape[1], n_h), _F32)
    rx = np.zeros((grads.shape[2], n_w), _F32)
    ry[np.arange(len(iy)), iy] = 1
    rx[np.arange(len(ix)), ix] = 1
    return _apply(xp, grads, ry.T.copy(), rx.T.copy()).astype(grads.dtype)


# ------------------------------------------------------------------ declarations
def _size_dims(size: Tensor) -> tuple[int | None, int | None]:
    known = const_ints(size)
    return (None, None) if known is None else (known[0], known[1])


def _resize_infer(float_out: bool) -> Any:
    def infer(images: Tensor, size: Tensor, **_: Any) -> Out:
        shape = images._shape
        if shape is not None and len(shape) != 4:
            raise ValueError(f"resize: images must be 4-D, got shape {images.shape}")
        n, c = (None, None) if shape is None else (shape[0], shape[3])
        return Out(dtypes.float32 if float_out else images.dtype, (n, *_size_dims(size), c))

    return infer


def _attrs(op: Operation) -> dict[str, Any]:
    return {a: op.attrs[a] for a in _ATTRS}


def _linear_grad(grad_type: str) -> Any:
    def grad(op: Operation, g: Tensor) -> tuple[Tensor, None]:
        return make1(grad_type, (g, op.inputs[0]), _attrs(op)), None

    return grad


def _nearest_grad(op: Operation, g: Tensor) -> tuple[Tensor, None]:
    images = op.inputs[0]
    shape = images._shape
    if shape is not None and None not in shape[1:3]:
        size = int_input(list(shape[1:3]), "size")
    else:
        size = shape_ops.shape(images)[1:3]
    return make1("ResizeNearestNeighborGrad", (g, size), _attrs(op)), None


for _type, _grad in (
    ("ResizeBilinear", _linear_grad("ResizeBilinearGrad")),
    ("ResizeBicubic", _linear_grad("ResizeBicubicGrad")),
    ("ResizeArea", NOT_DIFFERENTIABLE),
):
    op(
        _type,
        ("images", "size"),
        _ATTRS,
        _resize_infer(True),
        _linear_kernel(_type),
        host_inputs=(1,),
        grad=_grad,
        attr_kinds=_KINDS,
    )
    if _grad is not NOT_DIFFERENTIABLE:
        op(
            f"{_type}Grad",
            ("grads", "original_image"),
            _ATTRS,
            lambda grads, original_image, **_: Out(original_image.dtype, original_image._shape),
            _linear_grad_kernel(_type),
            type_attrs={"T": 1},
            grad=NOT_DIFFERENTIABLE,
            attr_kinds=_KINDS,
        )

op(
    "ResizeNearestNeighbor",
    ("images", "size"),
    _ATTRS,
    _resize_infer(False),
    _nearest_kernel,
    host_inputs=(1,),
    grad=_nearest_grad,
    attr_kinds=_KINDS,
)


def _nearest_grad_infer(grads: Tensor, size: Tensor, **_: Any) -> Out:
    shape = grads._shape
    n, c = (None, None) if shape is None else (shape[0], shape[3])
    return Out(grads.dtype, (n, *_size_dims(size), c))


op(
    "ResizeNearestNeighborGrad",
    ("grads", "size"),
    _ATTRS,
    _nearest_grad_infer,
    _nearest_grad_kernel,
    host_inputs=(1,),
    grad=NOT_DIFFERENTIABLE,
    attr_kinds=_KINDS,
)


# ------------------------------------------------------------------ wrappers
def _resize(
    op_type: str, images: Any, size: Any, align_corners: bool, half_pixel_centers: bool, name: Any
) -> Tensor:
    attrs = {"align_corners": bool(align_corners), "half_pixel_centers": bool(half_pixel_centers)}
    return make1(op_type, (tensor(images), int_input(size, "size")), attrs, name=name or op_type)


def resize_bilinear(
    images: Any,
    size: Any,
    align_corners: bool = False,
    name: str | None = None,
    half_pixel_centers: bool = False,
) -> Tensor:
    """Bilinear resize of NHWC ``images`` to ``size`` [h, w] (float32 out)."""
    return _resize("ResizeBilinear", images, size, align_corners, half_pixel_centers, name)


def resize_nearest_neighbor(
    images: Any,
    size: Any,
    align_corners: bool = False,
    name: str | None = None,
    half_pixel_centers: bool = False,
) -> Tensor:
    """Nearest-neighbour resize of NHWC ``images`` to ``size`` [h, w] (dtype kept)."""
    return _resize("ResizeNearestNeighbor", images, size, align_corners, half_pixel_centers, name)


def resize_bicubic(
    images: Any,
    size: Any,
    align_corners: bool = False,
    name: str | None = None,
    half_pixel_centers: bool = False,
) -> Tensor:
    """Bicubic resize of NHWC ``images`` to ``size`` [h, w] (float32 out)."""
    return _resize("ResizeBicubic", images, size, align_corners, half_pixel_centers, name)


def resize_area(
    images: Any, size: Any, align_corners: bool = False, name: str | None = None
) -> Tensor:
    """Area-averaging resize of NHWC ``images`` to ``size`` [h, w] (float32 out)."""
    attrs = {"align_corners": bool(align_corners), "half_pixel_centers": False}
    return make1(
        "ResizeArea", (tensor(images), int_input(size, "size")), attrs, name=name or "ResizeArea"
    )


_BY_METHOD = {
    ResizeMethod.BILINEAR: resize_bilinear,
    ResizeMethod.NEAREST_NEIGHBOR: resize_nearest_neighbor,
    ResizeMethod.BICUBIC: resize_bicubic,
}


def _method(method: Any) -> ResizeMethod:
    names = {"bilinear": 0, "nearest": 1, "bicubic": 2, "area": 3}
    return ResizeMethod(names[method] if isinstance(method, str) else int(method))


def _static_hw(images: Tensor, what: str) -> tuple[int, int]:
    shape = images._shape
    if shape is None or None in shape[-3:-1]:
        raise ValueError(f"{what} needs the images' height and width known statically")
    return int(shape[-3]), int(shape[-2])  # type: ignore[arg-type]


def _aspect_size(images: Tensor, size: tuple[int, int]) -> list[int]:
    h, w = _static_hw(images, "preserve_aspect_ratio")
    factor = min(_F32(size[0]) / _F32(h), _F32(size[1]) / _F32(w))
    return [int(np.rint(_F32(h) * factor)), int(np.rint(_F32(w) * factor))]


def resize_images(
    images: Any,
    size: Any,
    method: Any = ResizeMethod.BILINEAR,
    align_corners: bool = False,
    preserve_aspect_ratio: bool = False,
    name: str | None = None,
) -> Tensor:
    """Resize ``images`` ([h, w, c] or [n, h, w, c]) to ``size`` by ``method`` (TF1's).

    Every method but nearest neighbour gives float32; a 3-D image comes back 3-D.
    """
    with name_scope(name, "resize_images", [images, size]):
        images = tensor(images)
        rank = images._shape and len(images._shape)
        if rank not in (3, 4):
            raise ValueError("'images' must have either 3 or 4 dimensions.")
        batched = images if rank == 4 else shape_ops.expand_dims(images, 0)
        known = const_ints(size) if isinstance(size, Tensor) else [int(s) for s in size]
        if preserve_aspect_ratio and known is not None:
            size = known = _aspect_size(images, (known[0], known[1]))
        shape = batched._shape
        if known is not None and shape is not None and list(shape[1:3]) == list(known):
            out = batched
        elif _method(method) == ResizeMethod.AREA:
            out = resize_area(batched, size, align_corners)
        else:
            out = _BY_METHOD[_method(method)](batched, size, align_corners)
        return out if rank == 4 else shape_ops.squeeze(out, [0])


def resize_image_with_pad(
    image: Any,
    target_height: int,
    target_width: int,
    method: Any = ResizeMethod.BILINEAR,
    align_corners: bool = False,
) -> Tensor:
    """Resize ``image`` keeping its aspect ratio to fit the target, then pad it with zeros."""
    with name_scope(None, "resize_image_with_pad", [image]):
        image = tensor(image)
        h, w = _static_hw(image, "resize_image_with_pad")
        ratio = max(_F32(w) / _F32(target_width), _F32(h) / _F32(target_height))
        fit_h, fit_w = _F32(h) / ratio, _F32(w) / ratio
        new_h, new_w = int(np.floor(fit_h)), int(np.floor(fit_w))
        top = max(0, int((_F32(target_height) - fit_h) / 2))  # TF: from the unfloored sizes
        left = max(0, int((_F32(target_width) - fit_w) / 2))
        resized = resize_images(image, [new_h, new_w], method, align_corners)
        return geometry_ops.pad_to_bounding_box(resized, top, left, target_height, target_width)


def resize_image_with_crop_or_pad(image: Any, target_height: int, target_width: int) -> Tensor:
    """Crop ``image`` about its centre, or pad it with zeros, to the target size."""
    with name_scope(None, "resize_image_with_crop_or_pad", [image]):
        image = tensor(image)
        h, w = _static_hw(image, "resize_image_with_crop_or_pad")
        crop_h, crop_w = min(h, target_height), min(w, target_width)
        cropped = geometry_ops.crop_to_bounding_box(
            image, max((h - target_height) // 2, 0), max((w - target_width) // 2, 0), crop_h, crop_w
        )
        top, left = max((target_height - h) // 2, 0), max((target_width - w) // 2, 0)
        return geometry_ops.pad_to_bounding_box(cropped, top, left, target_height, target_width)
