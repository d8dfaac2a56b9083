"""The output shapes of a run: which the graph fixes, which the feeds fix, which data decides.

A trace reports every op's output shapes.  Most are static (the graph's
shape inference knew them when the cell built the op); most of the rest are
fixed by the shapes of the fed values: a batch dimension, and the
``Shape`` -> ``BroadcastGradientArgs`` -> ``Reshape`` arithmetic of
gradients.  ``shapes_given_feeds`` works those out once per feed-shape
signature by running each op's own ``infer`` again on the actual shapes,
with ``constant_value`` reading them (``ops.constant_op.given_shapes``).
Only the ops whose shapes depend on data (``tf.where``, a reshape to a fed
value) are left for the run to record (``flowbook.plan.timed_twin``).

    >>> import flowbook as fb
    >>> from flowbook.plan import build_plan
    >>> with fb.Graph().as_default() as g:
    ...     x = fb.placeholder(fb.float32, [None, 3]); y = x * 2.0
    ...     plan = build_plan(g, [y], [], [x], bind=lambda op: None)
    >>> dynamic_shapes(plan), shapes_given_feeds(plan, ((4, 3),))
    ([0, 1], ((0, 0), [None, (4, 3)]))
"""

from __future__ import annotations

from typing import Any

from flowbook.placement import CopyOp
from flowbook.plan import DISCARD, Plan
from flowbook.registry import Out
from flowbook.tensor import Operation, Tensor
from flowbook.tensor_shape import compatible


def dynamic_shapes(plan: Plan) -> list[int]:
    """Per op: 0 if all its outputs' static shapes are fully known, else 1 for an op with one
    output and 2 for one with several (cached on the plan).

    A timed run records the actual shapes of the ops marked 1 or 2 only; the
    others' shapes are read from the graph when the step stats are built.
    """
    dynamic = plan.__dict__.get("_dynamic_shapes")
    if dynamic is None:
        dynamic = plan.__dict__["_dynamic_shapes"] = [
            (1 if len(outs) == 1 else 2)
            if any(t._shape is None or None in t._shape for t in op.outputs)
            else 0
            for op, outs in zip(plan.ops, plan.outputs)
        ]
    return dynamic


def shapes_given_feeds(
    plan: Plan, feed_shapes: tuple[Any, ...]
) -> tuple[tuple[int, ...], list[Any]]:
    """What a timed run fed values of ``feed_shapes`` must record, and the shapes it need not.

    Most statically unknown dims are a batch size the feeds fix (``x`` is
    ``[None, 64]``, so ``matmul(x, W)`` is ``[None, 128]``): given the fed
    shapes, each op's ``infer`` (the graph's own shape inference) run again
    on inputs of the shapes worked out so far gives its actual output shapes.
    Returns ``(record, known)``, per op: ``record[i]`` as ``dynamic_shapes``
    says for the ops whose shapes stay unknown even so (``tf.where``, a
    reshape to a fed shape: the run records those), else 0; ``known[i]`` the
    bare shape (a list of them for several outputs) of each op whose shapes
    the feeds determine, None where the graph's static shapes say it all or
    the run records them.  ``timed_twin`` caches it per feed signature.

    >>> import flowbook as fb
    >>> from flowbook.plan import build_plan
    >>> with fb.Graph().as_default() as g:
    ...     x = fb.placeholder(fb.float32, [None, 3]); y = fb.reduce_sum(x * 2.0, 1)
    ...     n = fb.range(fb.cast(fb.reduce_max(y), fb.int32))  # its length is data
    ...     plan = build_plan(g, [y, n], [], [x], bind=lambda op: None)
    >>> record, known = shapes_given_feeds(plan, ((5, 3),))
    >>> [(op.type, r, k) for op, r, k in zip(plan.ops, record, known) if r or k]
    [('Mul', 0, (5, 3)), ('Sum', 0, (5,)), ('Range', 1, None)]
    """
    from flowbook.ops.constant_op import given_shapes  # the op library imports the graph

    static = dynamic_shapes(plan)
    record = list(static)
    known: list[Any] = [None] * len(plan.ops)
    shape_of: dict[int, Any] = dict(zip(plan.feed_slots, feed_shapes))  # slot -> actual shape
    fed_slots = set(plan.feed_slots)
    given: dict[Tensor, Any] = {}  # tensor -> actual shape, for constant_value
    fed: set[Tensor] = set()
    with given_shapes(given, fed):
        for i, op in enumerate(plan.ops):
            in_shapes = []
            for t, s in zip(op.inputs, plan.inputs[i]):
                shape = shape_of.get(s)
                in_shapes.append(shape)
                if shape is not None:
                    given[t] = shape
                if s in fed_slots:
                    fed.add(t)
            shapes: list[Any] | None = None
            if static[i]:
                shapes = _infer_given(op, in_shapes)
                if shapes is not None:
                    record[i] = 0
                    known[i] = shapes[0] if static[i] == 1 else shapes
            if shapes is None:
                shapes = [t._shape for t in op.outputs]
            for t, s, shape in zip(op.outputs, plan.outputs[i], shapes):
                given[t] = shape
                if s != DISCARD:
                    shape_of[s] = shape
    return tuple(record), known


def _infer_given(op: Operation, in_shapes: list[Any]) -> list[Any] | None:
    """``op``'s output shapes for inputs of ``in_shapes`` (None: static), if fully known."""
    if isinstance(op, CopyOp):
        outs: list[Any] = [in_shapes[0]]
    else:
        ins = [
            t if shape is None else Tensor(t.op, t.value_index, t.dtype, shape)
            for t, shape in zip(op.inputs, in_shapes)
        ]
        try:
            inferred = op._opdef.infer(*ins, **op.attrs)
        except Exception:  # the kernel will say what is wrong, and the run records
            return None
        outs = [o.shape for o in ([inferred] if isinstance(inferred, Out) else inferred)]
    if len(outs) != len(op.outputs):
        return None
    for shape, t in zip(outs, op.outputs):
        if shape is None or None in shape or not compatible(t._shape, shape):
            return None
    return [tuple(shape) for shape in outs]
