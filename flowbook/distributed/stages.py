"""When each partition of a distributed step may run: receive first, and updates that wait.

A step's partitions (``flowbook.distributed.partition``) are joined by
Send/Recv pairs.  This module reads them as one graph over the whole
cluster -- nodes ``(task, node name)``, an edge for every input inside a
partition and one from each ``_Send`` to its ``_Recv`` -- and decides two
things before the partitions are sent to their tasks:

1. **Receive first** (:func:`receive_first`): a task may wait until every
   value it receives in the step has arrived, then run its whole partition
   at once, if that cannot deadlock: merging the task's nodes into one
   (its Sends after all its Recvs) must leave the cluster's graph acyclic,
   i.e. no value leaves the task and comes back to it.  Tasks are merged
   greedily, in task order, each merge checked with the ones kept before.
   Such a partition never parks a Recv: its server waits on the event
   loop (``Rendezvous.when_all``) and runs it in one go, on the loop
   itself when its runs are short (``flowbook.distributed.server``).  A
   chain ps -> worker-0 -> worker-1 receives first on every task; a ps
   that sends the weights and receives the gradients cannot.
2. **Updates wait for the step's values** (:func:`gate_updates`): on a task
   that cannot receive first, every op that updates a variable (``Assign``,
   ``AssignSub``, the ``Scatter*`` family...: the ops with ``ref_inputs``)
   gets a control input from each of its partition's Recvs -- except a
   Recv whose value itself depends on the update (waiting for it would
   deadlock; the check is made on the graph as gated so far, so no cycle is
   ever made).

**The guarantee** (the whitepaper's fault tolerance, §3.3): a task lost mid-step leaves each
surviving task's variables either untouched by the step or updated by all
of the step's updates placed there that could wait, since those ran only
once every value the task receives had arrived (and an aborted step's
Recvs fail instead).  Across several ps tasks the step is not atomic: one
ps may have received everything and committed while another had not, as
in TensorFlow, where a failed step may leave some updates applied.

    >>> import flowbook as fb
    >>> from flowbook.runtime.plan import build_plan
    >>> from flowbook.distributed.partition import partition
    >>> with fb.Graph().as_default() as g:
    ...     with fb.device("/job:ps/task:0"):
    ...         w, v = fb.Variable(1.0, name="w"), fb.Variable(2.0, name="v")
    ...     with fb.device("/job:worker/task:0"):
    ...         dw, dv = w * 2.0, v * 3.0
    ...     with fb.device("/job:ps/task:0"):
    ...         train = fb.group(fb.assign_sub(w, dw, name="up_w"), fb.assign_sub(v, dv, name="up_v"))
    >>> plan = build_plan(g, [train], (), (), lambda op: None)
    >>> parted = partition(g, plan.ops, [train], [], [("ps", 0), ("worker", 0)])
    >>> first = receive_first(parted)
    >>> sorted(first)
    ['/job:worker/replica:0/task:0']
    >>> gate_updates(parted, first)
    {'/job:ps/replica:0/task:0': ['up_w', 'up_v']}
    >>> ps = parted.parts["/job:ps/replica:0/task:0"].graph_def
    >>> [list(n.input) for n in ps.node if n.name == "up_w"]
    [['w', 'mul/_3', '^mul_1/_7']]
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Iterable
from typing import Any

from flowbook.distributed.partition import Partitioned
from flowbook.framework.registry import OPS

__all__ = ["DistPlan", "gate_updates", "receive_first", "updates_variable"]

Node = tuple[str, str]  # (task, node name)


def updates_variable(op_type: str) -> bool:
    """Whether an op of this type changes a variable (it takes one by reference).

    >>> updates_variable("AssignAdd"), updates_variable("IsVariableInitialized")
    (True, False)
    """
    opdef = OPS.get(op_type)
    return bool(opdef and opdef.ref_inputs) and op_type != "IsVariableInitialized"


class _ClusterGraph:
    """The step's nodes over all tasks, with their edges (producers -> consumers)."""

    def __init__(self, parted: Partitioned) -> None:
        self.succ: dict[Node, set[Node]] = defaultdict(set)  # node -> its consumers
        self.nodes: list[Node] = []  # every node of every partition
        self.recvs: dict[str, list[str]] = defaultdict(list)  # task -> its task-to-task Recvs
        sends: dict[str, Node] = {}  # tensor_name -> its _Send
        recvs: dict[str, Node] = {}  # tensor_name -> its _Recv
        for task, part in parted.parts.items():
            for node in part.graph_def.node:
                me = (task, node.name)
                self.nodes.append(me)
                for name in node.input:
                    self.succ[(task, name.lstrip("^").partition(":")[0])].add(me)
                if node.op == "_Send":
                    sends[node.attr["tensor_name"].s.decode()] = me
                elif node.op == "_Recv" and not node.attr["client_terminated"].b:
                    recvs[node.attr["tensor_name"].s.decode()] = me
                    self.recvs[task].append(node.name)
        for key, recv in recvs.items():
            self.succ[sends[key]].add(recv)

    def reaches(self, start: Node, goals: set[Node]) -> set[Node]:
        """Which of ``goals`` a path from ``start`` reaches."""
        seen, todo, hit = {start}, [start], set()
        while todo:
            for nxt in self.succ.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
                    if nxt in goals:
                        hit.add(nxt)
        return hit

    def acyclic_when_merged(self, tasks: Iterable[str]) -> bool:
        """Whether the graph stays acyclic with each of ``tasks`` merged into one node."""
        merged = set(tasks)

        def group(n: Node) -> Node:
            return (n[0], "*") if n[0] in merged else n

        indegree: dict[Node, int] = {group(n): 0 for n in self.nodes}
        edges: dict[Node, set[Node]] = defaultdict(set)
        for a, consumers in self.succ.items():
            for b in consumers:
                ga, gb = group(a), group(b)
                if ga != gb and gb not in edges[ga]:
                    edges[ga].add(gb)
                    indegree[gb] = indegree.get(gb, 0) + 1
                    indegree.setdefault(ga, 0)
        ready = deque(n for n, d in indegree.items() if d == 0)
        done = 0
        while ready:
            n = ready.popleft()
            done += 1
            for m in edges.get(n, ()):
                indegree[m] -= 1
                if indegree[m] == 0:
                    ready.append(m)
        return done == len(indegree)


