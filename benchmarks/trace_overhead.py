"""Tracing overhead: what ``RunOptions(trace_level=FULL_TRACE)`` costs a run.

Two workloads, each timed three ways in the same process, interleaved
(round-robin blocks, medians over the rounds), reported as ratios:

- ``mlp``: one SGD step of the MLP 64-128-10 at batch 100 on the digits
  (the model of ``benchmarks/train.py``);
- ``chain``: a chain of 2000 ``add`` ops fed from a scalar placeholder (the
  chain of ``benchmarks/overhead.py``).

The three ways: **default** (untraced, the path a user's run takes: for both
workloads the plan's compiled straight line -- the MLP's matmuls are too
small at batch 100 for the pool, so after its first scheduled run the plan
runs straight), **threaded** (untraced, but with an Observer that does
nothing attached, which forces the threaded scheduler and its per-op
observer calls), and **traced** (FULL_TRACE with a RunMetadata: a traced
run keeps the path its untraced runs take, here the plan's timed straight
line, which reads the clock once per op and stores only the output shapes
the fed shapes do not determine).

The goals (≤ 1.10x on the MLP step, ≤ 1.5x on the chain) are read against
``default``, what a user sees; ``traced/threaded`` is shown beside it.

The step stats are built on first read, after the run; that cost, per op,
is reported too (``build_us_per_op``), as is generating a Chrome trace.

Usage: ``python benchmarks/trace_overhead.py [--quick]``; writes
``benchmarks/results/trace_overhead.json``.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from _common import CHAIN, add_chain, print_table, write_json
from train import batches, flowbook_step  # benchmarks/train.py (the script's own folder)

import flowbook as fb
from flowbook.profiling.timeline import Timeline
from flowbook.runtime.executor import Observer

GOALS = {"mlp": 1.10, "chain": 1.5}  # traced / default (untraced, its usual path)


def interleaved(modes: dict[str, Callable[[], None]], rounds: int) -> dict[str, float]:
    """Median seconds of one call of each mode, the modes taking turns each round."""
    samples: dict[str, list[float]] = {k: [] for k in modes}
    for fn in modes.values():
        fn()  # warm up: plans built and compiled, caches hot
    for r in range(rounds):
        order = list(modes.items())
        if r % 2:
            order.reverse()  # no mode always runs right after the same other mode
        for name, fn in order:
            t0 = time.perf_counter()
            fn()
            samples[name].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in samples.items()}


def three_ways(run: Callable[..., Any], block: int) -> dict[str, Callable[[], None]]:
    """default / threaded / traced versions of ``block`` calls of ``run(**run_kwargs)``."""
    md = fb.RunMetadata()
    opts = fb.RunOptions(trace_level=fb.RunOptions.FULL_TRACE)
    idle = Observer()

    def default() -> None:
        for _ in range(block):
            run()

    def threaded() -> None:
        with fb.observe(idle):
            for _ in range(block):
                run()

    def traced() -> None:
        for _ in range(block):
            run(options=opts, run_metadata=md)

    return {"default": default, "threaded": threaded, "traced": traced}


def ratios(t: dict[str, float], per: int, ops: int) -> dict[str, Any]:
    return {
        "us_per_run": {k: v / per * 1e6 for k, v in t.items()},
        "ops_per_run": ops,
        "traced_vs_default": t["traced"] / t["default"],
        "traced_vs_threaded": t["traced"] / t["threaded"],
        "threaded_vs_default": t["threaded"] / t["default"],
    }


def build_cost(run: Callable[..., Any], ops: int, repeat: int = 5) -> dict[str, float]:
    """µs per op to materialise a traced run's StepStats, and to make its Chrome trace."""
    opts = fb.RunOptions(trace_level=fb.RunOptions.FULL_TRACE)
    build, trace = [], []
    for _ in range(repeat):
        md = fb.RunMetadata()
        run(options=opts, run_metadata=md)
        gc.collect()  # a full collection lands in some windows and not others: time the work
        t0 = time.perf_counter()
        _ = md.step_stats.dev_stats
        t1 = time.perf_counter()
        Timeline(md.step_stats).generate_chrome_trace_format()
        t2 = time.perf_counter()
        build.append(t1 - t0)
        trace.append(t2 - t1)
    return {
        "build_us_per_op": statistics.median(build) / ops * 1e6,
        "chrome_trace_us_per_op": statistics.median(trace) / ops * 1e6,
    }


def bench_mlp(rounds: int, block: int) -> dict[str, Any]:
    digits = fb.datasets.load_digits()
    data = batches(digits.train.images, digits.train.labels, block)
    sess, _ = flowbook_step(128)
    g = sess.graph
    train = g.get_operation_by_name("GradientDescent")
    x, y = g.get_tensor_by_name("x:0"), g.get_tensor_by_name("y:0")
    feeds = iter(())

    def step(**kw: Any) -> None:
        nonlocal feeds
        try:
            bx, by = next(feeds)
        except StopIteration:
            feeds = iter(data)
            bx, by = next(feeds)
        sess.run(train, {x: bx, y: by}, **kw)

    t = interleaved(three_ways(step, block), rounds)
    ops = len(list(sess._plans.values())[-1].ops)  # the training step's plan
    out = ratios(t, block, ops) | build_cost(step, ops)
    sess.close()
    return out


def bench_chain(rounds: int, block: int) -> dict[str, Any]:
    g, x, y = add_chain(CHAIN)
    sess = fb.Session(graph=g)
    feed = {x: np.float32(1.0)}

    def run(**kw: Any) -> None:
        sess.run(y, feed, **kw)

    run()
    run()  # the second run compiles the plan
    t = interleaved(three_ways(run, block), rounds)
    ops = len(next(iter(sess._plans.values())).ops)
    out = ratios(t, block, ops) | build_cost(run, ops)
    sess.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (for CI smoke runs)")
    parser.add_argument(
        "--out", default=str(Path(__file__).parent / "results" / "trace_overhead.json")
    )
    args = parser.parse_args()
    rounds = 7 if args.quick else 31
    results: dict[str, Any] = {
        "mlp": bench_mlp(rounds, 20 if args.quick else 50),
        "chain": bench_chain(rounds, 2 if args.quick else 5),
        "goals_traced_vs_default": GOALS,
        "machine": {
            "python": platform.python_version(),
            "numpy": np.__version__,
            "cpus": os.cpu_count(),
        },
    }
    header = (
        "workload",
        "ops",
        "default µs",
        "threaded µs",
        "traced µs",
        "traced/default",
        "traced/threaded",
        "goal (traced/default)",
        "build µs/op",
    )
    names = {"mlp": "MLP 64-128-10 SGD step, batch 100", "chain": "chain of 2000 adds"}
    rows = []
    for k in ("mlp", "chain"):
        r = results[k]
        us = r["us_per_run"]
        rows.append(
            (
                names[k],
                str(r["ops_per_run"]),
                f"{us['default']:.0f}",
                f"{us['threaded']:.0f}",
                f"{us['traced']:.0f}",
                f"{r['traced_vs_default']:.2f}x",
                f"{r['traced_vs_threaded']:.2f}x",
                f"≤ {GOALS[k]}x",
                f"{r['build_us_per_op']:.1f}",
            )
        )
    print_table(header, rows)
    write_json(args.out, results)


if __name__ == "__main__":
    main()
