"""Image files: TF1's decoders and encoders (``tf.image.decode_png``...), on Pillow.

Each op takes or gives one string scalar (a file's bytes) and runs on the
host: ``DecodeJpeg``, ``DecodeAndCropJpeg``, ``DecodePng``, ``DecodeGif``, ``DecodeBmp``,
``DecodeImage`` (sniffs the format from the first bytes), ``EncodeJpeg``,
``EncodePng`` and ``ExtractJpegShape``.  Pillow reads and writes the files;
the attrs mean what TF's mean:

- ``channels`` 0 keeps the file's (1 gray, 2 gray with alpha, 3 colour, 4
  colour with alpha; a palette gives 3, or 4 with a transparent entry); 1, 3
  or 4 converts.  A JPEG decoded to 1 channel keeps the luma plane libjpeg
  decodes (Pillow's ``draft("L")``), as TF's libjpeg does.
- ``DecodeJpeg``'s ``ratio`` (1, 2, 4, 8) downscales in the DCT as libjpeg
  does.  ``dct_method``, ``fancy_upscaling``, ``try_recover_truncated`` and
  ``acceptable_fraction`` are accepted and ignored: Pillow's libjpeg always
  uses the accurate integer DCT, TF's ``"INTEGER_ACCURATE"``, whose pixels
  TF's match exactly; TF's default (``""``, the fast integer DCT) can differ
  by a few levels.
- ``DecodePng``'s ``dtype`` uint16 gives 16-bit samples as stored (8-bit ones
  scaled by 257, as TF does).  Pillow keeps 16 bits for gray files only: a
  16-bit color PNG comes back at 8-bit precision, scaled.
- ``DecodeGif`` gives every frame, composed as shown, ``[frames, h, w, 3]``;
  ``DecodeImage`` gives a GIF that way unless ``expand_animations`` is off
  (then its first frame, ``[h, w, 3]``); its ``dtype`` float32 scales to
  [0, 1] as ``convert_image_dtype`` does.

``DecodeAndCropJpeg`` decodes and crops to a window ``[y, x, h, w]``;
``EncodeJpegVariableQuality`` takes the quality as a tensor, which
``adjust_jpeg_quality`` and ``random_jpeg_quality`` use for a round trip
through a JPEG file (the dtype kept, as TF does).

Bytes that are not an image of the op's format are an ``InvalidArgumentError``
naming the op; no Pillow exception gets out of a kernel.  ``is_jpeg`` is
TF's composition: the first three bytes compared with JPEG's marker.

    >>> import flowbook as fb, numpy as np
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     png = fb.image.encode_png(np.full((2, 3, 1), 7, np.uint8))
    ...     s.run(fb.image.decode_png(png, channels=3)).shape
    (2, 3, 3)
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np

from flowbook.framework import dtypes
from flowbook.framework.errors import InvalidArgumentError
from flowbook.framework.graph import name_scope
from flowbook.framework.registry import NOT_DIFFERENTIABLE, Out, op
from flowbook.framework.tensor import Tensor
from flowbook.ops._builder import make1, tensor
from flowbook.ops.image import color_ops
from flowbook.ops.math import math_ops
from flowbook.ops.random import random_ops
from flowbook.ops.strings import string_ops

__all__ = [
    "adjust_jpeg_quality",
    "decode_and_crop_jpeg",
    "decode_bmp",
    "decode_gif",
    "decode_image",
    "decode_jpeg",
    "decode_png",
    "encode_jpeg",
    "encode_png",
    "extract_jpeg_shape",
    "is_jpeg",
    "random_jpeg_quality",
]

_HOST = {"host_only": True, "grad": NOT_DIFFERENTIABLE, "type_attrs": {}}
_JPEG_MAGIC = b"\xff\xd8\xff"
_MODE_FOR = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}


def _pil() -> Any:
    from PIL import Image  # deferred: Pillow is needed only once an image op runs

    return Image


def _bytes(contents: Any) -> bytes:
    value = np.asarray(contents, dtype=object)
    if value.ndim != 0:
        raise InvalidArgumentError(None, None, f"contents must be scalar, got shape {value.shape}")
    data = value.item()
    return data if isinstance(data, bytes) else str(data).encode()


def _sniff(data: bytes) -> str | None:
    if data[:3] == _JPEG_MAGIC:
        return "JPEG"
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        return "PNG"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "GIF"
    if data[:2] == b"BM":
        return "BMP"
    return None


def _open(op_type: str, data: bytes, formats: tuple[str, ...]) -> Any:
    """The Pillow image of ``data``, which must be one of ``formats``."""
    kind = _sniff(data)
    if kind not in formats:
        want = " or ".join(formats)
        raise InvalidArgumentError(None, None, f"{op_type}: contents are not a {want} image")
    try:
        image = _pil().open(io.BytesIO(data), formats=[kind])
        image.load()
    except Exception as exc:  # Pillow's own errors, whatever their class
        raise InvalidArgumentError(None, None, f"{op_type}: invalid {kind} data: {exc}") from None
    return image


def _file_channels(image: Any) -> int:
    if image.mode == "P":  # a palette: RGB, or RGBA when it has a transparent entry
        return 4 if "transparency" in image.info else 3
    return {"1": 1, "L": 1, "I;16": 1, "I": 1, "LA": 2, "PA": 4, "RGBA": 4, "CMYK": 4}.get(
        image.mode, 3
    )


def _pixels(op_type: str, image: Any, channels: int) -> np.ndarray:
    """uint8 [h, w, c] of a Pillow image, converted to ``channels`` (0: the file's)."""
    if channels not in (0, 1, 3, 4):
        raise InvalidArgumentError(None, None, f"{op_type}: channels must be 0, 1, 3 or 4")
    want = channels or _file_channels(image)
    image = image if image.mode == _MODE_FOR[want] else image.convert(_MODE_FOR[want])
    return np.asarray(image, dtype=np.uint8).reshape(image.size[1], image.size[0], want)


def _scalar(array: np.ndarray) -> np.ndarray:
    out = np.empty((), dtype=object)
    out[()] = array
    return out


def _channels_of(channels: int) -> int | None:
    return channels or None


# ------------------------------------------------------------------ DecodeJpeg
_JPEG_ATTRS = (
    "channels",
    "ratio",
    "fancy_upscaling",
    "try_recover_truncated",
    "acceptable_fraction",
    "dct_method",
)


def _decode_jpeg(xp: Any, contents: Any, channels: int, ratio: int, **_: Any) -> Any:
    if ratio not in (1, 2, 4, 8):
        raise InvalidArgumentError(
            None, None, f"DecodeJpeg: ratio must be 1, 2, 4 or 8, got {ratio}"
        )
    data = _bytes(contents)
    if _sniff(data) != "JPEG":
        raise InvalidArgumentError(None, None, "DecodeJpeg: contents are not a JPEG image")
    try:
        image = _pil().open(io.BytesIO(data), formats=["JPEG"])
        w, h = image.size
        mode = "L" if channels == 1 else image.mode
        if ratio > 1 or channels == 1:  # libjpeg scales and converts to gray itself
            image.draft(mode, (max(w // ratio, 1), max(h // ratio, 1)))
        image.load()
    except Exception as exc:
        raise InvalidArgumentError(None, None, f"DecodeJpeg: invalid JPEG data: {exc}") from None
    return _pixels("DecodeJpeg", image, channels)


op(
    "DecodeJpeg",
    ("contents",),
    _JPEG_ATTRS,
    lambda contents, channels, **_: Out(dtypes.uint8, (None, None, _channels_of(channels))),
    _decode_jpeg,
    **_HOST,
)


def _jpeg_attrs(
    channels: int,
    ratio: int,
    fancy_upscaling: bool,
    try_recover_truncated: bool,
    acceptable_fraction: float,
    dct_method: str,
) -> dict[str, Any]:
    """The attrs DecodeJpeg and DecodeAndCropJpeg share, as their wrappers take them."""
    return {
        "channels": int(channels),
        "ratio": int(ratio),
        "fancy_upscaling": bool(fancy_upscaling),
        "try_recover_truncated": bool(try_recover_truncated),
        "acceptable_fraction": float(acceptable_fraction),
        "dct_method": str(dct_method),
    }


def decode_jpeg(
    contents: Any,
    channels: int = 0,
    ratio: int = 1,
    fancy_upscaling: bool = True,
    try_recover_truncated: bool = False,
    acceptable_fraction: float = 1.0,
    dct_method: str = "",
    name: str | None = None,
) -> Tensor:
    """A JPEG file's pixels, uint8 ``[h, w, channels]`` (``dct_method``: always accurate)."""
    attrs = _jpeg_attrs(
        channels, ratio, fancy_upscaling, try_recover_truncated, acceptable_fraction, dct_method
    )
    return make1("DecodeJpeg", [tensor(contents, dtypes.string)], attrs, name=name or "DecodeJpeg")


def _decode_and_crop(
    xp: Any, contents: Any, crop_window: Any, channels: int, ratio: int, **_: Any
) -> Any:
    pixels = _decode_jpeg(xp, contents, channels, ratio)
    y, x, h, w = (int(v) for v in np.asarray(crop_window).reshape(-1))
    if min(y, x) < 0 or min(h, w) <= 0 or y + h > pixels.shape[0] or x + w > pixels.shape[1]:
        raise InvalidArgumentError(
            None, None, f"DecodeAndCropJpeg: crop window {[y, x, h, w]} is not within the image"
        )
    return np.ascontiguousarray(pixels[y : y + h, x : x + w])


op(
    "DecodeAndCropJpeg",
    ("contents", "crop_window"),
    _JPEG_ATTRS,
    lambda contents, crop_window, channels, **_: Out(
        dtypes.uint8, (None, None, _channels_of(channels))
    ),
    _decode_and_crop,
    **_HOST,
)


def decode_and_crop_jpeg(
    contents: Any,
    crop_window: Any,
    channels: int = 0,
    ratio: int = 1,
    fancy_upscaling: bool = True,
    try_recover_truncated: bool = False,
    acceptable_fraction: float = 1.0,
    dct_method: str = "",
    name: str | None = None,
) -> Tensor:
    """The ``crop_window`` ``[y, x, height, width]`` of a JPEG file's pixels."""
    attrs = _jpeg_attrs(
        channels, ratio, fancy_upscaling, try_recover_truncated, acceptable_fraction, dct_method
    )
    inputs = [tensor(contents, dtypes.string), tensor(crop_window, dtypes.int32)]
    return make1("DecodeAndCropJpeg", inputs, attrs, name=name or "DecodeAndCropJpeg")


# ------------------------------------------------------------------ DecodePng
def _png_pixels(op_type: str, image: Any, channels: int, dtype: dtypes.DType) -> np.ndarray:
    if dtype == dtypes.uint16 and image.mode in ("I;16", "I;16B", "I") and channels in (0, 1):
        arr = np.asarray(image).astype(np.uint16)
        return arr.reshape(*arr.shape[:2], 1)
    if image.mode in ("I;16", "I;16B", "I"):  # 16-bit gray to 8 bits, as libpng strips
        image = _pil().fromarray((np.asarray(image).astype(np.uint32) >> 8).astype(np.uint8))
    pixels = _pixels(op_type, image, channels)
    return pixels.astype(np.uint16) * 257 if dtype == dtypes.uint16 else pixels


def _decode_png(xp: Any, contents: Any, channels: int, dtype: dtypes.DType) -> Any:
    if dtype not in (dtypes.uint8, dtypes.uint16):
        raise InvalidArgumentError(
            None, None, f"DecodePng: dtype must be uint8 or uint16, got {dtype.name}"
        )
    image = _open("DecodePng", _bytes(contents), ("PNG",))
    return _png_pixels("DecodePng", image, channels, dtype)


op(
    "DecodePng",
    ("contents",),
    ("channels", "dtype"),
    lambda contents, channels, dtype: Out(dtype, (None, None, _channels_of(channels))),
    _decode_png,
    **_HOST,
)


def decode_png(
    contents: Any, channels: int = 0, dtype: Any = dtypes.uint8, name: str | None = None
) -> Tensor:
    """A PNG file's pixels, ``[h, w, channels]`` of uint8 or uint16."""
    attrs = {"channels": int(channels), "dtype": dtypes.as_dtype(dtype)}
    return make1("DecodePng", [tensor(contents, dtypes.string)], attrs, name=name or "DecodePng")


# ------------------------------------------------------------------ DecodeGif
def _gif_frames(op_type: str, image: Any) -> np.ndarray:
    frames = []
    for index in range(getattr(image, "n_frames", 1)):
        image.seek(index)
        frames.append(np.asarray(image.convert("RGB"), dtype=np.uint8))
    return np.stack(frames)


def _decode_gif(xp: Any, contents: Any) -> Any:
    image = _open("DecodeGif", _bytes(contents), ("GIF",))
    try:
        return _gif_frames("DecodeGif", image)
    except Exception as exc:
        raise InvalidArgumentError(None, None, f"DecodeGif: invalid GIF data: {exc}") from None


op(
    "DecodeGif",
    ("contents",),
    (),
    lambda contents: Out(dtypes.uint8, (None, None, None, 3)),
    _decode_gif,
    **_HOST,
)


def decode_gif(contents: Any, name: str | None = None) -> Tensor:
    """Every frame of a GIF file, uint8 ``[frames, h, w, 3]``."""
    return make1("DecodeGif", [tensor(contents, dtypes.string)], name=name or "DecodeGif")


# ------------------------------------------------------------------ DecodeBmp
def _decode_bmp(xp: Any, contents: Any, channels: int) -> Any:
    image = _open("DecodeBmp", _bytes(contents), ("BMP",))
    return _pixels("DecodeBmp", image, channels)


op(
    "DecodeBmp",
    ("contents",),
    ("channels",),
    lambda contents, channels: Out(dtypes.uint8, (None, None, _channels_of(channels))),
    _decode_bmp,
    **_HOST,
)


def decode_bmp(contents: Any, channels: int = 0, name: str | None = None) -> Tensor:
    """A BMP file's pixels, uint8 ``[h, w, channels]``."""
    attrs = {"channels": int(channels)}
    return make1("DecodeBmp", [tensor(contents, dtypes.string)], attrs, name=name or "DecodeBmp")


# ----------------------------------------------------------------- DecodeImage
_IMAGE_DTYPES = (dtypes.uint8, dtypes.uint16, dtypes.float32)


def _decode_any(data: bytes, channels: int, dtype: dtypes.DType, expand_animations: bool) -> Any:
    kind = _sniff(data)
    if kind == "JPEG":
        return _decode_jpeg(np, _scalar(data), channels, 1)  # type: ignore[arg-type]
    image = _open("DecodeImage", data, ("PNG", "GIF", "BMP"))
    if kind == "PNG":
        return _png_pixels("DecodeImage", image, channels, dtype)
    if kind == "GIF":
        if channels not in (0, 3):
            raise InvalidArgumentError(None, None, "DecodeImage: a GIF has 3 channels")
        frames = _gif_frames("DecodeImage", image)
        return frames if expand_animations else frames[0]
    return _pixels("DecodeImage", image, channels)


def _decode_image(
    xp: Any, contents: Any, channels: int, dtype: dtypes.DType, expand_animations: bool
) -> Any:
    if dtype not in _IMAGE_DTYPES:
        raise InvalidArgumentError(None, None, f"DecodeImage: dtype {dtype.name} is not supported")
    pixels = _decode_any(_bytes(contents), channels, dtype, expand_animations)
    if dtype == dtypes.float32:  # convert_image_dtype: the integer range onto [0, 1]
        top = np.iinfo(pixels.dtype).max
        return pixels.astype(np.float32) * np.float32(1.0 / top)
    if dtype == dtypes.uint16 and pixels.dtype == np.uint8:
        return pixels.astype(np.uint16) * 257
    return pixels


def _image_infer(contents: Tensor, channels: int, dtype: Any, expand_animations: bool) -> Out:
    return Out(dtype, None if expand_animations else (None, None, _channels_of(channels)))


op(
    "DecodeImage",
    ("contents",),
    ("channels", "dtype", "expand_animations"),
    _image_infer,
    _decode_image,
    **_HOST,
    attr_kinds={"expand_animations": "bool"},
)


def decode_image(
    contents: Any,
    channels: int | None = None,
    dtype: Any = dtypes.uint8,
    name: str | None = None,
    expand_animations: bool = True,
) -> Tensor:
    """Decode a JPEG, PNG, GIF or BMP file, whichever its first bytes say it is.

    A GIF gives ``[frames, h, w, 3]`` (``expand_animations=False``: its first
    frame), the others ``[h, w, channels]``; ``dtype`` float32 scales to [0, 1].
    """
    attrs = {
        "channels": int(channels or 0),
        "dtype": dtypes.as_dtype(dtype),
        "expand_animations": bool(expand_animations),
    }
    return make1(
        "DecodeImage", [tensor(contents, dtypes.string)], attrs, name=name or "decode_image"
    )


# ------------------------------------------------------------------ encoders
def _image_array(op_type: str, image: Any) -> np.ndarray:
    arr = np.asarray(image)
    if arr.ndim != 3 or arr.shape[2] not in (1, 2, 3, 4):
        raise InvalidArgumentError(
            None,
            None,
            f"{op_type}: image must be [height, width, 1..4], got shape {list(arr.shape)}",
        )
    return arr


def _encoded(image: Any, fmt: str, **options: Any) -> Any:
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, **options)
    return _scalar(buffer.getvalue())  # type: ignore[arg-type]


def _encode_jpeg(
    xp: Any,
    image: Any,
    format: str,
    quality: int,
    progressive: bool,
    optimize_size: bool,
    chroma_downsampling: bool,
    density_unit: str,
    x_density: int,
    y_density: int,
    **_: Any,
) -> Any:
    arr = _image_array("EncodeJpeg", image)
    if arr.shape[2] not in (1, 3) or not 0 <= quality <= 100:
        raise InvalidArgumentError(
            None, None, "EncodeJpeg: image must have 1 or 3 channels, quality be in [0, 100]"
        )
    mode = {"grayscale": "L", "rgb": "RGB"}.get(format) or _MODE_FOR[arr.shape[2]]
    picture = _pil().fromarray(arr[..., 0] if arr.shape[2] == 1 else arr).convert(mode)
    dpi = (x_density, y_density) if density_unit == "in" else (x_density * 2.54, y_density * 2.54)
    options = {"quality": int(quality), "progressive": progressive, "optimize": optimize_size}
    return _encoded(
        picture, "JPEG", subsampling=2 if chroma_downsampling else 0, dpi=dpi, **options
    )


_ENCODE_JPEG_ATTRS = (
    "format",
    "quality",
    "progressive",
    "optimize_size",
    "chroma_downsampling",
    "density_unit",
    "x_density",
    "y_density",
    "xmp_metadata",
)
op(
    "EncodeJpeg",
    ("image",),
    _ENCODE_JPEG_ATTRS,
    lambda image, **_: Out(dtypes.string, ()),
    _encode_jpeg,
    **_HOST,
)


def encode_jpeg(
    image: Any,
    format: str = "",
    quality: int = 95,
    progressive: bool = False,
    optimize_size: bool = False,
    chroma_downsampling: bool = True,
    density_unit: str = "in",
    x_density: int = 300,
    y_density: int = 300,
    xmp_metadata: str = "",
    name: str | None = None,
) -> Tensor:
    """A JPEG file of a uint8 ``[h, w, 1 or 3]`` image, as a string scalar."""
    attrs = {
        "format": format,
        "quality": int(quality),
        "progressive": bool(progressive),
        "optimize_size": bool(optimize_size),
        "chroma_downsampling": bool(chroma_downsampling),
        "density_unit": density_unit,
        "x_density": int(x_density),
        "y_density": int(y_density),
        "xmp_metadata": xmp_metadata,
    }
    return make1("EncodeJpeg", [tensor(image, dtypes.uint8)], attrs, name=name or "EncodeJpeg")


def _encode_png(xp: Any, image: Any, compression: int) -> Any:
    arr = _image_array("EncodePng", image)
    if not -1 <= compression <= 9:
        raise InvalidArgumentError(None, None, "EncodePng: compression must be in [-1, 9]")
    level = 6 if compression == -1 else compression
    channels = arr.shape[2]
    if arr.dtype == np.uint16 and channels != 1:  # Pillow writes 16-bit gray only
        raise InvalidArgumentError(None, None, "EncodePng: uint16 images must have 1 channel")
    picture = _pil().fromarray(arr[..., 0] if channels == 1 else arr)  # L, I;16, LA, RGB, RGBA
    return _encoded(picture, "PNG", compress_level=level)


def _encode_png_infer(image: Tensor, compression: int) -> Out:
    if image.dtype not in (dtypes.uint8, dtypes.uint16):
        raise TypeError(f"EncodePng: image must be uint8 or uint16, got {image.dtype.name}")
    return Out(dtypes.string, ())


op(
    "EncodePng",
    ("image",),
    ("compression",),
    _encode_png_infer,
    _encode_png,
    **{**_HOST, "type_attrs": None},
)


def encode_png(image: Any, compression: int = -1, name: str | None = None) -> Tensor:
    """A PNG file of a uint8 or uint16 ``[h, w, channels]`` image, as a string scalar."""
    value = tensor(image)
    if value.dtype not in (dtypes.uint8, dtypes.uint16):
        value = tensor(image, dtypes.uint8)
    return make1("EncodePng", [value], {"compression": int(compression)}, name=name or "EncodePng")


def _encode_jpeg_variable(xp: Any, images: Any, quality: Any) -> Any:
    q = int(np.asarray(quality))
    return _encode_jpeg(xp, images, "", q, False, False, True, "in", 300, 300)


op(
    "EncodeJpegVariableQuality",
    ("images", "quality"),
    (),
    lambda images, quality: Out(dtypes.string, ()),
    _encode_jpeg_variable,
    **_HOST,
)


def adjust_jpeg_quality(image: Any, jpeg_quality: Any, name: str | None = None) -> Tensor:
    """``image`` [h, w, 1 or 3] through a JPEG file of ``jpeg_quality`` and back (its dtype kept)."""
    with name_scope(name, "adjust_jpeg_quality", [image]):
        image = tensor(image, name="image")
        channels = (image._shape or [None])[-1]
        orig = image.dtype
        as_u8 = color_ops.convert_image_dtype(image, dtypes.uint8, saturate=True)
        quality = tensor(jpeg_quality, dtypes.int32)
        jpg = make1("EncodeJpegVariableQuality", [as_u8, quality])
        back = decode_jpeg(jpg, channels=int(channels or 0))
        return color_ops.convert_image_dtype(back, orig, saturate=True)


def random_jpeg_quality(
    image: Any, min_jpeg_quality: int, max_jpeg_quality: int, seed: int | None = None
) -> Tensor:
    """``adjust_jpeg_quality`` at a quality drawn from [min_jpeg_quality, max_jpeg_quality)."""
    if not 0 <= min_jpeg_quality < max_jpeg_quality <= 100:
        raise ValueError("need 0 <= min_jpeg_quality < max_jpeg_quality <= 100")
    quality = random_ops.random_uniform(
        [], min_jpeg_quality, max_jpeg_quality, dtype=dtypes.int32, seed=seed
    )
    return adjust_jpeg_quality(image, quality)


# ---------------------------------------------------------- ExtractJpegShape
def _jpeg_shape(xp: Any, contents: Any, output_type: dtypes.DType) -> Any:
    data = _bytes(contents)
    if _sniff(data) != "JPEG":
        raise InvalidArgumentError(None, None, "ExtractJpegShape: contents are not a JPEG image")
    try:
        image = _pil().open(io.BytesIO(data), formats=["JPEG"])  # reads the header only
    except Exception as exc:
        raise InvalidArgumentError(
            None, None, f"ExtractJpegShape: invalid JPEG data: {exc}"
        ) from None
    w, h = image.size
    return np.array([h, w, _file_channels(image)], dtype=output_type.np)


op(
    "ExtractJpegShape",
    ("contents",),
    ("output_type",),
    lambda contents, output_type: Out(output_type, (3,)),
    _jpeg_shape,
    **_HOST,
)


def extract_jpeg_shape(
    contents: Any, output_type: Any = dtypes.int32, name: str | None = None
) -> Tensor:
    """A JPEG file's ``[height, width, channels]``, read from its header."""
    attrs = {"output_type": dtypes.as_dtype(output_type)}
    return make1(
        "ExtractJpegShape",
        [tensor(contents, dtypes.string)],
        attrs,
        name=name or "ExtractJpegShape",
    )


def is_jpeg(contents: Any, name: str | None = None) -> Tensor:
    """Whether a string scalar starts with JPEG's marker (TF's composition)."""
    head = string_ops.substr(tensor(contents, dtypes.string), 0, 3)
    return math_ops.equal(head, tensor(_JPEG_MAGIC, dtypes.string), name=name or "is_jpeg")
