"""Grouping and ordering: NoOp, ``group``, ``tuple`` and ``with_dependencies``.

These ops compute nothing; they exist for their control edges, which the plan
turns into "runs after" constraints for the scheduler.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     a = fb.constant(1); b = fb.constant(2)
    ...     [op.name for op in fb.group(a, b).control_inputs]
    ['Const', 'Const_1']
"""

from __future__ import annotations

from typing import Any

from flowbook.framework.graph import _as_operation, get_default_graph
from flowbook.framework.registry import NOT_DIFFERENTIABLE, op
from flowbook.framework.tensor import Operation, Tensor
from flowbook.ops._builder import make1

op(
    "NoOp",
    (),
    (),
    infer=lambda: [],
    kernel=lambda xp: (),
    grad=NOT_DIFFERENTIABLE,
    passthrough="always",  # does nothing: what waits for it may wait for what it waits for
    num_outputs=0,
    type_attrs={},
)

__all__ = ["group", "no_op", "tuple", "with_dependencies"]
_builtin_tuple = tuple  # this module defines TF's tuple()


def no_op(name: str | None = None) -> Operation:
    """An op that does nothing (a target for control dependencies)."""
    return get_default_graph().create_op("NoOp", (), name=name or "NoOp")


def group(*inputs: Any, name: str | None = None) -> Operation:
    """One op that runs after all of ``inputs`` (ops, tensors or variables).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.group(fb.no_op(), name="all").name
    'all'
    """
    ops: list[Operation] = []
    for x in inputs:
        for item in x if isinstance(x, list | _builtin_tuple) else [x]:
            op = _as_operation(item)
            if op not in ops:
                ops.append(op)
    graph = ops[0].graph if ops else get_default_graph()
    return graph.create_op("NoOp", (), name=name or "group_deps", control_inputs=ops)


def with_dependencies(dependencies: Any, output_tensor: Tensor, name: str | None = None) -> Tensor:
    """``output_tensor``'s value, produced only after ``dependencies`` have run."""
    graph = output_tensor.graph
    with graph.name_scope(name or "control_dependency"), graph.control_dependencies(dependencies):
        return make1("Identity", (output_tensor,))


def tuple(tensors: Any, name: str | None = None, control_inputs: Any = None) -> list[Any]:
    """The same tensors, each available only after all of them are computed.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     a, b = fb.tuple([fb.constant(1), fb.constant(2)])
    ...     a.op.type, len(a.op.control_inputs)
    ('Identity', 1)
    """
    tensors = list(tensors)
    graph = get_default_graph()
    with graph.name_scope(name or "tuple"):
        gating = [t.op for t in tensors if t is not None]
        if control_inputs:
            gating += [_as_operation(c) for c in control_inputs]
        gate = group(*gating)
        out: list[Any] = []
        for t in tensors:
            if t is None:
                out.append(None)
                continue
            with graph.control_dependencies([gate]):
                out.append(make1("Identity", (t,)))
        return out
