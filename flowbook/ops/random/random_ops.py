"""Random tensors: uniform floats and ints, normal, truncated normal, shuffles.

Random ops are stateful and declared with ``resource="rng"``: each Session
keeps one generator per random op (seeded from the op's ``seed``/``seed2``
attrs, or from the OS when both are 0) and binds it into the kernel as the
``rng`` keyword, so a kernel is ``kernel(xp, shape, *, rng, dtype, seed,
seed2)`` and draws with ``rng.random`` / ``rng.standard_normal`` /
``rng.integers``, which numpy's and CuPy's generators share.  Repeated runs in
one session give new values; two fresh sessions of a seeded graph give the
same ones.  A seeded op (``seed`` or ``seed2`` set) draws TensorFlow's own
words instead (``rng.reserve``, :mod:`flowbook.kernels.philox`) and turns them into
values as TF does (:mod:`flowbook.kernels.philox_sampling`; ``RandomShuffle``: TF's
Fisher-Yates), so it gives TensorFlow's values and orders, run after run;
``RandomShuffle`` draws them unseeded too, from seeds of the OS.

The seed attrs are fixed when the op is built, by TensorFlow's ``get_seed``
rules: the graph seed (``set_random_seed``) and the op's ``seed`` argument;
with only the graph seed set, the op seed is the graph's op count, so the
same program builds the same seeds.  As in TensorFlow, the wrappers compose
the distribution's scale and shift in the graph (``rnd * stddev + mean``).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.random_normal([2, 3], seed=1).op.inputs[0].op.type
    'Mul'
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowbook.framework import dtypes
from flowbook.framework.errors import InvalidArgumentError
from flowbook.framework.graph import get_default_graph, name_scope
from flowbook.framework.registry import NOT_DIFFERENTIABLE, Out, op
from flowbook.framework.tensor import Tensor
from flowbook.framework.tensor_shape import fmt
from flowbook.kernels import philox_sampling
from flowbook.kernels.philox import OpRandom, Words, fisher_yates
from flowbook.ops._builder import make1
from flowbook.ops._shape_inputs import check_int, const_ints, host_ints, int_input
from flowbook.ops.array.constant_op import constant_value, convert_to_tensor, partial_shape_value
from flowbook.ops.math import math_ops

__all__ = [
    "get_seed",
    "random_normal",
    "random_shuffle",
    "random_uniform",
    "truncated_normal",
]

DEFAULT_GRAPH_SEED = 87654321  # TensorFlow's graph seed when only an op seed is given
_MAXINT32 = 2**31 - 1
_FLOATS = (dtypes.float16, dtypes.float32, dtypes.float64)
_INTS = (dtypes.int32, dtypes.int64)


def get_seed(op_seed: int | None) -> tuple[int | None, int | None]:
    """The ``(seed, seed2)`` pair of a new random op, by TensorFlow's rules.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     get_seed(None), get_seed(7)
    ((None, None), (87654321, 7))
    """
    graph = get_default_graph()
    if graph.seed is not None:
        if op_seed is None:
            op_seed = graph._next_id  # the op count: TF's graph._last_id
        seeds = (graph.seed % _MAXINT32, op_seed % _MAXINT32)
    elif op_seed is not None:
        seeds = (DEFAULT_GRAPH_SEED, op_seed % _MAXINT32)
    else:
        return None, None
    return (0, _MAXINT32) if seeds == (0, 0) else seeds  # (0, 0) would mean "nondeterministic"


def _seed_attrs(op_seed: int | None) -> dict[str, int]:
    seed, seed2 = get_seed(op_seed)
    return {"seed": seed or 0, "seed2": seed2 or 0}


def _shape_of(op_type: str, shape: Tensor) -> Any:
    check_int(op_type, "shape", shape)
    dims = const_ints(shape)
    if dims is not None and any(d < 0 for d in dims):
        raise ValueError(f"shape must be non-negative, got {dims}")
    if shape._shape is not None and len(shape._shape) != 1:
        raise ValueError(f"shape must be a 1-D tensor, got one of shape {fmt(shape._shape)}")
    return partial_shape_value(shape)


def _float_infer(op_type: str) -> Any:
    def infer(shape: Tensor, dtype: dtypes.DType, seed: int, seed2: int) -> Out:
        if dtype not in _FLOATS:
            raise TypeError(
                f"{op_type} needs a float16, float32 or float64 dtype, got {dtype.name}"
            )
        return Out(dtype, _shape_of(op_type, shape))

    return infer


def _native(dtype: dtypes.DType) -> Any:
    """The dtype to draw in: the generators draw float32 and float64 only."""
    return dtype.np if dtype is not dtypes.float16 else np.float32


def _tf_stream(rng: Any, seed: int, seed2: int) -> OpRandom:
    """The op's :class:`~flowbook.kernels.philox.OpRandom` (a bare generator, bound by hand: wrapped)."""
    return rng if isinstance(rng, OpRandom) else OpRandom(seed, seed2, rng)


