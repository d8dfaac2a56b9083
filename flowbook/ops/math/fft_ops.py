"""Discrete Fourier transforms: ``tf.fft``/``ifft`` (1-, 2-, 3-D), ``fftnd``, ``tf.spectral``.

``FFT``, ``FFT2D`` and ``FFT3D`` transform the innermost 1, 2 or 3 dims of a
complex64 or complex128 tensor (unnormalised, as ``numpy.fft``), ``IFFT*``
invert them (divided by the transform's size); the kernel is ``xp.fft.fftn``
over those axes, numpy's on the CPU and CuPy's (cuFFT) on a GPU.  numpy
computes in complex128, so the result is cast back to the input's dtype.
The gradients are TensorFlow's: ``FFT``'s is ``IFFT(g) * n``, ``IFFT``'s is
``FFT(g) / n`` (n the product of the transformed dims).

``fftnd``/``ifftnd`` take any ``axes`` and an ``fft_length`` per axis (the
input cropped or zero-padded to it first, as TF's ``FFTND``); they are
built from the 1-D ops on one axis at a time (transpose it innermost, crop
or pad, transform, transpose back), so their gradients come from those.
``rfft``/``irfft`` (1-, 2-, 3-D, in ``tf.spectral`` and ``tf.signal``) are
likewise built from the complex transforms: ``rfft`` keeps the first
``n // 2 + 1`` terms of the real input's transform, ``irfft`` rebuilds the
Hermitian-symmetric spectrum and keeps the real part.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.fft(fb.constant([1, 0, 0, 0], fb.complex64))).real.tolist()
    [1.0, 1.0, 1.0, 1.0]
"""

from __future__ import annotations

from typing import Any

from flowbook.framework import dtypes
from flowbook.framework.graph import name_scope
from flowbook.framework.registry import OpDef, Out, op
from flowbook.framework.tensor import Operation, Tensor
from flowbook.ops._builder import make1, tensor
from flowbook.ops.array import array_ops
from flowbook.ops.math import math_ops
from flowbook.ops.math.complex_ops import complex as complex_
from flowbook.ops.math.complex_ops import real
from flowbook.ops.math.elementwise_ops import conj

__all__ = [
    "fft",
    "fft2d",
    "fft3d",
    "fftnd",
    "ifft",
    "ifft2d",
    "ifft3d",
    "ifftnd",
    "irfftnd",
    "rfftnd",
]

_COMPLEX = (dtypes.complex64, dtypes.complex128)


def _infer(rank: int, op_type: str) -> Any:
    def infer(x: Tensor) -> Out:
        if x.dtype not in _COMPLEX:
            raise TypeError(f"{op_type} needs complex64 or complex128 input, got {x.dtype.name}")
        if x._shape is not None and len(x._shape) < rank:
            raise ValueError(f"{op_type} needs rank >= {rank}, got shape {list(x._shape)}")
        return Out(x.dtype, x._shape)

    return infer


def _kernel(rank: int, inverse: bool) -> Any:
    def kernel(xp: Any, x: Any) -> Any:
        axes = tuple(range(-rank, 0))
        out = xp.fft.ifftn(x, axes=axes) if inverse else xp.fft.fftn(x, axes=axes)
        return out.astype(x.dtype, copy=False)

    return kernel


def _size(g: Tensor, rank: int) -> Tensor:
    dims = array_ops.shape(g)[-rank:]
    return math_ops.cast(math_ops.reduce_prod(dims), g.dtype)


def _grad(rank: int, inverse: bool) -> Any:
    other = ("FFT", "IFFT")[not inverse] + ("", "2D", "3D")[rank - 1]

    def grad(op: Operation, g: Tensor) -> list[Tensor]:
        back = make1(other, [g])
        return [back / _size(g, rank) if inverse else back * _size(g, rank)]

    return grad


def transform(name: str, rank: int, inverse: bool) -> OpDef:
    """Declare a transform of the ``rank`` innermost dims (the inverse one if ``inverse``)."""
    infer, kernel, grad = _infer(rank, name), _kernel(rank, inverse), _grad(rank, inverse)
    return op(name, ("input",), (), infer, kernel, heavy=True, grad=grad)


transform("FFT", 1, False)
transform("IFFT", 1, True)
transform("FFT2D", 2, False)
transform("IFFT2D", 2, True)
transform("FFT3D", 3, False)
transform("IFFT3D", 3, True)


def _transform(op_type: str, input: Any, name: Any) -> Tensor:
    return make1(op_type, [tensor(input)], name=name or op_type)


