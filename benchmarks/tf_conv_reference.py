"""TensorFlow's own conv kernels on this machine: the reference the conv figures are held to.

The performance goals quote TensorFlow 1 (single-threaded BLAS) for conv2's
forward pass and filter gradient only.  This script measures all three kernels at the
same shapes -- ``[64,14,14,32] * [5,5,32,64]``, SAME, stride 1: forward,
input gradient, filter gradient -- in TensorFlow's TF1 graph mode
(``tf.compat.v1``), on one intra-op thread and on every CPU, the best of 15
runs each.  TensorFlow is never a dependency of flowbook: run it in a
throwaway virtual environment that has it (``pip install tensorflow-cpu``);
without TensorFlow it says so and measures nothing.

On one thread TensorFlow 2.21 matches the quoted TF1 figures, so those are
one-thread figures; the measurements are in ``docs/performance.md``
("Convolution kernels").

Usage: ``python benchmarks/tf_conv_reference.py``; writes
``benchmarks/results/tf_conv_reference.json``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

SHAPES = {"x": (64, 14, 14, 32), "f": (5, 5, 32, 64), "dy": (64, 14, 14, 64)}


def measure(threads: int) -> dict[str, float]:
    """Milliseconds (best of 15) of the three kernels with ``threads`` intra-op threads."""
    import tensorflow as tf

    tf1 = tf.compat.v1
    tf1.disable_eager_execution()
    rng = np.random.default_rng(0)
    values = {k: rng.standard_normal(s).astype(np.float32) for k, s in SHAPES.items()}
    g = tf1.Graph()
    out = {}
    with g.as_default():
        x, f, dy = (tf1.placeholder(tf.float32, SHAPES[k]) for k in ("x", "f", "dy"))
        ops = {
            "conv2d forward": tf.nn.conv2d(x, f, [1, 1, 1, 1], "SAME"),
            "conv2d input grad": tf1.nn.conv2d_backprop_input(
                SHAPES["x"], f, dy, [1, 1, 1, 1], "SAME"
            ),
            "conv2d filter grad": tf1.nn.conv2d_backprop_filter(
                x, SHAPES["f"], dy, [1, 1, 1, 1], "SAME"
            ),
        }
        config = tf1.ConfigProto(
            intra_op_parallelism_threads=threads, inter_op_parallelism_threads=threads
        )
        with tf1.Session(config=config) as s:
            feed = {x: values["x"], f: values["f"], dy: values["dy"]}
            for name, op in ops.items():
                small = tf.reduce_sum(op)  # fetch a scalar: no copy of the result out
                for _ in range(3):
                    s.run(small, feed)
                best = float("inf")
                for _ in range(15):
                    t0 = time.perf_counter()
                    s.run(small, feed)
                    best = min(best, time.perf_counter() - t0)
                out[name] = best * 1e3
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, help="measure with this many threads, print JSON")
    args = parser.parse_args()
    try:
        import tensorflow as tf
    except ImportError:
        print("TensorFlow is not installed here: nothing measured (see the docstring)")
        return
    if args.threads:  # one process per thread count: TensorFlow fixes its pools once
        print(json.dumps(measure(args.threads)))
        return
    results: dict = {"tensorflow": tf.__version__, "ms": {}}
    for threads in (1, 2):
        run = subprocess.run(
            [sys.executable, __file__, "--threads", str(threads)],
            capture_output=True,
            text=True,
            check=True,
            timeout=600,
        )
        row = results["ms"][threads] = json.loads(run.stdout.strip().splitlines()[-1])
        print(f"{threads} thread(s): " + ", ".join(f"{k} {v:.2f} ms" for k, v in row.items()))
    path = Path(__file__).parent / "results" / "tf_conv_reference.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
