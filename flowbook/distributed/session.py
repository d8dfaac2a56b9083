"""A session on a Dask cluster: ``tf.Session("dask://host:8786")`` or ``tf.Session(client)``.

``tf.Session(target)`` with a Dask target makes a :class:`DaskSession`
(``flowbook.runtime.session.Session`` asks ``hooks.cluster_session`` for the class).
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
looks up its distributed plan, built once per run signature (fetches,
feeds): the pruned ops (``flowbook.runtime.plan.build_plan``) split over the
tasks with Send/Recv pairs (``flowbook.distributed.partition``), which
tasks receive first and which variable updates wait for the step's values
(``flowbook.distributed.stages``).  The plans are kept in the session's
``PlanCache`` (``flowbook.runtime.plan_cache``), as a local session's are:
adding ops to the graph keeps them (no new partition, nothing new sent to
the tasks), an edit of an op a plan holds drops that plan, and a dropped
plan's partitions are released on their tasks.  The step is one Dask call
per task that has work in it, all sent at once from one coroutine on the client's event
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
as the client notices.  A task whose worker is **hung** -- alive, but its
heartbeat to the scheduler stood still for ``heartbeats.hung_after_s``
seconds (``flowbook.distributed.liveness``: 5 s by default, the step failing
about 7 s after the stop) -- fails the step the same way, its call given up.
A step's deadline is ``RunOptions.timeout_in_ms``, else ConfigProto's
``operation_timeout_in_ms`` (0: none; a live task blocked in a dequeue
waits that long).  The session stays usable: the next run waits (up to
``SERVER_START_S``) for Dask to bring back a worker of the same name, starts
a new task server there -- its variables uninitialised, so a chief restores
them from a checkpoint (``flowbook.distributed.recovery``) -- and registers
its partitions again.  A hung worker may instead come back as it was (a
stopped process continued with ``SIGCONT``): once its heartbeat moves, the
session goes on with the same task server, variables and queues, first
aborting there the steps it gave up (their Recvs and waits fail; a partition
that had all its values when stopped finishes, its updates applied, as a
failed step in TensorFlow may leave some).

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

from flowbook.distributed.cluster import ClusterSpec, task_name
from flowbook.distributed.dist_repr import session_html
from flowbook.distributed.dist_trace import ClockSync
from flowbook.distributed.dist_watch import StepWatch, remember
from flowbook.distributed.liveness import Heartbeats, wait_alive
from flowbook.distributed.partition import partition
from flowbook.distributed.server import RemoteOpError
from flowbook.distributed.server_api import wait_for_tasks
from flowbook.distributed.stages import DistPlan
from flowbook.distributed.task_servers import (
    SERVER_START_S,
    await_tasks,
    client_for,
    map_workers,
    start_servers,
)
from flowbook.framework import errors, hooks
from flowbook.framework.graph import Graph
from flowbook.runtime.config import ConfigProto, RunOptions
from flowbook.runtime.observers import Observer, observers_for
from flowbook.runtime.plan import build_plan
from flowbook.runtime.plan_cache import PlanCache
from flowbook.runtime.session import Session, _DeviceAttributes, _observers
from flowbook.runtime.values import flatten, rebuild, to_numpy

__all__ = ["SERVER_START_S", "DaskSession", "is_cluster_target", "map_workers"]

ABORT_WAIT_S = 10.0  # after a task failed, the longest wait for the others to stop
CONNECT_S = 5.0  # longest wait for a connection to a task's worker (a lost one refuses)


def is_cluster_target(target: Any) -> bool:
    """Whether ``tf.Session(target)`` means a Dask cluster: ``"dask://..."`` or a Client.

    >>> is_cluster_target("dask://127.0.0.1:8786"), is_cluster_target(""), is_cluster_target(None)
    (True, False, False)
    """
    if isinstance(target, str | bytes):
        return (target.decode() if isinstance(target, bytes) else target).startswith("dask://")
    return target is not None


class DaskSession(Session):
    """A TF1 session whose graph runs on the tasks of a Dask cluster.  See the module docstring."""

    def __init__(
        self, target: Any = "", graph: Graph | None = None, config: ConfigProto | None = None
    ) -> None:
        super().__init__("", graph, config)
        self.target = target
        self._client, self._owns_client = client_for(target)
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
        self._hung: dict[str, float | None] = {}  # lost ones found hung -> last_seen then
        self._stale: dict[str, list[int]] = {}  # hung task -> steps given up (aborted on return)
        self.heartbeats = Heartbeats()  # the tasks' heartbeats; .hung_after_s is the bound
        self.calls: collections.Counter[str] = collections.Counter()  # Dask calls by method
        # run signature -> plan -> its DistPlan; a dropped plan's partitions are released
        self._cache = PlanCache(self.graph, on_drop=self._forget)
        self._plans, self._paths = self._cache.plans, self._cache.paths
        self._dplans = self._paths  # plan -> its DistPlan
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
        key = (*elements, None, *tensors)
        dplan = self._kept(key) or self._dist_plan(elements, tensors, key)
        observers: list[Observer] = [*self.observers, *_observers]
        if options is not None:
            observers += observers_for(options, self.config, run_metadata)
        if observers:
            got = self._watched(dplan, elements, values, options, observers)
        else:
            got = self._step(dplan, values, options)
        return rebuild(structure, [None if v is None else to_numpy(v) for v in got])

    def _kept(self, key: tuple) -> DistPlan | None:
        """``key``'s distributed plan if the cache kept it through the graph's edits since."""
        cache = self._cache
        with self._lock:
            if self.graph._edit_log.count != cache.seen:
                cache.sweep()  # drops the plans holding an edited op (``_forget`` releases them)
            plan = cache.plans.get(key)
            dplan = None if plan is None else cache.paths.get(plan)
            if dplan is not None and plan is not cache.last:
                cache.touch(key, plan)
            return dplan

    def _dist_plan(self, elements: list, feeds: Any, key: tuple) -> DistPlan:
        plan = build_plan(self.graph, elements, (), feeds, lambda op: None)
        parted = partition(self.graph, plan.ops, elements, feeds, self.cluster.tasks())
        if self.config.log_device_placement:
            lines = [
                f"{op.name}: ({op.type}): {parted.where[op.name]}/device:CPU:0" for op in plan.ops
            ]
            sys.stdout.write("\n".join(lines) + "\n")
        with self._lock:
            dplan = DistPlan(parted, f"{self._prefix}{next(self._plan_ids)}", len(elements), plan)
            remember(plan, parted)  # for the live graph (dist_watch.task_layout)
            return self._cache.add(key, plan, dplan)  # the least recently used may go

    def _forget(self, dplans: list[DistPlan]) -> None:
        """Release ``dplans``' partitions on their tasks (not waited for; variables stay).
        The cache calls it, under the session's lock, with the plans it dropped."""
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
        self, dplan: DistPlan, elements: list, feeds: tuple, options: Any, observers: list
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
        self, dplan: DistPlan, feeds: tuple, options: RunOptions | None, watch: Any = None
    ) -> list:
        from distributed.protocol import to_serialize  # lazy: dask is an optional extra

        timeout_ms = int(options.timeout_in_ms) if options is not None else 0
        timeout_ms = timeout_ms or int(self.config.operation_timeout_in_ms)  # TF's global bound
        step = next(self._steps)
        calls = []
        for task, part in dplan.parted.parts.items():
            known = (task, dplan.keys[task]) in self._registered
            mine = [feeds[k] for k in part.feeds]
            args = (
                step,
                dplan.keys[task],
                to_serialize(mine) if mine else [],
                None if known else to_serialize(dplan.payloads[task]),
                None if known else self._peers,
                timeout_ms,
            )
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
        self.last_step = {
            "step": step,
            "tasks": [t for t, _ in calls],
            "returned": {t: list(out) for (t, _), out in zip(calls, results)},
        }
        return values

    async def _gather(self, step: int, calls: list, timeout_ms: int, watch: Any = None) -> list:
        """All tasks' calls of one step; on the first failure the others abort the step."""
        runs = [
            asyncio.ensure_future(
                watch.call(self._call, t, args)
                if watch is not None
                else self._call(t, "run", *args)
            )
            for t, args in calls
        ]
        if not runs:
            return []
        of = {r: t for r, (t, _) in zip(runs, calls)}  # call -> its task
        limit = timeout_ms / 1000 + ABORT_WAIT_S if timeout_ms else None
        where = {t: self._peers[t][0] for t, _ in calls}  # task -> its worker
        failed, rest, silent = await wait_alive(self._client, self.heartbeats, of, where, limit)
        if silent:  # tasks whose worker is hung
            failed = [self._hung_error(step, silent)]
        if not failed and not rest:
            return [r.result() for r in runs]
        if not failed:
            failed = [errors.DeadlineExceededError(None, None, f"Step {step} timed out")]
        why = f"a task failed: {failed[0]}"
        aborts = [
            asyncio.ensure_future(self._call(t, "abort", step, why))
            for t, _ in calls
            if t not in self._lost
        ]
        for call in rest:  # a hung task's call is given up at once (aborted when it returns)
            if of[call] in self._hung:
                call.cancel()
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
        found += [
            self._error(r.exception())
            for r in rest
            if r.done() and not r.cancelled() and r.exception()
        ]
        raise next((e for e in found if not _secondary(e)), found[0])

    def _hung_error(self, step: int, silent: dict[str, float]) -> Any:
        """Note the hung tasks (lost until their heartbeat moves again); the error naming them."""
        for task in silent:
            address = self._peers[task][0]
            self._lost.add(task)
            self._hung[task] = self.heartbeats.last(address)
            self._stale.setdefault(task, []).append(step)
        task, quiet = max(silent.items(), key=lambda a: a[1])
        address = self._peers[task][0]
        return errors.UnavailableError(
            None,
            None,
            f"Task {task} is unavailable: its Dask worker {address} is "
            f"hung (no heartbeat for {quiet:.1f} s, the bound is {self.heartbeats.bound():.1f} "
            "s: a stopped or stuck process)",
        )

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
                result = await send_recv(
                    comm, op="actor_execute", actor=key, function=method, args=list(args), kwargs={}
                )
            finally:
                pool.reuse(address, comm)
        except OSError as e:
            self._lost.add(task)
            raise errors.UnavailableError(
                None,
                None,
                f"Task {task} is unavailable: its Dask worker {address} was lost "
                f"({type(e).__name__}: {e})",
            ) from None
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
            peers = {t: (a._address, a.key) for t, a in servers.items()}
            if peers != self._peers:  # a task moved: every task learns the peer table again
                self._registered.clear()
            self._peers = peers
            self._lost.clear()
            self._hung.clear()

    def await_lost_tasks(self, timeout: float = SERVER_START_S) -> ClusterSpec:
        """Wait until the cluster has this session's tasks again, each lost one on a new
        worker of its name (Dask's nanny restarts a lost worker), or a hung one heartbeating
        again where it was, whose given-up steps are then aborted; the new ClusterSpec."""
        lost = {t: self._peers[t][0] for t in self._lost}
        cluster = await_tasks(self._client, self.cluster, lost, timeout, dict(self._hung))
        where = {task_name(j, k): cluster.task_address(j, k) for j, k in cluster.tasks()}
        for task in [t for t in self._hung if t in lost]:
            stale = self._stale.pop(task, [])
            if where[task] != lost[task]:  # replaced: its steps went with the old worker
                continue
            self._lost.discard(task)  # resumed: the same server, variables and partitions
            del self._hung[task]
            why = "the client gave up the step while the task's worker was hung"
            for step in stale:
                with contextlib.suppress(Exception):  # it answers, or is lost for good
                    self._on_tasks("abort", [task], [[step, why]], find_lost=False)
        return cluster

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
            self._cache.clear()  # (its partitions were just listed for release)
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
        self,
        method: str,
        tasks: list[str] | None = None,
        args: list[list] | None = None,
        find_lost: bool = True,
    ) -> dict[str, Any]:
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
        return [
            _DeviceAttributes(f"{task_name(j, k)}/device:CPU:0", "CPU")
            for j, k in self.cluster.tasks()
        ]

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
