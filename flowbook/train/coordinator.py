"""``tf.train.Coordinator``: threads that stop together, and their errors in the main thread.

A Coordinator holds one stop flag (a ``threading.Event``) and the first
exception a coordinated thread reported.  Threads loop ``while not
coord.should_stop()``; any of them (or the main thread) calls
``request_stop(ex)`` to stop all; ``join`` waits for the threads, gives the
stragglers ``stop_grace_period_secs`` after the stop was requested, and
re-raises the reported exception in the calling thread.  ``stop_on_exception``
is a context manager that turns an exception into a stop request.  An
``OutOfRangeError`` (the input ran out) is a normal way to stop: it stops
the threads and is not re-raised, as in TensorFlow.

    >>> coord = Coordinator()
    >>> with coord.stop_on_exception():
    ...     raise ValueError("bad input")
    >>> coord.should_stop()
    True
    >>> coord.join()
    Traceback (most recent call last):
    ...
    ValueError: bad input
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from typing import Any

from flowbook.framework import errors


class Coordinator:
    """Coordinates the termination of a set of threads (TF1's ``tf.train.Coordinator``)."""

    def __init__(self, clean_stop_exception_types: Iterable[type] | None = None) -> None:
        self._clean = tuple(clean_stop_exception_types or (errors.OutOfRangeError,))
        self._stop = threading.Event()  # set by request_stop
        self._lock = threading.Lock()  # guards _exc_info and _registered
        self._exc_info: Any = None  # the first reported exception's (type, value, traceback)
        self._registered: set[threading.Thread] = set()  # threads join waits for by default
        self._joined = False

    def request_stop(self, ex: BaseException | tuple | None = None) -> None:
        """Ask every thread to stop; ``ex`` (an exception or exc_info) is kept for ``join``."""
        with self._lock:
            if ex is not None and self._exc_info is None:
                info = ex if isinstance(ex, tuple) else (type(ex), ex, ex.__traceback__)
                if not issubclass(info[0], self._clean):
                    self._exc_info = info
            self._stop.set()

    def clear_stop(self) -> None:
        """Clear the stop request and the kept exception (to run the threads again)."""
        with self._lock:
            self._joined = False
            self._exc_info = None
            self._stop.clear()

    def should_stop(self) -> bool:
        """Whether a stop was requested."""
        return self._stop.is_set()

    @contextlib.contextmanager
    def stop_on_exception(self) -> Iterator[None]:
        """Inside: an exception requests a stop (with it) instead of propagating."""
        try:
            yield
        except BaseException:
            self.request_stop(sys.exc_info()[1])

    def wait_for_stop(self, timeout: float | None = None) -> bool:
        """Block until a stop is requested (or ``timeout`` seconds); whether it was."""
        return self._stop.wait(timeout)

    def register_thread(self, thread: threading.Thread) -> None:
        """Have ``join`` wait for ``thread`` too."""
        with self._lock:
            self._registered.add(thread)

    def join(
        self,
        threads: Iterable[threading.Thread] | None = None,
        stop_grace_period_secs: float = 120,
        ignore_live_threads: bool = False,
    ) -> None:
        """Wait for ``threads`` (and the registered ones) to end, then re-raise a reported error.

        Once a stop is requested the threads get ``stop_grace_period_secs``;
        threads still alive then are a RuntimeError naming them (unless
        ``ignore_live_threads``).
        """
        with self._lock:
            threads = set(threads or ()) | self._registered
        while any(t.is_alive() for t in threads) and not self.wait_for_stop(0.05):
            pass
        deadline = time.monotonic() + stop_grace_period_secs
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
        stragglers = [t.name for t in threads if t.is_alive()]
        with self._lock:
            self._joined = True
            self._registered = {t for t in self._registered if t.is_alive()}
            info = self._exc_info
        if info is not None:
            raise info[1].with_traceback(info[2])
        if stragglers and not ignore_live_threads:
            raise RuntimeError(f"Coordinator stopped with threads still running: {stragglers}")

    @property
    def joined(self) -> bool:
        return self._joined

    def raise_requested_exception(self) -> None:
        """Raise the reported exception now, if there is one."""
        with self._lock:
            info = self._exc_info
        if info is not None:
            raise info[1].with_traceback(info[2])


class LooperThread(threading.Thread):
    """A thread calling ``target(*args)`` every ``timer_interval_secs`` until the coordinator
    stops (TF1's ``tf.train.LooperThread``)."""

    def __init__(
        self,
        coord: Coordinator,
        timer_interval_secs: float | None,
        target: Any = None,
        args: tuple = (),
        kwargs: dict | None = None,
    ) -> None:
        super().__init__(daemon=True)
        self._coord, self._interval = coord, timer_interval_secs
        self._target_fn, self._args, self._kwargs = target, args, kwargs or {}
        coord.register_thread(self)

    def run(self) -> None:
        with self._coord.stop_on_exception():
            while not self._coord.should_stop():
                self._target_fn(*self._args, **self._kwargs)
                if self._interval is not None and self._coord.wait_for_stop(self._interval):
                    break

    @staticmethod
    def loop(
        coord: Coordinator,
        timer_interval_secs: float | None,
        target: Any,
        args: tuple = (),
        kwargs: dict | None = None,
    ) -> LooperThread:
        """Start a LooperThread; returns it."""
        t = LooperThread(coord, timer_interval_secs, target, args, kwargs)
        t.start()
        return t


__all__ = ["Coordinator", "LooperThread"]
