"""Numerical gradient checks (TF1's ``tf.test.compute_gradient``), for tests and the curious.

``compute_gradient`` returns the theoretical Jacobian (from ``gradients``,
one backward run per output element) and the numerical one (central finite
differences, one pair of forward runs per input element) of ``y`` with
respect to ``x``; ``compute_gradient_error`` their largest difference.  Use
float64 and small shapes.

    >>> import flowbook as fb
    >>> x = fb.placeholder(fb.float64, [3])
    >>> err = compute_gradient_error(x, [3], fb.reduce_sum(x * x), [], x_init_value=np.array([1.0, 2.0, 3.0]))
    >>> err < 1e-6
    True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowbook.autodiff.gradients import gradients
from flowbook.framework.tensor import Tensor
from flowbook.ops.array.constant_op import placeholder
from flowbook.runtime.session import Session


def compute_gradient(
    x: Tensor,
    x_shape: Any,
    y: Tensor,
    y_shape: Any,
    x_init_value: Any = None,
    delta: float = 1e-6,
    extra_feed_dict: dict | None = None,
    session: Session | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(theoretical, numerical) Jacobians, each shaped [x size, y size] as in TF1."""
    x_shape, y_shape = tuple(x_shape), tuple(y_shape)
    x0 = (
        np.asarray(x_init_value, dtype=x.dtype.np)
        if x_init_value is not None
        else np.random.default_rng(0).standard_normal(x_shape).astype(x.dtype.np)
    )
    feed = dict(extra_feed_dict or {})
    nx, ny = int(np.prod(x_shape)), int(np.prod(y_shape))
    grad_y = y.graph.as_default()
    with grad_y:
        dy = placeholder(y.dtype, y_shape, name="grad_y")
        (dx,) = gradients(y, [x], grad_ys=dy)
    own = session is None
    sess = session or Session(graph=y.graph)
    try:
        theory = np.zeros((nx, ny))
        for j in range(ny):
            seed = np.zeros(ny, dtype=y.dtype.np)
            seed[j] = 1
            if dx is not None:
                g = sess.run(dx, {**feed, x: x0, dy: seed.reshape(y_shape)})
                theory[:, j] = np.asarray(g).ravel()
        numeric = np.zeros((nx, ny))
        flat = x0.ravel()
        for i in range(nx):
            plus, minus = flat.copy(), flat.copy()
            plus[i] += delta
            minus[i] -= delta
            yp = sess.run(y, {**feed, x: plus.reshape(x_shape)})
            ym = sess.run(y, {**feed, x: minus.reshape(x_shape)})
            numeric[i, :] = (np.asarray(yp, np.float64) - np.asarray(ym, np.float64)).ravel() / (
                2 * delta
            )
    finally:
        if own:
            sess.close()
    return theory, numeric


def compute_gradient_error(
    x: Tensor,
    x_shape: Any,
    y: Tensor,
    y_shape: Any,
    x_init_value: Any = None,
    delta: float = 1e-6,
    **kwargs: Any,
) -> float:
    """The largest absolute difference between the theoretical and numerical Jacobians."""
    theory, numeric = compute_gradient(x, x_shape, y, y_shape, x_init_value, delta, **kwargs)
    return float(np.max(np.abs(theory - numeric))) if theory.size else 0.0
