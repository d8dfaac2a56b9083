"""A variable's value as one session holds it: ``VarState``.

The graph holds a variable's op, never its value: each Session keeps one
``VarState`` per VariableV2 op it has run, so two sessions on one graph hold
two values, as in TensorFlow.  The VariableV2 kernel outputs the VarState
itself (TF1's "ref"); the update ops (``ops/state_ops``) take it as their ref
input and write it under its lock; every other consumer gets ``read()``, the
value at the moment that consumer runs.  Stored values are read-only numpy
arrays, so nothing outside the session changes a variable behind its back.
This module imports nothing of the op library: the session and the debugger
use it without it.

    >>> import numpy as np
    >>> s = VarState(None)
    >>> s.store(np, [1.0, 2.0]).flags.writeable
    False
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

import numpy as np

from flowbook.framework.errors import FailedPreconditionError


class VarState:
    """One variable's value in one session, and the lock that serialises updates.

    The VariableV2 op outputs this object itself (TF1's "ref"); update ops
    take it as their first input, and every other consumer receives the value,
    read when that consumer runs, so a read placed after an update sees it.

    >>> s = VarState(None); s.value is None
    True
    """

    __slots__ = ("_op", "lock", "value")

    def __init__(self, op: Any) -> None:
        # the VariableV2 op, for messages; weak, so the session's op -> state map can let go
        # of a variable whose op left the graph (a re-run notebook cell)
        self._op = weakref.ref(op) if op is not None else lambda: None
        self.value: Any = None  # the current array (read-only), None until initialised
        self.lock = threading.Lock()  # held while an update reads and writes value

    @property
    def op(self) -> Any:
        """The variable's op (None once it has left the graph and been collected)."""
        return self._op()

    def read(self) -> Any:
        """The current value; FailedPreconditionError naming the variable if it has none."""
        value = self.value
        if value is None:
            op = self.op
            where = f"{op.describe()}: " if op is not None else ""
            name = op.name if op is not None else "variable"
            raise FailedPreconditionError(
                None, op, f"{where}Attempting to use uninitialized value {name}"
            )
        return value

    def store(self, xp: Any, value: Any) -> Any:
        """Keep a copy of ``value`` (read-only on the host) as the new value; returns it."""
        value = xp.array(value, copy=True)
        if type(value) is np.ndarray:  # CuPy arrays have no writeable flag
            value.flags.writeable = False
        self.value = value
        return value

    def keep(self, value: Any) -> Any:
        """Make ``value`` the new value without copying it: an array the caller made for this
        and shares with no one (an update kernel's fresh result).  Returns it.

        >>> import numpy as np
        >>> s = VarState(None); a = np.ones(2); s.keep(a) is a, a.flags.writeable
        (True, False)
        """
        if type(value) is np.ndarray:  # CuPy arrays have no writeable flag
            value.flags.writeable = False
        self.value = value
        return value
