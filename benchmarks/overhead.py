"""Engine overhead: per-node time on a chain, fixed cost of a run, build cost, import time.

Every figure is reported with a baseline measured in the same process and run,
as a ratio (lower is better), because these machines are shared and noisy:

- ``chain``: a chain of 2000 ``add`` ops fed from a scalar placeholder, per
  node, against the same 2000 numpy 0-d additions in a plain Python loop.
  Shown for the default path (compiled plan), the threaded scheduler (forced
  by attaching an observer that does nothing) and the serial reference.
- ``run_fixed``: one ``run`` of a graph of one op (a constant), against one
  call of the kernel it runs (a numpy 0-d add).
- ``build``: building 10,000 ``add`` ops, per op, against creating 10,000
  plain Python objects holding the same fields.
- ``import``: ``python -c "import flowbook"`` against ``python -c "import numpy"``.

Usage: ``python benchmarks/overhead.py [--quick]``; writes
``benchmarks/results/overhead.json``.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from _common import CHAIN, add_chain, print_table, write_json

import flowbook as fb

BUILD = 10_000
GOALS = {"chain": 1.5, "run_fixed_us": 20.0, "build_us": 10.0, "import_s": 0.5}
PEERS = {
    "chain": "TF1 0.42 µs/node (~0.5x); Dask threaded 64 µs (~60x)",
    "run_fixed": "TF1 218 µs; Dask threaded 166 µs",
    "build": "TF1 tf.add 292 µs/op; plain Python objects 1.1 µs",
    "import": "tensorflow 5.1 s; numpy 0.19 s",
}


def timeit(fn: Any, repeat: int, number: int = 1) -> float:
    """Median seconds per call of ``fn`` over ``repeat`` samples of ``number`` calls."""
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        samples.append((time.perf_counter() - t0) / number)
    return statistics.median(samples)


def bench_chain(repeat: int) -> dict[str, Any]:
    g, x, y = add_chain(CHAIN)
    value = np.float32(1.0)
    ones = [np.asarray(1.0, np.float32)] * CHAIN

    def numpy_loop() -> Any:
        v = np.asarray(value)
        for c in ones:
            v = np.add(v, c)
        return v

    sess = fb.Session(graph=g)
    feed = {x: value}
    assert float(sess.run(y, feed)) == float(numpy_loop()) == CHAIN + 1
    sess.run(y, feed)  # second run compiles the plan
    baseline = timeit(numpy_loop, repeat)
    compiled = timeit(lambda: sess.run(y, feed), repeat)
    with fb.observe(fb.Observer()):
        threaded = timeit(lambda: sess.run(y, feed), repeat)
    plan = next(iter(sess._plans.values()))
    serial = timeit(lambda: fb.run.executor.run_serial(plan, [value]), repeat)
    sess.close()
    per = {
        k: v / CHAIN * 1e6
        for k, v in [
            ("numpy", baseline),
            ("flowbook", compiled),
            ("threaded", threaded),
            ("serial", serial),
        ]
    }
    return {
        "per_node_us": per,
        "ratio": compiled / baseline,
        "ratio_threaded": threaded / baseline,
        "ratio_serial": serial / baseline,
    }


def bench_run_fixed(repeat: int) -> dict[str, Any]:
    g = fb.Graph()
    with g.as_default():
        c = fb.constant(1.0)
    sess = fb.Session(graph=g)
    sess.run(c)
    sess.run(c)
    a = np.asarray(1.0, np.float32)
    baseline = timeit(lambda: np.add(a, a), repeat, number=2000)
    run = timeit(lambda: sess.run(c), repeat, number=2000)
    sess.close()
    return {"run_us": run * 1e6, "kernel_us": baseline * 1e6, "ratio": run / baseline}


class _PlainOp:
    __slots__ = ("attrs", "inputs", "name", "type")

    def __init__(self, name: str, inputs: tuple, attrs: dict) -> None:
        self.name, self.type, self.inputs, self.attrs = name, "Add", inputs, attrs


def bench_build(repeat: int) -> dict[str, Any]:
    def build() -> None:
        with fb.Graph().as_default():
            y = fb.placeholder(fb.float32, [None, 4])
            one = fb.constant(1.0)
            for _ in range(BUILD):
                y = fb.add(y, one)

    def plain() -> None:
        prev: Any = None
        for i in range(BUILD):
            prev = _PlainOp(f"Add_{i}", (prev,), {})

    b = timeit(build, max(3, repeat // 4))
    p = timeit(plain, max(3, repeat // 4))
    return {"per_op_us": b / BUILD * 1e6, "plain_us": p / BUILD * 1e6, "ratio": b / p}


def bench_import(repeat: int) -> dict[str, Any]:
    def cold(module: str) -> float:
        code = f"import time; t=time.perf_counter(); import {module}; print(time.perf_counter()-t)"
        out = subprocess.run(
            [sys.executable, "-X", "frozen_modules=off", "-c", code],
            capture_output=True,
            text=True,
            check=True,
        )
        return float(out.stdout.strip().splitlines()[-1])

    n = max(3, repeat // 4)
    fbt = statistics.median(cold("flowbook") for _ in range(n))
    npt = statistics.median(cold("numpy") for _ in range(n))
    return {"flowbook_s": fbt, "numpy_s": npt, "ratio": fbt / npt}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats (for CI smoke runs)")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "overhead.json"))
    args = parser.parse_args()
    repeat = 5 if args.quick else 21
    results = {
        "chain": bench_chain(repeat),
        "run_fixed": bench_run_fixed(repeat),
        "build": bench_build(repeat),
        "import": bench_import(repeat),
        "machine": {
            "python": platform.python_version(),
            "numpy": np.__version__,
            "cpus": __import__("os").cpu_count(),
        },
    }
    c, r, b, i = results["chain"], results["run_fixed"], results["build"], results["import"]
    rows = [
        (
            "chain of 2000 adds, per node",
            f"{c['per_node_us']['flowbook']:.2f} µs",
            f"numpy loop {c['per_node_us']['numpy']:.2f} µs",
            f"{c['ratio']:.2f}x",
            f"≤ {GOALS['chain']}x",
            PEERS["chain"],
        ),
        (
            "  same, threaded scheduler",
            f"{c['per_node_us']['threaded']:.2f} µs",
            "",
            f"{c['ratio_threaded']:.2f}x",
            "",
            "",
        ),
        (
            "  same, serial reference",
            f"{c['per_node_us']['serial']:.2f} µs",
            "",
            f"{c['ratio_serial']:.2f}x",
            "",
            "",
        ),
        (
            "one run of a 1-op graph",
            f"{r['run_us']:.1f} µs",
            f"one kernel {r['kernel_us']:.2f} µs",
            f"{r['ratio']:.0f}x",
            f"≤ {GOALS['run_fixed_us']:.0f} µs",
            PEERS["run_fixed"],
        ),
        (
            "build 10,000 ops, per op",
            f"{b['per_op_us']:.1f} µs",
            f"plain objects {b['plain_us']:.2f} µs",
            f"{b['ratio']:.1f}x",
            f"≤ {GOALS['build_us']:.0f} µs",
            PEERS["build"],
        ),
        (
            "import flowbook",
            f"{i['flowbook_s']:.2f} s",
            f"import numpy {i['numpy_s']:.2f} s",
            f"{i['ratio']:.1f}x",
            f"< {GOALS['import_s']} s",
            PEERS["import"],
        ),
    ]
    header = ("workload", "flowbook", "baseline (same run)", "ratio", "goal", "peers (DESIGN.md)")
    print_table(header, rows)
    write_json(args.out, results)


if __name__ == "__main__":
    main()
