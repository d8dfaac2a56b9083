"""Partitioning: a run's pruned ops split into one GraphDef per task, joined by Send/Recv pairs.

The client prunes a run as a local session does (``flowbook.runtime.plan``:
walk back from the fetches, stop at feeds), then :func:`partition`:

1. **assigns each op a task** (:func:`assign_tasks`): the job and task of its
   device string (``/job:ps/task:0``, set by ``tf.device`` scopes or
   ``replica_device_setter``); an op naming no job runs on the default task
   (``/job:worker/task:0`` where there is one, as a TF master runs unplaced
   ops on its own task).  Three colocations override the scope, as in
   TensorFlow: an op that updates a variable (``ref_inputs``: Assign,
   ApplyGradientDescent...) runs where the variable lives, and so does the
   variable's snapshot ``W/read``; an op taking a queue's or accumulator's
   handle first runs where that resource lives (TF1's ref handles).  A device naming a task the cluster does
   not have is ``InvalidArgumentError`` naming the op and its line;
2. **copies each op's NodeDef** into its task's GraphDef, with its device
   completed to the task (``/job:ps/replica:0/task:0/device:CPU:0`` keeps the
   device type the op asked for, which the task's own placer honours);
3. **cuts the edges between tasks**: a data edge from task S to task T
   becomes ``_Send`` on S and ``_Recv`` on T (one pair per value and
   receiving task, named ``{op}/_{n}``, meeting under ``tensor_name``
   ``edge_{id}_{op}``); a control edge becomes a float32 dummy ``Const`` on
   S, waiting for the op, sent to T, whose ``_Recv`` becomes the control
   input; a fed value is a ``_Recv`` with ``client_terminated=True`` on
   every task that reads it (``x/_recv_0``, TF's ``_recv_x_0`` made a valid
   flowbook name; its ``tensor_name`` the fed tensor's, ``x:0``), the value travelling with that task's call;
4. **lists, per task**, what its call feeds and fetches: a fetched tensor
   comes back from the task that makes it, and only from there; a fetched
   tensor that is also fed is answered by the client itself.

    >>> import flowbook as fb
    >>> from flowbook.runtime.plan import build_plan
    >>> with fb.Graph().as_default() as g:
    ...     with fb.device("/job:ps/task:0"):
    ...         w = fb.constant(2.0, name="w")
    ...     with fb.device("/job:worker/task:0"):
    ...         y = fb.multiply(w, 3.0, name="y")
    >>> plan = build_plan(g, [y], (), (), lambda op: None)
    >>> tasks = [("ps", 0), ("worker", 0)]
    >>> parts = partition(g, plan.ops, [y], [], tasks).parts
    >>> [(n.name, n.op) for n in graph_def(parts["/job:ps/replica:0/task:0"]).node]
    [('w', 'Const'), ('w/_0', '_Send')]
    >>> [(n.name, n.op) for n in graph_def(parts["/job:worker/replica:0/task:0"]).node]
    [('Const', 'Const'), ('y', 'Mul'), ('w/_1', '_Recv')]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from flowbook.distributed.cluster import task_name, task_of_spec
from flowbook.framework import dtypes
from flowbook.framework.devices import DeviceSpec
from flowbook.framework.errors import InvalidArgumentError
from flowbook.framework.tensor import Operation, Tensor
from flowbook.graph_io import graph_def as gdef
from flowbook.runtime.plan import is_snapshot

__all__ = ["Part", "Partitioned", "assign_tasks", "default_task", "graph_def", "partition"]

CLIENT = "/job:localhost/replica:0/task:0/device:CPU:0"  # the client's device, as TF names it


@dataclass
class Part:
    """One task's share of a run: its GraphDef and what its call feeds and fetches."""

    task: str  # "/job:ps/replica:0/task:0"
    graph_def: Any  # the GraphDef proto (serialized once, when first sent)
    feeds: list[int] = field(default_factory=list)  # indices of the run's feeds read here
    feed_names: list[str] = field(default_factory=list)  # their tensor names ("x:0")
    fetches: list[int] = field(default_factory=list)  # indices of the run's fetches made here
    fetch_names: list[str] = field(default_factory=list)  # their names in the partition
    sends: list[str] = field(default_factory=list)  # the _Send nodes (run as targets)


