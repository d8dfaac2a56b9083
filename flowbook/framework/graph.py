"""The Graph: a growing set of named operations, and the scopes that build it.

State a Graph owns:

- ``_ops``: name -> Operation, in creation order.  The graph grows; edits of
  existing ops (a re-run cell's ops replaced, TF1's ``_update_input``...) go
  through ``flowbook.framework.graph_edit``, which records them in ``_edit_log``.
- ``_names_in_use``: lower-cased name -> next suffix, TensorFlow's uniquifier:
  a second ``Mul`` in ``layer1/`` is ``layer1/Mul_1``, a second scope
  ``layer1`` becomes ``layer1_1``.
- ``version``: bumped on every change (the live graph resends on it); the
  sessions' plans are checked against ``_edit_log`` only: adding ops keeps them.
- the builder scopes, per thread: name scope, control-dependency controllers,
  device stack and the cond/while context (``flowbook.ops.control_flow.cf_context``, which
  rewires a new op's inputs).  They only affect ops created inside them.

``Graph.create_op`` is the single path by which ops come to exist: it picks a
unique name, runs the op's ``infer`` from the registry (a shape or dtype error
is raised here, naming the op and the cell and line, and leaves the graph as
it was), then applies the control-dependency and device scopes.

    >>> import flowbook as fb
    >>> g = fb.Graph()
    >>> with g.as_default(), g.name_scope("layer1"):
    ...     a = fb.constant(1.0); b = fb.constant(2.0)
    >>> [op.name for op in g.get_operations()]
    ['layer1/Const', 'layer1/Const_1']
"""

from __future__ import annotations

import contextlib
import difflib
import threading
from collections.abc import Iterator
from typing import Any

from flowbook.framework import grad_overrides, graph_edit, hooks, registry
from flowbook.framework.devices import DeviceSpec
from flowbook.framework.graph_keys import GraphKeys  # noqa: F401  (re-exported: flowbook.framework.graph.GraphKeys)
from flowbook.framework.names import check_op_name, check_scope_name, pick_name
from flowbook.framework.registry import Out
from flowbook.framework.source import Site, capture
from flowbook.framework.tensor import Operation, Tensor


class _Controller:
    """One ``control_dependencies`` block: its control ops and the ops built inside."""

    __slots__ = ("control_ops", "seen")

    def __init__(self, control_ops: list[Operation] | None) -> None:
        self.control_ops = control_ops  # None clears all outer controllers
        self.seen: set[Operation] = set()  # ops created in this block (they carry the deps)


class _BuildState(threading.local):
    """Per-thread builder scopes (TF keeps these per thread too)."""

    def __init__(self) -> None:
        self.name_stack = ""  # current name scope, "" or "layer1" (no trailing slash)
        self.controllers: list[_Controller] = []  # active control_dependencies blocks
        self.devices: list[Any] = []  # device strings or functions, outermost first
        self.cf_context: Any = None  # the innermost cond/while context being built


