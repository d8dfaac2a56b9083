"""Going on after a lost task: TF1's ``_RecoverableSession``, around any session.

A :class:`RecoverableSession` holds a session made by ``create()`` and
passes every call through.  When a ``run`` fails with ``UnavailableError``
or ``AbortedError`` -- a task's worker was lost mid-step (§3.3, see
``flowbook.distributed.session``), or its step was aborted because another
was -- it does what TensorFlow's monitored sessions do:

1. logs that the session will be made again;
2. for a cluster session, waits (up to ``wait_s``) until the cluster has
   the session's tasks back: Dask's nanny restarts a lost worker under the
   same name, at a new address (``DaskSession.await_lost_tasks``);
3. closes the old session and makes a new one with ``create()``: in a
   ``MonitoredSession`` that is its session creator, which restores the
   latest checkpoint (the new task server's variables are uninitialised,
   and a surviving ps may hold updates of steps after the checkpoint) and
   calls the hooks' ``after_create_session``; a creation that fails the
   same way is tried again;
4. runs the same call again.

Other errors pass through unchanged.  ``recoveries`` counts the sessions
made again; after ``max_recoveries`` in a row without a successful run
the error is raised.

    >>> from flowbook import errors
    >>> made = []
    >>> class Flaky:  # the first session loses a task on its first run
    ...     def __init__(self): made.append(self)
    ...     def run(self, fetches, *args):
    ...         if len(made) == 1:
    ...             raise errors.UnavailableError(None, None, "worker lost")
    ...         return fetches
    ...     def close(self): pass
    >>> s = RecoverableSession(Flaky)
    >>> s.run(3), s.recoveries, len(made)
    (3, 1, 2)
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from flowbook.framework import errors
from flowbook.platform import tf_logging

__all__ = ["RECOVERABLE", "RecoverableSession"]

RECOVERABLE = (errors.AbortedError, errors.UnavailableError)  # what makes a new session
MAX_RECOVERIES = 10  # sessions made again in a row, without a run between, before giving up


class RecoverableSession:
    """A session made again when a task is lost.  See the module docstring."""

    def __init__(
        self, create: Callable[[], Any], wait_s: float = 60.0, max_recoveries: int = MAX_RECOVERIES
    ) -> None:
        self._create = create  # makes (and restores) a session
        self.wait_s = wait_s  # longest wait for a cluster's lost tasks to come back
        self.max_recoveries = max_recoveries
        self.recoveries = 0  # sessions made again so far
        self.session: Any = self._make(None)  # the session calls go to now

    def run(
        self,
        fetches: Any,
        feed_dict: dict | None = None,
        options: Any = None,
        run_metadata: Any = None,
    ) -> Any:
        """``session.run``; on a lost task, a new session and the same run again."""
        failures = 0
        while True:
            try:
                return self.session.run(fetches, feed_dict, options, run_metadata)
            except RECOVERABLE as e:
                failures += 1
                if failures > self.max_recoveries:
                    raise
                tf_logging.get_logger().warning(
                    "%s: %s. The session will be closed and a new one created (a task of "
                    "the cluster may have been lost).",
                    type(e).__name__,
                    e.message,
                )
                self.session = self._make(self.session)

    def _make(self, old: Any) -> Any:
        failures = 0
        while True:
            if old is not None:
                if hasattr(old, "await_lost_tasks"):  # a cluster session: its tasks come back
                    old.await_lost_tasks(self.wait_s)
                with contextlib.suppress(Exception):  # one that lost a task may not close cleanly
                    old.close()
            try:
                session = self._create()
            except RECOVERABLE:
                failures += 1
                if old is None or failures > self.max_recoveries:
                    raise
                continue
            if old is not None:
                self.recoveries += 1
            return session

    def close(self) -> None:
        """Close the session."""
        self.session.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.session, name)
