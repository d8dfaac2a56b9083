"""``tf.train.Server`` on Dask: the processes of a TF1 between-graph script become one Dask cluster.

A TF1 script starts one process per task, each calling
``tf.train.Server(cluster, job_name, task_index)``; the ps processes then
``join()`` and the workers open ``MonitoredTrainingSession(master=server.target)``.
Here every such Server is a Dask worker named after its task
(``/job:ps/task:0``: how ``flowbook.distributed.session.map_workers`` finds
tasks), and all of them join one Dask scheduler:

- **where the scheduler is**: ``$FLOWBOOK_DASK_SCHEDULER`` (``dask://host:port``
  or ``tcp://host:port``, a ``dask scheduler`` already running) if set; else
  the *host task* runs it in its own process, listening on that task's
  ClusterSpec address: ``ps`` task 0 (the ps tasks live as long as the
  cluster), else the first ``chief``, ``master`` or ``worker`` task.  The host
  task's Dask worker takes a free port beside it; every other task's worker
  listens on its own ClusterSpec address and connects to the scheduler
  (waiting for it, however the processes were started);
- **the target**: ``server.target`` is ``dask://<scheduler address>``, which
  ``tf.Session`` (and ``MonitoredTrainingSession(master=...)``) accepts.  A
  session on it first waits (bounded, ``CLUSTER_WAIT_S``) until every task
  of the Servers' ClusterSpec has joined (:func:`wait_for_tasks`), as a TF1
  session waits for its cluster's tasks;
- **the event loop**: the scheduler and workers of this process run on one
  daemon thread's asyncio loop (``_loop``), so the Server's caller keeps its
  thread; ``join()`` polls (interruptible by Ctrl-C) until this process's
  scheduler -- or, for the other tasks, its worker, which closes when the
  scheduler goes away -- has shut down; ``close()`` (flowbook's addition)
  shuts them down.

``Server.create_local_server()`` starts an in-process ``LocalCluster`` with
one worker, task ``/job:localhost/task:0``.

**Listeners** (``flowbook.distributed.security``): ``create_local_server``
binds 127.0.0.1 only; a Server binds the host its ClusterSpec address names
(a warning is logged once for a plain-TCP address beyond loopback), and
the scheduler's dashboard listens on 127.0.0.1.  ``security=`` (a
``distributed.security.Security`` or a dict of PEM paths ``ca_file``,
``cert``, ``key``) turns on Dask's TLS: ``tls://`` addresses, a
``dask://tls://host:port`` target, certificates required both ways.  Dask is imported only here and
only when a Server starts.

    >>> host_task(ClusterSpec({"ps": ["h:1"], "worker": ["h:2", "h:3"]}))
    ('ps', 0)
    >>> scheduler_address(ClusterSpec({"worker": ["h:2", "h:3"]}), {})
    ('tcp://h:2', True)
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from typing import Any

from flowbook.distributed import security as _sec
from flowbook.distributed.cluster import ClusterSpec
from flowbook.framework import errors

__all__ = ["Server", "host_task", "scheduler_address", "wait_for_tasks"]

SCHEDULER_ENV = "FLOWBOOK_DASK_SCHEDULER"  # a scheduler already running: nobody hosts one
START_S = 120.0  # longest wait for this process's scheduler or worker to start
CLUSTER_WAIT_S = 120.0  # longest wait of a session for every task of the cluster
POLL_S = 0.05  # how often the waits look again

_LOCK = threading.Lock()  # guards the two below
_LOOP: list[asyncio.AbstractEventLoop] = []  # this process's servers' event loop, once started
_EXPECTED: dict[str, set[str]] = {}  # scheduler address -> worker names the Servers expect


def _tcp(address: str, protocol: str = "tcp") -> str:
    """``host:port``, ``dask://host:port`` or ``tcp://host:port`` as a Dask address.

    >>> _tcp("dask://h:1"), _tcp("h:1", "tls"), _tcp("dask://tls://h:1")
    ('tcp://h:1', 'tls://h:1', 'tls://h:1')
    """
    address = address[len("dask://") :] if address.startswith("dask://") else address
    return address if "://" in address else f"{protocol}://{address}"


def _host_port(address: str) -> tuple[str, int]:
    host, _, port = _tcp(address).partition("://")[2].rpartition(":")
    return host.strip("[]"), int(port)


def host_task(cluster: ClusterSpec) -> tuple[str, int]:
    """The task whose process runs the scheduler: ps 0, else the chief, master or first worker."""
    for job in ("ps", "chief", "master", "worker"):
        if job in cluster.jobs:
            return job, cluster.task_indices(job)[0]
    return cluster.tasks()[0]


def scheduler_address(
    cluster: ClusterSpec, environ: Any = os.environ, protocol: str = "tcp"
) -> tuple[str, bool]:
    """The scheduler's Dask address, and whether the host task must start it."""
    given = environ.get(SCHEDULER_ENV)
    if given:
        return _tcp(given, protocol), False
    return _tcp(cluster.task_address(*host_task(cluster)), protocol), True


