"""Synchronous data-parallel training on a Dask cluster: 1 against 2 (or more) workers.

In-graph replication, the whitepaper's synchronous data parallelism (§7):
the variables of an MLP live on ``ps-0``; the batch is split into one
shard per worker; each worker's tower computes its gradients; the ps
averages them and applies one SGD step.  The cluster is a loopback
``LocalCluster`` of processes (``ps-0``, ``worker-0``, ...), one thread and
one BLAS thread each.  In the same run:

- ``steps/s`` of the synchronous step with its towers on 1 and on 2 workers
  (the same global batch: strong scaling), for the digits MLP 64-128-10
  (batch 100: Dask-bound) and a compute-bound MLP 64-2048-10 (batch 1024);
  the scaling ratio is ``steps/s on 2 / steps/s on 1`` (goal: 1.6x on a
  compute-bound model where the machine has the cores);
- the same step in a local session (the baseline every ratio is against);
- the **fixed cost** of a distributed step: a 1-op graph on one task,
  against the same graph run locally;
- the **bytes moved** between tasks per step, against the model's size;
- what watching costs: the small step with an observer that watches it
  whole (the tasks report their start and end in the reply), against none.

The 2 vCPUs of this machine kind give about one core of parallel
throughput (DESIGN.md §4), and the ps and the client need CPU too: here 2
workers cannot run twice as fast as one, whatever the engine; read the
ratios on a machine with free cores (``--workers 1,2,4,8``).

Usage: ``python benchmarks/dask_scaling.py [--quick] [--workers 1,2]``; writes
``benchmarks/results/dask_scaling.json``.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # one BLAS thread per process: a worker is one core

import numpy as np  # noqa: E402
from _common import print_table, write_json  # noqa: E402

import flowbook as tf  # noqa: E402

PS = "/job:ps/task:0"
GOAL_SCALING = 1.6  # 2 workers against 1, compute-bound, where the cores exist
MODELS = {"digits MLP 64-128-10": (128, 100), "compute-bound MLP 64-2048-10": (2048, 1024)}


def cluster_of(workers: int) -> tuple[Any, Any]:
    """A loopback LocalCluster of processes, ps-0 and worker-0..n-1, and its client."""
    from distributed import Client, LocalCluster

    cluster = LocalCluster(
        n_workers=0,
        processes=True,
        threads_per_worker=1,
        host="127.0.0.1",
        dashboard_address=":0",
        worker_dashboard_address=":0",
    )
    names = ["ps-0", *(f"worker-{k}" for k in range(workers))]
    for name in names:
        cluster.worker_spec[name] = cluster.new_spec
    cluster.scale(len(names))
    client = Client(cluster, direct_to_workers=True, set_as_default=False)
    client.wait_for_workers(len(names), timeout=120)
    return cluster, client


def sync_graph(towers: int, hidden: int, batch: int) -> dict[str, Any]:
    """The MLP with one tower per worker, gradients averaged on the ps (in-graph replication)."""
    g = tf.Graph()
    rng = np.random.default_rng(1)
    with g.as_default():
        with tf.device(PS):
            w1 = tf.Variable(
                (rng.standard_normal((64, hidden)) * 0.1).astype(np.float32), name="w1"
            )
            b1 = tf.Variable(np.zeros(hidden, np.float32), name="b1")
            w2 = tf.Variable(
                (rng.standard_normal((hidden, 10)) * 0.1).astype(np.float32), name="w2"
            )
            b2 = tf.Variable(np.zeros(10, np.float32), name="b2")
        params = [w1, b1, w2, b2]
        xs, ys, grads, losses = [], [], [], []
        for k in range(towers):
            with tf.device(f"/job:worker/task:{k}"), tf.name_scope(f"tower_{k}"):
                x = tf.placeholder(tf.float32, [batch // towers, 64], name="x")
                y = tf.placeholder(tf.int32, [batch // towers], name="y")
                h = tf.nn.relu(tf.matmul(x, w1) + b1)
                loss = tf.reduce_mean(
                    tf.nn.sparse_softmax_cross_entropy_with_logits(
                        labels=y, logits=tf.matmul(h, w2) + b2
                    )
                )
                grads.append(tf.gradients(loss, params))
                xs.append(x)
                ys.append(y)
                losses.append(loss)
        with tf.device(PS), tf.name_scope("average"):
            avg = [tf.add_n([gs[i] for gs in grads]) / float(towers) for i in range(len(params))]
            train = tf.train.GradientDescentOptimizer(0.1).apply_gradients(zip(avg, params))
            loss = tf.add_n(losses) / float(towers)
        init = tf.global_variables_initializer()
    model_bytes = 4 * (64 * hidden + hidden + hidden * 10 + 10)
    return {
        "graph": g,
        "xs": xs,
        "ys": ys,
        "train": train,
        "loss": loss,
        "init": init,
        "model_bytes": model_bytes,
    }


def feeds(m: dict[str, Any], batch: int, n: int) -> list[dict]:
    rng = np.random.default_rng(0)
    out = []
    for _ in range(n):
        x = rng.random((batch, 64), np.float32)
        y = rng.integers(0, 10, batch).astype(np.int32)
        k = len(m["xs"])
        shard = batch // k
        out.append(
            {
                **{m["xs"][i]: x[i * shard : (i + 1) * shard] for i in range(k)},
                **{m["ys"][i]: y[i * shard : (i + 1) * shard] for i in range(k)},
            }
        )
    return out


class _Whole(tf.Observer):
    """Watches every run whole (``for_run`` gives None): only its start and end."""

    def for_run(self, plan: Any) -> None:
        return None


def _rate(step: Callable[[int], Any], n: int) -> float:
    t = time.perf_counter()
    for k in range(n):
        step(k)
    return n / (time.perf_counter() - t)


def steps_per_s(step: Callable[[int], Any], n: int, rounds: int) -> float:
    """Median over ``rounds`` of ``n`` steps' rate (after 10 warm-up steps)."""
    for k in range(10):
        step(k)
    return statistics.median(_rate(step, n) for _ in range(rounds))


