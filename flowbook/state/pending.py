"""Results still to come: what an asynchronous kernel (a queue op that must wait) returns.

A kernel that may have to wait (a dequeue from an empty queue, an enqueue
into a full one, a reader that needs its next file name) never blocks the
thread that calls it when the scheduler runs it: it registers a
callback with the queue and returns a :class:`Pending`.  The scheduler
(``flowbook.runtime.scheduler``, under every propagation rule: flat, in
order, frames) parks the op, runs the run's other ready ops, and
the Pending's ``then`` callback posts the result into the scheduler's
completion queue, the one pool kernels finish into.  So a waiting op holds
neither a pool thread nor the run's bookkeeping thread.

Who settles it: the queue, under no lock of its own (``resolve`` or
``fail``), on whichever thread made the wait end (the enqueuing run, a
``close``, a ``Session.close``).  Who withdraws it: the scheduler, when the
run stops (an error, the deadline, a KeyboardInterrupt): ``cancel`` calls
the ``on_cancel`` the queue set (which takes the waiter off its lists and
puts back what it had taken) and fails the Pending with ``CancelledError``.

Every other path (the Stepper's single steps, the straight line, compiled
loops) calls kernels with no scheduler loop to park them: then
:func:`settle` waits here, in slices of ``WAIT_SLICE_S``, so a
KeyboardInterrupt still ends the wait at once (and withdraws the waiter).
The scheduler says it can park through :func:`parking` (a thread-local
flag).  This module imports nothing of the graph.

    >>> p = Pending("an element of queue 'q'")
    >>> p.then(lambda result, error: print("got", result))
    >>> p.resolve(7)
    got 7
    >>> p.done, settle(p)
    (True, 7)
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from flowbook.framework.errors import CancelledError
from flowbook.platform.waiting import WAIT_SLICE_S

Callback = Callable[[Any, "BaseException | None"], None]


class Pending:
    """One asynchronous kernel's result, settled once by ``resolve`` or ``fail``.

    ``len(p)`` is 0, so a timing wrapper that reads a kernel's outputs (to
    record their shapes) sees none: the values come later.

    >>> p = Pending(); p.fail(ValueError("no"))
    >>> settle(p)
    Traceback (most recent call last):
    ...
    ValueError: no
    """

    __slots__ = (
        "_callback",
        "_event",
        "_lock",
        "done",
        "error",
        "on_cancel",
        "result",
        "settled_by",
        "settled_ns",
        "what",
        "woke_ns",
    )

    def __init__(self, what: str = "") -> None:
        self.what = what  # what it waits for, for messages: "an element of queue 'q'"
        self.done = False  # settled (result or error set)
        self.result: Any = None  # the kernel's outputs, once resolved
        self.error: BaseException | None = None  # the kernel's error, once failed
        self.on_cancel: Callable[[], bool] | None = None  # withdraws the waiter; False: too late
        self._callback: Callback | None = None  # called once with (result, error)
        self._event: threading.Event | None = None  # made by a synchronous wait
        self._lock = threading.Lock()  # guards done, _callback and _event
        # for the profile: when the wait ended (the queue began handing the result over,
        # e.g. stacking a batch; set by the queue, else at settling) and when it settled, in
        # perf_counter_ns, and the thread that settled it
        self.woke_ns = 0
        self.settled_ns = 0
        self.settled_by = 0

    def __len__(self) -> int:
        return 0

    def resolve(self, result: Any) -> None:
        """Settle with ``result`` (a no-op if already settled)."""
        self._settle(result, None)

    def fail(self, error: BaseException) -> None:
        """Settle with ``error`` (a no-op if already settled)."""
        self._settle(None, error)

    def _settle(self, result: Any, error: BaseException | None) -> None:
        with self._lock:
            if self.done:
                return
            self.result, self.error, self.done = result, error, True
            self.settled_ns, self.settled_by = time.perf_counter_ns(), threading.get_ident()
            self.woke_ns = self.woke_ns or self.settled_ns
            callback, event = self._callback, self._event
        if callback is not None:
            callback(result, error)
        if event is not None:
            event.set()

    def then(self, callback: Callback) -> None:
        """Call ``callback(result, error)`` once settled (now, if it is)."""
        with self._lock:
            if not self.done:
                self._callback = callback
                return
        callback(self.result, self.error)

    def cancel(self, message: str = "the run was cancelled") -> bool:
        """Withdraw the wait and fail with CancelledError; False if it was already settled."""
        if self.done:
            return False
        if self.on_cancel is not None and not self.on_cancel():
            return False  # the queue finished it first: its result stands
        self.fail(CancelledError(None, None, f"Waiting for {self.what or 'a value'}: {message}"))
        return True

    def wait(self) -> Any:
        """Block until settled (interruptibly); the result, or raise the error."""
        with self._lock:
            if not self.done and self._event is None:
                self._event = threading.Event()
            event = self._event
        try:
            while event is not None and not event.wait(WAIT_SLICE_S):
                pass
        except KeyboardInterrupt:
            self.cancel("interrupted")
            raise
        if self.error is not None:
            raise self.error
        return self.result


class _Mode(threading.local):
    parking = False  # the threaded scheduler runs kernels on this thread and parks Pendings
    watch: Callable[[Pending], None] | None = None  # told of each wait begun on this thread


_MODE = _Mode()


@contextlib.contextmanager
def parking() -> Iterator[None]:
    """Inside: kernels on this thread may return a Pending (the scheduler parks it)."""
    before = _MODE.parking
    _MODE.parking = True
    try:
        yield
    finally:
        _MODE.parking = before


@contextlib.contextmanager
def watching(watch: Callable[[Pending], None]) -> Iterator[None]:
    """Inside: each wait a kernel on this thread begins is handed to ``watch`` first (a
    cluster task's step keeps its waits, to cancel them if the step is aborted).

    >>> seen = []
    >>> with watching(seen.append), parking():
    ...     p = settle(Pending("x"))
    >>> seen == [p]
    True
    """
    before = _MODE.watch
    _MODE.watch = watch
    try:
        yield
    finally:
        _MODE.watch = before


def settle(p: Pending) -> Any:
    """What an asynchronous kernel returns: ``p``'s result if known or if nothing can park
    it (then this waits), else ``p`` itself."""
    if p.done:
        if p.error is not None:
            raise p.error
        return p.result
    if _MODE.watch is not None:
        _MODE.watch(p)
        if p.done:  # the watcher cancelled it at once
            return settle(p)
    if _MODE.parking:
        return p
    return p.wait()


__all__ = ["Pending", "parking", "settle", "watching"]
