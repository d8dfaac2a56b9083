"""Learning-rate schedules driven by the global step (TF1's ``tf.train.*_decay``).

Each schedule is a function of ``global_step`` (a Python int, tensor or the
global step Variable) that returns a scalar graph tensor, so the rate is
recomputed by every ``Session.run`` from the step's current value; pass it
as an optimizer's ``learning_rate``.  The step is cast to the learning
rate's dtype, the formulas are TF1's, and a ``staircase`` variant floors
``global_step / decay_steps`` where TF has one.  TF's ``cond`` choices become
``where`` selections, so every schedule is one straight run of element-wise
ops under its name scope (``ExponentialDecay``, ``PolynomialDecay``...).

    >>> import flowbook as fb
    >>> from flowbook import train
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     lr = train.exponential_decay(0.1, 20, decay_steps=10, decay_rate=0.5)
    ...     round(float(s.run(lr)), 6)
    0.025
"""

from __future__ import annotations

import math
from typing import Any

from flowbook.framework.graph import name_scope
from flowbook.framework.tensor import Tensor
from flowbook.ops.array import array_ops
from flowbook.ops.array.constant_op import convert_to_tensor
from flowbook.ops.math import math_ops
from flowbook.ops.random import random_ops


def _start(learning_rate: Any, global_step: Any, what: str) -> tuple[Tensor, Tensor]:
    """The learning rate as a tensor and the step cast to its dtype."""
    if global_step is None:
        raise ValueError(f"global_step is required for {what}.")
    lr = convert_to_tensor(learning_rate, name="learning_rate")
    return lr, math_ops.cast(global_step, lr.dtype)


def _progress(step: Tensor, decay_steps: Any, staircase: bool) -> Tensor:
    """``step / decay_steps``, floored with ``staircase``."""
    p = step / math_ops.cast(decay_steps, step.dtype)
    return math_ops.floor(p) if staircase else p


def exponential_decay(
    learning_rate: Any,
    global_step: Any,
    decay_steps: Any,
    decay_rate: Any,
    staircase: bool = False,
    name: str | None = None,
) -> Tensor:
    """``learning_rate * decay_rate ** (global_step / decay_steps)``; with ``staircase`` the
    exponent is floored, so the rate drops every ``decay_steps`` steps.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     round(float(s.run(exponential_decay(1.0, 15, 10, 0.5, staircase=True))), 3)
    0.5
    """
    with name_scope(name, "ExponentialDecay") as scope:
        lr, step = _start(learning_rate, global_step, "exponential_decay")
        p = _progress(step, decay_steps, staircase)
        return math_ops.multiply(
            lr, math_ops.pow(math_ops.cast(decay_rate, lr.dtype), p), name=scope
        )


def natural_exp_decay(
    learning_rate: Any,
    global_step: Any,
    decay_steps: Any,
    decay_rate: Any,
    staircase: bool = False,
    name: str | None = None,
) -> Tensor:
    """``learning_rate * exp(-decay_rate * global_step / decay_steps)`` (staircase: floored).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     round(float(s.run(natural_exp_decay(1.0, 10, 10, 1.0))), 4)
    0.3679
    """
    with name_scope(name, "NaturalExpDecay") as scope:
        lr, step = _start(learning_rate, global_step, "natural_exp_decay")
        p = _progress(step, decay_steps, staircase)
        factor = math_ops.exp(-math_ops.cast(decay_rate, lr.dtype) * p)
        return math_ops.multiply(lr, factor, name=scope)


def inverse_time_decay(
    learning_rate: Any,
    global_step: Any,
    decay_steps: Any,
    decay_rate: Any,
    staircase: bool = False,
    name: str | None = None,
) -> Tensor:
    """``learning_rate / (1 + decay_rate * global_step / decay_steps)`` (staircase: floored).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     float(s.run(inverse_time_decay(1.0, 10, 10, 1.0)))
    0.5
    """
    with name_scope(name, "InverseTimeDecay") as scope:
        lr, step = _start(learning_rate, global_step, "inverse_time_decay")
        p = _progress(step, decay_steps, staircase)
        return math_ops.divide(lr, 1 + math_ops.cast(decay_rate, lr.dtype) * p, name=scope)


