"""Boxes in images: ``crop_and_resize``, ``draw_bounding_boxes``, ``non_max_suppression``
and ``sample_distorted_bounding_box``, each a kernel of its own as in TensorFlow.

A box is ``[y_min, x_min, y_max, x_max]`` in coordinates normalised to the
image (0 the first row or column, 1 the last).

- **CropAndResize**(image, boxes, box_ind, crop_size): each box of image
  ``box_ind[i]`` sampled on a ``crop_size`` grid, the corners on the box's
  edges (``(y2 - y1) * (h - 1) / (crop_h - 1)`` apart; a 1-pixel crop samples
  the centre), bilinearly or at the nearest cell; a sample outside the image
  is ``extrapolation_value``.  float32 out.
- **DrawBoundingBoxesV2**(images, boxes, colors): each box's one-pixel
  outline drawn over the image at its corners scaled by ``size - 1`` and
  truncated; box ``i`` takes ``colors[i % len(colors)]`` (its first
  ``depth`` values), TF's table of colours when none are given; on a
  one-channel image every outline is 1 (white), as in TF.
- **NonMaxSuppressionV3**(boxes, scores, max_output_size, iou_threshold,
  score_threshold): greedy, by falling score: a box is kept unless its IoU
  with a kept one exceeds the threshold; scores not above
  ``score_threshold`` never count.  The kept indices, int32.  Host only (its
  output's size depends on the values).  **NonMaxSuppressionWithOverlaps**
  is the same pass given the pairwise overlaps instead of the boxes.
- **SampleDistortedBoundingBoxV2**(image_size, bounding_boxes,
  min_object_covered): a random crop of the image, its aspect ratio and area
  drawn in the given ranges until (up to ``max_attempts`` times) it covers
  ``min_object_covered`` of a box picked at random; the whole image
  otherwise.  Returns ``begin`` and ``size`` for ``tf.slice`` and the crop as
  a normalised box.  Seeded by the op's seeds (TF's rules), the draw is
  flowbook's own: the same in every fresh session, not TF's numbers.

    >>> import flowbook as fb, numpy as np
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     boxes = [[0, 0, 1, 1], [0, 0, 0.9, 1], [0.5, 0.5, 1, 1]]
    ...     s.run(fb.image.non_max_suppression(boxes, [0.9, 0.8, 0.7], 3, 0.5)).tolist()
    [0, 2]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowbook.framework import dtypes
from flowbook.framework.errors import InvalidArgumentError
from flowbook.framework.registry import NOT_DIFFERENTIABLE, Out, op
from flowbook.framework.tensor import Tensor
from flowbook.ops._builder import make, make1, tensor
from flowbook.ops._shape_inputs import const_ints, host_ints, int_input
from flowbook.ops.random.random_ops import get_seed

__all__ = [
    "crop_and_resize",
    "draw_bounding_boxes",
    "non_max_suppression",
    "non_max_suppression_overlaps",
    "sample_distorted_bounding_box",
]

_F32 = np.float32
_DEFAULT_COLORS = np.array(  # TF's table, used when no colours are given
    [
        [1, 1, 0, 1],
        [0, 0, 1, 1],
        [1, 0, 0, 1],
        [0, 1, 0, 1],
        [0.5, 0, 0.5, 1],
        [0.5, 0.5, 0.5, 1],
        [0.5, 0, 0, 1],
        [0, 0, 0.5, 1],
        [0, 0.5, 0.5, 1],
        [0.5, 0.5, 0, 1],
    ],
    _F32,
)


def _bad(message: str) -> InvalidArgumentError:
    return InvalidArgumentError(None, None, message)


# ------------------------------------------------------------------ CropAndResize
def _sample_points(lo: Any, hi: Any, n_in: int, n_out: int) -> np.ndarray:
    """[boxes, n_out] sample positions in pixels along one axis."""
    if n_out > 1:
        step = (hi - lo) * _F32(n_in - 1) / _F32(n_out - 1)
        return lo[:, None] * _F32(n_in - 1) + np.arange(n_out, dtype=_F32) * step[:, None]
    return (_F32(0.5) * (lo + hi) * _F32(n_in - 1))[:, None]


def _crop_and_resize(
    xp: Any,
    image: Any,
    boxes: Any,
    box_ind: Any,
    crop_size: Any,
    method: str,
    extrapolation_value: float,
) -> Any:
    ch, cw = host_ints(crop_size)
    img = np.asarray(image, dtype=_F32)
    boxes = np.asarray(boxes, dtype=_F32).reshape(-1, 4)
    index = np.asarray(box_ind).reshape(-1)
    if len(index) != len(boxes) or ((index < 0) | (index >= img.shape[0])).any():
        raise _bad("CropAndResize: box_ind must have one valid image index per box")
    h, w = img.shape[1], img.shape[2]
    ys = _sample_points(boxes[:, 0], boxes[:, 2], h, ch)
    xs = _sample_points(boxes[:, 1], boxes[:, 3], w, cw)
    outside = ((ys < 0) | (ys > h - 1))[:, :, None] | ((xs < 0) | (xs > w - 1))[:, None, :]
    b = index[:, None, None]
    if method == "nearest":
        yi = np.clip(np.floor(ys + _F32(0.5)), 0, h - 1).astype(np.int64)[:, :, None]
        xi = np.clip(np.floor(xs + _F32(0.5)), 0, w - 1).astype(np.int64)[:, None, :]
        out = img[b, yi, xi]
    else:
        y0 = np.clip(np.floor(ys), 0, h - 1).astype(np.int64)
        y1 = np.clip(np.ceil(ys), 0, h - 1).astype(np.int64)
        x0 = np.clip(np.floor(xs), 0, w - 1).astype(np.int64)
        x1 = np.clip(np.ceil(xs), 0, w - 1).astype(np.int64)
        dy = (ys - np.floor(ys))[:, :, None, None]
        dx = (xs - np.floor(xs))[:, None, :, None]
        top_l, top_r = (
            img[b, y0[:, :, None], x0[:, None, :]],
            img[b, y0[:, :, None], x1[:, None, :]],
        )
        bot_l, bot_r = (
            img[b, y1[:, :, None], x0[:, None, :]],
            img[b, y1[:, :, None], x1[:, None, :]],
        )
        top = top_l + (top_r - top_l) * dx
        bottom = bot_l + (bot_r - bot_l) * dx
        out = top + (bottom - top) * dy
    out = np.where(outside[..., None], _F32(extrapolation_value), out).astype(_F32)
    return xp.asarray(out)


def _crop_infer(image: Tensor, boxes: Tensor, box_ind: Tensor, crop_size: Tensor, **_: Any) -> Out:
    size = const_ints(crop_size) or [None, None]
    n = None if boxes._shape is None else boxes._shape[0]
    depth = None if image._shape is None else image._shape[-1]
    return Out(dtypes.float32, (n, size[0], size[1], depth))


op(
    "CropAndResize",
    ("image", "boxes", "box_ind", "crop_size"),
    ("method", "extrapolation_value"),
    _crop_infer,
    _crop_and_resize,
    host_only=True,
    grad=NOT_DIFFERENTIABLE,
)


def crop_and_resize(
    image: Any,
    boxes: Any,
    box_ind: Any = None,
    crop_size: Any = None,
    method: str = "bilinear",
    extrapolation_value: float = 0.0,
    name: str | None = None,
    box_indices: Any = None,
) -> Tensor:
    """Crops of ``image`` [n, h, w, c] at ``boxes``, each resized to ``crop_size``."""
    if method not in ("bilinear", "nearest"):
        raise ValueError(f"method must be 'bilinear' or 'nearest', got {method!r}")
    index = tensor(box_ind if box_ind is not None else box_indices, dtypes.int32)
    inputs = (
        tensor(image),
        tensor(boxes, dtypes.float32),
        index,
        int_input(crop_size, "crop_size"),
    )
    attrs = {"method": method, "extrapolation_value": float(np.float32(extrapolation_value))}
    return make1("CropAndResize", inputs, attrs, name=name or "CropAndResize")


# ------------------------------------------------------------------ DrawBoundingBoxes
def _outline(out: np.ndarray, box: np.ndarray, color: np.ndarray) -> None:
    """Draw one box's outline into ``out`` [h, w, depth] (TF's rule for each edge)."""
    h, w, depth = out.shape
    top, left = int(box[0] * _F32(h - 1)), int(box[1] * _F32(w - 1))
    bottom, right = int(box[2] * _F32(h - 1)), int(box[3] * _F32(w - 1))
    if top > bottom or left > right or top >= h or left >= w or bottom < 0 or right < 0:
        return
    rows = slice(max(top, 0), min(bottom, h - 1) + 1)
    cols = slice(max(left, 0), min(right, w - 1) + 1)
    paint = color[:depth]
    for row in (top, bottom):
        if 0 <= row < h:
            out[row, cols] = paint
    for col in (left, right):
        if 0 <= col < w:
            out[rows, col] = paint


def _draw_boxes(xp: Any, images: Any, boxes: Any, colors: Any) -> Any:
    out = np.array(images, copy=True)
    boxes = np.asarray(boxes, dtype=_F32)
    table = np.asarray(colors, dtype=_F32).reshape(-1, 4) if np.size(colors) else _DEFAULT_COLORS
    if out.ndim != 4 or out.shape[-1] not in (1, 3, 4) or boxes.shape[:1] != out.shape[:1]:
        raise _bad("DrawBoundingBoxesV2: images must be [batch, h, w, 1, 3 or 4], boxes per image")
    if out.shape[-1] == 1:  # TF: a gray image's outlines are white, whatever the colours
        table = np.concatenate([np.ones_like(table[:, :1]), table[:, 1:]], axis=1)
    for b in range(out.shape[0]):
        for i, box in enumerate(boxes[b]):
            _outline(out[b], box, table[i % len(table)].astype(out.dtype))
    return xp.asarray(out)


op(
    "DrawBoundingBoxesV2",
    ("images", "boxes", "colors"),
    (),
    lambda images, boxes, colors: Out(images.dtype, images._shape),
    _draw_boxes,
    host_only=True,
    grad=NOT_DIFFERENTIABLE,
)


def draw_bounding_boxes(
    images: Any, boxes: Any, colors: Any = None, name: str | None = None
) -> Tensor:
    """``images`` with the outlines of ``boxes`` [batch, n, 4] drawn in (TF's colours if none)."""
    colors = np.zeros((0, 4), _F32) if colors is None else colors
    inputs = (tensor(images), tensor(boxes, dtypes.float32), tensor(colors, dtypes.float32))
    return make1("DrawBoundingBoxesV2", inputs, name=name or "DrawBoundingBoxesV2")


# ------------------------------------------------------------------ NonMaxSuppression
def _iou(box: np.ndarray, others: np.ndarray) -> np.ndarray:
    def norm(b: np.ndarray) -> tuple:
        return (
            np.minimum(b[..., 0], b[..., 2]),
            np.minimum(b[..., 1], b[..., 3]),
            np.maximum(b[..., 0], b[..., 2]),
            np.maximum(b[..., 1], b[..., 3]),
        )

    y0, x0, y1, x1 = norm(box)
    oy0, ox0, oy1, ox1 = norm(others)
    area, areas = (y1 - y0) * (x1 - x0), (oy1 - oy0) * (ox1 - ox0)
    inter = np.maximum(np.minimum(y1, oy1) - np.maximum(y0, oy0), 0) * np.maximum(
        np.minimum(x1, ox1) - np.maximum(x0, ox0), 0
    )
    union = area + areas - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where((area > 0) & (areas > 0), inter / union, 0.0)


def _greedy(scores: np.ndarray, limit: int, floor: float, clashes: Any) -> Any:
    """The greedy pass: by falling score, keep a box unless ``clashes(i, kept)``."""
    kept: list[int] = []
    for i in np.argsort(-scores, kind="stable"):
        if len(kept) >= limit or scores[i] <= floor:
            break
        if not kept or not clashes(int(i), kept):
            kept.append(int(i))
    return np.asarray(kept, np.int32)


def _nms_args(op_type: str, scores: Any, max_output_size: Any, threshold: Any, floor: Any) -> tuple:
    scores, limit = np.asarray(scores, _F32), int(np.asarray(max_output_size))
    if limit < 0:
        raise _bad(f"{op_type}: max_output_size must be >= 0, got {limit}")
    return scores, limit, float(np.asarray(threshold)), float(np.asarray(floor))


def _nms(
    xp: Any, boxes: Any, scores: Any, max_output_size: Any, iou_threshold: Any, score_threshold: Any
) -> Any:
    args = _nms_args("NonMaxSuppressionV3", scores, max_output_size, iou_threshold, score_threshold)
    boxes = np.asarray(boxes, _F32)
    if boxes.ndim != 2 or boxes.shape[1] != 4 or args[0].shape != boxes.shape[:1]:
        raise _bad("NonMaxSuppressionV3: boxes must be [n, 4] and scores [n]")
    if not 0 <= args[2] <= 1:
        raise _bad("NonMaxSuppressionV3: iou_threshold must be in [0, 1]")
    return _greedy(
        args[0], args[1], args[3], lambda i, kept: (_iou(boxes[i], boxes[kept]) > args[2]).any()
    )


def _nms_overlaps(
    xp: Any, overlaps: Any, scores: Any, max_output_size: Any, threshold: Any, score_threshold: Any
) -> Any:
    args = _nms_args(
        "NonMaxSuppressionWithOverlaps", scores, max_output_size, threshold, score_threshold
    )
    overlaps = np.asarray(overlaps, _F32)
    n = len(args[0])
    if overlaps.shape != (n, n):
        raise _bad("NonMaxSuppressionWithOverlaps: overlaps must be [n, n] for n scores")
    return _greedy(args[0], args[1], args[3], lambda i, kept: (overlaps[i, kept] > args[2]).any())


op(
    "NonMaxSuppressionV3",
    ("boxes", "scores", "max_output_size", "iou_threshold", "score_threshold"),
    (),
    lambda boxes, *_: Out(dtypes.int32, (None,)),
    _nms,
    host_only=True,
    grad=NOT_DIFFERENTIABLE,
    type_attrs={"T": 0, "T_threshold": 3},
)


op(
    "NonMaxSuppressionWithOverlaps",
    ("overlaps", "scores", "max_output_size", "overlap_threshold", "score_threshold"),
    (),
    lambda overlaps, *_: Out(dtypes.int32, (None,)),
    _nms_overlaps,
    host_only=True,
    grad=NOT_DIFFERENTIABLE,
    type_attrs={},
)


def non_max_suppression_overlaps(
    overlaps: Any,
    scores: Any,
    max_output_size: Any,
    overlap_threshold: float = 0.5,
    score_threshold: float = float("-inf"),
    name: str | None = None,
) -> Tensor:
    """Greedy non-maximum suppression given the pairwise ``overlaps`` [n, n] of the boxes."""
    inputs = (
        tensor(overlaps, dtypes.float32),
        tensor(scores, dtypes.float32),
        tensor(max_output_size, dtypes.int32),
        tensor(overlap_threshold, dtypes.float32),
        tensor(score_threshold, dtypes.float32),
    )
    return make1(
        "NonMaxSuppressionWithOverlaps", inputs, name=name or "NonMaxSuppressionWithOverlaps"
    )


def non_max_suppression(
    boxes: Any,
    scores: Any,
    max_output_size: Any,
    iou_threshold: float = 0.5,
    score_threshold: float = float("-inf"),
    name: str | None = None,
) -> Tensor:
    """The indices of the boxes greedy non-maximum suppression keeps, best first."""
    inputs = (
        tensor(boxes, dtypes.float32),
        tensor(scores, dtypes.float32),
        tensor(max_output_size, dtypes.int32),
        tensor(iou_threshold, dtypes.float32),
        tensor(score_threshold, dtypes.float32),
    )
    return make1("NonMaxSuppressionV3", inputs, name=name or "NonMaxSuppressionV3")


# ------------------------------------------------------------------ SampleDistortedBoundingBox
def _try_crop(rng: Any, h: int, w: int, box: np.ndarray, attrs: dict) -> tuple | None:
    ratio = rng.uniform(*attrs["aspect_ratio_range"])
    area = rng.uniform(*attrs["area_range"]) * h * w
    ch = int(np.rint(np.sqrt(area / ratio)))
    cw = int(np.rint(ch * ratio))
    if not (0 < ch <= h and 0 < cw <= w):
        return None
    y, x = int(rng.integers(0, h - ch + 1)), int(rng.integers(0, w - cw + 1))
    by0, bx0, by1, bx1 = box * np.array([h, w, h, w], _F32)
    inter = max(min(y + ch, by1) - max(y, by0), 0) * max(min(x + cw, bx1) - max(x, bx0), 0)
    box_area = max((by1 - by0) * (bx1 - bx0), 1e-12)
    return (y, x, ch, cw) if inter / box_area >= attrs["min_object_covered"] else None


def _sample_box(
    xp: Any, image_size: Any, bounding_boxes: Any, min_object_covered: Any, **attrs: Any
) -> Any:
    rng = attrs.pop("rng")
    h, w = (int(v) for v in np.asarray(image_size).reshape(-1)[:2])
    boxes = np.asarray(bounding_boxes, _F32).reshape(-1, 4)
    if not len(boxes):
        if not attrs["use_image_if_no_bounding_boxes"]:
            raise _bad("SampleDistortedBoundingBoxV2: no bounding boxes given")
        boxes = np.array([[0, 0, 1, 1]], _F32)
    attrs["min_object_covered"] = float(np.asarray(min_object_covered))
    box = boxes[int(rng.integers(0, len(boxes)))]
    crop = None
    for _ in range(attrs["max_attempts"]):
        crop = _try_crop(rng, h, w, box, attrs)
        if crop is not None:
            break
    y, x, ch, cw = crop or (0, 0, h, w)
    dt = np.asarray(image_size).dtype
    out_box = np.array([[[y / h, x / w, (y + ch) / h, (x + cw) / w]]], _F32)
    return np.array([y, x, 0], dt), np.array([ch, cw, -1], dt), out_box


_SAMPLE_ATTRS = (
    "seed",
    "seed2",
    "aspect_ratio_range",
    "area_range",
    "max_attempts",
    "use_image_if_no_bounding_boxes",
)
op(
    "SampleDistortedBoundingBoxV2",
    ("image_size", "bounding_boxes", "min_object_covered"),
    _SAMPLE_ATTRS,
    lambda image_size, *_, **__: [
        Out(image_size.dtype, (3,)),
        Out(image_size.dtype, (3,)),
        Out(dtypes.float32, (1, 1, 4)),
    ],
    _sample_box,
    stateful=True,
    resource="rng",
    host_only=True,
    num_outputs=3,
    grad=NOT_DIFFERENTIABLE,
    attr_kinds={"use_image_if_no_bounding_boxes": "bool"},
)


def sample_distorted_bounding_box(
    image_size: Any,
    bounding_boxes: Any,
    seed: int | None = None,
    seed2: int | None = None,
    min_object_covered: float = 0.1,
    aspect_ratio_range: Any = (0.75, 1.33),
    area_range: Any = (0.05, 1.0),
    max_attempts: int = 100,
    use_image_if_no_bounding_boxes: bool = False,
    name: str | None = None,
) -> tuple[Tensor, Tensor, Tensor]:
    """A random crop of an image: ``(begin, size, bboxes)`` for ``tf.slice`` and drawing."""
    s1, s2 = get_seed(seed)
    attrs = {
        "seed": s1 or 0,
        "seed2": seed2 if seed2 is not None else (s2 or 0),
        "aspect_ratio_range": [float(np.float32(v)) for v in aspect_ratio_range],  # as stored
        "area_range": [float(np.float32(v)) for v in area_range],
        "max_attempts": int(max_attempts),
        "use_image_if_no_bounding_boxes": bool(use_image_if_no_bounding_boxes),
    }
    inputs = (
        tensor(image_size),
        tensor(bounding_boxes, dtypes.float32),
        tensor(min_object_covered, dtypes.float32),
    )
    result = make("SampleDistortedBoundingBoxV2", inputs, attrs, name=name)
    return tuple(result.outputs)  # type: ignore[return-value]
