"""Variable scopes: TF1's ``tf.variable_scope``, ``tf.get_variable`` and ``tf.AUTO_REUSE``.

A :class:`VariableScope` is a prefix for variable names plus defaults that
inner scopes inherit: ``reuse``, ``initializer``, ``regularizer``, ``dtype``
and ``custom_getter`` (an inner getter wraps the outer one).  Entering
``variable_scope(name)`` does two things, as in TensorFlow:

- it opens the variable scope ``outer/name`` (variables are ``outer/name/w``
  however many times it is entered: that is what makes sharing work);
- it opens a *name scope* ``name`` for the ops built inside, uniquified like
  any name scope, so entering ``model`` a second time puts ops in
  ``model_1/`` while its variables stay ``model/...``.

Entering a scope object (``with variable_scope(scope):``) gives its exact
variable-scope name back, and a new name scope from its last component.
``default_name`` (used when ``name_or_scope`` is None) is uniquified among the
variable scopes opened in the enclosing one: ``dense``, ``dense_1``; those
counts are forgotten when the enclosing scope closes.  The current scope and
the counts are kept per graph and per thread in
:class:`flowbook.variables.variable_store.VariableStore`.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     with tf.variable_scope("model"):
    ...         w = tf.get_variable("w", [2])
    ...     with tf.variable_scope("model", reuse=True):
    ...         w2 = tf.get_variable("w"); y = w2 * 2.0
    ...     w.name, w2 is w, y.name
    ('model/w:0', True, 'model_1/mul:0')
"""

from __future__ import annotations

import functools
from typing import Any

from flowbook.framework import dtypes
from flowbook.framework.graph import Graph, get_default_graph
from flowbook.framework.tensor import Tensor
from flowbook.variables.variable_store import AUTO_REUSE, VariableStore, store_for, value_dtype
from flowbook.variables.variables import Variable

__all__ = [
    "AUTO_REUSE",
    "VariableScope",
    "get_local_variable",
    "get_variable",
    "get_variable_scope",
    "model_variables",
    "no_regularizer",
    "variable_scope",
]


