"""The session-run hooks that write files (TF1's basic_session_run_hooks, part 2).

- ``CheckpointSaverHook``: ``Saver.save`` every N steps or seconds, at the
  session's start and at its end, into ``checkpoint_dir/model.ckpt-<step>``,
  telling ``CheckpointSaverListener`` objects before and after each save;
- ``SummarySaverHook``: fetch the summary op every N steps/seconds and write
  it through a ``FileWriter`` at the global step;
- ``StepCounterHook``: write ``global_step/sec`` every N steps/seconds.

The global step is fetched with the caller's run; it is read before the
train op increments it, so a hook that decides to act reads it once more.

    >>> import flowbook as fb, tempfile
    >>> with fb.Graph().as_default():
    ...     step = fb.train.get_or_create_global_step()
    ...     hook = CheckpointSaverHook(tempfile.mkdtemp(), save_steps=10)
    ...     hook.begin(); hook._timer.should_trigger_for_step(0)
    True
"""

from __future__ import annotations

import os
from typing import Any

from flowbook.framework.graph import GraphKeys, get_default_graph
from flowbook.graph_io.graph_def import write_graph
from flowbook.platform import tf_logging
from flowbook.summary.writer import FileWriter, _scalar_proto
from flowbook.train.basic_hooks import SecondOrStepTimer, _global_step_tensor
from flowbook.train.saver import Saver
from flowbook.train.session_run_hook import (
    SessionRunArgs,
    SessionRunContext,
    SessionRunHook,
    SessionRunValues,
)


class CheckpointSaverListener:
    """Told about each save of a ``CheckpointSaverHook``; ``after_save`` returning True stops."""

    def begin(self) -> None:
        """Called once, from the hook's begin()."""

    def before_save(self, session: Any, global_step_value: int) -> None:
        """Called before each save."""

    def after_save(self, session: Any, global_step_value: int) -> bool | None:
        """Called after each save; return True to request a stop."""
        return None

    def end(self, session: Any, global_step_value: int) -> None:
        """Called at the end of the session, after the last save."""


def _saver_of(saver: Any, scaffold: Any) -> Saver:
    if saver is not None:
        return saver
    if scaffold is not None:
        return scaffold.saver
    savers = get_default_graph().get_collection(GraphKeys.SAVERS)
    if len(savers) != 1:
        raise RuntimeError(
            f"CheckpointSaverHook needs one Saver in the SAVERS collection, found {len(savers)};"
            " pass saver= or scaffold=."
        )
    return savers[0]


class CheckpointSaverHook(SessionRunHook):
    """Saves checkpoints every ``save_steps`` steps or ``save_secs`` seconds (exactly one)."""

    def __init__(
        self,
        checkpoint_dir: str,
        save_secs: float | None = None,
        save_steps: int | None = None,
        saver: Any = None,
        checkpoint_basename: str = "model.ckpt",
        scaffold: Any = None,
        listeners: list[CheckpointSaverListener] | None = None,
    ) -> None:
        if saver is not None and scaffold is not None:
            raise ValueError("You cannot provide both saver and scaffold.")
        self._dir = checkpoint_dir  # where checkpoints and graph.pbtxt go
        self._path = os.path.join(checkpoint_dir, checkpoint_basename)  # the save prefix
        self._saver, self._scaffold = saver, scaffold  # the saver, or where to find it
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)
        self._listeners = list(listeners or [])
        self._global_step: Any = None  # set in begin()

    def begin(self) -> None:
        self._global_step = _global_step_tensor("CheckpointSaverHook")
        for listener in self._listeners:
            listener.begin()

    def after_create_session(self, session: Any, coord: Any) -> None:
        os.makedirs(self._dir, exist_ok=True)
        write_graph(session.graph.as_graph_def(), self._dir, "graph.pbtxt")
        step = int(session.run(self._global_step))
        self._save(session, step)
        self._timer.update_last_triggered_step(step)

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        return SessionRunArgs(self._global_step)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        if self._timer.should_trigger_for_step(int(run_values.results) + 1):
            step = int(run_context.session.run(self._global_step))
            if self._timer.should_trigger_for_step(step):
                self._timer.update_last_triggered_step(step)
                if self._save(run_context.session, step):
                    run_context.request_stop()

    def end(self, session: Any) -> None:
        step = int(session.run(self._global_step))
        if step != self._timer.last_triggered_step():
            self._save(session, step)
        for listener in self._listeners:
            listener.end(session, step)

    def _save(self, session: Any, step: int) -> bool:
        """Save at ``step``; True when a listener asks to stop."""
        tf_logging.info(f"Saving checkpoints for {step} into {self._path}.")
        for listener in self._listeners:
            listener.before_save(session, step)
        _saver_of(self._saver, self._scaffold).save(session, self._path, global_step=step)
        stop = False
        for listener in self._listeners:
            stop = bool(listener.after_save(session, step)) or stop
        return stop


