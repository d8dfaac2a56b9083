"""The fixed cost of a step on a Dask cluster, against a local run and Dask's own round trip.

A loopback ``LocalCluster`` of three workers named ``ps-0``, ``worker-0`` and
``worker-1`` (one thread each), in-process (``inproc``) and as processes
(TCP on 127.0.0.1), and in the same run, per step (medians of rounds):

- ``local``: the graph in a local ``tf.Session`` (the baseline);
- ``dask_round_trip``: one no-op call to a task server (Dask's own cost of a
  direct actor call, what one step per task cannot go below);
- ``one_task``: a 1-op graph on one task (one Dask call per step);
- ``three_tasks``: a chain ps -> worker-0 -> worker-1, one op on each (three
  Dask calls sent at once, two Send/Recv transfers worker to worker; each
  task receives first, so each partition runs on its worker's event loop);
- ``after_add_op``: the chain's step re-run after one op was added to the
  graph (each time): the session's plan cache (``flowbook.runtime.plan_cache``)
  keeps the distributed plan, so it should cost what ``three_tasks`` (a
  plain re-run) costs, ratio ~1; ``after_edit``: re-run after an edit of an
  op of the plan (its device set again), which drops the plan: pruned,
  partitioned, sent and compiled on the tasks again (what every added op
  would cost without the cache);
- ``mlp``: an SGD step of the MLP 64-128-10 (batch 100, the digits), its
  variables on the ps and its forward and backward pass on worker-0, with
  the bytes moved between tasks per step against the model's size.

The fixed cost of a distributed step is ``three_tasks - local``; the goal
is under 5 ms on loopback.  ``three_tasks_calls_per_step`` counts the Dask
calls the client made per step (3: one per task).  The measured figures are
in ``docs/performance.md`` ("Running on a Dask cluster").  This machine has
2 vCPUs shared by other work: read the ratios, and expect noise.

Usage: ``python benchmarks/dask_cluster.py [--quick]`` (not ``distributed.py``: a script of that
name in this folder would shadow the ``distributed`` package); writes
``benchmarks/results/dask_cluster.json``.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from _common import print_table, write_json
from train import batches  # benchmarks/train.py (the script's own folder)

import flowbook as tf
from flowbook.data.datasets import load_digits

GOAL_MS = 5.0  # a distributed step's fixed cost on loopback
PS, W0, W1 = "/job:ps/task:0", "/job:worker/task:0", "/job:worker/task:1"


def named_cluster(processes: bool) -> Any:
    from distributed import LocalCluster

    where = {"host": "127.0.0.1", "worker_dashboard_address": ":0"} if processes else {}
    cluster = LocalCluster(
        n_workers=0,
        processes=processes,
        threads_per_worker=1,
        dashboard_address=":0" if processes else None,
        **where,
    )
    for name in ("ps-0", "worker-0", "worker-1"):
        cluster.worker_spec[name] = cluster.new_spec
    cluster.scale(3)
    return cluster


def per_step_us(fn: Callable[[], Any], n: int, rounds: int, warm_s: float = 0.5) -> float:
    """Median over ``rounds`` of the mean time of ``n`` calls, in µs, after ``warm_s`` seconds
    of calls (new worker processes are still importing; partitions compile)."""
    fn()
    until = time.perf_counter() + warm_s
    while time.perf_counter() < until:
        fn()
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        times.append((time.perf_counter() - t) / n * 1e6)
    return statistics.median(times)


def chain_graph() -> tuple[Any, Any, Any, Any]:
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [], name="x")
        with tf.device(W1):
            one = x + 1.0
        with tf.device(PS):
            a = x * 2.0
        with tf.device(W0):
            b = a + 1.0
        with tf.device(W1):
            c = b * 3.0
    return g, x, one, c


def mlp_graph() -> tuple[Any, ...]:
    g = tf.Graph()
    with g.as_default(), tf.device(tf.train.replica_device_setter(ps_tasks=1)):
        x = tf.placeholder(tf.float32, [None, 64], name="x")
        y = tf.placeholder(tf.int32, [None], name="y")
        rng = np.random.default_rng(1)
        w1 = tf.Variable((rng.standard_normal((64, 128)) * 0.1).astype(np.float32), name="w1")
        b1 = tf.Variable(np.zeros(128, np.float32), name="b1")
        w2 = tf.Variable((rng.standard_normal((128, 10)) * 0.1).astype(np.float32), name="w2")
        b2 = tf.Variable(np.zeros(10, np.float32), name="b2")
        logits = tf.matmul(tf.nn.relu(tf.matmul(x, w1) + b1), w2) + b2
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
        )
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        init = tf.global_variables_initializer()
    model_bytes = 4 * (64 * 128 + 128 + 128 * 10 + 10)
    return g, x, y, loss, train, init, model_bytes


def measure(processes: bool, n: int, rounds: int) -> dict[str, Any]:
    from distributed import Client

    cluster = named_cluster(processes)
    client = Client(cluster, direct_to_workers=True, set_as_default=False)
    client.wait_for_workers(3)
    out: dict[str, Any] = {}
    try:
        g, x, one, c = chain_graph()
        with tf.Session(graph=g) as local, tf.Session(client, graph=g) as s:
            server = s._servers["/job:ps/replica:0/task:0"]
            out["local_us"] = per_step_us(lambda: local.run(c, {x: 1.0}), n * 10, rounds)
            out["dask_round_trip_us"] = per_step_us(lambda: server.stats().result(), n, rounds)
            out["one_task_us"] = per_step_us(lambda: s.run(one, {x: 1.0}), n, rounds)
            calls = s.calls["run"]
            out["three_tasks_us"] = per_step_us(lambda: s.run(c, {x: 1.0}), n, rounds)
            out["three_tasks_calls_per_step"] = (s.calls["run"] - calls) / (n * rounds + 1)
            assert s.run(c, {x: 1.0}) == local.run(c, {x: 1.0}) == 9.0

            def after_add() -> Any:
                with g.as_default(), tf.device(W1):
                    tf.identity(c)  # a new op: c's plan stays
                return s.run(c, {x: 1.0})

            def after_edit() -> Any:
                c.op._set_device(W1)  # the same device, but an edit: c's plan goes
                return s.run(c, {x: 1.0})

            registered = sum(t["registered"] for t in s.task_stats().values())
            out["after_add_op_us"] = per_step_us(after_add, n, rounds)
            out["after_add_registered"] = (
                sum(t["registered"] for t in s.task_stats().values()) - registered
            )
            out["after_edit_us"] = per_step_us(after_edit, max(n // 4, 5), rounds, warm_s=0.1)
            assert s.run(c, {x: 1.0}) == 9.0
        out["after_add_op_ratio"] = out["after_add_op_us"] / out["three_tasks_us"]
        out["after_edit_ratio"] = out["after_edit_us"] / out["three_tasks_us"]
        out["fixed_cost_ms"] = (out["three_tasks_us"] - out["local_us"]) / 1000
        out["three_tasks_per_round_trip"] = out["three_tasks_us"] / out["dask_round_trip_us"]
        out["meets_goal"] = out["fixed_cost_ms"] < GOAL_MS
        g, x, y, loss, train, init, model_bytes = mlp_graph()
        digits = load_digits()
        data = batches(digits.train.images, digits.train.labels, 20)
        k = iter(range(10**9))

        def step(sess: Any) -> Any:
            bx, by = data[next(k) % len(data)]
            return sess.run([loss, train], {x: bx, y: by})

        with tf.Session(graph=g) as local, tf.Session(client, graph=g) as s:
            local.run(init)
            s.run(init)
            out["mlp_local_steps_s"] = 1e6 / per_step_us(lambda: step(local), n, rounds)
            before = s.task_stats()
            out["mlp_dask_steps_s"] = 1e6 / per_step_us(lambda: step(s), n, rounds)
            after = s.task_stats()
            steps = (
                after[s.last_step["tasks"][0]]["steps"] - before[s.last_step["tasks"][0]]["steps"]
            )
            moved = sum(after[t]["sent_bytes"] - before[t]["sent_bytes"] for t in after)
        out["mlp_ratio"] = out["mlp_dask_steps_s"] / out["mlp_local_steps_s"]
        out["mlp_bytes_per_step"] = moved / steps
        out["mlp_model_bytes"] = model_bytes
        out["mlp_bytes_per_model_size"] = moved / steps / model_bytes
    finally:
        client.close()
        cluster.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer steps (a smoke run)")
    args = parser.parse_args()
    n, rounds = (20, 3) if args.quick else (200, 5)
    results: dict[str, Any] = {"machine": platform.machine(), "python": platform.python_version()}
    rows = []
    for mode, processes in (("inproc", False), ("processes", True)):
        r = results[mode] = measure(processes, n, rounds)
        rows += [
            (mode, "local run (baseline)", f"{r['local_us']:.0f} µs", ""),
            (mode, "Dask actor round trip", f"{r['dask_round_trip_us']:.0f} µs", ""),
            (mode, "step on 1 task", f"{r['one_task_us']:.0f} µs", ""),
            (
                mode,
                "step on 3 tasks (chain)",
                f"{r['three_tasks_us']:.0f} µs",
                f"{r['three_tasks_per_round_trip']:.2f}x a round trip",
            ),
            (
                mode,
                "fixed cost (3 tasks - local)",
                f"{r['fixed_cost_ms']:.2f} ms",
                f"goal < {GOAL_MS} ms: {'met' if r['meets_goal'] else 'NOT met'}",
            ),
            (
                mode,
                "chain re-run after adding an op",
                f"{r['after_add_op_us']:.0f} µs",
                f"{r['after_add_op_ratio']:.2f}x a plain re-run "
                f"({r['after_add_registered']} partitions registered)",
            ),
            (
                mode,
                "chain re-run after an edit",
                f"{r['after_edit_us']:.0f} µs",
                f"{r['after_edit_ratio']:.2f}x a plain re-run (plan rebuilt)",
            ),
            (
                mode,
                "MLP step, ps + worker",
                f"{r['mlp_dask_steps_s']:.0f} steps/s",
                f"{r['mlp_ratio']:.2f}x local ({r['mlp_local_steps_s']:.0f} steps/s)",
            ),
            (
                mode,
                "MLP bytes between tasks per step",
                f"{r['mlp_bytes_per_step']:.0f} B",
                f"{r['mlp_bytes_per_model_size']:.2f}x the model ({r['mlp_model_bytes']} B)",
            ),
        ]
    print_table(("cluster", "workload", "figure", "against"), rows)
    write_json("benchmarks/results/dask_cluster.json", results)


if __name__ == "__main__":
    main()
