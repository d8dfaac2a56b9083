"""Large GEMMs and batch kernels split across the cores on flowbook's own threads, BLAS on one.

On the 2-vCPU machines this project is measured on, BLAS runs on one thread
(``flowbook.runtime.blas``).  OpenBLAS's own threads are the trouble: after a
multi-threaded call each worker spins ~0.1 s (its ``THREAD_TIMEOUT``, 2^28
cycles) waiting for more, so at ten or more steps a second they never rest
and take the core that flowbook's pool thread or the main thread needs:
two large GEMMs side by side on one thread each run about twice as long in
the 0.1 s after a 2-thread GEMM, and switching OpenBLAS to 2 threads around
the large products only, even ending its workers after each
(``blas_thread_shutdown_``), leaves the CNN no faster
(``benchmarks/notes/blas_threads.md``; the figures are in
``docs/performance.md``, "BLAS threads").

A large product still gains from both cores, so :func:`matmul` (the conv
kernels' one big product) splits it by rows into one band per CPU
(:func:`in_bands`), each a one-thread BLAS call writing into its rows of
one output: conv2's forward product [12544,800]@[800,64] and its filter
gradient [800,12544]@[12544,64] take little more than half the time split
in two.  The helpers wait on a queue, not in a spin.

**The same bits under any load.**  Whether a band's rows come out with the
same bits as the same rows of one whole call is the BLAS kernel's business,
not flowbook's: OpenBLAS's SkylakeX and Sandybridge sgemm kernels give the
same bits, its Haswell kernel does not (8% of [12544,800]@[800,64] differs
in the last bit).  So a product is cut into bands by its shape and
:func:`ways` alone, never by the load: a wide product while the other cores
are busy runs the same bands one after another on the calling thread.  A
result depends on the inputs and the CPU count, never on which thread took
which band, what else was running, or the run before (tested on every BLAS
against the bands computed one by one, and against float64 within float32
rounding).  A product is split when all of this holds:

- the policy is on (:func:`configure`, called by ``flowbook.runtime.blas`` when
  it put BLAS on one thread by default; never when a user chose a count);
- the product is :func:`wide`: at least :data:`WIDE_MFLOP` and both sides
  of the result at least :data:`MIN_SIDE` long (a 25x32 filter gradient of
  80 MFLOP is not worth it).

Its bands go to the helpers only when no task of flowbook's pools is in
flight (the kernel pool and tf.data's map pool count theirs:
:func:`task_started`, :func:`task_finished`) and no other split is running:
the other cores are free as far as flowbook can tell.  Otherwise the caller
runs them all itself.

**Bands** (:func:`in_bands`) serve the products and the kernels that work
image by image over a large batch (the pools, a fused conv's bias and
ReLU, a conv's input gradient: :func:`bands`).  The bands are taken one at a
time by the caller and by this module's helper threads as each comes free
(work-sharing), so a helper whose core is busy elsewhere takes nothing and
the caller runs every band itself: the caller never waits for a helper
that has not started, only for bands a helper took.  The helpers wait on a
queue, not in a spin.  Kernels over a batch use bands of about
:data:`BAND_BYTES`, small enough to stay in a core's cache
between their passes; products use one band per CPU.

    >>> import numpy as np
    >>> wide(12544, 800, 64), wide(25, 50176, 32)
    (True, False)
    >>> matmul(np.ones((2, 3)), np.ones((3, 2))).tolist()
    [[3.0, 3.0], [3.0, 3.0]]
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from itertools import pairwise
from typing import Any

import numpy as np

from flowbook.platform.waiting import WAIT_SLICE_S

__all__ = [
    "BAND_BYTES",
    "MIN_SIDE",
    "WIDE_MFLOP",
    "bands",
    "configure",
    "in_bands",
    "matmul",
    "splits",
    "start_workers",
    "ways",
    "wide",
]

WIDE_MFLOP = 50.0  # a product of at least this many MFLOP may be split
MIN_SIDE = 64  # ... if both sides of its result are at least this long
BAND_BYTES = 1 << 20  # a batch band's bytes (bands): kernels over larger batches run in bands

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


def ways() -> int:
    """How many bands :func:`in_bands` runs side by side (one per CPU; 1: the policy is off)."""
    return _ways


def wide(m: int, k: int, n: int) -> bool:
    """Whether an [m,k]@[k,n] product is big enough, in both sides, to split.

    >>> wide(64, 6272, 10)
    False
    """
    return min(m, n) >= MIN_SIDE and 2.0 * m * k * n >= WIDE_MFLOP * 1e6


def splits(a: Any, b: Any) -> bool:
    """Whether :func:`matmul` of ``a`` and ``b`` computes it in row bands.

    >>> splits(np.ones((2, 3)), np.ones((3, 2)))
    False
    """
    return (
        _ways > 1
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
    """``a @ b`` of two 2-D arrays, in row bands across the CPUs when :func:`splits`.

    >>> matmul(np.eye(2), np.full((2, 2), 3.0)).tolist()
    [[3.0, 3.0], [3.0, 3.0]]
    """
    global _busy
    if not splits(a, b):
        return a @ b
    out = np.empty((a.shape[0], b.shape[1]), np.result_type(a, b))
    body = lambda lo, hi: np.matmul(a[lo:hi], b, out=out[lo:hi])
    with _lock:
        by_caller = _busy > 0  # the other cores are taken: the same bands, on this thread
        _busy += 1  # no other product splits across the cores meanwhile
    try:
        if by_caller:
            for lo, hi in pairwise(_edges(a.shape[0], _ways)):
                body(lo, hi)
        else:
            in_bands(a.shape[0], body)
        return out
    finally:
        task_finished()


def _edges(n: int, pieces: int) -> list[int]:
    """The edges of ``pieces`` bands covering ``range(n)``, as even as whole rows allow."""
    return [n * i // pieces for i in range(pieces + 1)]


class _Bands:
    """One :func:`in_bands` call: its pieces, taken one at a time by whichever thread asks."""

    __slots__ = ("body", "edges", "error", "finished", "left", "lock", "next")

    def __init__(self, body: Callable[[int, int], Any], edges: list[int]) -> None:
        self.body, self.edges = body, edges
        self.lock = threading.Lock()
        self.next = 0  # the next piece nobody took
        self.left = len(edges) - 1  # pieces not finished
        self.finished = threading.Event()
        self.error: BaseException | None = None

    def work(self) -> None:
        """Take pieces and run them until none is left to take."""
        while True:
            with self.lock:
                i = self.next
                if i >= len(self.edges) - 1:
                    return
                self.next = i + 1
            try:
                self.body(self.edges[i], self.edges[i + 1])
            except BaseException as e:  # handed to the caller
                self.error = self.error or e
            with self.lock:
                self.left -= 1
                if not self.left:
                    self.finished.set()


def bands(xp: Any, shape: tuple[int, ...], itemsize: int) -> int:
    """How many batch bands a kernel over an array of ``shape`` runs in (:func:`in_bands`):
    one per :data:`BAND_BYTES` (small enough to stay in a core's cache between the passes
    over it), for numpy arrays; 0 when smaller than that, of one image, or with the policy off
    (:func:`configure`: one band per call is the kernel as it is).

    >>> bands(np, (1, 28, 28, 32), 4)
    0
    """
    if xp is not np or shape[0] < 2 or _ways < 2:
        return 0
    pieces = min(shape[0], math.prod(shape) * itemsize // BAND_BYTES)
    return pieces if pieces > 1 else 0


def in_bands(n: int, body: Callable[[int, int], Any], pieces: int = 0) -> None:
    """Call ``body(lo, hi)`` on bands covering ``range(n)``, on the caller and the helpers.

    ``pieces`` bands (default: one per CPU), taken one at a time by the
    caller and by :data:`_ways` - 1 helper threads as each comes free
    (work-sharing): a helper whose core is busy elsewhere takes nothing and
    the caller runs every band itself, never waiting for a helper that has
    not started.  With the policy off (:func:`configure`), once,
    ``body(0, n)``.  ``body`` must write each band's part of its result
    alone, so that the result is the same however the bands fall.  An error
    of any band is raised here, once every band taken has finished.

    >>> seen = []
    >>> in_bands(10, lambda lo, hi: seen.append((lo, hi)))
    >>> sorted(seen)[0][0], sorted(seen)[-1][1]
    (0, 10)
    """
    global _helpers
    ways = _ways
    if ways < 2 or n < 2:
        body(0, n)
        return
    pieces = min(n, pieces or ways)
    job = _Bands(body, _edges(n, pieces))
    with _lock:
        if _helpers is None:
            _helpers = ThreadPoolExecutor(ways - 1, thread_name_prefix="flowbook-bands")
            start_workers(_helpers)
        helpers = _helpers
    for _ in range(min(ways, pieces) - 1):
        helpers.submit(job.work)
    job.work()
    while not job.finished.wait(WAIT_SLICE_S):  # bands a helper took; interruptible
        pass
    if job.error is not None:
        raise job.error


def start_workers(executor: ThreadPoolExecutor) -> None:
    """Start every worker of a new ``executor`` now, from a thread Ctrl-C cannot reach.

    ``Thread.start()`` waits for the new thread.  A KeyboardInterrupt landing
    in that wait (an executor starts workers on demand, inside ``submit``,
    mid-run) leaves a worker running that the executor never registered:
    nothing wakes it at interpreter exit, which then waits for it forever.
    Interrupts reach only the main thread, so a starter thread registers every
    worker whatever happens to its caller; once all are started, ``submit``
    starts none.
    """
    starter = threading.Thread(target=_start_all, args=(executor,), name="flowbook-pool-start")
    starter.start()
    starter.join()


def _start_all(executor: ThreadPoolExecutor) -> None:
    for _ in range(executor._max_workers):
        executor._adjust_thread_count()  # no worker is idle yet: each call starts one
