"""The thread pool heavy kernels run on, shared by every run of the scheduler.

One process-wide bounded pool (``pool()``, made on first use, one thread
per core and at least two).  A heavy op (``Plan.heavy``: matmuls,
convolutions, big reductions) goes there only when its actual inputs are
big enough to repay a thread's round trip (``large``); every other kernel
runs inline on the calling thread.  After an error a scheduler waits for its
own pool kernels (``drain``), each at most one kernel's time, bounded by
``DRAIN_LIMIT_S`` so a kernel that never returns cannot hang the notebook.

    >>> import numpy as np
    >>> large([np.zeros(10)]), large([np.zeros(1 << 15)])
    (False, True)
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any

from flowbook.kernels import gemm
from flowbook.platform.waiting import WAIT_SLICE_S

DRAIN_LIMIT_S = 600.0  # after an error, the longest wait for the run's pool kernels to finish
POOL_MIN_ELEMENTS = 1 << 15  # a heavy op goes to the pool only with inputs at least this big

_pool: CountingPool | None = None
_pool_lock = threading.Lock()


class CountingPool(ThreadPoolExecutor):
    """A thread pool that counts its tasks in flight for ``flowbook.kernels.gemm``: no GEMM goes wide
    (every core) while one runs.  The kernel pool and tf.data's map pool are ones.  Its
    workers all start with it (``gemm.start_workers``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        gemm.start_workers(self)

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future:
        gemm.task_started()
        try:
            future = super().submit(fn, *args, **kwargs)
        except BaseException:
            gemm.task_finished()
            raise
        future.add_done_callback(gemm.task_finished)
        return future


def pool() -> CountingPool:
    """The process-wide bounded pool heavy kernels run on (created on first use)."""
    global _pool
    if _pool is None:
        with _pool_lock:
            if _pool is None:
                _pool = CountingPool(
                    max_workers=max(2, os.cpu_count() or 2), thread_name_prefix="flowbook"
                )
    return _pool


def large(args: Sequence[Any]) -> bool:
    """Whether a heavy op's inputs are big enough to be worth a pool thread's round trip.

    Static shapes often leave the batch unknown, so the plan marks such ops
    heavy; this decides with the actual arrays (an argument that is not an array, such as a
    queue whose ``size`` is a method, counts nothing).
    """
    sizes = (getattr(a, "size", 0) for a in args)
    return sum(n for n in sizes if type(n) is int) >= POOL_MIN_ELEMENTS


def drain(futures: Sequence[Future]) -> None:
    """Wait for ``futures`` (a failed run's pool kernels), at most ``DRAIN_LIMIT_S``.

    Waits on the futures themselves, not an in-flight count, which an
    interrupt may have caught half-updated; a second Ctrl-C while draining
    still lets the kernels finish.
    """
    give_up = time.monotonic() + DRAIN_LIMIT_S
    pending = [f for f in futures if not f.done()]
    while pending and time.monotonic() < give_up:
        with contextlib.suppress(KeyboardInterrupt):
            wait(pending, timeout=WAIT_SLICE_S)
        pending = [f for f in pending if not f.done()]
