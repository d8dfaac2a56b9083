"""Between-graph training on ``tf.train.Server``s: synchronous (SyncReplicasOptimizer) and async.

In one process, three Servers of one ClusterSpec on loopback (ps 0 hosting
the Dask scheduler, workers 0 and 1), each worker's between-graph client on
a thread with its own graph and ``MonitoredTrainingSession``, as a TF1
script's processes would be.  The model is the digits MLP 64-128-10, batch
100 per worker, variables on the ps.  In the same run, in global steps (model
updates) per second:

- ``local``: the model on one machine, a local session (the baseline);
- ``sync_1``: ``SyncReplicasOptimizer`` with one worker (its gradient is taken
  by the chief's queue runner, applied on the ps, a token handed back);
- ``sync_2``: the same with two workers, each update the mean of both
  workers' gradients (twice the examples per update);
- ``async_2``: two workers applying their own updates (plain SGD, between-graph).

Each synchronous update costs a worker's step (push, wait for a token) plus
the chief's sync step, Dask round trips rather than compute on this small
model: read the ratios against ``local``.  This machine has 2 vCPUs shared by
other work; 2 workers cannot run faster than 1 here.

Usage: ``python benchmarks/sync_replicas.py [--quick]``; writes
``benchmarks/results/sync_replicas.json``.
"""

from __future__ import annotations

import argparse
import platform
import socket
import threading
import time
from typing import Any

import numpy as np
from _common import print_table, write_json
from train import batches  # benchmarks/train.py (the script's own folder)

import flowbook as tf
from flowbook.data.datasets import load_digits


def _ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def model(x: Any, y: Any) -> Any:
    init = tf.glorot_uniform_initializer(seed=1)
    h = tf.layers.dense(x, 128, tf.nn.relu, kernel_initializer=init, name="hidden")
    logits = tf.layers.dense(h, 10, kernel_initializer=init, name="out")
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))


def local_steps_s(data: list, n: int) -> float:
    with tf.Graph().as_default():
        x, y = tf.placeholder(tf.float32, [None, 64]), tf.placeholder(tf.int32, [None])
        train = tf.train.GradientDescentOptimizer(0.1).minimize(model(x, y))
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            s.run(train, {x: data[0][0], y: data[0][1]})
            t = time.perf_counter()
            for k in range(n):
                s.run(train, {x: data[k][0], y: data[k][1]})
            return n / (time.perf_counter() - t)


def worker(
    target: str, cluster: Any, task: int, replicas: int, sync: bool, data: list, n: int, times: dict
) -> None:
    with tf.Graph().as_default():
        with tf.device(
            tf.train.replica_device_setter(
                cluster=cluster, worker_device=f"/job:worker/task:{task}"
            )
        ):
            x, y = tf.placeholder(tf.float32, [None, 64]), tf.placeholder(tf.int32, [None])
            step = tf.train.get_or_create_global_step()
            opt = tf.train.GradientDescentOptimizer(0.1)
            if sync:
                opt = tf.train.SyncReplicasOptimizer(opt, replicas, replicas)
            train = opt.minimize(model(x, y), global_step=step)
        hooks = [opt.make_session_run_hook(task == 0)] if sync else []
        hooks.append(tf.train.StopAtStepHook(last_step=n + 2))
        with tf.train.MonitoredTrainingSession(
            master=target, is_chief=task == 0, hooks=hooks, max_wait_secs=120
        ) as sess:
            k = 0
            while not sess.should_stop():
                if k == 2 and task == 0:  # after the first updates: the timed stretch
                    times["start"] = (time.perf_counter(), sess.run(step))
                sess.run(train, {x: data[k % len(data)][0], y: data[k % len(data)][1]})
                k += 1
            if task == 0:
                times["end"] = (time.perf_counter(), sess.run(step))


def cluster_steps_s(workers: int, sync: bool, data: list, n: int) -> float:
    ps, *ws = (f"127.0.0.1:{p}" for p in _ports(1 + workers))
    cluster = tf.train.ClusterSpec({"ps": [ps], "worker": ws})
    servers = [tf.train.Server(cluster, "ps", 0)]
    servers += [tf.train.Server(cluster, "worker", k) for k in range(workers)]
    times: dict[str, Any] = {}
    try:
        threads = [
            threading.Thread(
                target=worker,
                args=(servers[1 + k].target, cluster, k, workers, sync, data[k::workers], n, times),
            )
            for k in range(workers)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(600)
    finally:
        for s in reversed(servers):
            s.close()
    (t0, s0), (t1, s1) = times["start"], times["end"]
    return (s1 - s0) / (t1 - t0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer steps (a smoke run)")
    args = parser.parse_args()
    n = 20 if args.quick else 200
    digits = load_digits()
    data = batches(digits.train.images, digits.train.labels.astype(np.int32), 2 * n + 8)
    local = local_steps_s(data, n)
    results: dict[str, Any] = {
        "machine": platform.machine(),
        "python": platform.python_version(),
        "steps": n,
        "local_steps_s": local,
    }
    rows = [("local session (baseline)", f"{local:.0f} updates/s", "1.00x")]
    for name, workers, sync in (("sync_1", 1, True), ("sync_2", 2, True), ("async_2", 2, False)):
        rate = results[f"{name}_steps_s"] = cluster_steps_s(workers, sync, data, n)
        results[f"{name}_ratio"] = rate / local
        rows.append((name, f"{rate:.0f} updates/s", f"{rate / local:.3f}x"))
    results["sync_2_per_sync_1"] = results["sync_2_steps_s"] / results["sync_1_steps_s"]
    rows.append(
        (
            "sync 2 workers / 1 worker",
            f"{results['sync_2_per_sync_1']:.2f}x",
            "updates/s (each of sync_2's holds twice the examples)",
        )
    )
    print_table(("workload", "figure", "against local"), rows)
    write_json("benchmarks/results/sync_replicas.json", results)


if __name__ == "__main__":
    main()
