"""Variable ops: VariableV2, Assign, AssignAdd, AssignSub, IsVariableInitialized.

A variable's value lives in the Session (a :class:`~flowbook.state.var_state.VarState`),
not in the graph: two sessions on one graph hold two values, as in TensorFlow.
The session binds each VariableV2 kernel to its variable's state (the ``var=``
keyword); the op outputs that state, the update ops take it as their ref input,
and the plan reads the value for every other consumer when the consumer runs.
Updates take the variable's lock, so concurrent ``run`` calls on one session
lose no ``assign_add``; stored values are read-only arrays (a fetch hands out a
copy), so nothing outside can change a variable behind the session's back.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     v = fb.Variable(1.0, name="v")
    ...     with fb.Session() as s:
    ...         _ = s.run(v.initializer); float(s.run(v.assign_add(2.0)))
    3.0
"""

from __future__ import annotations

from typing import Any

from flowbook.framework import dtypes
from flowbook.framework.errors import InvalidArgumentError
from flowbook.framework.registry import NOT_DIFFERENTIABLE, Out, op
from flowbook.framework.tensor import Tensor
from flowbook.framework.tensor_shape import compatible, fmt, merge
from flowbook.ops._builder import make1, same_dtype, tensor
from flowbook.state.var_state import VarState


def _variable_kernel(xp: Any, *, var: VarState, shape: Any, dtype: Any) -> VarState:
    return var


def _assign_kernel(
    xp: Any, ref: VarState, value: Any, *, validate_shape: bool, use_locking: bool
) -> Any:
    with ref.lock:
        old = ref.value
        if validate_shape and old is not None and old.shape != value.shape:
            raise InvalidArgumentError(
                None,
                None,
                f"Assign requires shapes of both tensors to match. lhs shape= {list(old.shape)} "
                f"rhs shape= {list(value.shape)}",
            )
        return ref.store(xp, value)


def _update_kernel(sign: int) -> Any:
    def kernel(xp: Any, ref: VarState, value: Any, *, use_locking: bool) -> Any:
        with ref.lock:
            old = ref.read()
            new = old + value if sign > 0 else old - value
            if new.shape != old.shape:
                raise InvalidArgumentError(
                    None,
                    None,
                    f"Update of {list(old.shape)} by a value of shape {list(value.shape)} changes its shape",
                )
            return ref.store(xp, new.astype(old.dtype, copy=False))

    return kernel


def _assign_infer(ref: Tensor, value: Tensor, validate_shape: bool = True, **_: Any) -> Out:
    same_dtype("Assign", ("ref", "value"), ref, value)
    if validate_shape:
        if not compatible(ref._shape, value._shape):
            raise ValueError(
                f"Shapes must be equal, but are {fmt(ref._shape)} and {fmt(value._shape)}"
            )
        return Out(ref.dtype, merge(ref._shape, value._shape))
    return Out(ref.dtype, value._shape)


def _update_infer(op_type: str) -> Any:
    def infer(ref: Tensor, value: Tensor, **_: Any) -> Out:
        same_dtype(op_type, ("ref", "value"), ref, value)
        if not compatible(ref._shape, value._shape):
            raise ValueError(
                f"Shapes must be equal, but are {fmt(ref._shape)} and {fmt(value._shape)}"
            )
        return Out(ref.dtype, ref._shape)

    return infer


def _is_initialized_kernel(xp: Any, ref: VarState, *, dtype: Any) -> Any:
    return xp.asarray(ref.value is not None)


def _initialized_infer(ref: Tensor, dtype: Any) -> Out:
    return Out(dtypes.bool, ())


_REF = {"stateful": True, "ref_inputs": (0,)}
op(
    "VariableV2",
    (),
    ("shape", "dtype"),
    lambda shape, dtype: Out(dtype, shape),
    _variable_kernel,
    stateful=True,
    resource="variable",
    type_attrs={},
    grad=NOT_DIFFERENTIABLE,
)
op(
    "Assign",
    ("ref", "value"),
    ("validate_shape", "use_locking"),
    _assign_infer,
    _assign_kernel,
    **_REF,
    grad=NOT_DIFFERENTIABLE,
)
op(
    "AssignAdd",
    ("ref", "value"),
    ("use_locking",),
    _update_infer("AssignAdd"),
    _update_kernel(1),
    **_REF,
    grad=NOT_DIFFERENTIABLE,
)
op(
    "AssignSub",
    ("ref", "value"),
    ("use_locking",),
    _update_infer("AssignSub"),
    _update_kernel(-1),
    **_REF,
    grad=NOT_DIFFERENTIABLE,
)
op(
    "IsVariableInitialized",
    ("ref",),
    ("dtype",),
    _initialized_infer,
    _is_initialized_kernel,
    **_REF,
    type_attrs={},
    grad=NOT_DIFFERENTIABLE,
)


def _ref(ref: Any) -> Tensor:
    variable = getattr(ref, "_variable", None)
    if variable is not None:
        return variable
    if isinstance(ref, Tensor) and ref.op.type == "VariableV2":
        return ref
    raise TypeError(f"assign() needs a Variable, got {ref!r}")


def _update_op(
    op_type: str, ref: Any, value: Any, attrs: dict[str, Any], name: str | None
) -> Tensor:
    """An update op of ``op_type`` on the variable ``ref``, ``value`` converted to its dtype."""
    r = _ref(ref)
    return make1(op_type, (r, tensor(value, dtype=r.dtype)), attrs, name=name or op_type)


def assign(
    ref: Any,
    value: Any,
    validate_shape: bool = True,
    use_locking: bool = True,
    name: str | None = None,
) -> Tensor:
    """An op that sets a variable to ``value`` and outputs the new value.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     v = fb.Variable(0); fb.assign(v, 5).op.type
    'Assign'
    """
    attrs = {"validate_shape": validate_shape, "use_locking": use_locking}
    return _update_op("Assign", ref, value, attrs, name)


def assign_add(ref: Any, value: Any, use_locking: bool = True, name: str | None = None) -> Tensor:
    """An op that adds ``value`` to a variable (atomically) and outputs the new value."""
    return _update_op("AssignAdd", ref, value, {"use_locking": use_locking}, name)


def assign_sub(ref: Any, value: Any, use_locking: bool = True, name: str | None = None) -> Tensor:
    """An op that subtracts ``value`` from a variable (atomically) and outputs the new value."""
    return _update_op("AssignSub", ref, value, {"use_locking": use_locking}, name)


def is_variable_initialized(variable: Any) -> Tensor:
    """A bool tensor: whether the variable has a value in the running session."""
    r = _ref(variable)
    return make1("IsVariableInitialized", (r,), {"dtype": r.dtype}, name="IsVariableInitialized")


def variable_op_v2(shape: Any, dtype: Any, name: str) -> Tensor:
    """The raw VariableV2 op (``Variable`` wraps it with an initializer and a read)."""
    return make1("VariableV2", (), {"shape": shape, "dtype": dtype}, name=name)
