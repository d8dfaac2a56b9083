"""Training throughput: SGD steps per second on the digits, flowbook vs hand-written numpy.

Two models at batch 100, trained with plain gradient descent:

- softmax regression (64 -> 10), the MNIST "hello world";
- an MLP 64-128-10 with ReLU;

and two small CNNs at batch 64 on 28x28x1 images (``_cnn.py``: conv 5x5x32 +
max_pool + dense, and a second conv 32->64 + max_pool), with the conv and
pool kernels timed alone, and against TensorFlow 1's figures quoted with the
performance goals (``_cnn.TF1``: same machine type, single-threaded BLAS; TF1 is not installed
here).  The BLAS thread policy (``flowbook/runtime/blas.py``, ``flowbook/kernels/gemm.py``)
is checked by timing both CNNs and the second conv's kernels with BLAS on 1
thread, on every CPU, and by default (1 thread, large products split).

Each is written twice — in flowbook with TF1's API (``minimize`` builds the
backward graph), and by hand in numpy with the same forward, backward and
update — and both are timed in the same process on the same batches, so the
ratio (flowbook / numpy steps per second, higher is better) is what to read.
The peers' figures from ``shared/DESIGN.md`` are printed beside them.

Usage: ``python benchmarks/train.py [--quick]``; writes ``benchmarks/results/train.json``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path
from typing import Any

import _cnn
import numpy as np
from _common import print_table, write_json

import flowbook as tf
from flowbook.data.datasets import load_digits
from flowbook.framework.registry import OPS
from flowbook.runtime import blas

BATCH = 100
LR = 0.1
PEERS = {
    "softmax": "hand-written numpy 19,900 / TF1 4,420 steps/s",
    "mlp": "hand-written numpy 7,560 / TF1 2,400 steps/s",
}


HEADER = (
    "model (batch 100, SGD)",
    "flowbook steps/s",
    "numpy steps/s (same run)",
    "ratio",
    "peers",
)


def batches(
    x: np.ndarray, y: np.ndarray, n: int, seed: int = 0
) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        idx = rng.integers(0, len(x), BATCH)
        out.append((x[idx], y[idx]))
    return out


def flowbook_step(hidden: int | None, config: Any = None) -> tuple[Any, Any]:
    """A session (made with ``config``) and a function running one SGD step of the model."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 64], name="x")
        y = tf.placeholder(tf.int32, [None], name="y")
        rng = np.random.default_rng(1)
        if hidden is None:
            logits = tf.matmul(x, tf.Variable(np.zeros((64, 10), np.float32))) + tf.Variable(
                np.zeros(10, np.float32)
            )
        else:
            w1 = tf.Variable((rng.standard_normal((64, hidden)) * 0.1).astype(np.float32))
            b1 = tf.Variable(np.zeros(hidden, np.float32))
            w2 = tf.Variable((rng.standard_normal((hidden, 10)) * 0.1).astype(np.float32))
            b2 = tf.Variable(np.zeros(10, np.float32))
            logits = tf.matmul(tf.nn.relu(tf.matmul(x, w1) + b1), w2) + b2
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
        )
        train = tf.train.GradientDescentOptimizer(LR).minimize(loss)
        sess = tf.Session(graph=g, config=config)
        sess.run(tf.global_variables_initializer())
    return sess, lambda bx, by: sess.run(train, {x: bx, y: by})


def numpy_step(hidden: int | None) -> Any:
    """The same model and update written directly in numpy."""
    rng = np.random.default_rng(1)
    if hidden is None:
        params = [np.zeros((64, 10), np.float32), np.zeros(10, np.float32)]
    else:
        params = [
            (rng.standard_normal((64, hidden)) * 0.1).astype(np.float32),
            np.zeros(hidden, np.float32),
            (rng.standard_normal((hidden, 10)) * 0.1).astype(np.float32),
            np.zeros(10, np.float32),
        ]

    def softmax_grad(logits: np.ndarray, y: np.ndarray) -> np.ndarray:
        z = logits - logits.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        p[np.arange(len(y)), y] -= 1
        return p / len(y)

    def step(x: np.ndarray, y: np.ndarray) -> None:
        if hidden is None:
            w, b = params
            d = softmax_grad(x @ w + b, y)
            params[0] = w - LR * (x.T @ d)
            params[1] = b - LR * d.sum(axis=0)
        else:
            w1, b1, w2, b2 = params
            pre = x @ w1 + b1
            h = np.maximum(pre, 0)
            d = softmax_grad(h @ w2 + b2, y)
            dh = (d @ w2.T) * (pre > 0)
            params[:] = [
                w1 - LR * (x.T @ dh),
                b1 - LR * dh.sum(0),
                w2 - LR * (h.T @ d),
                b2 - LR * d.sum(0),
            ]

    return step


