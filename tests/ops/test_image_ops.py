"""tf.image against TensorFlow 2.21's values (tests/fixtures/tf_image, made by its script).

Resizing (every method, align_corners and half-pixel centers, and the
gradients), colour, dtype conversion and geometry are compared with the
stored outputs; the decoders with files Pillow writes here and two files
TF's own encoders wrote; a small input pipeline trains a linear model.
"""

from __future__ import annotations

import io
import os

import numpy as np
import pytest
from PIL import Image

import flowbook as tf

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.join(HERE, "..", "fixtures", "tf_image")
REF = np.load(os.path.join(FIX, "reference.npz"))
IMG = REF["img"]
U8 = REF["u8"]


def run(build):
    with tf.Graph().as_default(), tf.Session() as sess:
        return sess.run(build())


# ------------------------------------------------------------------ resizing
SIZES = [(7, 3), (2, 8), (8, 10)]
MODES = [(False, False), (True, False), (False, True)]
RESIZERS = ["bilinear", "nearest", "bicubic"]


def _resizer(name):
    return {
        "bilinear": tf.image.resize_bilinear,
        "nearest": tf.image.resize_nearest_neighbor,
        "bicubic": tf.image.resize_bicubic,
    }[name]


@pytest.mark.parametrize("method", RESIZERS)
@pytest.mark.parametrize("size", SIZES, ids=str)
@pytest.mark.parametrize("mode", MODES, ids=["legacy", "align_corners", "half_pixel"])
def test_resize_matches_tf(method, size, mode):
    (h, w), (ac, hp) = size, mode
    key = f"resize_{method}_{h}x{w}_ac{int(ac)}_hp{int(hp)}"
    fn = _resizer(method)
    got = run(lambda: fn(IMG, [h, w], align_corners=ac, half_pixel_centers=hp))
    assert got.dtype == np.float32 and got.shape == REF[key].shape
    np.testing.assert_allclose(got, REF[key], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("method", ["bilinear", "nearest"])
@pytest.mark.parametrize("size", SIZES, ids=str)
@pytest.mark.parametrize("mode", MODES, ids=["legacy", "align_corners", "half_pixel"])
def test_resize_gradients_match_tf(method, size, mode):
    (h, w), (ac, hp) = size, mode
    key = f"resize_{method}_{h}x{w}_ac{int(ac)}_hp{int(hp)}"
    fn = _resizer(method)

    def build():
        x = tf.constant(IMG)
        y = fn(x, [h, w], align_corners=ac, half_pixel_centers=hp)
        (g,) = tf.gradients(tf.reduce_sum(y * REF[key + "_up"]), x)
        grad_type = "ResizeBilinearGrad" if method == "bilinear" else "ResizeNearestNeighborGrad"
        assert g.op.type == grad_type
        return g

    np.testing.assert_allclose(run(build), REF[key + "_grad"], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("size", SIZES, ids=str)
@pytest.mark.parametrize("ac", [False, True])
def test_resize_area_matches_tf(size, ac):
    key = f"resize_area_{size[0]}x{size[1]}_ac{int(ac)}"
    got = run(lambda: tf.image.resize_area(IMG, list(size), align_corners=ac))
    np.testing.assert_allclose(got, REF[key], rtol=1e-5, atol=1e-6)


def test_bicubic_gradient_is_the_transposed_resize():
    x0 = IMG.astype(np.float64)
    up = np.random.default_rng(1).normal(size=(1, 6, 7, 3))

    def build():
        x = tf.constant(IMG)
        y = tf.image.resize_bicubic(x, [6, 7])
        return tf.gradients(tf.reduce_sum(y * up.astype(np.float32)), x)[0], y

    g, _ = run(build)
    eps = 1e-3  # the op is linear: a finite difference is exact up to rounding
    d = np.zeros_like(x0)
    d[0, 1, 2, 0] = eps
    lo = run(lambda: tf.image.resize_bicubic((x0 - d).astype(np.float32), [6, 7]))
    hi = run(lambda: tf.image.resize_bicubic((x0 + d).astype(np.float32), [6, 7]))
    assert abs(((hi - lo) * up).sum() / (2 * eps) - g[0, 1, 2, 0]) < 1e-3


def test_resize_errors():
    with pytest.raises(tf.errors.InvalidArgumentError, match="cannot both be true"):
        run(lambda: tf.image.resize_bilinear(IMG, [2, 2], True, half_pixel_centers=True))
    with tf.Graph().as_default(), pytest.raises(ValueError, match="4-D"):
        tf.image.resize_bilinear(IMG[0], [2, 2])


RESIZE_IMAGES = {
    "resize_images_aspect": lambda: tf.image.resize_images(IMG, [8, 8], preserve_aspect_ratio=True),
    "resize_images_uint8": lambda: tf.image.resize_images(
        (IMG * 255).astype(np.uint8), [6, 7], method=tf.image.ResizeMethod.NEAREST_NEIGHBOR
    ),
    "resize_with_pad": lambda: tf.image.resize_image_with_pad(IMG, 6, 9),
    "crop_or_pad_a": lambda: tf.image.resize_image_with_crop_or_pad(IMG, 6, 3),
    "crop_or_pad_b": lambda: tf.image.resize_image_with_crop_or_pad(IMG[0], 3, 8),
}

# ------------------------------------------------------------------ colour, dtype, geometry
F = REF["cvt_f"]
BOXES = REF["boxes"]
TABLE = {
    **RESIZE_IMAGES,
    "rgb_to_hsv": lambda: tf.image.rgb_to_hsv(IMG[0]),
    "hsv_to_rgb": lambda: tf.image.hsv_to_rgb(REF["hsv"]),
    "adjust_hue": lambda: tf.image.adjust_hue(IMG[0], 0.3),
    "adjust_hue_neg": lambda: tf.image.adjust_hue(IMG[0], -0.45),
    "adjust_saturation": lambda: tf.image.adjust_saturation(IMG[0], 1.7),
    "adjust_contrast": lambda: tf.image.adjust_contrast(IMG, 1.8),
    "adjust_brightness": lambda: tf.image.adjust_brightness(IMG[0], -0.2),
    "adjust_gamma": lambda: tf.image.adjust_gamma(IMG[0], 2.2, 1.5),
    "adjust_brightness_u8": lambda: tf.image.adjust_brightness(U8, 0.1),
    "adjust_contrast_u8": lambda: tf.image.adjust_contrast(U8, 0.5),
    "adjust_saturation_u8": lambda: tf.image.adjust_saturation(U8, 0.5),
    "adjust_hue_u8": lambda: tf.image.adjust_hue(U8, 0.2),
    "rgb_to_grayscale": lambda: tf.image.rgb_to_grayscale(IMG),
    "rgb_to_grayscale_u8": lambda: tf.image.rgb_to_grayscale(U8),
    "rgb_to_yuv": lambda: tf.image.rgb_to_yuv(IMG),
    "yuv_to_rgb": lambda: tf.image.yuv_to_rgb(IMG),
    "rgb_to_yiq": lambda: tf.image.rgb_to_yiq(IMG),
    "yiq_to_rgb": lambda: tf.image.yiq_to_rgb(IMG),
    "per_image_standardization": lambda: tf.image.per_image_standardization(IMG),
    "per_image_standardization_u8": lambda: tf.image.per_image_standardization(U8),
    "cvt_f_u8_sat": lambda: tf.image.convert_image_dtype(F, tf.uint8, saturate=True),
    "cvt_f_i16": lambda: tf.image.convert_image_dtype(F, tf.int16, saturate=True),
    "cvt_u8_f": lambda: tf.image.convert_image_dtype(REF["cvt_u8"], tf.float32),
    "cvt_u8_i32": lambda: tf.image.convert_image_dtype(REF["cvt_u8"], tf.int32),
    "cvt_u8_u16": lambda: tf.image.convert_image_dtype(REF["cvt_u8"], tf.uint16),
    "cvt_i32_u8": lambda: tf.image.convert_image_dtype(REF["cvt_i32"], tf.uint8),
    "cvt_i32_f": lambda: tf.image.convert_image_dtype(REF["cvt_i32"], tf.float32),
    "cvt_i32_f64": lambda: tf.image.convert_image_dtype(REF["cvt_i32"], tf.float64),
    "central_crop": lambda: tf.image.central_crop(IMG, 0.5),
    "central_crop3": lambda: tf.image.central_crop(IMG[0], 0.7),
    "rot90_0": lambda: tf.image.rot90(IMG, 0),
    "rot90_1": lambda: tf.image.rot90(IMG, 1),
    "rot90_2": lambda: tf.image.rot90(IMG, 2),
    "rot90_3": lambda: tf.image.rot90(IMG, 3),
    "total_variation": lambda: tf.image.total_variation(IMG),
    "image_gradients_dy": lambda: tf.image.image_gradients(IMG)[0],
    "image_gradients_dx": lambda: tf.image.image_gradients(IMG)[1],
    "psnr": lambda: tf.image.psnr(IMG, REF["img_b"], 1.0),
    "ssim": lambda: tf.image.ssim(REF["ssim_a"], REF["ssim_b"], 1.0, filter_size=7),
    "ssim_default": lambda: tf.image.ssim(
        np.tile(REF["ssim_a"], (1, 2, 2, 1)), np.tile(REF["ssim_b"], (1, 2, 2, 1)), 1.0
    ),
    "sobel_edges": lambda: tf.image.sobel_edges(IMG),
    "crop_and_resize": lambda: tf.image.crop_and_resize(IMG, BOXES, [0, 0, 0], [3, 4]),
    "crop_and_resize_nearest": lambda: tf.image.crop_and_resize(
        IMG, BOXES, [0, 0, 0], [3, 4], method="nearest", extrapolation_value=0.5
    ),
    "crop_and_resize_1x1": lambda: tf.image.crop_and_resize(IMG, BOXES, [0, 0, 0], [1, 1]),
    "draw_boxes": lambda: tf.image.draw_bounding_boxes(
        np.zeros((1, 10, 12, 3), np.float32), BOXES[None], [[1.0, 0, 0, 1], [0, 0, 1, 1]]
    ),
    "draw_boxes_default": lambda: tf.image.draw_bounding_boxes(
        np.zeros((1, 10, 12, 1), np.float32), BOXES[None]
    ),
    "nms": lambda: tf.image.non_max_suppression(REF["nms_boxes"], REF["nms_scores"], 6, 0.3),
    "nms_thresh": lambda: tf.image.non_max_suppression(
        REF["nms_boxes"], REF["nms_scores"], 10, 0.5, score_threshold=0.4
    ),
}


@pytest.mark.parametrize("key", sorted(TABLE))
def test_matches_tf(key):
    got, want = run(TABLE[key]), REF[key]
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(
        got.astype(np.float64), want.astype(np.float64), rtol=2e-6, atol=2e-6
    )


def test_convert_float_to_int_in_range_matches_tf():
    got = run(lambda: tf.image.convert_image_dtype(F, tf.uint8))
    inside = (F >= 0) & (F <= 1)
    np.testing.assert_array_equal(got[inside], REF["cvt_f_u8"][inside])


NUMPY = {  # name: (flowbook, numpy)
    "flip_left_right": (lambda: tf.image.flip_left_right(IMG), IMG[:, :, ::-1]),
    "flip_up_down": (lambda: tf.image.flip_up_down(IMG[0]), IMG[0, ::-1]),
    "transpose_image": (lambda: tf.image.transpose_image(IMG), IMG.transpose(0, 2, 1, 3)),
    "transpose_3d": (lambda: tf.image.transpose(IMG[0]), IMG[0].transpose(1, 0, 2)),
    "crop": (lambda: tf.image.crop_to_bounding_box(IMG, 1, 2, 2, 3), IMG[:, 1:3, 2:5]),
    "pad": (
        lambda: tf.image.pad_to_bounding_box(IMG[0], 1, 2, 6, 8),
        np.pad(IMG[0], [[1, 1], [2, 1], [0, 0]]),
    ),
    "grayscale_to_rgb": (
        lambda: tf.image.grayscale_to_rgb(IMG[..., :1]),
        np.repeat(IMG[..., :1], 3, -1),
    ),
    "patches": (
        lambda: tf.image.extract_patches(IMG, [1, 2, 2, 1], [1, 2, 2, 1], [1, 1, 1, 1], "VALID"),
        IMG[:, :4, :4].reshape(1, 2, 2, 2, 2, 3).transpose(0, 1, 3, 2, 4, 5).reshape(1, 2, 2, 12),
    ),
}


@pytest.mark.parametrize("key", sorted(NUMPY))
def test_matches_numpy(key):
    build, want = NUMPY[key]
    np.testing.assert_array_equal(run(build), want)


def test_random_flips_are_seeded_and_per_image():
    batch = np.arange(8 * 2 * 3, dtype=np.float32).reshape(8, 2, 3, 1)

    def build():
        return tf.image.random_flip_left_right(batch, seed=3), tf.image.random_flip_up_down(
            batch[0], seed=4
        )

    (a, b), (a2, b2) = run(build), run(build)
    np.testing.assert_array_equal(a, a2)
    np.testing.assert_array_equal(b, b2)
    flipped = [bool((a[i] == batch[i, :, ::-1]).all()) for i in range(8)]
    kept = [bool((a[i] == batch[i]).all()) for i in range(8)]
    assert all(f != k for f, k in zip(flipped, kept)) and any(flipped) and any(kept)
    assert (b == batch[0]).all() or (b == batch[0, ::-1]).all()


def test_random_crop_and_color_jitter():
    big = np.random.default_rng(0).uniform(size=(6, 7, 3)).astype(np.float32)

    def build():
        return (
            tf.image.random_crop(big, [3, 4, 3], seed=2),
            tf.image.random_brightness(big, 0.2, seed=1),
            tf.image.random_contrast(big, 0.5, 1.5, seed=1),
            tf.image.random_saturation(big, 0.5, 1.5, seed=1),
            tf.image.random_hue(big, 0.2, seed=1),
        )

    crop, bright, *rest = run(build)
    assert crop.shape == (3, 4, 3)
    hits = [(i, j) for i in range(4) for j in range(4) if (big[i : i + 3, j : j + 4] == crop).all()]
    assert len(hits) == 1
    delta = bright - big
    assert np.ptp(delta) < 1e-6 and abs(delta.flat[0]) <= 0.2
    assert all(r.shape == big.shape for r in rest)
    with pytest.raises(ValueError):
        tf.image.random_hue(big, 0.7)


# ------------------------------------------------------------------ files
def _encoded(array, fmt, **options):
    buf = io.BytesIO()
    Image.fromarray(array).save(buf, format=fmt, **options)
    return buf.getvalue()


RGB = np.random.default_rng(3).integers(0, 256, (5, 6, 3), dtype=np.uint8)


def test_tf_encoded_files_decode_to_tf_pixels():
    want = np.load(os.path.join(FIX, "tf_decoded.npz"))
    with open(os.path.join(FIX, "tf_encoded.png"), "rb") as fh:
        png = fh.read()
    with open(os.path.join(FIX, "tf_encoded.jpg"), "rb") as fh:
        jpg = fh.read()

    def build():
        return (
            tf.image.decode_png(png),
            tf.image.decode_jpeg(jpg, dct_method="INTEGER_ACCURATE"),
            tf.image.decode_jpeg(jpg, channels=1),
            tf.image.decode_jpeg(jpg, ratio=2),
            tf.image.extract_jpeg_shape(jpg),
            tf.image.decode_jpeg(jpg),
        )

    p, j, gray, half, shape, fast = run(build)
    np.testing.assert_array_equal(p, want["png"])
    np.testing.assert_array_equal(j, want["jpg_accurate"])
    np.testing.assert_array_equal(gray, want["jpg_gray_accurate"])
    np.testing.assert_array_equal(half, want["jpg_ratio2_accurate"])
    np.testing.assert_array_equal(shape, want["jpg_shape"])
    assert np.abs(fast.astype(int) - want["jpg"]).max() <= 8  # TF's default: the fast DCT


def test_png_round_trip_and_channels():
    rgba = np.concatenate([RGB, np.full((5, 6, 1), 200, np.uint8)], -1)

    def build():
        png = tf.image.encode_png(RGB, compression=9)
        return (
            tf.image.decode_png(png),
            tf.image.decode_png(png, channels=4),
            tf.image.decode_png(png, dtype=tf.uint16),
            tf.image.decode_png(tf.image.encode_png(rgba)),
            tf.image.decode_png(tf.image.encode_png(RGB[..., :1]), channels=3),
            tf.image.decode_png(
                tf.image.encode_png(RGB[..., :1].astype(np.uint16) * 300), dtype=tf.uint16
            ),
        )

    same, four, wide, alpha, gray3, g16 = run(build)
    np.testing.assert_array_equal(same, RGB)
    np.testing.assert_array_equal(four[..., :3], RGB)
    assert (four[..., 3] == 255).all()
    np.testing.assert_array_equal(wide, RGB.astype(np.uint16) * 257)
    np.testing.assert_array_equal(alpha, rgba)
    np.testing.assert_array_equal(gray3, np.repeat(RGB[..., :1], 3, -1))
    np.testing.assert_array_equal(g16, RGB[..., :1].astype(np.uint16) * 300)


def test_jpeg_encode_decode():
    smooth = np.tile(np.linspace(0, 255, 16, dtype=np.uint8)[None, :, None], (8, 1, 3))

    def build():
        jpg = tf.image.encode_jpeg(smooth, quality=95)
        return (
            jpg,
            tf.image.decode_jpeg(jpg),
            tf.image.is_jpeg(jpg),
            tf.image.extract_jpeg_shape(jpg),
        )

    jpg, pixels, is_jpeg, shape = run(build)
    assert jpg[:3] == b"\xff\xd8\xff" and is_jpeg
    assert np.abs(pixels.astype(int) - smooth).max() <= 4
    assert shape.tolist() == [8, 16, 3]
    lo = run(lambda: tf.image.encode_jpeg(RGB, quality=10))
    hi = run(lambda: tf.image.encode_jpeg(RGB, quality=100))
    assert len(lo) < len(hi)


def test_gif_bmp_and_decode_image():
    frames = [Image.fromarray(np.full((4, 5, 3), v, np.uint8)) for v in (0, 255)]
    buf = io.BytesIO()
    frames[0].save(buf, format="GIF", save_all=True, append_images=frames[1:])
    gif = buf.getvalue()
    bmp = _encoded(RGB, "BMP")
    png = _encoded(RGB, "PNG")
    jpg = _encoded(RGB, "JPEG", quality=100)

    def build():
        return (
            tf.image.decode_gif(gif),
            tf.image.decode_bmp(bmp),
            tf.image.decode_image(gif),
            tf.image.decode_image(gif, expand_animations=False),
            tf.image.decode_image(png, dtype=tf.float32),
            tf.image.decode_image(bmp, channels=1),
            tf.image.decode_image(jpg),
        )

    g, b, g_all, g_first, p, b1, j = run(build)
    assert g.shape == (2, 4, 5, 3) and (g[0] == 0).all() and (g[1] == 255).all()
    np.testing.assert_array_equal(b, RGB)
    np.testing.assert_array_equal(g_all, g)
    np.testing.assert_array_equal(g_first, g[0])
    np.testing.assert_allclose(p, RGB / np.float32(255), rtol=1e-6)
    assert p.dtype == np.float32 and b1.shape == (5, 6, 1)
    assert j.shape == (5, 6, 3)
    with tf.Graph().as_default():
        assert tf.image.decode_image(png).shape.ndims is None
        assert tf.image.decode_png(png, channels=3).shape.as_list() == [None, None, 3]


GARBAGE = [
    b"",
    b"not an image at all",
    b"\x89PNG\r\n\x1a\nbroken",
    b"\xff\xd8\xff\x00junk",
    b"GIF89a",
]


@pytest.mark.parametrize(
    "decoder",
    ["decode_png", "decode_jpeg", "decode_gif", "decode_bmp", "decode_image", "extract_jpeg_shape"],
)
@pytest.mark.parametrize("data", GARBAGE, ids=range(len(GARBAGE)))
def test_garbage_is_invalid_argument_naming_the_op(decoder, data):
    with tf.Graph().as_default(), tf.Session() as sess:
        t = getattr(tf.image, decoder)(data)
        with pytest.raises(tf.errors.InvalidArgumentError, match=t.op.type):
            sess.run(t)


def test_decoders_are_host_only_and_not_differentiable():
    from flowbook.framework.registry import OPS

    for t in ("DecodePng", "DecodeJpeg", "DecodeGif", "DecodeBmp", "DecodeImage", "EncodePng"):
        assert OPS[t].host_only


# ------------------------------------------------------------------ a pipeline
def test_pipeline_png_files_to_training(tmp_path):
    rng = np.random.default_rng(0)
    paths, labels = [], []
    for i in range(8):
        label = i % 2
        pixels = rng.integers(0, 60, (6, 6, 3)) + (150 if label else 0)
        path = tmp_path / f"img{i}.png"
        path.write_bytes(_encoded(pixels.astype(np.uint8), "PNG"))
        paths.append(str(path))
        labels.append(float(label))

    with tf.Graph().as_default(), tf.Session() as sess:

        def load(path, label):
            image = tf.image.decode_png(tf.read_file(path), channels=3)
            image = tf.image.convert_image_dtype(image, tf.float32)
            image = tf.image.resize_images(image, [4, 4])
            image = tf.image.random_flip_left_right(image, seed=5)
            return tf.reshape(image, [48]), label

        data = tf.data.Dataset.from_tensor_slices((paths, labels)).map(load).batch(4).repeat()
        x, y = data.make_one_shot_iterator().get_next()
        w = tf.Variable(tf.zeros([48, 1]))
        b = tf.Variable(0.0)
        logits = tf.squeeze(tf.matmul(x, w), 1) + b
        loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=logits))
        step = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
        sess.run(tf.global_variables_initializer())
        losses = [sess.run([loss, step])[0] for _ in range(20)]
    assert losses[-1] < losses[0] * 0.5