def piecewise_constant(x: Any, boundaries: list[Any], values: list[Any], name: str | None = None):
    """``values[0]`` while ``x <= boundaries[0]``, ``values[i]`` while
    ``boundaries[i-1] < x <= boundaries[i]``, ``values[-1]`` after the last boundary.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     [float(s.run(piecewise_constant(x, [10, 20], [1.0, 0.5, 0.25]))) for x in (10, 11, 21)]
    [1.0, 0.5, 0.25]
    """
    if len(boundaries) != len(values) - 1:
        raise ValueError("The length of boundaries should be 1 less than the length of values")
    with name_scope(name, "PiecewiseConstant") as scope:
        x = convert_to_tensor(x)
        vals = [convert_to_tensor(v) for v in values]
        if any(v.dtype.base_dtype is not vals[0].dtype.base_dtype for v in vals):
            raise ValueError(f"Values must have elements all with the same dtype: {values}")
        bounds = [convert_to_tensor(b) for b in boundaries]
        if any(b.dtype.base_dtype is not x.dtype.base_dtype for b in bounds):
            bounds = [math_ops.cast(b, x.dtype.base_dtype) for b in bounds]
        out = vals[-1]
        for b, v in reversed(list(zip(bounds, vals[:-1]))):
            out = array_ops.where(math_ops.less_equal(x, b), v, out)
        return array_ops.identity(out, name=scope)


piecewise_constant_decay = piecewise_constant


def polynomial_decay(
    learning_rate: Any,
    global_step: Any,
    decay_steps: Any,
    end_learning_rate: Any = 0.0001,
    power: Any = 1.0,
    cycle: bool = False,
    name: str | None = None,
) -> Tensor:
    """``(lr - end) * (1 - step / decay_steps) ** power + end`` with the step capped at
    ``decay_steps``; with ``cycle``, ``decay_steps`` grows to the next multiple past the step.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     round(float(s.run(polynomial_decay(1.0, 5, 10, end_learning_rate=0.0))), 3)
    0.5
    """
    with name_scope(name, "PolynomialDecay") as scope:
        lr, step = _start(learning_rate, global_step, "polynomial_decay")
        dtype = lr.dtype
        end = math_ops.cast(end_learning_rate, dtype)
        steps = math_ops.cast(decay_steps, dtype)
        if cycle:
            ceil = math_ops.ceil(step / steps)
            steps = steps * array_ops.where(
                math_ops.equal(step, 0), array_ops.ones_like(ceil), ceil
            )
        else:
            step = math_ops.minimum(step, steps)
        frac = math_ops.pow(1 - step / steps, math_ops.cast(power, dtype))
        return math_ops.add((lr - end) * frac, end, name=scope)


def cosine_decay(
    learning_rate: Any,
    global_step: Any,
    decay_steps: Any,
    alpha: Any = 0.0,
    name: str | None = None,
) -> Tensor:
    """``lr * ((1 - alpha) * 0.5 * (1 + cos(pi * step / decay_steps)) + alpha)``, the step
    capped at ``decay_steps``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     round(float(s.run(cosine_decay(1.0, 5, 10))), 3)
    0.5
    """
    with name_scope(name, "CosineDecay") as scope:
        lr, step = _start(learning_rate, global_step, "cosine_decay")
        steps = math_ops.cast(decay_steps, lr.dtype)
        frac = math_ops.minimum(step, steps) / steps
        cosine = 0.5 * (1 + math_ops.cos(math.pi * frac))
        alpha_t = math_ops.cast(alpha, lr.dtype)
        return math_ops.multiply(lr, (1 - alpha_t) * cosine + alpha_t, name=scope)


