"""Large GEMMs split across the cores on flowbook's own threads, BLAS itself on one.

On the 2-vCPU machines this project is measured on, BLAS runs on one thread
(``flowbook.run.blas``).  OpenBLAS's own threads are the trouble: after a
multi-threaded call each worker spins ~0.1 s (its ``THREAD_TIMEOUT``, 2^28
cycles) waiting for more, so at ten or more steps a second they never rest
and take the core that flowbook's pool thread or the main thread needs.
Measured 2026-11-24 (load ~1): two 1.3-GFLOP GEMMs side by side on one
thread each took 17.4 ms, but 30-38 ms in the 0.1 s after a 2-thread GEMM;
switching OpenBLAS to 2 threads around the large products only, and even
ending its workers after each (``blas_thread_shutdown_``), left the CNN no
faster (``benchmarks/notes/blas_threads.md``).

A large product still gains from both cores, so :func:`matmul` (the conv
kernels' one big product) splits it by rows into one band per CPU: the
bands after the first go to this module's helper threads, the first runs
on the caller, each a one-thread BLAS call writing into its rows of one
output.  [12544,800]@[800,64] (conv2 forward): 17.4 ms whole, 8.9-9.4 split
in two; the filter gradient [800,12544]@[12544,64]: 17.7 against 10.2-10.4.
The helpers wait on a queue, not in a spin.  A row of the result is the same
dot products in the same order either way, so the result is bit-identical
to ``a @ b`` (tested).  It splits only when all of this holds:

- the policy is on (:func:`configure`, called by ``flowbook.run.blas`` when
  it put BLAS on one thread by default; never when a user chose a count);
- the product is :func:`wide`: at least :data:`WIDE_MFLOP` and both sides
  of the result at least :data:`MIN_SIDE` long (a 25x32 filter gradient of
  80 MFLOP is not worth it);
- no task of flowbook's pools is in flight (the kernel pool and tf.data's
  map pool count theirs: :func:`task_started`, :func:`task_finished`) and
  no other split is running: the other cores are free as far as flowbook
  can tell.

    >>> import numpy as np
    >>> wide(12544, 800, 64), wide(25, 50176, 32)
    (True, False)
    >>> matmul(np.ones((2, 3)), np.ones((3, 2))).tolist()
    [[3.0, 3.0], [3.0, 3.0]]
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from itertools import pairwise
from typing import Any

import numpy as np

__all__ = ["MIN_SIDE", "WIDE_MFLOP", "configure", "matmul", "splits", "wide"]

WIDE_MFLOP = 50.0  # a product of at least this many MFLOP may be split
MIN_SIDE = 64  # ... if both sides of its result are at least this long

_ways = 1  # bands a wide product is split into (1: the policy is off)
_helpers: ThreadPoolExecutor | None = None  # _ways - 1 threads, made on first use
_lock = threading.Lock()
_busy = 0  # pool tasks in flight plus splits running


def configure(ways: int) -> None:
    """Split wide products into ``ways`` bands (one per CPU); 1 turns the policy off.

    >>> configure(1)
    """
    global _ways, _helpers
    with _lock:
        if _helpers is not None and ways != _ways:
            _helpers.shutdown(wait=False)
            _helpers = None
        _ways = max(1, ways)


def wide(m: int, k: int, n: int) -> bool:
    """Whether an [m,k]@[k,n] product is big enough, in both sides, to split.

    >>> wide(64, 6272, 10)
    False
    """
    return min(m, n) >= MIN_SIDE and 2.0 * m * k * n >= WIDE_MFLOP * 1e6


def splits(a: Any, b: Any) -> bool:
    """Whether :func:`matmul` of ``a`` and ``b`` called now would split it.

    >>> splits(np.ones((2, 3)), np.ones((3, 2)))
    False
    """
    return (
        _ways > 1
        and not _busy
        and type(a) is np.ndarray
        and type(b) is np.ndarray
        and a.ndim == 2
        and b.ndim == 2
        and wide(a.shape[0], a.shape[1], b.shape[1])
    )


def task_started(_: Any = None) -> None:
    """Count a task sent to a pool thread: nothing is split until it is done."""
    global _busy
    with _lock:
        _busy += 1


def task_finished(_: Any = None) -> None:
    """Count a pool task done (a future's done-callback: takes the future and ignores it)."""
    global _busy
    with _lock:
        _busy -= 1


def matmul(a: Any, b: Any) -> Any:
    """``a @ b`` of two 2-D arrays, split by rows across the CPUs when :func:`splits`."""
    global _busy, _helpers
    if not splits(a, b):
        return a @ b
    with _lock:
        ways, alone = _ways, _busy == 0
        _busy += 1
        if alone and ways > 1 and _helpers is None:
            _helpers = ThreadPoolExecutor(ways - 1, thread_name_prefix="flowbook-gemm")
        helpers = _helpers
    try:
        if not alone or ways < 2 or helpers is None:
            return a @ b
        out = np.empty((a.shape[0], b.shape[1]), np.result_type(a, b))
        edges = [a.shape[0] * i // ways for i in range(ways + 1)]
        bands = [
            helpers.submit(np.matmul, a[lo:hi], b, out=out[lo:hi]) for lo, hi in pairwise(edges[1:])
        ]
        try:
            np.matmul(a[: edges[1]], b, out=out[: edges[1]])
        finally:
            for band in bands:
                band.result()
        return out
    finally:
        task_finished()
