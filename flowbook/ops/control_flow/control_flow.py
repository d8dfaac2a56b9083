"""``tf.cond``, ``tf.case`` and ``tf.while_loop``, built from the primitives as TensorFlow 1 builds them.

**cond** (``cond/``): ``Switch(pred, pred)`` gives the two pivots
``switch_t``/``switch_f``; each branch function runs in a
:class:`~flowbook.ops.control_flow.cf_context.CondContext`, which switches every outside
value it uses; each result pair goes into a ``Merge``.  The untaken
branch's ops get dead inputs and do not run.

**while_loop** (``while/``): per loop variable ``Enter`` -> ``Merge`` ->
``Switch(…, LoopCond(cond(merged)))``: the false side goes to ``Exit`` (the
result), the true side through ``Identity`` into ``body``, whose results go
through ``NextIteration`` back into the Merge.  Outside values the functions
use enter as loop invariants.  ``maximum_iterations`` adds a counter as
TensorFlow does.  Shapes are checked after one trace of the body against the
loop variables' shapes or ``shape_invariants``; a wrong shape, dtype or
structure is a ValueError naming the loop and the line that built it, and a
function that raises leaves the graph as it was.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     x = fb.placeholder(fb.float32, [])
    ...     y = fb.cond(x > 0.0, lambda: x * 2.0, lambda: -x)
    ...     n, total = fb.while_loop(lambda n, t: n < 4, lambda n, t: (n + 1, t + x), [0, 0.0])
    ...     [float(v) for v in s.run([y, total], {x: 3.0})]
    [6.0, 12.0]
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from flowbook.framework import dtypes, nest
from flowbook.framework.graph import Graph, get_default_graph
from flowbook.framework.graph_edit import remove_ops
from flowbook.framework.source import Site, capture
from flowbook.framework.tensor import Operation, Tensor
from flowbook.framework.tensor_shape import as_shape, compatible, fmt
from flowbook.ops._builder import tensor
from flowbook.ops.array.array_ops import stack
from flowbook.ops.control_flow.cf_context import CondContext, WhileContext
from flowbook.ops.control_flow.tensor_array import TensorArray
from flowbook.ops.debugging.assert_ops import Assert
from flowbook.ops.math.math_ops import cast, logical_and, reduce_sum

__all__ = ["case", "cond", "while_loop"]


@contextlib.contextmanager
def _all_or_nothing(graph: Graph) -> Iterator[None]:
    """Ops made inside are removed again if the block raises: the graph stays as it was."""
    before = set(graph._ops.values())
    try:
        yield
    except BaseException:
        remove_ops(graph, [op for op in list(graph._ops.values()) if op not in before])
        raise


def _op(
    graph: Graph, op_type: str, inputs: tuple[Tensor, ...], name: str, **attrs: Any
) -> Operation:
    return graph.create_op(op_type, inputs, attrs or None, name=name)


# --------------------------------------------------------------------- cond
def cond(
    pred: Any,
    true_fn: Callable[[], Any] | None = None,
    false_fn: Callable[[], Any] | None = None,
    strict: bool = False,
    name: str | None = None,
    fn1: Callable[[], Any] | None = None,
    fn2: Callable[[], Any] | None = None,
) -> Any:
    """``true_fn()`` if ``pred`` else ``false_fn()``, as graph: only the taken branch runs.

    Both functions return the same structure of tensors (or TensorArrays,
    passed through as their flows); a single-element list comes back bare
    unless ``strict``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     float(s.run(fb.cond(fb.constant(False), lambda: 1.0, lambda: 2.0)))
    2.0
    """
    true_fn = true_fn if true_fn is not None else fn1
    false_fn = false_fn if false_fn is not None else fn2
    if not callable(true_fn) or not callable(false_fn):
        raise TypeError("cond needs two callables, true_fn and false_fn")
    pred = tensor(pred)
    graph = pred.graph
    site = capture(2)
    if pred.dtype != dtypes.bool or (pred._shape is not None and len(pred._shape) != 0):
        raise TypeError(
            f"cond at {site.describe()}: pred must be a bool scalar, got '{pred.name}' "
            f"({pred.dtype.name}, shape {fmt(pred._shape)})"
        )
    with _all_or_nothing(graph), graph.name_scope(name or "cond"):
        p_false, p_true = _op(graph, "Switch", (pred, pred), "Switch").outputs
        pivot_t = _op(graph, "Identity", (p_true,), "switch_t").outputs[0]
        pivot_f = _op(graph, "Identity", (p_false,), "switch_f").outputs[0]
        pred_id = _op(graph, "Identity", (pred,), "pred_id").outputs[0]
        results = []
        for fn, pivot, branch in ((true_fn, pivot_t, 1), (false_fn, pivot_f, 0)):
            ctx = CondContext(graph, pred_id, pivot, branch)
            with ctx.entered():
                out = fn()
                flat = [_branch_value(ctx, v) for v in nest.flatten(_flows(out))]
            results.append((out, flat))
        (out_t, flat_t), (out_f, flat_f) = results
        try:
            nest.assert_same_structure(out_t, out_f)
        except ValueError as e:
            raise ValueError(
                f"cond at {site.describe()}: true_fn and false_fn must return the same "
                f"structure: {e}"
            ) from None
        merged = []
        for t, f in zip(flat_t, flat_f):
            if t is None:
                merged.append(None)
                continue
            if t.dtype != f.dtype:
                raise ValueError(
                    f"cond at {site.describe()}: true_fn returns {t.dtype.name} where false_fn "
                    f"returns {f.dtype.name} ('{t.name}', '{f.name}')"
                )
            merged.append(_op(graph, "Merge", (f, t), "Merge").outputs[0])
    packed = _arrays_back(out_t, nest.pack_sequence_as(out_t, merged))
    return packed if strict else _bare_if_single(packed)


def _bare_if_single(result: Any) -> Any:
    """A one-element list or tuple's element (TF1 unpacks those); anything else as it is."""
    one = isinstance(result, list | tuple) and len(result) == 1 and not hasattr(result, "_fields")
    return result[0] if one else result