def _tf_values(xp: Any, draw: Any, rng: OpRandom, shape: Any, dtype: np.dtype) -> Any:
    """A seeded op's values as TF draws them: 256 blocks reserved per element."""
    dims = host_ints(shape)
    n = int(np.prod(dims))
    return draw(rng.reserve(n * 256), n, dtype, xp).reshape(dims)


_RNG = {"stateful": True, "resource": "rng"}
_SHAPED = {**_RNG, "host_inputs": (0,)}  # the shape input is read on the host
_FLOAT_ATTRS = ("dtype", "seed", "seed2")


def _random_uniform_kernel(
    xp: Any, shape: Any, *, rng: Any, dtype: Any, seed: int, seed2: int
) -> Any:
    if seed or seed2:  # TF's values
        return _tf_values(
            xp, philox_sampling.uniform, _tf_stream(rng, seed, seed2), shape, dtype.np
        )
    out = rng.random(host_ints(shape), dtype=_native(dtype))
    return out.astype(dtype.np, copy=False)


op(
    "RandomUniform",
    ("shape",),
    infer=_float_infer("RandomUniform"),
    attrs=_FLOAT_ATTRS,
    kernel=_random_uniform_kernel,
    **_SHAPED,
    type_attrs={"T": 0},
    grad=NOT_DIFFERENTIABLE,
)


def _random_normal_kernel(
    xp: Any, shape: Any, *, rng: Any, dtype: Any, seed: int, seed2: int
) -> Any:
    if seed or seed2:  # TF's values
        return _tf_values(xp, philox_sampling.normal, _tf_stream(rng, seed, seed2), shape, dtype.np)
    out = rng.standard_normal(host_ints(shape), dtype=_native(dtype))
    return out.astype(dtype.np, copy=False)


op(
    "RandomStandardNormal",
    ("shape",),
    infer=_float_infer("RandomStandardNormal"),
    attrs=_FLOAT_ATTRS,
    kernel=_random_normal_kernel,
    **_SHAPED,
    type_attrs={"T": 0},
    grad=NOT_DIFFERENTIABLE,
)


def _truncated_normal_kernel(
    xp: Any, shape: Any, *, rng: Any, dtype: Any, seed: int, seed2: int
) -> Any:
    if seed or seed2:  # TF's values
        return _tf_values(
            xp, philox_sampling.truncated_normal, _tf_stream(rng, seed, seed2), shape, dtype.np
        )
    native = _native(dtype)
    out = rng.standard_normal(host_ints(shape), dtype=native)
    redraw = xp.abs(out) > 2.0
    while bool(redraw.any()):  # about 4.6% per round: a handful of rounds, each vectorised
        out[redraw] = rng.standard_normal(int(redraw.sum()), dtype=native)
        redraw = xp.abs(out) > 2.0
    return out.astype(dtype.np, copy=False)


op(
    "TruncatedNormal",
    ("shape",),
    infer=_float_infer("TruncatedNormal"),
    attrs=_FLOAT_ATTRS,
    kernel=_truncated_normal_kernel,
    **_SHAPED,
    type_attrs={"T": 0},
    grad=NOT_DIFFERENTIABLE,
)


def _uniform_int_infer(
    shape: Tensor, minval: Tensor, maxval: Tensor, Tout: Any, seed: int, seed2: int
) -> Out:
    if Tout not in _INTS:
        raise TypeError(f"RandomUniformInt needs an int32 or int64 dtype, got {Tout.name}")
    for n, t in (("minval", minval), ("maxval", maxval)):
        if t.dtype is not Tout:
            raise TypeError(f"{n} has type {t.dtype.name}, expected {Tout.name}")
        if t._shape not in (None, ()):
            raise ValueError(f"{n} must be a scalar, got shape {fmt(t._shape)}")
    lo, hi = constant_value(minval), constant_value(maxval)
    if lo is not None and hi is not None and not lo < hi:
        raise ValueError(f"Need minval < maxval: {int(lo)} >= {int(hi)}")
    return Out(Tout, _shape_of("RandomUniformInt", shape))


def _random_uniform_int_kernel(
    xp: Any, shape: Any, minval: Any, maxval: Any, *, rng: Any, Tout: Any, seed: int, seed2: int
) -> Any:
    lo, hi = int(minval), int(maxval)
    if not lo < hi:
        raise InvalidArgumentError(None, None, f"Need minval < maxval: {lo} >= {hi}")
    if seed or seed2:  # TF's values
        draw = lambda g, n, dt, xp: philox_sampling.uniform_int(g, n, lo, hi, dt, xp)
        return _tf_values(xp, draw, _tf_stream(rng, seed, seed2), shape, Tout.np)
    return rng.integers(lo, hi, host_ints(shape), dtype=Tout.np)


op(
    "RandomUniformInt",
    ("shape", "minval", "maxval"),
    infer=_uniform_int_infer,
    attrs=("Tout", "seed", "seed2"),
    kernel=_random_uniform_int_kernel,
    **_RNG,
    host_inputs=(0, 1, 2),
    type_attrs={"T": 0},
    grad=NOT_DIFFERENTIABLE,
)


