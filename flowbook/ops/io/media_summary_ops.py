"""Media and tensor summary ops: ImageSummary, AudioSummaryV2, TensorSummaryV2.

Like the scalar ops (``flowbook.ops.io.summary_ops``) each kernel returns a
serialized ``Summary`` as a 0-d string array, ready for ``FileWriter.add_summary``.

- **ImageSummary**(tag, tensor; max_images): the first ``max_images`` images of a
  ``[batch, height, width, channels]`` batch (1, 3 or 4 channels), PNG-encoded.
  uint8 values are written as they are; floats are scaled as TensorFlow does:
  all non-negative, so that the largest is 255; otherwise shifted so that 0 is
  127, then scaled so that the smallest is 0 or the largest 255.  Tags are
  ``tag/image/i``, or ``tag/image`` when ``max_images`` is 1.
- **AudioSummaryV2**(tag, tensor, sample_rate; max_outputs): the first clips of
  a ``[batch, frames]`` or ``[batch, frames, channels]`` batch of floats in
  [-1, 1], encoded as 16-bit WAV (Python's ``wave``); tags ``tag/audio/i``.
- **TensorSummaryV2**(tag, tensor, serialized_summary_metadata): the tensor
  itself as a ``TensorProto``, with the given metadata (the text plugin's, for
  ``tf.summary.text``).

PNG is written with ``zlib`` (no imaging library needed): 8-bit samples, no
filtering, one IDAT chunk.

    >>> import flowbook as fb, numpy as np
    >>> from tensorboard.compat.proto.summary_pb2 import Summary
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     out = s.run(image_summary("im", fb.zeros([2, 4, 5, 3]), max_images=1))
    >>> [(v.tag, v.image.height, v.image.width) for v in Summary.FromString(out).value]
    [('im/image', 4, 5)]
"""

from __future__ import annotations

import io
import struct
import wave
import zlib
from typing import Any

import numpy as np

from flowbook.framework import dtypes
from flowbook.framework.errors import InvalidArgumentError
from flowbook.framework.registry import NOT_DIFFERENTIABLE, Out, op
from flowbook.framework.tensor import Tensor
from flowbook.graph_io.tensor_protos import make_tensor_proto
from flowbook.ops._builder import make1, tensor
from flowbook.ops.io.summary_ops import _as_bytes, _host, _summary_pb2, _tag

__all__ = ["audio_summary", "encode_png", "encode_wav", "image_summary", "tensor_summary_v2"]


