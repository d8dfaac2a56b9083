"""How an element-wise op is declared: one row, one call, everything about it in it.

``binary(op_type, fn, dtypes, ...)`` and ``unary(...)`` take one row of an
element-wise table: TF's op type, the ``xp`` function that computes it (a
ufunc name, or a small kernel for the few that need more than one call), the
input dtypes, the output dtype when it is not the input's (comparisons give
bool), the public wrapper names, the gradient ``grad(op, g)`` (or
``NOT_DIFFERENTIABLE``) and the docstring as (summary, example call, value),
whose example runs as a doctest.  The call registers the OpDef, records the
row in ``BINARY`` or ``UNARY`` (public, so tests walk them) and returns the
wrapper, which the table module binds by plain assignment:

    >>> from flowbook.ops.math.elementwise import UNARY
    >>> next(r for r in UNARY if r.op_type == "Exp").wrappers
    ('exp',)

A row whose ``fn`` is a ufunc name binds straight to ``xp.<fn>``, so the
executor calls the ufunc with no Python layer in between; its OpDef says
``takes_out`` (the ufunc's ``out=``), so the memory plan may have it write
into the buffer of an input that dies there.  The dtype sets
(``FLOAT``, ``NUMBER``...) and :func:`check_dtype` are shared by every op
module that checks the dtypes it takes.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple

from flowbook.framework import dtypes
from flowbook.framework.dtypes import DType
from flowbook.framework.registry import Fusion, Out, op
from flowbook.framework.tensor import Tensor
from flowbook.framework.tensor_shape import broadcast
from flowbook.ops._builder import make1, operands, same_dtype, tensor

FLOAT = frozenset({dtypes.float16, dtypes.float32, dtypes.float64})
COMPLEX = frozenset({dtypes.complex64, dtypes.complex128})
INT = frozenset(
    {dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64, dtypes.uint8, dtypes.uint16}
)
REAL = FLOAT | INT
NUMBER = REAL | COMPLEX
INEXACT = FLOAT | COMPLEX
BOOL = frozenset({dtypes.bool})
ANY = frozenset(dtypes.ALL)


def check_dtype(dtype: DType, allowed: frozenset[DType], arg: str = "x") -> None:
    """TF's TypeError when an op does not take ``dtype``.

    >>> check_dtype(dtypes.int32, FLOAT)
    Traceback (most recent call last):
    ...
    TypeError: Value passed to parameter 'x' has DataType int32 not in list of allowed values: float16, float32, float64
    """
    if dtype not in allowed:
        names = ", ".join(d.name for d in dtypes.ALL if d in allowed)
        raise TypeError(
            f"Value passed to parameter '{arg}' has DataType {dtype.name} "
            f"not in list of allowed values: {names}"
        )


class Elementwise(NamedTuple):
    """One row of an element-wise table."""

    op_type: str  # TensorFlow's op type name
    fn: str | Callable[..., Any]  # an xp function name, or kernel(xp, *arrays)
    wrappers: tuple[str, ...]  # public names of the wrapper (aliases after the first)
    dtypes: frozenset[DType]  # input dtypes the op takes
    out: DType | None = None  # output dtype; None: the input's
    grad: Any = None  # grad(op, g) -> one gradient per input, or NOT_DIFFERENTIABLE
    doc: tuple[str, str, str] | None = None  # summary, example call, its value
    fusion: Fusion | None = None  # how the optimiser fuses it (flowbook.framework.registry)


# the fused op a chain headed by an element-wise op becomes (flowbook.ops.nn.fused_ops)
FUSED = "_FusedElementwise"


def step(fn: str, order: str | None = "either") -> Fusion:
    """The fusion of an element-wise op: it heads a chain, and is a step ``xp.<fn>`` in one."""
    return Fusion(head=FUSED, step=fn, order=order)


BINARY: list[Elementwise] = []  # the binary rows, in declaration order
UNARY: list[Elementwise] = []  # the unary rows, in declaration order

_EXAMPLE = """{summary}

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.{call}).tolist()
    {value}