@dataclass
class Partitioned:
    """A run split over tasks (:func:`partition`)."""

    parts: dict[str, Part]  # task -> its partition (only tasks with work in the run)
    fed_fetches: dict[int, int]  # fetch index -> feed index: fetched and fed, answered locally
    where: dict[str, str]  # op name -> its task (for logs and tests)
    edges: int  # Send/Recv pairs between tasks (the whitepaper's cut edges)


def graph_def(part: Part) -> Any:
    """The GraphDef proto of one partition."""
    return part.graph_def


def default_task(tasks: Sequence[tuple[str, int]]) -> tuple[str, int]:
    """Where an op naming no job runs: the worker (or chief) job's first task, else the first.

    >>> default_task([("ps", 0), ("worker", 1), ("worker", 0)])
    ('worker', 0)
    """
    for job in ("worker", "chief", "master", "localhost"):
        mine = sorted(k for j, k in tasks if j == job)
        if mine:
            return job, mine[0]
    return sorted(tasks)[0]


def assign_tasks(
    ops: Sequence[Operation], fed: set[Tensor], tasks: Sequence[tuple[str, int]]
) -> dict[Operation, str]:
    """Each op's task name, in the plan's order (producers first).  See the module docstring."""
    known = set(tasks)
    default = default_task(tasks)
    where: dict[Operation, str] = {}
    for op in ops:
        refs = op._opdef.ref_inputs
        host = None
        if refs and refs[0] < len(op.inputs) and op.inputs[refs[0]] not in fed:
            host = where.get(op.inputs[refs[0]].op)  # updates run where the variable lives
        elif is_snapshot(op) and op.inputs[0] not in fed:
            host = where.get(op.inputs[0].op)  # W/read lives with W
        elif op.inputs and op.inputs[0].op._opdef.resource == "container":
            host = where.get(op.inputs[0].op)  # a queue's (accumulator's) ops live with it
        if host is None:
            job, k = task_of_spec(DeviceSpec.from_string(op.device), default)
            if (job, k) not in known:
                raise _no_such_task(op, job, k, tasks)
            host = task_name(job, k)
        where[op] = host
    return where


def _no_such_task(op: Operation, job: str, k: int, tasks: Sequence[tuple[str, int]]) -> Exception:
    names = ", ".join(task_name(j, t) for j, t in sorted(tasks))
    return InvalidArgumentError(
        None,
        op,
        f"{op.describe()}: Cannot assign a device for operation {op.name}: it was assigned to "
        f"'{op.device}', /job:{job}/task:{k}, but the cluster's tasks are [ {names} ]. Name "
        "the Dask workers after their tasks ('ps-0', 'worker-1') or change the device scope.",
    )


def _device_on(task: str, op_device: str) -> str:
    """``op_device``'s device type and index, on ``task``."""
    spec = DeviceSpec.from_string(op_device)
    kind = spec.device_type or "CPU"
    index = spec.device_index if spec.device_type is not None else 0
    return f"{task}/device:{kind}:{'*' if index is None else index}"