def test_sample_distorted_bounding_box_is_seeded_and_covers():
    box = [[[0.1, 0.1, 0.6, 0.8]]]

    def build():
        return tf.image.sample_distorted_bounding_box(
            [10, 12, 3], box, seed=3, min_object_covered=0.3
        )

    (begin, size, bbox), again = run(build), run(build)
    np.testing.assert_array_equal(begin, again[0])
    assert begin[2] == 0 and size[2] == -1 and bbox.shape == (1, 1, 4)
    y, x, h, w = begin[0], begin[1], size[0], size[1]
    assert y >= 0 and y + h <= 10 and x >= 0 and x + w <= 12
    np.testing.assert_allclose(bbox[0, 0], [y / 10, x / 12, (y + h) / 10, (x + w) / 12], rtol=1e-6)
    inter = max(min(y + h, 6) - max(y, 1), 0) * max(min(x + w, 9.6) - max(x, 1.2), 0)
    assert inter / (5 * 8.4) >= 0.3


def test_jpeg_quality_round_trips_and_decode_and_crop():
    smooth = np.tile(np.linspace(0, 1, 16, dtype=np.float32)[None, :, None], (8, 1, 3))
    jpg = _encoded((smooth * 255).astype(np.uint8), "JPEG", quality=95)

    def build():
        return (
            tf.image.adjust_jpeg_quality(smooth, 90),
            tf.image.random_jpeg_quality(smooth, 50, 95, seed=1),
            tf.image.decode_and_crop_jpeg(jpg, [1, 2, 3, 4]),
            tf.image.decode_jpeg(jpg),
        )

    adjusted, jittered, crop, full = run(build)
    assert adjusted.dtype == np.float32 and adjusted.shape == smooth.shape
    assert np.abs(adjusted - smooth).max() < 0.05 and np.abs(jittered - smooth).max() < 0.1
    np.testing.assert_array_equal(crop, full[1:4, 2:6])
    with pytest.raises(tf.errors.InvalidArgumentError, match="DecodeAndCropJpeg"):
        run(lambda: tf.image.decode_and_crop_jpeg(jpg, [6, 0, 4, 4]))


