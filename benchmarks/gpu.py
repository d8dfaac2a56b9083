"""GPU throughput: flowbook on the GPU against the CPU and against the same models in CuPy.

Workloads, each measured in the same process, one after the other:

- ``mlp``: the digits MLP 64-128-10 (ReLU), one SGD step per run, at batch 100 and 4096;
- ``cnn``: the digits CNN of tutorial 4 (conv 3x3x16, 2x2 max-pool, conv 3x3x32, 2x2
  max-pool, dense 64, dense 10; ReLU), one SGD step per run, at batch 100 and 4096;
- ``matmul``: a chain of 4 matmuls of 8192x8192 float32 matrices held on the device, the sum
  fetched.

Each is run by flowbook on the GPU, by flowbook on the CPU (``device_count={"GPU": 0}``) and
written by hand against an array module ``xp`` (forward, backward and update spelled out), which
runs as CuPy on the GPU and as numpy on the CPU.  Batches are host arrays fed every step (the
hand-written version uploads them too); GPU timings end with a device synchronize.  Read the
ratios: flowbook GPU / flowbook CPU (the speedup) and flowbook GPU / CuPy by hand (goal >= 0.9x).
Before timing, a few steps of each hand-written model are checked against flowbook's losses, so
both sides compute the same model.

**Without a GPU** (no CuPy, or no CUDA device) nothing about the GPU is measured: the JSON says
``"gpu": "no GPU: not measured"``.  What runs instead, labelled as such: the CPU figures
(flowbook against the same models by hand in numpy; the matmul chain at 2048, not 8192), and
flowbook on two stand-in GPUs made of numpy against flowbook on the CPU: a pass-through device
(plain numpy arrays: prices placement and the copy nodes) and the simulated GPU of
``flowbook.runtime.gpu_sim`` (adds its device boundary and memory accounting).  Those are CPU timings of
the GPU code path, not GPU figures.

Usage: ``python benchmarks/gpu.py [--quick] [--out PATH]``; writes ``benchmarks/results/gpu.json``.
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

import numpy as np
from _common import print_table, write_json

import flowbook as tf
from flowbook.data.datasets import load_digits
from flowbook.framework.devices import gpus

LR = 0.1
CHAIN = 4  # matmuls in the chain
GOAL = 0.9  # flowbook on the GPU / CuPy by hand
Step = Callable[[np.ndarray, np.ndarray], Any]


# ------------------------------------------------------------------- parameters
def init_params(model: str) -> list[np.ndarray]:
    """The models' initial weights, drawn on the host so every version starts equal."""
    rng = np.random.default_rng(1)

    def w(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.1).astype(np.float32)

    def b(n: int) -> np.ndarray:
        return np.full(n, 0.1 if model == "cnn" else 0.0, np.float32)

    if model == "mlp":
        return [w(64, 128), b(128), w(128, 10), b(10)]
    return [w(3, 3, 1, 16), b(16), w(3, 3, 16, 32), b(32), w(128, 64), b(64), w(64, 10), b(10)]


# ------------------------------------------------------------------------ flowbook
def flowbook_model(model: str, config: Any) -> tuple[Any, Step, Step]:
    """A session, one SGD step on (x, y), and the loss on (x, y)."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 64], name="x")
        y = tf.placeholder(tf.int32, [None], name="y")
        p = [tf.Variable(v) for v in init_params(model)]
        if model == "mlp":
            logits = tf.matmul(tf.nn.relu(tf.matmul(x, p[0]) + p[1]), p[2]) + p[3]
        else:
            h = tf.reshape(x, [-1, 8, 8, 1])
            for k in (0, 2):  # conv, ReLU, 2x2 max-pool: 8x8 -> 4x4 -> 2x2
                h = tf.nn.relu(tf.nn.conv2d(h, p[k], [1, 1, 1, 1], "SAME") + p[k + 1])
                h = tf.nn.max_pool(h, [1, 2, 2, 1], [1, 2, 2, 1], "SAME")
            dense = tf.nn.relu(tf.matmul(tf.reshape(h, [-1, 128]), p[4]) + p[5])
            logits = tf.matmul(dense, p[6]) + p[7]
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
        )
        train = tf.train.GradientDescentOptimizer(LR).minimize(loss)
        sess = tf.Session(graph=g, config=config)
        sess.run(tf.global_variables_initializer())
    return (
        sess,
        lambda bx, by: sess.run(train, {x: bx, y: by}),
        lambda bx, by: float(sess.run(loss, {x: bx, y: by})),
    )


# -------------------------------------------------------------------- by hand, in xp
def _im2col(xp: Any, x: Any) -> Any:
    """(N, H, W, C) -> (N, H, W, 9C): the 3x3 SAME windows, in the filter's (i, j, c) order."""
    h, w = x.shape[1:3]
    padded = xp.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    return xp.concatenate([padded[:, i : i + h, j : j + w] for i in range(3) for j in range(3)], 3)


