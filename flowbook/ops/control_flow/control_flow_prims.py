"""The control-flow primitives of the whitepaper's section 4.4, and the dead value.

TensorFlow builds every branch and loop from six ops; flowbook declares the
same ones (with their ``Ref`` twins, which a GraphDef from TensorFlow may use):

- ``Switch(data, pred)`` -> ``(output_false, output_true)``: ``data`` goes out on
  one side; the other output is **dead**.
- ``Merge(*inputs)`` -> ``(output, value_index)``: passes on the first *live*
  input to arrive (and its index); dead only when every input is dead.
- ``Enter(data)``: moves a value into the child frame ``frame_name``
  (``is_constant``: the same value in every iteration).
- ``Exit(data)``: moves a loop's result back to the parent frame.
- ``NextIteration(data)``: moves a value to the next iteration of its frame.
- ``LoopCond(input)``: the loop's predicate (an identity the executor and
  the views recognise).

Their kernels are plain identities (Switch returns :data:`DEAD` on the
untaken side); frames, iterations and deadness are the executor's work
(``flowbook.runtime.frames``): an op with a dead input does not run and its
outputs are dead, except Merge, and a dead ``NextIteration`` stops there.
``ControlTrigger`` is a NoOp that runs even when its control inputs are dead.

    >>> import flowbook as fb
    >>> from flowbook.ops._builder import make
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     f, t = make("Switch", [fb.constant(3.0), fb.constant(True)]).outputs
    ...     out, index = make("Merge", [f, t]).outputs
    ...     value, taken = s.run([out, index])
    >>> float(value), int(taken)
    (3.0, 1)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowbook.framework import dtypes
from flowbook.framework.registry import NOT_DIFFERENTIABLE, OpDef, Out, op
from flowbook.framework.tensor import Tensor

__all__ = ["CONTROL_FLOW_TYPES", "DEAD", "is_dead"]


class _Dead:
    """The value of an output on an untaken branch (TensorFlow's dead tensor)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<dead>"

    def __reduce__(self) -> str:
        return "DEAD"


DEAD = _Dead()


def is_dead(value: Any) -> bool:
    """Whether ``value`` is the dead value of an untaken branch.

    >>> is_dead(DEAD), is_dead(0.0)
    (True, False)
    """
    return value is DEAD


# op type -> the executor's kind code (flowbook.runtime.frames): 1 Switch, 2 Merge, 3 Enter,
# 4 Exit, 5 NextIteration, 6 ControlTrigger; LoopCond is an identity to the executor
CONTROL_FLOW_TYPES: dict[str, int] = {}


def _same(x: Tensor, **_: Any) -> Out:
    return Out(x.dtype, x._shape)


def _identity_kernel(xp: Any, x: Any, **_: Any) -> Any:
    return x


def _switch_infer(data: Tensor, pred: Tensor) -> list[Out]:
    if pred.dtype != dtypes.bool:
        raise TypeError(f"the predicate of a Switch must be bool, got {pred.dtype.name}")
    if pred._shape is not None and len(pred._shape) != 0:
        raise ValueError(f"the predicate of a Switch must be a scalar, got shape {pred._shape}")
    return [Out(data.dtype, data._shape), Out(data.dtype, data._shape)]


def _switch(xp: Any, data: Any, pred: Any) -> tuple[Any, Any]:
    return (DEAD, data) if pred else (data, DEAD)


def _merge_infer(*inputs: Tensor) -> list[Out]:
    if not inputs:
        raise ValueError("Merge needs at least one input")
    dtype = inputs[0].dtype
    shape = inputs[0]._shape
    for t in inputs[1:]:
        if t.dtype != dtype:
            raise TypeError(
                f"the inputs of a Merge must have one dtype: '{t.name}' is {t.dtype.name}, "
                f"'{inputs[0].name}' is {dtype.name}"
            )
        shape = _loosest(shape, t._shape)
    return [Out(dtype, shape), Out(dtypes.int32, ())]


def _loosest(a: Any, b: Any) -> Any:
    """The most specific shape both ``a`` and ``b`` satisfy (unknown where they differ)."""
    if a is None or b is None or len(a) != len(b):
        return None
    return tuple(x if x == y else None for x, y in zip(a, b))


def _merge(xp: Any, *inputs: Any) -> tuple[Any, int]:
    """Merge as a plain kernel (the executor calls it with the arrived input first)."""
    for k, v in enumerate(inputs):
        if v is not DEAD:
            return v, k
    return DEAD, DEAD


def _enter_infer(
    data: Tensor, frame_name: str = "", is_constant: bool = False, parallel_iterations: int = 10
) -> Out:
    if not frame_name:
        raise ValueError("Enter needs a frame_name")
    return Out(data.dtype, data._shape)


# ---------------------------------------------------------------- gradients
def _switch_grad(op: Any, grad_false: Tensor, grad_true: Tensor) -> list[Tensor | None]:
    """A cond's Switch: the gradients of its two sides merged (one of them is dead)."""
    merged = op.graph.create_op("Merge", (grad_false, grad_true), name="cond_grad").outputs[0]
    return [merged, None]


def _merge_grad(op: Any, grad: Tensor, _index_grad: Tensor) -> list[Tensor]:
    """A cond's Merge: the gradient goes back to the input that was taken (the others dead)."""
    g = op.graph
    out = []
    for k in range(len(op.inputs)):
        k_t = g.create_op(
            "Const", (), {"value": np.array(k, np.int32), "dtype": dtypes.int32}, name="index"
        ).outputs[0]
        taken = g.create_op("Equal", (op.outputs[1], k_t), name="taken").outputs[0]
        out.append(g.create_op("Switch", (grad, taken), name="Switch").outputs[1])
    return out


def _frame_op_grad(op: Any, *grads: Tensor) -> list[Tensor | None]:
    """Enter, Exit and NextIteration have no gradient of their own: a loop is differentiated
    as a whole (``flowbook.ops.control_flow.while_grad``), from the function its while_loop keeps."""
    raise LookupError(
        f"No gradient for {op.describe()} alone: a loop is differentiated as a whole, from "
        "the body function tf.while_loop keeps, and this loop was not built by tf.while_loop "
        "in this process (imported from a GraphDef, or built op by op)."
    )


def _loop_cond_infer(x: Tensor) -> Out:
    if x.dtype != dtypes.bool or (x._shape is not None and len(x._shape) != 0):
        raise TypeError(f"a loop's condition must be a bool scalar, got {x.dtype.name} {x._shape}")
    return Out(dtypes.bool, ())


# ------------------------------------------------------------------ the ops
def prim(name: str, kind: int, *args: Any, **fields: Any) -> OpDef:
    """Declare a control-flow primitive (``op``'s arguments) and record its kind."""
    opdef = op(name, *args, **fields)
    CONTROL_FLOW_TYPES[name] = kind
    return opdef


for _ref in ("", "Ref"):
    # the predicate is read on the host (TF's HostMemory("pred"))
    prim(
        f"{_ref}Switch",
        1,
        ("data", "pred"),
        (),
        _switch_infer,
        _switch,
        host_inputs=(1,),
        grad=_switch_grad,
    )
    prim(f"{_ref}Merge", 2, ("*inputs",), (), _merge_infer, _merge, grad=_merge_grad)
    prim(
        f"{_ref}Enter",
        3,
        ("data",),
        ("frame_name", "is_constant", "parallel_iterations"),
        _enter_infer,
        _identity_kernel,
        grad=_frame_op_grad,
    )
    prim(f"{_ref}Exit", 4, ("data",), (), _same, _identity_kernel, grad=_frame_op_grad)
    prim(f"{_ref}NextIteration", 5, ("data",), (), _same, _identity_kernel, grad=_frame_op_grad)
op("LoopCond", ("input",), (), _loop_cond_infer, _identity_kernel, grad=NOT_DIFFERENTIABLE)
prim("ControlTrigger", 6, (), (), lambda: [], lambda xp: (), grad=NOT_DIFFERENTIABLE)
