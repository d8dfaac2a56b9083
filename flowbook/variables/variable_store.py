"""The variables ``tf.get_variable`` made, per graph, and how it makes or finds one.

State, one :class:`VariableStore` per graph (weakly keyed, so a dropped graph
takes its store with it):

- ``vars``: full name (``model/l1/w``) -> Variable, every variable made by
  ``get_variable`` in that graph.  A variable whose op a re-run notebook cell
  removed no longer counts (the re-run makes it again instead of failing).
- ``scopes`` (per thread, as TF keeps it): the current ``VariableScope`` and
  the counts of opened variable-scope names that ``default_name`` uniquifies
  with (``dense``, ``dense_1``...); :mod:`flowbook.variables.variable_scope` owns them.

:meth:`VariableStore.get` is TensorFlow's ``_true_getter``: with ``reuse``
False it refuses a name already taken (naming where the first was made), with
True it refuses a name not yet taken, with ``AUTO_REUSE`` it makes or finds.
A new variable is built at the top of the name scopes (its ops are named by
the variable scope only), its initial value under ``<name>/Initializer/`` and
its regularization loss under ``<name>/Regularizer/``, added to
``GraphKeys.REGULARIZATION_LOSSES``.
When another op (a plain ``tf.Variable``, a constant) holds the name
already, the new variable's ops are uniquified (``scalar_1``) as in TF1, and
the store still knows it by the name asked for, so asking again without
reuse is the usual ValueError.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default() as g:
    ...     v = store_for(g).get("w", [2, 3], tf.float32)
    ...     v.name, v.initial_value.op.name
    ('w:0', 'w/Initializer/random_uniform')
"""

from __future__ import annotations

import inspect
import threading
import weakref
from typing import Any

import numpy as np

from flowbook.framework import dtypes
from flowbook.framework.graph import Graph, GraphKeys, get_default_graph
from flowbook.framework.tensor import Tensor
from flowbook.framework.tensor_shape import as_shape, fmt
from flowbook.variables import initializers
from flowbook.variables.variables import Variable


class ReuseMode:
    """The type of ``tf.AUTO_REUSE``: make a variable if it does not exist, else return it."""

    def __repr__(self) -> str:
        return "_ReuseMode.AUTO_REUSE"


AUTO_REUSE = ReuseMode()


class ScopeState(threading.local):
    """One thread's variable scopes in one graph (``flowbook.variables.variable_scope`` fills it)."""

    def __init__(self) -> None:
        self.current: Any = None  # the innermost VariableScope; None until first asked for
        self.counts: dict[str, int] = {}  # variable-scope name -> times opened (default_name)


