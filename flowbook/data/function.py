"""A dataset's function (``map``, ``filter``, ``flat_map``...) traced into a graph of flowbook ops.

``Function(fn, spec, name)`` calls ``fn`` once, at build time, inside a graph
of its own (the outer graph's seed carried over, so random ops in ``fn`` get
their seeds by the usual rules) with one placeholder per component of the
element (a tuple element is passed as positional arguments, as in TF).  What
``fn`` returns is kept as ``result``; ``compile(outputs)`` lays out the plan
that computes those tensors from the placeholders, and ``Runner`` runs it on
flowbook's executor (``flowbook.runtime.executor.execute``), once per element:
never a Python callback over numpy.

**Batches.**  Where it is provably the same, a runner maps a whole chunk of
elements in one run: when every op fed by the element is element-wise (the
``UNARY``/``BINARY`` tables, ``Cast``, ``Identity``), every element-derived
input of such an op has the op's output shape, fully known, every other input
is a scalar, and every output is element-derived.  Then each op computes row
by row, so running it on ``k`` stacked elements gives the ``k`` results
stacked.  For that run ``fn`` is traced a second time with a leading unknown
dimension on every placeholder, so no op's static shape is wrong.

Random ops in ``fn`` draw from generators made when a runner is made (each
iterator start), seeded from the ops' seeds.  A function that reads a
variable or an iterator, or a tensor of another graph, is refused.

    >>> import numpy as np
    >>> from flowbook import dtypes
    >>> from flowbook.data.structure import Spec
    >>> f = Function(lambda x: x * 2.0, Spec(0, [dtypes.float32], [(3,)]), "map")
    >>> r = f.compile().runner()
    >>> r.vectorized, r.call([np.ones((2, 3), np.float32)])[0].tolist()
    (True, [[2.0, 2.0, 2.0], [2.0, 2.0, 2.0]])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from flowbook.data.structure import Spec, flatten, is_nested, pack
from flowbook.framework import dtypes
from flowbook.framework.devices import CPU
from flowbook.framework.graph import Graph, get_default_graph, name_scope
from flowbook.framework.tensor import Operation, Tensor
from flowbook.kernels.philox import OpRandom
from flowbook.ops.array.constant_op import convert_to_tensor, placeholder
from flowbook.ops.math.elementwise import BINARY, UNARY
from flowbook.runtime.codegen.compile import RunPath
from flowbook.runtime.executor import execute
from flowbook.runtime.plan import Plan, build_plan

# op types that compute each output element from the same-index input elements
ELEMENTWISE = frozenset({r.op_type for r in (*UNARY, *BINARY)} | {"Cast", "Identity", "AddV2"})


def call_with_element(fn: Callable[..., Any], element: Any) -> Any:
    """``fn(*element)`` for a plain tuple element, else ``fn(element)`` (TF's convention)."""
    if isinstance(element, tuple) and not hasattr(element, "_fields"):
        return fn(*element)
    return fn(element)


class Function:
    """``fn`` traced once over placeholders of ``spec``'s components (module docstring)."""

    def __init__(
        self, fn: Callable[..., Any], spec: Spec, name: str, batch_dim: bool = False
    ) -> None:
        self.fn = fn
        self.spec = spec
        self.name = name
        outer = get_default_graph()
        self.graph = Graph()  # the function's own graph
        self.graph.seed = outer.seed
        with self.graph.as_default(), name_scope(name):
            self.inputs = [
                placeholder(t, None if s is None else ((None, *s) if batch_dim else s))
                for t, s in zip(spec.types, spec.shapes)
            ]  # one placeholder per component of the element
            try:
                self.result = call_with_element(fn, pack(spec.template, list(self.inputs)))
            except ValueError as e:
                if "same graph" not in str(e):
                    raise
                raise ValueError(
                    f"{name}: {e} A dataset function runs in a graph of its own: it can use "
                    "its arguments and constants, not tensors of the outer graph (give such "
                    "values to the dataset instead, e.g. zip it with from_tensors(value))"
                ) from None
            self.outputs: list[Tensor] = []
            self.template: Any = 0

    def as_element(self) -> Spec:
        """``result`` converted to tensors as an element (a map's output); sets ``outputs``."""
        result = self.result
        if isinstance(result, list):
            result = tuple(result)  # TF1's map: a returned list is a tuple of components
        with self.graph.as_default(), name_scope(self.name):
            flat = [_tensor(self, c) for c in flatten(result)]
        self.outputs = flat
        self.template = pack(result, [0] * len(flat)) if is_nested(result) else 0
        return Spec(self.template, [t.dtype for t in flat], [t._shape for t in flat])

    def compile(self, outputs: list[Tensor] | None = None) -> Compiled:
        """The plan computing ``outputs`` (default: ``as_element()``'s) from the placeholders."""
        if outputs is None:
            if not self.outputs:
                self.as_element()
            outputs = self.outputs
        for t in outputs:
            if t.op.graph is not self.graph:
                raise ValueError(
                    f"{self.name}: the function returned {t.name}, a tensor of another graph; "
                    "a dataset function can use only its arguments and constants"
                )
        return Compiled(self, list(outputs))


def _tensor(f: Function, value: Any) -> Tensor:
    t = value if isinstance(value, Tensor) else convert_to_tensor(value)
    if t.op.graph is not f.graph:
        raise ValueError(
            f"{f.name}: {t.name} is a tensor of the outer graph; a dataset function can use "
            "only its arguments and constants (feed the value into the dataset instead)"
        )
    return t


class Compiled:
    """A traced function's outputs, the plan's ops checked once; ``runner()`` per iterator start."""

    def __init__(self, function: Function, outputs: list[Tensor]) -> None:
        self.function = function
        self.outputs = outputs
        ops = _ops_between(function.inputs, outputs)
        for op in ops:
            if op._opdef.resource not in (None, "rng"):
                raise ValueError(
                    f"{op.describe()}: a dataset function cannot use a {op._opdef.resource}"
                )
        position = {id(t): k for k, t in enumerate(function.outputs)}
        self._positions = [position.get(id(t), -1) for t in outputs]  # in as_element()'s list
        self.vectorizable = min(self._positions, default=0) >= 0 and _row_by_row(
            function.inputs, outputs, ops
        )
        self._batched: Compiled | None = None  # the twin traced with a batch dimension

    def runner(self) -> Runner:
        """A runner with fresh random generators (one per iterator start)."""
        if self.vectorizable and self._batched is None:
            f = self.function
            twin = Function(f.fn, f.spec, f.name, batch_dim=True)
            twin.as_element()
            self._batched = Compiled(twin, [twin.outputs[k] for k in self._positions])
        return Runner(self, self._batched if self.vectorizable else None)


def _bind(op: Operation) -> Any:
    attrs = op.attrs
    if op._opdef.resource == "rng":
        attrs = {**attrs, "rng": OpRandom.of(attrs, CPU)}
    return op._opdef.bound_kernel(np, attrs)


class Runner:
    """Runs a compiled function on numpy values: per element, or per chunk where vectorized."""

    def __init__(self, compiled: Compiled, batched: Compiled | None) -> None:
        self.vectorized = batched is not None
        source = batched if batched is not None else compiled
        f = source.function
        self._plan: Plan = build_plan(f.graph, source.outputs, (), f.inputs, _bind, lambda op: CPU)
        self._path = RunPath(self._plan)

    def call(self, values: list[Any]) -> list[Any]:
        """The outputs for one element's (or, vectorized, one chunk's) component values."""
        return execute(self._plan, self._path, values)


def _ops_between(inputs: list[Tensor], outputs: list[Tensor]) -> list[Operation]:
    """The ops computing ``outputs`` with ``inputs`` fed (topological order)."""
    fed = set(inputs)
    seen: dict[Operation, None] = {}
    stack = [t.op for t in outputs if t not in fed]
    while stack:
        op = stack.pop()
        if op in seen:
            continue
        seen[op] = None
        stack.extend(t.op for t in op.inputs if t not in fed)
        stack.extend(op.control_inputs)
    return list(seen)


def _row_by_row(inputs: list[Tensor], outputs: list[Tensor], ops: list[Operation]) -> bool:
    """Whether the function computes each element's row alone (the module docstring's rule)."""
    if any(t._shape is None or None in t._shape for t in inputs):
        return False
    derived = set(inputs)  # tensors that carry the element
    pending = list(ops)
    changed = True
    while changed:  # propagate "derived" to a fixed point (ops come in no set order)
        changed = False
        for op in pending:
            if any(t in derived for t in op.inputs) and not all(o in derived for o in op.outputs):
                derived.update(op.outputs)
                changed = True
    for op in ops:
        if not any(t in derived for t in op.inputs):
            if op._opdef.stateful:
                return False
            continue  # a constant of the function
        if op.type not in ELEMENTWISE or op.control_inputs:
            return False
        for out in op.outputs:
            shape = out._shape
            if shape is None or None in shape:
                return False
            for t in op.inputs:
                if t in derived and t._shape != shape:
                    return False
                if t not in derived and t._shape != ():
                    return False
    return all(t in derived for t in outputs) and all(t.dtype is not dtypes.string for t in outputs)
