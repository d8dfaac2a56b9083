"""The Dask clusters the distributed tests run on, and the events those tests wait for.

``task_cluster()`` starts a ``distributed.LocalCluster`` with no workers, adds one
per name (``"ps-0"``, ``"worker-1"``: a cluster session maps ``/job:ps/task:0`` to
the worker named ``ps-0``), waits for them within ``timeout`` seconds and yields a
``Client``; both are closed on the way out, whatever happened.  ``processes=True``
gives each worker its own process under a nanny, talking TCP on 127.0.0.1 (what a
real cluster does, and what a test that kills or stops a worker needs); in-process
workers start in a fraction of the time.

The tests run on machines that other work loads, so none of them sleeps for a
fixed time or bounds an event by how long it should take: each waits for the event
it needs -- a worker gone or back as the scheduler reports it (``kill_worker``,
``wait_workers``), a step open on a task, a thread's end (``join``) -- polling
with ``wait_until`` (``tests/waits.py``), bounded by ``WAIT_S`` (well under the
600 s a test may take) and failing with what it waited for.  Two of Dask's own bounds are lengthened
for the cluster's life, as a loaded machine needs:

- ``distributed.deploy.lost-worker-timeout``: a LocalCluster closes the nanny of a
  lost worker whose name is not back within it (15 s by default); a nanny whose
  restart takes longer on a loaded machine would be closed mid-restart, and the
  task never come back;
- a nanny's close waits 4 s for its worker to stop, then 5 s for the killed
  process to be reaped, and fails the cluster's close half-way past that:
  the workers are closed first, ``CLOSE_S`` each.

``run_in_thread`` and ``stalled_step`` serve the tests that stop or kill a worker
mid-step.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

import flowbook as tf
from tests.waits import WAIT_S, wait_until

TASKS = ("ps-0", "worker-0", "worker-1")
CLOSE_S = 30.0  # longest close of one worker (its graceful stop: 80 % of it), of the cluster
LOST_WORKER_S = 600.0  # a lost worker's nanny is kept restarting it at least this long


@contextlib.contextmanager
def task_cluster(
    names: Sequence[str] = TASKS,
    processes: bool = False,
    timeout: float = WAIT_S,
    dashboard: bool | None = None,
) -> Iterator[Any]:
    """A Client of a loopback LocalCluster with one worker per name (``dashboard``: serve the
    Dask dashboard; by default only for worker processes)."""
    import dask
    import distributed

    where = {"host": "127.0.0.1", "worker_dashboard_address": ":0"} if processes else {}
    dashboard = processes if dashboard is None else dashboard
    with dask.config.set({"distributed.deploy.lost-worker-timeout": f"{LOST_WORKER_S}s"}):
        cluster = distributed.LocalCluster(
            n_workers=0,
            processes=processes,
            threads_per_worker=1,
            dashboard_address=":0" if dashboard else None,
            **where,
        )
        try:
            for name in names:
                cluster.worker_spec[name] = cluster.new_spec
            cluster.scale(len(names))
            client = distributed.Client(cluster, set_as_default=False, timeout=timeout)
            try:
                client.wait_for_workers(len(names), timeout=timeout)
                yield client
            finally:
                client.close(timeout=CLOSE_S)
        finally:
            _close(cluster, processes)


def _close(cluster: Any, processes: bool) -> None:
    """Close ``cluster``: its nannies first, each given ``CLOSE_S`` (see the module
    docstring), then the rest."""
    if processes:

        async def nannies() -> None:
            await asyncio.gather(
                *(w.close(timeout=CLOSE_S) for w in list(cluster.workers.values()))
            )

        cluster.sync(nannies, callback_timeout=3 * CLOSE_S)
    cluster.close(timeout=3 * CLOSE_S)


# ------------------------------------------------------------------ waiting for events
def workers(client: Any) -> dict[str, str]:
    """The scheduler's workers now: name -> address."""
    return {str(w["name"]): a for a, w in client.scheduler_info(n_workers=-1)["workers"].items()}


