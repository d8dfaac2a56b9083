"""Complex numbers: ``real``, ``imag``, ``angle`` and ``complex``, as TF declares them.

``Real``, ``Imag`` and ``Angle`` take a complex tensor and give the float
of its precision (attr ``Tout``: complex64 -> float32); ``Complex`` builds
one from two float tensors (numpy broadcasting).  Gradients are TF's:
``Real``: ``complex(g, 0)``, ``Imag``: ``complex(0, g)``, ``Complex``: the
real and imaginary parts of ``g``, ``Angle``: ``-complex(g, 0) / complex(im, re)``.
The wrappers take real tensors too, as TF's do: ``real(x)`` is ``x``,
``imag(x)`` zeros and ``angle(x)`` pi where x < 0, else 0.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.angle(fb.complex(0.0, 2.0))).tolist()
    1.5707964
"""

from __future__ import annotations

import math
from typing import Any

from flowbook.framework import dtypes
from flowbook.framework.dtypes import DType
from flowbook.framework.graph import name_scope
from flowbook.framework.registry import Out, op
from flowbook.framework.tensor import Operation, Tensor
from flowbook.framework.tensor_shape import broadcast
from flowbook.ops._builder import make1, same_dtype, tensor
from flowbook.ops.array import array_ops
from flowbook.ops.array.select_v2_ops import where_v2
from flowbook.ops.math.broadcast_grad import unbroadcast
from flowbook.ops.math.elementwise import COMPLEX, FLOAT, check_dtype
from flowbook.ops.math.elementwise_ops import less, multiply, negative, reciprocal

__all__ = ["angle", "complex", "imag", "real"]

_PART = {dtypes.complex64: dtypes.float32, dtypes.complex128: dtypes.float64}
_WHOLE = {v: k for k, v in _PART.items()}


def _part_infer(x: Tensor, Tout: DType, **_: Any) -> Out:
    check_dtype(x.dtype, COMPLEX, "input")
    return Out(Tout, x._shape)


def _complex_infer(real: Tensor, imag: Tensor, Tout: DType, **_: Any) -> Out:
    dt = same_dtype("Complex", ("real", "imag"), real, imag)
    check_dtype(dt, frozenset({dtypes.float32, dtypes.float64}), "real")
    return Out(Tout, broadcast(real._shape, imag._shape))


def _complex_kernel(xp: Any, re: Any, im: Any, Tout: DType) -> Any:
    out = xp.empty(xp.broadcast(re, im).shape, Tout.np)
    out.real, out.imag = re, im
    return out


def _complex_grad(op: Operation, g: Tensor) -> tuple[Tensor | None, ...]:
    re, im = op.inputs
    return unbroadcast(real(g), re, im)[0], unbroadcast(imag(g), re, im)[1]


def _angle_grad(op: Operation, g: Tensor) -> Tensor:
    x = op.inputs[0]
    z = reciprocal(complex(imag(x), real(x)))
    return negative(multiply(complex(g, array_ops.zeros_like(g)), z))


def _part(name: str, fn: str, grad: Any) -> None:
    kernel = lambda xp, x, Tout, **_: getattr(xp, fn)(x).astype(Tout.np)
    op(name, ("input",), ("Tout",), _part_infer, kernel, grad=grad)


_part("Real", "real", lambda op, g: complex(g, array_ops.zeros_like(g)))
_part("Imag", "imag", lambda op, g: complex(array_ops.zeros_like(g), g))
_part("Angle", "angle", _angle_grad)
op("Complex", ("real", "imag"), ("Tout",), _complex_infer, _complex_kernel, grad=_complex_grad)


def real(input: Any, name: str | None = None) -> Tensor:
    """The real part of each element (a real tensor comes back unchanged).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.real([1 + 2j, 4 - 3j])).tolist()
    [1.0, 4.0]
    """
    x = tensor(input)
    if not x.dtype.is_complex:
        return x
    return make1("Real", (x,), {"Tout": _PART[x.dtype]}, name=name or "Real")


def imag(input: Any, name: str | None = None) -> Tensor:
    """The imaginary part of each element (zeros for a real tensor).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.imag([1 + 2j, -3j])).tolist()
    [2.0, -3.0]
    """
    x = tensor(input)
    if not x.dtype.is_complex:
        return array_ops.zeros_like(x, name=name)
    return make1("Imag", (x,), {"Tout": _PART[x.dtype]}, name=name or "Imag")


def angle(input: Any, name: str | None = None) -> Tensor:
    """The argument of each element, in (-pi, pi] (pi or 0 for a real tensor).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.angle([1j, -2.0 + 0j])).tolist()
    [1.5707964, 3.1415927]
    """
    x = tensor(input)
    if x.dtype.is_complex:
        return make1("Angle", (x,), {"Tout": _PART[x.dtype]}, name=name or "Angle")
    check_dtype(x.dtype, FLOAT, "input")
    with name_scope(name, "Angle"):
        zero = array_ops.zeros_like(x)
        return where_v2(less(x, zero), zero + math.pi, zero)


def complex(real: Any, imag: Any, name: str | None = None) -> Tensor:
    """real + imag * 1j element-wise: float32 parts give complex64, float64 complex128.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.complex([1.0, 2.0], 3.0)).tolist()
    [(1+3j), (2+3j)]
    """
    re, im = tensor(real), tensor(imag)
    if re.dtype is not im.dtype and isinstance(imag, (int, float)):
        im = tensor(imag, dtype=re.dtype)
    if re.dtype is not im.dtype and isinstance(real, (int, float)):
        re = tensor(real, dtype=im.dtype)
    tout = _WHOLE.get(re.dtype, dtypes.complex64)
    return make1("Complex", (re, im), {"Tout": tout}, name=name or "Complex")