class SummarySaverHook(SessionRunHook):
    """Writes the summary op's output every ``save_steps`` steps or ``save_secs`` seconds."""

    def __init__(
        self,
        save_steps: int | None = None,
        save_secs: float | None = None,
        output_dir: str | None = None,
        summary_writer: Any = None,
        scaffold: Any = None,
        summary_op: Any = None,
    ) -> None:
        if (scaffold is None) == (summary_op is None):
            raise ValueError("Exactly one of scaffold or summary_op must be provided.")
        if output_dir is None and summary_writer is None:
            raise ValueError("output_dir or summary_writer is required.")
        self._summary_op, self._scaffold = summary_op, scaffold  # what to fetch
        self._output_dir = output_dir
        self._writer = summary_writer  # the FileWriter (made in begin() from output_dir)
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)
        self._next_step: int | None = None  # the step the next run will have; None at first
        self._request = False  # whether this run fetches the summaries

    def begin(self) -> None:
        if self._writer is None:
            self._writer = FileWriter(self._output_dir)
        self._global_step = _global_step_tensor("SummarySaverHook")
        self._next_step = None

    def _summaries(self) -> list[Any]:
        op = self._summary_op if self._summary_op is not None else self._scaffold.summary_op
        if op is None:
            return []
        return list(op) if isinstance(op, list | tuple) else [op]

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        self._request = self._next_step is None or self._timer.should_trigger_for_step(
            self._next_step
        )
        fetches: dict[str, Any] = {"global_step": self._global_step}
        summaries = self._summaries()
        if self._request and summaries:
            fetches["summary"] = summaries
        return SessionRunArgs(fetches)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        results = run_values.results
        step = int(results["global_step"]) + 1
        if self._next_step is None or self._request:
            step = int(run_context.session.run(self._global_step))
        if self._request:
            self._timer.update_last_triggered_step(step)
            for summary in results.get("summary", []):
                self._writer.add_summary(summary, step)
        self._next_step = step + 1

    def end(self, session: Any = None) -> None:
        self._writer.flush()


class StepCounterHook(SessionRunHook):
    """Writes and logs ``global_step/sec`` every ``every_n_steps`` steps or ``every_n_secs``."""

    def __init__(
        self,
        every_n_steps: int | None = 100,
        every_n_secs: float | None = None,
        output_dir: str | None = None,
        summary_writer: Any = None,
    ) -> None:
        if (every_n_steps is None) == (every_n_secs is None):
            raise ValueError("exactly one of every_n_steps and every_n_secs should be provided.")
        self._timer = SecondOrStepTimer(every_secs=every_n_secs, every_steps=every_n_steps)
        self._output_dir = output_dir
        self._writer = summary_writer  # made in begin() from output_dir; may stay None
        self._tag = "global_step/sec"

    def begin(self) -> None:
        if self._writer is None and self._output_dir:
            self._writer = FileWriter(self._output_dir)
        self._global_step = _global_step_tensor("StepCounterHook")

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        return SessionRunArgs(self._global_step)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        stale = int(run_values.results)
        if self._timer.should_trigger_for_step(stale + 1):
            step = int(run_context.session.run(self._global_step))
            if self._timer.should_trigger_for_step(step):
                secs, steps = self._timer.update_last_triggered_step(step)
                if secs is not None and secs > 0:
                    rate = steps / secs
                    tf_logging.info(f"{self._tag}: {rate:g}")
                    if self._writer is not None:
                        self._writer.add_summary(_scalar_proto(self._tag, rate), step)

    def end(self, session: Any = None) -> None:
        if self._writer is not None:
            self._writer.flush()