class Graph:
    """A TensorFlow dataflow graph.

    >>> g = Graph(); g.version
    0
    """

    def __init__(self) -> None:
        self._ops: dict[str, Operation] = {}  # name -> op, in creation order
        self._names_in_use: dict[str, int] = {}  # lower-cased name -> next free suffix
        self._collections: dict[str, list[Any]] = {}  # collection key -> members
        self._next_id = 0  # creation counter, gives each op its _id
        self._version = 0  # bumped on every change, ops added or edited
        self._edit_log = graph_edit.EditLog()  # edits of existing ops, for the plan caches
        self._stale: set[Operation] = set()  # ops reading an op a re-run cell removed
        self._finalized = False  # no more ops once True
        self._lock = threading.Lock()  # guards naming and insertion across threads
        self._state = _BuildState()  # this thread's scopes
        self.seed: int | None = None  # graph-level random seed (set_random_seed)

    # ----------------------------------------------------------------- default
    @contextlib.contextmanager
    def as_default(self) -> Iterator[Graph]:
        """Make this the default graph inside the ``with`` block (per thread)."""
        stack = _default_stack()
        stack.append(self)
        try:
            yield self
        finally:
            stack.remove(self) if stack[-1] is not self else stack.pop()

    @property
    def version(self) -> int:
        """A counter bumped by every change to the graph."""
        return self._version

    finalized = property(lambda self: self._finalized)

    def finalize(self) -> None:
        """Make the graph read-only: creating an op afterwards raises RuntimeError."""
        self._finalized = True

    # -------------------------------------------------------------- building
    def create_op(
        self,
        op_type: str,
        inputs: list[Tensor] | tuple[Tensor, ...],
        attrs: dict[str, Any] | None = None,
        name: str | None = None,
        site: Site | None = None,
        control_inputs: list[Operation] | None = None,
    ) -> Operation:
        """Create an op of a registered type; the one way ops come to exist.

        Wrappers (``fb.add``, ``fb.matmul``...) convert their arguments to
        tensors and call this.  Raises ValueError/TypeError naming the op and
        its creating line when ``infer`` rejects the inputs.
        """
        if self._finalized:
            raise RuntimeError("Graph is finalized and cannot be modified.")
        opdef = registry.OPS.get(op_type) or registry.get(op_type)
        if attrs is None:
            attrs = {}
        inputs = tuple(inputs)
        for t in inputs:
            if type(t) is not Tensor and not isinstance(t, Tensor):
                raise TypeError(f"Input to {op_type} must be a Tensor, got {type(t).__name__}")
            if t.op.graph is not self:
                raise ValueError(
                    f"Tensor '{t.name}' must be from the same graph as the {op_type} op using it "
                    "(was it built before reset_default_graph() or under another Graph?)."
                )
        site = site or capture(2)
        state = self._state
        ctx = state.cf_context
        if ctx is not None:  # inside a cond branch or a loop body: outer values enter first
            if state.controllers:
                control_inputs = self._control_inputs_for(inputs, control_inputs)
            inputs, control_inputs = ctx.enter_inputs(op_type, inputs, control_inputs)
        with self._lock:
            full_name, claims = self._pick_name(name or op_type, state.name_stack)
            if name:  # default names are op types under scopes checked when opened
                check_op_name(full_name, op_type, site)
            try:
                outs = opdef.infer(*inputs, **attrs)
            except (ValueError, TypeError) as e:
                raise type(e)(f"{op_type} '{full_name}' ({site.describe()}): {e}") from None
            self._names_in_use.update(claims)  # infer passed: now take the name
            controllers, ctrl = state.controllers, list(control_inputs or ())
            if ctx is None and (controllers or control_inputs):
                ctrl = self._control_inputs_for(inputs, control_inputs)
            dev = self._device_for_new_op() if state.devices else ""
            op = Operation(self, opdef, full_name, inputs, attrs, ctrl, dev, site, self._next_id)
            op._cf_ctx = ctx
            if type(outs) is Out:
                op.outputs = (Tensor(op, 0, outs.dtype, outs.shape),)
            else:
                op.outputs = tuple(Tensor(op, i, o.dtype, o.shape) for i, o in enumerate(outs))
            if state.devices:
                self._place(op)
            for c in controllers:
                c.seen.add(op)
            self._ops[full_name] = op
            self._next_id += 1
            self._version += 1
        return op

    def _pick_name(self, name: str, stack: str) -> tuple[str, dict[str, int]]:
        return pick_name(self._names_in_use, self._ops, name, stack)  # name, the names it claims

    def unique_name(self, name: str, mark_as_used: bool = True) -> str:
        """``name`` inside the current scope, with ``_1``, ``_2``... added if taken.

        >>> g = Graph(); g.unique_name("foo"), g.unique_name("foo")
        ('foo', 'foo_1')
        """
        full, claims = self._pick_name(name, self._state.name_stack)
        if mark_as_used:
            self._names_in_use.update(claims)
        return full

    def get_name_scope(self) -> str:
        """The current name scope, without trailing slash ('' at the top)."""
        return self._state.name_stack

    @contextlib.contextmanager
    def name_scope(self, name: str | None) -> Iterator[str]:
        """Open a name scope; yields the scope string with a trailing ``/``.

        A name ending in ``/`` re-enters that exact scope; None or "" returns to
        the top.  A second scope of the same name is uniquified (``layer1_1``).
        """
        state = self._state
        old = state.name_stack
        if not name:
            new = ""
        elif check_scope_name(name, at_top=not old).endswith("/"):
            new = name[:-1]
        else:
            with self._lock:
                new = self.unique_name(name)
        state.name_stack = new
        try:
            yield f"{new}/" if new else ""
        finally:
            state.name_stack = old

    @contextlib.contextmanager
    def control_dependencies(self, control_inputs: Any) -> Iterator[None]:
        """Ops created inside run only after ``control_inputs``; None clears outer blocks."""
        if control_inputs is None:
            controller = _Controller(None)
        else:
            ops: list[Operation] = []
            for c in control_inputs:
                op = _as_operation(c)
                if op.graph is not self:
                    raise ValueError(f"Control input '{op.name}' is not an element of this graph.")
                if op not in ops:
                    ops.append(op)
            controller = _Controller(ops)
        self._state.controllers.append(controller)
        try:
            yield
        finally:
            self._state.controllers.remove(controller)

    def _control_inputs_for(
        self, inputs: tuple[Tensor, ...], explicit: list[Operation] | None
    ) -> list[Operation]:
        input_ops = {t.op for t in inputs}
        result: list[Operation] = list(explicit or ())
        active: list[_Controller] = []
        for c in self._state.controllers:
            if c.control_ops is None:
                active.clear()
            else:
                active.append(c)
        for c in active:
            if input_ops & c.seen:  # an input made inside this block already waits for it
                continue
            for op in c.control_ops:  # type: ignore[union-attr]
                if op not in input_ops and op not in result:
                    result.append(op)
        return result

    @contextlib.contextmanager
    def device(self, device_name_or_function: Any) -> Iterator[None]:
        """Ops created inside request this device (a string, or a function of the op)."""
        if isinstance(device_name_or_function, str) or device_name_or_function is None:
            DeviceSpec.from_string(device_name_or_function)  # fail now on a malformed spec
        self._state.devices.append(device_name_or_function)
        try:
            yield
        finally:
            self._state.devices.pop()

    def _device_for_new_op(self) -> str:
        spec = DeviceSpec()
        for d in self._state.devices:
            if d is None:
                spec = DeviceSpec()
            elif isinstance(d, str):
                spec = spec.merged_with(DeviceSpec.from_string(d))
        return spec.to_string()

    def _place(self, op: Operation) -> None:
        for d in self._state.devices:  # device functions see the op, as in TF
            if callable(d):
                chosen = d(op)
                if chosen:
                    merged = DeviceSpec.from_string(op.device).merged_with(
                        DeviceSpec.from_string(chosen)
                    )
                    op.device = merged.to_string()

    _remove_ops = graph_edit.remove_ops  # (ops, by=None): a re-run cell's old ops out, see there
    _changed = graph_edit.changed  # (ops, placement=False): existing ops edited, see there
    stale_ops = graph_edit.stale_ops  # () -> ops built on a removed op, until their cell re-runs

    def as_graph_def(self, from_version: int | None = None, add_shapes: bool = False) -> Any:
        """TensorFlow's GraphDef proto of this graph: ``flowbook.graph_io.graph_def`` writes it."""
        return hooks.as_graph_def(self, from_version, add_shapes)

    def gradient_override_map(self, op_type_map: dict[str, str]) -> Any:
        """Ops built inside take the mapped gradients; see :mod:`flowbook.framework.grad_overrides`."""
        return grad_overrides.override_map(self, op_type_map)

    # --------------------------------------------------------------- lookups
    def get_operations(self) -> list[Operation]:
        """All operations, in creation order."""
        return list(self._ops.values())

    def get_operation_by_name(self, name: str) -> Operation:
        """The op called ``name``; a KeyError naming it and the nearest names otherwise."""
        if not isinstance(name, str):
            raise TypeError(f"Operation names are strings, got {type(name).__name__}")
        found = self._element_by_name(name, allow_tensor=False, allow_operation=True)
        if isinstance(found, Exception):
            raise found from None
        return found  # type: ignore[return-value]

    def get_tensor_by_name(self, name: str) -> Tensor:
        """The tensor called ``"op:index"``; KeyError or ValueError naming it otherwise.

        A missing name's KeyError offers the nearest op names:

        >>> g = Graph(); _ = g.create_op("NoOp", [], name="y")
        >>> try:
        ...     g.get_tensor_by_name("y3:0")
        ... except KeyError as e:
        ...     print(e.args[0].split(". ")[-1])
        Did you mean: 'y'?
        """
        if not isinstance(name, str):
            raise TypeError(f"Tensor names are strings, got {type(name).__name__}")
        found = self._element_by_name(name, allow_tensor=True, allow_operation=False)
        if isinstance(found, Exception):
            raise found from None
        return found  # type: ignore[return-value]

    def as_graph_element(
        self, obj: Any, allow_tensor: bool = True, allow_operation: bool = True
    ) -> Tensor | Operation:
        """Resolve a Tensor, Operation, Variable or name to an element of this graph."""
        if hasattr(obj, "_as_graph_element"):
            obj = obj._as_graph_element()
        if isinstance(obj, Tensor | Operation):
            graph = obj.graph
            if graph is not self:
                raise ValueError(f"{obj.name!r} is not an element of this graph.")
            if isinstance(obj, Tensor) and not allow_tensor:
                raise TypeError(f"Can not convert a Tensor into an Operation: '{obj.name}'")
            if isinstance(obj, Operation) and not allow_operation:
                raise TypeError(f"Can not convert an Operation into a Tensor: '{obj.name}'")
            return obj
        if not isinstance(obj, str):
            kinds = " or ".join(
                k for k, ok in (("Tensor", allow_tensor), ("Operation", allow_operation)) if ok
            )
            raise TypeError(f"Can not convert a {type(obj).__name__} into a {kinds}.")
        found = self._element_by_name(obj, allow_tensor, allow_operation)
        if isinstance(found, Exception):
            raise found from None
        return found

    def _element_by_name(
        self, name: str, allow_tensor: bool, allow_operation: bool
    ) -> Tensor | Operation | Exception:
        """The element called ``name``, or the error to raise (by the public lookup itself, so
        the user's traceback ends there, with nothing chained)."""
        if ":" in name:
            if not allow_tensor:
                return ValueError(f"Name '{name}' appears to refer to a Tensor, not an Operation.")
            op_name, _, index = name.rpartition(":")
            try:
                i = int(index)
            except ValueError:
                return ValueError(
                    f"The name {name!r} looks like a Tensor name, but is not a valid one."
                )
            op = self._ops.get(op_name)
            if op is None:
                return KeyError(
                    f"The name '{name}' refers to a Tensor which does not exist. "
                    f"The operation, '{op_name}', does not exist in the graph."
                    + self._did_you_mean(op_name)
                )
            if not 0 <= i < len(op.outputs):
                n = len(op.outputs)
                outputs = ", ".join(f"'{t.name}'" for t in op.outputs[:3]) + (
                    ", ..." if n > 3 else ""
                )
                return KeyError(
                    f"The name '{name}' refers to a Tensor which does not exist. The operation, "
                    f"'{op_name}', exists but only has {n} outputs"
                    + (f" ({outputs})." if n else ".")
                )
            return op.outputs[i]
        op = self._ops.get(name)
        if op is None:
            return KeyError(
                f"The name '{name}' refers to an Operation not in the graph."
                + self._did_you_mean(name)
            )
        if allow_operation:
            return op
        return ValueError(
            f"The name '{name}' refers to an Operation, not a Tensor. Tensor names must be of the "
            f"form \"<op_name>:<output_index>\", e.g. '{name}:0'."
        )

    def _did_you_mean(self, op_name: str) -> str:
        """`` Did you mean: 'y', 'y2'?`` with the graph's op names nearest ``op_name``, or ''."""
        near = difflib.get_close_matches(op_name, list(self._ops), n=3, cutoff=0.5)
        return f" Did you mean: {', '.join(repr(n) for n in near)}?" if near else ""

    # ------------------------------------------------------------ collections
    def add_to_collection(self, name: str, value: Any) -> None:
        with self._lock:
            self._collections.setdefault(name, []).append(value)

    def add_to_collections(self, names: Any, value: Any) -> None:
        for name in [names] if isinstance(names, str) else set(names):
            self.add_to_collection(name, value)

    def get_collection_ref(self, name: str) -> list[Any]:
        return self._collections.setdefault(name, [])

    def get_collection(self, name: str, scope: str | None = None) -> list[Any]:
        """A copy of a collection, optionally only the items whose name starts with ``scope``."""
        items = list(self._collections.get(name, ()))
        if scope is None:
            return items
        return [v for v in items if getattr(v, "name", "").startswith(scope)]

    def get_all_collection_keys(self) -> list[str]:
        return [k for k, v in self._collections.items() if v]

    def clear_collection(self, name: str) -> None:
        self._collections.pop(name, None)

    def __contains__(self, name: str) -> bool:
        return name in self._ops

    def __len__(self) -> int:
        return len(self._ops)

    def __repr__(self) -> str:
        return f"<flowbook.Graph with {len(self._ops)} ops>"


