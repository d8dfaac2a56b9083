"""The basic session-run hooks that need no files (TF1's basic_session_run_hooks, part 1).

- ``SecondOrStepTimer``: "every N steps or every N seconds", shared by hooks;
- ``StopAtStepHook``: request a stop once the global step reaches a step;
- ``LoggingTensorHook``: log tensors' values every N steps/seconds (and at end);
- ``NanTensorHook``: raise ``NanLossDuringTrainingError`` (or stop) on a NaN loss;
- ``FeedFnHook``: feed ``feed_fn()`` into every run;
- ``FinalOpsHook``: run some ops when the session ends, keep their values.

Each hook adds what it needs to the caller's run through ``SessionRunArgs``,
so a step is still one ``Session.run``.  The hooks that write files
(checkpoints, summaries, step rates) live in ``saving_hooks``.

    >>> t = SecondOrStepTimer(every_steps=10)
    >>> t.should_trigger_for_step(0), t.update_last_triggered_step(0)[1]
    (True, None)
    >>> t.should_trigger_for_step(9), t.should_trigger_for_step(10)
    (False, True)
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from flowbook.framework.graph import get_default_graph
from flowbook.framework.tensor import Tensor
from flowbook.platform import tf_logging
from flowbook.train import training_util
from flowbook.train.session_run_hook import (
    SessionRunArgs,
    SessionRunContext,
    SessionRunHook,
    SessionRunValues,
)


class SecondOrStepTimer:
    """Triggers every ``every_secs`` seconds or every ``every_steps`` steps (exactly one)."""

    def __init__(self, every_secs: float | None = None, every_steps: int | None = None) -> None:
        if (every_secs is None) == (every_steps is None):
            raise ValueError("Exactly one of every_secs and every_steps should be provided.")
        self._every_secs = every_secs  # trigger period in seconds, or None
        self._every_steps = every_steps  # trigger period in steps, or None
        self._last_time: float | None = None  # time.time() of the last trigger
        self._last_step: int | None = None  # step of the last trigger

    def reset(self) -> None:
        self._last_time = self._last_step = None

    def should_trigger_for_step(self, step: int) -> bool:
        """True at the first step, then once a period has passed since the last trigger."""
        if self._last_step is None:
            return True
        if self._last_step == step:
            return False
        if self._every_secs is not None:
            return time.time() >= self._last_time + self._every_secs
        return step >= self._last_step + self._every_steps

    def update_last_triggered_step(self, step: int) -> tuple[float | None, int | None]:
        """Record a trigger at ``step``; returns (seconds, steps) since the previous one."""
        now = time.time()
        elapsed = (None, None)
        if self._last_time is not None:
            elapsed = (now - self._last_time, step - self._last_step)
        self._last_time, self._last_step = now, step
        return elapsed

    def last_triggered_step(self) -> int | None:
        return self._last_step


def _global_step_tensor(hook: str) -> Any:
    step = training_util.get_global_step()
    if step is None:
        raise RuntimeError(f"Global step should be created to use {hook}.")
    return step


class StopAtStepHook(SessionRunHook):
    """Requests a stop when the global step reaches ``last_step`` (or start + ``num_steps``)."""

    def __init__(self, num_steps: int | None = None, last_step: int | None = None) -> None:
        if (num_steps is None) == (last_step is None):
            raise ValueError("One of num_steps or last_step must be specified.")
        if num_steps is not None and num_steps < 0:
            raise ValueError("Undefined behavior for negative num_steps.")
        self._num_steps = num_steps  # steps to run from the step the session starts at
        self._last_step = last_step  # the step to stop at (set at session start from num_steps)
        self._global_step: Any = None  # the global step tensor, found in begin()

    def begin(self) -> None:
        self._global_step = _global_step_tensor("StopAtStepHook")

    def after_create_session(self, session: Any, coord: Any) -> None:
        if self._last_step is None:
            self._last_step = int(session.run(self._global_step)) + self._num_steps

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        return SessionRunArgs(self._global_step)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        # the fetched step is read before the train op's increment: check the real one
        near = int(run_values.results) + 1 >= self._last_step
        if near and int(run_context.session.run(self._global_step)) >= self._last_step:
            run_context.request_stop()


def _as_tensors(tensors: Any) -> tuple[list[str], dict[str, Any]]:
    """(tags in order, {tag: tensor or name}) from a dict or a list of tensors/names."""
    if isinstance(tensors, dict):
        return list(tensors), dict(tensors)
    items = [(t if isinstance(t, str) else t.name, t) for t in tensors]
    return [tag for tag, _ in items], dict(items)


class LoggingTensorHook(SessionRunHook):
    """Logs ``tensors`` (a dict tag -> tensor/name, or a list) every N iterations or seconds.

    The line is ``tag1 = value1, tag2 = value2`` (``formatter(values)`` if given),
    at INFO level on the ``flowbook`` logger; ``at_end`` logs once more at the end.
    """

    def __init__(
        self,
        tensors: Any,
        every_n_iter: int | None = None,
        every_n_secs: float | None = None,
        at_end: bool = False,
        formatter: Any = None,
    ) -> None:
        only_at_end = at_end and every_n_iter is None and every_n_secs is None
        if not only_at_end and (every_n_iter is None) == (every_n_secs is None):
            raise ValueError(
                "either at_end and/or exactly one of every_n_iter and every_n_secs must be provided."
            )
        if every_n_iter is not None and every_n_iter <= 0:
            raise ValueError(f"invalid every_n_iter={every_n_iter}.")
        self._tags, self._tensors = _as_tensors(tensors)  # tag order; tag -> tensor or name
        self._timer = None if only_at_end else SecondOrStepTimer(every_n_secs, every_n_iter)
        self._at_end = at_end
        self._formatter = formatter  # values dict -> str, or None for "tag = value, ..."
        self._iter = 0  # runs seen
        self._triggered = False  # whether this run fetches the tensors

    def begin(self) -> None:
        graph = get_default_graph()
        self._current = {
            tag: graph.as_graph_element(t) if isinstance(t, str) else t
            for tag, t in self._tensors.items()
        }
        if self._timer is not None:
            self._timer.reset()
        self._iter = 0

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs | None:
        self._triggered = self._timer is not None and self._timer.should_trigger_for_step(
            self._iter
        )
        return SessionRunArgs(self._current) if self._triggered else None

    def _log(self, values: dict[str, Any]) -> None:
        elapsed = self._timer.update_last_triggered_step(self._iter)[0] if self._timer else None
        if self._formatter is not None:
            tf_logging.info(self._formatter(values))
            return
        line = ", ".join(f"{tag} = {values[tag]}" for tag in self._tags)
        tf_logging.info(f"{line} ({elapsed:.3f} sec)" if elapsed is not None else line)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        if self._triggered:
            self._log(run_values.results)
        self._iter += 1

    def end(self, session: Any) -> None:
        if self._at_end:
            self._log(session.run(self._current))


class NanLossDuringTrainingError(RuntimeError):
    """Raised by ``NanTensorHook`` when the loss is NaN."""

    def __str__(self) -> str:
        return "NaN loss during training."


class NanTensorHook(SessionRunHook):
    """Fetches ``loss_tensor`` each run; on NaN raises ``NanLossDuringTrainingError``, or with
    ``fail_on_nan_loss=False`` logs and requests a stop.
    """

    def __init__(self, loss_tensor: Tensor, fail_on_nan_loss: bool = True) -> None:
        self._loss = loss_tensor  # the tensor checked every run
        self._fail = fail_on_nan_loss  # raise (True) or stop (False)

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        return SessionRunArgs(self._loss)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        if np.isnan(run_values.results).any():
            if self._fail:
                tf_logging.error("Model diverged with loss = NaN.")
                raise NanLossDuringTrainingError
            tf_logging.warning("Model diverged with loss = NaN.")
            run_context.request_stop()


class FeedFnHook(SessionRunHook):
    """Feeds ``feed_fn()`` (a feed dict) into every run."""

    def __init__(self, feed_fn: Any) -> None:
        self.feed_fn = feed_fn  # () -> {tensor: value}

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        return SessionRunArgs(fetches=None, feed_dict=self.feed_fn())


class FinalOpsHook(SessionRunHook):
    """Runs ``final_ops`` when the session ends; their values are in ``final_ops_values``."""

    def __init__(self, final_ops: Any, final_ops_feed_dict: dict | None = None) -> None:
        self._final_ops = final_ops  # any fetch structure
        self._feed_dict = final_ops_feed_dict
        self._values: Any = None  # the results, after end()

    @property
    def final_ops_values(self) -> Any:
        return self._values

    def end(self, session: Any) -> None:
        if self._final_ops is not None:
            self._values = session.run(self._final_ops, feed_dict=self._feed_dict)