def _col2im(xp: Any, cols: Any, c: int) -> Any:
    """The adjoint of ``_im2col``: window gradients summed back onto the image."""
    n, h, w, _ = cols.shape
    out = xp.zeros((n, h + 2, w + 2, c), cols.dtype)
    for k in range(9):
        i, j = divmod(k, 3)
        out[:, i : i + h, j : j + w] += cols[..., k * c : (k + 1) * c]
    return out[:, 1:-1, 1:-1]


def _pool(xp: Any, x: Any) -> Any:
    n, h, w, c = x.shape
    return x.reshape(n, h // 2, 2, w // 2, 2, c).max(axis=(2, 4))


def _pool_grad(xp: Any, x: Any, y: Any, g: Any) -> Any:
    """Max-pool's gradient (ties after a ReLU are zeros, which the ReLU's gradient drops)."""
    up = lambda a: xp.repeat(xp.repeat(a, 2, axis=1), 2, axis=2)
    return up(g) * (x == up(y))


def _softmax_grad(xp: Any, logits: Any, y: Any) -> tuple[Any, Any]:
    z = logits - logits.max(axis=1, keepdims=True)
    e = xp.exp(z)
    p = e / e.sum(axis=1, keepdims=True)
    rows = xp.arange(len(y))
    loss = (xp.log(e.sum(axis=1)) - z[rows, y]).mean()
    p[rows, y] -= 1
    return loss, p / len(y)


def handwritten_model(model: str, xp: Any) -> tuple[Step, Step]:
    """One SGD step and the loss, written directly against ``xp`` (numpy or CuPy)."""
    params = [xp.asarray(v) for v in init_params(model)]

    def forward_backward(bx: np.ndarray, by: np.ndarray, grads: bool) -> Any:
        x, y = xp.asarray(bx), xp.asarray(by)  # the batch goes up every step, as flowbook's
        if model == "mlp":
            w1, b1, w2, b2 = params
            pre = x @ w1 + b1
            h = xp.maximum(pre, 0)
            loss, d = _softmax_grad(xp, h @ w2 + b2, y)
            if not grads:
                return loss
            dh = (d @ w2.T) * (pre > 0)
            return [x.T @ dh, dh.sum(0), h.T @ d, d.sum(0)]
        c1, b1, c2, b2, w3, b3, w4, b4 = params
        img = x.reshape(-1, 8, 8, 1)
        col1 = _im2col(xp, img).reshape(-1, 9)  # a row per output pixel
        a1 = xp.maximum(col1 @ c1.reshape(9, 16) + b1, 0).reshape(-1, 8, 8, 16)
        p1 = _pool(xp, a1)
        col2 = _im2col(xp, p1).reshape(-1, 144)
        a2 = xp.maximum(col2 @ c2.reshape(144, 32) + b2, 0).reshape(-1, 4, 4, 32)
        p2 = _pool(xp, a2)
        flat = p2.reshape(-1, 128)
        a3 = xp.maximum(flat @ w3 + b3, 0)
        loss, d4 = _softmax_grad(xp, a3 @ w4 + b4, y)
        if not grads:
            return loss
        d3 = (d4 @ w4.T) * (a3 > 0)
        da2 = _pool_grad(xp, a2, p2, (d3 @ w3.T).reshape(p2.shape)) * (a2 > 0)
        dcol2 = da2.reshape(-1, 32) @ c2.reshape(144, 32).T
        da1 = _pool_grad(xp, a1, p1, _col2im(xp, dcol2.reshape(*p1.shape[:3], 144), 16))
        da1 = da1 * (a1 > 0)
        return [
            (col1.T @ da1.reshape(-1, 16)).reshape(c1.shape),
            da1.sum((0, 1, 2)),
            (col2.T @ da2.reshape(-1, 32)).reshape(c2.shape),
            da2.sum((0, 1, 2)),
            flat.T @ d3,
            d3.sum(0),
            a3.T @ d4,
            d4.sum(0),
        ]

    def step(bx: np.ndarray, by: np.ndarray) -> None:
        params[:] = [p - LR * g for p, g in zip(params, forward_backward(bx, by, True))]

    return step, lambda bx, by: float(forward_backward(bx, by, False))


# ------------------------------------------------------------------------- timing
def rates(
    steps: dict[str, Step], data: list, sync: Callable[[], None], budget_s: float, repeat: int
) -> dict[str, float]:
    """Median steps per second of each step function, timed in turns.

    After a warm-up (plans compile, CuPy builds its kernels), each round times every function
    once over the batches, for at least ``budget_s``: on a noisy machine the competitors see the
    same load.
    """
    for step in steps.values():
        for bx, by in data[:3]:
            step(bx, by)
        sync()
    samples: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(repeat):
        for name, step in steps.items():
            n, t0 = 0, time.perf_counter()
            while True:
                for bx, by in data:
                    step(bx, by)
                n += len(data)
                sync()
                elapsed = time.perf_counter() - t0
                if elapsed >= budget_s:
                    break
            samples[name].append(n / elapsed)
    return {name: statistics.median(v) for name, v in samples.items()}


def batches(batch: int, n: int) -> list[tuple[np.ndarray, np.ndarray]]:
    digits = load_digits()
    x, y = digits.train.images.astype(np.float32), digits.train.labels.astype(np.int32)
    rng = np.random.default_rng(0)
    return [(x[i], y[i]) for i in (rng.integers(0, len(x), batch) for _ in range(n))]


def check_same_model(model: str, xp: Any, config: Any, data: list) -> float:
    """Largest relative difference of the losses of 5 steps, flowbook against by hand."""
    sess, fb_step, fb_loss = flowbook_model(model, config)
    hand_step, hand_loss = handwritten_model(model, xp)
    worst = 0.0
    for bx, by in data[:5]:
        a, b = fb_loss(bx, by), hand_loss(bx, by)
        worst = max(worst, abs(a - b) / max(abs(b), 1e-6))
        fb_step(bx, by)
        hand_step(bx, by)
    sess.close()
    return worst


# ---------------------------------------------------------------------- workloads
def matmul_chain(n: int, xp: Any | None, config: Any = None) -> tuple[Step, Callable[[], None]]:
    """One run of the chain: flowbook (``xp`` None, with ``config``) or by hand in ``xp``."""
    rng = np.random.default_rng(2)
    x0 = rng.standard_normal((n, n), np.float32)
    w0 = (rng.standard_normal((n, n), np.float32) / np.sqrt(n)).astype(np.float32)
    if xp is not None:
        x, w = xp.asarray(x0), xp.asarray(w0)

        def by_hand(*_: Any) -> float:
            y = x
            for _ in range(CHAIN):
                y = y @ w
            return float(y.sum())

        return by_hand, lambda: None
    g = tf.Graph()
    with g.as_default():
        x, w = tf.Variable(x0), tf.Variable(w0)
        y = x
        for _ in range(CHAIN):
            y = tf.matmul(y, w)
        total = tf.reduce_sum(y)
        sess = tf.Session(graph=g, config=config)
        sess.run(tf.global_variables_initializer())
    return lambda *_: sess.run(total), sess.close


WORKLOADS = [("mlp", 100), ("mlp", 4096), ("cnn", 100), ("cnn", 4096), ("matmul", 0)]
CPU_ONLY = tf.ConfigProto(device_count={"GPU": 0})


def measure(
    model: str, batch: int, n: int, spec: dict[str, tuple[Any, Any]], sync: Any, args: Any
) -> dict[str, float]:
    """Steps/s of each competitor, timed in turns.

    ``spec``: name -> ("flowbook", a ConfigProto or None) or ("by hand", an array module).
    """
    steps: dict[str, Step] = {}
    closers = []
    for name, (kind, arg) in spec.items():
        if model == "matmul":
            step, close = matmul_chain(n, None, arg) if kind == "flowbook" else matmul_chain(n, arg)
        elif kind == "flowbook":
            sess, step, _ = flowbook_model(model, arg)
            close = sess.close
        else:
            step, close = handwritten_model(model, arg)[0], lambda: None
        steps[name] = step
        closers.append(close)
    data = [(None, None)] if model == "matmul" else batches(batch, args.batches)
    out = rates(steps, data, sync, args.budget, args.repeat)
    for close in closers:
        close()
    if model != "matmul":  # the hand-written model is flowbook's: their losses agree
        config = next(arg for kind, arg in spec.values() if kind == "flowbook")
        xp = next(arg for kind, arg in spec.values() if kind == "by hand")
        out["loss_max_rel_diff"] = check_same_model(model, xp, config, data)
    return out


def label(model: str, batch: int, n: int) -> str:
    return f"matmul chain {CHAIN}x {n}x{n}" if model == "matmul" else f"{model} batch {batch}"


def run_cpu(args: Any, n: int) -> dict[str, Any]:
    """flowbook on the CPU against the models by hand in numpy."""
    out = {}
    spec = {"flowbook": ("flowbook", CPU_ONLY), "by_hand": ("by hand", np)}
    for model, batch in WORKLOADS:
        m = measure(model, batch, n, spec, lambda: None, args)
        m["ratio"] = m["flowbook"] / m["by_hand"]
        out[label(model, batch, n)] = m
    rows = [
        (k, f"{v['flowbook']:,.1f}", f"{v['by_hand']:,.1f}", f"{v['ratio']:.2f}x")
        for k, v in out.items()
    ]
    print_table(("CPU: workload", "flowbook steps/s", "numpy by hand steps/s", "ratio"), rows)
    return out


def run_gpu(args: Any, n: int) -> dict[str, Any]:
    """flowbook on the GPU against flowbook on the CPU and the models by hand in CuPy."""
    import cupy

    spec = {
        "flowbook_gpu": ("flowbook", None),
        "cupy_by_hand": ("by hand", cupy),
        "flowbook_cpu": ("flowbook", CPU_ONLY),
    }
    out = {}
    for model, batch in WORKLOADS:
        m = measure(model, batch, n, spec, cupy.cuda.Device().synchronize, args)
        m["speedup_vs_cpu"] = m["flowbook_gpu"] / m["flowbook_cpu"]
        m["ratio_vs_cupy"] = m["flowbook_gpu"] / m["cupy_by_hand"]
        out[label(model, batch, n)] = m
    rows = [
        (
            k,
            f"{v['flowbook_gpu']:,.1f}",
            f"{v['flowbook_cpu']:,.1f}",
            f"{v['speedup_vs_cpu']:.1f}x",
            f"{v['cupy_by_hand']:,.1f}",
            f"{v['ratio_vs_cupy']:.2f}x",
            "met" if v["ratio_vs_cupy"] >= GOAL else "NOT met",
        )
        for k, v in out.items()
    ]
    header = ("GPU: workload", "flowbook GPU/s", "flowbook CPU/s", "speedup", "CuPy by hand/s")
    print_table((*header, "vs CuPy", f"goal >= {GOAL}x"), rows)
    return out


def run_simulated(args: Any, n: int) -> dict[str, Any]:
    """flowbook on stand-in GPUs made of numpy against flowbook on the CPU (CPU timings).

    ``pass_through``: a GPU device whose arrays are plain numpy, so only placement and the copy
    nodes (which copy nothing) are priced; ``simulated``: ``flowbook.runtime.gpu_sim`` (adds its device
    boundary, copies and memory accounting).  A session places its ops on its first run, so
    each is made and warmed up with its device registered; the three are then timed in turns.
    """
    from flowbook.framework.devices import Device, register_device, unregister_device
    from flowbook.runtime.gpu_sim import simulate_gpu

    def session(model: str, batch: int, config: Any) -> tuple[Step, Callable[[], None]]:
        if model == "matmul":
            step, close = matmul_chain(n, None, config)
        else:
            sess, step, _ = flowbook_model(model, config)
            close = sess.close
        step(*batches(batch or 1, 1)[0])  # the first run places the ops
        return step, close

    out: dict[str, Any] = {}
    for model, batch in WORKLOADS:
        made = {"cpu": session(model, batch, CPU_ONLY)}
        pass_through = Device("/device:GPU:0", np, "pass-through: numpy arrays")
        pass_through.hides_real_gpus = True
        register_device(pass_through)
        made["pass_through"] = session(model, batch, None)
        unregister_device(pass_through)
        with simulate_gpu():  # registered while timed: its memory accounting runs
            made["simulated"] = session(model, batch, None)
            data = batches(batch, args.batches) if model != "matmul" else [(None, None)]
            steps = {k: step for k, (step, _) in made.items()}
            got = rates(steps, data, lambda: None, args.budget, args.repeat)
        for _, close in made.values():
            close()
        row = {f"flowbook_{k}": v for k, v in got.items()}
        row["ratio_pass_through"] = got["pass_through"] / got["cpu"]
        row["ratio_simulated"] = got["simulated"] / got["cpu"]
        out[label(model, batch, n)] = row
    rows = [
        (
            k,
            f"{v['flowbook_cpu']:,.1f}",
            f"{v['flowbook_pass_through']:,.1f}",
            f"{v['ratio_pass_through']:.2f}x",
            f"{v['flowbook_simulated']:,.1f}",
            f"{v['ratio_simulated']:.2f}x",
        )
        for k, v in out.items()
    ]
    print(
        "\nStand-in GPUs made of numpy (CPU timings: the GPU code path's cost, not a GPU figure):"
    )
    header = ("workload", "flowbook CPU/s", "pass-through GPU/s", "ratio", "simulated GPU/s")
    print_table((*header, "ratio"), rows)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short runs (for CI smoke runs)")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "gpu.json"))
    args = parser.parse_args()
    args.budget, args.repeat, args.batches = (0.2, 1, 5) if args.quick else (1.0, 3, 20)
    cuda = [d for d in gpus() if getattr(d.xp, "__name__", "") == "cupy"]
    results: dict[str, Any] = {
        "machine": {
            "python": platform.python_version(),
            "numpy": np.__version__,
            "cpus": os.cpu_count(),
            "gpu": cuda[0].description if cuda else None,
        }
    }
    if cuda:
        n = 2048 if args.quick else 8192
        print(f"GPU: {cuda[0].description}\n")
        results["cpu"] = run_cpu(args, n)
        print()
        results["gpu"] = run_gpu(args, n)
    else:
        n = 512 if args.quick else 2048
        print(
            "No GPU: CuPy is not installed or finds no CUDA device, so nothing about the GPU is\n"
            "measured. Below: the CPU figures (the matmul chain at "
            f"{n}, not 8192), and flowbook on stand-in GPUs made of numpy against the CPU.\n"
        )
        results["gpu"] = "no GPU: not measured"
        results["cpu"] = run_cpu(args, n)
        results["simulated_gpu_check"] = {
            "note": "CPU timings, not GPU figures: flowbook with every op placed on a stand-in "
            "GPU made of numpy, against flowbook on the CPU measured beside it. pass_through: "
            "plain numpy arrays (prices placement and copy nodes; GPU ops are never sent to the "
            "CPU thread pool, so plans with matmuls take the compiled path); simulated: "
            "flowbook.runtime.gpu_sim (adds its device boundary, copies and memory accounting)",
            **run_simulated(args, n),
        }
    write_json(args.out, results)


if __name__ == "__main__":
    main()
