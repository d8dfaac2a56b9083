"""Where a cluster session's tasks are: Dask workers by name, and a task server on each.

- :func:`client_for` finds the Dask ``Client`` of a session's target;
- :func:`map_workers` reads the cluster's tasks from Dask's worker names: a
  worker named ``ps-0``, ``worker-1``, ``ps:0`` or ``/job:ps/task:0`` is that
  task; workers with other names (a plain ``LocalCluster``'s 0, 1, 2) become
  ``worker`` tasks in name order;
- :func:`start_servers` finds or starts one ``TaskServer`` actor per task on
  its worker, published on the scheduler under a name that holds the
  worker's address, so later sessions and other clients reach the same
  server, and a worker that Dask replaced (same name, new address) gets a
  new one (its variables uninitialised).  A server that has not started
  within ``SERVER_START_S`` (its worker lost meanwhile) is
  ``UnavailableError``, as a lost task is: a ``RecoverableSession`` waits
  for the task and makes its session again;
- :func:`await_tasks` waits, bounded, until lost tasks are back on new
  workers of their names (Dask's nanny restarts a lost worker).

    >>> map_workers({"tcp://a:1": {"name": "ps-0"}, "tcp://b:1": {"name": 0}}).as_dict()
    {'ps': ['tcp://a:1'], 'worker': ['tcp://b:1']}
"""

from __future__ import annotations

import contextlib
import re
import time
from typing import Any

from flowbook.distributed.cluster import ClusterSpec, task_name
from flowbook.distributed.security import security_for
from flowbook.distributed.server import TaskServer
from flowbook.framework import errors

__all__ = ["SERVER_START_S", "await_tasks", "client_for", "map_workers", "start_servers"]

_NAME = re.compile(r"^(?:/job:)?([A-Za-z_]\w*?)(?:/replica:\d+)?(?:/task:|[-:_/])(\d+)$")
SERVER_START_S = 60.0  # longest wait for the task servers to start (or a lost task to return)


def client_for(target: Any) -> tuple[Any, bool]:
    """A Dask Client for ``target`` (``"dask://host:port"``, a Client, a LocalCluster) and
    whether it was made here (the session closes it).  A client made here, or one passed
    in with ``direct_to_workers`` unset, calls the workers directly."""
    from distributed import Client  # lazy: dask is an optional extra

    if isinstance(target, bytes):
        target = target.decode()
    if isinstance(target, str):  # "dask://host:port", or "dask://" + a full Dask address
        address = target[len("dask://") :]
        address = address if "://" in address else "tcp://" + address
        security = security_for(address)  # a Server of this process's TLS, else Dask's config
        client = Client(address, direct_to_workers=True, set_as_default=False, security=security)
        return client, True
    if isinstance(target, Client):
        if target.direct_to_workers is None:
            target.direct_to_workers = True
        return target, False
    if hasattr(target, "scheduler_address"):  # a LocalCluster, SpecCluster...
        security = getattr(target, "security", None) or security_for(target.scheduler_address)
        client = Client(target, direct_to_workers=True, set_as_default=False, security=security)
        return client, True
    raise TypeError(
        f"A cluster target is 'dask://host:port' or a distributed.Client, not {target!r}"
    )


def map_workers(workers: dict[str, dict[str, Any]]) -> ClusterSpec:
    """The cluster's tasks from Dask's worker table (address -> info with a ``name``).

    >>> map_workers({"tcp://a:1": {"name": "/job:ps/task:1"}}).as_dict()
    {'ps': {1: 'tcp://a:1'}}
    """
    tasks: dict[tuple[str, int], str] = {}
    others: list[tuple[str, str]] = []
    for address, info in workers.items():
        name = str(info.get("name", address))
        m = _NAME.match(name)
        if m is None:
            others.append((name, address))
            continue
        key = (m.group(1), int(m.group(2)))
        if key in tasks:
            raise ValueError(
                f"Two Dask workers are task {task_name(*key)}: {tasks[key]}, {address}"
            )
        tasks[key] = address
    k = max((t for j, t in tasks if j == "worker"), default=-1) + 1
    for _, address in sorted(others, key=lambda o: (len(o[0]), o[0])):
        tasks[("worker", k)] = address
        k += 1
    if not tasks:
        raise errors.UnavailableError(None, None, "The Dask cluster has no workers")
    spec: dict[str, dict[int, str]] = {}
    for (job, t), address in tasks.items():
        spec.setdefault(job, {})[t] = address
    return ClusterSpec(spec)


