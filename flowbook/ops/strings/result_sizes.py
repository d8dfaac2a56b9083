"""What a string result will take, worked out before it is built, and refused when it cannot fit.

A numeric kernel allocates its result in one call: when memory runs out, the
allocation fails at once with a ``MemoryError``, which the runtime turns into a
``ResourceExhaustedError`` naming the op and its cell
(``flowbook.runtime.op_errors``).  A string result is built one Python
``bytes`` object at a time, so running out of memory that way takes tens of
seconds and fills the machine first: ``reduce_join`` of a 1 KB string tiled
10^8 times asks for 100 GB.  The string kernels therefore work out the bytes
their result needs from their inputs' lengths and shapes before building
anything (:func:`check_result`), and raise that same ``MemoryError`` when it is
more than the memory a string result may take (:func:`max_string_bytes`).

A result is counted as its payload plus :data:`PER_STRING` bytes for each
string (the ``bytes`` object's header and the array's pointer to it).  The
limit is the memory this process can still get: the smaller of the
machine's available memory (``MemAvailable``) and what ``RLIMIT_AS`` leaves,
unless ``FLOWBOOK_MAX_STRING_BYTES`` or :func:`string_limit` says otherwise.

Lengths are read in chunks of :data:`CHUNK` strings (``map(len, ...)`` into
an int64 array, no Python code per string), and the count stops at the first
chunk past the limit, so a refused result is refused after reading a few
million lengths, whatever its size.

    >>> with string_limit(1000):
    ...     check_result("ReduceJoin", 2000, 1)
    Traceback (most recent call last):
    ...
    MemoryError: the ReduceJoin result needs 2.0 KiB (1 string of 2,000 bytes), more than the 1000 B a string result may take (FLOWBOOK_MAX_STRING_BYTES, flowbook.ops.strings.result_sizes.string_limit)
"""

from __future__ import annotations

import contextlib
import os
import resource
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from flowbook.framework.limits import human

__all__ = ["check_result", "max_string_bytes", "string_limit", "total_length"]

PER_STRING = sys.getsizeof(b"") + 8  # a bytes object's header, and its slot in an object array
CHUNK = 1 << 20
_ENV = "FLOWBOOK_MAX_STRING_BYTES"
_limit: list[int] = []


@contextlib.contextmanager
def string_limit(nbytes: int) -> Iterator[None]:
    """Let one string result take at most ``nbytes`` inside the block.

    >>> with string_limit(1 << 20):
    ...     max_string_bytes()
    1048576
    """
    _limit.append(int(nbytes))
    try:
        yield
    finally:
        _limit.pop()


def _available() -> int:
    """The memory this process can still allocate: MemAvailable, and RLIMIT_AS's headroom."""
    found = []
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                found.append(int(line.split()[1]) * 1024)
                break
    except (OSError, ValueError, IndexError):
        pass
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        try:
            pages = int(Path("/proc/self/statm").read_text().split()[0])
            found.append(max(0, soft - pages * os.sysconf("SC_PAGE_SIZE")))
        except (OSError, ValueError, IndexError):
            found.append(soft)
    return min(found) if found else 1 << 62


def max_string_bytes() -> int:
    """The most bytes one string result may take now (see the module)."""
    if _limit:
        return _limit[-1]
    env = os.environ.get(_ENV, "").strip()
    if env:
        try:
            return max(0, int(env))
        except ValueError:
            raise ValueError(f"{_ENV}={env!r} is not a number of bytes") from None
    return _available()


def check_result(
    op_type: str, payload: int, count: int, limit: int | None = None, at_least: bool = False
) -> None:
    """Raise MemoryError when ``count`` strings of ``payload`` bytes in all pass the limit."""
    limit = max_string_bytes() if limit is None else limit
    need = int(payload) + int(count) * PER_STRING
    if need > limit:
        strings = "string" if count == 1 else "strings"
        bound = "at least " if at_least else ""
        raise MemoryError(
            f"the {op_type} result needs {bound}{human(need)} ({int(count):,} {strings} of "
            f"{bound}"
            f"{int(payload):,} bytes), more than the {human(limit)} a string result may take "
            f"({_ENV}, flowbook.ops.strings.result_sizes.string_limit)"
        )


def _len(v: Any) -> int:
    return len(v) if isinstance(v, bytes | str) else len(str(v).encode())


def total_length(
    op_type: str, values: Any, scale: int = 1, limit: int | None = None, count: int = 0
) -> int:
    """The summed length of the strings ``values``, each counted ``scale`` times.

    Stops with :func:`check_result`'s MemoryError (for a result of ``count``
    strings) as soon as the sum passes the limit, so a huge input costs a few
    chunks of lengths, not a full pass.

    >>> total_length("StringJoin", np.array([b"ab", b"c"], dtype=object), scale=3)
    9
    """
    limit = max_string_bytes() if limit is None else limit
    flat = np.asarray(values, dtype=object).reshape(-1)
    total = 0
    for start in range(0, flat.size, CHUNK):
        chunk = flat[start : start + CHUNK]
        try:
            lengths = np.fromiter(map(len, chunk), np.int64, chunk.size)
        except TypeError:
            lengths = np.fromiter(map(_len, chunk), np.int64, chunk.size)
        total += int(lengths.sum()) * scale
        if total > limit:
            check_result(op_type, total, count, limit, at_least=True)
    return total