class VariableScope:
    """A variable-name prefix and the defaults ``get_variable`` uses inside it.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     with tf.variable_scope("a", initializer=tf.zeros_initializer()) as scope:
    ...         scope.name, scope.original_name_scope, type(scope.initializer).__name__
    ('a', 'a/', 'Zeros')
    """

    def __init__(
        self,
        reuse: Any,
        name: str = "",
        initializer: Any = None,
        regularizer: Any = None,
        caching_device: Any = None,
        partitioner: Any = None,
        custom_getter: Any = None,
        name_scope: str = "",
        dtype: Any = dtypes.float32,
        use_resource: Any = None,
        constraint: Any = None,
    ) -> None:
        self._name = name  # full variable-scope name, "" at the root
        self._reuse = reuse  # None/False, True or AUTO_REUSE
        self._initializer = initializer
        self._regularizer = regularizer
        self._caching_device = caching_device
        self._partitioner = partitioner
        self._custom_getter = custom_getter
        self._name_scope = name_scope  # the name scope opened with it first, "model/"
        self._dtype = dtypes.as_dtype(dtype)
        self._use_resource = use_resource
        self._constraint = constraint

    name = property(lambda self: self._name)
    original_name_scope = property(lambda self: self._name_scope)
    reuse = property(lambda self: self._reuse)
    initializer = property(lambda self: self._initializer)
    regularizer = property(lambda self: self._regularizer)
    dtype = property(lambda self: self._dtype)
    custom_getter = property(lambda self: self._custom_getter)
    caching_device = property(lambda self: self._caching_device)
    partitioner = property(lambda self: self._partitioner)
    use_resource = property(lambda self: self._use_resource)
    constraint = property(lambda self: self._constraint)

    def reuse_variables(self) -> None:
        """Reuse variables in this scope from now on (``get_variable`` finds, never makes)."""
        self._reuse = True

    def set_initializer(self, initializer: Any) -> None:
        self._initializer = initializer

    def set_regularizer(self, regularizer: Any) -> None:
        self._regularizer = regularizer

    def set_dtype(self, dtype: Any) -> None:
        self._dtype = dtypes.as_dtype(dtype)

    def set_custom_getter(self, custom_getter: Any) -> None:
        self._custom_getter = custom_getter

    def set_caching_device(self, caching_device: Any) -> None:
        self._caching_device = caching_device

    def set_partitioner(self, partitioner: Any) -> None:
        self._partitioner = partitioner

    def set_use_resource(self, use_resource: Any) -> None:
        self._use_resource = use_resource

    def get_variable(
        self,
        var_store: VariableStore,
        name: str,
        shape: Any = None,
        dtype: Any = None,
        initializer: Any = None,
        regularizer: Any = None,
        reuse: Any = None,
        trainable: bool | None = None,
        collections: list[str] | None = None,
        caching_device: Any = None,
        partitioner: Any = None,
        validate_shape: bool = True,
        use_resource: Any = None,
        custom_getter: Any = None,
        constraint: Any = None,
        **kwargs: Any,
    ) -> Variable:
        """``name`` in this scope, made or found by the scope's rules and defaults."""
        if partitioner is not None or self._partitioner is not None:
            raise NotImplementedError(f"Variable {name}: partitioned variables are not supported")
        regularizer = regularizer if regularizer is not None else self._regularizer
        custom_getter = custom_getter if custom_getter is not None else self._custom_getter
        reuse = reuse if reuse is not None else self._reuse
        full_name = f"{self._name}/{name}" if self._name else name
        if dtype is not None and initializer is not None and not callable(initializer):
            init_dtype = value_dtype(initializer)
            if init_dtype is not dtypes.as_dtype(dtype):
                raise ValueError(
                    f"Variable {full_name}: Initializer type '{init_dtype.name}' and explicit "
                    f"dtype '{dtypes.as_dtype(dtype).name}' don't match."
                )
        args: dict[str, Any] = {
            "name": full_name,
            "shape": shape,
            "dtype": dtype if dtype is not None else self._dtype,
            "initializer": initializer if initializer is not None else self._initializer,
            "regularizer": regularizer,
            "reuse": reuse,
            "trainable": trainable,
            "collections": collections,
            "caching_device": caching_device,
            "partitioner": partitioner,
            "validate_shape": validate_shape,
            "use_resource": use_resource,
            "constraint": constraint if constraint is not None else self._constraint,
            **kwargs,
        }
        if custom_getter is not None:
            if not callable(custom_getter):
                raise ValueError(f"Passed a custom_getter which is not callable: {custom_getter}")
            return custom_getter(getter=var_store.get, **args)
        return var_store.get(**args)

    def global_variables(self) -> list[Variable]:
        """The global variables whose names start with this scope's."""
        return get_default_graph().get_collection("variables", self._prefix())

    def trainable_variables(self) -> list[Variable]:
        return get_default_graph().get_collection("trainable_variables", self._prefix())

    def local_variables(self) -> list[Variable]:
        return get_default_graph().get_collection("local_variables", self._prefix())

    def _prefix(self) -> str | None:
        return f"{self._name}/" if self._name else None

    def __repr__(self) -> str:
        return f"<flowbook.VariableScope '{self._name}' reuse={self._reuse!r}>"


def _store(graph: Graph | None = None) -> VariableStore:
    store = store_for(graph if graph is not None else get_default_graph())
    if store.scopes.current is None:
        store.scopes.current = VariableScope(False)
    return store


def get_variable_scope() -> VariableScope:
    """The current variable scope (the root scope, named "", at the top).

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     with tf.variable_scope("a"), tf.variable_scope("b"):
    ...         tf.get_variable_scope().name
    'a/b'
    """
    return _store().scopes.current


