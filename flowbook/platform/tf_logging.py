"""``tf.logging``: TF1's logging functions, on Python's ``logging``.

Everything goes to one ``logging.Logger`` named ``"flowbook"``
(:func:`get_logger`).  As in TF1 its level starts at ``WARN``, so
``tf.logging.info`` prints nothing until ``tf.logging.set_verbosity(tf.logging.INFO)``.
When the root logger has no handler (a plain script), the first use gives
the ``flowbook`` logger one handler writing ``INFO:flowbook:message`` lines to
stderr, as TF1 wrote ``INFO:tensorflow:...``; where logging is configured
already (``logging.basicConfig``, pytest, a notebook's own setup) records
only propagate to the root, so nothing prints twice.

``log_every_n`` and ``log_first_n`` count calls per call site (file and line
of the caller): one line inside a training loop logs on its 1st, (n+1)th...
call, or on its first n calls.  ``fatal`` logs at ``FATAL`` (CRITICAL) and
returns, as TF1's did; it does not abort.

    >>> set_verbosity(INFO); get_verbosity() == INFO
    True
    >>> set_verbosity(WARN)
"""

from __future__ import annotations

import logging
import sys
import threading
from collections import Counter
from typing import Any

DEBUG = logging.DEBUG
INFO = logging.INFO
WARN = logging.WARN
ERROR = logging.ERROR
FATAL = logging.FATAL

_logger: logging.Logger | None = None  # the "flowbook" logger, set up on first use
_lock = threading.Lock()  # guards _logger's setup and _counts
_counts: Counter[tuple[str, int]] = (
    Counter()
)  # (file, line) of a log_every_n/log_first_n call -> calls


def get_logger() -> logging.Logger:
    """The ``flowbook`` logger, with its level at WARN and a stderr handler where none exists.

    >>> get_logger().name
    'flowbook'
    """
    global _logger
    with _lock:
        if _logger is None:
            logger = logging.getLogger("flowbook")
            if logger.level == logging.NOTSET:
                logger.setLevel(WARN)
            if not logging.getLogger().handlers and not logger.handlers:
                handler = logging.StreamHandler(sys.stderr)
                handler.setFormatter(logging.Formatter("%(levelname)s:%(name)s:%(message)s"))
                logger.addHandler(handler)
            _logger = logger
        return _logger


def set_verbosity(v: int) -> None:
    """Log messages at level ``v`` (``DEBUG``, ``INFO``, ``WARN``, ``ERROR``, ``FATAL``) and above."""
    get_logger().setLevel(v)


def get_verbosity() -> int:
    """The current level (``tf.logging.WARN`` by default)."""
    return get_logger().getEffectiveLevel()


def log(level: int, msg: Any, *args: Any, **kwargs: Any) -> None:
    """Log ``msg % args`` at ``level``."""
    kwargs.setdefault("stacklevel", 2)
    get_logger().log(level, msg, *args, **kwargs)


def debug(msg: Any, *args: Any, **kwargs: Any) -> None:
    kwargs.setdefault("stacklevel", 2)
    get_logger().debug(msg, *args, **kwargs)


def info(msg: Any, *args: Any, **kwargs: Any) -> None:
    """Log at ``INFO``: ``tf.logging.info("step %d: loss %.3f", step, loss)``."""
    kwargs.setdefault("stacklevel", 2)
    get_logger().info(msg, *args, **kwargs)


def warning(msg: Any, *args: Any, **kwargs: Any) -> None:
    kwargs.setdefault("stacklevel", 2)
    get_logger().warning(msg, *args, **kwargs)


warn = warning


def error(msg: Any, *args: Any, **kwargs: Any) -> None:
    kwargs.setdefault("stacklevel", 2)
    get_logger().error(msg, *args, **kwargs)


def fatal(msg: Any, *args: Any, **kwargs: Any) -> None:
    """Log at ``FATAL``; execution goes on, as with TF1's ``tf.logging.fatal``."""
    kwargs.setdefault("stacklevel", 2)
    get_logger().critical(msg, *args, **kwargs)


def vlog(level: int, msg: Any, *args: Any, **kwargs: Any) -> None:
    """TF's verbose log: the same as :func:`log`."""
    kwargs.setdefault("stacklevel", 2)
    get_logger().log(level, msg, *args, **kwargs)


def log_if(level: int, msg: Any, condition: bool, *args: Any) -> None:
    """Log ``msg % args`` at ``level`` when ``condition`` holds."""
    if condition:
        get_logger().log(level, msg, *args, stacklevel=2)


def _count_call() -> int:
    """How many times the caller's caller has now reached this line (1 on the first)."""
    frame = sys._getframe(2)
    key = (frame.f_code.co_filename, frame.f_lineno)
    with _lock:
        _counts[key] += 1
        return _counts[key]


def log_every_n(level: int, msg: Any, n: int, *args: Any) -> None:
    """Log on the 1st, (n+1)th, (2n+1)th... call from this line.

    >>> import io, logging
    >>> out = io.StringIO(); h = logging.StreamHandler(out); get_logger().addHandler(h)
    >>> for step in range(7):
    ...     log_every_n(ERROR, "step %d", 3, step)
    >>> get_logger().removeHandler(h); out.getvalue().split()
    ['step', '0', 'step', '3', 'step', '6']
    """
    count = _count_call()
    if (count - 1) % max(int(n), 1) == 0:
        get_logger().log(level, msg, *args, stacklevel=2)


def log_first_n(level: int, msg: Any, n: int, *args: Any) -> None:
    """Log on the first ``n`` calls from this line only."""
    if _count_call() <= n:
        get_logger().log(level, msg, *args, stacklevel=2)


def flush() -> None:
    """Flush the handlers of the ``flowbook`` logger."""
    for handler in get_logger().handlers:
        handler.flush()


__all__ = [
    "DEBUG",
    "ERROR",
    "FATAL",
    "INFO",
    "WARN",
    "debug",
    "error",
    "fatal",
    "flush",
    "get_logger",
    "get_verbosity",
    "info",
    "log",
    "log_every_n",
    "log_first_n",
    "log_if",
    "set_verbosity",
    "vlog",
    "warn",
    "warning",
]
