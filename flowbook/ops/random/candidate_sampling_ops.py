"""Candidate samplers: draw ``num_sampled`` classes from ``[0, range_max)`` for sampled losses.

Two ops, as in TensorFlow: ``LogUniformCandidateSampler`` (the approximate
Zipfian distribution ``P(k) = log((k + 2) / (k + 1)) / log(range_max + 1)``,
drawn as ``floor(exp(u * log(range_max + 1))) - 1`` for uniform ``u``) and
``UniformCandidateSampler`` (``P(k) = 1 / range_max``).  Each takes the true
classes ``[batch, num_true]`` (int64) and returns three outputs:

- ``sampled_candidates`` ``[num_sampled]`` int64;
- ``true_expected_count`` ``[batch, num_true]`` and
- ``sampled_expected_count`` ``[num_sampled]`` float32: how many times each
  class is expected among the draws.  With ``unique=True`` the sampler
  draws until it has ``num_sampled`` distinct classes, ``tries`` draws in
  all, and a class of probability ``p`` is expected ``1 - (1 - p) ** tries``
  times; when no draw was rejected (and always when ``unique=False``) it is
  ``p * num_sampled``.

They are random ops (``resource="rng"``: one generator per op and session,
seeded from the ``seed``/``seed2`` attrs by TF's rules, so a seeded graph
draws the same candidates in every fresh session) and run on the host: the
unique draw is a data-dependent loop.  The true classes only shape the
expected counts; the draw does not avoid them (TF's samplers do not either;
``remove_accidental_hits`` in the losses handles that).

    >>> import flowbook as fb
    >>> s = fb.nn.uniform_candidate_sampler([[1]], 1, 3, True, 5, seed=1)
    >>> with fb.Session() as sess:
    ...     cands, true_count, _ = sess.run(s)
    >>> len(set(cands.tolist())), true_count.tolist()
    (3, [[0.6000000238418579]])
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from flowbook.framework import dtypes
from flowbook.framework.errors import InvalidArgumentError
from flowbook.framework.graph import name_scope
from flowbook.framework.registry import NOT_DIFFERENTIABLE, Out, op
from flowbook.framework.tensor import Tensor
from flowbook.framework.tensor_shape import fmt
from flowbook.ops._builder import make, tensor
from flowbook.ops.random.random_ops import get_seed

__all__ = ["log_uniform_candidate_sampler", "uniform_candidate_sampler"]

_ATTRS = ("num_true", "num_sampled", "unique", "range_max", "seed", "seed2")


class CandidateSample(NamedTuple):
    """What a candidate sampler returns (TF's field names)."""

    sampled_candidates: Tensor  # [num_sampled] int64
    true_expected_count: Tensor  # [batch, num_true] float32
    sampled_expected_count: Tensor  # [num_sampled] float32


def _sampler_infer(op_type: str) -> Any:
    def infer(
        true_classes: Tensor,
        num_true: int,
        num_sampled: int,
        unique: bool,
        range_max: int,
        seed: int = 0,
        seed2: int = 0,
    ) -> list[Out]:
        if true_classes.dtype is not dtypes.int64:
            raise TypeError(f"true_classes must be int64, got {true_classes.dtype.name}")
        shape = true_classes._shape
        if shape is not None and (len(shape) != 2 or shape[1] not in (None, num_true)):
            raise ValueError(f"true_classes must be [batch, num_true={num_true}], got {fmt(shape)}")
        if num_true < 1 or num_sampled < 1 or range_max < 1:
            raise ValueError("num_true, num_sampled and range_max must be positive")
        if unique and num_sampled > range_max:
            raise ValueError(
                f"{op_type}: cannot draw {num_sampled} unique classes of range_max {range_max}"
            )
        batch = None if shape is None else shape[0]
        return [
            Out(dtypes.int64, (num_sampled,)),
            Out(dtypes.float32, (batch, num_true)),
            Out(dtypes.float32, (num_sampled,)),
        ]

    return infer


def log_uniform_probability(classes: Any, range_max: int) -> Any:
    """P(k) of the log-uniform (Zipfian) sampler, in float64.

    >>> round(float(log_uniform_probability(np.array(0), 9)), 4)  # log(2) / log(10)
    0.301
    """
    k = np.asarray(classes, dtype=np.float64)
    return np.log((k + 2.0) / (k + 1.0)) / np.log(range_max + 1.0)


def _draw_log_uniform(rng: Any, n: int, range_max: int) -> Any:
    u = np.asarray(rng.random(n), dtype=np.float64)
    k = np.floor(np.exp(u * np.log(range_max + 1.0))).astype(np.int64) - 1
    return np.clip(k, 0, range_max - 1)


def _draw_uniform(rng: Any, n: int, range_max: int) -> Any:
    return np.asarray(rng.integers(0, range_max, n), dtype=np.int64)


def _sample(draw: Any, rng: Any, num_sampled: int, unique: bool, range_max: int) -> tuple:
    """(candidates, tries): the draws, distinct ones in order of drawing when ``unique``."""
    if not unique:
        return draw(rng, num_sampled, range_max), num_sampled
    seen: dict[int, None] = {}
    tries = 0
    while len(seen) < num_sampled:
        for value in draw(rng, 2 * num_sampled, range_max).tolist():
            tries += 1
            seen.setdefault(value, None)
            if len(seen) == num_sampled:
                break
    return np.fromiter(seen, dtype=np.int64, count=num_sampled), tries


def _expected(p: Any, num_sampled: int, tries: int) -> Any:
    if tries == num_sampled:
        return (p * num_sampled).astype(np.float32)
    return (-np.expm1(tries * np.log1p(-p))).astype(np.float32)


def _sampler_kernel(draw: Any, probability: Any) -> Any:
    def kernel(
        xp: Any,
        true_classes: Any,
        *,
        rng: Any,
        num_true: int,
        num_sampled: int,
        unique: bool,
        range_max: int,
        seed: int = 0,
        seed2: int = 0,
    ) -> tuple[Any, Any, Any]:
        classes = np.asarray(true_classes)
        if classes.ndim != 2 or classes.shape[1] != num_true:
            raise InvalidArgumentError(
                None, None, f"true_classes must be [batch, {num_true}], got {list(classes.shape)}"
            )
        cands, tries = _sample(draw, rng, num_sampled, unique, range_max)
        true_p = probability(classes, range_max)
        sampled_p = probability(cands, range_max)
        return (
            cands,
            _expected(true_p, num_sampled, tries),
            _expected(sampled_p, num_sampled, tries),
        )

    return kernel


def _uniform_probability(classes: Any, range_max: int) -> Any:
    return np.full(np.shape(classes), 1.0 / range_max)


_OPTIONS = {"stateful": True, "resource": "rng", "host_only": True}
op(
    "LogUniformCandidateSampler",
    ("true_classes",),
    _ATTRS,
    _sampler_infer("LogUniformCandidateSampler"),
    _sampler_kernel(_draw_log_uniform, log_uniform_probability),
    grad=NOT_DIFFERENTIABLE,
    num_outputs=3,
    type_attrs={},
    **_OPTIONS,
)
op(
    "UniformCandidateSampler",
    ("true_classes",),
    _ATTRS,
    _sampler_infer("UniformCandidateSampler"),
    _sampler_kernel(_draw_uniform, _uniform_probability),
    grad=NOT_DIFFERENTIABLE,
    num_outputs=3,
    type_attrs={},
    **_OPTIONS,
)


def _sampler(
    op_type: str,
    default: str,
    true_classes: Any,
    num_true: int,
    num_sampled: int,
    unique: bool,
    range_max: int,
    seed: int | None,
    name: str | None,
) -> CandidateSample:
    seed1, seed2 = get_seed(seed)
    attrs = {
        "num_true": int(num_true),
        "num_sampled": int(num_sampled),
        "unique": bool(unique),
        "range_max": int(range_max),
        "seed": seed1 or 0,
        "seed2": seed2 or 0,
    }
    with name_scope(name, default) as scope:
        t = tensor(
            true_classes, dtype=dtypes.int64 if not isinstance(true_classes, Tensor) else None
        )
        op = make(op_type, (t,), attrs, name=scope)
    return CandidateSample(*op.outputs)


def log_uniform_candidate_sampler(
    true_classes: Any,
    num_true: int,
    num_sampled: int,
    unique: bool,
    range_max: int,
    seed: int | None = None,
    name: str | None = None,
) -> CandidateSample:
    """Sample classes by the log-uniform (Zipfian) distribution, for sorted-by-frequency ids.

    >>> import flowbook as fb
    >>> s = fb.nn.log_uniform_candidate_sampler([[0]], 1, 2, False, 9, seed=3)
    >>> with fb.Session() as sess:
    ...     round(float(sess.run(s.true_expected_count)[0, 0]), 4)  # 2 * log(2) / log(10)
    0.6021
    """
    return _sampler(
        "LogUniformCandidateSampler",
        "LogUniformCandidateSampler",
        true_classes,
        num_true,
        num_sampled,
        unique,
        range_max,
        seed,
        name,
    )


def uniform_candidate_sampler(
    true_classes: Any,
    num_true: int,
    num_sampled: int,
    unique: bool,
    range_max: int,
    seed: int | None = None,
    name: str | None = None,
) -> CandidateSample:
    """Sample classes uniformly from ``[0, range_max)``.

    >>> import flowbook as fb
    >>> s = fb.nn.uniform_candidate_sampler([[0]], 1, 4, False, 8, seed=3)
    >>> with fb.Session() as sess:
    ...     sess.run(s.sampled_expected_count).tolist()
    [0.5, 0.5, 0.5, 0.5]
    """
    return _sampler(
        "UniformCandidateSampler",
        "UniformCandidateSampler",
        true_classes,
        num_true,
        num_sampled,
        unique,
        range_max,
        seed,
        name,
    )
