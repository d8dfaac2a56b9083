"""Regular expressions for the string ops, through RE2 as in TensorFlow: linear time, RE2's rules.

Python's ``re`` backtracks: ``(a+)+$`` against forty ``a`` and a ``b`` takes
longer than a session would wait, and no deadline can stop a C call that does
not return.  TensorFlow's regex ops use RE2, whose matching time is linear in
the text, and so does flowbook, through ``google-re2`` (module ``re2``):

- **Syntax** is RE2's, in UTF-8 mode (TF's default options): no
  backreferences, no lookaround, ``{n}`` up to 1000; ``.`` matches one UTF-8
  character and never an invalid byte.  A pattern RE2 refuses is an
  ``InvalidArgumentError`` saying ``Invalid pattern: <p>, error: <RE2's
  reason>``, as TF words it: raised when the graph is built when the pattern
  is a constant, else by the run that feeds it.
- **Rewrites** are RE2's: ``\\0`` to ``\\9`` are groups (an unmatched group is
  empty), ``\\\\`` is a backslash, any other escape ends the rewrite.  A
  rewrite naming a group the pattern lacks leaves the string unchanged.
- **Global replacement** is ``RE2::GlobalReplace``: after an empty match at
  the end of the previous match, the scan skips one UTF-8 character (``b*``
  over ``abc`` gives ``-a-c-``, not Python's ``-a--c-``).  Without
  ``replace_global`` the first match alone is replaced (``RE2::Replace``),
  and an invalid rewrite leaves the string as it was.

Compiled patterns are kept in a bounded LRU cache (:func:`compiled`).  The
result's size is counted while it is built and the kernel stops with a
``MemoryError`` (a ``ResourceExhaustedError`` naming the op) the moment it
passes what a string result may take (``result_sizes``).

    >>> replace_all(compiled("RegexReplace", rb"(\\w+) (\\w+)"), b"hello world", *rewrite(rb"\\2 \\1"))
    b'world hello'
"""

from __future__ import annotations

import functools
from typing import Any

import re2

from flowbook.framework.errors import InvalidArgumentError
from flowbook.ops.strings.result_sizes import check_result

__all__ = ["Budget", "compiled", "full_match", "replace_all", "replace_first", "rewrite"]

CACHE_SIZE = 256
_OPTIONS = re2.Options()
_OPTIONS.log_errors = False


class Budget:
    """Bytes a result may still take; ``take`` raises MemoryError past them."""

    def __init__(self, op_type: str, limit: int) -> None:
        self.op_type, self.limit, self.used = op_type, limit, 0

    def take(self, n: int) -> None:
        self.used += n
        if self.used > self.limit:
            check_result(self.op_type, self.used, 1, self.limit, at_least=True)


@functools.lru_cache(maxsize=CACHE_SIZE)
def _compile(pattern: bytes) -> Any:
    try:
        return re2.compile(pattern, _OPTIONS)
    except re2.error as e:
        reason = e.args[0] if e.args else str(e)
        reason = reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)
        return reason


def compiled(op_type: str, pattern: Any) -> Any:
    """``pattern`` compiled by RE2 (cached); InvalidArgumentError naming ``op_type`` if it cannot be.

    >>> compiled("RegexReplace", "(a)\\\\1")
    Traceback (most recent call last):
    ...
    flowbook.framework.errors.InvalidArgumentError: RegexReplace: Invalid pattern: (a)\\1, error: invalid escape sequence: \\1
    """
    raw = pattern if isinstance(pattern, bytes) else str(pattern).encode()
    regex = _compile(raw)
    if isinstance(regex, str):
        shown = raw.decode("utf-8", "replace")
        where = f"{op_type}: " if op_type else ""  # at run time the runtime names the op
        raise InvalidArgumentError(None, None, f"{where}Invalid pattern: {shown}, error: {regex}")
    return regex


def rewrite(text: bytes) -> tuple[list[bytes | int], bool, int]:
    """RE2's reading of a rewrite string: its pieces (bytes, or group numbers) up to
    the first invalid escape, whether it is all valid, and the highest group it names.

    >>> rewrite(rb"<\\1>\\\\")
    ([b'<', 1, b'>\\\\'], True, 1)
    """
    pieces: list[bytes | int] = []
    literal = bytearray()
    valid, top, i = True, 0, 0
    while i < len(text):
        c = text[i]
        if c != 0x5C:  # not a backslash
            if valid:
                literal.append(c)
            i += 1
            continue
        nxt = text[i + 1] if i + 1 < len(text) else -1
        if 0x30 <= nxt <= 0x39:
            top = max(top, nxt - 0x30)
        if valid and 0x30 <= nxt <= 0x39:
            if literal:
                pieces.append(bytes(literal))
                literal.clear()
            pieces.append(nxt - 0x30)
        elif valid and nxt == 0x5C:
            literal.append(0x5C)
        elif nxt != 0x5C and not 0x30 <= nxt <= 0x39:
            valid = False  # RE2 stops writing here
        i += 2
    if literal:
        pieces.append(bytes(literal))
    return pieces, valid, top


def _expand(match: Any, pieces: list[bytes | int]) -> bytes:
    return b"".join(p if isinstance(p, bytes) else (match.group(p) or b"") for p in pieces)


def _char_len(s: bytes, p: int) -> int:
    """Bytes of the UTF-8 character at ``s[p]``; 1 for an invalid byte (RE2's skip)."""
    b0 = s[p]
    n = 1 if b0 < 0x80 else 2 if 0xC2 <= b0 < 0xE0 else 3 if 0xE0 <= b0 < 0xF0 else 4
    if n > 1:
        if b0 >= 0xF5:
            return 1
        try:
            s[p : p + n].decode("utf-8")
        except UnicodeDecodeError:
            return 1
    return n


def replace_all(
    regex: Any,
    s: bytes,
    pieces: list[bytes | int],
    valid: bool = True,
    top: int = 0,
    budget: Budget | None = None,
) -> bytes:
    """``s`` with every match of ``regex`` rewritten, as ``RE2::GlobalReplace`` does."""
    if top > regex.groups:
        return s
    out: list[bytes] = []
    p, n, lastend, count = 0, len(s), -1, 0
    while p <= n:
        m = regex.search(s, p)
        if m is None:
            break
        a, b = m.span()
        if p < a:
            out.append(s[p:a])
        if a == lastend and a == b:  # no empty match right after a match: skip one character
            step = _char_len(s, p) if p < n else 1
            out.append(s[p : p + step])
            p += step
            continue
        piece = _expand(m, pieces)
        out.append(piece)
        if budget is not None:
            budget.take(a - p + len(piece))
        p = lastend = b
        count += 1
    if count == 0:
        return s
    out.append(s[p:])
    return b"".join(out)


def replace_first(
    regex: Any, s: bytes, pieces: list[bytes | int], valid: bool = True, top: int = 0
) -> bytes:
    """``s`` with the first match of ``regex`` rewritten, as ``RE2::Replace`` does."""
    if top > regex.groups or not valid:
        return s
    m = regex.search(s)
    if m is None:
        return s
    a, b = m.span()
    return s[:a] + _expand(m, pieces) + s[b:]


def full_match(regex: Any, s: bytes) -> bool:
    """Whether ``regex`` matches all of ``s``."""
    return regex.fullmatch(s) is not None
