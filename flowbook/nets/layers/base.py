"""``tf.layers.Layer``: a callable that owns variables made through variable scopes.

A layer's life, as in TF1:

- **construction** stores the settings; given a ``name`` (the functional
  forms pass it as ``_scope`` too), the variable scope of that name is
  opened once, here, and kept;
- **first call**: without a name, the scope is opened with
  ``default_name=<snake_case class name>``, so layers are ``dense``,
  ``dense_1``...  Then ``build(input_shape)`` makes the variables with
  ``get_variable`` inside that scope (``dense/kernel``), and ``call`` builds
  the ops inside the scope's *first* name scope (``dense/MatMul``);
- **later calls** re-enter the scope with ``reuse=True``: no new variables,
  the ops land in the same name scope (``dense/MatMul_1``).

``reuse=True`` on a new layer with the name of an old one shares the old
one's variables.  Regularization losses go to ``REGULARIZATION_LOSSES``
(through ``get_variable``), and ``add_update`` ops (batch norm's moving
averages) to ``UPDATE_OPS``.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     layer = tf.layers.Dense(3)
    ...     y1 = layer(tf.zeros([2, 4])); y2 = layer(tf.zeros([2, 4]))
    ...     [v.name for v in layer.variables], y2.name
    (['dense/kernel:0', 'dense/bias:0'], 'dense/BiasAdd_1:0')
"""

from __future__ import annotations

import re
from typing import Any

from flowbook.framework import dtypes
from flowbook.framework.graph import GraphKeys, get_default_graph
from flowbook.framework.tensor import Tensor
from flowbook.ops._builder import tensor
from flowbook.ops.state import state_ops
from flowbook.variables.variable_scope import get_variable, variable_scope
from flowbook.variables.variables import Variable


def snake_case(name: str) -> str:
    """``BatchNormalization`` -> ``batch_normalization``, ``Conv2D`` -> ``conv2d``.

    >>> snake_case("MaxPooling2D"), snake_case("Conv2DTranspose")
    ('max_pooling2d', 'conv2d_transpose')
    """
    s = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", s).lower()


def pair(value: Any, n: int, what: str) -> tuple[int, ...]:
    """An int or a tuple of ``n`` ints as a tuple (``kernel_size=3`` -> ``(3, 3)``)."""
    if isinstance(value, int):
        return (value,) * n
    out = tuple(int(v) for v in value)
    if len(out) != n:
        raise ValueError(f"The `{what}` argument must be a tuple of {n} integers, got {value!r}")
    return out


def padding_of(padding: str) -> str:
    """``'valid'``/``'same'`` (any case) as TF's op attr."""
    p = str(padding).upper()
    if p not in ("VALID", "SAME"):
        raise ValueError(f"The `padding` argument must be one of 'valid', 'same', got {padding!r}")
    return p


def channels_last(data_format: str, layer: str) -> None:
    if data_format != "channels_last":
        raise NotImplementedError(f"{layer}: only data_format='channels_last' is supported yet")


