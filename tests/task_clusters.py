"""The Dask clusters the distributed tests run on: loopback, one worker per task, named after it.

``task_cluster()`` starts a ``distributed.LocalCluster`` with no workers, adds one
per name (``"ps-0"``, ``"worker-1"``: a cluster session maps ``/job:ps/task:0`` to
the worker named ``ps-0``), waits for them within ``timeout`` seconds and yields a
``Client``; both are closed on the way out, whatever happened.  ``processes=True``
gives each worker its own process talking TCP on 127.0.0.1 (what a real cluster
does, and what a test that kills or stops a worker needs); in-process workers
start in a fraction of the time.  ``run_in_thread`` and ``stalled_step`` serve the
tests that stop or kill a worker mid-step.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

import flowbook as tf

TASKS = ("ps-0", "worker-0", "worker-1")


@contextlib.contextmanager
def task_cluster(
    names: Sequence[str] = TASKS,
    processes: bool = False,
    timeout: float = 60,
    dashboard: bool | None = None,
) -> Iterator[Any]:
    """A Client of a loopback LocalCluster with one worker per name (``dashboard``: serve the
    Dask dashboard; by default only for worker processes)."""
    import distributed

    where = {"host": "127.0.0.1", "worker_dashboard_address": ":0"} if processes else {}
    dashboard = processes if dashboard is None else dashboard
    cluster = distributed.LocalCluster(
        n_workers=0, processes=processes, threads_per_worker=1,
        dashboard_address=":0" if dashboard else None, **where,
    )  # fmt: skip
    try:
        for name in names:
            cluster.worker_spec[name] = cluster.new_spec
        cluster.scale(len(names))
        client = distributed.Client(cluster, set_as_default=False)
        try:
            client.wait_for_workers(len(names), timeout=timeout)
            yield client
        finally:
            client.close()
    finally:
        cluster.close()


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
