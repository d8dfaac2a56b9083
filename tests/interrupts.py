"""Ctrl-C for tests: interrupt the main thread where the test means to, and know it landed.

``threading.Timer(t, _thread.interrupt_main)`` guesses when a run is under
way and how long it lasts.  On a loaded machine both guesses fail: the
interrupt lands before the run started or after it ended, or it is lost.
:class:`CtrlC` replaces the guesses with a handshake and an acknowledgement:

- **Handshake.**  Pressing starts once the run says it is where it should
  be interrupted (``press.reached``, an Event its kernel or observer sets),
  and a press raises only while the main thread is inside the code given as
  ``inside`` (functions, code objects, or the file name of generated code),
  judged from the main thread's own stack when the press is handled.
- **Retries.**  CPython handles an interrupt at the main thread's next
  bytecode boundary, wherever that is: in a gc callback or a ``__del__`` the
  KeyboardInterrupt is reported as "unraisable" and dropped.  So a presser
  thread presses every ``every`` seconds until the block acknowledges the
  interrupt (it left the ``with`` block by it).  A SIGINT handler installed
  for the block decides what a press does: it raises only while no raised
  interrupt is on its way (one raised and neither caught by the block nor
  reported unraisable).  The run thus sees one interrupt at a time, never a
  second one in the middle of unwinding from the first.
- **Bounds.**  The presser gives up ``within`` seconds after the block
  starts (well under pytest-timeout's 600 s).  ``press.pressing()`` turns
  False then, so loops and kernels that wait for the interrupt end by
  themselves, and the block fails with what happened (presses, raises,
  losses) instead of hanging.  Tests give whatever blocks the run a bound of
  its own too (a ``RunOptions`` deadline, a loop count).

    >>> import time
    >>> press = CtrlC()
    >>> with press:
    ...     press.reached.set()
    ...     while press.pressing():
    ...         time.sleep(0.001)
    >>> isinstance(press.error, KeyboardInterrupt) and press.raised >= 1
    True
"""

from __future__ import annotations

import _thread
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable
from types import CodeType, FrameType
from typing import Any

import pytest

from tests.waits import WITHIN


class CtrlC:
    """Press Ctrl-C on the main thread once ``reached`` is set, until the block catches it.

    ``with press: ...`` expects the block to raise KeyboardInterrupt: it is
    caught there (kept as ``press.error``), and a block that ends otherwise
    fails with a report.  ``inside``: the press raises only while one of these
    is on the main thread's stack (functions, code objects, or file names such
    as generated code's); ``reached``: set it when the run is where it should
    be interrupted, or pass ``started=True`` to press from the start.
    """

    def __init__(
        self,
        inside: Iterable[Callable[..., Any] | CodeType | str] = (),
        *,
        started: bool = False,
        every: float = 0.03,
        within: float = WITHIN,
    ) -> None:
        self.reached = threading.Event()
        if started:
            self.reached.set()
        self.every, self.within = every, within
        self._codes, self._files = _code_set(inside)
        self._done = threading.Event()  # acknowledged, or the block ended otherwise
        self._gave_up = threading.Event()
        self._in_flight: KeyboardInterrupt | None = None
        self._armed = False  # no raise before __enter__ returns: the block must be entered
        self.presses = self.raised = self.lost = self.outside = 0
        self.error: KeyboardInterrupt | None = None

    def pressing(self) -> bool:
        """True until the interrupt is acknowledged or the presser gave up."""
        return not (self._done.is_set() or self._gave_up.is_set())

    # ------------------------------------------------------------ the block
    def __enter__(self) -> CtrlC:
        if threading.current_thread() is not threading.main_thread():
            raise RuntimeError("CtrlC interrupts the main thread: use it there")
        self._previous_handler = signal.signal(signal.SIGINT, self._handle)
        self._previous_hook, sys.unraisablehook = sys.unraisablehook, self._unraisable
        self._presser = threading.Thread(target=self._press, name="ctrl-c", daemon=True)
        self._presser.start()
        self._armed = True
        return self

    def __exit__(self, kind: type | None, error: BaseException | None, tb: Any) -> bool:
        self._done.set()  # from here on a press does nothing
        self._presser.join()
        _handle_pending()  # a press that came before the join, handled by _handle
        signal.signal(signal.SIGINT, self._previous_handler)
        sys.unraisablehook = self._previous_hook
        if isinstance(error, KeyboardInterrupt):
            self.error = error
            return True
        if error is not None:
            error.add_note(f"while waiting for Ctrl-C: {self.report()}")
            return False
        pytest.fail(f"the block ended without being interrupted: {self.report()}")

    def report(self) -> str:
        """What happened, for a failure message."""
        reached = "reached" if self.reached.is_set() else "never reached"
        gave_up = f"; gave up after {self.within:g} s" if self._gave_up.is_set() else ""
        return (
            f"the interrupt point was {reached}; {self.presses} presses, {self.outside} "
            f"outside the code to interrupt, {self.raised} raised, {self.lost} lost as "
            f"unraisable{gave_up}"
        )

    # ------------------------------------------------------------ internals
    def _press(self) -> None:
        give_up = time.monotonic() + self.within
        if self.reached.wait(self.within):
            while not self._done.is_set() and time.monotonic() < give_up:
                _thread.interrupt_main()
                self.presses += 1
                self._done.wait(self.every)
        if not self._done.is_set():
            self._gave_up.set()

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        """SIGINT on the main thread: raise, unless acknowledged, in flight, or outside."""
        if not self._armed or self._done.is_set() or self._in_flight is not None:
            return
        if (self._codes or self._files) and not self._on_stack(frame):
            self.outside += 1
            return
        self.raised += 1
        self._in_flight = KeyboardInterrupt()
        raise self._in_flight

    def _on_stack(self, frame: FrameType | None) -> bool:
        while frame is not None:
            code = frame.f_code
            if code in self._codes or code.co_filename in self._files:
                return True
            frame = frame.f_back
        return False

    def _unraisable(self, unraisable: Any) -> None:
        """A raised interrupt dropped (in a gc callback, a ``__del__``): press again."""
        if unraisable.exc_value is not None and unraisable.exc_value is self._in_flight:
            self.lost += 1
            self._in_flight = None
        else:
            self._previous_hook(unraisable)


def _code_set(inside: Iterable[Any]) -> tuple[set[CodeType], set[str]]:
    codes, files = set(), set()
    for where in inside:
        if isinstance(where, str):
            files.add(where)
        elif isinstance(where, CodeType):
            codes.add(where)
        else:
            while hasattr(where, "__wrapped__"):
                where = where.__wrapped__
            codes.add(where.__code__)
    return codes, files


def _handle_pending() -> None:
    """Entering a Python function runs the main thread's pending signal handlers."""
