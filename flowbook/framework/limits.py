"""How much memory a file may make flowbook allocate: the claims budget.

A GraphDef (and later a checkpoint or a TFRecord) *claims* sizes: a ``Const``
of shape ``[20000, 20000]`` written with a single ``float_val`` is 62 bytes
on disk and 1.6 GB in memory.  Before anything is allocated for such a
claim, :func:`check_claim` works its size out with Python integers (no int64
wrap-around) and refuses it when it passes :func:`max_claim_bytes`, naming
what made the claim and its size.

The limit defaults to 512 MiB, is read from the environment variable
``FLOWBOOK_MAX_CLAIM_BYTES`` when set, and can be changed for a block of code
with :func:`claim_limit`.  It bounds what *files* ask for, never what a
program builds itself (``tf.zeros([50000, 50000])`` is the program's
choice).

    >>> claimed_bytes((20000, 20000), 4)
    1600000000
    >>> check_claim("node 'c' (Const)", (20000, 20000), 4, "float32")
    Traceback (most recent call last):
    ...
    ValueError: node 'c' (Const) claims a float32 tensor of shape [20000, 20000] (1.5 GiB), over the 512.0 MiB a file may claim (FLOWBOOK_MAX_CLAIM_BYTES, flowbook.framework.limits.claim_limit)
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Iterator, Sequence

DEFAULT_MAX_CLAIM_BYTES = 512 << 20
_ENV = "FLOWBOOK_MAX_CLAIM_BYTES"
_limit: list[int] = []  # the innermost claim_limit() in force, if any


def max_claim_bytes() -> int:
    """The most bytes one claim of a file may make flowbook allocate.

    >>> with claim_limit(1000):
    ...     max_claim_bytes()
    1000
    """
    if _limit:
        return _limit[-1]
    env = os.environ.get(_ENV, "").strip()
    if env:
        try:
            return max(0, int(env))
        except ValueError:
            raise ValueError(f"{_ENV}={env!r} is not a number of bytes") from None
    return DEFAULT_MAX_CLAIM_BYTES


@contextlib.contextmanager
def claim_limit(nbytes: int) -> Iterator[None]:
    """Use ``nbytes`` as the claims budget inside the block.

    >>> with claim_limit(2 << 30):  # a trusted 2 GiB GraphDef
    ...     max_claim_bytes() == 2 << 30
    True
    """
    _limit.append(int(nbytes))
    try:
        yield
    finally:
        _limit.pop()


def claimed_bytes(shape: Sequence[int], itemsize: int) -> int:
    """Bytes of a tensor of ``shape`` and ``itemsize``, exact (Python ints never wrap).

    >>> claimed_bytes((2**32 + 1, 2**32 + 1), 4) > 2**64
    True
    """
    return math.prod(int(d) for d in shape) * int(itemsize)


def human(nbytes: int) -> str:
    """``1.5 GiB``: a size for a person to read.

    >>> human(512 << 20), human(100)
    ('512.0 MiB', '100 B')
    """
    size = float(nbytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if size < 1024 or unit == "PiB":
            return f"{int(size)} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


def check_claim(what: str, shape: Sequence[int], itemsize: int, dtype: str) -> int:
    """The bytes ``what`` claims; ``ValueError`` naming it when over :func:`max_claim_bytes`.

    Negative dimensions are refused too: a file cannot claim them.
    """
    if any(int(d) < 0 for d in shape):
        raise ValueError(f"{what} claims a negative dimension in shape {list(shape)}")
    nbytes = claimed_bytes(shape, itemsize)
    limit = max_claim_bytes()
    if nbytes > limit:
        raise ValueError(
            f"{what} claims a {dtype} tensor of shape {list(shape)} ({human(nbytes)}), over the "
            f"{human(limit)} a file may claim ({_ENV}, flowbook.framework.limits.claim_limit)"
        )
    return nbytes
