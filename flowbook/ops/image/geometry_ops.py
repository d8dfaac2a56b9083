"""Image geometry as TF1 composes it: flips, transposes, rotations, crops and pads.

None of these has a kernel of its own in TensorFlow, and none here: each is
built of array ops, as TF builds it (a flip is ``ReverseV2`` on the height or
width axis, ``rot90`` a flip and a transpose, a crop a ``Slice``, a pad a
``Pad``).  Every function takes one image ``[h, w, c]`` or a batch
``[n, h, w, c]``; the sizes and offsets are Python ints, checked against the
image's static shape when it is known.

The random flips draw one uniform number per image (``random_uniform`` with
the op seed given, by TF's seed rules) and take the flipped image where it is
below one half (a ``cond`` for one image, a ``Select`` over a batch), so a seeded graph flips the same images in every fresh session.
``random_crop`` draws the offset as TF does: a random int32 modulo the room left.

    >>> import flowbook as fb, numpy as np
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     img = np.arange(6).reshape(2, 3, 1)
    ...     s.run(fb.image.flip_left_right(img))[..., 0].tolist()
    [[2, 1, 0], [5, 4, 3]]
"""

from __future__ import annotations

from typing import Any

from flowbook.framework import dtypes
from flowbook.framework.graph import name_scope
from flowbook.framework.tensor import Tensor
from flowbook.ops._builder import tensor
from flowbook.ops.array import array_ops
from flowbook.ops.control_flow import control_flow
from flowbook.ops.math import math_ops
from flowbook.ops.random import random_ops

__all__ = [
    "central_crop",
    "crop_to_bounding_box",
    "flip_left_right",
    "flip_up_down",
    "pad_to_bounding_box",
    "random_crop",
    "random_flip_left_right",
    "random_flip_up_down",
    "rot90",
    "transpose_image",
]


def _image(image: Any) -> tuple[Tensor, int]:
    """The image as a tensor and its rank (3 or 4)."""
    image = tensor(image, name="image")
    shape = image._shape
    if shape is None or len(shape) not in (3, 4):
        raise ValueError(f"'image' must have either 3 or 4 dimensions, got shape {image.shape}")
    return image, len(shape)


def _flip(image: Any, axis: int, name: str) -> Tensor:
    with name_scope(None, name, [image]):
        image, rank = _image(image)
        return array_ops.reverse(image, [axis + rank - 3])


def flip_left_right(image: Any) -> Tensor:
    """The image mirrored left to right (its width axis reversed)."""
    return _flip(image, 1, "flip_left_right")


def flip_up_down(image: Any) -> Tensor:
    """The image mirrored top to bottom (its height axis reversed)."""
    return _flip(image, 0, "flip_up_down")


def transpose_image(image: Any) -> Tensor:
    """The image with its height and width swapped."""
    with name_scope(None, "transpose_image", [image]):
        image, rank = _image(image)
        return array_ops.transpose(image, [0, 2, 1, 3] if rank == 4 else [1, 0, 2])


def rot90(image: Any, k: int = 1, name: str | None = None) -> Tensor:
    """The image rotated ``k`` quarter turns counter-clockwise (``k`` a Python int)."""
    with name_scope(name, "rot90", [image]):
        image, _ = _image(image)
        k = int(k) % 4
        if k == 1:
            return flip_up_down(transpose_image(image))
        if k == 2:
            return flip_up_down(flip_left_right(image))
        if k == 3:
            return transpose_image(flip_up_down(image))
        return image


def _random_flip(image: Any, axis: int, seed: int | None, name: str) -> Tensor:
    with name_scope(None, name, [image]):
        image, rank = _image(image)
        axis += rank - 3
        if rank == 3:
            flip = math_ops.less(random_ops.random_uniform([], 0, 1.0, seed=seed), 0.5)
            return control_flow.cond(flip, lambda: array_ops.reverse(image, [axis]), lambda: image)
        batch = array_ops.shape(image)[:1]
        flips = math_ops.less(random_ops.random_uniform(batch, 0, 1.0, seed=seed), 0.5)
        return array_ops.where(flips, array_ops.reverse(image, [axis]), image)