def _loop() -> asyncio.AbstractEventLoop:
    """This process's servers' event loop, on a daemon thread (started on first use)."""
    with _LOCK:
        if not _LOOP:
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="flowbook-server", daemon=True).start()
            _LOOP.append(loop)
        return _LOOP[0]


def _on_loop(coro: Any, timeout: float) -> Any:
    return asyncio.run_coroutine_threadsafe(coro, _loop()).result(timeout)


def wait_for_tasks(client: Any, target: Any) -> dict[str, dict[str, Any]]:
    """The scheduler's workers, once every task this process's Servers expect has joined.

    A target no Server of this process made waits for nothing.
    """
    names = _EXPECTED.get(_tcp(target)) if isinstance(target, str) else None
    deadline = time.monotonic() + CLUSTER_WAIT_S
    while True:
        workers = client.scheduler_info(n_workers=-1)["workers"]
        missing = sorted((names or set()) - {str(w.get("name")) for w in workers.values()})
        if not missing:
            return workers
        if time.monotonic() > deadline:
            raise errors.UnavailableError(
                None,
                None,
                f"Tasks {missing} did not join the cluster at {target} within "
                f"{CLUSTER_WAIT_S:.0f} s: start their tf.train.Server processes",
            )
        time.sleep(POLL_S)


