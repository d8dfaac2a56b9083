"""The CNN half of ``train.py``: a small convnet in flowbook and by hand in numpy, and kernel times.

Two models on 28x28x1 images (the digits scaled up 3x and padded by 2, so the
shapes are MNIST's), batch 64, plain SGD:

- ``cnn``: conv 5x5x32 SAME + bias + ReLU, max_pool 2x2, dense 10;
- ``cnn2``: the same, then conv 5x5 32->64 + bias + ReLU and max_pool 2x2.

The numpy model is what a competent student writes: im2col through an
``as_strided`` view and one GEMM forward; the filter gradient as one GEMM on
the same columns, the input gradient as one GEMM then col2im (KH*KW
slice-adds); max_pool 2x2 by reshape, its gradient through the mask of the
window max (to every tied maximum, where TF picks the first: the upscaled
digits have ties, so the conv weights drift apart by ~1e-4 a step); ReLU's
through ``pre > 0``.  Both models run in the same process
on the same batches, so their ratio is what to read.

:func:`kernel_times` times flowbook's conv and pool kernels alone (milliseconds,
the best of several calls), called straight through the registry at the CNNs' shapes;
the filter gradient twice: with the patch matrix the forward lent it
(``flowbook.kernels.conv_patches``, as in a training step) and rebuilding it.

TensorFlow 1's figures (:data:`TF1`) are quoted with the performance goals,
measured on this machine type with single-threaded BLAS (the conv input
gradient's, which the goals do not quote, by ``tf_conv_reference.py`` with TensorFlow 2.21 on
one thread, in a throwaway environment); TensorFlow is not installed beside
flowbook, so ratios against them carry the machine's noise (±30%) on one
side only.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

import flowbook as tf
from flowbook.framework.registry import OPS
from flowbook.kernels import conv_patches

BATCH = 64
LR = 0.05
TF1 = {  # TensorFlow 1 on this machine type, single-threaded BLAS (quoted, not re-run)
    "cnn_steps_s": 233.0,
    "cnn2_steps_s": 28.9,
    "conv2d forward [64,14,14,32]*[5,5,32,64]": 10.4,  # ms
    "conv2d filter grad": 10.7,  # ms
    # not quoted with the goals: TensorFlow 2.21 on one thread, measured here by
    # tf_conv_reference.py (10.8-11.4 ms; its forward and filter gradient: 10.5-11.7)
    "conv2d input grad": 10.8,
}
PEERS = {
    "cnn": "TF1 233 / numpy (quoted) 51.6 steps/s",
    "cnn2": "TF1 28.9 / numpy (quoted) 9.3 steps/s",
}


def images(x8: np.ndarray) -> np.ndarray:
    """8x8 digits as [N, 28, 28, 1]: each pixel 3x3, 2 pixels of padding around."""
    big = np.kron(x8.reshape(-1, 8, 8), np.ones((3, 3), np.float32))
    return np.pad(big, ((0, 0), (2, 2), (2, 2)))[..., None].astype(np.float32)


def _init(two: bool) -> list[np.ndarray]:
    rng = np.random.default_rng(2)
    p = [rng.standard_normal((5, 5, 1, 32)) * 0.2, np.zeros(32)]
    side = 14
    if two:
        p += [rng.standard_normal((5, 5, 32, 64)) * 0.05, np.zeros(64)]
        side = 7
    depth = 64 if two else 32
    p += [rng.standard_normal((side * side * depth, 10)) * 0.01, np.zeros(10)]
    return [a.astype(np.float32) for a in p]


def flowbook_step(two: bool, config: Any = None) -> tuple[Any, Any]:
    """A session (made with ``config``) and a function running one SGD step of the CNN on (x, y)."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 28, 28, 1], name="x")
        y = tf.placeholder(tf.int32, [None], name="y")
        params = [tf.Variable(a) for a in _init(two)]
        h = x
        for w, b in zip(params[0:-2:2], params[1:-2:2]):
            h = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(h, w, [1, 1, 1, 1], "SAME"), b))
            h = tf.nn.max_pool(h, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
        flat = tf.reshape(h, [-1, int(np.prod(h.shape.as_list()[1:]))])
        logits = tf.matmul(flat, params[-2]) + params[-1]
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
        )
        train = tf.train.GradientDescentOptimizer(LR).minimize(loss)
        sess = tf.Session(graph=g, config=config)
        sess.run(tf.global_variables_initializer())
    return sess, lambda bx, by: sess.run(train, {x: bx, y: by})


