"""Input pipeline throughput: examples per second through tf.data and queues vs numpy by hand.

The pipelines, as TF1 tutorials write them, over the digits (1,797 8x8 images
as uint8 pixels, with their labels):

    from_tensor_slices((images, labels)) -> shuffle(10000) -> map(cast to float32, / 255)
    -> batch(100) -> repeat() -> make_one_shot_iterator().get_next()

(unseeded, as most code writes it, and again with ``shuffle(10000, seed=0)``,
whose order is TensorFlow's, drawn from TF's Philox stream),

fetched with ``sess.run(next_element)`` in a loop, and the queue pipeline

    slice_input_producer([images, labels]) -> cast to float32, / 255
    -> shuffle_batch(100, capacity=2000, min_after_dequeue=1000)

fed by its QueueRunners on their threads (a Coordinator stops them), whose
batches are fetched with ``sess.run``: one run per example moves it from the
index queue into the shuffle queue, so this measures flowbook's per-run
cost as much as the queues.  Both go against numpy doing the
same work by hand each epoch (a permutation, then per batch a slice of it,
a gather, the cast and the divide).  Both run in this process on the same
data; the figure to read is the ratio (flowbook / numpy examples per second,
higher is better).  ``--quick`` runs a few epochs (under 10 s).

Usage: ``python benchmarks/input_pipeline.py [--quick]``; writes
``benchmarks/results/input_pipeline.json``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
from _common import print_table, write_json

import flowbook as tf

BATCH = 100


def digits() -> tuple[np.ndarray, np.ndarray]:
    """The digits as uint8 pixel rows (0..16) and int64 labels."""
    from sklearn.datasets import load_digits

    d = load_digits()
    return d.data.astype(np.uint8), d.target.astype(np.int64)


def numpy_loop(images: np.ndarray, labels: np.ndarray, batches: int, seed: int = 0) -> float:
    """Examples per second of the hand-written loop (the epochs needed for ``batches``)."""
    rng = np.random.default_rng(seed)
    n = len(images)
    done = 0
    start = time.perf_counter()
    while done < batches:
        order = rng.permutation(n)
        for i in range(0, n, BATCH):
            idx = order[i : i + BATCH]
            x = images[idx].astype(np.float32) / 255.0
            y = labels[idx]
            done += 1
            if done == batches:
                break
    elapsed = time.perf_counter() - start
    assert x.dtype == np.float32 and len(y) == len(x)
    return _examples(n, batches) / elapsed


def _examples(n: int, batches: int) -> int:
    """Examples in the first ``batches`` batches of epochs of ``n`` (the last of each is short)."""
    per_epoch = -(-n // BATCH)
    epochs, rest = divmod(batches, per_epoch)
    return epochs * n + min(rest * BATCH, n)


def flowbook_loop(
    images: np.ndarray, labels: np.ndarray, batches: int, seed: int | None = None
) -> float:
    """Examples per second of the tf.data pipeline fetched with ``sess.run``.

    Unseeded, the shuffle draws from numpy's generator; seeded, it draws
    TensorFlow's exact order (Philox and TF's Fisher-Yates, in numpy calls).
    """
    with tf.Graph().as_default(), tf.Session() as sess:
        ds = tf.data.Dataset.from_tensor_slices((images, labels))
        ds = ds.shuffle(10000, seed=seed).map(lambda x, y: (tf.cast(x, tf.float32) / 255.0, y))
        next_element = ds.batch(BATCH).repeat().make_one_shot_iterator().get_next()
        for _ in range(40):  # warm: the run's plan, the iterator, the map's compiled run
            sess.run(next_element)
        start = time.perf_counter()
        for _ in range(batches):
            x, y = sess.run(next_element)
        elapsed = time.perf_counter() - start
    assert x.dtype == np.float32 and len(y) == len(x)
    return _examples(len(images), batches) / elapsed


def queue_loop(images: np.ndarray, labels: np.ndarray, batches: int) -> float:
    """Examples per second of slice_input_producer + shuffle_batch with QueueRunners."""
    with tf.Graph().as_default(), tf.Session() as sess:
        image, label = tf.train.slice_input_producer([images, labels], seed=0)
        image = tf.cast(image, tf.float32) / 255.0
        x_batch, y_batch = tf.train.shuffle_batch(
            [image, label], BATCH, capacity=2000, min_after_dequeue=1000, seed=0
        )
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        try:
            for _ in range(20):  # warm: the runners fill the shuffle queue past its minimum
                sess.run([x_batch, y_batch])
            start = time.perf_counter()
            for _ in range(batches):
                x, y = sess.run([x_batch, y_batch])
            elapsed = time.perf_counter() - start
        finally:
            coord.request_stop()
            coord.join(threads)
    assert x.dtype == np.float32 and len(y) == len(x) == BATCH
    return batches * BATCH / elapsed


def pipeline_alone(
    images: np.ndarray, labels: np.ndarray, batches: int, seed: int | None = None
) -> float:
    """Examples per second of the same pipeline pulled in Python (no Session): its own cost
    (unseeded, as the headline ``flowbook_loop``)."""
    with tf.Graph().as_default():
        ds = tf.data.Dataset.from_tensor_slices((images, labels))
        ds = ds.shuffle(10000, seed=seed).map(lambda x, y: (tf.cast(x, tf.float32) / 255.0, y))
        elements = ds.batch(BATCH).repeat().elements([images, labels])
        for _ in range(40):
            next(elements)
        start = time.perf_counter()
        for _ in range(batches):
            next(elements)
        elapsed = time.perf_counter() - start
    return _examples(len(images), batches) / elapsed


def session_floor(batches: int) -> float:
    """Microseconds of one ``sess.run`` fetching a pair of constants (what any fetch costs)."""
    with tf.Graph().as_default(), tf.Session() as sess:
        pair = (tf.constant(np.zeros((BATCH, 64), np.float32)), tf.constant(np.zeros(BATCH)))
        sess.run(pair)
        start = time.perf_counter()
        for _ in range(batches):
            sess.run(pair)
        return (time.perf_counter() - start) / batches * 1e6


def main() -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few epochs (under 10 s)")
    args = parser.parse_args()
    images, labels = digits()
    batches = 90 if args.quick else 900  # 5 or 50 epochs of 18 batches
    repeat = 3 if args.quick else 7
    ours, seeded, theirs, alone, floor, queued = [], [], [], [], [], []
    for _ in range(repeat):  # interleaved, so drifts in machine load hit both
        theirs.append(numpy_loop(images, labels, batches))
        ours.append(flowbook_loop(images, labels, batches))
        seeded.append(flowbook_loop(images, labels, batches, seed=0))
        queued.append(queue_loop(images, labels, batches // 3))
        alone.append(pipeline_alone(images, labels, batches))
        floor.append(session_floor(batches))
    fb_rate, np_rate = statistics.median(ours), statistics.median(theirs)
    ratio = fb_rate / np_rate
    q_rate, s_rate = statistics.median(queued), statistics.median(seeded)
    per_batch = {  # where a batch's time goes, in microseconds
        "numpy_loop": BATCH / np_rate * 1e6,
        "flowbook_sess_run": BATCH / fb_rate * 1e6,
        "pipeline_without_session": BATCH / statistics.median(alone) * 1e6,
        "sess_run_of_two_constants": statistics.median(floor),
        "queue_pipeline_sess_run": BATCH / q_rate * 1e6,
    }
    print_table(
        ["pipeline", "examples/s (median)", "vs numpy"],
        [
            ["numpy by hand", f"{np_rate:,.0f}", "1.00x"],
            ["flowbook tf.data + sess.run", f"{fb_rate:,.0f}", f"{ratio:.2f}x"],
            ["  same, shuffle(seed=0): TF's order", f"{s_rate:,.0f}", f"{s_rate / np_rate:.2f}x"],
            ["flowbook queues + QueueRunners", f"{q_rate:,.0f}", f"{q_rate / np_rate:.3f}x"],
        ],
    )
    print("\nper batch of 100 (µs):")
    print_table(["part", "µs"], [[k, f"{v:.1f}"] for k, v in per_batch.items()])
    results = {
        "workload": "digits 1797x64 uint8: shuffle(10000) -> map(cast, /255) -> batch(100)",
        "batches_per_run": batches,
        "repeats": repeat,
        "numpy_examples_per_s": round(np_rate),
        "flowbook_examples_per_s": round(fb_rate),
        "ratio_vs_numpy": round(ratio, 3),
        "seeded_examples_per_s": round(s_rate),
        "seeded_ratio_vs_numpy": round(s_rate / np_rate, 3),
        "queue_workload": "slice_input_producer -> cast, /255 -> shuffle_batch(100, 2000, 1000)",
        "queue_examples_per_s": round(q_rate),
        "queue_ratio_vs_numpy": round(q_rate / np_rate, 4),
        "queue_batches_per_run": batches // 3,
        "goal_ratio": 0.5,
        "per_batch_us": {k: round(v, 2) for k, v in per_batch.items()},
        "quick": args.quick,
    }
    write_json(str(Path(__file__).parent / "results" / "input_pipeline.json"), results)
    return results


if __name__ == "__main__":
    main()
