"""The task server: one long-lived object per task, on its Dask worker, holding that task's state.

A :class:`TaskServer` is a Dask actor (``client.submit(TaskServer, ...,
actor=True, workers=[address])``, published on the scheduler under
``flowbook-task-{job}-{k}`` so every session and every client of the cluster
finds the same one).  It owns, for as long as the worker lives:

- ``variables``: each variable's ``VarState``, by name, so a variable stays
  on its ps task across runs, across sessions and across clients (between-
  graph replication: every worker's graph names the same ``w`` on the ps);
- ``cells``: its queues and readers, by container and shared name;
- ``partitions``: the partitions registered with it, each imported once from
  its GraphDef into a graph of its own with a :class:`TaskSession` whose
  plans (and compiled straight lines) are kept across runs;
- ``rendezvous``: where the partitions' Send and Recv kernels meet
  (``flowbook.distributed.sendrecv``).

**A step** is one call per task from the client: ``run(step, key, feeds)``
(plus the GraphDef the first time).  It runs on the server's thread pool,
not on the worker's event loop, so the worker keeps serving: its client-fed
values go into the rendezvous, the partition runs (Recvs park until their
values arrive), fetched values are returned, and the step waits until every
value it sent was delivered.  Steps of several clients run side by side.
A Send delivers straight to the receiving task's server, worker to worker,
with the call a Dask actor handle makes (``actor_execute`` over the
worker's connection pool); nothing passes through the client or the
scheduler.  ``deliver`` and ``abort`` are coroutines: they run on the
worker's event loop at once, even while every pool thread waits.

An error in a partition comes back as a :class:`RemoteOpError` (the error
code, the failing op's name, the message and the task), which the client
turns into TF's error class naming its own op and the line that made it.

    >>> RemoteOpError(3, "y", "bad", "/job:ps/replica:0/task:0").code
    3
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from flowbook.config import ConfigProto, RunOptions
from flowbook.devices import DeviceSpec
from flowbook.distributed.cluster import task_name
from flowbook.distributed.dist_trace import TaskRecorder, now
from flowbook.distributed.sendrecv import Rendezvous
from flowbook.errors import NotFoundError, OpError, UnavailableError
from flowbook.graph import Graph
from flowbook.graph_def_import import import_graph_def
from flowbook.resources import ResourceCell
from flowbook.session import BaseSession
from flowbook.tensor import Operation
from flowbook.var_state import VarState

__all__ = ["RemoteOpError", "TaskServer", "TaskSession"]

MAX_STEPS = 32  # steps one task runs at once (the server's pool threads)
MAX_PARTITIONS = 1024  # partitions kept per task; the least recently run go first
DELIVERY_TIMEOUT_S = 60.0  # longest wait for a sent value to reach its task


class RemoteOpError(Exception):
    """An OpError raised on a task, as it travels back to the client."""

    def __init__(self, code: int, op_name: str | None, message: str, task: str) -> None:
        super().__init__(f"{task}: {message}")
        self.code = code  # TF's error code (errors.INVALID_ARGUMENT...)
        self.op_name = op_name  # the failing op's name in the partition, or None
        self.message = message  # the message, without the partition op's description
        self.task = task  # the task it happened on

    def __reduce__(self) -> tuple:
        return (RemoteOpError, (self.code, self.op_name, self.message, self.task))

    @classmethod
    def of(cls, error: OpError, task: str) -> RemoteOpError:
        op, message = error.op, error.message
        if op is not None and message.startswith(op.describe() + ": "):
            message = message[len(op.describe()) + 2 :]
        return cls(error.error_code, getattr(op, "name", None), message, task)


class TaskSession(BaseSession):
    """A partition's session on its task: variables and queues are the task server's.

    ``fb.observe``'s process-wide observers do not watch it: a client in the
    same process (an in-process ``LocalCluster``) sees its step as the
    client's plan, with the tasks' reports (``flowbook.distributed.dist_watch``).
    """

    observed = False

    def __init__(self, server: TaskServer, graph: Graph) -> None:
        super().__init__("", graph, ConfigProto(allow_soft_placement=True))
        self.server = server  # whose variables, cells and rendezvous this session uses

    def _variable_state(self, var_op: Operation) -> VarState:
        return self.server.variable(var_op)

    def _cell(self, op: Operation) -> ResourceCell:
        return self.server.cell(op)

    def _bind_on(self, op: Operation, device: Any) -> Any:
        if op._opdef.resource == "rendezvous":
            attrs = {**op.attrs, "rendezvous": self.server.rendezvous}
            return op._opdef.bound_kernel(device.xp, attrs)
        return super()._bind_on(op, device)


class _Registered:
    """One partition, imported: its session and what its runs fetch."""

    __slots__ = ("feed_names", "fetches", "n_fetched", "session")

    def __init__(
        self, session: TaskSession, feed_names: list[str], fetch_names: list[str], sends: list[str]
    ) -> None:
        self.session = session  # plans are cached here, run after run
        self.feed_names = feed_names  # the client-fed tensors its Recvs take, in the call's order
        self.fetches = [*fetch_names, *sends]  # fetched tensors, then the Sends as targets
        self.n_fetched = len(fetch_names)  # how many of them go back to the client


class TaskServer:
    """One task's long-lived server on its Dask worker (a Dask actor).  See the module docstring."""

    def __init__(self, job: str, task: int) -> None:
        from distributed import get_worker  # lazy: dask is an optional extra

        self.worker = get_worker()  # the Dask worker this server lives on
        self.name = task_name(job, task)  # "/job:ps/replica:0/task:0"
        self.variables: dict[str, VarState] = {}  # variable name -> its value on this task
        self.cells: dict[tuple, ResourceCell] = {}  # (container, shared name) -> queue, reader
        self.partitions: OrderedDict[str, _Registered] = OrderedDict()  # key -> partition
        self.peers: dict[str, tuple[str, str]] = {}  # task name -> (worker address, actor key)
        self.rendezvous = Rendezvous(self._deliver)
        self.pool = ThreadPoolExecutor(MAX_STEPS, thread_name_prefix=f"flowbook{self.name}")
        self.lock = threading.Lock()  # guards the dicts above
        self.counts = {"steps": 0, "sent_bytes": 0, "returned_bytes": 0}  # for tests, benchmarks

    # ------------------------------------------------------------ state
    def variable(self, op: Operation) -> VarState:
        with self.lock:
            state = self.variables.get(op.name)
            if state is None:
                state = self.variables[op.name] = VarState(op)
            return state

    def cell(self, op: Operation) -> ResourceCell:
        shared = op.attrs.get("shared_name", "") or op.name
        key = (op.attrs.get("container", "") or "", shared)
        with self.lock:
            cell = self.cells.get(key)
            if cell is None:
                cell = self.cells[key] = ResourceCell(*key)
            return cell

    # ------------------------------------------------------------ steps
    async def run(
        self, step: int, key: str, feeds: list, graph: Any = None, peers: Any = None,
        timeout_ms: int = 0, report: int = 0,
    ) -> list:  # fmt: skip
        """Run partition ``key`` for ``step``; the values it fetches, in order.

        ``report`` 1 or 2 (a watched step): ``[values, report]`` instead, the
        report a ``dist_trace.TaskReport`` (2: with every kernel's timing).
        """
        t_in = now()
        loop = asyncio.get_running_loop()
        out = await loop.run_in_executor(
            self.pool, self._run, step, key, feeds, graph, peers, timeout_ms, report
        )
        if not report:
            return out
        values, (start, end, kernels) = out
        return [values, (t_in, start, end, now(), kernels)]  # a dist_trace.TaskReport

    def _run(
        self, step: int, key: str, feeds: list, graph: Any, peers: Any, timeout_ms: int,
        report: int = 0,
    ) -> Any:  # fmt: skip
        if peers:
            with self.lock:
                self.peers.update(peers)
        r = self.rendezvous
        try:
            part = self._partition(key, graph)
            for name, value in zip(part.feed_names, feeds):
                r.put(step, name, value)
            recorder = TaskRecorder() if report >= 2 else None  # its kernels' timings
            options = RunOptions(timeout_in_ms=timeout_ms) if timeout_ms or recorder else None
            start = now()
            with r.stepping(step):
                values = part.session.run(part.fetches, options=options, run_metadata=recorder)
            end = now()
            for call in r.sent(step):
                call.result(DELIVERY_TIMEOUT_S)
        except OpError as e:
            raise RemoteOpError.of(e, self.name) from None
        except (OSError, TimeoutError) as e:
            raise RemoteOpError.of(UnavailableError(None, None, str(e)), self.name) from None
        finally:
            r.end(step)
        out = values[: part.n_fetched]
        with self.lock:
            self.counts["steps"] += 1
            self.counts["returned_bytes"] += sum(getattr(v, "nbytes", 0) for v in out)
        if report:
            return out, (start, end, recorder.kernels() if recorder is not None else None)
        return out

    def _partition(self, key: str, graph: Any) -> _Registered:
        with self.lock:
            part = self.partitions.get(key)
            if part is not None:
                self.partitions.move_to_end(key)
                return part
        if graph is None:
            raise NotFoundError(None, None, f"partition {key} is not registered on {self.name}")
        graph_bytes, feed_names, fetch_names, sends = graph
        g = Graph()
        with g.as_default():
            import_graph_def(graph_bytes, name="")
        part = _Registered(TaskSession(self, g), feed_names, fetch_names, sends)
        with self.lock:
            self.partitions[key] = part
            while len(self.partitions) > MAX_PARTITIONS:
                self.partitions.popitem(last=False)
        return part

    def _deliver(self, step: int, recv_device: str, tensor_name: str, value: Any) -> Any:
        """Send ``value`` to the server of ``recv_device``'s task (worker to worker)."""
        spec = DeviceSpec.from_string(recv_device)
        task = task_name(spec.job or "", spec.task or 0)
        address, key = self.peers[task]
        with self.lock:
            self.counts["sent_bytes"] += getattr(value, "nbytes", 0)
        call = self._call(address, key, "deliver", step, tensor_name, value)
        return asyncio.run_coroutine_threadsafe(call, self.worker.loop.asyncio_loop)

    async def _call(self, address: str, key: str, function: str, *args: Any) -> Any:
        from distributed.protocol import to_serialize  # lazy: dask is an optional extra

        result = await self.worker.rpc(address).actor_execute(
            actor=key, function=function, args=[to_serialize(a) for a in args], kwargs={}
        )
        if result["status"] != "OK":
            raise result["exception"]
        return result["result"]

    async def deliver(self, step: int, tensor_name: str, value: Any) -> None:
        """A value sent to this task for ``step`` (called by the sending task's server)."""
        self.rendezvous.put(step, tensor_name, value)

    async def abort(self, step: int, why: str) -> None:
        """Another task of ``step`` failed: fail this task's Recvs waiting in it."""
        self.rendezvous.abort(step, why)

    # --------------------------------------------------------- housekeeping
    async def release(self, keys: list[str]) -> None:
        """Forget partitions (their session closed); variables stay."""
        with self.lock:
            parts = [self.partitions.pop(k) for k in keys if k in self.partitions]
        for part in parts:
            part.session.close()

    async def reset(self) -> None:
        """Drop every variable's value, queue and reader of this task (``Session.reset``)."""
        with self.lock:
            cells = list(self.cells.values())
            self.variables.clear()
        for cell in cells:
            cell.release("its container was reset")

    async def variable_values(self) -> dict[str, Any]:
        """The initialised variables on this task, by name (what lives here)."""
        with self.lock:
            return {k: v.value for k, v in self.variables.items() if v.value is not None}

    async def stats(self) -> dict[str, int]:
        """Steps run here, bytes sent to other tasks and returned to clients; steps open."""
        with self.lock:
            return {**self.counts, "open_steps": self.rendezvous.pending_steps()}
