"""Resource variables: TensorFlow 2's ``VarHandleOp`` and the ops that take its handle.

A graph TensorFlow 2 writes (``tf.compat.v1`` with resource variables on, the
default there) keeps a variable behind a handle: ``VarHandleOp`` outputs it;
``ReadVariableOp`` reads the value; ``AssignVariableOp``,
``AssignAddVariableOp``, ``AssignSubVariableOp`` and
``ResourceApplyGradientDescent`` update it (and output nothing);
``VarIsInitializedOp`` says whether it has a value.

flowbook maps this onto its own variables (``flowbook.ops.state.state_ops``):
``VarHandleOp`` declares ``resource="variable"``, so the Session binds it the
variable's :class:`~flowbook.state.var_state.VarState` (one per op and
session, as for ``VariableV2``), and outputs that state as the handle, a
string-typed scalar tensor to the graph, which branches and loops pass on
like any value.  Every op taking a handle declares it a ref input (it gets
the VarState unread, runs where the variable lives) and takes the
variable's lock to update it.  Two ``VarHandleOp`` ops with one
``shared_name`` are two variables here (TensorFlow would share one).

    >>> import numpy as np
    >>> import flowbook as fb
    >>> from flowbook.ops._builder import make, make1
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     h = make1("VarHandleOp", (), {"dtype": fb.float32, "shape": (2,)})
    ...     init = make("AssignVariableOp", (h, fb.constant([1.0, 2.0])), {"dtype": fb.float32})
    ...     with fb.control_dependencies([init]):
    ...         up = make("AssignAddVariableOp", (h, fb.constant([1.0, 1.0])), {"dtype": fb.float32})
    ...     with fb.control_dependencies([up]):
    ...         v = make1("ReadVariableOp", (h,), {"dtype": fb.float32})
    ...     s.run(v).tolist()
    [2.0, 3.0]
"""

from __future__ import annotations

from typing import Any

from flowbook.framework import dtypes
from flowbook.framework.errors import InvalidArgumentError
from flowbook.framework.registry import NOT_DIFFERENTIABLE, Out, op
from flowbook.framework.tensor import Tensor
from flowbook.framework.tensor_shape import fmt
from flowbook.ops.state.training_ops import _apply_gradient_descent
from flowbook.state.var_state import VarState

__all__: list[str] = []

# ops that pass a handle on unchanged (the handle's variable is found through them)
_PASS_ON = frozenset({"Identity", "Enter", "Switch", "Merge", "Exit", "NextIteration"})
_HANDLE = {"stateful": True, "ref_inputs": (0,), "type_attrs": {}}


def var_shape(handle: Tensor) -> Any:
    """The static shape of the variable behind ``handle`` (None where it is unknown).

    >>> import flowbook as fb
    >>> from flowbook.ops._builder import make1
    >>> with fb.Graph().as_default():
    ...     var_shape(make1("VarHandleOp", (), {"dtype": fb.float32, "shape": (2, 3)}))
    (2, 3)
    """
    t = handle
    while t.op.type in _PASS_ON and t.op.inputs:
        t = t.op.inputs[0]
    return t.op.attrs.get("shape") if t.op.type == "VarHandleOp" else None


def _handle_infer(
    dtype: Any,
    shape: Any = None,
    container: str = "",
    shared_name: str = "",
    debug_name: str = "",
    allowed_devices: Any = (),
) -> Out:
    return Out(dtypes.string, ())


def _handle(xp: Any, *, var: VarState, **_: Any) -> VarState:
    return var


def _read_infer(resource: Tensor, dtype: Any) -> Out:
    return Out(dtypes.as_dtype(dtype), var_shape(resource))


def _read(xp: Any, resource: VarState, **_: Any) -> Any:
    return resource.read()


def _assign_infer(
    resource: Tensor, value: Tensor, dtype: Any = None, validate_shape: bool = False
) -> list[Out]:
    return []


def _assign(xp: Any, resource: VarState, value: Any, *, dtype: Any, **_: Any) -> tuple[()]:
    with resource.lock:
        resource.store(xp, xp.asarray(value, dtype=dtypes.as_dtype(dtype).np))
    return ()


def _update(sign: int) -> Any:
    def kernel(xp: Any, resource: VarState, value: Any, **_: Any) -> tuple[()]:
        with resource.lock:
            old = resource.read()
            new = old + value if sign > 0 else old - value
            if new.shape != old.shape:
                raise InvalidArgumentError(
                    None,
                    None,
                    f"Update of {fmt(old.shape)} by {fmt(value.shape)} changes its shape",
                )
            resource.keep(xp.array(new, dtype=old.dtype))
        return ()

    return kernel


def _initialized(xp: Any, resource: VarState, **_: Any) -> Any:
    return xp.asarray(resource.value is not None)


def _apply_gd(xp: Any, var: VarState, alpha: Any, delta: Any, **attrs: Any) -> tuple[()]:
    _apply_gradient_descent(xp, var, alpha, delta, **attrs)
    return ()


op(
    "VarHandleOp",
    (),
    ("dtype", "shape", "container", "shared_name", "debug_name", "allowed_devices"),
    _handle_infer,
    _handle,
    stateful=True,
    resource="variable",
    host_only=True,
    type_attrs={},
    attr_kinds={
        "container": "string",
        "shared_name": "string",
        "debug_name": "string",
        "allowed_devices": "list(string)",
    },
    grad=NOT_DIFFERENTIABLE,
)
op(
    "ReadVariableOp",
    ("resource",),
    ("dtype",),
    _read_infer,
    _read,
    **_HANDLE,
    grad=lambda op, grad: [grad],
)
op(
    "AssignVariableOp",
    ("resource", "value"),
    ("dtype", "validate_shape"),
    _assign_infer,
    _assign,
    **_HANDLE,
    num_outputs=0,
    grad=NOT_DIFFERENTIABLE,
)
op(
    "AssignAddVariableOp",
    ("resource", "value"),
    ("dtype",),
    _assign_infer,
    _update(1),
    **_HANDLE,
    num_outputs=0,
    grad=NOT_DIFFERENTIABLE,
)
op(
    "AssignSubVariableOp",
    ("resource", "value"),
    ("dtype",),
    _assign_infer,
    _update(-1),
    **_HANDLE,
    num_outputs=0,
    grad=NOT_DIFFERENTIABLE,
)
op(
    "VarIsInitializedOp",
    ("resource",),
    (),
    lambda resource: Out(dtypes.bool, ()),
    _initialized,
    **_HANDLE,
    grad=NOT_DIFFERENTIABLE,
)
op(
    "ResourceApplyGradientDescent",
    ("var", "alpha", "delta"),
    ("use_locking",),
    lambda var, alpha, delta, use_locking=False: [],
    _apply_gd,
    stateful=True,
    ref_inputs=(0,),
    type_attrs={"T": 1},
    num_outputs=0,
    grad=NOT_DIFFERENTIABLE,
)
