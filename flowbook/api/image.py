"""``tf.image``: TF1's image namespace, re-exported from where each name is defined.

The decoders and encoders are in :mod:`flowbook.ops.image.codec_ops`, resizing in
:mod:`flowbook.ops.image.resize_ops`, flips, crops and pads in
:mod:`flowbook.ops.image.geometry_ops`, colour in :mod:`flowbook.ops.image.color_ops`,
boxes in :mod:`flowbook.ops.image.box_ops`, the measures (PSNR, SSIM...) in
:mod:`flowbook.ops.image.metric_ops`, and the patches in :mod:`flowbook.ops.image.patch_ops`.

>>> import flowbook as tf
>>> tf.image.ResizeMethod.BICUBIC
<ResizeMethod.BICUBIC: 2>
"""

from __future__ import annotations

from flowbook.ops.image.box_ops import (
    crop_and_resize,
    draw_bounding_boxes,
    non_max_suppression,
    non_max_suppression_overlaps,
    sample_distorted_bounding_box,
)
from flowbook.ops.image.codec_ops import (
    adjust_jpeg_quality,
    decode_and_crop_jpeg,
    decode_bmp,
    decode_gif,
    decode_image,
    decode_jpeg,
    decode_png,
    encode_jpeg,
    encode_png,
    extract_jpeg_shape,
    is_jpeg,
    random_jpeg_quality,
)
from flowbook.ops.image.color_ops import (
    adjust_brightness,
    adjust_contrast,
    adjust_gamma,
    adjust_hue,
    adjust_saturation,
    convert_image_dtype,
    grayscale_to_rgb,
    hsv_to_rgb,
    per_image_standardization,
    random_brightness,
    random_contrast,
    random_hue,
    random_saturation,
    rgb_to_grayscale,
    rgb_to_hsv,
    rgb_to_yiq,
    rgb_to_yuv,
    yiq_to_rgb,
    yuv_to_rgb,
)
from flowbook.ops.image.geometry_ops import (
    central_crop,
    crop_to_bounding_box,
    flip_left_right,
    flip_up_down,
    pad_to_bounding_box,
    random_crop,
    random_flip_left_right,
    random_flip_up_down,
    rot90,
    transpose_image,
)
from flowbook.ops.image.metric_ops import (
    image_gradients,
    psnr,
    sobel_edges,
    ssim,
    total_variation,
)
from flowbook.ops.image.patch_ops import extract_image_patches
from flowbook.ops.image.resize_ops import (
    ResizeMethod,
    resize_area,
    resize_bicubic,
    resize_bilinear,
    resize_image_with_crop_or_pad,
    resize_image_with_pad,
    resize_images,
    resize_nearest_neighbor,
)

resize = resize_images  # TF1.15's tf.image.resize is resize_images' v1 behaviour
resize_with_crop_or_pad = resize_image_with_crop_or_pad
transpose = transpose_image
extract_patches = extract_image_patches

__all__ = [
    "ResizeMethod",
    "adjust_brightness",
    "adjust_contrast",
    "adjust_gamma",
    "adjust_hue",
    "adjust_jpeg_quality",
    "adjust_saturation",
    "central_crop",
    "convert_image_dtype",
    "crop_and_resize",
    "crop_to_bounding_box",
    "decode_and_crop_jpeg",
    "decode_bmp",
    "decode_gif",
    "decode_image",
    "decode_jpeg",
    "decode_png",
    "draw_bounding_boxes",
    "encode_jpeg",
    "encode_png",
    "extract_image_patches",
    "extract_jpeg_shape",
    "extract_patches",
    "flip_left_right",
    "flip_up_down",
    "grayscale_to_rgb",
    "hsv_to_rgb",
    "image_gradients",
    "is_jpeg",
    "non_max_suppression",
    "non_max_suppression_overlaps",
    "pad_to_bounding_box",
    "per_image_standardization",
    "psnr",
    "random_brightness",
    "random_contrast",
    "random_crop",
    "random_flip_left_right",
    "random_flip_up_down",
    "random_hue",
    "random_jpeg_quality",
    "random_saturation",
    "resize",
    "resize_area",
    "resize_bicubic",
    "resize_bilinear",
    "resize_image_with_crop_or_pad",
    "resize_image_with_pad",
    "resize_images",
    "resize_nearest_neighbor",
    "resize_with_crop_or_pad",
    "rgb_to_grayscale",
    "rgb_to_hsv",
    "rgb_to_yiq",
    "rgb_to_yuv",
    "rot90",
    "sample_distorted_bounding_box",
    "sobel_edges",
    "ssim",
    "total_variation",
    "transpose",
    "transpose_image",
    "yiq_to_rgb",
    "yuv_to_rgb",
]