class _Builder:
    """The GraphDefs being written, one per task, and the Send/Recv pairs made so far."""

    def __init__(self, graph: Any, where: dict[Operation, str], fed: dict[Tensor, int]) -> None:
        _, graph_pb2, _, _ = gdef._pb()
        self.graph_pb2 = graph_pb2
        self.nodes = {n.name: n for n in gdef.to_graph_def(graph).node}  # the client's NodeDefs
        self.where = where  # op -> task
        self.fed = fed  # fed tensor -> its index among the run's feeds
        self.parts: dict[str, Part] = {}
        self.recvs: dict[tuple[Any, str], str] = {}  # (tensor or control op, task) -> Recv name
        self.counter = 0  # numbers the new nodes ({op}/_{n})
        self.edges = 0  # Send/Recv pairs made

    def part(self, task: str) -> Part:
        p = self.parts.get(task)
        if p is None:
            p = self.parts[task] = Part(task, self.graph_pb2.GraphDef())
        return p

    def name(self, base: str) -> str:
        n, self.counter = self.counter, self.counter + 1
        return f"{base}/_{n}"

    def add_op(self, op: Operation) -> None:
        task = self.where[op]
        node = self.part(task).graph_def.node.add()
        node.CopyFrom(self.nodes[op.name])
        node.device = _device_on(task, op.device)
        del node.input[:]
        node.input.extend(self.source(t, task) for t in op.inputs)
        node.input.extend("^" + self.control_source(c, task) for c in op.control_inputs)

    def source(self, t: Tensor, task: str) -> str:
        """The name ``t`` has in ``task``'s partition (itself, its Recv, or its feed's Recv)."""
        if t in self.fed:
            return self.feed_recv(t, task)
        if self.where[t.op] == task:
            return gdef._input_name(t)
        key = (t, task)
        if key not in self.recvs:
            self.recvs[key] = self.send_recv(gdef._input_name(t), t, self.where[t.op], task)
        return self.recvs[key]

    def control_source(self, c: Operation, task: str) -> str:
        src = self.where[c]
        if src == task:
            return c.name
        key = (c, task)
        if key not in self.recvs:
            dummy = self.part(src).graph_def.node.add(name=self.name(c.name), op="Const")
            dummy.device = f"{src}/device:CPU:0"
            dummy.input.append("^" + c.name)
            gdef._set_attr(dummy.attr["dtype"], _F32)
            gdef._set_attr(dummy.attr["value"], np.zeros((), np.float32))
            self.recvs[key] = self.send_recv(dummy.name, None, src, task)
        return self.recvs[key]

    def send_recv(self, value: str, t: Tensor | None, src: str, dst: str) -> str:
        """A _Send of ``value`` on ``src`` and its _Recv on ``dst``; the Recv's name."""
        base = value.rpartition(":")[0] if ":" in value else value
        tensor_name = f"edge_{self.edges}_{base}"
        self.edges += 1
        attrs = {
            "tensor_name": tensor_name,
            "send_device": f"{src}/device:CPU:0",
            "send_device_incarnation": 1,
            "recv_device": f"{dst}/device:CPU:0",
            "client_terminated": False,
        }
        dtype, shape = (t.dtype, t._shape) if t is not None else (_F32, ())
        send = self.part(src).graph_def.node.add(name=self.name(base), op="_Send")
        send.device, send.input[:] = attrs["send_device"], [value]
        self._attrs(send, {**attrs, "T": dtype})
        self.part(src).sends.append(send.name)
        return self._recv(dst, self.name(base), attrs, dtype, shape)

    def feed_recv(self, t: Tensor, task: str) -> str:
        key = (t, task)
        if key not in self.recvs:
            attrs = {
                "tensor_name": t.name,
                "send_device": CLIENT,
                "send_device_incarnation": 1,
                "recv_device": f"{task}/device:CPU:0",
                "client_terminated": True,
            }
            name = f"{t.op.name}/_recv_{t.value_index}"  # TF's _recv_x_0, as a valid op name
            self.recvs[key] = self._recv(task, name, attrs, t.dtype, t._shape)
            part = self.part(task)
            part.feeds.append(self.fed[t])
            part.feed_names.append(t.name)
        return self.recvs[key]

    def _recv(self, task: str, name: str, attrs: dict, dtype: Any, shape: Any) -> str:
        recv = self.part(task).graph_def.node.add(name=name, op="_Recv")
        recv.device = attrs["recv_device"]
        self._attrs(recv, {**attrs, "tensor_type": dtype})
        gdef._shape_proto(shape, recv.attr["shape"].shape)
        return name

    @staticmethod
    def _attrs(node: Any, attrs: dict[str, Any]) -> None:
        for k, v in attrs.items():
            gdef._set_attr(node.attr[k], v)


_F32 = dtypes.float32


def partition(
    graph: Any,
    ops: Sequence[Operation],
    fetches: Sequence[Tensor | Operation],
    feeds: Sequence[Tensor],
    tasks: Sequence[tuple[str, int]],
) -> Partitioned:
    """Split the pruned ``ops`` of a run over ``tasks`` (``(job, index)`` pairs)."""
    fed = {t: k for k, t in enumerate(feeds)}
    where = assign_tasks(ops, set(fed), tasks)
    b = _Builder(graph, where, fed)
    for op in ops:
        b.add_op(op)
    fed_fetches: dict[int, int] = {}
    for i, f in enumerate(fetches):
        if isinstance(f, Tensor) and f in fed:
            fed_fetches[i] = fed[f]
            continue
        part = b.part(where[f.op if isinstance(f, Tensor) else f])
        part.fetches.append(i)
        part.fetch_names.append(f.name)
    return Partitioned(b.parts, fed_fetches, {op.name: t for op, t in where.items()}, b.edges)
