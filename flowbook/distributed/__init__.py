"""Running on a Dask cluster: the whitepaper's distributed execution (§3.3), on Dask distributed.

- ``cluster``: ``tf.train.ClusterSpec`` and ``tf.train.replica_device_setter``;
- ``sendrecv``: the ``_Send``/``_Recv`` ops and the rendezvous where they meet;
- ``partition``: a run's pruned ops split into one GraphDef per task, with a
  Send/Recv pair on every edge between tasks;
- ``server``: the task server, a Dask actor per task holding its variables,
  queues and imported partitions across runs and sessions;
- ``session``: ``tf.Session("dask://host:port")`` (or a ``distributed.Client``):
  one Dask call per task per step, values moving worker to worker;
- ``server_api``: ``tf.train.Server``, a Dask worker per task of a TF1
  script's processes, all joining one scheduler;
- ``stages``: which tasks receive first, and variable updates that wait for
  the step's values (no half-applied step on a surviving ps);
- ``task_servers``: the tasks from the workers' names, a task server on each,
  and waiting for a lost task to come back;
- ``liveness``: a hung worker (alive, not answering) found by its Dask
  heartbeat while a step waits on it;
- ``recovery``: TF1's ``_RecoverableSession``, a session made again when a
  task is lost (what ``MonitoredSession`` runs through).

Dask itself (the ``dask`` extra, ``pip install "flowbook[dask]"``) is imported
only when a cluster session starts, so ``import flowbook`` stays fast.

    >>> from flowbook.distributed import ClusterSpec
    >>> ClusterSpec({"ps": ["h:1"]}).num_tasks("ps")
    1
"""

import importlib
from typing import Any

from flowbook.distributed import sendrecv
from flowbook.distributed.cluster import ClusterSpec, replica_device_setter
from flowbook.framework import hooks

# The cluster machinery (asyncio, the task server, the cluster session) loads on first use, so
# ``import flowbook``, which imports this package for the _Send/_Recv ops, stays fast (PEP 562).
_LAZY = {
    "Server": "server_api",
    "DaskSession": "session",
    "is_cluster_target": "session",
    "map_workers": "session",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"flowbook.distributed.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'flowbook.distributed' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


def _session_class(cls: type, target: Any) -> type:
    """``hooks.cluster_session`` until ``flowbook.distributed.session`` loads (and refills it).

    A local session (no target, the default) needs none of the cluster
    machinery; any other target loads it, and it decides.
    """
    if target is None or (isinstance(target, str | bytes) and not target):
        return cls
    from flowbook.distributed.session import session_class

    return session_class(cls, target)


hooks.cluster_session.fill(_session_class)

__all__ = [
    "ClusterSpec",
    "DaskSession",
    "Server",
    "is_cluster_target",
    "map_workers",
    "replica_device_setter",
    "sendrecv",
]