def cosine_decay_restarts(
    learning_rate: Any,
    global_step: Any,
    first_decay_steps: Any,
    t_mul: Any = 2.0,
    m_mul: Any = 1.0,
    alpha: Any = 0.0,
    name: str | None = None,
) -> Tensor:
    """Cosine decay with warm restarts (SGDR): period ``i`` lasts ``first_decay_steps *
    t_mul ** i`` steps and starts from ``lr * m_mul ** i``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     [round(float(s.run(cosine_decay_restarts(1.0, t, 10))), 3) for t in (5, 10)]
    [0.5, 1.0]
    """
    with name_scope(name, "SGDRDecay") as scope:
        lr, step = _start(learning_rate, global_step, "cosine_decay_restarts")
        dtype = lr.dtype
        done = step / math_ops.cast(first_decay_steps, dtype)
        t = math_ops.cast(t_mul, dtype)
        m = math_ops.cast(m_mul, dtype)
        alpha_t = math_ops.cast(alpha, dtype)
        # t_mul == 1: equal periods; else the geometric series of period lengths
        i_equal = math_ops.floor(done)
        i_geom = math_ops.floor(math_ops.log(1 - done * (1 - t)) / math_ops.log(t))
        geom_done = (done - (1 - math_ops.pow(t, i_geom)) / (1 - t)) / math_ops.pow(t, i_geom)
        equal = math_ops.equal(t, 1.0)
        i_restart = array_ops.where(equal, i_equal, i_geom)
        frac = array_ops.where(equal, done - i_equal, geom_done)
        cosine = 0.5 * math_ops.pow(m, i_restart) * (1 + math_ops.cos(math.pi * frac))
        return math_ops.multiply(lr, (1 - alpha_t) * cosine + alpha_t, name=scope)


def _linear_cosine(
    lr: Tensor, step: Tensor, decay_steps: Any, num_periods: Any, alpha: Any, beta: Any, noise: Any
) -> tuple[Tensor, Tensor]:
    """``(alpha + linear + noise) * cosine + beta`` and the capped step, shared by both."""
    dtype = lr.dtype
    steps = math_ops.cast(decay_steps, dtype)
    step = math_ops.minimum(step, steps)
    linear = (steps - step) / steps
    if noise is not None:
        linear = linear + noise(step)
    fraction = 2 * math_ops.cast(num_periods, dtype) * step / steps
    cosine = 0.5 * (1 + math_ops.cos(math.pi * fraction))
    return (math_ops.cast(alpha, dtype) + linear) * cosine + math_ops.cast(beta, dtype), step


def linear_cosine_decay(
    learning_rate: Any,
    global_step: Any,
    decay_steps: Any,
    num_periods: Any = 0.5,
    alpha: Any = 0.0,
    beta: Any = 0.001,
    name: str | None = None,
) -> Tensor:
    """``lr * ((alpha + (D - s) / D) * 0.5 * (1 + cos(2 pi num_periods s / D)) + beta)`` with
    ``s`` the step capped at ``D = decay_steps``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     round(float(s.run(linear_cosine_decay(1.0, 0, 10))), 3)
    1.001
    """
    with name_scope(name, "LinearCosineDecay") as scope:
        lr, step = _start(learning_rate, global_step, "linear_cosine_decay")
        decayed, _ = _linear_cosine(lr, step, decay_steps, num_periods, alpha, beta, None)
        return math_ops.multiply(lr, decayed, name=scope)


def noisy_linear_cosine_decay(
    learning_rate: Any,
    global_step: Any,
    decay_steps: Any,
    initial_variance: Any = 1.0,
    variance_decay: Any = 0.55,
    num_periods: Any = 0.5,
    alpha: Any = 0.0,
    beta: Any = 0.001,
    name: str | None = None,
) -> Tensor:
    """``linear_cosine_decay`` with Gaussian noise of variance ``initial_variance / (1 + s) **
    variance_decay`` added to the linear part; seed it with ``fb.set_random_seed``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     float(s.run(noisy_linear_cosine_decay(1.0, 10, 10, beta=0.0)))
    0.0
    """
    with name_scope(name, "NoisyLinearCosineDecay") as scope:
        lr, step = _start(learning_rate, global_step, "noisy_linear_cosine_decay")
        dtype = lr.dtype

        def noise(capped: Tensor) -> Tensor:
            variance = math_ops.cast(initial_variance, dtype) / math_ops.pow(
                1 + capped, math_ops.cast(variance_decay, dtype)
            )
            return random_ops.random_normal([], stddev=math_ops.sqrt(variance), dtype=dtype)

        decayed, _ = _linear_cosine(lr, step, decay_steps, num_periods, alpha, beta, noise)
        return math_ops.multiply(lr, decayed, name=scope)