def _branch_value(ctx: CondContext, v: Any) -> Tensor | None:
    """A branch result as a tensor of the branch (an op becomes the pivot, after it)."""
    if v is None:
        return None
    if isinstance(v, Operation):
        with ctx.graph.control_dependencies([v]):
            return _op(ctx.graph, "Identity", (ctx.pivot,), "Identity").outputs[0]
    t = tensor(v)
    if not ctx.sees(t):
        t = ctx.add_value(t)
    return t


def case(
    pred_fn_pairs: Any,
    default: Callable[[], Any] | None = None,
    exclusive: bool = False,
    strict: bool = False,
    name: str = "case",
) -> Any:
    """The function of the first pair whose predicate holds, else ``default()``.

    ``pred_fn_pairs`` is a list of ``(pred, fn)`` (or a dict); built as nested
    conds.  ``exclusive``: more than one true predicate is an error at run time.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     x = fb.constant(5)
    ...     r = fb.case([(x < 3, lambda: 1), (x < 7, lambda: 2)], default=lambda: 3)
    ...     int(s.run(r))
    2
    """
    pairs = list(pred_fn_pairs.items()) if isinstance(pred_fn_pairs, dict) else list(pred_fn_pairs)
    for p in pairs:
        if not isinstance(p, tuple) or len(p) != 2 or not callable(p[1]):
            raise TypeError(f"case: each entry must be a (predicate, callable) pair, got {p!r}")
    if default is None:
        if not pairs:
            raise ValueError("case needs at least one (predicate, fn) pair or a default")
        *pairs, (_, default) = pairs  # TF: the last fn is the default when none is given
    graph = get_default_graph()
    with graph.name_scope(name):
        preds = [tensor(p) for p, _ in pairs]
        if exclusive and len(preds) > 1:
            count = reduce_sum(cast(stack(preds), dtypes.int32))
            check = Assert(count <= 1, ["case: more than one predicate is true (exclusive=True)"])
            preds = [_gated(p, check) for p in preds]
        fn = default
        for p, f in reversed(list(zip(preds, [f for _, f in pairs]))):
            fn = _cond_fn(p, f, fn, strict)
        return fn()


def _gated(p: Tensor, check: Operation) -> Tensor:
    with p.graph.control_dependencies([check]):
        return _op(p.graph, "Identity", (p,), "Identity").outputs[0]


def _cond_fn(p: Tensor, f: Callable[[], Any], rest: Callable[[], Any], strict: bool) -> Callable:
    return lambda: cond(p, f, rest, strict=strict)


