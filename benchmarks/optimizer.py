"""The graph optimiser's effect: SGD steps per second with its passes on and off, vs numpy.

The softmax regression (64 -> 10) and the MLP 64-128-10 of ``train.py`` at
batch 100, each run three ways in the same process on the same batches:
flowbook with the optimiser on (the default), flowbook with
``OptimizerOptions(opt_level=L0)`` (the plan as written), and the same step
written by hand in numpy.  The figures to read are the ratios to numpy (the
goals: MLP >= 0.8x, softmax >= 0.6x) and on/off.  The three are
timed in turns and the best of each kept, as load on a shared machine comes
and goes.  Ops per step are counted from the plans the sessions ran.

Usage: ``python benchmarks/optimizer.py [--quick]``; writes ``benchmarks/results/optimizer.json``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from _common import print_table, write_json
from train import batches, flowbook_step, numpy_step, steps_per_second

import flowbook as tf
from flowbook.data.datasets import load_digits

OFF = tf.ConfigProto(
    graph_options=tf.GraphOptions(
        optimizer_options=tf.OptimizerOptions(opt_level=tf.OptimizerOptions.L0)
    )
)


def ops_per_step(sess: Any) -> int:
    """Ops of the largest plan the session ran last (the optimised one where there is one)."""
    counts = []
    for plan, path in sess._paths.items():
        ran = [e[0] for e in path.optimized.values() if type(e) is tuple]
        counts.append(len(ran[-1].ops) if ran else len(plan.ops))
    return max(counts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer steps (for CI smoke runs)")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "optimizer.json"))
    args = parser.parse_args()
    digits = load_digits()
    data = batches(digits.train.images, digits.train.labels, 100 if args.quick else 400)
    results: dict[str, Any] = {}
    rows = []
    for name, hidden in [("softmax", None), ("mlp", 128)]:
        on_sess, on_step = flowbook_step(hidden)
        off_sess, off_step = flowbook_step(hidden, OFF)
        np_step = numpy_step(hidden)
        on = off = ref = 0.0
        for _ in range(2 if args.quick else 5):
            on = max(on, steps_per_second(on_step, data, 1))
            off = max(off, steps_per_second(off_step, data, 1))
            ref = max(ref, steps_per_second(np_step, data, 1))
        results[name] = {
            "optimised_steps_s": on,
            "as_written_steps_s": off,
            "numpy_steps_s": ref,
            "optimised_vs_numpy": on / ref,
            "as_written_vs_numpy": off / ref,
            "optimised_vs_as_written": on / off,
            "ops_optimised": ops_per_step(on_sess),
            "ops_as_written": ops_per_step(off_sess),
        }
        on_sess.close(), off_sess.close()
        r = results[name]
        rows.append(
            (
                {"softmax": "softmax regression 64-10", "mlp": "MLP 64-128-10"}[name],
                f"{on:,.0f} ({r['ops_optimised']} ops)",
                f"{off:,.0f} ({r['ops_as_written']} ops)",
                f"{ref:,.0f}",
                f"{r['optimised_vs_numpy']:.2f}x",
                f"{r['as_written_vs_numpy']:.2f}x",
                f"{r['optimised_vs_as_written']:.2f}x",
            )
        )
    header = (
        "model (batch 100, SGD)",
        "optimised steps/s",
        "as written steps/s",
        "numpy steps/s",
        "optimised/numpy",
        "written/numpy",
        "on/off",
    )
    print_table(header, rows)
    write_json(args.out, results)


if __name__ == "__main__":
    main()