# ------------------------------------------------------------------ encoders
def encode_png(image: np.ndarray) -> bytes:
    """A ``[height, width, channels]`` uint8 array (1-4 channels) as PNG bytes.

    >>> encode_png(np.zeros((1, 1, 1), np.uint8))[:8]
    b'\\x89PNG\\r\\n\\x1a\\n'
    """
    height, width, channels = image.shape
    color = {1: 0, 2: 4, 3: 2, 4: 6}[channels]  # grey, grey+alpha, RGB, RGBA

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    rows = np.ascontiguousarray(image, dtype=np.uint8).reshape(height, width * channels)
    raw = np.concatenate([np.zeros((height, 1), np.uint8), rows], axis=1).tobytes()  # filter 0
    header = struct.pack(">IIBBBBB", width, height, 8, color, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def encode_wav(clip: np.ndarray, sample_rate: int) -> bytes:
    """A ``[frames, channels]`` float clip in [-1, 1] as 16-bit PCM WAV bytes.

    >>> encode_wav(np.zeros((3, 1)), 8000)[:4]
    b'RIFF'
    """
    pcm = (np.clip(clip, -1.0, 1.0) * 32767).round().astype("<i2")
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as w:
        w.setnchannels(clip.shape[1])
        w.setsampwidth(2)
        w.setframerate(int(sample_rate))
        w.writeframes(pcm.tobytes())
    return buffer.getvalue()


def _as_uint8(images: np.ndarray) -> np.ndarray:
    """Images as uint8, floats scaled as TensorFlow's image summary scales them."""
    if images.dtype == np.uint8:
        return images
    x = images.astype(np.float64)
    if x.size == 0:
        return x.astype(np.uint8)
    lo, hi = float(x.min()), float(x.max())
    if lo >= 0:
        scale = 255.0 / hi if hi > 0 else 0.0
        return np.clip(x * scale + 0.5, 0, 255).astype(np.uint8)
    scale = min(127.0 / -lo, 128.0 / hi) if hi > 0 else 127.0 / -lo
    return np.clip(x * scale + 127.0 + 0.5, 0, 255).astype(np.uint8)


def _tags(base: str, kind: str, count: int, limit: int) -> list[str]:
    """``base/kind/i`` for each output, or ``base/kind`` when only one is asked for."""
    return [f"{base}/{kind}" if limit == 1 else f"{base}/{kind}/{i}" for i in range(count)]


# ---------------------------------------------------------------------- ops
def _string_scalar(*_: Any, **__: Any) -> Out:
    return Out(dtypes.string, ())


def _image_kernel(xp: Any, tag: Any, images: Any, max_images: int = 3) -> np.ndarray:
    images = _host(images)
    if images.ndim != 4 or images.shape[-1] not in (1, 3, 4):
        raise InvalidArgumentError(
            None, None, f"images must be 4-D with 1, 3 or 4 channels: shape {list(images.shape)}"
        )
    base = _tag(_host(tag)[()])
    chosen = _as_uint8(images[:max_images])
    s = _summary_pb2().Summary()
    for name, image in zip(_tags(base, "image", len(chosen), max_images), chosen):
        v = s.value.add(tag=name).image
        v.height, v.width, v.colorspace = image.shape
        v.encoded_image_string = encode_png(image)
    return _as_bytes(s)


op(
    "ImageSummary",
    ("tag", "tensor"),
    ("max_images",),
    infer=_string_scalar,
    kernel=_image_kernel,
    grad=NOT_DIFFERENTIABLE,
    type_attrs={"T": 1},
    attr_kinds={"max_images": "int"},
)


def _audio_kernel(
    xp: Any, tag: Any, clips: Any, sample_rate: Any, max_outputs: int = 3
) -> np.ndarray:
    clips, rate = _host(clips).astype(np.float64), float(_host(sample_rate))
    if clips.ndim == 2:
        clips = clips[:, :, None]
    if clips.ndim != 3:
        raise InvalidArgumentError(
            None, None, f"audio must be 2-D or 3-D: shape {list(clips.shape)}"
        )
    base = _tag(_host(tag)[()])
    chosen = clips[:max_outputs]
    s = _summary_pb2().Summary()
    for name, clip in zip(_tags(base, "audio", len(chosen), max_outputs), chosen):
        v = s.value.add(tag=name).audio
        v.sample_rate, v.num_channels, v.length_frames = rate, clip.shape[1], clip.shape[0]
        v.content_type = "audio/wav"
        v.encoded_audio_string = encode_wav(clip, int(rate))
    return _as_bytes(s)


op(
    "AudioSummaryV2",
    ("tag", "tensor", "sample_rate"),
    ("max_outputs",),
    infer=_string_scalar,
    kernel=_audio_kernel,
    grad=NOT_DIFFERENTIABLE,
    type_attrs={},
    attr_kinds={"max_outputs": "int"},
)


def _tensor_kernel(xp: Any, tag: Any, value: Any, metadata: Any) -> np.ndarray:
    pb = _summary_pb2()
    s = pb.Summary()
    v = s.value.add(tag=_tag(_host(tag)[()]))
    blob = _host(metadata)[()]
    v.metadata.ParseFromString(blob if isinstance(blob, bytes) else str(blob).encode())
    v.tensor.CopyFrom(make_tensor_proto(_host(value)))
    return _as_bytes(s)


op(
    "TensorSummaryV2",
    ("tag", "tensor", "serialized_summary_metadata"),
    infer=_string_scalar,
    kernel=_tensor_kernel,
    grad=NOT_DIFFERENTIABLE,
    type_attrs={"T": 1},
)


# ----------------------------------------------------------------- wrappers
def image_summary(tag: Any, images: Any, max_images: int = 3, name: str | None = None) -> Tensor:
    """TF 0.x ``tf.image_summary``: PNG images of the first ``max_images`` of a batch."""
    inputs = [tensor(tag, dtype=dtypes.string), tensor(images)]
    return make1("ImageSummary", inputs, {"max_images": int(max_images)}, name or "ImageSummary")


def audio_summary(
    tag: Any, clips: Any, sample_rate: Any, max_outputs: int = 3, name: str | None = None
) -> Tensor:
    """TF 0.x ``tf.audio_summary``: WAV clips of the first ``max_outputs`` of a batch."""
    inputs = [
        tensor(tag, dtype=dtypes.string),
        tensor(clips, dtype=dtypes.float32),
        tensor(sample_rate, dtype=dtypes.float32),
    ]
    return make1(
        "AudioSummaryV2", inputs, {"max_outputs": int(max_outputs)}, name or "AudioSummary"
    )


def tensor_summary_v2(tag: Any, value: Any, metadata: bytes, name: str | None = None) -> Tensor:
    """A Summary holding ``value`` as a TensorProto, with serialized ``SummaryMetadata``."""
    try:  # a string constant holds text where the bytes are UTF-8, as a GraphDef import gives it
        held: bytes | str = metadata.decode("utf-8")
    except UnicodeDecodeError:
        held = metadata
    inputs = [
        tensor(tag, dtype=dtypes.string),
        tensor(value),
        tensor(held, dtype=dtypes.string),
    ]
    return make1("TensorSummaryV2", inputs, name=name or "TensorSummaryV2")
