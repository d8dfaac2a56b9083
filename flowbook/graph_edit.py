"""Taking ops out of a Graph: what a re-run notebook cell does to its old ops.

A Graph only grows while it is built; the one exception is the notebook
extension (``flowbook.notebook``), which, when a cell runs again, removes the
ops that cell created last time so the re-run creates them afresh under the
same names.  This module holds that edit, as ``Graph._remove_ops``:

- the ops leave ``graph._ops``;
- their names, and the name scopes no remaining op lives in, are released
  from ``graph._names_in_use`` (a uniquifier counter is lowered when a
  ``Mul_1`` goes), so the re-run gets ``layer1/Mul`` again, not ``layer1_1/Mul_1``;
- collection members that are (or wrap) a removed op leave every collection,
  so a re-created Variable is not listed twice in GLOBAL_VARIABLES;
- ``graph._stale`` becomes the set of remaining ops that consume a removed op,
  directly or through other stale ops ("stale until their cell runs again");
- ``graph._version`` is bumped, so sessions re-plan.

Nothing else changes: an Operation is immutable, so a stale op still points
at its removed input.  A run that needs a removed op is refused by the plan
(``flowbook.run.plan.build_plan`` checks ``graph._ops.get(op.name) is op`` for
each needed op) with the message built by :func:`stale_error`.  Which cell
run removed an op is remembered in ``replaced_by`` (weakly keyed, so it holds
nothing alive) for that message.

    >>> import flowbook as fb
    >>> g = fb.Graph()
    >>> with g.as_default():
    ...     a = fb.constant(1.0, name="a"); b = a * 2.0
    >>> sorted(op.name for op in g._remove_ops([a.op]))
    ['a']
    >>> sorted(op.name for op in g.stale_ops())
    ['mul']
    >>> with g.as_default():
    ...     fb.constant(5.0, name="a").name   # the name is free again
    'a:0'
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable
from typing import Any

from flowbook.errors import FailedPreconditionError
from flowbook.tensor import Operation, Tensor

replaced_by: weakref.WeakKeyDictionary[Operation, Any] = weakref.WeakKeyDictionary()
"""removed op -> the ``flowbook.source.Cell`` run that removed it (for messages)."""


def remove_ops(graph: Any, ops: Iterable[Operation], by: Any = None) -> set[Operation]:
    """Remove ``ops`` from ``graph``, free their names; returns the ops removed.

    Ops not (or no longer) in the graph are skipped; when none is left the
    graph is unchanged.  ``by`` is the cell run doing it, named in messages.
    """
    with graph._lock:
        removed = {op for op in ops if graph._ops.get(op.name) is op}
        if not removed:
            return removed
        for op in removed:
            del graph._ops[op.name]
            if by is not None:
                replaced_by[op] = by
        _free_names(graph, [op.name for op in removed])
        _drop_from_collections(graph, removed)
        graph._stale = _stale_after(graph, graph._ops.values(), set())
        graph._version += 1
    return removed


def stale_ops(graph: Any) -> set[Operation]:
    """The ops that consume an op a re-run cell removed, until their own cell runs again.

    >>> import flowbook as fb
    >>> fb.Graph().stale_ops()
    set()
    """
    return set(graph._stale)


def mark_stale(graph: Any, ops: Iterable[Operation]) -> None:
    """Add to ``graph._stale`` those of ``ops`` (new ops, in creation order) built on one.

    The notebook extension calls it with the ops a cell just created: an op
    built after a removal on top of a stale op (or of a removed one still
    held in a Python variable) is stale too.
    """
    graph._stale = _stale_after(graph, ops, graph._stale)


def _stale_after(graph: Any, ops: Iterable[Operation], stale: set[Operation]) -> set[Operation]:
    """``stale`` plus the ``ops`` that read a removed or stale op (inputs come first)."""
    present = graph._ops
    stale = set(stale)
    for op in ops:
        for dep in _deps(op):
            if dep in stale or present.get(dep.name) is not dep:
                stale.add(op)
                break
    return stale


def _deps(op: Operation) -> Iterable[Operation]:
    for t in op.inputs:
        yield t.op
    yield from op.control_inputs


# ------------------------------------------------------------------ names
def _prefixes(name: str) -> Iterable[str]:
    """``"a/b/c"`` -> ``"a"``, ``"a/b"``, ``"a/b/c"``: the op name and its scopes."""
    parts = name.split("/")
    for i in range(1, len(parts) + 1):
        yield "/".join(parts[:i])


def _free_names(graph: Any, names: list[str]) -> None:
    """Release the removed names and the scopes that no remaining op lives in."""
    free = {p for n in names for p in _prefixes(n.lower())}
    for name in graph._ops:
        if not free:
            break
        free.difference_update(_prefixes(name.lower()))
    in_use = graph._names_in_use
    for key in free:
        in_use.pop(key, None)
        base, _, suffix = key.rpartition("_")
        if base and suffix.isdigit() and int(suffix) >= 1 and in_use.get(base, 0) > int(suffix):
            in_use[base] = int(suffix)  # the next "base" tries "base_<suffix>" first again


# ------------------------------------------------------------ collections
def _op_of(item: Any) -> Operation | None:
    """The op a collection member is or wraps (an op, a tensor, a Variable), else None."""
    if isinstance(item, Operation):
        return item
    if isinstance(item, Tensor):
        return item.op
    op = getattr(item, "op", None)
    return op if isinstance(op, Operation) else None


def _drop_from_collections(graph: Any, removed: set[Operation]) -> None:
    for members in graph._collections.values():
        keep = [m for m in members if _op_of(m) not in removed]
        if len(keep) != len(members):
            members[:] = keep  # in place: get_collection_ref hands out this list


# --------------------------------------------------------------- messages
def _cell_words(op: Operation) -> str:
    """``cell [4]``: the cell run that created ``op`` (where its code is, if unknown)."""
    cell = op.site.cell
    if cell is not None and cell.execution_count is not None:
        return f"cell [{cell.execution_count}]"
    return op.site.describe()


def stale_error(graph: Any, needed: list[Operation], missing: Operation) -> FailedPreconditionError:
    """The error for a run that needs ``missing``, an op no longer in ``graph``.

    ``needed`` is the run's ops in topological order.  The message names the
    first op still in the graph that reads a removed one (the stale op: the
    user re-runs its cell), or, when the run needs only removed ops (an old
    Python reference was fetched), the removed op nearest the fetch.
    """
    present, wanted = graph._ops, set(needed)
    for op in needed:
        if present.get(op.name) is op:
            removed = next(
                (d for d in _deps(op) if d in wanted and present.get(d.name) is not d), None
            )
            if removed is not None:
                return FailedPreconditionError(
                    None,
                    op,
                    f"{op.describe()} is stale: its input '{removed.name}' (made by "
                    f"{_cell_words(removed)}) was {_when(removed)}. Re-run "
                    f"{_cell_words(op)}, which created '{op.name}', to rebuild it on the new "
                    f"'{removed.name}'.",
                )
    gone = [op for op in needed if present.get(op.name) is not op] or [missing]
    return FailedPreconditionError(
        None,
        gone[-1],
        f"{gone[-1].describe()} was {_when(gone[-1])}; it is no longer part of the "
        f"graph. Use the op that replaced it (graph.get_operation_by_name({gone[-1].name!r})), "
        "or re-run the cell that fetches it.",
    )


def _when(removed: Operation) -> str:
    by = replaced_by.get(removed)
    if by is None:
        return "removed from the graph"
    return f"replaced when that cell ran again, as cell [{by.execution_count}]"