def random_flip_left_right(image: Any, seed: int | None = None) -> Tensor:
    """Each image mirrored left to right with probability one half."""
    return _random_flip(image, 1, seed, "random_flip_left_right")


def random_flip_up_down(image: Any, seed: int | None = None) -> Tensor:
    """Each image mirrored top to bottom with probability one half."""
    return _random_flip(image, 0, seed, "random_flip_up_down")


def _static_hw(image: Tensor, rank: int) -> tuple[int | None, int | None]:
    shape = image._shape
    return shape[rank - 3], shape[rank - 2]  # type: ignore[index]


def crop_to_bounding_box(
    image: Any, offset_height: int, offset_width: int, target_height: int, target_width: int
) -> Tensor:
    """The ``target_height x target_width`` window at ``(offset_height, offset_width)``."""
    with name_scope(None, "crop_to_bounding_box", [image]):
        image, rank = _image(image)
        h, w = _static_hw(image, rank)
        oh, ow, th, tw = (
            int(v) for v in (offset_height, offset_width, target_height, target_width)
        )
        if min(oh, ow) < 0 or min(th, tw) <= 0:
            raise ValueError("offsets must be >= 0 and the target size > 0")
        if (h is not None and oh + th > h) or (w is not None and ow + tw > w):
            raise ValueError("the crop reaches beyond the image")
        begin = [0, oh, ow, 0] if rank == 4 else [oh, ow, 0]
        size = [-1, th, tw, -1] if rank == 4 else [th, tw, -1]
        return array_ops.slice(image, begin, size)


def pad_to_bounding_box(
    image: Any, offset_height: int, offset_width: int, target_height: int, target_width: int
) -> Tensor:
    """The image placed at ``(offset_height, offset_width)`` in a zero image of the target size."""
    with name_scope(None, "pad_to_bounding_box", [image]):
        image, rank = _image(image)
        h, w = _static_hw(image, rank)
        if h is None or w is None:
            raise ValueError("pad_to_bounding_box needs the image's height and width known")
        oh, ow, th, tw = (
            int(v) for v in (offset_height, offset_width, target_height, target_width)
        )
        below, right = th - oh - h, tw - ow - w
        if min(oh, ow) < 0 or below < 0 or right < 0:
            raise ValueError("the image does not fit in the target at that offset")
        pads = [[oh, below], [ow, right], [0, 0]]
        return array_ops.pad(image, [[0, 0], *pads] if rank == 4 else pads)


def central_crop(image: Any, central_fraction: float) -> Tensor:
    """The central ``central_fraction`` (0, 1] of the image's height and width."""
    with name_scope(None, "central_crop", [image]):
        image, rank = _image(image)
        fraction = float(central_fraction)
        if not 0.0 < fraction <= 1.0:
            raise ValueError("central_fraction must be within (0, 1]")
        if fraction == 1.0:
            return image
        h, w = _static_hw(image, rank)
        if h is None or w is None:
            raise ValueError("central_crop needs the image's height and width known")
        top = int((h - h * fraction) / 2)  # TF: the offsets truncated, the size what is left
        left = int((w - w * fraction) / 2)
        return crop_to_bounding_box(image, top, left, h - 2 * top, w - 2 * left)


def random_crop(value: Any, size: Any, seed: int | None = None, name: str | None = None) -> Tensor:
    """A ``size`` window of ``value`` at a random offset (the same rank; TF1's ``random_crop``)."""
    with name_scope(name, "random_crop", [value, size]):
        value = tensor(value, name="value")
        size = tensor(size, dtypes.int32, name="size")
        limit = math_ops.add(math_ops.subtract(array_ops.shape(value), size), 1)
        draw = random_ops.random_uniform(
            array_ops.shape(limit), maxval=dtypes.int32.max, dtype=dtypes.int32, seed=seed
        )
        return array_ops.slice(value, math_ops.floormod(draw, limit), size)
