"""TF1's smaller top-level names: old scope spellings, templates, switches, helpers.

Each is built from flowbook's own pieces, so it has TensorFlow 1's
meaning in graph mode:

- ``op_scope`` and ``variable_op_scope`` are TF 0.x's spellings of
  ``name_scope(name, default_name, values)`` and ``variable_scope``;
- ``colocate_with(op)`` places the ops built inside on ``op``'s device (the
  device only: flowbook has no ``_class`` colocation constraint);
- ``init_scope()`` clears the enclosing control dependencies, as it does
  in a TF1 graph (there is no eager context or function graph to lift out of);
- ``make_template(name, fn)`` wraps ``fn`` so its first call creates
  variables under a fresh variable scope and every later call reuses them;
- ``switch_case`` picks a branch function by an int index (on ``tf.case``);
- ``parallel_stack`` is ``stack`` (the same value; TF copies the inputs in
  parallel); ``batch_gather`` gathers along the axis after the batch dims;
  ``random_crop`` slices a random window; ``guarantee_const`` is an identity;
- ``py_function`` is ``py_func`` whose function may call ``.numpy()`` on its
  arguments (they are numpy arrays that answer it; there are no EagerTensors);
- ``grad_pass_through(f)`` computes ``f`` with an identity gradient;
  ``recompute_grad(f)`` gives ``f``'s values and gradients (flowbook keeps
  the activations; TensorFlow recomputes them to save memory);
- ``tables_initializer`` groups ``GraphKeys.TABLE_INITIALIZERS`` (a no-op
  when there are none); ``AggregationMethod`` holds the constants
  ``tf.gradients(aggregation_method=...)`` accepts (every method sums).

    >>> import flowbook as tf
    >>> with tf.Graph().as_default(), tf.Session() as s:
    ...     int(s.run(tf.switch_case(tf.constant(1), [lambda: 10, lambda: 20])))
    20
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from flowbook.framework import dtypes
from flowbook.framework.graph import control_dependencies, device, get_collection, name_scope
from flowbook.framework.graph_keys import GraphKeys
from flowbook.framework.tensor import Operation, Tensor
from flowbook.ops.array import array_ops
from flowbook.ops.array.concat_ops import stack
from flowbook.ops.array.constant_op import convert_to_tensor
from flowbook.ops.array.shape_ops import identity, stop_gradient
from flowbook.ops.array.shape_ops import range as range_
from flowbook.ops.array.slicing import slice as slice_
from flowbook.ops.control_flow.control_flow import case
from flowbook.ops.control_flow.control_flow_ops import group
from flowbook.ops.debugging.assert_ops import Assert
from flowbook.ops.debugging.script_ops import py_func
from flowbook.ops.io.example_ops import SparseTensor
from flowbook.ops.math import math_ops
from flowbook.ops.random.random_ops import random_uniform
from flowbook.variables.variable_scope import variable_scope

__all__ = [
    "AggregationMethod",
    "batch_gather",
    "colocate_with",
    "convert_to_tensor_or_indexed_slices",
    "convert_to_tensor_or_sparse_tensor",
    "grad_pass_through",
    "guarantee_const",
    "init_scope",
    "initialize_all_tables",
    "is_symbolic_tensor",
    "make_template",
    "op_scope",
    "parallel_stack",
    "py_function",
    "random_crop",
    "recompute_grad",
    "switch_case",
    "tables_initializer",
    "variable_op_scope",
]


class AggregationMethod:
    """How ``tf.gradients`` adds the gradients reaching one tensor; flowbook always sums.

    >>> AggregationMethod.DEFAULT == AggregationMethod.ADD_N
    True
    """

    ADD_N = 0
    DEFAULT = ADD_N
    EXPERIMENTAL_TREE = 1
    EXPERIMENTAL_ACCUMULATE_N = 2


def op_scope(values: Any, name: str | None, default_name: str | None = None) -> Any:
    """TF 0.x's ``name_scope``, arguments in its old order (values first).

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     with tf.op_scope([], None, "block") as scope: scope
    'block/'
    """
    return name_scope(name, default_name, values)


def variable_op_scope(
    values: Any, name_or_scope: Any, default_name: str | None = None, **kwargs: Any
) -> variable_scope:
    """TF 0.x's ``variable_scope``, arguments in its old order (values first).

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     with tf.variable_op_scope([], "enc"):
    ...         tf.get_variable("w", [1]).name
    'enc/w:0'
    """
    return variable_scope(name_or_scope, default_name, values, **kwargs)


def _device_of(op: Any) -> str:
    if isinstance(op, Tensor | Operation):
        return (op.op if isinstance(op, Tensor) else op).device
    if hasattr(op, "op"):  # a Variable
        return op.op.device
    raise TypeError(f"colocate_with needs an op, a tensor or a variable, got {type(op).__name__}")


@contextmanager
def colocate_with(op: Any, ignore_existing: bool = False) -> Iterator[None]:
    """Ops built inside go on ``op``'s device (``ignore_existing``: not the outer scopes').

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     with tf.device("/cpu:0"): a = tf.constant(1.0)
    ...     with tf.colocate_with(a): b = a + 1.0
    ...     b.device
    '/device:CPU:0'
    """
    where = _device_of(op)
    if ignore_existing:
        with device(None), device(where or None):
            yield
    else:
        with device(where or None) if where else _nothing():
            yield


@contextmanager
def _nothing() -> Iterator[None]:
    yield


@contextmanager
def init_scope() -> Iterator[None]:
    """Ops built inside wait on no enclosing ``control_dependencies`` (TF1 graph mode's meaning).

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     with tf.control_dependencies([tf.no_op()]):
    ...         with tf.init_scope(): c = tf.constant(1.0)
    ...     c.op.control_inputs
    []
    """
    with control_dependencies(None):
        yield


class _Template:
    """``make_template``'s callable: variables made on the first call, reused after."""

    def __init__(self, name: str, func: Callable[..., Any], kwargs: dict[str, Any]) -> None:
        self._name, self._func, self._kwargs = name, func, kwargs
        self._scope: Any = None
        self.__name__ = getattr(func, "__name__", name)

    variable_scope = property(lambda self: self._scope)
    variable_scope_name = property(lambda self: self._scope.name if self._scope else None)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._scope is None:
            with variable_scope(None, default_name=self._name) as scope:
                self._scope = scope
                return self._func(*args, **self._kwargs, **kwargs)
        with variable_scope(self._scope, reuse=True):
            return self._func(*args, **self._kwargs, **kwargs)


def make_template(
    name_: str,
    func_: Callable[..., Any],
    create_scope_now_: bool = False,
    unique_name_: str | None = None,
    custom_getter_: Any = None,
    **kwargs: Any,
) -> _Template:
    """``func_`` sharing its variables between calls: the first call creates them, later reuse.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     scale = tf.make_template("scale", lambda x: x * tf.get_variable("w", []))
    ...     _ = scale(1.0); _ = scale(2.0)
    ...     [v.name for v in tf.global_variables()]
    ['scale/w:0']
    """
    if custom_getter_ is not None:
        raise ValueError("make_template: custom_getter_ is not supported; use variable_scope's")
    template = _Template(unique_name_ or name_, func_, kwargs)
    if create_scope_now_:
        with variable_scope(None, default_name=unique_name_ or name_) as scope:
            template._scope = scope
    return template


def switch_case(
    branch_index: Any, branch_fns: Any, default: Any = None, name: str = "switch_case"
) -> Any:
    """``branch_fns[branch_index]()``; an index out of range runs ``default`` (else the last).

    >>> import flowbook as tf
    >>> with tf.Graph().as_default(), tf.Session() as s:
    ...     int(s.run(tf.switch_case(tf.constant(7), {0: lambda: 1, 1: lambda: 2}, lambda: -1)))
    -1
    """
    pairs = (
        sorted(branch_fns.items()) if isinstance(branch_fns, dict) else list(enumerate(branch_fns))
    )
    if not pairs:
        raise ValueError("switch_case needs at least one branch function")
    if default is None:
        *pairs, (_, default) = pairs
    with name_scope(name):
        index = convert_to_tensor(branch_index, name="branch_index")
        if index.dtype != dtypes.int32:
            raise TypeError(f"switch_case: branch_index must be int32, got {index.dtype.name}")
        preds = [(math_ops.equal(index, k), fn) for k, fn in pairs]
        return case(preds, default=default, exclusive=False)


def parallel_stack(values: Any, name: str = "parallel_stack") -> Tensor:
    """``stack(values)`` (TensorFlow copies the inputs in parallel; the value is the same).

    >>> import flowbook as tf
    >>> with tf.Graph().as_default(), tf.Session() as s:
    ...     s.run(tf.parallel_stack([[1, 2], [3, 4]])).tolist()
    [[1, 2], [3, 4]]
    """
    return stack(values, 0, name=name)


def batch_gather(params: Any, indices: Any, name: str | None = None) -> Tensor:
    """``params[b..., indices[b..., j]]``: a gather along the axis after ``indices``' batch dims.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default(), tf.Session() as s:
    ...     s.run(tf.batch_gather([[1, 2, 3], [4, 5, 6]], [[2, 0], [1, 1]])).tolist()
    [[3, 1], [5, 5]]
    """
    with name_scope(name, "BatchGather", [params, indices]):
        p, i = convert_to_tensor(params, name="params"), convert_to_tensor(indices, name="indices")
        nb = i.shape.ndims
        if nb is None or nb < 1:
            raise ValueError("batch_gather: indices must have a known rank >= 1")
        ps, ish = array_ops.shape(p, out_type=i.dtype), array_ops.shape(i)
        n = ps[nb - 1]
        batch = math_ops.reduce_prod(ps[: nb - 1])
        flat = array_ops.reshape(p, array_ops.concat([[-1], ps[nb:]], 0))
        offsets = array_ops.reshape(range_(batch, dtype=i.dtype) * n, [-1, 1])
        picked = array_ops.gather(flat, array_ops.reshape(i, [batch, -1]) + offsets)
        return array_ops.reshape(picked, array_ops.concat([ish, ps[nb:]], 0))


def random_crop(value: Any, size: Any, seed: int | None = None, name: str | None = None) -> Tensor:
    """A window of shape ``size`` cut from ``value`` at a uniformly random offset.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default(), tf.Session() as s:
    ...     s.run(tf.random_crop(tf.reshape(tf.range(12), [3, 4]), [2, 2], seed=1)).shape
    (2, 2)
    """
    with name_scope(name, "random_crop", [value, size]):
        v = convert_to_tensor(value, name="value")
        sz = convert_to_tensor(size, dtype=dtypes.int32, name="size")
        shape = array_ops.shape(v)
        limit = shape - sz + 1
        check = Assert(math_ops.reduce_all(limit > 0), ["Need value.shape >= size"])
        with control_dependencies([check]):
            top = dtypes.int32.max
            offset = random_uniform(array_ops.shape(shape), 0, top, dtypes.int32, seed) % limit
        return slice_(v, offset, sz)


def guarantee_const(input: Any, name: str | None = None) -> Tensor:
    """``input`` unchanged: TensorFlow's promise that its value never changes (an identity).

    >>> import flowbook as tf
    >>> with tf.Graph().as_default(), tf.Session() as s:
    ...     float(s.run(tf.guarantee_const(2.5)))
    2.5
    """
    return identity(input, name=name or "GuaranteeConst")


def is_symbolic_tensor(tensor: Any) -> bool:
    """Whether ``tensor`` is a graph tensor (every flowbook tensor is).

    >>> import flowbook as tf
    >>> tf.is_symbolic_tensor(tf.constant(1)), tf.is_symbolic_tensor(1)
    (True, False)
    """
    return isinstance(tensor, Tensor)


def convert_to_tensor_or_sparse_tensor(value: Any, dtype: Any = None, name: str | None = None):
    """A SparseTensor as it is, anything else through ``convert_to_tensor``.

    >>> import flowbook as tf
    >>> tf.convert_to_tensor_or_sparse_tensor(tf.SparseTensor([[0]], [1.0], [2])).dense_shape
    [2]
    """
    if isinstance(value, SparseTensor):
        return value
    return convert_to_tensor(value, dtype=dtype, name=name)


def convert_to_tensor_or_indexed_slices(value: Any, dtype: Any = None, name: str | None = None):
    """``convert_to_tensor`` (flowbook's gradients are dense tensors, never IndexedSlices).

    >>> import flowbook as tf
    >>> tf.convert_to_tensor_or_indexed_slices([1.0]).dtype.name
    'float32'
    """
    return convert_to_tensor(value, dtype=dtype, name=name)


class _NumpyArray(np.ndarray):
    """A numpy array that also answers ``.numpy()``, as py_function's EagerTensors do."""

    def numpy(self) -> np.ndarray:
        return np.asarray(self)


def py_function(func: Callable[..., Any], inp: Any, Tout: Any, name: str | None = None) -> Any:
    """``py_func`` for TF2-style functions: the arguments answer ``.numpy()``.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default(), tf.Session() as s:
    ...     float(s.run(tf.py_function(lambda a: a.numpy() * 2, [1.5], tf.float32)))
    3.0
    """

    def call(*arrays: Any) -> Any:
        return func(*(np.asarray(a).view(_NumpyArray) for a in arrays))

    return py_func(call, inp, Tout, stateful=True, name=name or "EagerPyFunc")


def grad_pass_through(f: Callable[..., Any]) -> Callable[..., Any]:
    """``f`` forward, the identity backward (a straight-through estimator).

    >>> import flowbook as tf
    >>> with tf.Graph().as_default(), tf.Session() as s:
    ...     x = tf.constant(2.7); y = tf.grad_pass_through(tf.round)(x)
    ...     [float(v) for v in s.run([y, tf.gradients(y, x)[0]])]
    [3.0, 1.0]
    """

    def wrapped(x: Any) -> Tensor:
        x = convert_to_tensor(x)
        return x + stop_gradient(f(x) - x)

    return wrapped


def recompute_grad(f: Callable[..., Any]) -> Callable[..., Any]:
    """``f`` with its own values and gradients (TensorFlow recomputes them to save memory).

    >>> import flowbook as tf
    >>> with tf.Graph().as_default(), tf.Session() as s:
    ...     x = tf.constant(3.0); y = tf.recompute_grad(lambda t: t * t)(x)
    ...     float(s.run(tf.gradients(y, x)[0]))
    6.0
    """

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        return f(*args, **kwargs)

    return wrapped


def tables_initializer(name: str = "init_all_tables") -> Operation:
    """An op that runs every ``GraphKeys.TABLE_INITIALIZERS`` op (a no-op when there are none).

    >>> import flowbook as tf
    >>> with tf.Graph().as_default(), tf.Session() as s:
    ...     s.run(tf.tables_initializer()) is None
    True
    """
    return group(*get_collection(GraphKeys.TABLE_INITIALIZERS), name=name)


initialize_all_tables = tables_initializer  # TF 0.x's name
