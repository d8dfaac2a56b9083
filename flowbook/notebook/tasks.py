"""The live graph of a run on a cluster: which task ran each op, and the Send/Recv pairs.

A cluster session (``flowbook.distributed``) splits a run's plan over tasks
and keeps the split beside the plan (``dist_watch.task_layout``).  For such a
plan, :func:`task_state` takes the place of ``watch.device_state``, in the
same two fields of the run state, so the front end draws them as it draws
devices and copy nodes:

- ``placement``: op name -> its task's short name, ``"ps:0"``, ``"worker:1"``
  (the front end colours ops by task: ``features/tasks/tasks.ts``, whose palette
  ``TASK_COLOURS``, from ``flowbook.distributed.dist_repr``, the session's repr shows too);
- ``copies``: one entry per Send/Recv pair of a data edge between tasks, op
  ``"_Send/_Recv"``, named after its ``_Recv`` (``w/_1``), ``src`` the op
  whose value it moves, ``readers`` the ops that read it on the receiving
  task; drawn as one box on the edge it splits, "send → worker:0".  A fed
  value's Recv (from the client) and the pairs of control edges are not drawn.

The pairs are in the run's op list (``pair_names``) so they light up with the
run, and their time (:func:`pair_times`) is the transfer's: from the Send's
start to the Recv's end, on the client's clock.

    >>> short_task("/job:worker/replica:0/task:1")
    'worker:1'
"""

from __future__ import annotations

from typing import Any

from flowbook.distributed.dist_repr import TASK_COLOURS, short_task, task_colour
from flowbook.distributed.dist_watch import task_layout

__all__ = ["TASK_COLOURS", "pair_names", "pair_times", "short_task", "task_colour", "task_state"]

SEND_RECV = "_Send/_Recv"  # the op of a pair's box (the front end's layout/copies.ts draws it)


def _layout_facts(parted: Any) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """(op -> short task, the Send/Recv pairs of data edges) of a ``Partitioned``."""
    placement = {name: short_task(task) for name, task in parted.where.items()}
    sends: dict[str, tuple[Any, str]] = {}  # tensor_name -> (Send node, its task)
    for task, part in parted.parts.items():
        for n in part.graph_def.node:
            if n.op == "_Send":
                sends[n.attr["tensor_name"].s.decode()] = (n, task)
    pairs = []
    for task, part in parted.parts.items():
        nodes = part.graph_def.node
        for n in nodes:
            if n.op != "_Recv" or n.attr["client_terminated"].b:
                continue
            found = sends.get(n.attr["tensor_name"].s.decode())
            if found is None:
                continue
            send, src_task = found
            value = send.input[0]
            src, _, k = value.partition(":")
            if src not in parted.where:  # a control edge's dummy value
                continue
            pairs.append(
                {
                    "name": n.name,
                    "op": SEND_RECV,
                    "src": src,
                    "tensor": f"{src}:{k or 0}",
                    "src_device": short_task(src_task),
                    "dst_device": short_task(task),
                    "readers": [m.name for m in nodes if n.name in m.input],
                    "fetch": False,
                    "send": send.name,
                }
            )
    return placement, pairs


def task_state(plan: Any) -> tuple[dict[str, str], list[dict[str, Any]]] | None:
    """``(placement, copies)`` of a cluster session's plan (see the module doc), else None."""
    parted = task_layout(plan)
    if parted is None:
        return None
    return _layout_facts(parted)


def pair_names(plan: Any) -> list[str]:
    """The Send/Recv pairs' box names of a cluster plan (none for a local plan)."""
    state = task_state(plan)
    return [p["name"] for p in state[1]] if state is not None else []


def pair_times(timings: Any) -> dict[str, float]:
    """Pair (Recv) name -> µs from its Send's start to its end, for merged cluster timings."""
    extra = getattr(timings, "extra", None)
    if not extra:
        return {}
    starts = {op: t.start_ns for op, t in extra if op.type == "_Send"}
    out = {}
    for op, t in extra:
        if op.type == "_Recv" and op.inputs and op.inputs[0].op in starts:
            out[op.name] = (t.end_ns - starts[op.inputs[0].op]) / 1000
    return out
