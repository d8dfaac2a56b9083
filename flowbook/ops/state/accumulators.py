"""TF1's gradient accumulators: ``tf.ConditionalAccumulator`` (and its base class).

An accumulator object builds its ``ConditionalAccumulator`` op once (the
handle, ``accumulator_ref``) and each method builds one op reading it
(``flowbook.ops.state.accumulator_ops``), named as TensorFlow names them.  What
can be checked while building is checked here, at the line that builds the
op: a gradient converts to the accumulator's dtype and its static shape must
be compatible with the accumulator's (a ValueError otherwise); steps are
cast to int64.  ``take_grad``'s output has the accumulator's shape.

Sparse gradients (``IndexedSlices``, ``SparseConditionalAccumulator``) are
not here: flowbook's gradients are dense.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default(), tf.Session() as s:
    ...     acc = tf.ConditionalAccumulator(tf.float32, shape=[2])
    ...     s.run([acc.apply_grad([1.0, 2.0]), acc.apply_grad([3.0, 6.0])])
    ...     s.run(acc.take_grad(2)).tolist()
    [None, None]
    [2.0, 4.0]
"""

from __future__ import annotations

from typing import Any

from flowbook.framework import dtypes
from flowbook.framework.graph import get_default_graph
from flowbook.framework.tensor import Operation, Tensor
from flowbook.framework.tensor_shape import TensorShape
from flowbook.ops._builder import make, make1
from flowbook.ops.array.constant_op import convert_to_tensor
from flowbook.ops.math.math_ops import cast
from flowbook.ops.state import accumulator_ops  # noqa: F401  (registers the ops)

__all__ = ["ConditionalAccumulator", "ConditionalAccumulatorBase"]


class ConditionalAccumulatorBase:
    """What every accumulator has: its handle, dtype and shape, a count and a global step."""

    def __init__(self, dtype: Any, shape: Any, accumulator_ref: Tensor) -> None:
        self._dtype = dtypes.as_dtype(dtype)  # the gradients' dtype
        self._shape = TensorShape(shape)  # their static shape (may be unknown)
        self._accumulator_ref = accumulator_ref  # the ConditionalAccumulator op's handle
        self._name = accumulator_ref.op.name

    @property
    def accumulator_ref(self) -> Tensor:
        """The accumulator's handle (the ConditionalAccumulator op's output)."""
        return self._accumulator_ref

    @property
    def name(self) -> str:
        return self._name

    @property
    def dtype(self) -> Any:
        return self._dtype

    def num_accumulated(self, name: str | None = None) -> Tensor:
        """An int32 tensor: how many gradients the accumulator holds now."""
        return make1(
            "AccumulatorNumAccumulated",
            (self._accumulator_ref,),
            name=name or "AccumulatorNumAccumulated",
        )

    def set_global_step(self, new_global_step: Any, name: str | None = None) -> Operation:
        """An op setting the accumulator's global step (older gradients are then stale)."""
        step = cast(convert_to_tensor(new_global_step), dtypes.int64)
        return make(
            "AccumulatorSetGlobalStep",
            (self._accumulator_ref, step),
            name=name or "AccumulatorSetGlobalStep",
        )


class ConditionalAccumulator(ConditionalAccumulatorBase):
    """Averages the gradients pushed to it; ``take_grad`` waits for enough of them.

    A gradient whose ``local_step`` is below the accumulator's global step is
    dropped (stale); each take increments the global step.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     tf.ConditionalAccumulator(tf.float32, [3], shared_name="w/grad_accum").name
    'conditional_accumulator'
    """

    def __init__(
        self,
        dtype: Any,
        shape: Any = None,
        shared_name: str | None = None,
        name: str = "conditional_accumulator",
        reduction_type: str = "MEAN",
    ) -> None:
        if reduction_type not in ("MEAN", "SUM"):
            raise ValueError(f"reduction_type must be 'MEAN' or 'SUM', got {reduction_type!r}")
        shape = TensorShape(shape)
        attrs = {
            "dtype": dtypes.as_dtype(dtype),
            "shape": shape.as_tuple(),
            "container": getattr(get_default_graph(), "_container", ""),
            "shared_name": shared_name or "",
            "reduction_type": reduction_type,
        }
        ref = make1("ConditionalAccumulator", (), attrs, name=name)
        super().__init__(dtype, shape, ref)

    def apply_grad(self, grad: Any, local_step: Any = 0, name: str | None = None) -> Operation:
        """An op adding ``grad`` (computed at ``local_step``) unless it is stale."""
        grad = convert_to_tensor(grad, dtype=self._dtype)
        if not grad.shape.is_compatible_with(self._shape):
            raise ValueError(
                f"Shapes {grad.shape} and {self._shape} are incompatible: the gradient "
                f"{grad.name} does not fit accumulator '{self._name}'"
            )
        step = cast(convert_to_tensor(local_step), dtypes.int64)
        return make(
            "AccumulatorApplyGradient",
            (self._accumulator_ref, step, grad),
            {"dtype": self._dtype},
            name=name or "AccumulatorApplyGradient",
        )

    def take_grad(self, num_required: Any, name: str | None = None) -> Tensor:
        """The mean of at least ``num_required`` gradients, once that many are in (it waits)."""
        n = convert_to_tensor(num_required, dtype=dtypes.int32)
        out = make1(
            "AccumulatorTakeGradient",
            (self._accumulator_ref, n),
            {"dtype": self._dtype},
            name=name or "AccumulatorTakeGradient",
        )
        out.set_shape(self._shape)
        return out