# ---------------------------------------------------------------- while_loop
def while_loop(
    cond: Callable[..., Any],
    body: Callable[..., Any],
    loop_vars: Any,
    shape_invariants: Any = None,
    parallel_iterations: int = 10,
    back_prop: bool = True,
    swap_memory: bool = False,
    name: str | None = None,
    maximum_iterations: Any = None,
    return_same_structure: bool = False,
) -> Any:
    """Repeat ``loop_vars = body(*loop_vars)`` while ``cond(*loop_vars)``; the final values.

    ``loop_vars`` is a (nested) list or tuple of tensors; a single loop
    variable comes back bare unless ``return_same_structure``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     i, p = fb.while_loop(lambda i, p: i < 5, lambda i, p: (i + 1, p * 2), (0, 1))
    ...     [int(v) for v in s.run([i, p])]
    [5, 32]
    """
    if not callable(cond) or not callable(body):
        raise TypeError("while_loop needs callables for cond and body")
    if parallel_iterations < 1:
        raise ValueError("parallel_iterations must be a positive integer")
    site = capture(2)
    single = not isinstance(loop_vars, list | tuple) or (
        isinstance(loop_vars, list | tuple) and not loop_vars
    )
    structure = [loop_vars] if not isinstance(loop_vars, list | tuple) else loop_vars
    if not nest.flatten(structure):
        raise ValueError(f"while_loop at {site.describe()}: no loop variables provided")
    arrays = structure
    if any(isinstance(v, TensorArray) for v in nest.flatten(structure)):
        cond, body, structure = _through_flows(cond, body, structure)
    graph = get_default_graph()
    with _all_or_nothing(graph), graph.name_scope(name or "while") as scope:
        loop = _Loop(graph, scope, site, parallel_iterations)
        if maximum_iterations is not None:
            cond, body, structure, shape_invariants = loop.counted(
                maximum_iterations, cond, body, structure, shape_invariants
            )
        result = loop.build(cond, body, structure, shape_invariants)
        if maximum_iterations is not None:
            result = result[1]
    if arrays is not structure:
        result = _arrays_back(arrays, result)
    if return_same_structure:
        return result
    return result[0] if single else _bare_if_single(result)


def _flows(structure: Any) -> Any:
    """``structure`` with each TensorArray replaced by its flow (what a loop carries of it)."""
    return nest.map_structure(lambda v: v.flow if isinstance(v, TensorArray) else v, structure)


def _arrays_back(arrays: Any, values: Any) -> Any:
    """``values`` with the flow of each TensorArray of ``arrays`` made a TensorArray again."""
    flat = [
        a._with_flow(v) if isinstance(a, TensorArray) else v
        for a, v in zip(nest.flatten(arrays), nest.flatten(values))
    ]
    return nest.pack_sequence_as(values, flat)


def _through_flows(cond: Callable, body: Callable, structure: Any) -> tuple[Callable, ...]:
    """cond, body and loop variables that carry TensorArrays as their flows, as TF does."""

    def flow_cond(*flows: Any) -> Any:
        return cond(*_arrays_back(structure, list(flows)))

    def flow_body(*flows: Any) -> Any:
        return _flows(body(*_arrays_back(structure, list(flows))))

    return flow_cond, flow_body, _flows(structure)