def _chain(custom_getter: Any, outer: Any) -> Any:
    """``custom_getter`` calling through ``outer``: the inner scope's getter runs first."""
    if outer is None:
        return custom_getter

    def wrapped(getter: Any, *args: Any, **kwargs: Any) -> Any:
        return custom_getter(functools.partial(outer, getter), *args, **kwargs)

    return wrapped


class variable_scope:  # TF's name: a class, so `as scope` gives the VariableScope
    """Open a variable scope (and a name scope): see the module docstring.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     with tf.variable_scope(None, default_name="dense") as a: pass
    ...     with tf.variable_scope(None, default_name="dense") as b: pass
    ...     a.name, b.name
    ('dense', 'dense_1')
    """

    def __init__(
        self,
        name_or_scope: str | VariableScope | None,
        default_name: str | None = None,
        values: Any = None,
        initializer: Any = None,
        regularizer: Any = None,
        caching_device: Any = None,
        partitioner: Any = None,
        custom_getter: Any = None,
        reuse: Any = None,
        dtype: Any = None,
        use_resource: Any = None,
        constraint: Any = None,
        auxiliary_name_scope: bool = True,
    ) -> None:
        if default_name is None and name_or_scope is None:
            raise TypeError("If default_name is None then name_or_scope is required")
        if name_or_scope is not None and not isinstance(name_or_scope, str | VariableScope):
            raise TypeError("VariableScope: name_or_scope must be a string or VariableScope.")
        if reuse not in (None, True, False) and reuse is not AUTO_REUSE:
            raise ValueError(f"reuse must be True, False, None or tf.AUTO_REUSE, got {reuse!r}")
        if name_or_scope is None and reuse is True:
            raise ValueError("reuse=True cannot be used without a name_or_scope")
        if custom_getter is not None and not callable(custom_getter):
            raise ValueError(f"The custom_getter must be callable, got {custom_getter!r}")
        self._name_or_scope = name_or_scope
        self._default_name = default_name
        self._reuse = reuse or None  # False means "inherit", as in TF1
        self._given = {"initializer": initializer, "regularizer": regularizer,
                       "caching_device": caching_device, "partitioner": partitioner,
                       "dtype": dtype, "use_resource": use_resource,
                       "constraint": constraint}  # fmt: skip
        self._custom_getter = custom_getter
        self._aux = auxiliary_name_scope
        self._graph = next(
            (v.graph for v in values or () if isinstance(v, Tensor | Variable)), None
        )
        self._exits: list[Any] = []  # context managers entered, innermost last

    def _enter(self, cm: Any) -> Any:
        value = cm.__enter__()
        self._exits.append(cm)
        return value

    def __enter__(self) -> VariableScope:
        try:
            return self._open()
        except BaseException:
            self._close()
            raise

    def _open(self) -> VariableScope:
        graph = self._graph if self._graph is not None else get_default_graph()
        if self._graph is not None:
            self._enter(graph.as_default())
        self._store = store = _store(graph)
        state = store.scopes
        self._old = old = state.current
        obj = self._name_or_scope
        if obj is not None:
            short = obj if isinstance(obj, str) else obj.name.split("/")[-1]
        else:
            short = self._default_name or ""
        if not self._aux:  # re-enter the current name scope
            current = graph.get_name_scope()
            name_scope = self._enter(graph.name_scope(f"{current}/" if current else None))
        elif short or graph.get_name_scope():
            name_scope = self._enter(graph.name_scope(short))
        else:
            name_scope = ""
        if isinstance(obj, VariableScope):
            new = self._from_object(obj)
        else:
            if obj is None:
                obj = _unique_name(state.counts, old.name, self._default_name or "")
            self._new_name = f"{old.name}/{obj}" if old.name else obj
            new = VariableScope(
                self._reuse or old.reuse,
                self._new_name,
                old.initializer,
                old.regularizer,
                old.caching_device,
                old.partitioner,
                old.custom_getter,
                name_scope,
                old.dtype,
                old.use_resource,
                old.constraint,
            )
            self._apply_given(new)
        state.counts[self._new_name] = state.counts.get(self._new_name, 0) + 1
        self._saved_counts = (
            dict(state.counts) if isinstance(self._name_or_scope, VariableScope) else None
        )
        state.current = new
        return new

    def _from_object(self, obj: VariableScope) -> VariableScope:
        self._new_name = obj.name
        new = VariableScope(
            self._reuse or obj.reuse,
            obj.name,
            obj.initializer,
            obj.regularizer,
            obj.caching_device,
            obj.partitioner,
            obj.custom_getter,
            obj.original_name_scope,
            obj.dtype,
            obj.use_resource,
            obj.constraint,
        )
        self._apply_given(new)
        return new

    def _apply_given(self, new: VariableScope) -> None:
        for key, value in self._given.items():
            if value is not None:
                setattr(new, f"_{key}", dtypes.as_dtype(value) if key == "dtype" else value)
        if self._custom_getter is not None:
            new._custom_getter = _chain(self._custom_getter, new.custom_getter)

    def __exit__(self, *exc: Any) -> None:
        state = self._store.scopes
        if self._saved_counts is not None:
            state.counts = self._saved_counts
        else:
            prefix = self._new_name + "/"
            for key in state.counts:
                if key.startswith(prefix):
                    state.counts[key] = 0
        state.current = self._old
        self._close()

    def _close(self) -> None:
        while self._exits:
            self._exits.pop().__exit__(None, None, None)


