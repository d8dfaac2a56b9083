"""Ending a run from another thread: an exception raised in the running thread.

``Session.close()`` must end a run in flight, wherever it is: in the
scheduler's loop, in a compiled straight line or loop, in a kernel written in
Python, or in one of flowbook's waits (which block in slices of
``WAIT_SLICE_S``, :mod:`flowbook.platform.waiting`).  Checking a flag after
every op would cost every run something for the rare close.  Instead the
closing thread asks the interpreter to raise :class:`RunCancelled` in the
running thread (``PyThreadState_SetAsyncExc``), which it does at that thread's
next bytecode, as it delivers a KeyboardInterrupt to the main thread: the run
unwinds through the same clean-up an interrupt takes, and the session turns
it into a ``CancelledError``.  A kernel inside one long C call (a numpy
routine) sees it when the call returns, as it would see Ctrl-C.

``RunCancelled`` is a BaseException, like KeyboardInterrupt, so no
``except Exception`` in a kernel or user code can swallow it.  A request that
arrives after the run has left its guarded region is withdrawn by that thread
(:func:`withdraw`) before it returns, so it never lands in unrelated code.

    >>> import threading
    >>> raise_in(threading.get_ident() + 10**12, RunCancelled)  # no such thread
    False
"""

from __future__ import annotations

import ctypes

__all__ = ["RunCancelled", "raise_in", "withdraw"]


class RunCancelled(BaseException):
    """Raised in a running thread to end its run (its session was closed)."""


def raise_in(thread_id: int, exc_type: type[BaseException]) -> bool:
    """Raise ``exc_type`` in thread ``thread_id`` at its next bytecode; False if no such thread."""
    done = ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(thread_id), ctypes.py_object(exc_type)
    )
    return done == 1


def withdraw(thread_id: int) -> None:
    """Take back an exception :func:`raise_in` asked for and thread ``thread_id`` has not seen."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), None)
