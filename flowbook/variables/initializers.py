"""Initializers, TF1's ``tf.*_initializer`` classes and the ``tf.initializers`` namespace.

An initializer is a small object holding its parameters (and ``seed`` and
``dtype``); calling it with a shape builds the ops of the initial value in the
default graph: ``init(shape, dtype=None, partition_info=None) -> Tensor``.
``tf.get_variable`` and the ``tf.layers`` call it under the variable's
``<name>/Initializer/`` name scope, so the graph reads as TensorFlow's.

The formulas are TensorFlow's documented ones.  Fans are computed from the
shape as TF does (``_compute_fans``): a matrix ``[in, out]`` has ``fan_in=in``
and ``fan_out=out``; a conv kernel ``[h, w, in, out]`` multiplies both by the
receptive field ``h*w``.  :class:`VarianceScaling` divides ``scale`` by the
fan ``mode`` names, then draws from

- ``truncated_normal`` (or its older name ``normal``): stddev
  ``sqrt(scale) / 0.87962566103423978`` (the std of a standard normal cut at
  two sigmas), so the drawn values have std ``sqrt(scale)``;
- ``untruncated_normal``: stddev ``sqrt(scale)``;
- ``uniform``: ``[-limit, limit]`` with ``limit = sqrt(3 * scale)``.

Glorot (Xavier) is ``VarianceScaling(1.0, "fan_avg")``; He and LeCun are
``fan_in`` with scale 2 and 1.  Random initializers pass ``seed`` to their
random op, so the graph seed and the op seed decide the draws as in TF.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default(), tf.Session() as s:
    ...     s.run(tf.constant_initializer(0.5)([2])).tolist()
    [0.5, 0.5]
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from flowbook.framework import dtypes
from flowbook.framework.tensor import Tensor
from flowbook.framework.tensor_shape import as_shape
from flowbook.ops.array import array_ops, constant_op
from flowbook.ops.linalg import linalg_ops
from flowbook.ops.math import math_ops
from flowbook.ops.random import random_ops
from flowbook.variables.variables import (
    global_variables_initializer,
    local_variables_initializer,
    variables_initializer,
)

TRUNCATED_STD = 0.87962566103423978  # std of a standard normal truncated to [-2, 2]


def _float_dtype(dtype: Any) -> dtypes.DType:
    dt = dtypes.as_dtype(dtype)
    if not dt.is_floating:
        raise ValueError(f"Expected floating point type, got {dt.name}.")
    return dt


def _dims(shape: Any) -> list[int]:
    dims = as_shape(shape)
    if dims is None or None in dims:
        raise ValueError(f"An initializer needs a fully defined shape, got {shape!r}")
    return [int(d) for d in dims]


def compute_fans(shape: Any) -> tuple[float, float]:
    """TF's ``(fan_in, fan_out)`` of a weight shape.

    >>> compute_fans([3, 3, 16, 32])
    (144.0, 288.0)
    """
    dims = _dims(shape)
    if not dims:
        return 1.0, 1.0
    if len(dims) == 1:
        return float(dims[0]), float(dims[0])
    receptive = float(np.prod(dims[:-2])) if len(dims) > 2 else 1.0
    return dims[-2] * receptive, dims[-1] * receptive


class Initializer:
    """Base class: ``init(shape, dtype=None, partition_info=None)`` builds the initial value.

    >>> isinstance(Zeros(), Initializer)
    True
    """

    dtype: dtypes.DType

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        raise NotImplementedError

    def get_config(self) -> dict[str, Any]:
        """The constructor arguments, so that ``cls.from_config(init.get_config())`` copies it."""
        return {}

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Initializer:
        return cls(**config)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"


class Zeros(Initializer):
    """Zeros of the given shape (TF1's ``tf.zeros_initializer``).

    >>> import flowbook as tf
    >>> with tf.Graph().as_default(), tf.Session() as s:
    ...     s.run(tf.zeros_initializer()([2], tf.int32)).tolist()
    [0, 0]
    """

    def __init__(self, dtype: Any = dtypes.float32) -> None:
        self.dtype = dtypes.as_dtype(dtype)

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        return array_ops.zeros(shape, dtype or self.dtype)

    def get_config(self) -> dict[str, Any]:
        return {"dtype": self.dtype.name}


class Ones(Zeros):
    """Ones of the given shape (TF1's ``tf.ones_initializer``).

    >>> import flowbook as tf
    >>> with tf.Graph().as_default(), tf.Session() as s:
    ...     s.run(tf.ones_initializer()([2])).tolist()
    [1.0, 1.0]
    """

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        return array_ops.ones(shape, dtype or self.dtype)


class Constant(Initializer):
    """A constant: a scalar fills the shape, a list or array must have the shape's size.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default(), tf.Session() as s:
    ...     s.run(tf.constant_initializer([1, 2, 3, 4])([2, 2])).tolist()
    [[1.0, 2.0], [3.0, 4.0]]
    """

    def __init__(self, value: Any = 0, dtype: Any = dtypes.float32, verify_shape: bool = False):
        if not np.isscalar(value) and not isinstance(value, list | tuple | np.ndarray):
            raise TypeError(
                f"Invalid type for initial value: {type(value).__name__} (expected Python scalar, "
                "list or tuple of values, or numpy.ndarray)."
            )
        self.value = value
        self.dtype = dtypes.as_dtype(dtype)
        self._verify_shape = verify_shape

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        dt = dtypes.as_dtype(dtype or self.dtype)
        dims = _dims(shape)
        value = np.asarray(self.value, dtype=dt.np)
        if value.ndim and value.size != int(np.prod(dims)):
            raise TypeError(
                f"Expected Tensor's shape: {tuple(dims)}, got {value.shape}: a constant_initializer "
                f"value must hold {int(np.prod(dims))} elements or be a scalar"
            )
        if self._verify_shape and value.ndim and value.shape != tuple(dims):
            raise TypeError(f"Expected Tensor's shape: {tuple(dims)}, got {value.shape}.")
        return constant_op.constant(
            np.broadcast_to(value.reshape(dims) if value.ndim else value, dims), dt
        )

    def get_config(self) -> dict[str, Any]:
        return {"value": self.value, "dtype": self.dtype.name}


class RandomUniform(Initializer):
    """Uniform values in ``[minval, maxval)`` (TF1's ``tf.random_uniform_initializer``).

    >>> import flowbook as tf
    >>> with tf.Graph().as_default(), tf.Session() as s:
    ...     bool((s.run(tf.random_uniform_initializer(-1, 1)([100])) < 1).all())
    True
    """

    def __init__(
        self, minval: Any = 0, maxval: Any = None, seed: int | None = None, dtype: Any = "float32"
    ):
        self.minval, self.maxval, self.seed = minval, maxval, seed
        self.dtype = dtypes.as_dtype(dtype)

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        dt = dtype or self.dtype
        return random_ops.random_uniform(shape, self.minval, self.maxval, dt, seed=self.seed)

    def get_config(self) -> dict[str, Any]:
        return {
            "minval": self.minval,
            "maxval": self.maxval,
            "seed": self.seed,
            "dtype": self.dtype.name,
        }


class RandomNormal(Initializer):
    """Normal values with ``mean`` and ``stddev`` (TF1's ``tf.random_normal_initializer``).

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     tf.random_normal_initializer(stddev=0.1)([3, 4]).shape.as_list()
    [3, 4]
    """

    _sample = staticmethod(random_ops.random_normal)

    def __init__(
        self,
        mean: float = 0.0,
        stddev: float = 1.0,
        seed: int | None = None,
        dtype: Any = "float32",
    ):
        self.mean, self.stddev, self.seed = mean, stddev, seed
        self.dtype = _float_dtype(dtype)

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        dt = _float_dtype(dtype or self.dtype)
        return self._sample(shape, self.mean, self.stddev, dt, seed=self.seed)

    def get_config(self) -> dict[str, Any]:
        return {
            "mean": self.mean,
            "stddev": self.stddev,
            "seed": self.seed,
            "dtype": self.dtype.name,
        }


class TruncatedNormal(RandomNormal):
    """Normal values, those beyond two ``stddev`` drawn again (``tf.truncated_normal_initializer``).

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     tf.truncated_normal_initializer(stddev=0.1)([3]).op.name
    'truncated_normal'
    """

    _sample = staticmethod(random_ops.truncated_normal)


_MODES = ("fan_in", "fan_out", "fan_avg")
_DISTRIBUTIONS = ("normal", "uniform", "truncated_normal", "untruncated_normal")


class VarianceScaling(Initializer):
    """Values whose variance is ``scale / fan`` (TF1's ``tf.variance_scaling_initializer``).

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     t = tf.variance_scaling_initializer(2.0, distribution="uniform")([50, 10])
    ...     [op.name for op in t.graph.get_operations()][-1]
    'random_uniform'
    """

    def __init__(
        self,
        scale: float = 1.0,
        mode: str = "fan_in",
        distribution: str = "truncated_normal",
        seed: int | None = None,
        dtype: Any = "float32",
    ) -> None:
        if scale <= 0.0:
            raise ValueError(f"`scale` must be positive float, got {scale!r}.")
        if mode not in _MODES:
            raise ValueError(f"Invalid `mode` argument: {mode!r} (one of {', '.join(_MODES)})")
        distribution = distribution.lower()
        if distribution not in _DISTRIBUTIONS:
            raise ValueError(
                f"Invalid `distribution` argument: {distribution!r} "
                f"(one of {', '.join(_DISTRIBUTIONS)})"
            )
        self.scale, self.mode, self.distribution, self.seed = scale, mode, distribution, seed
        self.dtype = _float_dtype(dtype)

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        dt = _float_dtype(dtype or self.dtype)
        fan_in, fan_out = compute_fans(shape)
        fan = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}
        scale = self.scale / max(1.0, fan[self.mode])
        if self.distribution in ("normal", "truncated_normal"):
            stddev = math.sqrt(scale) / TRUNCATED_STD
            return random_ops.truncated_normal(shape, 0.0, stddev, dt, seed=self.seed)
        if self.distribution == "untruncated_normal":
            return random_ops.random_normal(shape, 0.0, math.sqrt(scale), dt, seed=self.seed)
        limit = math.sqrt(3.0 * scale)
        return random_ops.random_uniform(shape, -limit, limit, dt, seed=self.seed)

    def get_config(self) -> dict[str, Any]:
        return {
            "scale": self.scale,
            "mode": self.mode,
            "distribution": self.distribution,
            "seed": self.seed,
            "dtype": self.dtype.name,
        }


class _Preset(VarianceScaling):
    """A VarianceScaling whose scale, mode and distribution are fixed by its class."""

    preset: tuple[float, str, str] = (1.0, "fan_avg", "uniform")

    def __init__(self, seed: int | None = None, dtype: Any = "float32") -> None:
        super().__init__(*self.preset, seed=seed, dtype=dtype)

    def get_config(self) -> dict[str, Any]:
        return {"seed": self.seed, "dtype": self.dtype.name}


class GlorotUniform(_Preset):
    """Uniform in ``±sqrt(6 / (fan_in + fan_out))``: get_variable's default for floats.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     tf.glorot_uniform_initializer()([4, 4]).dtype
    tf.float32
    """


class GlorotNormal(_Preset):
    """Truncated normal with std ``sqrt(2 / (fan_in + fan_out))`` (``tf.glorot_normal_initializer``).

    >>> GlorotNormal().distribution
    'truncated_normal'
    """

    preset = (1.0, "fan_avg", "truncated_normal")


class HeNormal(_Preset):
    """Truncated normal with std ``sqrt(2 / fan_in)`` (``tf.initializers.he_normal``).

    >>> HeNormal().scale
    2.0
    """

    preset = (2.0, "fan_in", "truncated_normal")


class HeUniform(_Preset):
    """Uniform in ``±sqrt(6 / fan_in)`` (``tf.initializers.he_uniform``).

    >>> HeUniform().mode
    'fan_in'
    """

    preset = (2.0, "fan_in", "uniform")


class LecunNormal(_Preset):
    """Truncated normal with std ``sqrt(1 / fan_in)`` (``tf.initializers.lecun_normal``).

    >>> LecunNormal().scale
    1.0
    """

    preset = (1.0, "fan_in", "truncated_normal")


class LecunUniform(_Preset):
    """Uniform in ``±sqrt(3 / fan_in)`` (``tf.initializers.lecun_uniform``).

    >>> LecunUniform().distribution
    'uniform'
    """

    preset = (1.0, "fan_in", "uniform")


class UniformUnitScaling(Initializer):
    """Uniform in ``±factor * sqrt(3 / input_size)``, ``input_size`` all dims but the last.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     tf.uniform_unit_scaling_initializer()([3, 2]).shape.as_list()
    [3, 2]
    """

    def __init__(self, factor: float = 1.0, seed: int | None = None, dtype: Any = "float32"):
        self.factor, self.seed = factor, seed
        self.dtype = _float_dtype(dtype)

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        dt = _float_dtype(dtype or self.dtype)
        dims = _dims(shape)
        input_size = float(np.prod(dims[:-1])) if len(dims) > 1 else 1.0
        limit = math.sqrt(3.0 / max(1.0, input_size)) * self.factor
        return random_ops.random_uniform(shape, -limit, limit, dt, seed=self.seed)

    def get_config(self) -> dict[str, Any]:
        return {"factor": self.factor, "seed": self.seed, "dtype": self.dtype.name}


class Orthogonal(Initializer):
    """A (semi-)orthogonal matrix times ``gain``: QR of a normal draw, signs fixed by R's diagonal.

    Shapes of more than two dims are flattened to ``[prod(dims[:-1]), dims[-1]]``.

    >>> import flowbook as tf, numpy as np
    >>> with tf.Graph().as_default(), tf.Session() as s:
    ...     q = s.run(tf.orthogonal_initializer()([3, 3]))
    >>> bool(np.allclose(q.T @ q, np.eye(3), atol=1e-5))
    True
    """

    def __init__(self, gain: float = 1.0, seed: int | None = None, dtype: Any = "float32"):
        self.gain, self.seed = gain, seed
        self.dtype = _float_dtype(dtype)

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        dt = _float_dtype(dtype or self.dtype)
        dims = _dims(shape)
        if len(dims) < 2:
            raise ValueError(
                f"The tensor to initialize must be at least two-dimensional, got shape {dims}"
            )
        rows, cols = int(np.prod(dims[:-1])), dims[-1]
        flat = (cols, rows) if rows < cols else (rows, cols)
        a = random_ops.random_normal(flat, dtype=dt, seed=self.seed)
        q, r = linalg_ops.qr(a, full_matrices=False)
        diag = math_ops.reduce_sum(r * np.eye(min(flat), dtype=dt.np), 0)
        q = q * math_ops.sign(diag)
        if rows < cols:
            q = array_ops.transpose(q)
        return math_ops.multiply(self.gain, array_ops.reshape(q, dims))

    def get_config(self) -> dict[str, Any]:
        return {"gain": self.gain, "seed": self.seed, "dtype": self.dtype.name}


class Identity(Initializer):
    """``gain`` times the identity matrix (2-D shapes only).

    >>> import flowbook as tf
    >>> with tf.Graph().as_default(), tf.Session() as s:
    ...     s.run(tf.initializers.identity(2.0)([2, 3])).tolist()
    [[2.0, 0.0, 0.0], [0.0, 2.0, 0.0]]
    """

    def __init__(self, gain: float = 1.0, dtype: Any = "float32") -> None:
        self.gain = gain
        self.dtype = _float_dtype(dtype)

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        dt = _float_dtype(dtype or self.dtype)
        dims = _dims(shape)
        if len(dims) != 2:
            raise ValueError(
                f"Identity matrix initializer can only be used for 2D matrices, got shape {dims}"
            )
        return constant_op.constant(self.gain * np.eye(*dims), dt)

    def get_config(self) -> dict[str, Any]:
        return {"gain": self.gain, "dtype": self.dtype.name}


# TF1's lower-case names: tf.zeros_initializer, ... and tf.initializers.zeros, ...
zeros_initializer = zeros = Zeros
ones_initializer = ones = Ones
constant_initializer = constant = Constant
random_uniform_initializer = random_uniform = RandomUniform
random_normal_initializer = random_normal = RandomNormal
truncated_normal_initializer = truncated_normal = TruncatedNormal
variance_scaling_initializer = variance_scaling = VarianceScaling
glorot_uniform_initializer = glorot_uniform = GlorotUniform
glorot_normal_initializer = glorot_normal = GlorotNormal
he_normal, he_uniform, lecun_normal, lecun_uniform = HeNormal, HeUniform, LecunNormal, LecunUniform
uniform_unit_scaling_initializer = uniform_unit_scaling = UniformUnitScaling
orthogonal_initializer = orthogonal = Orthogonal
identity = Identity
global_variables = global_variables_initializer
local_variables = local_variables_initializer
variables = variables_initializer


def get(identifier: Any) -> Any:
    """An initializer from a name (``"glorot_uniform"``), a class, or an instance (kept).

    >>> get("zeros")
    Zeros(dtype='float32')
    """
    if identifier is None or isinstance(identifier, Initializer):
        return identifier
    if isinstance(identifier, type) and issubclass(identifier, Initializer):
        return identifier()
    if isinstance(identifier, str) and identifier in _BY_NAME:
        return _BY_NAME[identifier]()
    if callable(identifier):
        return identifier
    raise ValueError(f"Unknown initializer: {identifier!r}")


_BY_NAME: dict[str, type[Initializer]] = {
    "zeros": Zeros, "ones": Ones, "constant": Constant, "random_uniform": RandomUniform,
    "random_normal": RandomNormal, "truncated_normal": TruncatedNormal,
    "variance_scaling": VarianceScaling, "glorot_uniform": GlorotUniform,
    "glorot_normal": GlorotNormal, "he_normal": HeNormal, "he_uniform": HeUniform,
    "lecun_normal": LecunNormal, "lecun_uniform": LecunUniform, "orthogonal": Orthogonal,
    "identity": Identity, "uniform_unit_scaling": UniformUnitScaling,
}  # fmt: skip