class _Loop:
    """One while_loop being built: its context, scope and where it was written."""

    def __init__(self, graph: Graph, scope: str, site: Site, parallel_iterations: int) -> None:
        self.graph = graph
        self.scope = scope.rstrip("/")
        self.site = site
        self.ctx = WhileContext(graph, f"{self.scope}/while_context", parallel_iterations)
        self.ctx.site = site

    def error(self, message: str) -> ValueError:
        return ValueError(f"while_loop '{self.scope}' at {self.site.describe()}: {message}")

    def counted(
        self,
        maximum_iterations: Any,
        cond: Callable,
        body: Callable,
        structure: Any,
        shape_invariants: Any,
    ) -> tuple[Any, Any, Any, Any]:
        """cond, body and loop variables with TensorFlow's iteration counter in front."""
        m = tensor(maximum_iterations)
        if not m.dtype.is_integer or (m._shape is not None and len(m._shape) != 0):
            raise self.error(
                f"maximum_iterations must be an integer scalar, got '{m.name}' "
                f"({m.dtype.name}, shape {fmt(m._shape)})"
            )

        def counted_cond(i: Tensor, rest: Any) -> Tensor:
            return logical_and(i < m, cond(*rest))

        def counted_body(i: Tensor, rest: Any) -> Any:
            out = body(*rest)
            if not isinstance(out, list | tuple) or hasattr(out, "_fields"):
                out = [out]
            return (i + 1, list(out))

        zero = tensor(0, dtype=m.dtype, name="iteration_counter")
        invariants = None if shape_invariants is None else [(), list(shape_invariants)]
        return counted_cond, counted_body, [zero, list(structure)], invariants

    def build(self, cond: Callable, body: Callable, structure: Any, invariants: Any) -> Any:
        graph, ctx = self.graph, self.ctx
        flat = [tensor(v) for v in nest.flatten(structure)]
        shapes = self._invariants(flat, invariants, structure)
        enters = []
        for v, shape in zip(flat, shapes):
            e = ctx.enter(v, is_constant=False)
            e._shape = shape
            enters.append(e)
        ctx.loop_enters = enters
        state = graph._state
        controllers, state.controllers = state.controllers, []  # they gate the Enters only
        try:
            with ctx.entered():
                merges = []
                for e, shape in zip(enters, shapes):
                    m = _op(graph, "Merge", (e, e), "Merge").outputs[0]
                    m._shape = shape
                    merges.append(m)
                ctx.pivot = merges[0]
                c = tensor(cond(*nest.pack_sequence_as(structure, merges)))
                if c.dtype != dtypes.bool or (c._shape is not None and len(c._shape) != 0):
                    raise self.error(
                        f"cond must return a bool scalar, got '{c.name}' ({c.dtype.name}, "
                        f"shape {fmt(c._shape)})"
                    )
                loop_cond = _op(graph, "LoopCond", (c,), "LoopCond").outputs[0]
                switches = [_op(graph, "Switch", (m, loop_cond), "Switch") for m in merges]
                with ctx.in_outer():
                    exits = [
                        _op(graph, "Exit", (sw.outputs[0],), "Exit").outputs[0] for sw in switches
                    ]
                idents = [
                    _op(graph, "Identity", (sw.outputs[1],), "Identity").outputs[0]
                    for sw in switches
                ]
                ctx.pivot = idents[0]
                ctx.body, ctx.structure, ctx.idents, ctx.loop_cond = (
                    body,
                    structure,
                    idents,
                    loop_cond,
                )
                ctx.merges = merges
                out = body(*nest.pack_sequence_as(structure, idents))
                if len(structure) == 1 and (
                    not isinstance(out, list | tuple) or hasattr(out, "_fields")
                ):
                    out = [out]
                if isinstance(structure, tuple) and isinstance(out, list):
                    out = tuple(out)
                try:
                    nest.assert_same_structure(list(structure), list(out))
                except (ValueError, TypeError) as e:
                    raise self.error(str(e)) from None
                nexts = []
                for k, (v, m, shape) in enumerate(zip(nest.flatten(out), merges, shapes)):
                    t = tensor(v, dtype=m.dtype) if not isinstance(v, Tensor) else v
                    if not ctx.sees(t):
                        t = ctx.add_value(t)
                    self._check(k, flat[k], t, shape)
                    nexts.append(_op(graph, "NextIteration", (t,), "NextIteration").outputs[0])
        finally:
            state.controllers = controllers
        for m, n in zip(merges, nexts):  # close the loop: the back edge into each Merge
            m.op.inputs = (m.op.inputs[0], n)
        graph._version += 1
        ctx.loop_exits = exits
        return nest.pack_sequence_as(structure, exits)

    def _invariants(self, flat: list[Tensor], invariants: Any, structure: Any) -> list[Any]:
        if invariants is None:
            return [v._shape for v in flat]
        shapes = [as_shape(s) for s in _flatten_shapes(invariants, structure, self)]
        for v, s in zip(flat, shapes):
            if not compatible(v._shape, s) or (
                s is not None and v._shape is not None and len(s) != len(v._shape)
            ):
                raise self.error(
                    f"the shape invariant {fmt(s)} is not compatible with the initial value "
                    f"of the loop variable '{v.name}', shape {fmt(v._shape)}"
                )
        return shapes

    def _check(self, k: int, initial: Tensor, t: Tensor, shape: Any) -> None:
        if t.dtype != initial.dtype:
            raise self.error(
                f"loop variable {k} ('{initial.name}') enters the loop as {initial.dtype.name} "
                f"but the body returns {t.dtype.name} ('{t.name}')"
            )
        if not _fits(t._shape, shape):
            raise self.error(
                f"loop variable {k} ('{initial.name}') enters the loop with shape {fmt(shape)}, "
                f"but has shape {fmt(t._shape)} after one iteration. To allow the shape to vary "
                "across iterations, use the `shape_invariants` argument of tf.while_loop to "
                "specify a less-specific shape."
            )


def _fits(shape: Any, invariant: Any) -> bool:
    """Whether every shape ``shape`` allows also satisfies ``invariant``."""
    if invariant is None:
        return True
    if shape is None or len(shape) != len(invariant):
        return False
    return all(i is None or s == i for s, i in zip(shape, invariant))


def _flatten_shapes(invariants: Any, structure: Any, loop: _Loop) -> list[Any]:
    """The shape invariants, one per loop variable (a shape is a leaf, not a list)."""
    out: list[Any] = []

    def walk(inv: Any, st: Any) -> None:
        if nest.is_sequence(st):
            if isinstance(inv, dict) or not isinstance(inv, list | tuple) or len(inv) != len(st):
                raise loop.error("shape_invariants must have the structure of loop_vars")
            for a, b in zip(inv, st):
                walk(a, b)
        else:
            out.append(
                inv.as_list()
                if hasattr(inv, "as_list") and inv.ndims is not None
                else (None if hasattr(inv, "ndims") else inv)
            )

    walk(invariants, structure)
    return out
