"""Stepper cost: microseconds per ``step()`` on 1,000-op graphs, against the plain run.

The Stepper must answer one ``step()`` in well under 5 ms on a 1,000-op
graph; its bookkeeping (a ready deque and pending counts) makes that a few
microseconds whatever the graph's size.  Measured, in one process:

- ``chain``: a chain of 999 ``add`` ops and their constant (1,000 ops);
  ``step()`` FIFO to the end, per step, against the threaded scheduler's
  per-node time on the same plan (``sess.run`` with an observer attached) and
  the same 1,000 numpy 0-d additions in a Python loop.
- ``wide``: 998 independent ``add`` ops summed by one ``add_n`` (1,000 ops;
  a ready deque ~1,000 long): ``step()`` FIFO, and ``step(name)`` taking the
  newest ready op first (out of the deque's order, name lookup included).
- ``cont``: ``cont()`` of the chain, per op (no per-step call overhead).
- ``build``: ``Stepper(...)`` construction (the plan build), once per graph.

Usage: ``python benchmarks/stepper.py [--quick]``; prints µs per step and
writes ``benchmarks/results/stepper.json``.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
from _common import write_json

import flowbook as fb
from flowbook.debug import Stepper

N = 1000
GOAL_US = 5000.0  # the requirement: one step well under 5 ms


def per_step(make: Any, drive: Any, repeat: int) -> float:
    """Median µs per op of ``drive(stepper)`` over ``repeat`` fresh passes."""
    samples = []
    for _ in range(repeat):
        stepper = make()
        t0 = time.perf_counter()
        drive(stepper)
        samples.append((time.perf_counter() - t0) / len(stepper.plan.ops) * 1e6)
    return statistics.median(samples)


def fifo(stepper: Stepper) -> None:
    while not stepper.done:
        stepper.step()


def pick_last_by_name(stepper: Stepper, names: list[str]) -> None:
    for name in names:
        stepper.step(name)


def bench(repeat: int) -> dict[str, Any]:
    g = fb.Graph()
    with g.as_default():
        x = fb.placeholder(fb.float32, [], name="x")
        one = fb.constant(1.0, name="one")
        y = x
        for _ in range(N - 1):  # with the constant: N ops
            y = fb.add(y, one)
        leaves = [fb.add(x, one, name=f"leaf{i}") for i in range(N - 2)]
        total = fb.add_n(leaves, name="total")  # with the constant: N ops
    sess = fb.Session(graph=g)
    feed = {x: np.float32(0.0)}
    chain = lambda: Stepper(sess, y, feed)
    wide = lambda: Stepper(sess, total, feed)
    assert chain().cont() == sess.run(y, feed)
    assert wide().cont() == sess.run(total, feed)

    step_chain = per_step(chain, fifo, repeat)
    step_wide = per_step(wide, fifo, repeat)
    # step(op) by name on the wide graph, newest ready op first (no ready() scan timed)
    plan = wide().plan
    n_chain = len(chain().plan.ops)
    first = [op.name for op, p in zip(plan.ops, plan.pending) if p == 0]  # the leaves
    then = [op.name for op, p in zip(plan.ops, plan.pending) if p and op.name != "total"]
    order = first[::-1] + then[::-1] + ["total"]
    step_named = per_step(wide, lambda st: pick_last_by_name(st, order), repeat)
    cont_chain = per_step(chain, lambda st: st.cont(), repeat)

    t0 = time.perf_counter()
    for _ in range(max(1, repeat // 3)):
        chain()
    build_ms = (time.perf_counter() - t0) / max(1, repeat // 3) * 1e3

    with fb.observe(fb.Observer()):
        sess.run(y, feed)
        samples = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            sess.run(y, feed)
            samples.append((time.perf_counter() - t0) / N * 1e6)
    threaded = statistics.median(samples)
    ones = [np.asarray(1.0, np.float32)] * N
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        v = np.asarray(np.float32(0.0))
        for c in ones:
            v = np.add(v, c)  # the same work as the chain's kernels
        samples.append((time.perf_counter() - t0) / N * 1e6)
    numpy_us = statistics.median(samples)
    sess.close()
    return {
        "ops": {"chain": n_chain, "wide": len(plan.ops)},
        "step_us": {
            "chain_fifo": step_chain,
            "wide_fifo": step_wide,
            "wide_by_name": step_named,
            "chain_cont_per_op": cont_chain,
        },
        "stepper_build_ms": build_ms,
        "baselines_us_per_node": {"threaded_run": threaded, "numpy_loop": numpy_us},
        "goal_step_us": GOAL_US,
        "headroom": GOAL_US / max(step_chain, step_wide, step_named),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "stepper.json"))
    args = parser.parse_args()
    results = bench(3 if args.quick else 11)
    results["machine"] = {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "cpus": __import__("os").cpu_count(),
    }
    s, b = results["step_us"], results["baselines_us_per_node"]
    n = results["ops"]
    print(f"Stepper, median µs per step (goal: well under {GOAL_US:.0f} µs)")
    print(f"  step(), chain ({n['chain']} ops)              {s['chain_fifo']:8.2f} µs")
    print(f"  step(), wide ({n['wide']} ops, 1 add_n)      {s['wide_fifo']:8.2f} µs")
    print(f"  step(name), wide, newest ready first  {s['wide_by_name']:8.2f} µs")
    print(f"  cont(), chain, per op                 {s['chain_cont_per_op']:8.2f} µs")
    print(f"  Stepper(...) build, chain             {results['stepper_build_ms']:8.2f} ms")
    print(f"  baseline: threaded sess.run, chain    {b['threaded_run']:8.2f} µs/node")
    print(f"  baseline: numpy 0-d add loop          {b['numpy_loop']:8.2f} µs/node")
    print(f"  headroom against the goal             {results['headroom']:8.0f}x")
    write_json(args.out, results)


if __name__ == "__main__":
    main()