def watched_and_not(step: Callable[[int], Any], n: int, rounds: int) -> tuple[float, float]:
    """Steps/s unwatched and watched whole, in alternating rounds (medians)."""
    for k in range(10):
        step(k)
    plain, watched = [], []
    for _ in range(rounds):
        plain.append(_rate(step, n))
        with tf.observe(_Whole()):
            watched.append(_rate(step, n))
    return statistics.median(plain), statistics.median(watched)


def runner(sess: Any, fetch: list, data: list[dict]) -> Callable[[int], Any]:
    """Step ``j``: one training step on the ``j``-th batch (of 16, in turn)."""
    return lambda j: sess.run(fetch, data[j % len(data)])


def measure_model(
    client: Any, workers: list[int], hidden: int, batch: int, n: int, rounds: int
) -> dict[str, Any]:
    out: dict[str, Any] = {"hidden": hidden, "batch": batch}
    for k in workers:
        m = sync_graph(k, hidden, batch)
        data = feeds(m, batch, 16)
        fetch = [m["loss"], m["train"]]
        with tf.Session(client, graph=m["graph"]) as s:
            s.reset_cluster()  # the variables of an earlier graph go
            s.run(m["init"])
            before = s.task_stats()
            out[f"steps_s_{k}w"] = steps_per_s(runner(s, fetch, data), n, rounds)
            after = s.task_stats()
            ran = (
                after["/job:ps/replica:0/task:0"]["steps"]
                - before["/job:ps/replica:0/task:0"]["steps"]
            )
            moved = sum(after[t]["sent_bytes"] - before[t]["sent_bytes"] for t in after)
            out[f"bytes_per_step_{k}w"] = moved / ran
            out[f"bytes_per_model_{k}w"] = moved / ran / m["model_bytes"]
            if k == workers[0]:
                plain, watched = watched_and_not(runner(s, fetch, data), n, rounds)
                out["watched_whole_ratio"] = watched / plain
                out["steps_s_watched_whole"] = watched
        if k == workers[0]:
            with tf.Session(graph=m["graph"]) as local:
                local.run(m["init"])
                out["local_steps_s"] = steps_per_s(runner(local, fetch, data), n, rounds)
        out["model_bytes"] = m["model_bytes"]
    base = out[f"steps_s_{workers[0]}w"]
    for k in workers:
        out[f"scaling_{k}w"] = out[f"steps_s_{k}w"] / base
        out[f"vs_local_{k}w"] = out[f"steps_s_{k}w"] / out["local_steps_s"]
    return out


