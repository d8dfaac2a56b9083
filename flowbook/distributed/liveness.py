"""Whether a task's worker still answers: Dask's heartbeats, read while a distributed step waits.

A worker that dies closes its connections, and the step waiting on it fails
at once (``flowbook.distributed.session``).  A worker that is alive but does
not answer -- its process stopped (``SIGSTOP``, a debugger), swapped out,
its event loop stuck -- closes nothing: without a check, the step would wait
for ever.  This module is that check, built on what Dask already does:

- every Dask worker sends a heartbeat to the scheduler from its event loop,
  every 0.5 s on a cluster of up to 10 workers (1 s up to 50, 2 s up to
  200, then ``n / 200 + 1`` s: ``distributed.scheduler.heartbeat_interval``),
  and the scheduler stamps the worker's ``last_seen`` with its own clock
  (``scheduler.identity()``, what ``Client.scheduler_info()`` shows);
- a worker running a long kernel still heartbeats: the kernel runs on a
  task server's pool thread and numpy releases the GIL, so the event loop
  goes on (a kernel holding the GIL for seconds would stall it, and Dask
  would warn "event loop was unresponsive");
- the scheduler itself acts only after ``distributed.scheduler.worker-ttl``
  (5 minutes by default), when it asks the worker's nanny to restart it.

**The check.**  While a step waits, every ``CHECK_EVERY_S`` the session asks
the scheduler for its workers' ``last_seen`` (one call for all tasks,
answered within ``ASK_S`` or skipped) and :class:`Heartbeats` notes, on the
client's clock, when each task's value last moved (the two clocks are never
compared).  A task whose heartbeat has not moved for ``hung_after_s`` --
``HUNG_AFTER_S`` by default, and never less than three of Dask's heartbeat
intervals for the cluster's size -- is **hung**: the step fails with
``UnavailableError`` naming it.  That is at most ``HUNG_AFTER_S + 2 *
CHECK_EVERY_S`` after the worker stopped (the first read after its last
beat, the bound, the next read), plus the time the scheduler takes to
answer the two reads (milliseconds; ``ASK_S`` at most each): about 7 s
with the defaults on a cluster of up to 10 workers.  A step shorter than ``CHECK_EVERY_S``
never asks.  The heartbeat bound is separate from a deadline on the step
(``RunOptions.timeout_in_ms``, or ConfigProto's ``operation_timeout_in_ms``
for every step): a worker blocked in a dequeue is alive, and waits as long
as the deadline lets it.

    >>> beats = Heartbeats(hung_after_s=5.0)
    >>> beats.update({"tcp://a:1": {"last_seen": 100.0}}, ["tcp://a:1"], now=0.0)
    >>> beats.update({"tcp://a:1": {"last_seen": 100.5}}, ["tcp://a:1"], now=1.0)
    >>> beats.silent(["tcp://a:1"], now=5.5)  # its heartbeat moved at 1.0
    {}
    >>> beats.silent(["tcp://a:1"], now=6.5)
    {'tcp://a:1': 5.5}
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from typing import Any

__all__ = ["ASK_S", "CHECK_EVERY_S", "HUNG_AFTER_S", "Heartbeats", "heartbeats", "wait_alive"]

HUNG_AFTER_S = 5.0  # a task's worker whose heartbeat has not moved for this long is hung
CHECK_EVERY_S = 1.0  # how often a waiting step reads the heartbeats
ASK_S = 2.0  # longest wait for the scheduler's answer (none: no verdict this time)
BEATS_PER_BOUND = 3  # the bound is never less than this many of Dask's heartbeat intervals


class Heartbeats:
    """Each worker's last heartbeat (the scheduler's ``last_seen``), and when it last moved on
    our clock.  See the module docstring."""

    def __init__(self, hung_after_s: float = HUNG_AFTER_S) -> None:
        self.hung_after_s = hung_after_s  # the bound (raised to 3 of Dask's intervals)
        self.interval = 0.5  # Dask's heartbeat interval for the cluster's size
        self.seen: dict[str, tuple[float | None, float]] = {}  # address -> (last_seen, moved at)
        self.polls = 0  # answers read from the scheduler

    def update(
        self, workers: dict[str, dict[str, Any]], addresses: Iterable[str], now: float
    ) -> None:
        """Note ``addresses``' heartbeats from the scheduler's worker table (one absent from
        it has none: a worker the scheduler removed no longer beats)."""
        self.polls += 1
        self.interval = _dask_interval(len(workers))
        for address in addresses:
            beat = workers.get(address, {}).get("last_seen")
            old = self.seen.get(address)
            if old is None or beat != old[0]:
                self.seen[address] = (beat, now)

    def bound(self) -> float:
        """How long a heartbeat may stand still before its worker is hung, in seconds."""
        return max(self.hung_after_s, BEATS_PER_BOUND * self.interval)

    def silent(self, addresses: Iterable[str], now: float) -> dict[str, float]:
        """The workers among ``addresses`` silent for longer than the bound: seconds silent."""
        out = {}
        for address in addresses:
            seen = self.seen.get(address)
            if seen is not None and now - seen[1] > self.bound():
                out[address] = now - seen[1]
        return out

    def last(self, address: str) -> float | None:
        """The scheduler's ``last_seen`` of ``address`` as last read (None: never read)."""
        seen = self.seen.get(address)
        return None if seen is None else seen[0]


async def heartbeats(client: Any, beats: Heartbeats, addresses: list[str]) -> dict[str, float]:
    """Read the scheduler's heartbeats into ``beats``; the silent workers among ``addresses``
    (seconds silent).  Runs on the client's event loop; a scheduler that does not answer
    within ``ASK_S`` gives no verdict ({})."""
    try:
        info = await asyncio.wait_for(client.scheduler.identity(n_workers=-1), ASK_S)
    except (TimeoutError, OSError):
        return {}
    now = time.monotonic()
    beats.update(info.get("workers", {}), addresses, now)
    return beats.silent(addresses, now)


async def wait_alive(
    client: Any,
    beats: Heartbeats,
    calls: dict[Any, str],
    address: dict[str, str],
    limit: float | None,
) -> tuple[list[BaseException], set[Any], dict[str, float]]:
    """Wait for a step's calls (``calls``: call -> its task; ``address``: task -> its
    worker) until one fails, all answer, ``limit`` seconds pass (None: no limit) or a task
    still waited on is hung.  Returns the errors raised, the calls left and the hung tasks
    (task -> seconds silent)."""
    loop = asyncio.get_running_loop()
    end = None if limit is None else loop.time() + limit
    rest = set(calls)
    while True:
        wait = CHECK_EVERY_S if end is None else min(CHECK_EVERY_S, end - loop.time())
        _, rest = await asyncio.wait(
            rest, timeout=max(wait, 0.0), return_when=asyncio.FIRST_EXCEPTION
        )
        failed = [
            c.exception()
            for c in calls
            if c.done() and not c.cancelled() and c.exception() is not None
        ]
        if failed or not rest or (end is not None and loop.time() >= end):
            return failed, rest, {}
        waited = {address[calls[c]]: calls[c] for c in rest}  # worker -> task
        silent = await heartbeats(client, beats, list(waited))
        if silent:
            return [], rest, {waited[a]: quiet for a, quiet in silent.items()}


def _dask_interval(n_workers: int) -> float:
    """Dask's heartbeat interval for a cluster of ``n_workers`` (as its scheduler asks).

    >>> _dask_interval(3), _dask_interval(1000)
    (0.5, 6.0)
    """
    from distributed.scheduler import heartbeat_interval  # lazy: dask is an optional extra

    return float(heartbeat_interval(n_workers))
