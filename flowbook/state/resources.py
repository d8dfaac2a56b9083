"""Session resources kept in containers: queues and readers (TF1's resource containers).

A queue or reader op declares ``resource="container"``: the Session binds a
:class:`ResourceCell` into its kernel (the ``cell`` keyword), one per
(container, shared name) -- or per op when it has no shared name -- so every
run of the session, on any thread, finds the same queue.  The kernel makes
the resource on its first run (``cell.get(make)``).

``Session.reset(target, containers)`` and ``Session.close()`` ``release``
cells: the resource is told to let its waiters go (a queue's
``cancel_all``) and dropped; the cell stays, so plans already built keep
pointing at it and the next run makes a fresh resource, as TensorFlow makes
a new queue after a reset.  ``tf.container(name)`` (``flowbook.ops.io.queues``) sets
the container of the stateful ops built inside it.  This module imports
nothing of the graph.

    >>> cell = ResourceCell("c")
    >>> cell.get(list) is cell.get(dict)
    True
    >>> cell.release("gone"); cell.value is None
    True
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


class ResourceCell:
    """Where one resource of one session lives; empty until first used or after a release.

    >>> ResourceCell("").container
    ''
    """

    __slots__ = ("container", "lock", "name", "value")

    def __init__(self, container: str, name: str = "") -> None:
        self.container = container  # "" is the default container
        self.name = name  # the op's shared name or name, for messages
        self.value: Any = None  # the resource (a QueueState, a reader), None until made
        self.lock = threading.Lock()  # guards making and dropping the value

    def get(self, make: Callable[[], Any]) -> Any:
        """The resource, made by ``make()`` if there is none yet."""
        value = self.value
        if value is not None:
            return value
        with self.lock:
            if self.value is None:
                self.value = make()
            return self.value

    def release(self, message: str) -> None:
        """Drop the resource; one with a ``release(message)`` lets its waiters go first."""
        with self.lock:
            value, self.value = self.value, None
        if value is not None and hasattr(value, "release"):
            value.release(message)


def cell_key(op: Any) -> tuple:
    """The key a session files ``op``'s resource under: (container, shared name or the op)."""
    container = op.attrs.get("container", "") or ""
    shared = op.attrs.get("shared_name", "") or ""
    return (container, shared) if shared else (container, op.name, op._id)


__all__ = ["ResourceCell", "cell_key"]