def _as_operation(obj: Any) -> Operation:
    if hasattr(obj, "_as_graph_element"):
        obj = obj._as_graph_element()
    if isinstance(obj, Tensor):
        return obj.op
    if isinstance(obj, Operation):
        return obj
    if hasattr(obj, "op") and isinstance(obj.op, Operation):  # a Variable
        return obj.op
    raise TypeError(f"Control input must be an Operation or Tensor, got {type(obj).__name__}")


# ------------------------------------------------------------ default graph
class _DefaultStack(threading.local):
    def __init__(self) -> None:
        self.stack: list[Graph] = []  # graphs entered with as_default() on this thread


_STACK = _DefaultStack()
_global_default: Graph = Graph()


def _default_stack() -> list[Graph]:
    return _STACK.stack


def get_default_graph() -> Graph:
    """The graph new ops go to: the innermost ``as_default()``, else the global one.

    >>> isinstance(get_default_graph(), Graph)
    True
    """
    stack = _STACK.stack
    return stack[-1] if stack else _global_default


def reset_default_graph() -> None:
    """Replace the global default graph with an empty one (not inside ``as_default``)."""
    global _global_default
    if _STACK.stack:
        raise AssertionError(
            "Do not use reset_default_graph() to clear nested graphs. If you need a cleared "
            "graph, exit the nesting and create a new graph."
        )
    _global_default = Graph()


