"""Queues in the live views' states: a queue's level, the ops that wait and what for."""

from __future__ import annotations

import threading
import time

import pytest

import flowbook as fb
from flowbook.notebook import live, queues, watch
from flowbook.runtime import session as session_module
from flowbook.runtime.observers import Observer
from flowbook.state.resources import cell_key
from tests.live_fakes import FakeView

WAIT_S = 10.0  # the longest a test waits for a state it expects


@pytest.fixture
def view(view, monkeypatch):
    # runs of a plan are timed again only when these say: never, in these tests
    monkeypatch.setattr(watch, "RETIME_FAST_NS", 10**12)
    monkeypatch.setattr(watch, "RETIME_NS", 10**12)
    return view


def _queue_graph():
    g = fb.Graph()
    with g.as_default():
        q = fb.FIFOQueue(4, fb.float32, shapes=[[]], name="q")
        put2 = q.enqueue_many([[1.0, 2.0]], name="put2")
        put3 = q.enqueue_many([[3.0, 4.0, 5.0]], name="put3")
        take2 = q.dequeue_many(2, name="take2")
        take1 = q.dequeue(name="take1")
        close = q.close(name="close")
    return g, put2, put3, take2, take1, close


def _until(view: FakeView, check, what: str, flush: bool = True) -> dict:
    """Flush (or let the flusher send) until the last run state passes ``check``; that state."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if flush:
            live.FLUSHER.flush_now()
        if view.got:
            run = view.last("run")
            if check(run):
                return run
        time.sleep(0.02)
    raise AssertionError(f"no run state {what}; last: {view.last('run')}")


def _in_thread(fn):
    """Run ``fn`` in a thread; ``out`` gets what it returned or the exception it raised."""
    out: list = []

    def go():
        try:
            out.append(fn())
        except Exception as e:
            out.append(e)

    t = threading.Thread(target=go, daemon=True)
    t.start()
    return t, out


def _waiting(name):
    return lambda run: name in run.get("queues", {}).get("waiting", {})


def test_a_run_waiting_on_a_full_queue_shows_the_wait_and_the_level_then_done(view):
    g, put2, put3, _, take1, _ = _queue_graph()
    view.attach(g)
    with fb.Session(graph=g) as s:
        s.run(put3)
        t, out = _in_thread(lambda: s.run(put2))  # room for one of the two: it waits
        run = _until(view, _waiting("put2"), "with put2 waiting")
        assert run["phase"] == "running"
        assert run["queues"]["waiting"] == {"put2": "room in queue 'q'"}
        assert run["queues"]["levels"] == {"q": {"size": 4, "capacity": 4, "closed": False}}
        assert s.run(take1) == 3.0  # room: the second element goes in, the wait ends
        t.join(WAIT_S)
        assert not t.is_alive() and out == [None]
        run = _until(view, lambda r: not r["queues"]["waiting"], "with no wait")
        assert run["phase"] == "done"
        assert run["queues"]["levels"]["q"]["size"] == 4
        assert not queues.queue_view(live.live_graph(g)).waiting


def test_a_run_watched_whole_that_waits_is_shown_running(view):
    g, put2, put3, _, take1, _ = _queue_graph()
    hub = view.attach(g)
    with fb.Session(graph=g) as s:
        s.run(put3)
        s.run(take1)  # the first run: watched op by op
        s.run(take1)  # then watched whole: no wait, no record
        seq = hub.seq
        assert hub.record is None or hub.record.seq < seq
        s.run(take1)  # the queue is empty now
        t, out = _in_thread(lambda: s.run(take1))
        run = _until(view, _waiting("take1"), "with take1 waiting")
        assert run["phase"] == "running" and run["seq"] > seq
        assert run["queues"]["waiting"] == {"take1": "an element of queue 'q'"}
        assert run["queues"]["levels"]["q"]["size"] == 0
        s.run(put2)
        t.join(WAIT_S)
        assert out == [1.0]
        _until(view, lambda r: not r["queues"]["waiting"] and r["phase"] == "done", "done")


def test_levels_are_read_when_sent_while_a_run_waits_and_kept_after(view):
    g, _, _, take2, _, close = _queue_graph()
    with g.as_default():
        r = fb.FIFOQueue(8, fb.float32, shapes=[[]], name="r")
        fill = r.enqueue_many([[1.0, 2.0, 3.0]], name="fill")
    view.attach(g)
    with fb.Session(graph=g) as s:
        s.run(fill)  # r: 3 of 8
        t, out = _in_thread(lambda: s.run(take2))
        _until(view, _waiting("take2"), "with take2 waiting")
        state = s._cells[cell_key(r.queue_ref.op)].value
        state.dequeue(2)  # r changes with no run: the views follow it while take2 waits
        run = _until(view, lambda r: r["queues"]["levels"]["r"]["size"] == 1, "r at 1", False)
        assert run["queues"]["waiting"] == {"take2": "2 elements of queue 'q'"}
        assert run["queues"]["levels"]["q"] == {"size": 0, "capacity": 4, "closed": False}
        assert run["queues"]["levels"]["r"] == {"size": 1, "capacity": 8, "closed": False}
        s.run(close)  # closed and empty: the waiting dequeue fails
        t.join(WAIT_S)
        assert not t.is_alive() and isinstance(out[0], fb.errors.OutOfRangeError)
        run = _until(view, lambda r: not r["queues"]["waiting"], "with no wait")
        assert run["queues"]["levels"]["q"] == {"size": 0, "capacity": 4, "closed": True}
    # the session is closed: its queues are gone, and the levels stay as last seen
    live.live_graph(g).touch("run")
    levels = _until(view, lambda r: True, "")["queues"]["levels"]
    assert levels["q"]["closed"] is True and levels["r"]["size"] == 1


def test_a_run_stopped_by_its_deadline_ends_its_wait(view):
    g, _, _, _, take1, _ = _queue_graph()
    view.attach(g)
    with fb.Session(graph=g) as s:
        with pytest.raises(fb.errors.DeadlineExceededError, match="take1"):
            s.run(take1, options=fb.RunOptions(timeout_in_ms=200))
        run = _until(view, lambda r: r["phase"] == "error", "failed")
        assert run["queues"]["waiting"] == {}
        assert not queues.queue_view(live.live_graph(g)).waiting


class _Waits(Observer):
    def __init__(self) -> None:
        self.seen: list[tuple] = []

    def on_wait(self, op, what):
        self.seen.append(("wait", op.name, what))

    def on_wait_end(self, op):
        self.seen.append(("end", op.name))


def test_the_scheduler_tells_observers_when_an_op_parks_and_when_its_wait_ends():
    g, put2, _, _, take1, _ = _queue_graph()
    obs = _Waits()
    with fb.Session(graph=g) as s:
        timer = threading.Timer(0.2, lambda: s.run(put2))
        timer.start()
        with session_module.observe(obs):
            assert s.run(take1) == 1.0
            assert s.run(take1) == 2.0  # an element is there: no wait
        timer.join()
    assert obs.seen == [("wait", "take1", "an element of queue 'q'"), ("end", "take1")]


def test_a_graph_without_queues_sends_no_levels(view):
    g = fb.Graph()
    with g.as_default():
        c = fb.constant(1.0) * 2.0
    view.attach(g)
    with fb.Session(graph=g) as s:
        s.run(c)
    live.FLUSHER.flush_now()
    assert view.last("run")["queues"] == {}