def fft(input: Any, name: str | None = None) -> Tensor:
    """The discrete Fourier transform of the innermost dim of a complex tensor.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.fft(fb.constant([1, 2], fb.complex64))).real.tolist()
    [3.0, -1.0]
    """
    return _transform("FFT", input, name)


def ifft(input: Any, name: str | None = None) -> Tensor:
    """The inverse transform of the innermost dim: ``ifft(fft(x)) == x``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.ifft(fb.constant([3, -1], fb.complex64))).real.tolist()
    [1.0, 2.0]
    """
    return _transform("IFFT", input, name)


def fft2d(input: Any, name: str | None = None) -> Tensor:
    """The 2-D transform of the innermost two dims.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.fft2d(fb.ones([2, 2], fb.complex64))).real.tolist()
    [[4.0, 0.0], [0.0, 0.0]]
    """
    return _transform("FFT2D", input, name)


def ifft2d(input: Any, name: str | None = None) -> Tensor:
    """The inverse 2-D transform of the innermost two dims.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.ifft2d(fb.constant([[4, 0], [0, 0]], fb.complex64))).real.tolist()
    [[1.0, 1.0], [1.0, 1.0]]
    """
    return _transform("IFFT2D", input, name)


def fft3d(input: Any, name: str | None = None) -> Tensor:
    """The 3-D transform of the innermost three dims.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     float(s.run(fb.fft3d(fb.ones([2, 2, 2], fb.complex64)))[0, 0, 0].real)
    8.0
    """
    return _transform("FFT3D", input, name)


def ifft3d(input: Any, name: str | None = None) -> Tensor:
    """The inverse 3-D transform of the innermost three dims.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     float(s.run(fb.ifft3d(fb.ones([2, 2, 2], fb.complex64)))[0, 0, 0].real)
    1.0
    """
    return _transform("IFFT3D", input, name)


def _fit(x: Tensor, n: int) -> Tensor:
    """``x`` cropped or zero-padded in its last dim to ``n`` (that dim must be known)."""
    have = x.shape.as_list()[-1]
    if have is None:
        raise ValueError("fft_length: the transformed dims must be known to crop or pad")
    if n < have:
        return x[..., :n]
    if n > have:
        pads = [[0, 0]] * (x.shape.ndims - 1) + [[0, n - have]]
        return array_ops.pad(x, pads)
    return x


def _along(x: Tensor, axis: int, n: int | None, op_type: str) -> Tensor:
    rank = x.shape.ndims
    perm = list(range(rank))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    moved = array_ops.transpose(x, perm) if axis != rank - 1 else x
    if n is not None:
        moved = _fit(moved, n)
    done = make1(op_type, [moved])
    return array_ops.transpose(done, perm) if axis != rank - 1 else done


def _nd(op_type: str, input: Any, fft_length: Any, axes: Any, name: Any) -> Tensor:
    with name_scope(name, op_type + "ND"):
        x = tensor(input)
        rank = x.shape.ndims
        if rank is None:
            raise ValueError(f"{op_type.lower()}nd needs a known rank")
        axes = list(range(rank)) if axes is None else [int(a) % rank for a in axes]
        lengths = [None] * len(axes) if fft_length is None else [int(n) for n in fft_length]
        if len(lengths) != len(axes):
            raise ValueError(f"fft_length has {len(lengths)} entries for {len(axes)} axes")
        for axis, n in zip(axes, lengths):
            x = _along(x, axis, n, op_type)
        return x


def fftnd(input: Any, fft_length: Any = None, axes: Any = None, name: str | None = None) -> Tensor:
    """The transform over ``axes`` (default all), each cropped/padded to ``fft_length``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.fftnd(fb.constant([[1, 2]], fb.complex64), [4], [1])).real.tolist()
    [[3.0, 1.0, -1.0, 1.0]]
    """
    return _nd("FFT", input, fft_length, axes, name)


def ifftnd(input: Any, fft_length: Any = None, axes: Any = None, name: str | None = None) -> Tensor:
    """The inverse transform over ``axes`` (default all), each cropped/padded to ``fft_length``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.ifftnd(fb.constant([[4, 0], [0, 0]], fb.complex64))).real.tolist()
    [[1.0, 1.0], [1.0, 1.0]]
    """
    return _nd("IFFT", input, fft_length, axes, name)


