"""Loops and branches in the live graph, in Chromium: a loop's frame and its counter, a cond's
untaken branch dimmed.

The first test runs a cell in a real JupyterLab (the ``open_notebook`` fixture): a
``while_loop`` whose iterations take about 2 s in all, and a ``cond``; while the cell
runs, the loop's box counts its iterations, and after, it says how many ran and the
cond's untaken branch is dimmed.  The second drives the stand-in page with the states
flowbook's live graph makes, to check the open frame and a nested loop's counters.
Screenshots land in ``test-output/browser/``.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

import flowbook as fb

from standin_states import live_states, set_trait, show

pytestmark = pytest.mark.browser

SHOTS = Path(__file__).resolve().parents[2] / "test-output" / "browser"
LOOP_CELL = """import time
import numpy as np
import flowbook as tf

def nap(k):
    time.sleep(0.04)  # 50 iterations: about 2 s
    return k

def step(i, acc):
    k = tf.py_func(nap, [i], tf.int32, name="nap")
    k.set_shape([])
    return k + 1, acc + tf.cast(k, tf.float32)

i, total = tf.while_loop(lambda i, acc: i < 50, step, [tf.constant(0), tf.constant(0.0)],
                         name="loop")
big = tf.cond(total > 100.0, lambda: tf.multiply(total, 2.0, name="double"),
              lambda: tf.negative(total, name="flip"), name="pick")
tf.show()"""

RUN_CELL = "sess = tf.Session()\nprint(sess.run(big))"


def _counter(widget, key: str) -> str:
    """The text of the counter of the frame ``key`` (a box or an open cluster); '' if none."""
    return widget.evaluate(
        """(root, key) => {
            const el = [...root.querySelectorAll('.fb-frame-count')]
                .find(e => e.getAttribute('data-name') === key);
            return el ? el.textContent : '';
        }""",
        key,
    )


def _classes(widget, name: str) -> str:
    return widget.locator(f'.fb-node[data-name="{name}"]').get_attribute("class") or ""


def test_a_loop_counts_its_iterations_as_it_runs_and_a_cond_dims_its_untaken_branch(
    open_notebook,
):
    nb = open_notebook("loops.ipynb", [LOOP_CELL, RUN_CELL])
    nb.run(0)
    w = nb.widget(0)
    box = w.locator('.fb-node[data-name="loop"]')
    box.wait_for(timeout=60_000)
    assert box.get_attribute("data-frame") == "while"  # a loop's frame, collapsed
    assert "while loop" in (box.text_content() or "")
    assert w.locator('.fb-cluster[data-name="pick"][data-frame="cond"]').count() == 1  # open
    nb.shot("loops-01-built")

    nb.page.evaluate(  # run the cell without waiting for it: watch it while it runs
        """(name) => {
            const app = window.jupyterapp;
            const panel = [...app.shell.widgets('main')].find(p => p.context && p.context.path === name);
            panel.content.activeCellIndex = 1;
            app.commands.execute('notebook:run-cell');
        }""",
        "loops.ipynb",
    )
    seen: list[int] = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(set(seen)) < 3:
        m = re.fullmatch(r"iteration (\d+)", _counter(w, "loop"))
        if m:
            seen.append(int(m.group(1)))
            if len(set(seen)) == 2:
                nb.shot("loops-02-running")
        nb.page.wait_for_timeout(50)
    assert len(set(seen)) >= 3 and seen == sorted(seen), seen  # it moved while the cell ran
    assert max(seen) < 50
    nb.wait_kernel_idle()
    nb.page.wait_for_function(
        """() => [...document.querySelectorAll('.jp-OutputArea .fb-frame-count')]
                 .some(e => e.textContent === 'ran 50 iterations')""",
        timeout=30_000,
    )
    assert _counter(w, "pick") == "took the true branch"  # 0 + 1 + ... + 49 > 100
    assert "fb-untaken" in _classes(w, "pick/flip") and "fb-dim" in _classes(w, "pick/flip")
    assert "fb-untaken" not in _classes(w, "pick/double")
    assert w.locator('.fb-node[data-name="pick/double"]').get_attribute("data-status") == "done"
    assert "2450" in nb.cell(1).locator(".jp-OutputArea-output").last.inner_text()
    nb.shot("loops-03-done")


def _nested_graph() -> fb.Graph:
    def outer(i, total):
        inner = fb.while_loop(
            lambda j, t: j < i, lambda j, t: (j + 1, t + 1), [0, total], name="in"
        )
        return i + 1, inner[1]

    g = fb.Graph()
    with g.as_default():
        _, total = fb.while_loop(lambda i, t: i < 4, outer, [0, 0], name="out")
        fb.cond(total > 100, lambda: total * 2, lambda: total - 1, name="pick")
    return g


def test_open_frames_and_nested_loops_show_their_own_counters(standin_page):
    page = standin_page
    g = _nested_graph()
    state = live_states(g, lambda s: s.run(g.get_tensor_by_name("pick/Merge:0")))
    show(page, state)
    SHOTS.mkdir(parents=True, exist_ok=True)
    root = page.locator("[data-flowbook-nodes]")
    assert _counter(root, "out") == "ran 4 iterations"  # collapsed: the inner loop inside it
    page.locator('.fb-node[data-name="out"]').click()
    page.wait_for_function("() => document.querySelector('.fb-cluster[data-name=\"out\"]')")
    page.locator('.fb-node[data-name="out/in"]').wait_for()
    assert _counter(root, "out") == "ran 4 iterations"  # now in the open frame's title band
    assert _counter(root, "out/in") == "ran 6 iterations, entered 4 times"
    assert _counter(root, "pick") == "took the false branch"
    page.screenshot(path=str(SHOTS / "loops-04-nested-done.png"))

    running = json.loads(json.dumps(state["run"]))
    running.update(phase="running", seq=running["seq"] + 1, done=[], update=None)
    running["control_flow"] = {"at": {"out/while_context": 2, "out/in/while_context": 1}}
    set_trait(page, "run", running)
    page.wait_for_function(
        "() => [...document.querySelectorAll('.fb-frame-count.fb-live')].length === 2"
    )
    assert _counter(root, "out") == "iteration 2" and _counter(root, "out/in") == "iteration 1"
    assert _counter(root, "pick") == ""  # nothing said of a cond while the run goes on
    page.screenshot(path=str(SHOTS / "loops-05-nested-running.png"))
