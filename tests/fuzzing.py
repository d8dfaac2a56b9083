"""What the fuzz tests share: their budget of examples, and the bounds each input must keep.

Every fuzzer (``test_fuzz_*.py``) feeds flowbook's readers inputs made by
hypothesis and asks that each one ends in success or in the reader's named
error, within a memory bound (numpy and Python allocations, seen through
``tracemalloc``) and a CPU-time bound (the reading thread's own time, which a
busy machine does not stretch as it stretches the wall clock).  By default they run a short while with
the rest of the tests; ``FLOWBOOK_FUZZ_EXAMPLES=5000 pytest tests/test_fuzz_*``
runs them longer (``.ci/run`` gives them about a minute in all).  An input
that broke a reader once is kept under ``tests/fixtures/<reader>_fuzz/`` and
replayed by the fuzzer's regression test.  (The checkpoint fuzzer keeps its
own bound on memory, relative to the file's size, and its own time loop,
``FLOWBOOK_FUZZ_SECONDS``; it shares the example budget.)
"""

from __future__ import annotations

import contextlib
import os
import resource
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

from hypothesis import HealthCheck, settings

EXAMPLES = int(os.environ.get("FLOWBOOK_FUZZ_EXAMPLES", "150"))
MEMORY_BOUND = 64 << 20  # bytes one input may make a reader allocate at its peak
TIME_BOUND_S = 2.0  # CPU seconds one input may take on the reading thread
FIXTURES = Path(__file__).parent / "fixtures"

FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,  # the time bound is checked by bounded(), with a message that says so
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=os.environ.get("FLOWBOOK_FUZZ_RANDOM") is None,  # CI: reproducible
)


@contextlib.contextmanager
def _address_space(extra: int) -> Iterator[None]:
    """At most ``extra`` more bytes of address space inside the block (Linux), so a runaway
    allocation fails as MemoryError instead of taking the machine's memory."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        yield
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = pages * os.sysconf("SC_PAGE_SIZE") + extra
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


@contextlib.contextmanager
def bounded(what: str) -> Iterator[None]:
    """Check that the block stays within MEMORY_BOUND and TIME_BOUND_S of CPU time."""
    tracemalloc.start()
    t0 = time.thread_time()
    try:
        with _address_space(1 << 30):
            yield
    finally:
        elapsed = time.thread_time() - t0
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert peak < MEMORY_BOUND, f"{what}: peak {peak >> 20} MiB"
    assert elapsed < TIME_BOUND_S, f"{what}: {elapsed:.2f} s of CPU time"


def corpus(reader: str) -> list[Path]:
    """The kept inputs of one fuzzer: the files of ``tests/fixtures/<reader>_fuzz/``."""
    return sorted(p for p in (FIXTURES / f"{reader}_fuzz").glob("*") if p.suffix != ".md")
