"""Stateless random tensors: pure functions of a shape-``[2]`` seed tensor (``tf.random.stateless_*``).

A stateless op has no generator to keep between runs: its values are fixed
by its ``seed`` input, so every run (and every session) of the same seed
gives the same values, and a new seed is a new tensor, not new state.  The
ops are TensorFlow's ``StatelessRandomUniform``, ``StatelessRandomNormal``,
``StatelessTruncatedNormal``, ``StatelessRandomUniformInt`` and
``StatelessRandomUniformFullInt`` (inputs ``shape`` and ``seed``, both read
on the host), and give TensorFlow's values:

- **the key and counter**: TF scrambles the two int64 seeds with one Philox
  block (:func:`flowbook.kernels.philox.philox_rounds`) under a fixed key,
  counter words ``(seed0 lo, seed0 hi, seed1 lo, seed1 hi)``; the block's
  first two words are the key of the stream, its last two the upper half of
  its counter (the lower half starts at 0).
- **the values**: that stream turned into values exactly as a seeded
  stateful op turns its own (:mod:`flowbook.kernels.philox_sampling`), so
  uniform, normal, truncated normal and bounded ints share those kernels;
  full-range ints are the raw words (int64: two words, low first).

Built on those (no op types of their own): ``stateless_categorical`` (the
inverse CDF of the softmax at stateless uniforms) and
``stateless_parameterized_truncated_normal`` (the normal quantile of uniforms
between the bounds' CDFs), both deterministic in the seed but not TF's draws
(TF samples those by rejection); ``fold_in`` and ``split`` (TF's: full-range
ints of the seed); TF2's ``create_rng_state`` / ``Algorithm``; and
``all_candidate_sampler``, which draws nothing (every class, expected once).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(stateless_random_uniform([2], seed=[1, 2])).round(4).tolist()
    [0.8441, 0.192]
"""

from __future__ import annotations

import enum
from typing import Any

import numpy as np

from flowbook.framework import dtypes
from flowbook.framework.graph import name_scope
from flowbook.framework.registry import NOT_DIFFERENTIABLE, Out, op
from flowbook.framework.tensor import Tensor
from flowbook.framework.tensor_shape import fmt
from flowbook.kernels import philox_sampling
from flowbook.kernels.philox import Philox, philox_rounds
from flowbook.ops._builder import make1
from flowbook.ops._shape_inputs import check_int, const_ints, host_ints, int_input
from flowbook.ops.array import array_ops
from flowbook.ops.array.constant_op import convert_to_tensor, partial_shape_value
from flowbook.ops.math import math_ops
from flowbook.ops.math.scan_ops import cumsum
from flowbook.ops.math.special_ops import erfc, ndtri

__all__ = [
    "Algorithm",
    "all_candidate_sampler",
    "create_rng_state",
    "fold_in",
    "split",
    "stateless_categorical",
    "stateless_multinomial",
    "stateless_parameterized_truncated_normal",
    "stateless_random_normal",
    "stateless_random_uniform",
    "stateless_truncated_normal",
]

_MIX_KEY = (0x3EC8F720, 0x02461E29)  # TF's key for scrambling the seed
_MASK32 = (1 << 32) - 1
_FLOATS = (dtypes.float16, dtypes.float32, dtypes.float64)
_INTS = (dtypes.int32, dtypes.int64)


def stream(seed0: int, seed1: int) -> Philox:
    """The Philox stream TF's stateless ops draw for the seed ``(seed0, seed1)``.

    >>> stream(1, 2).key != stream(2, 1).key
    True
    """
    s0, s1 = seed0 & ((1 << 64) - 1), seed1 & ((1 << 64) - 1)
    words = [np.array([w & _MASK32], np.uint32) for w in (s0, s0 >> 32, s1, s1 >> 32)]
    mix = [int(w[0]) for w in philox_rounds(words, _MIX_KEY)]
    g = Philox(0, 0)
    g.key = (mix[0], mix[1])
    g.counter = (mix[2] << 64) | (mix[3] << 96)
    return g


def _seed_of(seed: Any) -> Philox:
    s = host_ints(seed)
    return stream(int(s[0]), int(s[1]))


