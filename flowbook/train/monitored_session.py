"""Monitored sessions: a Session that initialises or restores itself and runs hooks.

- ``Scaffold`` holds what a training session needs and makes the missing
  pieces in ``finalize()``: ``init_op`` (all global variables),
  ``ready_op`` (names of uninitialised variables), ``local_init_op``,
  ``summary_op`` (``merge_all``) and ``saver`` (a ``Saver`` in SAVERS);
  then the graph is finalized, as in TF, so a training loop cannot keep
  adding ops by accident.
- ``ChiefSessionCreator`` makes a flowbook ``Session`` and restores the latest
  checkpoint of ``checkpoint_dir`` -- or, without one, runs ``init_op`` and
  ``init_fn`` -- then ``local_init_op``, and checks ``ready_op``.
- ``WorkerSessionCreator`` (a non-chief replica) makes a Session and waits,
  polling, until the chief has initialised the global variables
  (``ready_for_local_init_op``: ``report_uninitialized_variables``), at most
  ``max_wait_secs``; then runs ``local_init_op`` and checks ``ready_op``.
- ``MonitoredSession`` starts the graph's queue runners on a ``Coordinator``
  (which hooks get in ``after_create_session``) and calls the hooks
  (``session_run_hook``) around every ``run``, merging their fetches and feeds into the caller's one
  ``Session.run``; ``should_stop()`` turns True once a hook requests it.
  Leaving its ``with`` block on ``OutOfRangeError`` (input exhausted) ends
  it normally, as TF does: hooks' ``end`` run and the error is swallowed.
- ``MonitoredTrainingSession`` adds the standard chief hooks: checkpoints
  every N secs/steps, summaries and the step rate into ``checkpoint_dir``;
  with ``is_chief=False`` it waits for the chief instead, with only ``hooks``.
  On a cluster (``master`` a ``tf.train.Server``'s target) every hook runs
  here, on the client.

Closing stops the coordinator, gives the queue-runner threads a moment to
see it, closes the session (which cancels the runs still waiting: a chief's
sync queue runner waiting for gradients that will not come) and joins them.

    >>> import flowbook as fb
    >>> from flowbook import train
    >>> with fb.Graph().as_default():
    ...     step = train.get_or_create_global_step()
    ...     inc = fb.assign_add(step, 1)
    ...     with train.MonitoredSession(hooks=[train.StopAtStepHook(last_step=3)]) as s:
    ...         while not s.should_stop():
    ...             n = s.run(inc)
    >>> int(n)
    3
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

from flowbook.distributed.recovery import RecoverableSession
from flowbook.framework.errors import DeadlineExceededError, OutOfRangeError
from flowbook.framework.graph import GraphKeys, get_default_graph
from flowbook.ops.control_flow.control_flow_ops import group
from flowbook.runtime.session import Session
from flowbook.summary.writer import merge_all
from flowbook.train.checkpoint_management import latest_checkpoint
from flowbook.train.coordinator import Coordinator
from flowbook.train.queue_runner import start_queue_runners
from flowbook.train.saver import Saver
from flowbook.train.saving_hooks import CheckpointSaverHook, StepCounterHook, SummarySaverHook
from flowbook.train.session_run_hook import SessionRunArgs, SessionRunContext, SessionRunValues
from flowbook.variables.variables import (
    global_variables,
    global_variables_initializer,
    local_variables_initializer,
    report_uninitialized_variables,
)


def _one_of(key: str, make: Any = None) -> Any:
    """The one item of collection ``key``; else ``make()`` (added to the collection) or None."""
    graph = get_default_graph()
    found = graph.get_collection(key)
    if len(found) > 1:
        raise RuntimeError(f"More than one item in the collection {key!r}: {found}")
    if found:
        return found[0]
    if make is None:
        return None
    item = make()
    graph.add_to_collection(key, item)
    return item


class Scaffold:
    """The ops and saver a monitored session uses; missing ones are made by ``finalize()``."""

    def __init__(
        self,
        init_op: Any = None,
        init_feed_dict: dict | None = None,
        init_fn: Any = None,
        ready_op: Any = None,
        ready_for_local_init_op: Any = None,
        local_init_op: Any = None,
        summary_op: Any = None,
        saver: Any = None,
        copy_from_scaffold: Scaffold | None = None,
    ) -> None:
        if copy_from_scaffold is not None:
            c = copy_from_scaffold
            init_op = c.init_op if init_op is None else init_op
            init_feed_dict = c.init_feed_dict if init_feed_dict is None else init_feed_dict
            init_fn = c.init_fn if init_fn is None else init_fn
            ready_op = c.ready_op if ready_op is None else ready_op
            local_init_op = c.local_init_op if local_init_op is None else local_init_op
            summary_op = c.summary_op if summary_op is None else summary_op
            saver = c.saver if saver is None else saver
        self._init_op, self._init_feed_dict = init_op, init_feed_dict  # fresh-start init
        self._init_fn = init_fn  # (scaffold, session) -> None, after init_op
        self._ready_op = ready_op  # string tensor: uninitialised variables' names
        self._ready_for_local_init_op = ready_for_local_init_op  # kept for TF's API
        self._local_init_op = local_init_op  # run on every session start
        self._summary_op = summary_op  # the merged summaries, or None
        self._saver = saver  # saves and restores checkpoints

    def finalize(self) -> Scaffold:
        """Make the missing ops, then finalize the graph."""
        if self._init_op is None:
            self._init_op = _one_of(GraphKeys.INIT_OP, global_variables_initializer)
        if self._ready_op is None:
            self._ready_op = _one_of(GraphKeys.READY_OP, report_uninitialized_variables)
        if self._ready_for_local_init_op is None:
            self._ready_for_local_init_op = _one_of(
                READY_FOR_LOCAL_INIT_OP, lambda: report_uninitialized_variables(global_variables())
            )
        if self._local_init_op is None:
            self._local_init_op = _one_of(
                GraphKeys.LOCAL_INIT_OP,
                lambda: group(local_variables_initializer(), name="local_init_op"),
            )
        if self._summary_op is None:
            self._summary_op = _one_of(GraphKeys.SUMMARY_OP)
            if self._summary_op is None:
                self._summary_op = merge_all()
        if self._saver is None:
            self._saver = _one_of(GraphKeys.SAVERS, Saver)
        get_default_graph().finalize()
        return self

    init_op = property(lambda self: self._init_op)
    init_feed_dict = property(lambda self: self._init_feed_dict)
    init_fn = property(lambda self: self._init_fn)
    ready_op = property(lambda self: self._ready_op)
    ready_for_local_init_op = property(lambda self: self._ready_for_local_init_op)
    local_init_op = property(lambda self: self._local_init_op)
    summary_op = property(lambda self: self._summary_op)
    saver = property(lambda self: self._saver)


class ChiefSessionCreator:
    """Makes a Session: restores the latest checkpoint, else initialises from the scaffold."""

    def __init__(
        self,
        scaffold: Scaffold | None = None,
        master: str = "",
        config: Any = None,
        checkpoint_dir: str | None = None,
        checkpoint_filename_with_path: str | None = None,
    ) -> None:
        self._scaffold = scaffold or Scaffold()
        self._master, self._config = master, config
        self._checkpoint_dir = checkpoint_dir  # restore its latest checkpoint, if any
        self._checkpoint_path = checkpoint_filename_with_path  # or this exact one

    def create_session(self) -> Session:
        s = self._scaffold.finalize()
        sess = Session(self._master, graph=get_default_graph(), config=self._config)
        path = self._checkpoint_path
        if path is None and self._checkpoint_dir:
            path = latest_checkpoint(self._checkpoint_dir)
        if path:
            s.saver.restore(sess, path)
        else:
            sess.run(s.init_op, feed_dict=s.init_feed_dict)
            if s.init_fn is not None:
                s.init_fn(s, sess)
        sess.run(s.local_init_op)
        missing = sess.run(s.ready_op)
        if len(missing):
            names = [m.decode() if isinstance(m, bytes) else str(m) for m in missing]
            raise RuntimeError(f"Init operations did not make the model ready: {names}")
        return sess


WORKER_POLL_S = 0.25  # how often a non-chief looks whether the chief has initialised the model


def _names(found: Any) -> list[str]:
    return [m.decode() if isinstance(m, bytes) else str(m) for m in found]


class WorkerSessionCreator:
    """Makes a non-chief's Session: waits (bounded) for the chief to initialise the model."""

    def __init__(
        self,
        scaffold: Scaffold | None = None,
        master: str = "",
        config: Any = None,
        max_wait_secs: float = 30 * 60,
    ) -> None:
        self._scaffold = scaffold or Scaffold()
        self._master, self._config = master, config
        self._max_wait_secs = max_wait_secs  # then DeadlineExceededError

    def create_session(self) -> Session:
        s = self._scaffold.finalize()
        sess = Session(self._master, graph=get_default_graph(), config=self._config)
        deadline = time.monotonic() + self._max_wait_secs
        try:
            while len(missing := sess.run(s.ready_for_local_init_op)):
                if time.monotonic() + WORKER_POLL_S > deadline:
                    raise DeadlineExceededError(
                        None,
                        None,
                        f"Session was not ready after waiting {self._max_wait_secs} "
                        f"secs: the chief has not initialised {_names(missing)}",
                    )
                time.sleep(WORKER_POLL_S)
            sess.run(s.local_init_op)
            missing = sess.run(s.ready_op)
            if len(missing):
                raise RuntimeError(
                    f"Init operations did not make the model ready: {_names(missing)}"
                )
        except BaseException:
            sess.close()
            raise
        return sess