"""


def binary_infer(row: Elementwise) -> Callable[..., Out]:
    """``infer`` of a binary row: one dtype for both inputs, numpy broadcasting."""

    def infer(x: Tensor, y: Tensor, **_: Any) -> Out:
        dt = same_dtype(row.op_type, ("x", "y"), x, y)
        check_dtype(dt, row.dtypes)
        return Out(row.out or dt, broadcast(x._shape, y._shape))

    return infer


def _unary_infer(row: Elementwise) -> Callable[..., Out]:
    def infer(x: Tensor, **_: Any) -> Out:
        check_dtype(x.dtype, row.dtypes)
        return Out(row.out or x.dtype, x._shape)

    return infer


def _kernel_and_bind(fn: str | Callable[..., Any]) -> tuple[Callable[..., Any], Any]:
    if isinstance(fn, str):
        kernel: Callable[..., Any] = lambda xp, *arrays: getattr(xp, fn)(*arrays)
        return kernel, lambda xp, **_: getattr(xp, fn)
    return fn, lambda xp, **_: partial(fn, xp)


def _declare(row: Elementwise, table: list[Elementwise], infer: Any, inputs: tuple) -> None:
    kernel, bind = _kernel_and_bind(row.fn)
    # a ufunc takes out= (flowbook.runtime.memory_plan writes into a dead input's buffer)
    takes_out = isinstance(row.fn, str)
    op(
        row.op_type,
        inputs,
        (),
        infer,
        kernel,
        bind=bind,
        grad=row.grad,
        takes_out=takes_out,
        fusion=row.fusion,
        type_attrs={} if row.dtypes == BOOL else None,  # TF's logical ops have no "T"
    )
    table.append(row)


def _named(wrapper: Callable[..., Tensor], row: Elementwise) -> Callable[..., Tensor]:
    wrapper.__name__ = wrapper.__qualname__ = row.wrappers[0]
    if row.doc is not None:
        summary, call, value = row.doc
        wrapper.__doc__ = _EXAMPLE.format(summary=summary, call=call, value=value)
    return wrapper


def binary(
    op_type: str, fn: Any, allowed: frozenset[DType], wrappers: tuple[str, ...], **row: Any
) -> Callable[..., Tensor]:
    """Declare a binary element-wise op from its row; returns its public wrapper.

    ``row`` holds the row's keywords: ``grad``, ``doc`` and ``out`` (see :class:`Elementwise`).
    """
    r = Elementwise(op_type, fn, wrappers, allowed, **row)
    _declare(r, BINARY, binary_infer(r), ("x", "y"))

    def wrapper(x: Any, y: Any, name: str | None = None) -> Tensor:
        return make1(op_type, operands(x, y), name=name)

    return _named(wrapper, r)


def unary(
    op_type: str, fn: Any, allowed: frozenset[DType], wrappers: tuple[str, ...], **row: Any
) -> Callable[..., Tensor]:
    """Declare a unary element-wise op from its row; returns its public wrapper.

    A row with no ``wrappers`` (Round, Conj: their TF1 functions do more
    than build the op) still returns a plain builder, unnamed and undocumented.
    """
    r = Elementwise(op_type, fn, wrappers, allowed, **row)
    _declare(r, UNARY, _unary_infer(r), ("x",))

    def wrapper(x: Any, name: str | None = None) -> Tensor:
        return make1(op_type, (tensor(x),), name=name)

    return _named(wrapper, r) if wrappers else wrapper


def doctests(*wrappers: Callable[..., Tensor]) -> dict[str, str]:
    """The wrappers' docstrings as a module's ``__test__`` dict, so doctest runs them.

    A factory-made wrapper's globals are this module's, so doctest would not
    find it in the module that binds it; ``__test__`` names it explicitly.
    """
    return {w.__name__: w.__doc__ for w in wrappers if w.__doc__}
