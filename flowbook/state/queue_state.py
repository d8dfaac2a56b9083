"""A queue's contents and waiters as one session holds them: ``QueueState``.

As a variable's value (``flowbook.state.var_state``), a queue lives in the Session,
never in the graph: the queue op's kernel makes its ``QueueState`` once per
session (``flowbook.state.resources``), and every run of that session, from any
thread, shares it.  Elements are tuples of numpy arrays (the components).

**State** (all guarded by ``lock``, never held while a caller waits):

- ``items``: the elements; a deque (FIFO, padding FIFO), a list (random
  shuffle: the element at ``word % size`` goes, the last takes its place,
  ``word`` the next of TF's Philox words, :mod:`flowbook.kernels.philox`, seeded by
  ``(seed, seed2)`` or, both 0, from the OS; so a seeded queue hands out
  TensorFlow's order) or a heap of
  ``(priority, count, element)`` (priority: the lowest first, FIFO on ties)
- ``enqueuers`` / ``dequeuers``: the attempts still waiting, each with its
  :class:`~flowbook.state.pending.Pending`, served first come first served
- ``closed``: no new enqueue is accepted

**The flush** (``_flush``, after every change) moves elements until nothing
moves: the first enqueue attempt pushes what the capacity lets in (an
``enqueue_many`` goes in piece by piece, as in TensorFlow), the first
dequeue attempt takes what is available (a ``dequeue_many`` collects piece
by piece, so ``n`` may exceed the capacity; a random shuffle queue leaves
``min_after_dequeue`` elements until it is closed).  Once closed, a dequeue
that cannot be served fails with ``OutOfRangeError`` (taking nothing more,
as in TF, so no random word is spent) and puts back what it had collected,
or, for ``dequeue_up_to``, returns what it has.  The
Pendings are settled after the lock is released, so their callbacks may
use the queue.

``cancel_all`` fails every waiter (``Session.close``, ``Session.reset``);
a Pending's ``cancel`` withdraws its own attempt (the run stopped).

    >>> import numpy as np
    >>> q = QueueState("q", "fifo", 2, [np.dtype("int32")], None)
    >>> q.enqueue([(np.int32(1),), (np.int32(2),)]).done
    True
    >>> q.dequeue(1).result, q.size()
    ([(np.int32(1),)], 1)
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections import deque
from collections.abc import Sequence
from typing import Any

import numpy as np

from flowbook.framework.errors import CancelledError, OutOfRangeError
from flowbook.kernels.philox import Philox, Words, fresh_seeds
from flowbook.state.pending import Pending

Element = tuple  # one element: a tuple of numpy arrays, one per component

KINDS = {
    "fifo": "FIFOQueue",
    "padding_fifo": "PaddingFIFOQueue",
    "random_shuffle": "RandomShuffleQueue",
    "priority": "PriorityQueue",
}


# a finished attempt: (its Pending, build or None, the value, the error)
Done = tuple[Pending, Any, Any, "BaseException | None"]


class _Enqueue:
    __slots__ = ("elements", "pending")

    def __init__(self, elements: Sequence[Element], pending: Pending) -> None:
        self.elements = deque(elements)  # what is still to go in
        self.pending = pending


class _Dequeue:
    __slots__ = ("build", "n", "pending", "taken", "up_to")

    def __init__(self, n: int, up_to: bool, pending: Pending, build: Any) -> None:
        self.build = build  # the elements taken -> the result (run unlocked); None: the list
        self.n = n  # how many elements it wants (-1: one, returned unbatched)
        self.up_to = up_to  # dequeue_up_to: once closed, fewer will do
        self.taken: list[Element] = []  # collected so far, in order
        self.pending = pending


class QueueState:
    """One queue in one session.  See the module docstring."""

    def __init__(
        self,
        name: str,
        kind: str,
        capacity: int,
        dtypes: Sequence[np.dtype],
        shapes: Sequence[tuple] | None,
        min_after_dequeue: int = 0,
        seed: tuple[int, int] | None = None,
    ) -> None:
        self.name = name  # the queue's op name, for messages
        self.kind = kind  # a key of KINDS
        self.capacity = capacity if capacity > 0 else (1 << 62)  # TF: negative is unbounded
        self.dtypes = list(dtypes)  # numpy dtype per component
        self.shapes = [tuple(s) for s in shapes] if shapes else None  # per component, may be None
        self.min_after_dequeue = min_after_dequeue  # random shuffle: kept back until closed
        self.words = (  # random shuffle: which element goes next
            Words(Philox(*(seed or fresh_seeds()))) if kind == "random_shuffle" else None
        )
        self.items: Any = [] if kind in ("random_shuffle", "priority") else deque()
        self.enqueuers: deque[_Enqueue] = deque()  # waiting enqueue attempts, in arrival order
        self.dequeuers: deque[_Dequeue] = deque()  # waiting dequeue attempts, in arrival order
        self.closed = False  # close() ran: enqueues are refused
        self.lock = threading.Lock()  # guards everything above
        self._count = itertools.count()  # priority ties: arrival order

    def __repr__(self) -> str:
        return f"<{KINDS[self.kind]} '{self.name}' size={self.size()}>"

    # ------------------------------------------------------------ elements
    def _push(self, e: Element) -> None:
        if self.kind == "priority":
            heapq.heappush(self.items, (int(e[0]), next(self._count), e))
        else:
            self.items.append(e)

    def _pop(self) -> Element:
        if self.kind == "priority":
            return heapq.heappop(self.items)[2]
        if self.kind == "random_shuffle":
            items = self.items
            k = self.words() % len(items)  # type: ignore[misc]  # TF's pick: one word each
            items[k], items[-1] = items[-1], items[k]
            return items.pop()
        return self.items.popleft()

    def _put_back(self, taken: list[Element]) -> None:
        if self.kind in ("fifo", "padding_fifo"):
            self.items.extendleft(reversed(taken))
        else:
            for e in taken:
                self._push(e)

    def _available(self) -> int:
        n = len(self.items)
        if self.kind == "random_shuffle" and not self.closed:
            n -= self.min_after_dequeue
        return n

    # ---------------------------------------------------------------- flush
    def _flush(self) -> list[Done]:
        """Move elements until nothing moves; the attempts finished (settle them unlocked)."""
        out: list[Done] = []
        moved = True
        while moved:
            moved = False
            while self.enqueuers:
                a = self.enqueuers[0]
                while a.elements and len(self.items) < self.capacity:
                    self._push(a.elements.popleft())
                    moved = True
                if a.elements:
                    break
                self.enqueuers.popleft()
                out.append((a.pending, None, (), None))
            while self.dequeuers:
                d = self.dequeuers[0]
                want = 1 if d.n < 0 else d.n
                short = self.closed and not d.up_to and len(self.items) < want - len(d.taken)
                while not short and len(d.taken) < want and self._available() > 0:
                    d.taken.append(self._pop())
                    moved = True
                if len(d.taken) < want:
                    if not self.closed or self.enqueuers:
                        break
                    self.dequeuers.popleft()
                    if d.up_to and d.taken:
                        out.append((d.pending, d.build, d.taken, None))
                    else:
                        self._put_back(d.taken)
                        out.append((d.pending, None, None, self._out_of_range(want)))
                    continue
                self.dequeuers.popleft()
                out.append((d.pending, d.build, d.taken, None))
        return out

    def _out_of_range(self, want: int) -> OutOfRangeError:
        return OutOfRangeError(
            None,
            None,
            f"{KINDS[self.kind]} '{self.name}' is closed and has insufficient "
            f"elements (requested {want}, current size {len(self.items)})",
        )

    @staticmethod
    def _settle(done: list[Done]) -> None:
        for p, build, value, error in done:
            p.woke_ns = time.perf_counter_ns()  # the wait is over; what follows is the kernel's
            if error is None and build is not None:
                try:
                    value = build(value)
                except Exception as e:  # a batch that cannot be stacked, say
                    error = e
            if error is not None:
                p.fail(error)
            else:
                p.resolve(value)

    # ------------------------------------------------------------ the API
    def enqueue(self, elements: Sequence[Element]) -> Pending:
        """Put ``elements`` in, in order; the Pending settles (to ``()``) once all are in."""
        p = Pending(f"room in queue '{self.name}'")
        a = _Enqueue(elements, p)
        with self.lock:
            if self.closed:
                error = CancelledError(None, None, f"Queue '{self.name}' is closed.")
                done = [(p, None, None, error)]
            else:
                self.enqueuers.append(a)
                p.on_cancel = lambda: self._withdraw(a)
                done = self._flush()
        self._settle(done)
        return p

    def dequeue(self, n: int = -1, up_to: bool = False, build: Any = None) -> Pending:
        """Take ``n`` elements (-1: one); the Pending settles to ``build(elements taken)``
        (default: the list)."""
        p = Pending(f"{'an element' if n < 0 else f'{n} elements'} of queue '{self.name}'")
        d = _Dequeue(n, up_to, p, build)
        with self.lock:
            self.dequeuers.append(d)
            p.on_cancel = lambda: self._withdraw(d)
            done = self._flush()
        self._settle(done)
        return p

    def _withdraw(self, attempt: _Enqueue | _Dequeue) -> bool:
        with self.lock:
            if isinstance(attempt, _Enqueue):
                if attempt not in self.enqueuers:
                    return False
                self.enqueuers.remove(attempt)
            else:
                if attempt not in self.dequeuers:
                    return False
                self.dequeuers.remove(attempt)
                self._put_back(attempt.taken)
            done = self._flush()
        self._settle(done)
        return True

    def close(self, cancel_pending_enqueues: bool = False) -> None:
        """Refuse new enqueues; wake the dequeues that can no longer be served."""
        with self.lock:
            self.closed = True
            done = []
            if cancel_pending_enqueues:
                message = f"Enqueue operation was cancelled (queue '{self.name}' was closed)"
                done = [
                    (a.pending, None, None, CancelledError(None, None, message))
                    for a in self.enqueuers
                ]
                self.enqueuers.clear()
            done += self._flush()
        self._settle(done)

    def cancel_all(self, message: str) -> None:
        """Fail every waiting attempt with CancelledError (the session closes or resets)."""
        with self.lock:
            waiting = [a.pending for a in self.enqueuers] + [d.pending for d in self.dequeuers]
            for d in self.dequeuers:
                self._put_back(d.taken)
            self.enqueuers.clear()
            self.dequeuers.clear()
            self.closed = True
        for p in waiting:
            p.fail(CancelledError(None, None, f"Waiting for {p.what}: {message}"))

    release = cancel_all  # what flowbook.state.resources calls when the resource goes

    def size(self) -> int:
        """How many elements are in the queue now."""
        return len(self.items)

    def waiting(self) -> tuple[int, int]:
        """(enqueue attempts, dequeue attempts) waiting now, for the live graph."""
        return len(self.enqueuers), len(self.dequeuers)


__all__ = ["KINDS", "QueueState"]