class MonitoredSession:
    """A session that runs ``hooks`` around each ``run`` (TF1's ``tf.train.MonitoredSession``).

    A run that fails because a task of the cluster was lost (``UnavailableError``,
    ``AbortedError``) makes the session again -- restored from the latest checkpoint --
    and runs again (``flowbook.distributed.recovery``).
    """

    _recover = True  # make the session again when a task is lost (not the singular one)

    def __init__(
        self,
        session_creator: Any = None,
        hooks: list[Any] | None = None,
        stop_grace_period_secs=120,
    ) -> None:
        self._hooks = list(hooks or [])  # called in order, around every run
        self._creator = session_creator or ChiefSessionCreator()
        self._graph = get_default_graph()  # the graph the session runs
        for hook in self._hooks:
            hook.begin()
        self._grace = stop_grace_period_secs  # how long close waits for those threads
        self._coord: Any = None  # stops the queue runners' threads at close (per session made)
        self._threads: list = []  # the graph's queue runners' threads
        # None once closed; made again when a task is lost
        self._sess: Any = RecoverableSession(self._create) if self._recover else self._create()
        self._stop = False  # a hook requested a stop

    def _create(self) -> Session:
        if self._coord is not None:  # made again: the old session's runners stop
            self._coord.request_stop()
            with contextlib.suppress(Exception):
                self._coord.join(stop_grace_period_secs=0.5, ignore_live_threads=True)
        sess = self._creator.create_session()
        self._coord = Coordinator()
        self._threads = start_queue_runners(sess, self._coord)
        for hook in self._hooks:
            hook.after_create_session(sess, self._coord)
        return sess

    @property
    def graph(self) -> Any:
        return self._graph

    def should_stop(self) -> bool:
        """True once a hook or a queue runner's error requested a stop, or the session is closed."""
        return self._stop or self._sess is None or self._coord.should_stop()

    def run(self, fetches: Any, feed_dict: dict | None = None, options=None, run_metadata=None):
        """``Session.run(fetches, feed_dict)`` with the hooks' fetches and feeds merged in."""
        if self._sess is None:
            raise RuntimeError("Run called on a closed MonitoredSession.")
        ctx = SessionRunContext(SessionRunArgs(fetches, feed_dict, options), self._sess)
        feeds = dict(feed_dict or {})
        extra: dict[int, Any] = {}
        for i, hook in enumerate(self._hooks):
            args = hook.before_run(ctx)
            if args is None:
                continue
            if args.fetches is not None:
                extra[i] = args.fetches
            for t, v in (args.feed_dict or {}).items():
                if t in feeds:
                    raise RuntimeError(f"Same tensor is fed by a SessionRunHook and user: {t}")
                feeds[t] = v
        out = self._sess.run(
            {"caller": fetches, "hooks": extra},
            feed_dict=feeds or None,
            options=options,
            run_metadata=run_metadata,
        )
        for i, hook in enumerate(self._hooks):
            values = SessionRunValues(out["hooks"].get(i), options, run_metadata)
            hook.after_run(ctx, values)
        self._stop = self._stop or ctx.stop_requested
        return out["caller"]

    def close(self) -> None:
        """Call the hooks' ``end`` and close the session."""
        self._close(ended_normally=True)

    def _close(self, ended_normally: bool) -> None:
        if self._sess is None:
            return
        try:
            if ended_normally:
                for hook in self._hooks:
                    hook.end(self._sess)
        finally:
            self._coord.request_stop()
            try:  # the threads between runs see the stop; the ones inside a run are cancelled
                self._coord.join(
                    stop_grace_period_secs=min(self._grace, 0.5), ignore_live_threads=True
                )
            finally:
                self._sess.close()
                self._sess = None
                self._coord.join(stop_grace_period_secs=self._grace, ignore_live_threads=True)

    def __enter__(self) -> MonitoredSession:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        done = exc_type is None or issubclass(exc_type, OutOfRangeError | StopIteration)
        self._close(ended_normally=done)
        return exc_type is not None and done