class VariableStore:
    """The variables ``get_variable`` made in one graph, by full name."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.vars: dict[str, Variable] = {}  # full name -> variable (see the module docstring)
        self.scopes = ScopeState()  # per thread: current variable scope and the name counts

    def existing(self, name: str) -> Variable | None:
        """The variable called ``name``, unless a re-run cell has removed it since."""
        v = self.vars.get(name)
        if v is not None and self.graph._ops.get(v.op.name) is not v.op:
            del self.vars[name]
            return None
        return v

    def get(
        self,
        name: str,
        shape: Any = None,
        dtype: Any = dtypes.float32,
        initializer: Any = None,
        regularizer: Any = None,
        reuse: Any = None,
        trainable: bool | None = None,
        collections: list[str] | None = None,
        validate_shape: bool = True,
        constraint: Any = None,
        **_: Any,
    ) -> Variable:
        """Find or make the variable ``name`` (TF's ``_true_getter``); see the module docstring."""
        if constraint is not None:
            raise NotImplementedError(f"Variable {name}: constraints are not supported yet")
        from_value = initializer is not None and not callable(initializer)
        if shape is not None and from_value:
            raise ValueError(
                f"Variable {name}: If initializer is a constant, do not specify shape."
            )
        dt = dtypes.as_dtype(dtype if dtype is not None else dtypes.float32)
        dims = as_shape(shape) if shape is not None else None
        found = self.existing(name)
        if found is not None:
            return _share(found, name, dims, dtype, reuse)
        if reuse is True:
            raise ValueError(
                f"Variable {name} does not exist, or was not created with tf.get_variable(). "
                "Did you mean to set reuse=tf.AUTO_REUSE in VarScope?"
            )
        if initializer is None:
            initializer = _default_initializer(name, dt)
        init_value, var_dtype = _initial_value(name, initializer, from_value, dims, dt)
        graph = self.graph
        with graph.name_scope(None):
            v = Variable(
                init_value,
                trainable=True if trainable is None else trainable,
                collections=collections,
                validate_shape=validate_shape,
                name=name,
                dtype=var_dtype,
            )
        self.vars[name] = v
        if regularizer is not None:
            _regularize(graph, name, v, regularizer)
        return v


def _share(found: Variable, name: str, dims: Any, dtype: Any, reuse: Any) -> Variable:
    """``found`` when reuse allows it and shape and dtype agree; TF's ValueError otherwise."""
    if not reuse:
        raise ValueError(
            f"Variable {name} already exists, disallowed. Did you mean to set reuse=True or "
            f"reuse=tf.AUTO_REUSE in VarScope? Originally defined at:\n\n"
            f"  {found.op.site.describe()}: {found.op.site.source_line()}"
        )
    have = found.get_shape()
    if dims is not None and not have.is_compatible_with(dims):
        raise ValueError(
            f"Trying to share variable {name}, but specified shape {fmt(dims)} and found shape "
            f"{fmt(found.op.outputs[0]._shape)}."
        )
    if dtype is not None and dtypes.as_dtype(dtype) is not found.dtype:
        raise ValueError(
            f"Trying to share variable {name}, but specified dtype {dtypes.as_dtype(dtype).name} "
            f"and found dtype {found.dtype.name}."
        )
    return found


def _default_initializer(name: str, dtype: dtypes.DType) -> Any:
    """TF's: Glorot uniform for floats, zeros for integers, bools and strings."""
    if dtype.is_floating:
        return initializers.GlorotUniform()
    if dtype.is_integer or dtype is dtypes.bool or dtype is dtypes.string:
        return initializers.Zeros()
    raise ValueError(f"An initializer for variable {name} of {dtype.name} is required")


def _initial_value(
    name: str, initializer: Any, from_value: bool, dims: Any, dtype: dtypes.DType
) -> tuple[Any, Any]:
    """(the Variable's initial value or a function building it, the dtype to give Variable)."""
    if from_value:
        return initializer, None
    if isinstance(initializer, type):
        initializer = initializer()
    if dims is not None and None not in dims:

        def build() -> Tensor:
            with initializer_scope():
                return initializer(list(dims), dtype=dtype, partition_info=None)

        return build, dtype
    if _takes_no_arguments(initializer):
        return initializer, None
    raise ValueError(
        f"Shape of a new variable ({name}) must be fully defined, but instead was {fmt(dims)}."
    )


def initializer_scope() -> Any:
    """The ``Initializer`` name scope (inside the variable's own scope), as TF names it."""
    return get_default_graph().name_scope("Initializer")


def _takes_no_arguments(fn: Any) -> bool:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return all(
        p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params
    )


def _regularize(graph: Graph, name: str, v: Variable, regularizer: Any) -> None:
    top, own = graph.name_scope(None), graph.name_scope(f"{name}/Regularizer/")
    with top, own, graph.control_dependencies(None):
        loss = regularizer(v)
    if loss is not None:
        graph.add_to_collection(GraphKeys.REGULARIZATION_LOSSES, loss)


_STORES: weakref.WeakKeyDictionary[Graph, VariableStore] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def store_for(graph: Graph) -> VariableStore:
    """The graph's variable store, made on first use."""
    store = _STORES.get(graph)
    if store is None:
        with _LOCK:
            store = _STORES.setdefault(graph, VariableStore(graph))
    return store


def value_dtype(value: Any) -> dtypes.DType:
    """The dtype a constant initializer value converts to (without building an op)."""
    if isinstance(value, Tensor) or hasattr(value, "_as_tensor"):
        return value.dtype
    arr = np.asarray(value)
    if arr.dtype == np.float64 and not isinstance(value, np.ndarray):
        return dtypes.float32
    if arr.dtype == np.int64 and not isinstance(value, np.ndarray):
        return dtypes.int32
    return dtypes.as_dtype(arr.dtype)
