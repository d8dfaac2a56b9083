"""An iterator's position as one session holds it: ``IteratorState``.

As a variable's value (``flowbook.state.var_state``), a ``tf.data`` iterator's
position lives in the Session, never in the graph: each Session keeps one
``IteratorState`` per iterator name, so two sessions on one graph read a
dataset independently, and every run of one session shares it.  The state
holds a Python iterator over the dataset's elements (each a tuple of numpy
arrays, the flat components) and a lock: ``MakeIterator`` replaces the
iterator (the initializer), ``IteratorGetNext`` pulls one element under the
lock, so two threads running ``get_next`` on one session each get a
different element and never a torn one.  This module imports nothing of the
op library.

    >>> s = IteratorState("it")
    >>> s.start(iter([(1,), (2,)]))
    >>> s.next(), s.next()
    ((1,), (2,))
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

from flowbook.framework.errors import FailedPreconditionError, OutOfRangeError


class IteratorState:
    """One iterator's position in one session, and the lock that serialises reads.

    >>> IteratorState("it").started
    False
    """

    __slots__ = ("_elements", "lock", "name")

    def __init__(self, name: str) -> None:
        self.name = name  # the iterator's name in the graph, for messages
        self._elements: Iterator[tuple] | None = None  # the dataset being read; None: not started
        self.lock = threading.RLock()  # held while the iterator is replaced or advanced

    @property
    def started(self) -> bool:
        """Whether an initializer (or a one-shot iterator's first read) has run."""
        return self._elements is not None

    def start(self, elements: Iterator[tuple]) -> None:
        """Read ``elements`` from now on (what running the iterator's initializer does)."""
        with self.lock:
            self._elements = elements

    def start_once(self, make: Callable[[], Iterator[tuple]]) -> None:
        """Start with ``make()`` unless started already (a one-shot iterator)."""
        with self.lock:
            if self._elements is None:
                self._elements = make()

    def next(self) -> tuple:
        """The next element; OutOfRangeError at the end, FailedPrecondition before a start."""
        with self.lock:
            if self._elements is None:
                raise FailedPreconditionError(
                    None,
                    None,
                    f"GetNext() failed because the iterator {self.name!r} has not been "
                    "initialized. Ensure that you have run the initializer operation for this "
                    "iterator before getting the next element.",
                )
            try:
                return next(self._elements)
            except StopIteration:
                raise OutOfRangeError(
                    None, None, f"End of sequence (iterator {self.name!r})"
                ) from None
