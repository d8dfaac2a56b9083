"""How much freed memory the process keeps for reuse: glibc malloc's two thresholds, set once.

A training step allocates the same large arrays every step: the CNN of
``benchmarks/train.py`` makes several 6.4 MB ``[64,28,28,32]`` activations
and gradients per step.  numpy takes large arrays straight from ``malloc``,
and glibc serves a request that large with a fresh ``mmap`` (or from the top
of the heap, which it trims back to the system once more than
``M_TRIM_THRESHOLD`` is free there).  Either way the system hands out and
zeroes the same pages again every step: hundreds of page faults per such
array, in the kernels that make them (MaxPoolGrad, ReluGrad, BiasAdd), a
large share of the step's CPU time.

The policy, put in force by the first Session (:func:`apply`, called from
``blas.apply``, which every new Session calls), is what a
pooling allocator (TensorFlow's BFC allocator) does, bounded:

- ``M_MMAP_THRESHOLD`` = :data:`MMAP_THRESHOLD` (64 MiB): arrays up to that
  size come from the heap, so a freed one's pages serve the next;
- ``M_TRIM_THRESHOLD`` = :data:`TRIM_THRESHOLD` (256 MiB): up to that much
  free memory at the top of the heap stays with the process.

Keeping those pages cuts the CNN step's CPU time by a quarter or more
(``docs/performance.md``, "Freed memory kept for reuse").  The setting
belongs to the process, so numpy code beside flowbook gains too (a
hand-written numpy CNN does, with the same thresholds set through the
environment).  It is left alone when the process does not
run on glibc (``mallopt`` missing: macOS, Windows, musl), or when the
environment already sets ``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_``
or ``MALLOC_TOP_PAD_`` (the user's choice), and it is made only once.

    >>> apply() in (True, False)
    True
"""

from __future__ import annotations

import ctypes
import os
import threading

__all__ = ["MMAP_THRESHOLD", "TRIM_THRESHOLD", "apply", "wanted"]

MMAP_THRESHOLD = 64 << 20  # bytes: smaller allocations come from the heap and are reused
TRIM_THRESHOLD = 256 << 20  # bytes of free heap top kept before giving memory back
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameter numbers
_ENV = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_")

_lock = threading.Lock()  # guards _done
_done: bool | None = None  # None: not tried yet; else whether the thresholds were set


def wanted() -> bool:
    """Whether flowbook should set the thresholds: not when the environment sets malloc's.

    >>> isinstance(wanted(), bool)
    True
    """
    return not any(name in os.environ for name in _ENV)


def apply() -> bool:
    """Set the two thresholds once per process (glibc only); whether they are flowbook's."""
    global _done
    if _done is not None:
        return _done
    with _lock:
        if _done is None:
            _done = wanted() and _mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
            _done = _done and _mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    return _done


def _mallopt(param: int, value: int) -> bool:
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (AttributeError, OSError, TypeError):  # not glibc, or no C library to ask
        return False
    return bool(mallopt(param, value))