def steps_per_second(
    step: Any, data: list, repeat: int, warmup: int = 20, clock: Any = time.perf_counter
) -> float:
    """The median steps per second of ``clock`` (wall time; ``time.process_time``: CPU time)."""
    for bx, by in data[:warmup]:  # warm up (plans compile on their second run)
        step(bx, by)
    rates = []
    for _ in range(repeat):
        t0 = clock()
        for bx, by in data:
            step(bx, by)
        rates.append(len(data) / (clock() - t0))
    return statistics.median(rates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer steps (for CI smoke runs)")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "train.json"))
    args = parser.parse_args()
    digits = load_digits()
    data = batches(digits.train.images, digits.train.labels, 100 if args.quick else 500)
    repeat = 3 if args.quick else 7
    results: dict[str, Any] = {}
    for name, hidden in [("softmax", None), ("mlp", 128)]:
        sess, fb_step = flowbook_step(hidden)
        fb_rate = steps_per_second(fb_step, data, repeat)
        np_rate = steps_per_second(numpy_step(hidden), data, repeat)
        sess.close()
        results[name] = {
            "flowbook_steps_s": fb_rate,
            "numpy_steps_s": np_rate,
            "ratio": fb_rate / np_rate,
        }
    header = HEADER
    rows = [
        (
            {"softmax": "softmax regression 64-10", "mlp": "MLP 64-128-10"}[k],
            f"{v['flowbook_steps_s']:,.0f}",
            f"{v['numpy_steps_s']:,.0f}",
            f"{v['ratio']:.2f}x",
            PEERS[k],
        )
        for k, v in results.items()
    ]
    print_table(header, rows)
    results.update(cnn_results(digits, args.quick))
    write_json(args.out, results)


def cnn_results(digits: Any, quick: bool) -> dict[str, Any]:
    """The CNNs (flowbook vs numpy steps/s), the conv/pool kernels alone (ms), BLAS threads."""
    x, y = _cnn.images(digits.train.images), digits.train.labels
    rng = np.random.default_rng(0)
    data = []
    for _ in range(5 if quick else 40):
        idx = rng.integers(0, len(x), _cnn.BATCH)
        data.append((x[idx], y[idx]))
    results: dict[str, Any] = {}
    rows = []
    for name, two in [("cnn", False), ("cnn2", True)]:
        fb_rate, np_rate = _cnn_rates(two, data, 1 if quick else 4)
        fb_cpu, np_cpu = _cnn_rates(two, data, 1 if quick else 2, clock=time.process_time)
        tf1 = _cnn.TF1[f"{name}_steps_s"]
        results[name] = {
            "flowbook_steps_s": fb_rate,
            "numpy_steps_s": np_rate,
            "ratio": fb_rate / np_rate,
            "tf1_steps_s_quoted": tf1,
            "ratio_vs_tf1": fb_rate / tf1,
            # per second of the process's CPU time: steadier than wall time on a loaded machine
            "flowbook_steps_per_cpu_s": fb_cpu,
            "numpy_steps_per_cpu_s": np_cpu,
            "ratio_cpu": fb_cpu / np_cpu,
        }
        label = "conv 5x5x32 + pool + dense" + (" + conv 32->64 + pool" if two else "")
        rows.append((label, f"{fb_rate:.1f}", f"{np_rate:.1f}", f"{fb_rate / np_rate:.2f}x"))
        rows[-1] += (f"{fb_cpu / np_cpu:.2f}x", f"{fb_rate / tf1:.2f}x TF1", _cnn.PEERS[name])
    print()
    head = ("CNN (batch 64, 28x28x1, SGD)", *HEADER[1:4], "ratio (CPU time)", "vs TF1", "peers")
    print_table(head, rows)
    kernels = _cnn.kernel_times(3 if quick else 15)
    cpu = _cnn.kernel_times(3 if quick else 15, clock=time.process_time)
    print()
    print_table(
        ("kernel alone", "ms (best)", "CPU ms (best)", "TF ms (one thread)", "TF / flowbook"),
        [
            (
                k,
                f"{v:.2f}",
                f"{cpu[k]:.2f}",
                *((f"{_cnn.TF1[k]:.1f}", f"{_cnn.TF1[k] / v:.2f}x") if k in _cnn.TF1 else ("", "")),
            )
            for k, v in kernels.items()
        ],
    )
    results["kernels_ms"] = kernels
    results["kernels_cpu_ms"] = cpu
    results["kernels_vs_tf1"] = {k: _cnn.TF1[k] / v for k, v in kernels.items() if k in _cnn.TF1}
    results["blas_threads"] = blas_threads_figures(data, quick)
    return results


def _cnn_rates(
    two: bool, data: list, rounds: int, config: Any = None, clock: Any = time.perf_counter
) -> tuple[float, float]:
    """(flowbook, numpy) steps/s of one CNN, taken in turns, the best of each."""
    sess, fb_step = _cnn.flowbook_step(two, config)
    np_step = _cnn.numpy_step(two)
    fb_rate = np_rate = 0.0
    for _ in range(rounds):  # in turns, the best of each: load comes and goes
        fb_rate = max(fb_rate, steps_per_second(fb_step, data, 1, 3, clock))
        np_rate = max(np_rate, steps_per_second(np_step, data, 1, 3, clock))
    sess.close()
    return fb_rate, np_rate


def blas_threads_figures(data: list, quick: bool) -> dict[str, Any]:
    """The CNNs' steps/s and the second conv's kernels with BLAS on 1 thread, on all CPUs, and
    the default (1 thread, large products split across CPUs on flowbook's threads), in turns."""
    cpus = len(os.sched_getaffinity(0))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((_cnn.BATCH, 14, 14, 32)).astype(np.float32)
    f = rng.standard_normal((5, 5, 32, 64)).astype(np.float32)
    dy = rng.standard_normal((_cnn.BATCH, 14, 14, 64)).astype(np.float32)
    same = {"strides": (1, 1, 1, 1), "padding": "SAME"}
    kernels = {
        "conv2 forward ms": lambda: OPS["Conv2D"].kernel(np, x, f, **same),
        "conv2 filter grad ms": lambda: (
            OPS["Conv2D"].kernel(np, x, f, **same),  # lends its patches to the gradient
            OPS["Conv2DBackpropFilter"].kernel(np, x, np.array(f.shape), dy, **same),
        ),
    }
    policies = {"1": 1, f"{cpus} (all)": cpus, "1, large split (default)": 0}
    out: dict[str, Any] = {"cpus": cpus, "default": blas.wanted(0)}
    best: dict[tuple[str, str], float] = {}
    for _ in range(1 if quick else 3):  # in turns, the best of each: load comes and goes
        for label, n in policies.items():
            config = tf.ConfigProto(intra_op_parallelism_threads=n)
            for two in (False, True):
                rate, _ = _cnn_rates(two, data, 1, config)
                key = (label, "cnn2 steps/s" if two else "cnn steps/s")
                best[key] = max(best.get(key, 0.0), rate)
            for name, call in kernels.items():
                ms = min(_timed(call) for _ in range(3 if quick else 6)) * 1e3
                best[label, name] = min(best.get((label, name), 1e9), ms)
    blas.apply(0)  # the default policy again
    columns = ("cnn steps/s", "cnn2 steps/s", *kernels)
    rows = []
    for label in policies:
        out[label] = {c: best[label, c] for c in columns}
        rows.append((label, *(f"{best[label, c]:.1f}" for c in columns)))
    print()
    print_table(("BLAS threads", *columns), rows)
    return out


def _timed(fn: Any) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()
