"""Stacks: what a loop's gradient keeps of the forward iterations (TF1's ``Stack`` ops).

``Stack`` makes a new, empty stack in every run (its handle is a string
tensor, as TensorFlow 1's ``Stack`` op has a string ref handle);
``StackPush(handle, elem)`` pushes ``elem`` and passes it on; ``StackPop``
returns the newest element.  The gradient of a ``while_loop``
(``flowbook.ops.control_flow.while_grad``) pushes each forward iteration's loop
variables and pops them in the backward loop, last first.  All three are
stateful: never folded, merged or cached.

    >>> import flowbook as fb
    >>> from flowbook.ops._builder import make1
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     h = make1("Stack", (), {"elem_type": fb.float32, "stack_name": "s"})
    ...     p = make1("StackPush", (h, fb.constant(4.0)), {"swap_memory": False})
    ...     with fb.control_dependencies([p]):
    ...         v = make1("StackPop", (h,), {"elem_type": fb.float32})
    ...     float(s.run(v))
    4.0
"""

from __future__ import annotations

from typing import Any

from flowbook.framework import dtypes
from flowbook.framework.errors import InvalidArgumentError
from flowbook.framework.registry import NOT_DIFFERENTIABLE, Out, op
from flowbook.framework.tensor import Tensor

__all__: list[str] = []


class RunStack(list):
    """One run's stack (a list with a name for messages)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name


def _stack_infer(elem_type: Any = None, stack_name: str = "") -> Out:
    return Out(dtypes.string, ())


def _push_infer(handle: Tensor, elem: Tensor, swap_memory: bool = False) -> Out:
    return Out(elem.dtype, elem._shape)


def _pop_infer(handle: Tensor, elem_type: Any = None) -> Out:
    return Out(dtypes.as_dtype(elem_type), None)


def _push(xp: Any, handle: RunStack, elem: Any, **_: Any) -> Any:
    handle.append(elem)
    return elem


def _pop(xp: Any, handle: RunStack, **_: Any) -> Any:
    if not handle:
        raise InvalidArgumentError(None, None, f"Stack '{handle.name}' is empty: nothing to pop")
    return handle.pop()


op(
    "Stack",
    (),
    ("elem_type", "stack_name"),
    _stack_infer,
    lambda xp, elem_type=None, stack_name="": RunStack(stack_name),
    stateful=True,
    grad=NOT_DIFFERENTIABLE,
)
op(
    "StackPush",
    ("handle", "elem"),
    ("swap_memory",),
    _push_infer,
    _push,
    stateful=True,
    grad=NOT_DIFFERENTIABLE,
)
op(
    "StackPop",
    ("handle",),
    ("elem_type",),
    _pop_infer,
    _pop,
    stateful=True,
    grad=NOT_DIFFERENTIABLE,
)
