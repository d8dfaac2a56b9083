"""Control-flow costs: a trivial while_loop per iteration, and an LSTM step, against numpy.

- ``while_loop``: ``i < n; i + 1`` for n iterations, per iteration, against
  the same Python ``while`` over numpy scalars (the goals quote TensorFlow 1
  at 4-11 us an iteration on this machine, ``../shared/DESIGN.md``).
- ``lstm``: ``dynamic_rnn`` with a ``BasicLSTMCell`` (batch 32, 20 steps,
  128 units, input 128), forward and backward (the loss's gradient for the
  kernel and bias), steps/s against the same model hand-written in numpy
  (forward, then backward through time), in the same run.

    python benchmarks/control_flow.py [--quick] [--out benchmarks/results/control_flow.json]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _common import print_table, write_json

import flowbook as tf


def _best(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def while_loop_figures(n: int, repeats: int) -> dict:
    with tf.Graph().as_default(), tf.Session() as s:
        limit = tf.placeholder(tf.int32, [])
        out = tf.while_loop(lambda i: i < limit, lambda i: i + 1, [tf.constant(0)])
        s.run(out, {limit: 3})
        t_fb = _best(lambda: s.run(out, {limit: n}), repeats)

    def python_loop() -> None:
        i, one, m = np.int32(0), np.int32(1), np.int32(n)
        while np.less(i, m):
            i = np.add(i, one)

    t_np = _best(python_loop, repeats)
    return {
        "iterations": n,
        "flowbook_us_per_iteration": t_fb / n * 1e6,
        "numpy_us_per_iteration": t_np / n * 1e6,
        "ratio_vs_numpy": t_fb / t_np,
    }


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def numpy_lstm_step(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> tuple[float, np.ndarray]:
    """Forward over time, loss sum(h_t^2), backward through time: (loss, dW) (db too)."""
    batch, steps, _ = x.shape
    units = w.shape[1] // 4
    h = np.zeros((batch, units), np.float32)
    c = np.zeros_like(h)
    cache = []
    loss = 0.0
    for t in range(steps):
        xh = np.concatenate([x[:, t], h], 1)
        z = xh @ w + b
        i, j, f, o = np.split(z, 4, 1)
        si, tj, sf, so = _sigmoid(i), np.tanh(j), _sigmoid(f + 1.0), _sigmoid(o)
        c_new = c * sf + si * tj
        tc = np.tanh(c_new)
        h = tc * so
        cache.append((xh, c, si, tj, sf, so, tc))
        c = c_new
        loss += float((h * h).sum())
    dw, db = np.zeros_like(w), np.zeros_like(b)
    dh_next, dc_next = np.zeros_like(h), np.zeros_like(c)
    for t in reversed(range(steps)):
        xh, c_prev, si, tj, sf, so, tc = cache[t]
        h_t = tc * so
        dh = 2 * h_t + dh_next
        do = dh * tc
        dc = dh * so * (1 - tc * tc) + dc_next
        di, dj, df = dc * tj, dc * si, dc * c_prev
        dz = np.concatenate(
            [di * si * (1 - si), dj * (1 - tj * tj), df * sf * (1 - sf), do * so * (1 - so)], 1
        )
        dw += xh.T @ dz
        db += dz.sum(0)
        dxh = dz @ w.T
        dh_next = dxh[:, x.shape[2] :]
        dc_next = dc * sf
    return loss, dw


def lstm_figures(repeats: int) -> dict:
    rng = np.random.default_rng(0)
    batch, steps, units = 32, 20, 128
    xv = rng.normal(size=(batch, steps, units)).astype(np.float32)
    with tf.Graph().as_default(), tf.Session() as s:
        x = tf.placeholder(tf.float32, [batch, steps, units])
        cell = tf.nn.rnn_cell.BasicLSTMCell(units)
        out, _ = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
        loss = tf.reduce_sum(out * out)
        w, b = tf.trainable_variables()
        grads = tf.gradients(loss, [w, b])
        s.run(tf.global_variables_initializer())
        wv, bv = s.run([w, b])
        got_loss, (gw, _) = s.run([loss, grads], {x: xv})
        ref_loss, ref_gw = numpy_lstm_step(xv, wv, bv)
        assert np.allclose(got_loss, ref_loss, rtol=1e-3), (got_loss, ref_loss)
        assert np.allclose(gw, ref_gw, rtol=1e-2, atol=1e-2), np.abs(gw - ref_gw).max()
        t_fb = _best(lambda: s.run(grads, {x: xv}), repeats)
    t_np = _best(lambda: numpy_lstm_step(xv, wv, bv), repeats)
    return {
        "batch": batch,
        "steps": steps,
        "units": units,
        "flowbook_steps_per_s": 1 / t_fb,
        "numpy_steps_per_s": 1 / t_np,
        "ratio_vs_numpy": t_np / t_fb,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer iterations (CI)")
    parser.add_argument("--out", default="benchmarks/results/control_flow.json")
    args = parser.parse_args()
    n, repeats = (200, 3) if args.quick else (1000, 7)
    loop = while_loop_figures(n, repeats)
    lstm = lstm_figures(2 if args.quick else 5)
    print_table(
        ["workload", "flowbook", "numpy", "ratio"],
        [
            [
                f"while_loop, {n} trivial iterations (us/iteration)",
                f"{loop['flowbook_us_per_iteration']:.2f}",
                f"{loop['numpy_us_per_iteration']:.2f}",
                f"{loop['ratio_vs_numpy']:.1f}x the time",
            ],
            [
                "LSTM fwd+bwd, batch 32, 20 steps, 128 units (steps/s)",
                f"{lstm['flowbook_steps_per_s']:.1f}",
                f"{lstm['numpy_steps_per_s']:.1f}",
                f"{lstm['ratio_vs_numpy']:.2f}x numpy's speed",
            ],
        ],
    )
    write_json(args.out, {"while_loop": loop, "lstm": lstm})


if __name__ == "__main__":
    main()