def _real_ffts(x: Tensor, rank: int, fft_length: Any) -> tuple[Tensor, list[int]]:
    nd = x.shape.ndims
    if nd is None or nd < rank:
        raise ValueError(f"rfft needs a known rank >= {rank}")
    dims = x.shape.as_list()[-rank:]
    lengths = dims if fft_length is None else [int(n) for n in fft_length]
    if any(n is None for n in lengths):
        raise ValueError("rfft: the transformed dims must be known (or give fft_length)")
    return x, lengths


def rfft_nd(input: Any, rank: int, fft_length: Any = None, name: Any = None) -> Tensor:
    """The transform of a real tensor's innermost ``rank`` dims, last dim's first n//2+1 terms.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(rfft_nd([1.0, 2.0, 3.0, 4.0], 1)).tolist()
    [(10+0j), (-2+2j), (-2+0j)]
    """
    with name_scope(name, "RFFT"):
        x, lengths = _real_ffts(tensor(input), rank, fft_length)
        if x.dtype not in (dtypes.float32, dtypes.float64):
            raise TypeError(f"rfft needs float32 or float64 input, got {x.dtype.name}")
        z = complex_(x, array_ops.zeros_like(x))
        nd = z.shape.ndims
        out = fftnd(z, lengths, list(range(nd - rank, nd)))
        return out[..., : lengths[-1] // 2 + 1]


def irfft_nd(input: Any, rank: int, fft_length: Any = None, name: Any = None) -> Tensor:
    """The real signal whose ``rfft_nd`` is ``input`` (last dim's length ``fft_length[-1]``).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(irfft_nd(fb.constant([10, -2 + 2j, -2], fb.complex64), 1)).tolist()
    [1.0, 2.0, 3.0, 4.0]
    """
    with name_scope(name, "IRFFT"):
        y = tensor(input)
        nd = y.shape.ndims
        if nd is None or nd < rank:
            raise ValueError(f"irfft needs a known rank >= {rank}")
        half = y.shape.as_list()[-1]
        if fft_length is None and half is None:
            raise ValueError("irfft: the last dim must be known (or give fft_length)")
        lengths = [None] * (rank - 1) + [2 * (half - 1)] if fft_length is None else list(fft_length)
        n = int(lengths[-1])
        y = _fit(y, n // 2 + 1)
        inner = fftnd_inverse_leading(y, lengths[:-1], rank)  # real signal: Hermitian in last
        mirror = conj(array_ops.reverse(inner[..., 1 : n - n // 2], [-1]))
        full = array_ops.concat([inner, mirror], -1)
        return real(make1("IFFT", [full]))


def fftnd_inverse_leading(y: Tensor, lengths: list[Any], rank: int) -> Tensor:
    """``y`` inverse-transformed over the transformed axes before the last one (if any)."""
    nd = y.shape.ndims
    for k, axis in enumerate(range(nd - rank, nd - 1)):
        n = None if lengths[k] is None else int(lengths[k])
        y = _along(y, axis, n, "IFFT")
    return y


def _over_axes(fn: Any, input: Any, fft_length: Any, axes: Any, name: Any, op: str) -> Tensor:
    """``fn`` (rfft_nd or irfft_nd) over ``axes``: moved innermost in order, then moved back."""
    with name_scope(name, op):
        x = tensor(input)
        rank = x.shape.ndims
        if rank is None:
            raise ValueError(f"{op.lower()} needs a known rank")
        axes = [int(a) % rank for a in axes]
        perm = [d for d in range(rank) if d not in axes] + axes
        back = [perm.index(d) for d in range(rank)]
        moved = array_ops.transpose(x, perm) if perm != list(range(rank)) else x
        out = fn(moved, len(axes), fft_length)
        return array_ops.transpose(out, back) if perm != list(range(rank)) else out


def rfftnd(input: Any, fft_length: Any, axes: Any, Tcomplex: Any = None, name=None) -> Tensor:
    """The transform of a real tensor over ``axes``; the last axis keeps n // 2 + 1 terms.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.rfftnd([[1.0, 2.0], [3.0, 4.0]], [2], [0])).tolist()
    [[(4+0j), (6+0j)], [(-2+0j), (-2+0j)]]
    """
    return _over_axes(rfft_nd, input, fft_length, axes, name, "RFFTND")


def irfftnd(input: Any, fft_length: Any, axes: Any, Treal: Any = None, name=None) -> Tensor:
    """The real tensor whose ``rfftnd`` over ``axes`` (lengths ``fft_length``) is ``input``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.irfftnd(fb.constant([[4, 6], [-2, -2]], fb.complex64), [2], [0])).tolist()
    [[1.0, 2.0], [3.0, 4.0]]
    """
    return _over_axes(irfft_nd, input, fft_length, axes, name, "IRFFTND")