def _random_shuffle_kernel(xp: Any, value: Any, *, rng: Any, seed: int, seed2: int) -> Any:
    if value.ndim == 0:
        return value
    n = value.shape[0]
    words = Words(
        _tf_stream(rng, seed, seed2).reserve((max(n - 1, 0) + 3) // 4)
    )  # TF: n - 1 words, 4 a block
    return value[fisher_yates(n, words)]


op(
    "RandomShuffle",
    ("value",),
    infer=lambda value, seed, seed2: Out(value.dtype, value._shape),
    attrs=("seed", "seed2"),
    kernel=_random_shuffle_kernel,
    **_RNG,
    host_only=True,
    grad=NOT_DIFFERENTIABLE,
)


def _float_dtype(dtype: Any, what: str) -> dtypes.DType:
    dt = dtypes.as_dtype(dtype)
    if dt not in _FLOATS:
        raise ValueError(f"{what} needs a float dtype, got {dt.name}")
    return dt


def random_uniform(
    shape: Any,
    minval: Any = 0,
    maxval: Any = None,
    dtype: Any = dtypes.float32,
    seed: int | None = None,
    name: str | None = None,
) -> Tensor:
    """Values drawn uniformly from ``[minval, maxval)`` (maxval 1 for floats; ints need it).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.random_uniform([2, 3], -1, 1, seed=3).shape.as_list()
    [2, 3]
    """
    dt = dtypes.as_dtype(dtype)
    if dt not in _FLOATS + _INTS:
        raise ValueError(f"random_uniform needs a float or int32/int64 dtype, got {dt.name}")
    if maxval is None:
        if dt.is_integer:
            raise ValueError(f"Must specify maxval for integer dtype {dt.name}")
        maxval = 1
    with name_scope(name, "random_uniform") as scope:
        shape_t = int_input(shape, "shape")
        lo = convert_to_tensor(minval, dtype=dt, name="min")
        hi = convert_to_tensor(maxval, dtype=dt, name="max")
        if dt.is_integer:
            attrs = {"Tout": dt, **_seed_attrs(seed)}
            return make1("RandomUniformInt", [shape_t, lo, hi], attrs, name=scope)
        rnd = make1("RandomUniform", [shape_t], {"dtype": dt, **_seed_attrs(seed)})
        scale = math_ops.multiply(rnd, math_ops.subtract(hi, lo, name="sub"), name="mul")
        return math_ops.add(scale, lo, name=scope)


def _scaled_normal(
    op_type: str, default: str, shape: Any, mean: Any, stddev: Any, dtype: Any, seed: Any, name: Any
) -> Tensor:
    dt = _float_dtype(dtype, default)
    with name_scope(name, default) as scope:
        shape_t = int_input(shape, "shape")
        mean_t = convert_to_tensor(mean, dtype=dt, name="mean")
        stddev_t = convert_to_tensor(stddev, dtype=dt, name="stddev")
        rnd = make1(op_type, [shape_t], {"dtype": dt, **_seed_attrs(seed)})
        return math_ops.add(math_ops.multiply(rnd, stddev_t, name="mul"), mean_t, name=scope)


def _normal_sampler(op_type: str, fn: str, summary: str, example: str, value: str) -> Any:
    """TF1's ``random_normal`` or ``truncated_normal``: ``op_type``'s standard draws, scaled."""

    def sample(
        shape: Any,
        mean: Any = 0.0,
        stddev: Any = 1.0,
        dtype: Any = dtypes.float32,
        seed: int | None = None,
        name: str | None = None,
    ) -> Tensor:
        return _scaled_normal(op_type, fn, shape, mean, stddev, dtype, seed, name)

    sample.__name__ = sample.__qualname__ = fn
    sample.__doc__ = f"""{summary}

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.{example}
    {value}
    """
    return sample


random_normal = _normal_sampler(
    "RandomStandardNormal",
    "random_normal",
    "Values drawn from a normal distribution with ``mean`` and ``stddev``.",
    "random_normal([3], dtype=fb.float64).dtype",
    "tf.float64",
)
truncated_normal = _normal_sampler(
    "TruncatedNormal",
    "truncated_normal",
    "Normal values more than 2 ``stddev`` from ``mean`` are drawn again.",
    "truncated_normal([784, 10], stddev=0.1).shape.as_list()",
    "[784, 10]",
)
__test__ = {f.__name__: f.__doc__ for f in (random_normal, truncated_normal)}


def random_shuffle(value: Any, seed: int | None = None, name: str | None = None) -> Tensor:
    """``value`` with its first dimension shuffled.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.random_shuffle(fb.range(5), seed=1).op.type
    'RandomShuffle'
    """
    with name_scope(name, "RandomShuffle") as scope:
        x = convert_to_tensor(value, name="value")
        return make1("RandomShuffle", [x], _seed_attrs(seed), name=scope)
