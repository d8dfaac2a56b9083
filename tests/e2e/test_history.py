"""The run list, replay and compare in a real JupyterLab (flowbook/notebook/history.py, features/history/history.ts).

Screenshots: ``test-output/browser/history-*.png``.
"""

from __future__ import annotations

import shutil

import nbformat
import pytest

from conftest import ROOT, Notebook

pytestmark = pytest.mark.browser

TUTORIAL = ROOT / "tutorials" / "03_digits_softmax.ipynb"

# In the page: the run-list row of the widget in cell `i`, and what the graph shows.
BAR = "(i) => document.querySelectorAll('.jp-Notebook .jp-Cell')[i].querySelector('.fb-history')"
STATUSES = """(i) => {
  const w = document.querySelectorAll('.jp-Notebook .jp-Cell')[i].querySelector('.flowbook-graph');
  const out = {};
  for (const el of w.querySelectorAll('.fb-node')) {
    out[el.getAttribute('data-name')] = el.getAttribute('data-status') + (el.classList.contains('fb-dim') ? ' dim' : '');
  }
  return out;
}"""
# Samples the widget in cell `i` every animation frame for `ms` (bounded), returning the
# distinct frames of a replay: [time ms, step, ops done, op running].
SAMPLE = """async ([i, ms]) => {
  const w = document.querySelectorAll('.jp-Notebook .jp-Cell')[i].querySelector('.flowbook-graph');
  const bar = w.querySelector('.fb-history');
  const frames = [];
  const t0 = performance.now();
  let last = '';
  while (performance.now() - t0 < ms) {
    if (bar.dataset.flowbookReplay === 'playing') {
      const done = w.querySelectorAll('.fb-node[data-status="done"]').length;
      const running = [...w.querySelectorAll('.fb-node[data-status="running"]')].map(e => e.getAttribute('data-name')).join(',');
      const key = `${bar.dataset.flowbookReplayStep}|${done}|${running}`;
      if (key !== last) {
        frames.push([performance.now() - t0, Number(bar.dataset.flowbookReplayStep), done, running]);
        last = key;
      }
    } else if (frames.length > 0) {
      break;
    }
    await new Promise(r => requestAnimationFrame(r));
  }
  return frames;
}"""


def _open_tutorial(lab, browser) -> tuple[Notebook, object]:
    name = "history_03.ipynb"
    shutil.copy(TUTORIAL, lab.root / name)
    shutil.copytree(TUTORIAL.parent / "data", lab.root / "data", dirs_exist_ok=True)
    page = browser.new_page(viewport={"width": 1500, "height": 1000})
    page.goto(f"{lab.url}/lab/workspaces/history03/tree/{name}?token={lab.token}")
    nb = Notebook(page, name)
    nb.wait_kernel_idle()
    return nb, page


def _run_all(nb: Notebook, cells: int, timeout_s: float = 240) -> None:
    nb.page.evaluate(
        "async () => {"
        + nb._panel_js()
        + "app.shell.activateById(panel.id); await app.commands.execute('notebook:run-all-cells'); }"
    )
    nb.page.wait_for_function(  # every code cell ran, the last one included
        "(n) => {"
        + nb._panel_js()
        + """
            const ws = panel.content.widgets.filter(c => c.model.type === 'code');
            return ws.length === n && ws.every(c => c.model.executionCount !== null);
        }""",
        arg=cells,
        timeout=timeout_s * 1000,
    )
    nb.wait_kernel_idle(timeout_s)


def _pick(nb: Notebook, i: int, which: str, seq: int) -> None:
    """Choose run ``seq`` in the run list ("select") or in "compare" of the widget in cell ``i``."""
    nb.cell(i).locator(f".fb-history-{which}").select_option(str(seq))