def name_scope(name: str | None, default_name: str | None = None, values: Any = None) -> Any:
    """Open a name scope in the default graph (TF1's ``tf.name_scope``).

    >>> with Graph().as_default():
    ...     with name_scope("layer1") as scope:
    ...         print(scope)
    layer1/
    """
    graph = get_default_graph()
    if values:
        for v in values:
            if isinstance(v, Tensor):
                graph = v.graph
                break
    return graph.name_scope(name if name is not None else default_name)


def control_dependencies(control_inputs: Any) -> Any:
    """Ops created inside run after ``control_inputs`` (None clears outer blocks)."""
    return get_default_graph().control_dependencies(control_inputs)


def device(device_name_or_function: Any) -> Any:
    """Ops created inside request this device: ``with fb.device("/cpu:0"): ...``."""
    return get_default_graph().device(device_name_or_function)


def add_to_collection(name: str, value: Any) -> None:
    get_default_graph().add_to_collection(name, value)


def add_to_collections(names: Any, value: Any) -> None:
    """Add ``value`` to each named collection of the default graph (once per distinct name)."""
    get_default_graph().add_to_collections(names, value)


def get_collection(name: str, scope: str | None = None) -> list[Any]:
    return get_default_graph().get_collection(name, scope)


def get_collection_ref(name: str) -> list[Any]:
    return get_default_graph().get_collection_ref(name)


def set_random_seed(seed: int) -> None:
    """Set the default graph's random seed, so random ops repeat across sessions."""
    get_default_graph().seed = seed