def start_servers(client: Any, cluster: ClusterSpec) -> tuple[dict[str, Any], list[Any]]:
    """Task name -> its TaskServer actor, found on the scheduler or started on its worker;
    and the futures that keep the actors alive while the session holds them.

    A server's key names its worker's address: a worker that Dask replaced (same name,
    new address) gets a new server, and the lost one's name is unpublished.  The actor
    handle is made from the address and key (a second client cannot gather an actor
    another client made), bound to ``client``.  UnavailableError names a server that
    failed or did not start within ``SERVER_START_S``.
    """
    from distributed import Actor, wait  # lazy: dask is an optional extra

    futures, servers, started = [], {}, []
    for job, k in cluster.tasks():
        address = cluster.task_address(job, k)
        name = f"flowbook-task-{job}-{k}@{address}"
        future = client.get_dataset(name, default=None)
        if future is None:
            future = client.submit(
                TaskServer,
                job,
                k,
                actor=True,
                key=name,
                workers=[address],
                allow_other_workers=False,
            )
            client.publish_dataset(future, name=name, override=True)
            started.append(name.partition("@")[0] + "@")
        futures.append(future)
        servers[task_name(job, k)] = (address, name)
    if started:  # servers of workers that are gone
        for old in client.list_datasets():
            if str(old).startswith(tuple(started)) and old not in {n for _, n in servers.values()}:
                client.unpublish_dataset(old)
    with client.as_current():
        with contextlib.suppress(TimeoutError):  # the servers not started are named below
            wait(futures, timeout=SERVER_START_S)
        for f in futures:
            if f.status == "finished":
                continue
            why = (
                f.exception()
                if f.status == "error"
                else f"not started within "
                f"{SERVER_START_S:.0f} s ({f.status}: its worker may be gone)"
            )
            raise errors.UnavailableError(None, None, f"Task server {f.key}: {why}")
        return {t: Actor(TaskServer, a, name) for t, (a, name) in servers.items()}, futures


def await_tasks(
    client: Any,
    cluster: ClusterSpec,
    lost: dict[str, str],
    timeout: float = SERVER_START_S,
    hung: dict[str, float | None] | None = None,
) -> ClusterSpec:
    """Wait until the cluster has ``cluster``'s tasks again, each task of ``lost`` (task
    name -> its old address) on a new worker -- or, for a task of ``hung`` (task -> its
    worker's ``last_seen`` when found hung), on the same worker once its heartbeat moved
    again (the process was continued); the new ClusterSpec.  UnavailableError after
    ``timeout`` seconds.
    """
    hung = hung or {}
    deadline = time.monotonic() + timeout
    while True:
        workers = client.scheduler_info(n_workers=-1)["workers"]
        try:
            now = map_workers(workers)
        except (ValueError, errors.UnavailableError):
            now = None
        if now is not None and now.tasks() == cluster.tasks():
            where = {task_name(j, k): now.task_address(j, k) for j, k in now.tasks()}
            beats = {a: w.get("last_seen") for a, w in workers.items()}
            if all(
                where[t] != a or (t in hung and beats.get(a) not in (None, hung[t]))
                for t, a in lost.items()
            ):
                return now
        if time.monotonic() > deadline:
            raise errors.UnavailableError(
                None,
                None,
                f"Tasks {sorted(lost)} did not come back within "
                f"{timeout:.0f} s (Dask restarts a lost worker under its nanny; a hung one is "
                "back when it heartbeats again)",
            )
        time.sleep(0.1)
