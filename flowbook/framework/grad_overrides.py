"""Gradient overrides: TF1's ``RegisterGradient`` and ``Graph.gradient_override_map``.

State, all here (the Graph only forwards ``gradient_override_map`` to
:func:`override_map`):

- ``GRADIENTS``: name -> gradient function, filled by :class:`RegisterGradient`;
  a second registration of a name is an error, as in TF.
- ``RECORDED``: op -> the override name it was given when it was built inside
  a ``gradient_override_map`` block (weak: forgotten with the op).
- ``ACTIVE``: graph -> the blocks open on it, each ``(first op id, map)``,
  innermost last.  An op built inside a block has an id at least the block's
  first; when the block closes, every such op whose type the map names (the
  innermost block naming it wins) is recorded.  While blocks are open the
  lookup also reads them, so ``tf.gradients`` inside the block already sees
  the override.

:func:`gradient_function` is what ``flowbook.autodiff.gradients`` asks: the override
of the op if it has one, else a function registered under its own type
(for ops declared without a gradient), else the registry's.

    >>> import flowbook as fb
    >>> @fb.RegisterGradient("DoubleGrad")
    ... def _double(op, grad):
    ...     return grad * 2.0
    >>> g = fb.Graph()
    >>> with g.as_default(), g.gradient_override_map({"Identity": "DoubleGrad"}):
    ...     x = fb.constant(3.0); y = fb.identity(x)
    >>> with g.as_default(), fb.Session() as s:
    ...     float(s.run(fb.gradients(y, x)[0]))
    2.0
    >>> del GRADIENTS["DoubleGrad"]
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable, Iterator
from typing import Any

from flowbook.framework.registry import OPS
from flowbook.framework.tensor import Operation

GRADIENTS: dict[str, Callable[..., Any]] = {}  # name -> gradient fn, from RegisterGradient
RECORDED: weakref.WeakKeyDictionary[Operation, str] = weakref.WeakKeyDictionary()  # op -> name
ACTIVE: weakref.WeakKeyDictionary[Any, list[tuple[int, dict[str, str]]]] = (
    weakref.WeakKeyDictionary()
)  # graph -> open override blocks: (id of the first op built inside, op type -> name)


class RegisterGradient:
    """Decorator: register ``fn(op, *output_grads) -> input grads`` under ``op_type``, for
    ``gradient_override_map`` or for an op type declared without a gradient.

    >>> import flowbook as fb
    >>> fb.RegisterGradient("Zeroed")(lambda op, g: g * 0.0).__name__
    '<lambda>'
    >>> del GRADIENTS["Zeroed"]
    """

    def __init__(self, op_type: str) -> None:
        if not isinstance(op_type, str):
            raise TypeError("op_type must be a string")
        self._op_type = op_type  # the name the gradient is registered under

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        if self._op_type in GRADIENTS:
            raise KeyError(f"Registering two gradient with name '{self._op_type}'!")
        GRADIENTS[self._op_type] = fn
        return fn


@contextlib.contextmanager
def override_map(graph: Any, op_type_map: dict[str, str]) -> Iterator[None]:
    """``graph.gradient_override_map(...)``: ops built inside use the mapped gradients."""
    if not isinstance(op_type_map, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in op_type_map.items()
    ):
        raise TypeError("op_type_map must be a dictionary mapping strings to strings")
    blocks = ACTIVE.setdefault(graph, [])
    blocks.append((graph._next_id, dict(op_type_map)))
    try:
        yield
    finally:
        start, _ = blocks.pop()
        for op in graph.get_operations():
            if op._id >= start and op not in RECORDED:
                name = _open_override(op, blocks, op_type_map)
                if name is not None:
                    RECORDED[op] = name


def record(op: Operation, name: str) -> None:
    """Give one op the gradient registered as ``name`` (what ``custom_gradient`` uses)."""
    RECORDED[op] = name


def _open_override(op: Operation, blocks: list, inner: dict[str, str] | None = None) -> str | None:
    if inner is not None and op.type in inner:
        return inner[op.type]
    for start, mapping in reversed(blocks):
        if op._id >= start and op.type in mapping:
            return mapping[op.type]
    return None


def gradient_function(op: Operation) -> Any:
    """The gradient of ``op``: its override, one registered under its type, or the registry's."""
    name = RECORDED.get(op)
    if name is None and op.graph in ACTIVE:
        name = _open_override(op, ACTIVE[op.graph])
    if name is not None:
        if name in GRADIENTS:
            return GRADIENTS[name]
        if name in OPS:
            return OPS[name].grad
        raise LookupError(f"No gradient registered as '{name}' (overriding {op.describe()})")
    if op._opdef.grad is None and op.type in GRADIENTS:
        return GRADIENTS[op.type]
    return op._opdef.grad
