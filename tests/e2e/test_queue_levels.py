"""Queues in the live graph, in Chromium: a queue's level, and an op that waits for it.

The first test runs a cell in a real JupyterLab (the ``open_notebook`` fixture): a
dequeue from an empty queue waits until a timer thread enqueues three elements about
1.5 s later.  While it waits, the dequeue's box is outlined in amber and says what it
waits for, and the queue's box shows its level "0 / 10"; after, the run is done and the
level stays as last seen ("2 / 10").  The second drives the stand-in page with the
states flowbook's live graph makes, to check a full queue, a closed one, and the marks
going away.  Screenshots land in ``test-output/browser/``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import flowbook as fb
from flowbook.notebook import live

from standin_states import live_states, set_trait, show

pytestmark = pytest.mark.browser

SHOTS = Path(__file__).resolve().parents[2] / "test-output" / "browser"
QUEUE_CELL = """import threading
import flowbook as tf

q = tf.FIFOQueue(10, tf.float32, shapes=[[]], name="q")
put = q.enqueue_many([[1.0, 2.0, 3.0]], name="put")
take = q.dequeue(name="take")
tf.show()"""

RUN_CELL = """sess = tf.Session()
threading.Timer(1.5, lambda: sess.run(put)).start()  # the dequeue waits until then
print("took", sess.run(take))"""


def _level(widget, name: str) -> str:
    """The level pill of the box ``name`` ('' if none)."""
    pill = widget.locator(f'.fb-node[data-name="{name}"] .fb-queue-level text')
    return (pill.text_content() or "") if pill.count() else ""


def _wait_text(widget, name: str) -> str:
    t = widget.locator(f'.fb-node[data-name="{name}"] .fb-wait text')
    return (t.text_content() or "") if t.count() else ""


def _classes(widget, name: str) -> str:
    return widget.locator(f'.fb-node[data-name="{name}"]').get_attribute("class") or ""


def test_a_dequeue_shows_it_waits_and_the_queue_its_level_then_done(open_notebook):
    nb = open_notebook("queues.ipynb", [QUEUE_CELL, RUN_CELL])
    nb.run(0)
    w = nb.widget(0)
    w.locator('.fb-node[data-name="take"]').wait_for(timeout=60_000)
    assert _level(w, "q") == ""  # no run has used the queue yet
    nb.page.evaluate(  # run the cell without waiting for it: watch it while it waits
        """(name) => {
            const app = window.jupyterapp;
            const panel = [...app.shell.widgets('main')].find(p => p.context && p.context.path === name);
            panel.content.activeCellIndex = 1;
            app.commands.execute('notebook:run-cell');
        }""",
        "queues.ipynb",
    )
    nb.page.wait_for_function(
        """() => [...document.querySelectorAll('.jp-OutputArea .fb-node.fb-waiting')]
                 .some(e => e.getAttribute('data-name') === 'take')""",
        timeout=30_000,
    )
    assert _wait_text(w, "take") == "waiting: an element of queue 'q'"
    assert _level(w, "q") == "0 / 10"
    assert "running" in (w.locator(".fb-summary").text_content() or "")
    nb.shot("queues-01-waiting")
    nb.wait_kernel_idle()
    nb.page.wait_for_function(
        """() => {
            const pill = document.querySelector(
                '.jp-OutputArea .fb-node[data-name="q"] .fb-queue-level text');
            return pill && pill.textContent === '2 / 10';
        }""",
        timeout=30_000,
    )
    assert "fb-waiting" not in _classes(w, "take") and _wait_text(w, "take") == ""
    assert ": done" in (w.locator(".fb-summary").text_content() or "")
    assert "took 1.0" in nb.cell(1).locator(".jp-OutputArea-output").last.inner_text()
    nb.shot("queues-02-done")


def test_a_full_queue_a_closed_one_and_the_marks_going(standin_page):
    page = standin_page
    g = fb.Graph()
    with g.as_default():
        q = fb.FIFOQueue(3, fb.float32, shapes=[[]], name="q")
        with fb.name_scope("feed"):
            r = fb.FIFOQueue(5, fb.float32, shapes=[[]], name="r")
            put_r = r.enqueue_many([[1.0, 2.0]], name="put")
        fill = q.enqueue_many([[1.0, 2.0, 3.0]], name="fill")
        q.enqueue(4.0, name="more")
    # the levels are read when sent: sent before the session (and its queues) goes
    state = live_states(g, lambda s: (s.run(fill), s.run(put_r), live.FLUSHER.flush_now()))
    show(page, state)
    SHOTS.mkdir(parents=True, exist_ok=True)
    root = page.locator("[data-flowbook-nodes]")
    assert _level(root, "q") == "3 / 3" and _level(root, "feed/r") == "2 / 5"
    page.locator('.fb-cluster-head[data-name="feed"]').click()  # collapse the scope
    page.locator('.fb-node[data-name="feed"]').wait_for()
    assert _level(root, "feed") == "2 / 5"  # a collapsed scope shows the queues inside it

    waiting = json.loads(json.dumps(state["run"]))
    waiting.update(phase="running", seq=waiting["seq"] + 1, done=[], update=None)
    waiting["queues"]["waiting"] = {"more": "room in queue 'q'"}
    set_trait(page, "run", waiting)
    page.wait_for_function("() => document.querySelector('.fb-node.fb-waiting')")
    assert _wait_text(root, "more") == "waiting: room in queue 'q'"
    page.get_by_role("button", name="Fit").click()
    page.screenshot(path=str(SHOTS / "queues-03-full.png"))

    closed = json.loads(json.dumps(waiting))
    closed.update(phase="done", seq=waiting["seq"] + 1, update=None)
    closed["queues"]["waiting"] = {}
    closed["queues"]["levels"]["q"] = {"size": 0, "capacity": 3, "closed": True}
    set_trait(page, "run", closed)
    page.wait_for_function("() => !document.querySelector('.fb-node.fb-waiting')")
    assert _level(root, "q") == "closed" and _wait_text(root, "more") == ""
    page.screenshot(path=str(SHOTS / "queues-04-closed.png"))
