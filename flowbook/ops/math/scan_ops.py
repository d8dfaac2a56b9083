"""Scans: Cumsum and Cumprod, running sums and products along one axis.

Both ops are one row each of the same design: the input ``x`` and the
``axis`` (an int32 input tensor, as in TensorFlow's GraphDefs, read on the
host) and two bool attrs.  ``exclusive`` shifts the scan by one so that
element ``i`` leaves itself out (the first is the identity, 0 or 1);
``reverse`` scans from the end.  The kernel flips, scans with
``xp.cumsum``/``xp.cumprod`` in the input's dtype, shifts, and flips back, so
one body serves numpy and CuPy.  The output looks like the input; ``infer``
checks the dtype and, when the graph knows it, the axis against the rank.

Gradients are TensorFlow's formulas: a sum's gradient is the cumsum of the
incoming gradient running the other way (same ``exclusive``, ``reverse``
flipped); a product's is the same reversed cumsum of ``g * cumprod(x)``
divided by ``x`` (undefined where ``x`` is 0, as in TensorFlow).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.cumsum([1, 2, 3], exclusive=True, reverse=True)).tolist()
    [5, 3, 0]
"""

from __future__ import annotations

from typing import Any

from flowbook.framework.graph import name_scope
from flowbook.framework.registry import Out, op
from flowbook.framework.tensor import Operation, Tensor
from flowbook.ops._builder import make1
from flowbook.ops._shape_inputs import check_int, const_int, int_input, norm_axis
from flowbook.ops.array.constant_op import convert_to_tensor
from flowbook.ops.math.elementwise import NUMBER, check_dtype
from flowbook.ops.math.elementwise_ops import conj, multiply, realdiv

__all__ = ["cumprod", "cumsum"]


def _scan_infer(op_type: str) -> Any:
    def infer(x: Tensor, axis: Tensor, exclusive: bool = False, reverse: bool = False) -> Out:
        check_dtype(x.dtype, NUMBER, "x")
        check_int(op_type, "axis", axis)
        if axis._shape is not None and len(axis._shape) != 0:
            raise ValueError(f"axis must be a scalar, got shape {list(axis._shape)}")
        a = const_int(axis)
        if x._shape is not None and a is not None:
            norm_axis(a, len(x._shape))  # ValueError when out of range (a scalar has none)
        return Out(x.dtype, x._shape)

    return infer


def _scan_kernel(fn: str, identity: int) -> Any:
    def kernel(xp: Any, x: Any, axis: Any, exclusive: bool = False, reverse: bool = False) -> Any:
        a = int(axis) % max(x.ndim, 1)
        if reverse:
            x = xp.flip(x, a)
        out = getattr(xp, fn)(x, axis=a, dtype=x.dtype)
        if exclusive and x.shape[a]:
            first = [slice(None)] * x.ndim
            first[a] = slice(0, 1)
            rest = [slice(None)] * x.ndim
            rest[a] = slice(0, -1)
            edge = xp.full_like(out[tuple(first)], identity)
            out = xp.concatenate([edge, out[tuple(rest)]], axis=a)
        return xp.flip(out, a) if reverse else out

    return kernel


def _scan(op_type: str, x: Any, axis: Any, exclusive: bool, reverse: bool, name: Any) -> Tensor:
    with name_scope(name, op_type) as scope:
        t = convert_to_tensor(x, name="x")
        attrs = {"exclusive": bool(exclusive), "reverse": bool(reverse)}
        return make1(op_type, [t, int_input(axis, "axis")], attrs, name=scope)


def _cumsum_grad(op: Operation, g: Tensor) -> list[Tensor | None]:
    """The incoming gradient summed the other way: each x[i] feeds every later output."""
    ex, rev = op.attrs["exclusive"], op.attrs["reverse"]
    return [make1("Cumsum", [g, op.inputs[1]], {"exclusive": ex, "reverse": not rev}), None]


def _cumprod_grad(op: Operation, g: Tensor) -> list[Tensor | None]:
    """TF's formula: reverse-cumsum of ``g * cumprod(x)``, over ``x`` (x must not be 0)."""
    x, axis = op.inputs
    ex, rev = op.attrs["exclusive"], op.attrs["reverse"]
    back = make1(
        "Cumsum", [multiply(g, conj(op.outputs[0])), axis], {"exclusive": ex, "reverse": not rev}
    )
    return [realdiv(back, conj(x)), None]


op(
    "Cumsum",
    ("x", "axis"),
    ("exclusive", "reverse"),
    _scan_infer("Cumsum"),
    _scan_kernel("cumsum", 0),
    host_inputs=(1,),
    grad=_cumsum_grad,
    type_attrs={"T": 0, "Tidx": 1},
)
op(
    "Cumprod",
    ("x", "axis"),
    ("exclusive", "reverse"),
    _scan_infer("Cumprod"),
    _scan_kernel("cumprod", 1),
    host_inputs=(1,),
    grad=_cumprod_grad,
    type_attrs={"T": 0, "Tidx": 1},
)


def cumsum(
    x: Any, axis: Any = 0, exclusive: bool = False, reverse: bool = False, name: Any = None
) -> Tensor:
    """The running sum of ``x`` along ``axis`` (``exclusive`` leaves each element out).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.cumsum([[1, 2], [3, 4]], axis=1)).tolist()
    [[1, 3], [3, 7]]
    """
    return _scan("Cumsum", x, axis, exclusive, reverse, name)


def cumprod(
    x: Any, axis: Any = 0, exclusive: bool = False, reverse: bool = False, name: Any = None
) -> Tensor:
    """The running product of ``x`` along ``axis`` (``reverse`` runs from the end).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.cumprod([2, 3, 4], exclusive=True)).tolist()
    [1, 2, 6]
    """
    return _scan("Cumprod", x, axis, exclusive, reverse, name)
