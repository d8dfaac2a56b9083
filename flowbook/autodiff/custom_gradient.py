"""``tf.custom_gradient``: a function that returns its value and the gradient to use for it.

As TF1 does it in a graph: ``f(*xs)`` returns ``(y, grad_fn)``; ``y`` and the
``xs`` go through one ``IdentityN`` op whose gradient is overridden (through
:mod:`flowbook.framework.grad_overrides`) by a function that gives ``grad_fn(dy)`` to
the ``xs`` and nothing to the path inside ``f``.  So backprop reaches the
``xs`` only the way ``grad_fn`` says.  (TF's ``variables=`` keyword for
functions that read variables is not supported: pass them as arguments.)

    >>> import flowbook as fb
    >>> @fb.custom_gradient
    ... def clipped_identity(x):
    ...     return fb.identity(x), lambda dy: fb.clip_by_value(dy, -1.0, 1.0)
    >>> x = fb.constant([0.5, 2.0])
    >>> (g,) = fb.gradients(clipped_identity(x) * 5.0, x)
    >>> with fb.Session() as s:
    ...     s.run(g).tolist()
    [1.0, 1.0]
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from typing import Any

from flowbook.framework.grad_overrides import RegisterGradient, record
from flowbook.framework.tensor import Operation, Tensor
from flowbook.ops._builder import make, tensor

__all__ = ["custom_gradient"]

_NAMES = itertools.count()  # numbers the gradient names, one per call of a decorated function


def custom_gradient(f: Callable[..., Any]) -> Callable[..., Any]:
    """Decorator: ``f(*xs)`` returns ``(y, grad_fn)``; ``grad_fn(*dys)`` gives one gradient per x.

    >>> import flowbook as fb
    >>> @fb.custom_gradient
    ... def square(x):
    ...     return x * x, lambda dy: dy * 2.0 * x
    >>> x = fb.constant(3.0)
    >>> with fb.Session() as s:
    ...     float(s.run(fb.gradients(square(x), x)[0]))
    6.0
    """

    @functools.wraps(f)
    def decorated(*args: Any, **kwargs: Any) -> Any:
        xs = [tensor(a) for a in args]
        result, grad_fn = f(*xs, **kwargs)
        many = isinstance(result, list | tuple)
        ys = [tensor(y) for y in (result if many else [result])]
        name = f"CustomGradient-{next(_NAMES)}"

        def grad(op: Operation, *grads: Tensor) -> list[Tensor | None]:
            gx = grad_fn(*grads[: len(ys)])
            gx = list(gx) if isinstance(gx, list | tuple) else [gx]
            if len(gx) != len(xs):
                raise ValueError(
                    f"custom_gradient: {f.__name__}'s grad_fn returned {len(gx)} gradients "
                    f"for {len(xs)} inputs"
                )
            return [None] * len(ys) + [None if g is None else tensor(g) for g in gx]

        RegisterGradient(name)(grad)
        both = ys + xs
        op = make("IdentityN", both, {"T": [t.dtype for t in both]}, name=f.__name__)
        record(op, name)
        outs = list(op.outputs[: len(ys)])
        return outs if many else outs[0]

    return decorated