def fixed_cost(client: Any, n: int, rounds: int) -> dict[str, float]:
    """A 1-op step on worker-0 against the same graph in a local session, µs per step."""
    g = tf.Graph()
    with g.as_default(), tf.device("/job:worker/task:0"):
        x = tf.placeholder(tf.float32, [], name="x")
        y = x + 1.0
    with tf.Session(graph=g) as local, tf.Session(client, graph=g) as s:
        local_us = 1e6 / steps_per_s(lambda j: local.run(y, {x: 1.0}), n * 10, rounds)
        dist_us = 1e6 / steps_per_s(lambda j: s.run(y, {x: 1.0}), n, rounds)
    return {
        "local_us": local_us,
        "distributed_us": dist_us,
        "fixed_cost_ms": (dist_us - local_us) / 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer steps (a smoke run)")
    parser.add_argument("--workers", default="1,2", help="worker counts to compare (1,2,4,8)")
    args = parser.parse_args()
    workers = [int(w) for w in args.workers.split(",")]
    n, rounds = (10, 2) if args.quick else (60, 5)
    cluster, client = cluster_of(max(workers))
    results: dict[str, Any] = {
        "machine": platform.machine(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "workers": workers,
    }
    try:
        results["fixed_cost"] = fc = fixed_cost(client, n, rounds)
        for name, (hidden, batch) in MODELS.items():
            results[name] = measure_model(client, workers, hidden, batch, n, rounds)
    finally:
        client.close()
        cluster.close()
    rows = [
        ("1-op step", "local (baseline)", f"{fc['local_us']:.0f} µs", ""),
        (
            "1-op step",
            "on worker-0",
            f"{fc['distributed_us']:.0f} µs",
            f"fixed cost {fc['fixed_cost_ms']:.2f} ms",
        ),
    ]
    for name in MODELS:
        r = results[name]
        rows.append((name, "local session (baseline)", f"{r['local_steps_s']:.0f} steps/s", ""))
        for k in workers:
            rows.append(
                (
                    name,
                    f"sync, towers on {k} worker(s)",
                    f"{r[f'steps_s_{k}w']:.0f} steps/s",
                    f"{r[f'scaling_{k}w']:.2f}x {workers[0]} worker(s), "
                    f"{r[f'vs_local_{k}w']:.2f}x local",
                )
            )
            rows.append(
                (
                    name,
                    f"bytes moved per step, {k} worker(s)",
                    f"{r[f'bytes_per_step_{k}w'] / 1e3:.0f} kB",
                    f"{r[f'bytes_per_model_{k}w']:.2f}x the model ({r['model_bytes'] / 1e3:.0f} kB)",
                )
            )
        rows.append(
            (
                name,
                f"watched whole, {workers[0]} worker(s)",
                f"{r['steps_s_watched_whole']:.0f} steps/s",
                f"{r['watched_whole_ratio']:.2f}x unwatched (alternating rounds)",
            )
        )
    print_table(("model", "run", "figure", "against"), rows)
    top = results["compute-bound MLP 64-2048-10"]
    if 2 in workers:
        met = top["scaling_2w"] >= GOAL_SCALING
        print(
            f"\ncompute-bound scaling 2 vs 1 workers: {top['scaling_2w']:.2f}x "
            f"(goal {GOAL_SCALING}x: {'met' if met else 'not met'}; {os.cpu_count()} CPUs here"
            + (
                "; 2 vCPUs give about one core of parallel throughput, so they cap it)"
                if (os.cpu_count() or 0) <= 2
                else ")"
            )
        )
    write_json(str(Path(__file__).parent / "results" / "dask_scaling.json"), results)


if __name__ == "__main__":
    main()