def _check(op_type: str, shape: Tensor, seed: Tensor) -> Any:
    check_int(op_type, "shape", shape)
    check_int(op_type, "seed", seed)
    if seed._shape is not None and seed._shape != (2,):
        raise ValueError(f"seed must have shape [2], got {fmt(seed._shape)}")
    dims = const_ints(shape)
    if dims is not None and any(d < 0 for d in dims):
        raise ValueError(f"shape must be non-negative, got {dims}")
    return partial_shape_value(shape)


def _float_op(op_type: str, draw: Any) -> None:
    def infer(shape: Tensor, seed: Tensor, dtype: dtypes.DType) -> Out:
        if dtype not in _FLOATS:
            raise TypeError(f"{op_type} needs a float dtype, got {dtype.name}")
        return Out(dtype, _check(op_type, shape, seed))

    def kernel(xp: Any, shape: Any, seed: Any, *, dtype: Any) -> Any:
        dims = host_ints(shape)
        return draw(_seed_of(seed), int(np.prod(dims)), dtype.np, xp).reshape(dims)

    op(
        op_type,
        ("shape", "seed"),
        ("dtype",),
        infer,
        kernel,
        host_inputs=(0, 1),
        type_attrs={"T": 0, "Tseed": 1},
        grad=NOT_DIFFERENTIABLE,
    )


_float_op("StatelessRandomUniform", philox_sampling.uniform)
_float_op("StatelessRandomNormal", philox_sampling.normal)
_float_op("StatelessTruncatedNormal", philox_sampling.truncated_normal)


def _int_infer(shape: Tensor, seed: Tensor, minval: Tensor, maxval: Tensor, dtype: Any) -> Out:
    if dtype not in _INTS or minval.dtype is not dtype or maxval.dtype is not dtype:
        raise TypeError(f"StatelessRandomUniformInt needs int32 or int64 bounds of {dtype.name}")
    return Out(dtype, _check("StatelessRandomUniformInt", shape, seed))


def _int_kernel(xp: Any, shape: Any, seed: Any, minval: Any, maxval: Any, *, dtype: Any) -> Any:
    lo, hi = int(minval), int(maxval)
    if not lo < hi:
        raise ValueError(f"Need minval < maxval: {lo} >= {hi}")
    dims = host_ints(shape)
    n = int(np.prod(dims))
    return philox_sampling.uniform_int(_seed_of(seed), n, lo, hi, dtype.np, xp).reshape(dims)


op(
    "StatelessRandomUniformInt",
    ("shape", "seed", "minval", "maxval"),
    ("dtype",),
    _int_infer,
    _int_kernel,
    host_inputs=(0, 1, 2, 3),
    type_attrs={"T": 0, "Tseed": 1},
    grad=NOT_DIFFERENTIABLE,
)


def _full_int_infer(shape: Tensor, seed: Tensor, dtype: Any) -> Out:
    if dtype not in _INTS:
        raise TypeError(f"StatelessRandomUniformFullInt needs int32 or int64, got {dtype.name}")
    return Out(dtype, _check("StatelessRandomUniformFullInt", shape, seed))


