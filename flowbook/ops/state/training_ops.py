"""Training ops: the update a TF1 optimizer emits per variable, as one op (TF's training_ops).

TensorFlow 1's ``GradientDescentOptimizer`` does not build ``var -= lr * grad``
from a ``Mul`` and an ``AssignSub``: it emits one ``ApplyGradientDescent(var,
alpha, delta)`` per variable, and a GraphDef written here names it the same.
The kernel does the arithmetic the two ops did, in their order (``delta *
alpha``, then ``var - that``), so the values are bit for bit those of
``assign_sub(var, grad * lr)``; it costs one kernel call instead of two, and
one fresh array instead of three (the product is computed into a new buffer,
the difference written over it, and that buffer kept as the variable's value
with no further copy, ``VarState.keep``).  The stored value is replaced, not
written in place: a value read earlier in the run (a reshape of ``W``, a
fetched ``tf.identity(W)``) still holds what it read, as without this op.
Like the assign ops it takes the variable's lock (``use_locking`` is kept as
an attr for TensorFlow's GraphDef; updates here always lock).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     w = fb.Variable([1.0, 2.0], name="w")
    ...     step = apply_gradient_descent(w, 0.5, fb.constant([2.0, 2.0]))
    ...     with fb.Session() as s:
    ...         _ = s.run(w.initializer); s.run(step).tolist(), step.op.type
    ([0.0, 1.0], 'ApplyGradientDescent')
"""

from __future__ import annotations

from typing import Any

from flowbook.framework.errors import InvalidArgumentError
from flowbook.framework.registry import NOT_DIFFERENTIABLE, Out, op
from flowbook.framework.tensor import Tensor
from flowbook.framework.tensor_shape import compatible, fmt, merge
from flowbook.ops._builder import make1, same_dtype, tensor
from flowbook.ops.state.state_ops import _ref
from flowbook.state.var_state import VarState

__all__ = ["apply_gradient_descent"]


def _apply_gd_infer(var: Tensor, alpha: Tensor, delta: Tensor, **_: Any) -> Out:
    same_dtype("ApplyGradientDescent", ("var", "delta"), var, delta)
    same_dtype("ApplyGradientDescent", ("var", "alpha"), var, alpha)
    if alpha._shape is not None and len(alpha._shape) != 0:
        raise ValueError(f"alpha must be a scalar, got shape {fmt(alpha._shape)}")
    if not compatible(var._shape, delta._shape):
        raise ValueError(
            f"var and delta do not have the same shape: {fmt(var._shape)} and {fmt(delta._shape)}"
        )
    return Out(var.dtype, merge(var._shape, delta._shape))


def _apply_gradient_descent(
    xp: Any, var: VarState, alpha: Any, delta: Any, *, use_locking: bool = False
) -> Any:
    with var.lock:
        old = var.read()
        if delta.shape != old.shape or alpha.ndim:
            what = "alpha is not a scalar" if alpha.ndim else "var and delta differ in shape"
            raise InvalidArgumentError(
                None,
                None,
                f"{what}: var{fmt(old.shape)} alpha{fmt(alpha.shape)} delta{fmt(delta.shape)}",
            )
        step = xp.multiply(delta, alpha)  # the Mul the written graph makes: grad * lr
        if old.ndim:
            new = xp.subtract(old, step, out=step)  # var - step, into the product's buffer
        else:  # 0-d: numpy returns scalars, not buffers
            new = xp.asarray(old - step)
        return var.keep(new)


op(
    "ApplyGradientDescent",
    ("var", "alpha", "delta"),
    infer=_apply_gd_infer,
    attrs=("use_locking",),
    kernel=_apply_gradient_descent,
    stateful=True,
    ref_inputs=(0,),
    grad=NOT_DIFFERENTIABLE,
)


def apply_gradient_descent(
    var: Any, alpha: Any, delta: Any, use_locking: bool = False, name: str | None = None
) -> Tensor:
    """``var -= alpha * delta`` as one op (TF's ``training_ops.apply_gradient_descent``).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     apply_gradient_descent(fb.Variable(1.0), 0.1, 2.0).op.type
    'ApplyGradientDescent'
    """
    ref = _ref(var)
    inputs = (ref, tensor(alpha, dtype=ref.dtype), tensor(delta, dtype=ref.dtype))
    return make1(
        "ApplyGradientDescent",
        inputs,
        {"use_locking": use_locking},
        name=name or "ApplyGradientDescent",
    )