def _unique_name(counts: dict[str, int], outer: str, prefix: str) -> str:
    """``prefix``, or ``prefix_1``, ``prefix_2``... the first not opened in ``outer`` yet."""
    full = f"{outer}/{prefix}" if outer else prefix
    if not counts.get(full):
        return prefix
    i = 1
    while counts.get(f"{full}_{i}"):
        i += 1
    return f"{prefix}_{i}"


def get_variable(
    name: str,
    shape: Any = None,
    dtype: Any = None,
    initializer: Any = None,
    regularizer: Any = None,
    trainable: bool | None = None,
    collections: list[str] | None = None,
    caching_device: Any = None,
    partitioner: Any = None,
    validate_shape: bool = True,
    use_resource: Any = None,
    custom_getter: Any = None,
    constraint: Any = None,
    **kwargs: Any,
) -> Variable:
    """Make the variable ``<scope>/name``, or find it when the scope reuses (TF1's).

    The default initializer is Glorot uniform for floats and zeros for integers.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     tf.get_variable("b", [3], initializer=tf.zeros_initializer()).name
    'b:0'
    """
    return get_variable_scope().get_variable(
        _store(),
        name,
        shape,
        dtype,
        initializer,
        regularizer,
        None,
        trainable,
        collections,
        caching_device,
        partitioner,
        validate_shape,
        use_resource,
        custom_getter,
        constraint,
        **kwargs,
    )


def get_local_variable(name: str, shape: Any = None, dtype: Any = None, **kwargs: Any) -> Variable:
    """``get_variable`` into the LOCAL_VARIABLES collection, not trainable.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     v = tf.get_local_variable("count", [], tf.int32)
    ...     v in tf.local_variables(), v in tf.global_variables()
    (True, False)
    """
    kwargs["collections"] = [*(kwargs.get("collections") or []), "local_variables"]
    kwargs["trainable"] = False
    return get_variable(name, shape, dtype, **kwargs)


def no_regularizer(_: Any) -> None:
    """A regularizer that adds no loss: turns off a scope's regularizer for one variable."""
    return None


def model_variables(scope: str | None = None) -> list[Variable]:
    """The variables of the MODEL_VARIABLES collection (``tf.contrib.layers`` files them there).

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     tf.model_variables()
    []
    """
    return get_default_graph().get_collection("model_variables", scope)