def _server_def_class() -> Any:
    """TensorFlow's ``ServerDef`` message (tensorflow_server.proto), built on the ClusterDef
    of the tensorboard package's protos (which do not include it)."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory  # lazy
    from tensorboard.compat.proto import cluster_pb2  # lazy: protobuf is slow to import

    pool = descriptor_pool.Default()
    name = "flowbook/tensorflow_server.proto"
    try:
        return message_factory.GetMessageClass(pool.FindMessageTypeByName("tensorboard.ServerDef"))
    except KeyError:
        pass
    f = descriptor_pb2.FileDescriptorProto(name=name, package="tensorboard", syntax="proto3")
    f.dependency.append(cluster_pb2.DESCRIPTOR.name)
    m = f.message_type.add(name="ServerDef")
    t = descriptor_pb2.FieldDescriptorProto
    for number, (field, kind, type_name) in enumerate(
        [
            ("cluster", t.TYPE_MESSAGE, ".tensorboard.ClusterDef"),
            ("job_name", t.TYPE_STRING, ""),
            ("task_index", t.TYPE_INT32, ""),
            ("default_session_config", None, ""),
            ("protocol", t.TYPE_STRING, ""),
            ("port", t.TYPE_INT32, ""),
        ],
        start=1,
    ):
        if kind is None:  # ConfigProto: flowbook's is not the proto; the field number is kept
            continue
        fd = m.field.add(name=field, number=number, type=kind, label=t.LABEL_OPTIONAL)
        if type_name:
            fd.type_name = type_name
    pool.Add(f)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("tensorboard.ServerDef"))


def _parse(
    server_or_cluster_def: Any, job_name: str | None, task_index: int | None
) -> tuple[ClusterSpec, str, int]:
    if hasattr(server_or_cluster_def, "cluster") and hasattr(server_or_cluster_def, "job_name"):
        d = server_or_cluster_def  # a ServerDef
        cluster, job_name = ClusterSpec(d.cluster), job_name or d.job_name
        task_index = d.task_index if task_index is None else task_index
    else:
        cluster = ClusterSpec(server_or_cluster_def)
    if job_name is None:
        if len(cluster.jobs) != 1 or cluster.num_tasks(cluster.jobs[0]) != 1:
            raise ValueError("Must specify an explicit `job_name`.")
        job_name = cluster.jobs[0]
    if task_index is None:
        if cluster.num_tasks(job_name) != 1:
            raise ValueError("Must specify an explicit `task_index`.")
        task_index = cluster.task_indices(job_name)[0]
    cluster.task_address(job_name, task_index)  # ValueError for a task the cluster lacks
    return cluster, job_name, int(task_index)


class Server:
    """An in-process server of one task of a cluster: a Dask worker named after the task.

    ``tf.train.Server(cluster, job_name, task_index)``; see the module docstring.
    """

    def __init__(
        self,
        server_or_cluster_def: Any,
        job_name: str | None = None,
        task_index: int | None = None,
        protocol: str | None = None,
        config: Any = None,
        start: bool = True,
        security: Any = None,
    ) -> None:
        self._cluster, self._job, self._task = _parse(server_or_cluster_def, job_name, task_index)
        self._protocol = protocol or "dask"  # the transport: Dask's comms (tcp, or tls)
        self._config = config  # kept for sessions' defaults (flowbook's ConfigProto)
        self._security = _sec.make_security(security)  # flowbook's addition: Dask's TLS
        comm = _sec.protocol_of(self._security)
        self._scheduler_address, self._hosts = scheduler_address(self._cluster, protocol=comm)
        self._hosts = self._hosts and (self._job, self._task) == host_task(self._cluster)
        self._scheduler: Any = None  # the Dask scheduler, if this task hosts it
        self._worker: Any = None  # this task's Dask worker, once started
        self._local: Any = None  # create_local_server's LocalCluster
        if start:
            self.start()

    @property
    def target(self) -> str:
        """What ``tf.Session(target)`` takes: ``dask://host:port`` (``dask://tls://...``)."""
        address = self._scheduler_address
        return "dask://" + (address[len("tcp://") :] if address.startswith("tcp://") else address)

    @property
    def server_def(self) -> Any:
        """TensorFlow's ``ServerDef`` proto: the cluster, this job and task, the protocol."""
        return _server_def_class()(
            cluster=self._cluster.as_cluster_def(),
            job_name=self._job,
            task_index=self._task,
            protocol=self._protocol,
        )

    def start(self) -> None:
        """Start the task's Dask worker (and the scheduler, on the host task); idempotent."""
        if self._worker is not None or self._local is not None:
            return
        names = {f"/job:{j}/task:{k}" for j, k in self._cluster.tasks()}
        with _LOCK:
            _EXPECTED.setdefault(self._scheduler_address, set()).update(names)
        _sec.register(self._scheduler_address, self._security)
        _on_loop(self._start(), START_S + 5)

    async def _start(self) -> None:
        from distributed import Scheduler, Worker  # lazy: dask is an optional extra

        host, port = _host_port(self._cluster.task_address(self._job, self._task))
        comm = _sec.protocol_of(self._security)
        _sec.warn_if_exposed(f"{comm}://{host}:{port}", f"tf.train.Server /job:{self._job}")
        if self._hosts:
            self._scheduler = await Scheduler(
                host=host,
                port=port,
                dashboard_address=_sec.DASHBOARD,
                protocol=comm,
                security=self._security,
            )
            port = 0  # the scheduler has the task's address; its worker takes a free port
        self._worker = await Worker(
            self._scheduler_address,
            name=f"/job:{self._job}/task:{self._task}",
            nthreads=1,
            host=host,
            port=port,
            death_timeout=START_S,
            memory_limit=0,
            protocol=comm,
            security=self._security,
        )

    def join(self) -> None:
        """Block until this task's scheduler (or, elsewhere, its worker) shuts down; Ctrl-C ends
        the wait."""
        while not self._finished():
            time.sleep(POLL_S)

    def _finished(self) -> bool:
        if self._local is not None:
            return self._local.status.name in ("closing", "closed", "failed")
        node = self._scheduler if self._scheduler is not None else self._worker
        return node is None or node.status.name in ("closing", "closed", "failed")

    def close(self) -> None:
        """Shut this task's worker down, and its scheduler if it hosts one (flowbook's addition)."""
        if self._local is not None:
            self._local.close()
            return
        if self._worker is None:
            return
        _on_loop(self._close(), START_S)

    async def _close(self) -> None:
        if self._worker is not None:
            await self._worker.close(nanny=False)
        if self._scheduler is not None:
            await self._scheduler.close()

    @staticmethod
    def create_local_server(config: Any = None, start: bool = True, security: Any = None) -> Server:
        """A one-task cluster in this process (a Dask ``LocalCluster``): task
        ``/job:localhost/task:0``; ``tf.Session(server.target)`` runs on it.
        Every listener is on 127.0.0.1; ``security=`` as for ``Server``.
        """
        from distributed import LocalCluster  # lazy: dask is an optional extra

        sec = _sec.make_security(security)
        local = LocalCluster(
            n_workers=0,
            processes=False,
            threads_per_worker=1,
            dashboard_address=_sec.DASHBOARD,
            host=_sec.LOOPBACK,
            protocol=_sec.protocol_of(sec) + "://",
            security=sec,
        )
        local.worker_spec["/job:localhost/task:0"] = local.new_spec
        local.scale(1)
        local.wait_for_workers(1, timeout=START_S)
        address = next(iter(local.scheduler_info["workers"]))
        server = Server(
            {"localhost": [address.partition("://")[2]]}, "localhost", 0, config=config, start=False
        )
        server._local = local
        server._scheduler_address, server._hosts = local.scheduler_address, False
        server._security = sec
        _sec.register(local.scheduler_address, sec)
        return server

    def __repr__(self) -> str:
        return f"<tf.train.Server /job:{self._job}/task:{self._task} at {self.target}>"
