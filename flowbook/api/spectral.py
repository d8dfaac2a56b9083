"""``tf.spectral`` (and ``tf.signal``'s transforms): the FFTs, and the real ones built on them.

The complex transforms are the registry's ``FFT*``/``IFFT*`` ops
(``flowbook.ops.math.fft_ops``); ``rfft``/``irfft`` (1-, 2-, 3-D) are built from
them there, so they have gradients.  ``fft_length`` crops or zero-pads the
transformed dims as TensorFlow's does.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default(), tf.Session() as s:
    ...     s.run(tf.spectral.irfft(tf.spectral.rfft([1.0, 2.0, 3.0]), [3])).round(5).tolist()
    [1.0, 2.0, 3.0]
"""

from __future__ import annotations

from typing import Any

from flowbook.framework.tensor import Tensor
from flowbook.ops.math.fft_ops import fft, fft2d, fft3d, ifft, ifft2d, ifft3d, irfft_nd, rfft_nd

__all__ = [
    "fft",
    "fft2d",
    "fft3d",
    "ifft",
    "ifft2d",
    "ifft3d",
    "irfft",
    "irfft2d",
    "irfft3d",
    "rfft",
    "rfft2d",
    "rfft3d",
]


def rfft(input_tensor: Any, fft_length: Any = None, name: str | None = None) -> Tensor:
    """The transform of a real signal's last dim: its first ``n // 2 + 1`` terms."""
    return rfft_nd(input_tensor, 1, fft_length, name)


def rfft2d(input_tensor: Any, fft_length: Any = None, name: str | None = None) -> Tensor:
    """The 2-D transform of a real tensor's innermost two dims (last dim halved)."""
    return rfft_nd(input_tensor, 2, fft_length, name)


def rfft3d(input_tensor: Any, fft_length: Any = None, name: str | None = None) -> Tensor:
    """The 3-D transform of a real tensor's innermost three dims (last dim halved)."""
    return rfft_nd(input_tensor, 3, fft_length, name)


def irfft(input_tensor: Any, fft_length: Any = None, name: str | None = None) -> Tensor:
    """The real signal whose ``rfft`` is ``input_tensor`` (length ``fft_length``)."""
    return irfft_nd(input_tensor, 1, fft_length, name)


def irfft2d(input_tensor: Any, fft_length: Any = None, name: str | None = None) -> Tensor:
    """The real 2-D signal whose ``rfft2d`` is ``input_tensor``."""
    return irfft_nd(input_tensor, 2, fft_length, name)


def irfft3d(input_tensor: Any, fft_length: Any = None, name: str | None = None) -> Tensor:
    """The real 3-D signal whose ``rfft3d`` is ``input_tensor``."""
    return irfft_nd(input_tensor, 3, fft_length, name)
