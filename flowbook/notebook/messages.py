"""The messages a view sends the kernel, read strictly: a bad one gets a reply, never an exception.

The widget and the side panel send three kinds of custom message (see
:mod:`flowbook.notebook.widget` and :mod:`flowbook.notebook.panel`):

- a stepper button: ``{"action": "step" | "cont" | "reset"}`` or
  ``{"action": "run_to", "node": "<op name>"}``;
- the run list asking for a kept run: ``{"action": "history_run", "seq": n}``.

Anything can arrive on a comm (an old front end, a hand-made message, a
hostile page): :func:`read` checks every field -- its type, a number that is
a whole, finite, positive run number, a name of bounded length -- and returns
either the :class:`Action` to do or the reason it was refused, which the view
shows.  The kernel never raises for a message.

    >>> read({"action": "history_run", "seq": 3})
    Action(kind='history_run', node=None, seq=3)
    >>> read({"action": "history_run", "seq": float("nan")})
    'a run number must be a whole number from 1, not nan'
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

STEPPER_ACTIONS = frozenset({"step", "run_to", "cont", "reset"})
MAX_NAME = 4096  # longest op name a message may carry (TensorFlow's own names are far shorter)
MAX_SEQ = 2**53  # run numbers are counted from 1; beyond this a float is no longer exact


@dataclass(frozen=True)
class Action:
    """A checked message: what to do, on which op, for which kept run."""

    kind: str  # a stepper action or "history_run"
    node: str | None = None  # run_to's op
    seq: int | None = None  # history_run's run number


def read(data: Any) -> Action | str:
    """The action ``data`` asks for, or why it was refused (a line the view shows).

    >>> read({"action": "run_to", "node": "MatMul"})
    Action(kind='run_to', node='MatMul', seq=None)
    >>> read({"action": "launch"})
    "unknown action 'launch'"
    """
    if not isinstance(data, dict):
        return f"a message must be an object, not {type(data).__name__}"
    kind = data.get("action")
    if not isinstance(kind, str):
        return "a message must say its action"
    if kind == "history_run":
        seq = _seq(data.get("seq"))
        return seq if isinstance(seq, str) else Action(kind, seq=seq)
    if kind not in STEPPER_ACTIONS:
        return f"unknown action {kind[:40]!r}"
    node = data.get("node")
    if node is not None and not isinstance(node, str):
        return f"an op name must be text, not {type(node).__name__}"
    if node is not None and len(node) > MAX_NAME:
        return f"an op name of {len(node)} characters is too long (at most {MAX_NAME})"
    return Action(kind, node=node or None)


def _seq(value: Any) -> int | str:
    """A run number from a message (JSON numbers may come as floats), or why it is not one."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"a run number must be a number, not {type(value).__name__}"
    if isinstance(value, float) and (not math.isfinite(value) or not value.is_integer()):
        return f"a run number must be a whole number from 1, not {value!r}"
    if not 1 <= value <= MAX_SEQ:
        return f"a run number must be a whole number from 1, not {value!r}"
    return int(value)
