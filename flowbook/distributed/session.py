"""A session on a Dask cluster: ``tf.Session("dask://host:8786")`` or ``tf.Session(client)``.

``tf.Session(target)`` with a Dask target makes a :class:`DaskSession`
(``flowbook.session.Session`` asks ``hooks.cluster_session`` for the class).
Connecting, it:

1. finds the cluster's tasks in its workers' names (:func:`map_workers`,
   ``flowbook.distributed.task_servers``): a worker named ``ps-0``,
   ``worker-1``, ``ps:0`` or ``/job:ps/task:0`` is that task; workers with
   other names (a plain ``LocalCluster``'s 0, 1, 2) become ``worker`` tasks
   in name order.  ``session.cluster`` is the resulting ``ClusterSpec``
   (job -> Dask worker addresses);
2. finds or starts one ``TaskServer`` actor per task, on its worker,
   published on the scheduler so later sessions and other clients reach
   the same servers (and the same variables).

**A run** flattens fetches and checks feeds as a local session does, then
looks up its distributed plan, built once per (fetches, feeds, graph
version): the pruned ops (``flowbook.run.plan.build_plan``) split over the
tasks with Send/Recv pairs (``flowbook.distributed.partition``), which
tasks receive first and which variable updates wait for the step's values
(``flowbook.distributed.stages``).  The step is one Dask call per task that
has work in it, all sent at once from one coroutine on the client's event
loop (``actor_execute`` on the task server, straight over the client's
connection pool): ``run(step, key, feeds)``, a few bytes and the fed values,
carrying the partition's GraphDef and the peer table only the first time a
task sees that plan.  Each task gets only the fed values its partition
reads and returns only the fetched values it makes; intermediate values
move between tasks, worker to worker.  ``calls`` counts the calls made.

**Failures.**  If a task fails, the others are told to abort the step
(their waiting Recvs fail at once) and the error is raised as TensorFlow's
class, naming the client's op, its line and the task.  A task whose Dask
worker is lost (its connection closes, or no connection opens within
``CONNECT_S``) fails the step with ``UnavailableError`` naming it, as soon
as the client notices.  The session stays usable: the next run waits (up to
``SERVER_START_S``) for Dask to bring back a worker of the same name, starts
a new task server there -- its variables uninitialised, so a chief restores
them from a checkpoint (``flowbook.distributed.recovery``) -- and registers
its partitions again.

The client's Dask calls go straight to the workers: a session that makes
its own ``Client`` asks for ``direct_to_workers``, and a ``Client`` passed
in with that left unset (None) is switched to it.

    >>> map_workers({"tcp://a:1": {"name": "ps-0"}, "tcp://b:1": {"name": 0}}).as_dict()
    {'ps': ['tcp://a:1'], 'worker': ['tcp://b:1']}
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
import secrets
import sys
import threading
import time
from typing import Any

from flowbook import errors, hooks
from flowbook.config import ConfigProto, RunOptions
from flowbook.distributed.cluster import ClusterSpec, task_name
from flowbook.distributed.dist_repr import session_html
from flowbook.distributed.dist_trace import ClockSync
from flowbook.distributed.dist_watch import StepWatch, remember
from flowbook.distributed.partition import Partitioned, partition
from flowbook.distributed.server import RemoteOpError
from flowbook.distributed.server_api import wait_for_tasks
from flowbook.distributed.stages import gate_updates, receive_first
from flowbook.distributed.task_servers import (
    SERVER_START_S,
    await_tasks,
    map_workers,
    start_servers,
)
from flowbook.graph import Graph
from flowbook.run.observers import Observer, observers_for
from flowbook.run.plan import build_plan
from flowbook.run.values import flatten, rebuild, to_numpy
from flowbook.session import Session, _DeviceAttributes, _observers

__all__ = ["SERVER_START_S", "DaskSession", "is_cluster_target", "map_workers"]

ABORT_WAIT_S = 10.0  # after a task failed, the longest wait for the others to stop
CONNECT_S = 5.0  # longest wait for a connection to a task's worker (a lost one refuses)
MAX_PLANS = 256  # distributed plans kept per session


def is_cluster_target(target: Any) -> bool:
    """Whether ``tf.Session(target)`` means a Dask cluster: ``"dask://..."`` or a Client.

    >>> is_cluster_target("dask://127.0.0.1:8786"), is_cluster_target(""), is_cluster_target(None)
    (True, False, False)
    """
    if isinstance(target, str | bytes):
        return (target.decode() if isinstance(target, bytes) else target).startswith("dask://")
    return target is not None


def _client_for(target: Any) -> tuple[Any, bool]:
    """A Dask Client for ``target`` and whether this session made it (and closes it)."""
    from distributed import Client  # lazy: dask is an optional extra

    if isinstance(target, bytes):
        target = target.decode()
    if isinstance(target, str):  # "dask://host:port", or "dask://" + a full Dask address
        address = target[len("dask://") :]
        address = address if "://" in address else "tcp://" + address
        return Client(address, direct_to_workers=True, set_as_default=False), True
    if isinstance(target, Client):
        if target.direct_to_workers is None:
            target.direct_to_workers = True
        return target, False
    if hasattr(target, "scheduler_address"):  # a LocalCluster, SpecCluster...
        return Client(target, direct_to_workers=True, set_as_default=False), True
    raise TypeError(
        f"A cluster target is 'dask://host:port' or a distributed.Client, not {target!r}"
    )


class _DistPlan:
    """A run signature split over tasks: its partitions, their keys and what to send first."""

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


class DaskSession(Session):
    """A TF1 session whose graph runs on the tasks of a Dask cluster.  See the module docstring."""

    def __init__(
        self, target: Any = "", graph: Graph | None = None, config: ConfigProto | None = None
    ) -> None:
        super().__init__("", graph, config)
        self.target = target
        self._client, self._owns_client = _client_for(target)
        try:
            workers = wait_for_tasks(self._client, target)  # a tf.train.Server's cluster: all
        except BaseException:
            if self._owns_client:
                self._client.close()
            raise
        self.cluster = map_workers(workers)  # job -> the Dask worker address of each task
        # task name -> its TaskServer actor; the futures keep the actors alive meanwhile
        self._servers, self._server_futures = start_servers(self._client, self.cluster)
        self._peers = {t: (a._address, a.key) for t, a in self._servers.items()}
        self._lost: set[str] = set()  # tasks whose worker was lost; the next run finds them
        self.calls: collections.Counter[str] = collections.Counter()  # Dask calls by method
        self._dplans: dict[tuple, _DistPlan] = {}  # run signature -> its distributed plan
        self._registered: set[tuple[str, str]] = set()  # (task, key) known there
        self._lock = threading.Lock()  # guards the two above and the counters
        self._prefix = f"{secrets.token_hex(6)}/"  # this session's partition keys begin so
        self._plan_ids = itertools.count()
        self._steps = itertools.count(secrets.randbits(40) << 20)  # unique step ids
        self.last_step: dict[str, Any] = {}  # the last step: tasks called, values per task
        self._in_flight: set[int] = set()  # steps sent, not yet answered (close aborts them)
        self.clock = ClockSync()  # each task's clock against ours, from watched steps' replies

    # ---------------------------------------------------------------- run
    def run(
        self,
        fetches: Any,
        feed_dict: dict | None = None,
        options: RunOptions | None = None,
        run_metadata: Any = None,
    ) -> Any:
        """Compute ``fetches`` on the cluster, feeding ``feed_dict``; values as a local run."""
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        if self._lost:
            self._reconnect()
        elements, structure = flatten(self.graph, fetches)
        tensors, values = self._feeds(feed_dict) if feed_dict else ((), ())
        key = (*elements, None, *tensors, self.graph._version)
        dplan = self._dplans.get(key)
        if dplan is None:
            dplan = self._dist_plan(elements, tensors, key)
        observers: list[Observer] = [*self.observers, *_observers]
        if options is not None:
            observers += observers_for(options, self.config, run_metadata)
        if observers:
            got = self._watched(dplan, elements, values, options, observers)
        else:
            got = self._step(dplan, values, options)
        return rebuild(structure, [None if v is None else to_numpy(v) for v in got])

    def _dist_plan(self, elements: list, feeds: Any, key: tuple) -> _DistPlan:
        plan = build_plan(self.graph, elements, (), feeds, lambda op: None)
        parted = partition(self.graph, plan.ops, elements, feeds, self.cluster.tasks())
        if self.config.log_device_placement:
            lines = [
                f"{op.name}: ({op.type}): {parted.where[op.name]}/device:CPU:0" for op in plan.ops
            ]
            sys.stdout.write("\n".join(lines) + "\n")
        with self._lock:
            dplan = _DistPlan(parted, f"{self._prefix}{next(self._plan_ids)}", len(elements), plan)
            remember(plan, parted)  # for the live graph (dist_watch.task_layout)
            if len(self._dplans) >= MAX_PLANS or any(
                k[-1] != key[-1] for k in list(self._dplans)[:1]
            ):
                self._forget(list(self._dplans.values()))  # the graph changed: old plans go
                self._dplans.clear()
            self._dplans[key] = dplan
        return dplan

    def _forget(self, dplans: list[_DistPlan]) -> None:
        """Release ``dplans``' partitions on their tasks (not waited for; variables stay)."""
        keys: dict[str, list[str]] = {}
        for d in dplans:
            for task, key in d.keys.items():
                if (task, key) in self._registered:
                    self._registered.discard((task, key))
                    if task not in self._lost:
                        keys.setdefault(task, []).append(key)
        for task, mine in keys.items():  # sent, not waited for
            asyncio.run_coroutine_threadsafe(
                self._call(task, "release", mine), self._client.loop.asyncio_loop
            )

    def _watched(
        self, dplan: _DistPlan, elements: list, feeds: tuple, options: Any, observers: list
    ) -> list:
        """A step someone watches: the observers' calls around it (``dist_watch``)."""
        watch = StepWatch(dplan, elements, observers, self.clock)
        watch.start()
        error = None
        try:
            return self._step(dplan, feeds, options, watch)
        except BaseException as e:
            error = e
            raise
        finally:
            watch.finish(error)
            if error is None:
                self.last_step["spans"] = watch.spans()  # task -> its run, our clock (ns)

    def _step(
        self, dplan: _DistPlan, feeds: tuple, options: RunOptions | None, watch: Any = None
    ) -> list:
        from distributed.protocol import to_serialize  # lazy: dask is an optional extra

        timeout_ms = int(options.timeout_in_ms) if options is not None else 0
        step = next(self._steps)
        calls = []
        for task, part in dplan.parted.parts.items():
            known = (task, dplan.keys[task]) in self._registered
            mine = [feeds[k] for k in part.feeds]
            args = (step, dplan.keys[task], to_serialize(mine) if mine else [],
                    None if known else to_serialize(dplan.payloads[task]),
                    None if known else self._peers, timeout_ms)  # fmt: skip
            calls.append((task, args))
        with self._lock:
            self._in_flight.add(step)
        try:
            results = self._client.sync(self._gather, step, calls, timeout_ms, watch)
        finally:
            with self._lock:
                self._in_flight.discard(step)
        with self._lock:
            self._registered.update((t, dplan.keys[t]) for t, _ in calls)
        values: list[Any] = [None] * dplan.n_fetches
        for (task, _), out in zip(calls, results):
            for i, v in zip(dplan.parted.parts[task].fetches, out):
                values[i] = v
        for i, k in dplan.parted.fed_fetches.items():
            values[i] = feeds[k]
        self.last_step = {"step": step, "tasks": [t for t, _ in calls],
                          "returned": {t: list(out) for (t, _), out in zip(calls, results)}}  # fmt: skip
        return values

    async def _gather(self, step: int, calls: list, timeout_ms: int, watch: Any = None) -> list:
        """All tasks' calls of one step; on the first failure the others abort the step."""
        runs = [asyncio.ensure_future(watch.call(self._call, t, args) if watch is not None
                                      else self._call(t, "run", *args)) for t, args in calls]  # fmt: skip
        if not runs:
            return []
        limit = timeout_ms / 1000 + ABORT_WAIT_S if timeout_ms else None
        done, rest = await asyncio.wait(runs, timeout=limit, return_when=asyncio.FIRST_EXCEPTION)
        failed = [r.exception() for r in runs if r in done and r.exception() is not None]
        if not failed and not rest:
            return [r.result() for r in runs]
        if not failed:
            failed = [errors.DeadlineExceededError(None, None, f"Step {step} timed out")]
        why = f"a task failed: {failed[0]}"
        aborts = [asyncio.ensure_future(self._call(t, "abort", step, why))
                  for t, _ in calls if t not in self._lost]  # fmt: skip
        if aborts:
            await asyncio.wait(aborts, timeout=ABORT_WAIT_S)
        if rest:
            await asyncio.wait(rest, timeout=ABORT_WAIT_S)
        for call in (*aborts, *rest):  # a task that did not answer in time is left behind
            if not call.done():
                call.cancel()
            elif not call.cancelled():
                call.exception()  # retrieved: asyncio does not log it
        found = [self._error(e) for e in failed]
        found += [self._error(r.exception()) for r in rest if r.done() and r.exception()]
        raise next((e for e in found if not _secondary(e)), found[0])

    async def _call(self, task: str, method: str, *args: Any) -> Any:
        """Call ``method`` of ``task``'s server: one Dask ``actor_execute`` message and its
        answer, over the client's connection pool.  A lost worker is UnavailableError."""
        from distributed.core import send_recv  # lazy: dask is an optional extra

        address, key = self._peers[task]
        self.calls[method] += 1
        pool = self._client.rpc
        try:
            comm = await pool.connect(address, timeout=CONNECT_S)
            try:
                result = await send_recv(comm, op="actor_execute", actor=key, function=method,
                                         args=list(args), kwargs={})  # fmt: skip
            finally:
                pool.reuse(address, comm)
        except OSError as e:
            self._lost.add(task)
            raise errors.UnavailableError(
                None, None, f"Task {task} is unavailable: its Dask worker {address} was lost "
                f"({type(e).__name__}: {e})",
            ) from None  # fmt: skip
        if result["status"] != "OK":
            raise result["exception"]
        return result["result"]

    def _reconnect(self) -> None:
        """Find the lost tasks again: wait for Dask to bring back workers of the same names,
        start task servers on them and register every partition again."""
        cluster = self.await_lost_tasks()
        servers, futures = start_servers(self._client, cluster)
        with self._lock:
            self.cluster = cluster
            self._servers, self._server_futures = servers, futures
            self._peers = {t: (a._address, a.key) for t, a in servers.items()}
            self._registered.clear()  # the peer table changed: every task learns it again
            self._lost.clear()

    def await_lost_tasks(self, timeout: float = SERVER_START_S) -> ClusterSpec:
        """Wait until the cluster has this session's tasks again, each lost one on a new
        worker of its name (Dask's nanny restarts a lost worker); the new ClusterSpec."""
        lost = {t: self._peers[t][0] for t in self._lost}
        return await_tasks(self._client, self.cluster, lost, timeout)

    def _error(self, e: BaseException) -> BaseException:
        """A task's error as the client's: TF's class, naming the client's op and line."""
        if isinstance(e, RemoteOpError):
            op = self.graph._ops.get(e.op_name) if e.op_name else None
            cls = errors.exception_type_from_error_code(e.code)
            where = op.describe() if op is not None else f"'{e.op_name}'"
            return cls(None, op, f"{where} on {e.task}: {e.message}")
        return e

    # ---------------------------------------------------------- lifecycle
    def close(self) -> None:
        """Forget this session's partitions on the tasks (variables stay there); close."""
        if self._closed:
            return
        self._abort_in_flight()
        with self._lock:
            keys: dict[str, list[str]] = {}
            for task, key in self._registered:
                if task not in self._lost:  # a lost task has nothing left to forget
                    keys.setdefault(task, []).append(key)
            self._registered.clear()
            self._dplans.clear()
        try:
            if keys:
                self._on_tasks("release", list(keys), [[k] for k in keys.values()], find_lost=False)
        except Exception:  # a cluster already gone has nothing left to forget
            pass
        finally:
            super().close()
            if self._owns_client:
                self._client.close()

    def _abort_in_flight(self) -> None:
        """Abort the steps other threads still wait on (a queue runner's): their waits on the
        tasks are cancelled and their runs end with CancelledError, as TF's close does."""
        with self._lock:
            steps = list(self._in_flight)
        if not steps:
            return
        why = "the session was closed"
        with contextlib.suppress(Exception):  # a cluster already gone has nothing waiting
            tasks = [t for t in self._peers if t not in self._lost]
            for step in steps:
                self._on_tasks("abort", tasks, [[step, why]] * len(tasks), find_lost=False)
        deadline = time.monotonic() + ABORT_WAIT_S
        while self._in_flight and time.monotonic() < deadline:
            time.sleep(0.01)

    def reset_cluster(self) -> None:
        """Drop every variable, queue and reader on every task (TF's ``Session.reset``)."""
        self._on_tasks("reset")

    def task_stats(self) -> dict[str, dict[str, int]]:
        """Per task: steps run, bytes sent to other tasks, bytes returned to clients."""
        return self._on_tasks("stats")

    def variables_on(self, task: str) -> dict[str, Any]:
        """The variables living on ``task`` (``/job:ps/replica:0/task:0``), by name."""
        return self._on_tasks("variable_values", [task])[task]

    def _on_tasks(
        self, method: str, tasks: list[str] | None = None, args: list[list] | None = None,
        find_lost: bool = True,
    ) -> dict[str, Any]:  # fmt: skip
        """``method(*args[i])``'s answer from each task's server (all tasks by default),
        in ``ABORT_WAIT_S`` at most.  Lost tasks are found again first (``find_lost``)."""
        if self._lost and find_lost:
            self._reconnect()
        tasks = list(self._peers) if tasks is None else tasks
        args = args or [[] for _ in tasks]

        async def ask() -> list:
            calls = [self._call(t, method, *a) for t, a in zip(tasks, args)]
            return await asyncio.wait_for(asyncio.gather(*calls), ABORT_WAIT_S)

        return dict(zip(tasks, self._client.sync(ask)))

    def list_devices(self) -> list[Any]:
        """The CPU of every task of the cluster."""
        return [_DeviceAttributes(f"{task_name(j, k)}/device:CPU:0", "CPU")
                for j, k in self.cluster.tasks()]  # fmt: skip

    @property
    def dashboard_link(self) -> str | None:
        """The Dask dashboard of the cluster (``client.dashboard_link``), if it has one."""
        try:
            return self._client.dashboard_link
        except Exception:  # a scheduler started without a dashboard
            return None

    def clock_offsets(self) -> dict[str, dict[str, float]]:
        """Per task: its clock's offset from ours and the bound on it, µs (from watched steps)."""
        return self.clock.table()

    _repr_html_ = session_html

    def prepare(self, fetches: Any, feed_dict: dict | None = None) -> Any:
        raise errors.UnimplementedError(
            None, None, "The Stepper runs a local session; a cluster session cannot step yet"
        )


def _secondary(e: BaseException) -> bool:
    """An error caused by another task's failure (an aborted or cancelled Recv)."""
    return isinstance(e, errors.AbortedError | errors.CancelledError)


def session_class(cls: type, target: Any) -> type:
    """The class ``tf.Session(target)`` makes: a :class:`DaskSession` for a cluster target.

    >>> session_class(Session, "dask://h:8786").__name__, session_class(Session, "").__name__
    ('DaskSession', 'Session')
    """
    return DaskSession if cls is Session and is_cluster_target(target) else cls


hooks.cluster_session.fill(session_class)
