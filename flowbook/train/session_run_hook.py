"""The hook protocol of monitored sessions (TF1's ``tf.train.SessionRunHook`` and friends).

A ``MonitoredSession`` calls, on every hook: ``begin()`` once before the
graph is finalized; ``after_create_session(session, coord)`` once the
variables are initialised or restored; then around each ``run``,
``before_run(run_context)`` -- which may return ``SessionRunArgs``: more
fetches and feeds, merged into the same ``Session.run`` -- and
``after_run(run_context, run_values)`` with those extra fetches' results;
and ``end(session)`` when the session closes normally.  A hook stops the
loop with ``run_context.request_stop()``.

    >>> class Count(SessionRunHook):
    ...     def __init__(self): self.n = 0
    ...     def after_run(self, run_context, run_values): self.n += 1
    >>> h = Count(); h.after_run(None, None); h.n
    1
"""

from __future__ import annotations

from typing import Any, NamedTuple


class SessionRunHook:
    """Base class of hooks: every method does nothing until overridden."""

    def begin(self) -> None:
        """Called once before the session is created; the graph may still change."""

    def after_create_session(self, session: Any, coord: Any) -> None:
        """Called once the session is created and its variables initialised or restored."""

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs | None:
        """Called before each run; return ``SessionRunArgs`` to add fetches and feeds."""
        return None

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        """Called after each successful run with the results of this hook's fetches."""

    def end(self, session: Any) -> None:
        """Called when the monitored session ends without error."""


class SessionRunArgs(NamedTuple):
    """What a hook adds to one run: ``fetches`` (any fetch structure), ``feed_dict``, ``options``.

    >>> SessionRunArgs({"loss": "loss:0"}).feed_dict is None
    True
    """

    fetches: Any
    feed_dict: dict | None = None
    options: Any = None


class SessionRunValues(NamedTuple):
    """The results of a hook's ``SessionRunArgs.fetches``, in their structure.

    >>> SessionRunValues(results=3).results
    3
    """

    results: Any
    options: Any = None
    run_metadata: Any = None


class SessionRunContext:
    """What hooks see of one run: the caller's ``original_args``, the ``session``, and
    ``request_stop()``.

    >>> ctx = SessionRunContext(SessionRunArgs(None), session=None)
    >>> ctx.stop_requested, (ctx.request_stop(), ctx.stop_requested)[1]
    (False, True)
    """

    def __init__(self, original_args: SessionRunArgs, session: Any) -> None:
        self._original_args = original_args  # the fetches and feeds the caller asked for
        self._session = session  # the raw Session the run goes to
        self._stop_requested = False  # set by request_stop(); the loop ends after this run

    @property
    def original_args(self) -> SessionRunArgs:
        return self._original_args

    @property
    def session(self) -> Any:
        return self._session

    @property
    def stop_requested(self) -> bool:
        return self._stop_requested

    def request_stop(self) -> None:
        """Ask the monitored session to stop: ``should_stop()`` is True after this run."""
        self._stop_requested = True