def test_non_max_suppression_overlaps_agrees_with_boxes():
    boxes, scores = REF["nms_boxes"], REF["nms_scores"]
    y0, x0, y1, x1 = boxes.T
    inter = np.clip(np.minimum(y1[:, None], y1) - np.maximum(y0[:, None], y0), 0, None) * np.clip(
        np.minimum(x1[:, None], x1) - np.maximum(x0[:, None], x0), 0, None
    )
    area = (y1 - y0) * (x1 - x0)
    iou = (inter / (area[:, None] + area - inter)).astype(np.float32)
    got = run(lambda: tf.image.non_max_suppression_overlaps(iou, scores, 6, 0.3))
    np.testing.assert_array_equal(got, REF["nms"])


def test_adjust_contrast_gradient_matches_finite_differences():
    x0 = IMG[0].astype(np.float64)
    up = np.random.default_rng(2).normal(size=x0.shape)

    def build():
        x = tf.constant(x0)
        f = tf.constant(1.7)  # float32, as TF's op takes it
        y = tf.image.adjust_contrast(x, f)
        return tf.gradients(tf.reduce_sum(y * up), [x, f])

    gx, gf = run(build)

    def value(x, f):
        mean = x.mean(axis=(0, 1), keepdims=True)
        return (((x - mean) * f + mean) * up).sum()

    eps = 1e-6
    d = np.zeros_like(x0)
    d[1, 2, 0] = eps
    assert abs((value(x0 + d, 1.7) - value(x0 - d, 1.7)) / (2 * eps) - gx[1, 2, 0]) < 1e-6
    df = (value(x0, 1.7 + eps) - value(x0, 1.7 - eps)) / (2 * eps)
    assert gf.dtype == np.float32 and abs(df - gf) < 1e-4 * max(1.0, abs(df))


def test_png_gray_alpha_and_palette_channels():
    la = np.stack([RGB[..., 0], RGB[..., 1]], -1)
    palette = Image.fromarray(RGB).convert("P")
    buf = io.BytesIO()
    palette.save(buf, format="PNG")

    def build():
        return (
            tf.image.decode_png(tf.image.encode_png(la)),
            tf.image.decode_png(buf.getvalue()),
            tf.image.decode_png(buf.getvalue(), channels=1),
        )

    two, pal, gray = run(build)
    np.testing.assert_array_equal(two, la)
    np.testing.assert_array_equal(pal, np.asarray(palette.convert("RGB")))
    assert gray.shape == (5, 6, 1)
    with pytest.raises(tf.errors.InvalidArgumentError, match="channels"):
        run(lambda: tf.image.decode_png(buf.getvalue(), channels=2))