def _full_int_kernel(xp: Any, shape: Any, seed: Any, *, dtype: Any) -> Any:
    dims = host_ints(shape)
    n = int(np.prod(dims))
    per_block = 2 if dtype is dtypes.int64 else 4
    words = _seed_of(seed).blocks(-(-n // per_block), xp).ravel()
    if dtype is dtypes.int64:
        w = words.astype(xp.uint64)
        words = w[0::2] | (w[1::2] << xp.uint64(32))
    return words[:n].view(dtype.np.name.replace("int", "uint")).astype(dtype.np).reshape(dims)


op(
    "StatelessRandomUniformFullInt",
    ("shape", "seed"),
    ("dtype",),
    _full_int_infer,
    _full_int_kernel,
    host_inputs=(0, 1),
    type_attrs={"T": 0, "Tseed": 1},
    grad=NOT_DIFFERENTIABLE,
)


def _inputs(shape: Any, seed: Any) -> tuple[Tensor, Tensor]:
    seed_t = convert_to_tensor(seed, name="seed")
    if not seed_t.dtype.is_integer:
        seed_t = convert_to_tensor(seed, dtype=dtypes.int64, name="seed")
    return int_input(shape, "shape"), seed_t


def stateless_random_uniform(
    shape: Any,
    seed: Any,
    minval: Any = 0,
    maxval: Any = None,
    dtype: Any = dtypes.float32,
    name: str | None = None,
) -> Tensor:
    """Uniform values in ``[minval, maxval)``, a function of ``seed`` (TF's values).

    Integer dtypes need ``maxval``; with both bounds ``None`` they are full-range ints.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(stateless_random_uniform([3], [7, 0], 0, 10, fb.int32)).tolist()
    [3, 2, 8]
    """
    dt = dtypes.as_dtype(dtype)
    with name_scope(name, "stateless_random_uniform") as scope:
        shape_t, seed_t = _inputs(shape, seed)
        if dt.is_integer:
            if minval is None and maxval is None:
                return make1(
                    "StatelessRandomUniformFullInt", [shape_t, seed_t], {"dtype": dt}, scope
                )
            if maxval is None:
                raise ValueError(f"Must specify maxval for integer dtype {dt.name}")
            lo = convert_to_tensor(minval, dtype=dt, name="min")
            hi = convert_to_tensor(maxval, dtype=dt, name="max")
            return make1(
                "StatelessRandomUniformInt", [shape_t, seed_t, lo, hi], {"dtype": dt}, scope
            )
        lo = convert_to_tensor(0 if minval is None else minval, dtype=dt, name="min")
        hi = convert_to_tensor(1 if maxval is None else maxval, dtype=dt, name="max")
        rnd = make1("StatelessRandomUniform", [shape_t, seed_t], {"dtype": dt})
        return math_ops.add(rnd * (hi - lo), lo, name=scope)


def _normal(op_type: str, default: str) -> Any:
    def sample(
        shape: Any,
        seed: Any,
        mean: Any = 0.0,
        stddev: Any = 1.0,
        dtype: Any = dtypes.float32,
        name: str | None = None,
    ) -> Tensor:
        dt = dtypes.as_dtype(dtype)
        with name_scope(name, default) as scope:
            shape_t, seed_t = _inputs(shape, seed)
            mean_t = convert_to_tensor(mean, dtype=dt, name="mean")
            std_t = convert_to_tensor(stddev, dtype=dt, name="stddev")
            rnd = make1(op_type, [shape_t, seed_t], {"dtype": dt})
            return math_ops.add(rnd * std_t, mean_t, name=scope)

    sample.__name__ = sample.__qualname__ = default
    sample.__doc__ = (
        f"""``{op_type}``'s values for ``seed`` (TF's), scaled by ``stddev``, plus ``mean``."""
    )
    return sample


stateless_random_normal = _normal("StatelessRandomNormal", "stateless_random_normal")
stateless_truncated_normal = _normal("StatelessTruncatedNormal", "stateless_truncated_normal")


def stateless_categorical(
    logits: Any, num_samples: Any, seed: Any, dtype: Any = dtypes.int64, name: str | None = None
) -> Tensor:
    """Class indices drawn from softmax(``logits``) ([batch, classes]), a function of ``seed``.

    Deterministic in ``seed``, but not TensorFlow's draws: the inverse CDF at
    stateless uniforms.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(stateless_categorical([[-1e9, 0.0]], 3, [1, 2])).tolist()
    [[1, 1, 1]]
    """
    with name_scope(name, "stateless_categorical"):
        z = convert_to_tensor(logits, name="logits")
        z64 = math_ops.cast(z, dtypes.float64)
        p = math_ops.exp(z64 - math_ops.reduce_max(z64, axis=1, keepdims=True))
        cdf = cumsum(p, axis=1)
        batch = array_ops.shape(z)[:1]
        n = array_ops.reshape(convert_to_tensor(num_samples, dtype=dtypes.int32), [1])
        u = stateless_random_uniform(array_ops.concat([batch, n], 0), seed, dtype=dtypes.float64)
        u = u * cdf[:, -1:]
        below = math_ops.cast(
            math_ops.greater_equal(array_ops.expand_dims(u, 2), array_ops.expand_dims(cdf, 1)),
            dtypes.int64,
        )
        drawn = math_ops.minimum(
            math_ops.reduce_sum(below, axis=2), array_ops.shape(z, out_type=dtypes.int64)[1] - 1
        )
        return math_ops.cast(drawn, dtypes.as_dtype(dtype))


def stateless_parameterized_truncated_normal(
    shape: Any,
    seed: Any,
    means: Any = 0.0,
    stddevs: Any = 1.0,
    minvals: Any = -2.0,
    maxvals: Any = 2.0,
    name: str | None = None,
) -> Tensor:
    """Normal values (``means``, ``stddevs``) kept in ``[minvals, maxvals]``, a function of ``seed``.

    The quantile of stateless uniforms spread between the bounds' CDFs:
    deterministic in ``seed``, not TensorFlow's draws; bounds far in one tail
    (CDFs that round to 0 or 1) lose precision.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     x = s.run(stateless_parameterized_truncated_normal([1000], [1, 2], 1.0, 2.0, 0.5, 1.5))
    ...     bool(x.min() >= 0.5 and x.max() <= 1.5)
    True
    """
    with name_scope(name, "stateless_parameterized_truncated_normal"):
        mean = convert_to_tensor(means, name="means")
        dt = mean.dtype
        std = convert_to_tensor(stddevs, dtype=dt, name="stddevs")
        lo = (convert_to_tensor(minvals, dtype=dt) - mean) / std
        hi = (convert_to_tensor(maxvals, dtype=dt) - mean) / std
        root2 = np.sqrt(np.asarray(2.0, dt.np))
        cdf_lo, cdf_hi = 0.5 * erfc(-lo / root2), 0.5 * erfc(-hi / root2)
        u = stateless_random_uniform(shape, seed, dtype=dt)
        return ndtri(cdf_lo + u * (cdf_hi - cdf_lo)) * std + mean


def all_candidate_sampler(
    true_classes: Any,
    num_true: int,
    num_sampled: int,
    unique: bool,
    seed: Any = None,
    name: Any = None,
) -> tuple[Tensor, Tensor, Tensor]:
    """TF's ``AllCandidateSampler``: the classes ``0 .. num_sampled - 1``, every expected count 1.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(all_candidate_sampler([[1, 2]], 2, 3, True)[0]).tolist()
    [0, 1, 2]
    """
    with name_scope(name, "AllCandidateSampler"):
        classes = convert_to_tensor(true_classes, dtype=dtypes.int64, name="true_classes")
        sampled = convert_to_tensor(np.arange(num_sampled, dtype=np.int64), name="sampled")
        true_expected = array_ops.ones_like(classes, dtype=dtypes.float32)
        sampled_expected = convert_to_tensor(np.ones(num_sampled, np.float32), name="expected")
        return sampled, true_expected, sampled_expected


def stateless_multinomial(
    logits: Any,
    num_samples: Any,
    seed: Any,
    output_dtype: Any = dtypes.int64,
    name: str | None = None,
) -> Tensor:
    """TF1's name of :func:`stateless_categorical` (its dtype argument ``output_dtype``)."""
    return stateless_categorical(logits, num_samples, seed, output_dtype, name)


def split(seed: Any, num: int = 2, alg: Any = "auto_select") -> Tensor:
    """``num`` new seeds ([num, 2]) from ``seed``: full-range ints of its stream (TF's).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     split([1, 2], 3).shape.as_list()
    [3, 2]
    """
    seed_t = convert_to_tensor(seed, name="seed")
    return stateless_random_uniform([num, 2], seed_t, None, None, seed_t.dtype)


def fold_in(seed: Any, data: Any, alg: Any = "auto_select") -> Tensor:
    """A new seed from ``seed`` and an integer ``data``: ``[full-range int of seed, data]`` (TF's).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fold_in([1, 2], 5).shape.as_list()
    [2]
    """
    data_t = convert_to_tensor(data, name="data")
    seed1 = stateless_random_uniform([], seed, None, None, data_t.dtype)
    return array_ops.stack([seed1, data_t])


class Algorithm(enum.Enum):
    """TF2's random-number algorithms (flowbook computes Philox; the others name it too)."""

    PHILOX = 1
    THREEFRY = 2
    AUTO_SELECT = 3


def create_rng_state(seed: int, alg: Any) -> np.ndarray:
    """TF2's state array for an int ``seed``: int64 words of the seed, low first, zero-padded
    to the algorithm's size (Philox: 3, ThreeFry: 2).

    >>> create_rng_state(5, "philox").tolist()
    [5, 0, 0]
    """
    name = alg.name.lower() if isinstance(alg, Algorithm) else str(alg).lower()
    size = 2 if name in ("threefry", "2") else 3
    words = []
    s = int(seed) & ((1 << (64 * size)) - 1)
    for _ in range(size):
        words.append(s & ((1 << 64) - 1))
        s >>= 64
    return np.array(words, np.uint64).astype(np.int64)