class SingularMonitoredSession(MonitoredSession):
    """A ``MonitoredSession`` with a chief creator built from its arguments; ``raw_session()``."""

    _recover = False  # as in TF: a lost task's error is raised

    def __init__(
        self,
        hooks: list[Any] | None = None,
        scaffold: Scaffold | None = None,
        master: str = "",
        config: Any = None,
        checkpoint_dir: str | None = None,
        stop_grace_period_secs: int = 120,
        checkpoint_filename_with_path: str | None = None,
    ) -> None:
        creator = ChiefSessionCreator(
            scaffold, master, config, checkpoint_dir, checkpoint_filename_with_path
        )
        super().__init__(creator, hooks, stop_grace_period_secs)

    def raw_session(self) -> Session:
        """The underlying flowbook Session (hooks bypassed)."""
        if self._sess is None:
            raise RuntimeError("Session is already closed.")
        return self._sess


READY_FOR_LOCAL_INIT_OP = "ready_for_local_init_op"  # TF's GraphKeys.READY_FOR_LOCAL_INIT_OP
USE_DEFAULT = object()  # "argument not given": TF's defaults apply


def MonitoredTrainingSession(
    master: str = "",
    is_chief: bool = True,
    checkpoint_dir: str | None = None,
    scaffold: Scaffold | None = None,
    hooks: list[Any] | None = None,
    chief_only_hooks: list[Any] | None = None,
    save_checkpoint_secs: Any = USE_DEFAULT,
    save_summaries_steps: Any = USE_DEFAULT,
    save_summaries_secs: Any = USE_DEFAULT,
    config: Any = None,
    stop_grace_period_secs: int = 120,
    log_step_count_steps: int | None = 100,
    max_wait_secs: int = 7200,
    save_checkpoint_steps: Any = USE_DEFAULT,
    summary_dir: str | None = None,
) -> MonitoredSession:
    """A ``MonitoredSession`` for training: restores ``checkpoint_dir``'s latest checkpoint and
    saves there (default every 600 s), writes summaries (default every 100 steps) and the
    step rate into ``summary_dir`` (default ``checkpoint_dir``).
    """
    if not is_chief:
        creator = WorkerSessionCreator(scaffold, master, config, max_wait_secs)
        return MonitoredSession(creator, list(hooks or []), stop_grace_period_secs)
    if save_checkpoint_secs is USE_DEFAULT and save_checkpoint_steps is USE_DEFAULT:
        save_checkpoint_secs, save_checkpoint_steps = 600, None
    save_checkpoint_secs = None if save_checkpoint_secs is USE_DEFAULT else save_checkpoint_secs
    save_checkpoint_steps = None if save_checkpoint_steps is USE_DEFAULT else save_checkpoint_steps
    if save_summaries_steps is USE_DEFAULT and save_summaries_secs is USE_DEFAULT:
        save_summaries_steps, save_summaries_secs = 100, None
    save_summaries_steps = None if save_summaries_steps is USE_DEFAULT else save_summaries_steps
    save_summaries_secs = None if save_summaries_secs is USE_DEFAULT else save_summaries_secs
    scaffold = scaffold or Scaffold()
    summary_dir = summary_dir or checkpoint_dir
    all_hooks = list(chief_only_hooks or []) + list(hooks or [])
    if summary_dir:
        if log_step_count_steps and log_step_count_steps > 0:
            all_hooks.append(StepCounterHook(log_step_count_steps, output_dir=summary_dir))
        if (save_summaries_steps or 0) > 0 or (save_summaries_secs or 0) > 0:
            all_hooks.append(
                SummarySaverHook(
                    save_steps=save_summaries_steps or None,
                    save_secs=None if save_summaries_steps else save_summaries_secs,
                    output_dir=summary_dir,
                    scaffold=scaffold,
                )
            )
    if checkpoint_dir and ((save_checkpoint_secs or 0) > 0 or (save_checkpoint_steps or 0) > 0):
        all_hooks.append(
            CheckpointSaverHook(
                checkpoint_dir,
                save_secs=None if save_checkpoint_steps else save_checkpoint_secs,
                save_steps=save_checkpoint_steps or None,
                scaffold=scaffold,
            )
        )
    creator = ChiefSessionCreator(scaffold, master, config, checkpoint_dir)
    return MonitoredSession(creator, all_hooks, stop_grace_period_secs)


def basic_train_loop(
    supervisor: Any, train_step_fn: Any, args: Any = None, kwargs: Any = None, master: str = ""
) -> None:
    """Call ``train_step_fn(sess, *args, **kwargs)`` until ``supervisor.should_stop()``, in
    ``supervisor.managed_session(master)`` (any object with those two methods).
    """
    with supervisor.managed_session(master) as sess:
        while not supervisor.should_stop():
            train_step_fn(sess, *(args or ()), **(kwargs or {}))
