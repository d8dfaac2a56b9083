"""Waiting in tests for events, never for fixed times, and never without a bound.

A test that sleeps a guessed time before acting fails on a busy machine: the
run it acts on has not started, or has already ended.  These helpers wait for
the event itself, each wait bounded well under pytest-timeout's 600 s, and a
wait that runs out fails with what it waited for instead of hanging:

- :func:`wait_until` polls a condition; :func:`join` waits for a thread;
- :class:`Parks`, an observer, marks when an op of a run starts to wait
  (``on_wait``: a queue op parked by the scheduler, in flat runs and in
  loops), and :func:`once_parked` acts on another thread only then: what
  ends the wait comes after it, however late the run started.

    >>> wait_until(lambda: 3, "a true value")
    3
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import flowbook as tf

WITHIN = 30.0  # seconds: the longest a run is given to reach the point a test acts at
WAIT_S = 120.0  # seconds: the longest wait for one event (a worker back, a thread's end)


def wait_until(condition: Callable[[], Any], what: str, timeout: float = WAIT_S) -> Any:
    """Poll ``condition`` until it is true (its value), failing after ``timeout`` seconds
    with ``what`` (the event waited for)."""
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"Waited {timeout:.0f} s for {what}")
        time.sleep(0.005)
    return value


def join(thread: threading.Thread, what: str, timeout: float = WAIT_S) -> None:
    """Wait for ``thread`` to end (``what`` it does, for the failure message)."""
    thread.join(timeout)
    assert not thread.is_alive(), f"{what} did not end within {timeout:.0f} s"


class Parks(tf.Observer):
    """Records a run's waits (``events``) and sets ``parked`` when an op starts to wait."""

    def __init__(self, parked: threading.Event | None = None) -> None:
        self.events: list[tuple] = []
        self.parked = parked or threading.Event()

    def on_wait(self, op, what):
        self.events.append(("wait", op.type, what))
        self.parked.set()

    def on_wait_end(self, op):
        self.events.append(("end", op.type))


def once_parked(
    parked: threading.Event, fn: Callable[[], Any], after: float = 0.0
) -> threading.Thread:
    """Call ``fn`` on a thread ``after`` seconds once ``parked`` is set (a :class:`Parks`'s);
    not at all if it is not within WITHIN: the run's own deadline then ends it."""

    def go() -> None:
        if parked.wait(WITHIN):
            time.sleep(after)
            fn()

    thread = threading.Thread(target=go)
    thread.start()
    return thread
