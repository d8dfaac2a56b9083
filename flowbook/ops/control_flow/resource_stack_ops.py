"""Stacks behind resource handles: TensorFlow's ``StackV2`` family.

TensorFlow 1's loop gradients keep the forward iterations' values on stacks
made by ``StackV2(max_size)`` (a resource handle), filled by
``StackPushV2(handle, elem)`` and emptied, last first, by
``StackPopV2(handle)``; ``StackCloseV2`` ends one.  flowbook's own loop
gradient uses the older ``Stack`` ops (``flowbook.ops.control_flow.stack_ops``)
and writes them in this form when it exports a GraphDef; these declarations
let a GraphDef made by TensorFlow (or exported by flowbook) import and run.

The handle is a string-typed tensor whose value, in one run, is the same
:class:`~flowbook.ops.control_flow.stack_ops.RunStack` the ``Stack`` op
makes (a fresh, empty stack in every run), so both families share one
machinery.  A ``max_size`` of 0 or more caps the number of elements (TF's
meaning; a negative one is no cap).  All four ops are stateful.

    >>> import flowbook as fb
    >>> from flowbook.ops._builder import make, make1
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     h = make1("StackV2", (fb.constant(-1),), {"elem_type": fb.float32, "stack_name": "s"})
    ...     p = make1("StackPushV2", (h, fb.constant(4.0)), {"swap_memory": False})
    ...     with fb.control_dependencies([p]):
    ...         v = make1("StackPopV2", (h,), {"elem_type": fb.float32})
    ...     float(s.run(v))
    4.0
"""

from __future__ import annotations

from typing import Any

from flowbook.framework import dtypes
from flowbook.framework.errors import InvalidArgumentError
from flowbook.framework.registry import NOT_DIFFERENTIABLE, Out, op
from flowbook.framework.tensor import Tensor
from flowbook.ops.control_flow.stack_ops import RunStack

__all__: list[str] = []


class BoundedStack(RunStack):
    """One run's stack with TF's ``max_size`` (negative: no cap)."""

    __slots__ = ("max_size",)

    def __init__(self, name: str, max_size: int) -> None:
        super().__init__(name)
        self.max_size = max_size


def _stack_infer(max_size: Tensor, elem_type: Any = None, stack_name: str = "") -> Out:
    if max_size.dtype != dtypes.int32:
        raise TypeError(f"StackV2's max_size must be int32, got {max_size.dtype.name}")
    return Out(dtypes.string, ())


def _stack(xp: Any, max_size: Any, elem_type: Any = None, stack_name: str = "") -> BoundedStack:
    return BoundedStack(stack_name, int(max_size))


def _push_infer(handle: Tensor, elem: Tensor, swap_memory: bool = False) -> Out:
    return Out(elem.dtype, elem._shape)


def _push(xp: Any, handle: RunStack, elem: Any, **_: Any) -> Any:
    cap = getattr(handle, "max_size", -1)
    if 0 <= cap <= len(handle):
        raise InvalidArgumentError(
            None, None, f"Stack '{handle.name}' overflowed its max_size ({cap})"
        )
    handle.append(elem)
    return elem


def _pop_infer(handle: Tensor, elem_type: Any = None) -> Out:
    return Out(dtypes.as_dtype(elem_type), None)


def _pop(xp: Any, handle: RunStack, **_: Any) -> Any:
    if not handle:
        raise InvalidArgumentError(
            None, None, f"Stack '{handle.name}' is empty: nothing to pop (StackPopV2)"
        )
    return handle.pop()


def _close(xp: Any, handle: RunStack) -> tuple[()]:
    handle.clear()
    return ()


op(
    "StackV2",
    ("max_size",),
    ("elem_type", "stack_name"),
    _stack_infer,
    _stack,
    stateful=True,
    host_inputs=(0,),
    grad=NOT_DIFFERENTIABLE,
    type_attrs={},
)
op(
    "StackPushV2",
    ("handle", "elem"),
    ("swap_memory",),
    _push_infer,
    _push,
    stateful=True,
    grad=NOT_DIFFERENTIABLE,
    type_attrs={"T": 1},
)
op(
    "StackPopV2",
    ("handle",),
    ("elem_type",),
    _pop_infer,
    _pop,
    stateful=True,
    grad=NOT_DIFFERENTIABLE,
    type_attrs={},
)
op(
    "StackCloseV2",
    ("handle",),
    (),
    lambda handle: [],
    _close,
    stateful=True,
    grad=NOT_DIFFERENTIABLE,
    num_outputs=0,
    type_attrs={},
)
