"""Peak memory of one training step: every value kept, freed at last use, and dead buffers reused.

Two steps, each one SGD step on the same batch, measured with ``tracemalloc``
(numpy reports its array allocations to it), the peak of one step after
warm-up, in the same process:

- ``cnn``: the CNN of ``_cnn.py`` (conv 5x5x32 + bias + ReLU, max_pool, dense), batch 64;
- ``mlp``: the MLP 64-128-10 of ``train.py``, batch 4096.

Three ways to run it:

- ``keep``: the written plan with nothing freed (the Stepper's ``Flat(keep_values=True)`` rule):
  the sum of every value the step makes, what a run would hold without the memory plan;
- ``free``: a session with the buffer reuse off
  (``RewriterConfig(memory_optimization=NO_MEM_OPT)``): values freed after their last read;
- ``reuse``: a default session: freed at last use, and element-wise kernels writing into
  dead inputs' buffers (``flowbook.runtime.memory_plan``).

Ratios are ``free / keep`` and ``reuse / free`` (lower is less memory).  The
steps/s of ``free`` and ``reuse`` are measured too, in the same run.

    python benchmarks/memory.py [--quick]
"""

from __future__ import annotations

import sys
import time
import tracemalloc
from typing import Any

import numpy as np
from _cnn import flowbook_step as cnn_step
from _common import print_table, write_json
from train import flowbook_step as mlp_step

import flowbook as tf
from flowbook.runtime.config import RewriterConfig
from flowbook.runtime.scheduler import Flat

NO_REUSE = tf.ConfigProto(
    graph_options=tf.GraphOptions(
        rewrite_options=RewriterConfig(memory_optimization=RewriterConfig.NO_MEM_OPT)
    )
)


def _data(name: str) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    if name == "cnn":
        x = rng.random((64, 28, 28, 1), dtype=np.float32)
        return x, rng.integers(0, 10, 64).astype(np.int32)
    x = rng.random((4096, 64), dtype=np.float32)
    return x, rng.integers(0, 10, 4096).astype(np.int32)


def _session(name: str, config: Any) -> tuple[Any, Any]:
    if name == "cnn":
        if config is None:
            return cnn_step(False)
        with _config(config):
            return cnn_step(False)
    return mlp_step(128, config)


class _config:
    """Sessions made inside use ``config`` (``_cnn.flowbook_step`` takes none)."""

    def __init__(self, config: Any) -> None:
        self.config, self.saved = config, tf.Session.__init__

    def __enter__(self) -> None:
        saved, config = self.saved, self.config

        def init(s: Any, *a: Any, **k: Any) -> None:
            k.setdefault("config", config)
            saved(s, *a, **k)

        tf.Session.__init__ = init  # type: ignore[method-assign]

    def __exit__(self, *exc: Any) -> None:
        tf.Session.__init__ = self.saved  # type: ignore[method-assign]


def _peak(step: Any) -> int:
    """Peak bytes tracemalloc sees during one call of ``step``, above what was held before."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        step()
        return tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


def _keep_step(sess: Any, x: np.ndarray, y: np.ndarray) -> Any:
    """One step of the written plan with no value freed."""
    g = sess.graph
    feeds = {g.get_tensor_by_name("x:0"): x, g.get_tensor_by_name("y:0"): y}
    prepared = sess.prepare(g.get_operation_by_name("GradientDescent"), feeds)
    plan = prepared.plan

    def step() -> None:
        sched = Flat(plan, prepared.feeds, keep_values=True)
        while sched.ready:
            i = sched.ready.popleft()
            sched.finish(i, plan.fns[i](*sched.args(i)))

    return step


def measure(name: str, repeat: int) -> dict[str, Any]:
    x, y = _data(name)
    out: dict[str, Any] = {}
    for mode, config in (("free", NO_REUSE), ("reuse", None)):
        sess, step = _session(name, config)
        for _ in range(5):  # the written plan, then the optimised one and its straight line
            step(x, y)
        one = lambda step=step: step(x, y)
        out[f"{mode}_bytes"] = min(_peak(one) for _ in range(3))
        t = time.perf_counter()
        for _ in range(repeat):
            step(x, y)
        out[f"{mode}_steps_per_s"] = repeat / (time.perf_counter() - t)
        if mode == "free":
            keep = _keep_step(sess, x, y)
            keep()
            out["keep_bytes"] = min(_peak(keep) for _ in range(3))
        sess.close()
    out["free_vs_keep"] = out["free_bytes"] / out["keep_bytes"]
    out["reuse_vs_free"] = out["reuse_bytes"] / out["free_bytes"]
    out["reuse_speed_vs_free"] = out["reuse_steps_per_s"] / out["free_steps_per_s"]
    return out


def main() -> None:
    quick = "--quick" in sys.argv
    results = {}
    rows = []
    for name, label, repeat in (
        ("cnn", "CNN, batch 64", 5),
        ("mlp", "MLP 64-128-10, batch 4096", 30),
    ):
        r = results[name] = measure(name, 2 if quick else repeat)
        mib = 1 / 2**20
        rows.append(
            (
                label,
                f"{r['keep_bytes'] * mib:.2f}",
                f"{r['free_bytes'] * mib:.2f}",
                f"{r['reuse_bytes'] * mib:.2f}",
                f"{r['free_vs_keep']:.2f}",
                f"{r['reuse_vs_free']:.2f}",
                f"{r['free_steps_per_s']:.1f} / {r['reuse_steps_per_s']:.1f}",
            )
        )
    header = (
        "step",
        "keep MiB",
        "free MiB",
        "reuse MiB",
        "free/keep",
        "reuse/free",
        "steps/s free / reuse",
    )
    print_table(header, rows)
    if not quick:
        write_json("benchmarks/results/memory.json", results)


if __name__ == "__main__":
    main()
