"""Clusters and device names across processes: ``tf.train.ClusterSpec``, ``replica_device_setter``.

A :class:`ClusterSpec` is TF1's map from job names to task addresses
(``{"ps": ["host:2222"], "worker": ["host:2223", "host:2224"]}``, or a dict
``{task index: address}`` per job for sparse jobs).  flowbook uses it for
what TensorFlow uses it for: which tasks exist, so that a device name such
as ``/job:worker/task:1/device:CPU:0`` names a real place.  On a Dask
cluster (``flowbook.distributed.session``) the addresses are Dask worker
addresses, one task per worker.

Device strings are parsed and merged by ``flowbook.framework.devices.DeviceSpec`` (the
inner ``tf.device`` scope fills in what it sets; the outer keeps the rest).
:func:`task_name` and :func:`task_of_spec` turn a spec into the task that
runs it, ``/job:ps/replica:0/task:0``, as TF spells a task.

:func:`replica_device_setter` is TF1's device function for between-graph
replication: variables (and the other ``ps_ops``) go round-robin over the
``ps`` tasks, every other op to ``worker_device``; a device an op's own
scope set wins over both (``merge_devices``).

    >>> spec = ClusterSpec({"ps": ["a:1"], "worker": ["b:1", "b:2"]})
    >>> spec.jobs, spec.num_tasks("worker"), spec.task_address("worker", 1)
    (['ps', 'worker'], 2, 'b:2')
    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     with fb.device(replica_device_setter(cluster=spec)):
    ...         w, b = fb.Variable(1.0, name="w"), fb.Variable(2.0, name="b")
    ...         y = w * b
    >>> w.op.device, b.op.device, y.op.device
    ('/job:ps/task:0', '/job:ps/task:0', '/job:worker')
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from flowbook.framework.devices import DeviceSpec

__all__ = ["ClusterSpec", "replica_device_setter", "task_name", "task_of_spec"]

# op types a replica_device_setter sends to the ps tasks (TF1's STANDARD_PS_OPS)
STANDARD_PS_OPS = (
    "Variable",
    "VariableV2",
    "AutoReloadVariable",
    "MutableHashTable",
    "MutableHashTableV2",
    "MutableHashTableOfTensors",
    "MutableHashTableOfTensorsV2",
    "MutableDenseHashTable",
    "MutableDenseHashTableV2",
    "VarHandleOp",
)


def task_name(job: str, task: int) -> str:
    """TF's name of a task: ``/job:ps/replica:0/task:0``.

    >>> task_name("worker", 1)
    '/job:worker/replica:0/task:1'
    """
    return f"/job:{job}/replica:0/task:{task}"


def task_of_spec(spec: DeviceSpec, default: tuple[str, int]) -> tuple[str, int]:
    """The (job, task) a device spec names; ``default`` fills a spec that names no job.

    A spec naming a job but no task means task 0 of that job.

    >>> task_of_spec(DeviceSpec.from_string("/job:ps/device:CPU:0"), ("worker", 0))
    ('ps', 0)
    >>> task_of_spec(DeviceSpec.from_string("/gpu:0"), ("worker", 1))
    ('worker', 1)
    """
    if spec.job is None:
        return default[0], spec.task if spec.task is not None else default[1]
    return spec.job, spec.task or 0


class ClusterSpec:
    """TF1's ``tf.train.ClusterSpec``: job name -> task addresses.

    >>> c = ClusterSpec({"worker": {1: "w1:2222", 3: "w3:2222"}})
    >>> c.task_indices("worker"), c.job_tasks("worker"), c.as_dict()
    ([1, 3], [None, 'w1:2222', None, 'w3:2222'], {'worker': {1: 'w1:2222', 3: 'w3:2222'}})
    """

    def __init__(self, cluster: Any) -> None:
        self._spec: dict[str, dict[int, str]] = {}  # job -> {task index: address}
        if isinstance(cluster, ClusterSpec):
            self._spec = {job: dict(tasks) for job, tasks in cluster._spec.items()}
        elif isinstance(cluster, Mapping):
            for job, tasks in cluster.items():
                if not isinstance(job, str) or not job:
                    raise TypeError(f"Job names must be non-empty strings, got {job!r}")
                self._spec[job] = _tasks(job, tasks)
        elif hasattr(cluster, "job"):  # a ClusterDef proto
            for job in cluster.job:
                if job.name in self._spec:
                    raise ValueError(f"Duplicated job name in ClusterDef: {job.name!r}")
                self._spec[job.name] = {int(k): v for k, v in job.tasks.items()}
        else:
            raise TypeError(
                "`cluster` must be a dictionary mapping one or more job names to lists of "
                f"network addresses, or a `ClusterDef` protocol buffer; got {cluster!r}"
            )

    # ------------------------------------------------------------ queries
    @property
    def jobs(self) -> list[str]:
        """The job names, sorted."""
        return sorted(self._spec)

    def num_tasks(self, job_name: str) -> int:
        """How many tasks ``job_name`` has; ValueError for an unknown job."""
        return len(self._job(job_name))

    def task_indices(self, job_name: str) -> list[int]:
        """The task indices of ``job_name``, sorted."""
        return sorted(self._job(job_name))

    def task_address(self, job_name: str, task_index: int) -> str:
        """The address of one task; ValueError if the job has no such task."""
        tasks = self._job(job_name)
        if task_index not in tasks:
            raise ValueError(f"No task with index {task_index!r} in job {job_name!r}")
        return tasks[task_index]

    def job_tasks(self, job_name: str) -> list[str | None]:
        """The job's addresses by task index, None where an index is missing."""
        tasks = self._job(job_name)
        return [tasks.get(k) for k in range(max(tasks) + 1)] if tasks else []

    def tasks(self) -> list[tuple[str, int]]:
        """Every (job, task index) of the cluster, sorted."""
        return [(job, k) for job in self.jobs for k in self.task_indices(job)]

    def as_dict(self) -> dict[str, Any]:
        """Job -> list of addresses (dict of index -> address where indices have gaps)."""
        out: dict[str, Any] = {}
        for job in self.jobs:
            tasks = self._spec[job]
            dense = sorted(tasks) == list(range(len(tasks)))
            out[job] = (
                [tasks[k] for k in range(len(tasks))] if dense else dict(sorted(tasks.items()))
            )
        return out

    def as_cluster_def(self) -> Any:
        """TensorFlow's ``ClusterDef`` protocol buffer of this cluster."""
        from tensorboard.compat.proto import cluster_pb2  # lazy: protobuf is slow to import

        proto = cluster_pb2.ClusterDef()
        for job in self.jobs:
            entry = proto.job.add(name=job)
            for k, address in sorted(self._spec[job].items()):
                entry.tasks[k] = address
        return proto

    def _job(self, job_name: str) -> dict[int, str]:
        tasks = self._spec.get(job_name)
        if tasks is None:
            raise ValueError(f"No such job in cluster: {job_name!r}")
        return tasks

    def __bool__(self) -> bool:
        return bool(self._spec)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ClusterSpec) and self._spec == other._spec

    def __hash__(self) -> int:
        return hash(tuple((j, tuple(sorted(t.items()))) for j, t in sorted(self._spec.items())))

    def __repr__(self) -> str:
        return f"ClusterSpec({self.as_dict()!r})"