def receive_first(parted: Partitioned) -> set[str]:
    """The tasks that may wait for all the values they receive before running.  See above."""
    graph = _ClusterGraph(parted)
    chosen: set[str] = set()
    for task in sorted(parted.parts):
        if not graph.recvs.get(task) or graph.acyclic_when_merged(chosen | {task}):
            chosen.add(task)
    return chosen


def gate_updates(parted: Partitioned, first: set[str]) -> dict[str, list[str]]:
    """Make each variable update wait for its partition's Recvs (tasks not in ``first``).

    Edits the partitions' GraphDefs; returns, per task, the updates made to wait.
    """
    graph = _ClusterGraph(parted)
    gated: dict[str, list[str]] = {}
    for task, part in sorted(parted.parts.items()):
        recvs = graph.recvs.get(task)
        if task in first or not recvs:
            continue
        targets = {(task, r) for r in recvs}
        for node in part.graph_def.node:
            if not updates_variable(node.op):
                continue
            me = (task, node.name)
            after = targets - graph.reaches(me, targets)  # Recvs it does not lead to
            after -= {(task, i.partition(":")[0]) for i in node.input}  # already its inputs
            for _, recv in sorted(after):
                node.input.append("^" + recv)
                graph.succ[(task, recv)].add(me)
            if after:
                gated.setdefault(task, []).append(node.name)
    return gated


class DistPlan:
    """A run signature split over tasks: its partitions, their keys (``prefix`` + task),
    which receive first, which updates wait, and what registers each partition on its task
    (sent with the task's first call of the plan).  A cluster session keeps one per plan."""

    __slots__ = ("gated", "keys", "n_fetches", "parted", "payloads", "plan")

    def __init__(self, parted: Partitioned, prefix: str, n_fetches: int, plan: Any = None) -> None:
        self.plan = plan  # the client's plan of the run (what its observers see)
        self.parted = parted
        self.n_fetches = n_fetches
        self.keys = {t: f"{prefix}{t}" for t in parted.parts}  # task -> partition key
        first = receive_first(parted)  # tasks that wait for every value, then run
        self.gated = gate_updates(parted, first)  # task -> its updates made to wait
        self.payloads = {  # task -> what registers the partition there
            t: (p.graph_def.SerializeToString(), p.feed_names, p.fetch_names, p.sends,
                t in first)
            for t, p in parted.parts.items()
        }  # fmt: skip
