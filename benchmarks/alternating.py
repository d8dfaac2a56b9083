"""Alternating batch shapes: the MLP's SGD step fed batches of 100 and 99 rows in turn.

A run path remembers what it learnt per feed-shape signature (``flowbook.runtime.codegen.compile``:
which signatures keep their kernels inline and so take the compiled straight line; the
optimiser's plan per signature), so a loop whose last batch is short, or a data set cut
into batches of two sizes, should cost what a constant batch size costs.  Measured here:

- the MLP 64-128-10 SGD step of ``train.py`` (digits, batch 100), fed the same batches
  either all at 100 rows (``constant``) or alternating 100 / 99 rows (``alternating``:
  every other batch loses its last row), with the optimiser on and off;
- the same two loops in hand-written numpy (``train.numpy_step``), in the same run.

Read the ratio alternating / constant (goal: at least 0.9, i.e. under 10% slower).
The two loops are timed in turns, 20 steps at a time, several rounds, the median of each:
these machines are shared and load comes and goes.

Usage: ``python benchmarks/alternating.py [--quick]``; writes
``benchmarks/results/alternating.json``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
import train
from _common import print_table, write_json

import flowbook as tf
from flowbook.data.datasets import load_digits

GOAL = 0.9  # alternating / constant steps per second
PEERS = "TF1: 3,352 steps/s alternating, unchanged from constant; flowbook before: 3,037 vs 4,209"
CONFIGS = {
    "optimiser on": None,
    "optimiser off": tf.ConfigProto(
        graph_options=tf.GraphOptions(
            optimizer_options=tf.OptimizerOptions(opt_level=tf.OptimizerOptions.L0)
        )
    ),
}


CHUNK = 20  # steps timed at a time, constant and alternating in turn


def seconds(step: Any, data: list) -> float:
    """Seconds ``step`` takes over ``data``."""
    t0 = time.perf_counter()
    for bx, by in data:
        step(bx, by)
    return time.perf_counter() - t0


def compare(step: Any, constant: list, alternating: list, rounds: int) -> dict[str, float]:
    """Constant and alternating steps/s of ``step``: the two loops taken in turns, CHUNK
    steps at a time (so both see the same load), summed per round; medians of the rounds."""
    for bx, by in constant[:10] + alternating[:10]:  # warm up: plans compile, optimise
        step(bx, by)
    c, a = [], []
    for _ in range(rounds):
        tc = ta = 0.0
        for k in range(0, len(constant), CHUNK):
            tc += seconds(step, constant[k : k + CHUNK])
            ta += seconds(step, alternating[k : k + CHUNK])
        c.append(len(constant) / tc)
        a.append(len(alternating) / ta)
    out = {"constant_steps_s": statistics.median(c), "alternating_steps_s": statistics.median(a)}
    out["ratio"] = out["alternating_steps_s"] / out["constant_steps_s"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer steps (for CI smoke runs)")
    parser.add_argument(
        "--out", default=str(Path(__file__).parent / "results" / "alternating.json")
    )
    args = parser.parse_args()
    digits = load_digits()
    constant = train.batches(digits.train.images, digits.train.labels, 100 if args.quick else 400)
    alternating = [(bx[:99], by[:99]) if k % 2 else (bx, by) for k, (bx, by) in enumerate(constant)]
    rounds = 3 if args.quick else 9
    results: dict[str, Any] = {}
    for name, config in CONFIGS.items():
        sess, step = train.flowbook_step(128, config)
        results[name] = compare(step, constant, alternating, rounds)
        sess.close()
    results["numpy"] = compare(train.numpy_step(128), constant, alternating, rounds)
    rows = [
        (
            f"MLP 64-128-10, {name}",
            f"{v['constant_steps_s']:,.0f}",
            f"{v['alternating_steps_s']:,.0f}",
            f"{v['ratio']:.2f}x",
            f"≥ {GOAL}x" if name != "numpy" else "",
        )
        for name, v in results.items()
    ]
    header = ("step (batch 100)", "constant steps/s", "alternating 100/99 steps/s", "ratio", "goal")
    print_table(header, rows)
    print(f"peers: {PEERS}")
    results["machine"] = {"numpy": np.__version__, "load_average": os.getloadavg()}
    write_json(args.out, results)


if __name__ == "__main__":
    main()