def test_after_run_all_of_tutorial_03_every_run_is_listed_and_each_shows_its_subgraph(lab, browser):
    nb, page = _open_tutorial(lab, browser)
    try:
        source = nbformat.read(TUTORIAL, as_version=4)
        codes = [c for c in source.cells if c.cell_type == "code"]
        shown = next(k for k, c in enumerate(source.cells) if "graph_view = tf.show()" in c.source)
        _run_all(nb, len(codes))
        bar = nb.cell(shown).locator(".fb-history")
        # init, 200 training steps, the evaluation, the read of W: all kept, all listed
        page.wait_for_function(f"() => ({BAR})({shown}).dataset.flowbookRuns === '203'")
        assert nb.cell(shown).locator(".fb-history-select option").count() == 204  # + "live"
        page.wait_for_function(f"() => ({BAR})({shown}).dataset.flowbookReplay !== 'playing'")

        _pick(nb, shown, "select", 3)  # the 3rd run: a training step
        page.wait_for_function(f"() => ({BAR})({shown}).dataset.flowbookPicked === '3'")
        page.wait_for_function(  # the kept run arrived and is drawn: the gradients lit
            f"() => ({STATUSES})({shown})['gradients'] === 'done'", timeout=20_000
        )
        train = page.evaluate(STATUSES, shown)
        assert bar.locator(".fb-history-position").inner_text() == "run 3 \u00b7 203 runs kept"
        nb.cell(shown).scroll_into_view_if_needed()
        nb.shot("history-03-run-3-training-step")
        lit = {k for k, v in train.items() if v == "done"}
        dimmed = {k for k, v in train.items() if v.endswith("dim")}
        assert {"W", "b", "MatMul", "gradients", "GradientDescent"} <= lit
        assert "Equal" in dimmed and "ArgMax" in dimmed  # accuracy is not part of a step

        _pick(nb, shown, "select", 202)  # the evaluation: the forward pass and accuracy only
        page.wait_for_function(f"() => ({STATUSES})({shown})['Equal'] === 'done'", timeout=20_000)
        evaluation = page.evaluate(STATUSES, shown)
        assert evaluation["gradients"].endswith("dim") and evaluation["MatMul"] == "done"
        nb.shot("history-03-run-202-evaluation")

        _pick(nb, shown, "compare", 3)  # the evaluation against a training step
        page.wait_for_function(
            f"() => Number(({BAR})({shown}).dataset.flowbookChanged) > 0", timeout=20_000
        )
        changed = page.evaluate(
            "(i) => [...document.querySelectorAll('.jp-Notebook .jp-Cell')[i]"
            ".querySelectorAll('.fb-node.fb-changed')].map(e => e.getAttribute('data-name'))",
            shown,
        )
        assert "MatMul" in changed  # other digits went through the forward pass
        nb.shot("history-03-compare-202-with-3")
    finally:
        page.close()


CELLS = [
    """import flowbook as tf
x = tf.placeholder(tf.float32, name="x")
h = tf.multiply(x, 2.0, name="h")
out = tf.add(tf.square(h, name="sq"), 1.0, name="out")
view = tf.show()
view""",
    """sess = tf.Session()
print(sess.run(out, {x: 3.0}))
print(f"took {view.runs[-1]['total_us']:.0f} us")""",
    "view.replay(-1)",
]


def _frames(nb: Notebook, i: int, start) -> list:
    """Start sampling the widget in cell ``i``, call ``start()``, then return the replay's frames."""
    nb.page.evaluate(f"(i) => {{ window.__replayFrames = ({SAMPLE})([i, 8000]); }}", i)
    start()
    nb.page.wait_for_function(f"() => Number(({BAR})({i}).dataset.flowbookReplayStep) >= 2")
    nb.shot("history-replay-midway")
    return nb.page.evaluate("() => window.__replayFrames")


def _check_steps(frames: list, ops: int, run_us: int) -> None:
    steps = [f[1] for f in frames]
    assert len(frames) >= 4 and steps == list(range(ops)), frames  # then the end: the run whole
    assert [f[2] for f in frames] == sorted(f[2] for f in frames)  # more ops done each step
    assert sum(1 for f in frames if f[3]) >= 3  # intermediate frames: one op running at a time
    span_ms = frames[-1][0] - frames[0][0]
    assert span_ms >= 1000, frames  # paced over a visible time, however fast the run was ...
    assert span_ms * 1000 >= 20 * run_us, (span_ms, run_us)  # ... and far slower than the run


def test_replay_of_a_fast_run_takes_visible_steps(open_notebook):
    nb = open_notebook("history_replay.ipynb", CELLS)
    nb.run(0)
    nb.run(1)
    took = nb.cell(1).locator(".jp-OutputArea-output").last.inner_text()
    run_us = int(took.split()[-2])  # a few ops: about a millisecond on a quiet machine
    nb.page.wait_for_function(f"() => ({BAR})(0).dataset.flowbookRuns === '1'")
    # the button
    frames = _frames(nb, 0, lambda: nb.cell(0).locator(".fb-history-replay").click())
    _check_steps(frames, 5, run_us)  # Const, h, sq, Const_1, out
    assert nb.page.evaluate(f"({BAR})(0).dataset.flowbookReplay") == "done"
    assert set(nb.page.evaluate(STATUSES, 0).values()) == {"done", "fed dim"}  # x was fed
    # and from Python: widget.replay(run)
    frames = _frames(nb, 0, lambda: nb.run(2))
    _check_steps(frames, 5, run_us)