class Layer:
    """Base class of the layers: settings, variables, scope, losses and updates."""

    def __init__(
        self,
        trainable: bool = True,
        name: str | None = None,
        dtype: Any = None,
        activity_regularizer: Any = None,
        _scope: Any = None,
        _reuse: Any = None,
        **kwargs: Any,
    ) -> None:
        if kwargs:
            raise TypeError(f"{type(self).__name__}: unexpected arguments {sorted(kwargs)}")
        self.trainable = trainable
        self.built = False
        self.dtype = dtypes.as_dtype(dtype) if dtype is not None else None
        self.activity_regularizer = activity_regularizer
        self._base_name = name or snake_case(type(self).__name__)
        self._given_name = name
        self._reuse = _reuse
        self._scope: Any = None  # the VariableScope, once opened
        self._trainable_weights: list[Variable] = []
        self._non_trainable_weights: list[Variable] = []
        self._updates: list[Any] = []
        self._losses: list[Tensor] = []
        if _scope is not None:
            with variable_scope(_scope) as captured:
                self._scope = captured

    # ------------------------------------------------------------ properties
    @property
    def name(self) -> str:
        if self._given_name is None and self._scope is not None:
            return self._scope.name.split("/")[-1]
        return self._base_name

    @property
    def scope_name(self) -> str:
        if self._scope is None:
            raise ValueError(
                f"No name available for layer scope because the layer "
                f"{self.name!r} has not been used yet."
            )
        return self._scope.name

    @property
    def trainable_weights(self) -> list[Variable]:
        return list(self._trainable_weights) if self.trainable else []

    @property
    def non_trainable_weights(self) -> list[Variable]:
        extra = [] if self.trainable else self._trainable_weights
        return list(extra) + list(self._non_trainable_weights)

    @property
    def weights(self) -> list[Variable]:
        return self._trainable_weights + self._non_trainable_weights

    trainable_variables = trainable_weights
    non_trainable_variables = non_trainable_weights
    variables = weights

    @property
    def updates(self) -> list[Any]:
        return list(self._updates)

    @property
    def losses(self) -> list[Tensor]:
        return list(self._losses)

    # --------------------------------------------------------------- building
    def build(self, input_shape: Any) -> None:
        """Make the layer's variables, knowing its input's shape (a list, dims may be None)."""
        self.built = True

    def call(self, inputs: Tensor, **kwargs: Any) -> Any:
        return inputs

    def add_weight(
        self,
        name: str,
        shape: Any,
        dtype: Any = None,
        initializer: Any = None,
        regularizer: Any = None,
        trainable: bool = True,
        constraint: Any = None,
    ) -> Variable:
        """A variable of this layer: ``get_variable`` inside its scope (shared when reusing)."""
        v = get_variable(
            name,
            shape,
            dtype or self.dtype,
            initializer,
            regularizer,
            trainable=trainable and self.trainable,
            constraint=constraint,
        )
        if trainable and self.trainable:
            self._trainable_weights.append(v)
        else:
            self._non_trainable_weights.append(v)
        return v

    def add_update(self, updates: Any, inputs: Any = None) -> None:
        """Keep ``updates`` (ops) and add them to ``GraphKeys.UPDATE_OPS``."""
        updates = list(updates) if isinstance(updates, list | tuple) else [updates]
        graph = get_default_graph()
        for u in updates:
            self._updates.append(u)
            graph.add_to_collection(GraphKeys.UPDATE_OPS, u)

    def add_loss(self, losses: Any, inputs: Any = None) -> None:
        """Keep ``losses`` and add them to ``GraphKeys.REGULARIZATION_LOSSES``, as tf.layers does."""
        losses = list(losses) if isinstance(losses, list | tuple) else [losses]
        for loss in losses:
            self._losses.append(loss)
            get_default_graph().add_to_collection(GraphKeys.REGULARIZATION_LOSSES, loss)

    # ---------------------------------------------------------------- calling
    def _set_scope(self) -> None:
        if self._scope is not None:
            return
        if self._reuse:
            with variable_scope(self._base_name) as captured:
                self._scope = captured
        else:
            with variable_scope(None, default_name=self._base_name) as captured:
                self._scope = captured

    def __call__(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        """Build on the first call, then compute; see the module docstring."""
        graph = get_default_graph()
        self._set_scope()
        reuse = True if self.built else self._reuse
        scope_cm = variable_scope(self._scope, reuse=reuse, auxiliary_name_scope=False)
        with scope_cm as scope, graph.name_scope(scope.original_name_scope or None):
            inputs = _as_tensor(inputs)
            if getattr(self, "input_spec", None) is not None and isinstance(inputs, Tensor):
                self.input_spec.check(inputs, self.name)
            if not self.built:
                if self.dtype is None and isinstance(inputs, Tensor):
                    self.dtype = inputs.dtype
                shape = inputs.get_shape() if isinstance(inputs, Tensor) else None
                self.build(shape.as_list() if shape is not None and shape.ndims else None)
                self.built = True
            outputs = self.call(inputs, *args, **kwargs)
            if self.activity_regularizer is not None:
                with graph.name_scope("ActivityRegularizer"):
                    self.add_loss(self.activity_regularizer(outputs))
        return outputs

    apply = __call__

    def __repr__(self) -> str:
        return f"<flowbook.nets.layers.{type(self).__name__} '{self.name}'>"


class InputSpec:
    """What a layer accepts: ``dtype``, ``shape``, ``ndim``/``min_ndim``/``max_ndim``, ``axes``.

    A layer with ``input_spec`` set checks every input against it when called,
    as TF1's layers do, and raises ``ValueError`` naming the layer.

    >>> import flowbook as tf
    >>> spec = InputSpec(ndim=2, axes={-1: 3})
    >>> with tf.Graph().as_default():
    ...     spec.check(tf.zeros([4, 2]), "dense")
    Traceback (most recent call last):
    ...
    ValueError: Input 0 of layer dense is incompatible with the layer: expected axis -1 of input shape to have value 3 but received input with shape [4, 2]
    """

    def __init__(
        self,
        dtype: Any = None,
        shape: Any = None,
        ndim: int | None = None,
        max_ndim: int | None = None,
        min_ndim: int | None = None,
        axes: dict[int, int] | None = None,
    ) -> None:
        self.dtype, self.shape = dtype, None if shape is None else list(shape)
        self.ndim = len(self.shape) if self.shape is not None else ndim
        self.max_ndim, self.min_ndim, self.axes = max_ndim, min_ndim, dict(axes or {})

    def __repr__(self) -> str:
        parts = [f"{k}={v}" for k, v in vars(self).items() if v not in (None, {})]
        return f"InputSpec({', '.join(parts)})"

    def check(self, x: Tensor, layer: str) -> None:
        """Raise ``ValueError`` naming ``layer`` unless ``x`` fits this spec."""
        shape = x.get_shape().as_list() if x.get_shape().ndims is not None else None
        where = f"Input 0 of layer {layer} is incompatible with the layer"
        if self.dtype is not None and x.dtype != self.dtype:
            raise ValueError(f"{where}: expected dtype {self.dtype}, found {x.dtype}")
        if shape is None:
            return
        rank = len(shape)
        bounds = (
            (self.ndim, rank != self.ndim, "ndim"),
            (self.min_ndim, rank < (self.min_ndim or 0), "min_ndim"),
            (self.max_ndim, self.max_ndim is not None and rank > self.max_ndim, "max_ndim"),
        )
        for value, bad, what in bounds:
            if value is not None and bad:
                raise ValueError(f"{where}: expected {what}={value}, found ndim={rank}")
        for axis, size in self.axes.items():
            got = shape[axis] if -rank <= axis < rank else None
            if got is not None and got != size:
                raise ValueError(
                    f"{where}: expected axis {axis} of input shape to have value {size} but "
                    f"received input with shape {shape}"
                )
        if self.shape is not None:
            for want, got in zip(self.shape, shape):
                if want is not None and got is not None and want != got:
                    raise ValueError(f"{where}: expected shape={self.shape}, found shape={shape}")


def _as_tensor(inputs: Any) -> Any:
    if isinstance(inputs, list | tuple):
        return type(inputs)(_as_tensor(x) for x in inputs)
    return tensor(inputs)


def assign_moving_average(variable: Variable, value: Tensor, decay: Any) -> Tensor:
    """``variable -= (variable - value) * decay``, named ``AssignMovingAvg`` as in TF."""
    graph = get_default_graph()
    with graph.name_scope("AssignMovingAvg") as scope:
        delta = (variable.value() - value) * decay
        return state_ops.assign_sub(variable, delta, name=scope)