def _cols(x: np.ndarray, k: int) -> np.ndarray:
    """im2col of a SAME (stride 1, odd k) convolution: [N*H*W, k*k*C]."""
    n, h, w, c = x.shape
    p = np.pad(x, ((0, 0), (k // 2, k // 2), (k // 2, k // 2), (0, 0)))
    s = p.strides
    view = np.lib.stride_tricks.as_strided(p, (n, h, w, k, k, c), (s[0], s[1], s[2], *s[1:]))
    return view.reshape(n * h * w, k * k * c)


def _col2im(d: np.ndarray, shape: tuple[int, ...], k: int) -> np.ndarray:
    n, h, w, c = shape
    d = d.reshape(n, h, w, k, k, c)
    out = np.zeros((n, h + k - 1, w + k - 1, c), np.float32)
    for i in range(k):
        for j in range(k):
            out[:, i : i + h, j : j + w] += d[:, :, :, i, j]
    return out[:, k // 2 : k // 2 + h, k // 2 : k // 2 + w]


def _pool(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n, h, w, c = a.shape
    r = a.reshape(n, h // 2, 2, w // 2, 2, c)
    m = r.max(axis=(2, 4))
    return m, r == m[:, :, None, :, None]


def numpy_step(two: bool) -> Any:
    """The same CNN and update, written directly in numpy."""
    params = _init(two)
    convs = 2 if two else 1

    def step(x: np.ndarray, y: np.ndarray) -> None:
        saved, h = [], x
        for layer in range(convs):
            w, b = params[2 * layer], params[2 * layer + 1]
            cols = _cols(h, 5)
            pre = (cols @ w.reshape(-1, w.shape[3])).reshape(*h.shape[:3], -1) + b
            act = np.maximum(pre, 0)
            pooled, mask = _pool(act)
            saved.append((h, cols, pre, mask))
            h = pooled
        flat = h.reshape(len(x), -1)
        logits = flat @ params[-2] + params[-1]
        z = np.exp(logits - logits.max(axis=1, keepdims=True))
        d = z / z.sum(axis=1, keepdims=True)
        d[np.arange(len(y)), y] -= 1
        d /= len(y)
        grads = [flat.T @ d, d.sum(0)]
        dh = (d @ params[-2].T).reshape(h.shape)
        for layer in reversed(range(convs)):
            inp, cols, pre, mask = saved[layer]
            w = params[2 * layer]
            n, hh, ww, c = pre.shape
            up = mask * dh[:, :, None, :, None]
            dpre = up.reshape(n, hh, ww, c) * (pre > 0)
            d2 = dpre.reshape(-1, c)
            grads = [(cols.T @ d2).reshape(w.shape), d2.sum(0), *grads]
            if layer:
                dh = _col2im(d2 @ w.reshape(-1, c).T, inp.shape, 5)
        for i, g in enumerate(grads):
            params[i] -= LR * g

    return step


def kernel_times(repeat: int, clock: Any = time.perf_counter) -> dict[str, float]:
    """Milliseconds of ``clock`` per call (the best of ``repeat``) of the conv and pool kernels."""
    rng = np.random.default_rng(0)
    same, pool = {"strides": (1, 1, 1, 1), "padding": "SAME"}, (1, 2, 2, 1)
    act = np.maximum(rng.standard_normal((BATCH, 28, 28, 32)), 0).astype(np.float32)
    p_attrs = {"ksize": pool, "strides": pool, "padding": "VALID"}
    pooled = OPS["MaxPool"].kernel(np, act, **p_attrs)
    calls: dict[str, tuple[Any, Any]] = {}  # name -> (untimed setup, timed call)
    for label, xs, fs in (
        ("conv2d forward [64,14,14,32]*[5,5,32,64]", (BATCH, 14, 14, 32), (5, 5, 32, 64)),
        ("conv1 forward [64,28,28,1]*[5,5,1,32]", (BATCH, 28, 28, 1), (5, 5, 1, 32)),
    ):
        x = rng.standard_normal(xs).astype(np.float32)
        f = rng.standard_normal(fs).astype(np.float32)
        y = OPS["Conv2D"].kernel(np, x, f, **same)
        dy = rng.standard_normal(y.shape).astype(np.float32)
        prefix = label.split(" forward")[0]

        def fwd(x: Any = x, f: Any = f) -> Any:
            return OPS["Conv2D"].kernel(np, x, f, **same)

        def dfilter(x: Any = x, dy: Any = dy, fs: Any = fs) -> Any:
            return OPS["Conv2DBackpropFilter"].kernel(np, x, np.array(fs), dy, **same)

        calls[label] = (None, fwd)
        calls[f"{prefix} filter grad"] = (fwd, dfilter)  # the forward lends its patches
        calls[f"{prefix} filter grad (patches rebuilt)"] = (conv_patches.CACHE.clear, dfilter)
        if xs[3] > 1:
            calls[f"{prefix} input grad"] = (
                None,
                lambda x=x, f=f, dy=dy: OPS["Conv2DBackpropInput"].kernel(
                    np, np.array(x.shape), f, dy, **same
                ),
            )
    calls["max_pool 2x2 [64,28,28,32]"] = (None, lambda: OPS["MaxPool"].kernel(np, act, **p_attrs))
    calls["max_pool grad"] = (
        None,
        lambda: OPS["MaxPoolGrad"].kernel(np, act, pooled, pooled, **p_attrs),
    )
    if "_FusedMaxPoolGrad" in OPS:  # the optimiser's MaxPoolGrad + ReluGrad of the pooled ReLU
        fused = OPS["_FusedMaxPoolGrad"].bound_kernel(np, {**p_attrs, "fused_ops": ["ReluGrad"]})
        calls["max_pool grad + relu grad (fused)"] = (None, lambda: fused(act, pooled, pooled))
    bias = rng.standard_normal(32).astype(np.float32)
    calls["bias_add [64,28,28,32]"] = (None, lambda: OPS["BiasAdd"].kernel(np, act, bias))
    if "ReluGrad" in OPS:  # (so the script also times older checkouts)
        calls["relu grad [64,28,28,32]"] = (None, lambda: OPS["ReluGrad"].kernel(np, act, act))
    out = {}
    for name, (setup, call) in calls.items():
        times = []
        for _ in range(repeat + 1):  # the first is a warm-up
            if setup is not None:
                setup()
            t0 = clock()
            call()
            times.append(clock() - t0)
        out[name] = min(times[1:]) * 1e3
    conv_patches.CACHE.clear()
    return out
