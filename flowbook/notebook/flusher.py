"""The flusher: a daemon thread that sends the live views' updates, at most MAX_PUSHES_PER_S a second.

A LiveGraph with something to send is *pending* (``Flusher.wake``); the
thread sends each pending graph's changes (``LiveGraph.flush``) once a tick,
napping between ticks while runs stream and waiting on its event only when
nothing is pending, so runs that stream cost it one wake-up per tick.  The
end of a cell sends whatever is pending on the kernel's thread
(``flush_now``).  Ten sends a second keep a training loop's numbers moving
for the eye; what each send costs is kept small by ``LiveGraph`` (ticks).

    >>> Flusher().pending
    set()
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

MAX_PUSHES_PER_S = 10  # updates sent to the views, per second at most


class Flusher:
    """A daemon thread that sends dirty LiveGraphs at most MAX_PUSHES_PER_S times a second."""

    def __init__(self) -> None:
        self.pending: set[Any] = set()  # hubs with something to send
        self.event = threading.Event()  # set when pending gained a hub
        self.thread: threading.Thread | None = None
        self.last = 0.0  # monotonic time of the last flush
        self.lock = threading.Lock()  # guards making the thread
        # held through a pass that took hubs out of pending until their states are sent, so
        # that flush_now returns only once everything pending when it was called has gone
        self.passing = threading.Lock()

    def wake(self, hub: Any) -> None:
        """Schedule ``hub``'s flush (cheap when one is already scheduled)."""
        if hub in self.pending:
            return
        self.pending.add(hub)
        if self.thread is None:
            with self.lock:
                if self.thread is None:
                    self.thread = threading.Thread(
                        target=self._loop, name="flowbook-live", daemon=True
                    )
                    self.thread.start()
        self.event.set()

    def flush_now(self) -> None:
        """Send everything pending, on the calling thread (end of a cell, tests); a pass of the
        thread in flight finishes first."""
        with self.passing:
            while self.pending:
                self._flush_pending(force=True)

    def _flush_pending(self, force: bool = False) -> None:
        """Send the hubs pending now; those that get dirty meanwhile wait for the next tick."""
        hubs = list(self.pending)
        self.pending.difference_update(hubs)
        for hub in hubs:
            hub.flush(force)

    def _loop(self) -> None:
        interval = 1.0 / MAX_PUSHES_PER_S
        while True:
            if not self.pending:  # idle: sleep until a hub needs sending
                self.event.wait()
            self.event.clear()
            delay = self.last + interval - time.monotonic()
            if delay > 0:  # runs streaming: one nap a tick, no wake-up per run
                time.sleep(delay)
            self.last = time.monotonic()
            # one pass a tick: runs that keep a hub dirty while a slow view takes its update
            # must not turn the loop into back-to-back sends; a view's failure must not kill
            # the thread
            with self.passing, contextlib.suppress(Exception):
                self._flush_pending()