def _tasks(job: str, tasks: Any) -> dict[int, str]:
    if isinstance(tasks, str):
        raise TypeError(f"The tasks of job {job!r} must be a list or a dict, got a string")
    if isinstance(tasks, Mapping):
        out = {}
        for k, v in tasks.items():
            if not isinstance(k, int) or k < 0:
                raise TypeError(f"Task indices of job {job!r} must be integers >= 0, got {k!r}")
            out[k] = str(v)
        return out
    if isinstance(tasks, Iterable):
        return {k: str(v) for k, v in enumerate(tasks)}
    raise TypeError(f"The tasks of job {job!r} must be a list or a dict, got {tasks!r}")


# ----------------------------------------------------------- device setter
class _RoundRobin:
    """TF1's default ps strategy: each new ps op goes to the next ps task."""

    def __init__(self, num_tasks: int) -> None:
        self.num_tasks = num_tasks
        self.next = 0  # the ps task the next variable goes to

    def __call__(self, op: Any) -> int:
        task = self.next
        self.next = (self.next + 1) % self.num_tasks
        return task


def replica_device_setter(
    ps_tasks: int = 0,
    ps_device: str = "/job:ps",
    worker_device: str = "/job:worker",
    merge_devices: bool = True,
    cluster: Any = None,
    ps_ops: list[str] | None = None,
    ps_strategy: Callable[[Any], int] | None = None,
) -> Callable[[Any], str] | None:
    """A device function for ``tf.device``: variables over the ps tasks, the rest on the worker.

    With ``cluster`` (a ClusterSpec or its dict), ``ps_tasks`` is its number
    of ``ps`` tasks; with no ps task at all it returns None (no placement).

    >>> with_ps = replica_device_setter(ps_tasks=2, worker_device="/job:worker/task:1")
    >>> replica_device_setter(cluster={"worker": ["w:1"]}) is None
    True
    """
    if cluster is not None:
        spec = cluster if isinstance(cluster, ClusterSpec) else ClusterSpec(cluster)
        ps_job = DeviceSpec.from_string(ps_device).job or "ps"
        ps_tasks = spec.num_tasks(ps_job) if ps_job in spec.jobs else 0
    if ps_tasks == 0:
        return None
    if not merge_devices:
        raise ValueError("merge_devices=False is no longer supported (nor was it in TF1.x)")
    ops = tuple(ps_ops) if ps_ops is not None else STANDARD_PS_OPS
    strategy = ps_strategy if ps_strategy is not None else _RoundRobin(ps_tasks)
    ps_spec = DeviceSpec.from_string(ps_device)
    worker_spec = DeviceSpec.from_string(worker_device)

    def choose(op: Any) -> str:
        current = DeviceSpec.from_string(op.device or "")
        if ps_device and op.type in ops:
            chosen = ps_spec
            if ps_spec.job and (current.job is None or current.job == ps_spec.job):
                chosen = DeviceSpec(**{**ps_spec.__dict__, "task": strategy(op)})
            return chosen.merged_with(current).to_string()
        return worker_spec.merged_with(current).to_string()

    return choose
