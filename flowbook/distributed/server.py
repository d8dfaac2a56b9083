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
(plus the GraphDef the first time).  Its client-fed values go into the
rendezvous, then the partition runs one of two ways:

- a partition that **receives first** (the client's analysis,
  ``flowbook.distributed.stages``) waits on the event loop until every
  value it receives has arrived (``Rendezvous.when_all``), then runs in one
  go, never parking a Recv: on the event loop itself when its runs are
  quick (under ``INLINE_MAX_S``, measured after ``POOL_RUNS`` runs in the
  pool, and it has no queue or reader op that may wait), which saves the
  two thread hops of a pool run; else on the server's pool;
- any other partition runs on the server's thread pool, not on the
  worker's event loop, so the worker keeps serving: its Recvs park until
  their values arrive.

Fetched values are returned; steps of several clients run side by side.
A Send is a one-way message straight to the receiving task's server,
worker to worker (``actor_execute`` with ``reply=False`` over the worker's
connection pool); nothing passes through the client or the scheduler, and
no acknowledgement comes back: the receiving partition's own success is
the proof of delivery, and a send that fails aborts the step here and
there (its Recv fails at once).  ``deliver`` and ``abort`` are coroutines:
they run on the worker's event loop at once, even while every pool thread
waits.

An error in a partition comes back as a :class:`RemoteOpError` (the error
code, the failing op's name, the message and the task), which the client
turns into TF's error class naming its own op and the line that made it.

    >>> RemoteOpError(3, "y", "bad", "/job:ps/replica:0/task:0").code
    3
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from flowbook.distributed.cluster import task_name
from flowbook.distributed.dist_trace import TaskRecorder, now
from flowbook.distributed.sendrecv import Rendezvous
from flowbook.framework.devices import DeviceSpec
from flowbook.framework.errors import DeadlineExceededError, NotFoundError, OpError
from flowbook.framework.graph import Graph
from flowbook.framework.tensor import Operation
from flowbook.graph_io.graph_def_import import import_graph_def
from flowbook.runtime.config import ConfigProto, RunOptions
from flowbook.runtime.session import BaseSession
from flowbook.state.resources import ResourceCell
from flowbook.state.var_state import VarState

__all__ = ["RemoteOpError", "TaskServer", "TaskSession"]

MAX_STEPS = 32  # steps one task runs at once (the server's pool threads)
MAX_PARTITIONS = 1024  # partitions kept per task; the least recently run go first
INLINE_MAX_S = 0.002  # a receive-first partition whose runs take less runs on the event loop
POOL_RUNS = 2  # runs of a partition on the pool before it may run on the loop (the first compiles)


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
    """One partition, imported: its session, what its runs fetch, and where they run."""

    __slots__ = (
        "feed_names",
        "fetches",
        "first",
        "may_inline",
        "n_fetched",
        "quick",
        "recvs",
        "runs",
        "session",
    )

    def __init__(
        self,
        session: TaskSession,
        feed_names: list[str],
        fetch_names: list[str],
        sends: list[str],
        first: bool,
    ) -> None:
        ops = session.graph.get_operations()
        self.session = session  # plans are cached here, run after run
        self.feed_names = feed_names  # the client-fed tensors its Recvs take, in the call's order
        self.fetches = [*fetch_names, *sends]  # fetched tensors, then the Sends as targets
        self.n_fetched = len(fetch_names)  # how many of them go back to the client
        self.first = first  # it receives first: wait for every value, then run in one go
        self.recvs = [  # the tensor names its task-to-task Recvs wait for
            op.attrs["tensor_name"]
            for op in ops
            if op.type == "_Recv" and not op.attrs.get("client_terminated")
        ]
        # no op that may wait (queues, readers) but the Recvs, which have their values first
        self.may_inline = first and not any(op._opdef.blocking and op.type != "_Recv" for op in ops)
        self.runs = 0  # runs so far
        self.quick = False  # its last run was short enough to run on the event loop

    def timed(self, seconds: float) -> None:
        self.runs += 1
        self.quick = self.may_inline and self.runs >= POOL_RUNS and seconds < INLINE_MAX_S


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
        self.pushes: dict[int, list[Any]] = {}  # step -> its sends being written (futures)
        self.counts = {"steps": 0, "sent_bytes": 0, "returned_bytes": 0, "registered": 0}

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
        self,
        step: int,
        key: str,
        feeds: list,
        graph: Any = None,
        peers: Any = None,
        timeout_ms: int = 0,
        report: int = 0,
    ) -> list:
        """Run partition ``key`` for ``step``; the values it fetches, in order.

        ``report`` 1 or 2 (a watched step): ``[values, report]`` instead, the
        report a ``dist_trace.TaskReport`` (2: with every kernel's timing).
        """
        t_in = now()
        loop = asyncio.get_running_loop()
        if peers:
            with self.lock:
                self.peers.update(peers)
        r = self.rendezvous
        try:
            part = self._known(key)
            if part is None:
                part = await loop.run_in_executor(self.pool, self._register, key, graph)
            for name, value in zip(part.feed_names, feeds):
                r.put(step, name, value)
            if part.first and part.recvs:
                await self._arrived(step, part.recvs, timeout_ms)
            if part.quick:
                out = self._run(step, part, timeout_ms, report)
            else:
                out = await loop.run_in_executor(
                    self.pool, self._run, step, part, timeout_ms, report
                )
            await self._written(step)
        except OpError as e:
            raise RemoteOpError.of(e, self.name) from None
        finally:
            r.end(step)
            with self.lock:
                self.pushes.pop(step, None)
        if not report:
            return out
        values, (start, end, kernels) = out
        return [values, (t_in, start, end, now(), kernels)]  # a dist_trace.TaskReport

    async def _written(self, step: int) -> None:
        """Wait until this step's sends are written to their connections (not delivered:
        the receiving partition's success says that); bytes written reach a peer even if
        this process dies next."""
        with self.lock:
            pushes = self.pushes.pop(step, [])
        for push in pushes:
            await (asyncio.wrap_future(push) if not isinstance(push, asyncio.Future) else push)

    async def _arrived(self, step: int, names: list[str], timeout_ms: int) -> None:
        """Wait (on the event loop) until the values ``names`` of ``step`` are all here."""
        gate = self.rendezvous.when_all(step, names)
        if not gate.done:
            loop = asyncio.get_running_loop()
            woken = loop.create_future()
            gate.then(lambda *_: loop.call_soon_threadsafe(_wake, woken))
            try:
                await asyncio.wait_for(woken, timeout_ms / 1000 if timeout_ms else None)
            except TimeoutError:
                raise DeadlineExceededError(
                    None,
                    None,
                    f"Step {step} on {self.name}: the values {names} did not "
                    f"arrive within {timeout_ms} ms",
                ) from None
        if gate.error is not None:
            raise gate.error

    def _run(self, step: int, part: _Registered, timeout_ms: int, report: int = 0) -> Any:
        recorder = TaskRecorder() if report >= 2 else None  # its kernels' timings
        options = RunOptions(timeout_in_ms=timeout_ms) if timeout_ms or recorder else None
        start, began = now(), time.perf_counter()
        with self.rendezvous.stepping(step):
            values = part.session.run(part.fetches, options=options, run_metadata=recorder)
        part.timed(time.perf_counter() - began)
        end = now()
        out = values[: part.n_fetched]
        with self.lock:
            self.counts["steps"] += 1
            self.counts["returned_bytes"] += sum(getattr(v, "nbytes", 0) for v in out)
        if report:
            return out, (start, end, recorder.kernels() if recorder is not None else None)
        return out

    def _known(self, key: str) -> _Registered | None:
        with self.lock:
            part = self.partitions.get(key)
            if part is not None:
                self.partitions.move_to_end(key)
            return part

    def _register(self, key: str, graph: Any) -> _Registered:
        if graph is None:
            raise NotFoundError(None, None, f"partition {key} is not registered on {self.name}")
        graph_bytes, feed_names, fetch_names, sends, first = graph
        g = Graph()
        with g.as_default():
            import_graph_def(graph_bytes, name="")
        part = _Registered(TaskSession(self, g), feed_names, fetch_names, sends, first)
        with self.lock:
            self.counts["registered"] += 1  # partitions imported (each compiles anew)
            self.partitions[key] = part
            while len(self.partitions) > MAX_PARTITIONS:
                self.partitions.popitem(last=False)
        return part

    def _deliver(self, step: int, recv_device: str, tensor_name: str, value: Any) -> None:
        """Send ``value`` to the server of ``recv_device``'s task (worker to worker, one way)."""
        spec = DeviceSpec.from_string(recv_device)
        task = task_name(spec.job or "", spec.task or 0)
        with self.lock:
            address, key = self.peers[task]
            self.counts["sent_bytes"] += getattr(value, "nbytes", 0)
        push = self._push(address, key, task, step, tensor_name, value)
        loop = self.worker.loop.asyncio_loop
        if asyncio._get_running_loop() is loop:  # a partition running on the event loop
            pushing: Any = loop.create_task(push)
        else:
            pushing = asyncio.run_coroutine_threadsafe(push, loop)
        with self.lock:
            self.pushes.setdefault(step, []).append(pushing)

    async def _push(
        self, address: str, key: str, task: str, step: int, tensor_name: str, value: Any
    ) -> None:
        from distributed.protocol import to_serialize  # lazy: dask is an optional extra

        try:
            await self._post(address, key, "deliver", step, tensor_name, to_serialize(value))
        except Exception as e:  # the receiver is gone, or the value does not travel
            why = f"{self.name} could not send '{tensor_name}' to {task}: {e}"
            self.rendezvous.abort(step, why)
            with contextlib.suppress(Exception):
                await self._post(address, key, "abort", step, why)

    async def _post(self, address: str, key: str, function: str, *args: Any) -> None:
        """Call ``function`` of the server ``key`` on ``address``, not waiting for an answer."""
        await self.worker.rpc(address).actor_execute(
            actor=key, function=function, args=list(args), kwargs={}, reply=False
        )

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
        """Steps run here, bytes sent to other tasks and returned to clients, partitions
        registered so far; steps open, partitions held."""
        with self.lock:
            return {
                **self.counts,
                "open_steps": self.rendezvous.pending_steps(),
                "partitions": len(self.partitions),
            }


def _wake(future: asyncio.Future) -> None:
    if not future.done():
        future.set_result(None)