def wait_workers(client: Any, names: Sequence[str] = TASKS) -> dict[str, str]:
    """The scheduler's workers (name -> address) once every one of ``names`` is among them."""

    def present() -> dict[str, str] | None:
        now = workers(client)
        return now if set(names) <= set(now) else None

    return wait_until(present, f"the workers {sorted(names)} on the scheduler (one lost?)")


def wait_back(client: Any, name: str, old: str) -> str:
    """The address of the worker ``name`` once the scheduler has it again at an address
    other than ``old`` (its nanny restarted it)."""
    return wait_until(
        lambda: (now := workers(client).get(name)) not in (None, old) and now,
        f"worker {name} to come back under its nanny",
    )


def worker_pid(client: Any, address: str) -> int:
    """The process id of the worker at ``address``."""
    return client.run(os.getpid, workers=[address])[address]


def kill_worker(client: Any, address: str) -> None:
    """Kill the worker process at ``address`` (SIGKILL: its connections close, as when a
    machine is lost) and return once the scheduler has dropped it."""
    os.kill(worker_pid(client, address), signal.SIGKILL)
    wait_until(
        lambda: address not in workers(client).values(),
        f"the scheduler to drop the killed worker {address}",
    )


def open_steps(session: Any, task: str) -> int:
    """How many steps hold values or waiting Recvs on ``task`` (asked of that task alone)."""
    return session._on_tasks("stats", [task], find_lost=False)[task]["open_steps"]


# ------------------------------------------------------------------ steps
def run_in_thread(session: Any, fetches: Any, feed: Any = None) -> tuple[threading.Thread, dict]:
    """Start ``session.run`` on a thread: (thread, box) with box["error"] or box["value"], and
    box["at"], the ``time.monotonic()`` it ended at."""
    box: dict = {}

    def go() -> None:
        try:
            box["value"] = session.run(fetches, feed)
        except Exception as e:  # what the test checks
            box["error"] = e
        box["at"] = time.monotonic()

    thread = threading.Thread(target=go, daemon=True)
    thread.start()
    return thread, box


def stalled_step(name: str) -> tuple[Any, dict]:
    """A step that never ends by itself, on ps-0, worker-0 and worker-1: worker-1 dequeues
    from a queue nobody fills (``put`` would fill it); the ps adds worker-0's ``2a`` to ``a``
    and worker-1's value + 1 to ``b``, once both arrived (its updates wait for them)."""
    g = tf.Graph()
    with g.as_default():
        with tf.device("/job:ps/task:0"):
            a = tf.Variable(1.0, name="a")
            b = tf.Variable(10.0, name="b")
        with tf.device("/job:worker/task:0"):
            da = a * 2.0
        with tf.device("/job:worker/task:1"):
            q = tf.FIFOQueue(4, tf.float32, shared_name=name)
            db = q.dequeue() + 1.0
            put, size = q.enqueue(4.0), q.size()
        with tf.device("/job:ps/task:0"):
            train = tf.group(tf.assign_add(a, da), tf.assign_add(b, db))
        init = tf.global_variables_initializer()
    return g, {"a": a, "b": b, "train": train, "put": put, "size": size, "init": init}


def busy_until_put(name: str, task: str) -> tuple[Any, dict]:
    """A step that computes on ``task`` (a while_loop of matmuls) until a value is put into
    its queue ``name`` (``put``, from another session or thread), its result read on the
    ps as ``total`` (1.0).  A long kernel whose end the test chooses, whatever the load."""
    g = tf.Graph()
    with g.as_default():
        with tf.device(task):
            q = tf.FIFOQueue(1, tf.float32, shapes=[], shared_name=name)
            w = tf.constant(np.full((128, 128), 1 / 128, np.float32))
            _, x = tf.while_loop(
                lambda i, x: q.size() < 1,
                lambda i, x: (i + 1, tf.tanh(tf.matmul(x, w)) + 1.0),
                [tf.constant(0), tf.ones((128, 128))],
            )
            put = q.enqueue(1.0)
        with tf.device("/job:ps/task:0"):
            total = tf.reduce_mean(x) * 0.0 + 1.0
    return g, {"total": total, "put": put}
