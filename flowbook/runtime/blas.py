"""How many threads the BLAS under numpy may use: set once per process, never per run or op.

A conv or matmul kernel is one BLAS call; between calls the run does
element-wise numpy work on the calling thread.  OpenBLAS keeps its worker
threads spinning for a while after each call, so on a small machine they
take the CPU the next element-wise kernel needs: on the 2-vCPU machines this
project is measured on (about one core of parallel throughput), mixed
workloads ran many times slower with 2 BLAS threads than with 1, the CNN
training step of ``benchmarks/train.py`` (its ``blas_threads`` figures) was
slower on 2 threads, and much slower under load from other work, while a
lone GEMM was no faster on 2 threads, within this machine's noise
(``docs/performance.md``, "BLAS threads").  A conv net's step is many GEMMs
between element-wise passes, so one thread it is: flowbook's own pool runs
independent kernels (the two conv backprops) side by side instead, and
``flowbook.kernels.gemm`` splits a large product by rows across the CPUs on
flowbook's own threads when nothing else runs (BLAS's workers spin ~0.1 s
after each multi-threaded call; flowbook's wait on a queue:
``benchmarks/notes/blas_threads.md``).

The policy, applied when a Session is created (:func:`apply`):

- ``ConfigProto(intra_op_parallelism_threads=n)`` with ``n > 0``: BLAS uses
  ``n`` threads.  The BLAS pool belongs to the process, not the session, so
  the most recently created session with a setting decides (TF's own intra-op pool is
  per session; this is the closest numpy allows).
- ``0`` (the default, "let the system pick"): BLAS keeps its own choice,
  except on a machine with at most :data:`SMALL_MACHINE_CPUS` CPUs available
  to the process, where it gets one thread, for the reason above, and
  large products are split (``gemm.configure``).  An
  explicit ``OPENBLAS_NUM_THREADS`` / ``OMP_NUM_THREADS`` / ``MKL_NUM_THREADS``
  in the environment is left alone.

Why not a ``threadpool_limits`` context around each run: entering one costs
~220 µs (it scans the loaded libraries), a reused ``ThreadpoolController``'s
``limit`` ~4 µs; the fixed cost of a whole ``run`` is tens of µs.  Here a
controller is built (~1 ms) when a session needs a count other than the one
in force, or when modules were imported since (a BLAS library may have come
with them); any other new session costs two integer comparisons.
``threadpoolctl`` is imported at that moment (~25 ms), not with flowbook.

    >>> apply(0) in (None, 1)
    True
"""

from __future__ import annotations

import os
import sys
import threading

from flowbook.kernels import gemm
from flowbook.runtime import heap

__all__ = ["SMALL_MACHINE_CPUS", "apply", "blas_threads"]

SMALL_MACHINE_CPUS = 2  # at most this many usable CPUs: one BLAS thread unless configured
_ENV = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")

_lock = threading.Lock()  # guards the two fields below
_applied: int | None = None  # the BLAS thread count flowbook last set (None: never set one)
_modules = 0  # len(sys.modules) then: more modules may mean another BLAS library loaded


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def wanted(intra_op_threads: int) -> int | None:
    """The BLAS thread count for a session's setting; None to leave BLAS as it is.

    >>> wanted(3)
    3
    """
    if intra_op_threads > 0:
        return intra_op_threads
    if any(name in os.environ for name in _ENV) or _cpus() > SMALL_MACHINE_CPUS:
        return None
    return 1


def apply(intra_op_threads: int) -> int | None:
    """Put the policy in force for a new session; returns the count set (None: untouched).

    Also the process's other native setting, malloc's thresholds (``heap.apply``, once).
    """
    global _applied, _modules
    heap.apply()
    n = wanted(intra_op_threads)
    # the default's one thread on a small machine: large products split on flowbook's threads
    gemm.configure(_cpus() if intra_op_threads <= 0 and n == 1 else 1)
    if n is None or (n == _applied and len(sys.modules) == _modules):
        return n
    with _lock:
        import threadpoolctl  # here, not at import: it costs ~25 ms and most runs need none

        # A new controller: a BLAS loaded since the last one (scipy's, say) is seen too.
        threadpoolctl.ThreadpoolController().select(user_api="blas").limit(limits=n)
        _applied, _modules = n, len(sys.modules)
    return n


def blas_threads() -> list[int]:
    """The thread count of each BLAS library numpy has loaded (for tests and benchmarks).

    >>> all(n >= 1 for n in blas_threads())
    True
    """
    import threadpoolctl

    return [
        info["num_threads"]
        for info in threadpoolctl.threadpool_info()
        if info["user_api"] == "blas"
    ]
