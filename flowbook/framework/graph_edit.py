"""Edits of a Graph's existing ops: what a re-run notebook cell does to its old ops, and
TensorFlow 1's rewiring.

A Graph mostly grows, and adding an op changes no existing one (its inputs
are tensors that exist already, never the reverse), so a session's cached
plans survive it.  The edits here do change existing ops; each is recorded in
the graph's :class:`EditLog` (``graph._edit_log``, by :func:`changed`), which
the sessions' plan caches (``flowbook.runtime.plan_cache``) read to drop exactly
the plans holding an edited op:

- :func:`remove_ops` (``Graph._remove_ops``): the notebook extension
  (``flowbook.notebook``), when a cell runs again, removes the ops that cell
  created last time so the re-run creates them afresh under the same names;
- ``Operation._update_input``, ``_add_control_input(s)``,
  ``_remove_all_control_inputs`` and ``_set_device`` (TensorFlow 1's private
  edits, in ``flowbook.framework.tensor``), and :func:`reroute_ts` (the graph editor's
  rewiring: the readers of one tensor read another).

(A loop's ``Merge``, closed by its own ``while_loop``, gradient loop or
``import_graph_def`` once the back edge exists, is rewired in place with only
a version bump: no run can have planned it before.)

Removing ops (``remove_ops``):

- the ops leave ``graph._ops``;
- their names, and the name scopes no remaining op lives in, are released
  from ``graph._names_in_use`` (a uniquifier counter is lowered when a
  ``Mul_1`` goes), so the re-run gets ``layer1/Mul`` again, not ``layer1_1/Mul_1``;
- collection members that are (or wrap) a removed op leave every collection,
  so a re-created Variable is not listed twice in GLOBAL_VARIABLES;
- ``graph._stale`` becomes the set of remaining ops that consume a removed op,
  directly or through other stale ops ("stale until their cell runs again");
- the removal is recorded (``changed``), so the plans holding them go.

Nothing else changes: an Operation is left as it was, so a stale op still points
at its removed input.  A run that needs a removed op is refused by the plan
(``flowbook.runtime.plan.build_plan`` checks ``graph._ops.get(op.name) is op`` for
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

import threading
import weakref
from collections.abc import Iterable
from typing import Any

from flowbook.framework.errors import FailedPreconditionError
from flowbook.framework.tensor import Operation, Tensor

replaced_by: weakref.WeakKeyDictionary[Operation, Any] = weakref.WeakKeyDictionary()
"""removed op -> the ``flowbook.framework.source.Cell`` run that removed it (for messages)."""


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
        changed(graph, removed)
    return removed


class EditLog:
    """The edits of a graph's existing ops, in order: what sessions' plan caches check.

    ``count`` edits so far; ``entries[k]`` is edit ``base + k``: the ids of
    the ops it changed (a cached plan holds its ops, so their ids stay
    theirs) and whether it changed a device.  Only the last ``MAX`` are
    kept; a cache that saw fewer than ``base`` drops every plan.

    >>> log = EditLog(); log.record([], placement=False); log.count, log.since(0)
    (1, [(frozenset(), False)])
    """

    MAX = 4096  # edits kept (each a few ids); older ones are forgotten, see above

    __slots__ = ("_lock", "base", "count", "entries")

    def __init__(self) -> None:
        self.count = 0  # edits recorded; a plan cache compares it with the count it has seen
        self.base = 0  # the edit entries[0] is
        self.entries: list[tuple[frozenset[int], bool]] = []  # (op ids, device edit), in order
        self._lock = threading.Lock()  # edits from several threads: count stays base + entries

    def record(self, ops: Iterable[Operation], placement: bool) -> None:
        entry = (frozenset(map(id, ops)), placement)
        with self._lock:
            self.entries.append(entry)
            if len(self.entries) > self.MAX:
                drop = len(self.entries) // 2
                del self.entries[:drop]
                self.base += drop
            self.count += 1

    def since(self, seen: int, now: int | None = None) -> list[tuple[frozenset[int], bool]] | None:
        """The edits after the first ``seen`` up to ``now`` (None: all), or None if forgotten."""
        with self._lock:
            if seen < self.base:
                return None
            end = None if now is None else now - self.base
            return self.entries[seen - self.base : end]


def changed(graph: Any, ops: Iterable[Operation], placement: bool = False) -> None:
    """Record that ``ops`` (ops of ``graph``) changed or left it; ``placement``: their device.

    The plans that hold one of them (or feed one of their outputs) are dropped
    by every session's plan cache before its next run.
    """
    graph._edit_log.record(ops, placement)
    graph._version += 1


def reroute_ts(
    ts0: Any, ts1: Any, can_modify: Any = None, cannot_modify: Any = None
) -> list[Operation]:
    """Make the readers of each tensor of ``ts1`` read the tensor of ``ts0`` at its place
    instead (the graph editor's ``reroute_ts``); returns the ops changed.

    ``can_modify`` (only these readers) and ``cannot_modify`` (never these)
    restrict which readers change; the tensors of a pair need the same dtype.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     a, b = fb.constant(1.0), fb.constant(5.0); c = a * 2.0
    ...     [op.name for op in reroute_ts(b, a)], float(fb.Session().run(c))
    (['mul'], 10.0)
    """
    ts0 = [ts0] if isinstance(ts0, Tensor) else list(ts0)
    ts1 = [ts1] if isinstance(ts1, Tensor) else list(ts1)
    if len(ts0) != len(ts1):
        raise ValueError(f"reroute_ts: {len(ts0)} tensors to reroute onto {len(ts1)}")
    for t0, t1 in zip(ts0, ts1):
        if t0.dtype != t1.dtype or t0.graph is not t1.graph:
            raise ValueError(
                f"reroute_ts: cannot reroute '{t1.name}' ({t1.dtype.name}) onto "
                f"'{t0.name}' ({t0.dtype.name}): not the same dtype and graph"
            )
    new_for = dict(zip(ts1, ts0))
    allowed = None if can_modify is None else set(_ops_of(can_modify))
    barred = set(_ops_of(() if cannot_modify is None else cannot_modify))
    graph = ts1[0].graph if ts1 else None
    edited: list[Operation] = []
    for op in list(graph._ops.values()) if graph is not None else ():
        if op in barred or (allowed is not None and op not in allowed):
            continue
        hits = [k for k, t in enumerate(op.inputs) if t in new_for]
        for k in hits:
            op._update_input(k, new_for[op.inputs[k]], record=False)
        if hits:
            edited.append(op)
    if edited:
        changed(graph, edited)
    return edited


def _ops_of(items: Any) -> list[Operation]:
    items = items if isinstance(items, list | tuple | set | frozenset) else [items]
    return [o for o in map(_op_of, items) if o is not None]


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
    tops = {p.partition("/")[0] for p in free}  # only names under these can share a prefix
    for name in graph._ops:
        if not free:
            break
        low = name.lower()
        if low.partition("/")[0] in tops:
            free.difference_update(_prefixes(low))
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
