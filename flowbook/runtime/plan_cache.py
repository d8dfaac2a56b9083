"""A session's plans by run signature, kept across graph edits that leave them as they were.

**What a plan depends on.**  ``flowbook.runtime.plan.build_plan`` makes a plan from

- the run's signature: the fetched elements and the fed tensors, as objects
  (names such as ``"loss:0"`` are looked up for each run, so after a cell
  re-ran, a name means the new op, and so a new signature; a fetch such as
  ``tf.global_variables_initializer()`` is an op made when it is called,
  from the collections of that moment: its own signature);
- the ops reachable backwards from the fetches through data and control
  inputs, stopping at fed tensors, and for each its inputs, control inputs,
  attrs and static shapes; whether it is still in the graph (a plan needing
  a removed op is refused as stale); and its device, as the session's
  ``Placer`` decides it from the op's request (``colocate_with`` copies a
  request when the op is made) and, through an update's variable and
  host-side shape arithmetic, from its producers' devices;
- the session's own per-op state (variables, random generators, queues),
  bound into the kernels, which no graph edit touches.

Nothing else: not the other ops of the graph, its collections, name scopes
or version.  **Adding an op changes no plan**: the new op reads existing
tensors, and no existing op reads it.  So plans are kept while the graph
grows (the run after adding an op to a 100k-op graph costs what a plain
re-run does, instead of pruning and laying out 100k ops again, then compiling
and optimising them again).

**What drops a plan.**  Edits of existing ops (``flowbook.framework.graph_edit``):
removal (a notebook cell run again replaces its ops), rewiring an input
(``Operation._update_input``, ``graph_edit.reroute_ts``), control inputs
added or removed, a device set.  Each is recorded in the graph's
``EditLog``.  The cache remembers how many edits it has seen (``seen``);
a run compares that one number, and when edits came since, :meth:`sweep`
drops the plans that hold an edited op or feed one of its outputs (a cost
per kept plan of the edited ops' count: each plan's set of op ids is made
with it, for a fraction of what laying it out costs), never walking the
graph.  (A plan fed an edited op's output goes too: the placement of its
readers may follow that op's device.)  A device edit also forgets the placer's decisions, and, when the session has a GPU,
drops every plan (placement follows producers' devices downstream, into
plans that need not hold the edited op).  Edits older than the log keeps
(``EditLog.MAX``) drop every plan.  A dropped plan takes its ``RunPath``
(compiled straight line, optimised plans) with it, and the ops it held.

**Bounded.**  At most ``MAX_PLANS`` plans, the least recently used evicted
first (a notebook makes a new signature per ``sess.run(tf.global_...())``
cell; the training step's plan stays).

**Other sessions' paths.**  A cluster session (``flowbook.distributed.session``)
keeps its plans here too, with what its runs need in place of a ``RunPath``
(``add(key, plan, path)``: the plan split over the tasks), and is told of
every path dropped (``on_drop``), to forget its partitions on the tasks.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default() as g, fb.Session() as s:
    ...     x = fb.placeholder(fb.float32, name="x"); y = x * 2.0
    ...     _ = s.run(y, {x: 1.0}); plan = s._plans[(y, None, x)]
    ...     z = y + 1.0                      # a new op: the plan stays
    ...     _ = s.run(y, {x: 2.0}); kept = s._plans[(y, None, x)] is plan
    ...     y.op._update_input(1, fb.constant(3.0))   # an edit of y: it goes
    ...     float(s.run(y, {x: 2.0})), kept, s._plans[(y, None, x)] is plan
    (6.0, True, False)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flowbook.framework.tensor import Tensor
from flowbook.runtime.codegen.compile import RunPath
from flowbook.runtime.plan import Plan

MAX_PLANS = 256  # plans kept per session; the least recently used go first

__all__ = ["MAX_PLANS", "PlanCache"]


class PlanCache:
    """One session's plans and what their runs learnt.  See the module docstring."""

    __slots__ = ("graph", "held", "last", "on_drop", "paths", "plans", "seen")

    def __init__(self, graph: Any, on_drop: Callable[[list[Any]], None] | None = None) -> None:
        self.graph = graph  # the session's graph, whose _edit_log is checked
        self.plans: dict[tuple, Plan] = {}  # signature -> plan, the most recently used last
        self.paths: dict[Plan, Any] = {}  # plan -> what its runs here have learnt (a RunPath)
        self.on_drop = on_drop  # called with the paths of plans dropped (not on a plain Session)
        self.held: dict[Plan, frozenset[int]] = {}  # plan -> ids of its ops and of its fed ops
        self.seen = graph._edit_log.count  # edits of the graph accounted for
        self.last: Plan | None = None  # the plan of the last run (no need to touch it again)

    def touch(self, key: tuple, plan: Plan) -> None:
        """Make ``key``'s plan the most recently used (runs call it only when ``plan`` is not
        ``last``: a loop of one plan pays nothing).  Safe while another thread drops it."""
        self.last = plan
        try:
            self.plans[key] = self.plans.pop(key)  # to the end: a dict keeps insertion order
        except KeyError:  # dropped by another thread meanwhile: this run still has it
            return

    def add(self, key: tuple, plan: Plan, path: Any = None) -> Any:
        """Keep ``plan`` for the run signature ``key``; returns its new RunPath (or ``path``,
        kept in its place: what a cluster session's runs of the plan need)."""
        while len(self.plans) >= MAX_PLANS:
            oldest = next(iter(self.plans), None)
            self._drop(oldest, self.plans.get(oldest))
        self.held[plan] = _held(key, plan)
        self.plans[key] = self.last = plan
        path = self.paths[plan] = RunPath(plan) if path is None else path
        return path

    def sweep(self, placer: Any = None) -> None:
        """Drop the plans the graph's edits since the last sweep touched (see above).

        ``placer`` is the session's Placer, if it has made one: a device edit
        clears its decisions.
        """
        log = self.graph._edit_log
        now = log.count
        edits = log.since(self.seen, now)
        self.seen = now
        if edits is None:
            return self.clear()
        devices = any(placement for _, placement in edits)
        if devices and placer is not None:
            placer._placed.clear()
            if not placer.only_cpu:
                return self.clear()
        ids = frozenset().union(*(ops for ops, _ in edits))
        if not ids:
            return None
        for key, plan in list(self.plans.items()):
            if not ids.isdisjoint(self.held.get(plan, ())):
                self._drop(key, plan)
        return None

    def _drop(self, key: Any, plan: Plan | None) -> None:
        self.plans.pop(key, None)  # (pops: another thread may have dropped it already)
        path = self.paths.pop(plan, None)  # type: ignore[arg-type]
        self.held.pop(plan, None)  # type: ignore[arg-type]
        if plan is self.last:
            self.last = None
        if self.on_drop is not None and path is not None:
            self.on_drop([path])

    def clear(self) -> None:
        """Forget every plan."""
        paths = list(self.paths.values()) if self.on_drop is not None else []
        self.last = None
        self.plans.clear()
        self.paths.clear()
        self.held.clear()
        if paths:
            self.on_drop(paths)  # type: ignore[misc]


def _held(key: tuple, plan: Plan) -> frozenset[int]:
    """Ids of the ops ``plan`` runs and of the ops whose outputs it is fed (``key``'s tail)."""
    start = next(i for i, k in enumerate(key) if k is None) + 1  # fetches, None, fed tensors
    return frozenset([*map(id, plan.ops), *(id(t.op) for t in key[start:] if type(t) is Tensor)])
