"""Casts between dtypes: the Cast op and TF1's cast, saturate_cast and to_* wrappers.

``Cast`` carries its source and target dtypes as attrs (``SrcT``, ``DstT``),
as TensorFlow's does; ``bind`` turns them into one ``astype`` call, so a cast
costs the executor nothing more.  Complex to real keeps the real part, as in
TF.  The gradient casts the incoming gradient back when both dtypes are
floating (or complex); otherwise there is none.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.cast(fb.constant([1.5]), fb.int32).op.get_attr("DstT")
    tf.int32
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flowbook.framework import dtypes
from flowbook.framework.dtypes import DType
from flowbook.framework.graph import name_scope
from flowbook.framework.registry import Out, op
from flowbook.framework.tensor import Operation, Tensor
from flowbook.ops._builder import make1, operands, tensor
from flowbook.ops.math.elementwise import INEXACT

__all__ = [
    "cast",
    "saturate_cast",
    "to_complex64",
    "to_complex128",
    "to_double",
    "to_float",
    "to_int32",
    "to_int64",
]


def _cast_infer(x: Tensor, SrcT: DType, DstT: DType, **_: Any) -> Out:
    if (x.dtype is dtypes.string) != (DstT is dtypes.string):
        raise TypeError(f"Cast {x.dtype.name} to {DstT.name} is not supported")
    return Out(DstT, x._shape)


def _cast_bind(xp: Any, SrcT: DType, DstT: DType, **_: Any) -> Callable[[Any], Any]:
    to = DstT.np
    if SrcT.is_complex and not DstT.is_complex:  # TF keeps the real part
        return lambda x: x.real.astype(to)
    return lambda x: x.astype(to)


def _cast_grad(op: Operation, g: Tensor) -> Tensor | None:
    """TF's: the gradient cast back when both dtypes are floating (or complex), else None."""
    src = op.inputs[0].dtype
    return cast(g, src) if src in INEXACT and g.dtype in INEXACT else None


op(
    "Cast",
    ("x",),
    ("SrcT", "DstT"),
    _cast_infer,
    lambda xp, x, SrcT, DstT, **_: _cast_bind(xp, SrcT, DstT)(x),
    bind=_cast_bind,
    grad=_cast_grad,
    type_attrs={},
)


def cast(x: Any, dtype: Any, name: str | None = None) -> Tensor:
    """``x`` as another dtype; floats become ints by truncation toward zero.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.cast([1.7, -1.7], fb.int32)).tolist()
    [1, -1]
    """
    to = dtypes.as_dtype(dtype)
    x = tensor(x)
    if x.dtype is to:
        return x
    return make1("Cast", (x,), {"SrcT": x.dtype, "DstT": to}, name=name or "Cast")


def saturate_cast(value: Any, dtype: Any, name: str | None = None) -> Tensor:
    """Cast, clipping first to the target dtype's range.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.saturate_cast([-5, 300], fb.uint8)).tolist()
    [0, 255]
    """
    to = dtypes.as_dtype(dtype)
    with name_scope(name, "saturate_cast", [value]):
        x = tensor(value)
        if x.dtype.is_numeric and not x.dtype.is_complex and to.is_numeric and not to.is_complex:
            if to.min > x.dtype.min:
                x = make1("Maximum", operands(x, to.min))
            if to.max < x.dtype.max:
                x = make1("Minimum", operands(x, to.max))
        return cast(x, to)


def _cast_to(fn: str, dtype: DType, op_name: str, example: str) -> Callable[..., Tensor]:
    """TF1's ``to_<dtype>(x, name)``: ``cast`` to one fixed dtype, named ``op_name``."""

    def to(x: Any, name: str = op_name) -> Tensor:
        return cast(x, dtype, name=name)

    to.__name__ = to.__qualname__ = fn
    to.__doc__ = f"""``cast(x, {dtype.name})``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.{fn}(fb.constant({example})).dtype
    tf.{dtype.name}
    """
    return to


to_float = _cast_to("to_float", dtypes.float32, "ToFloat", "[1, 2]")
to_double = _cast_to("to_double", dtypes.float64, "ToDouble", "[1, 2]")
to_int32 = _cast_to("to_int32", dtypes.int32, "ToInt32", "[1.5]")
to_int64 = _cast_to("to_int64", dtypes.int64, "ToInt64", "[1.5]")
to_complex64 = _cast_to("to_complex64", dtypes.complex64, "ToComplex64", "[1.5]")
to_complex128 = _cast_to("to_complex128", dtypes.complex128, "ToComplex128", "[1.5]")
_ALL_TO = (to_float, to_double, to_int32, to_int64, to_complex64, to_complex128)
__test__ = {f.__name__: f.__doc__ for f in _ALL_TO}
