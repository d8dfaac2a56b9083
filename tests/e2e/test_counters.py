"""Counters that agree, failed runs that end clean, overlays beside the graph.

- One run numbering: after Run All of tutorial 03, the summary's run number
  ("run 202: done") is the Runs row's ("live: run 202 · ... kept").
- The stepper counts op runs apart from the plan's ops: tutorial 09's
  stepper bar never says "N of M ops" with N > M, before or after Continue.
- A run that fails midway (an uninitialised variable) leaves no op pending:
  the ops it never reached are idle again, the failed op is drawn as an
  error with its whole message in its tooltip, and the error strip above the
  graph holds the whole message too (wrapped, never cut).
- Tutorial 05's "What the optimiser did" strip and the other overlays sit
  beside the graph: no overlay's box meets a node's box.

Screenshots land in ``test-output/browser/`` (``counters-*``).
"""

from __future__ import annotations

import re

import pytest
import test_classroom
from test_classroom import LARGE, SMALL, open_tutorial, run_all, shot

import flowbook as fb
from conftest import SHOTS

from standin_states import live_states, show

pytestmark = pytest.mark.browser
page_at = test_classroom.page_at  # a page at a given window size (closed after the test)

# every "N of M" a view's counters show, as [N, M] pairs
OF_JS = r"""(root) => {
  const texts = [...root.querySelectorAll('.fb-stepbar-message, .fb-summary, .fb-history-position')]
    .map(e => e.textContent || '');
  return texts.flatMap(t => [...t.matchAll(/(\d+) of (\d+)/g)].map(m => [+m[1], +m[2], t]));
}"""

# the stepper bar's line in a run with loops: op runs, never "N of M ops"
LOOP_STEPPER = (
    r"(iteration \d+ · \d+ op runs? · \d+ ready.*|finished: \d+ op runs? · \d+ ops in the plan)"
)

# the overlays beside a view's graph that meet a drawn node's box
OVER_JS = """(root) => {
  const vp = root.querySelector('.fb-viewport').getBoundingClientRect();
  const clipped = r => ({ left: Math.max(r.left, vp.left), right: Math.min(r.right, vp.right),
                          top: Math.max(r.top, vp.top), bottom: Math.min(r.bottom, vp.bottom) });
  const overlays = [...root.querySelectorAll(
    '.fb-rw-pane, .fb-error-strip, .fb-legend, .fb-stepbar, .fb-history, .fb-toolbar, .fb-frame-count, .fb-queue-level'
  )].filter(e => e.checkVisibility() && (e.textContent || '').trim() !== '');
  const nodes = [...root.querySelectorAll('.fb-scene .fb-node')]
    .map(n => [n, clipped(n.querySelector('.fb-shape').getBoundingClientRect())])
    .filter(([, r]) => r.right > r.left && r.bottom > r.top);
  const meet = (a, b) => a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1;
  const hits = [];
  for (const o of overlays) {
    const ro = o.getBoundingClientRect();
    for (const [n, r] of nodes) {
      if (!n.contains(o) && meet(ro, r)) {  // a node's own badge sits on its box
        hits.push([String(o.className.baseVal ?? o.className), n.dataset.name]);
      }
    }
  }
  return { overlays: overlays.length, nodes: nodes.length, hits };
}"""


def _views(page):
    """The graph views in the notebook in front, and the side panel's."""
    return page.locator(
        ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea .flowbook-graph,"
        " #flowbook-graph-panel .flowbook-graph"
    )


def test_run_numbers_agree_after_run_all_of_03(lab, page_at):
    page = page_at(LARGE)
    nb = open_tutorial(lab, page, "03_digits_softmax.ipynb", "counters")
    run_all(nb)
    views = _views(page)
    assert views.count() >= 1
    for k in range(views.count()):
        v = views.nth(k)
        if v.locator(".fb-history").is_hidden():
            continue
        page.wait_for_function(  # the run list's index may trail the newest run by 0.5 s
            """(v) => v.querySelector('.fb-summary').dataset.seq
                 === v.querySelector('.fb-history').dataset.flowbookSeq""",
            arg=v.element_handle(),
            timeout=10_000,
        )
        seq = v.locator(".fb-summary").get_attribute("data-seq")
        assert f"run {seq}:" in v.locator(".fb-summary").inner_text()
        position = v.locator(".fb-history-position").inner_text()  # "run": a replayed run shown
        assert re.match(f"(live: )?run {seq} ", position), (seq, position)
        assert all(n <= m for n, m, _ in v.evaluate(OF_JS)), v.evaluate(OF_JS)
    views.last.scroll_into_view_if_needed()
    shot(page, "counters-03-run-numbers-1600x1000")


def test_stepper_counts_op_runs_apart_from_the_plans_ops_in_09(lab, page_at):
    page = page_at(SMALL)
    nb = open_tutorial(lab, page, "09_loops_and_recurrent_nets.ipynb", "counters")
    run_all(nb, timeout_s=400)
    view = page.locator(
        ".jp-OutputArea .flowbook-graph", has=page.locator(".fb-stepbar:not([hidden])")
    ).first
    view.wait_for(timeout=20_000)
    bar = view.locator(".fb-stepbar")
    message = bar.locator(".fb-stepbar-message")
    page.wait_for_function("(m) => m.textContent !== ''", arg=message.element_handle())
    view.scroll_into_view_if_needed()
    text = message.text_content() or ""  # finished, or stopped in a loop
    assert re.fullmatch(LOOP_STEPPER, text), text
    assert all(n <= m for n, m, _ in view.evaluate(OF_JS)), view.evaluate(OF_JS)
    shot(page, "counters-09-stepper-1024x768")
    bar.locator(".fb-reset").click()  # the session is closed: the stepper can only start again
    page.wait_for_function(
        "(m) => m.textContent.startsWith('iteration 0 · 0 op runs')", arg=message.element_handle()
    )
    text = message.text_content() or ""
    assert re.fullmatch(LOOP_STEPPER, text), text
    assert all(n <= m for n, m, _ in view.evaluate(OF_JS)), view.evaluate(OF_JS)
    shot(page, "counters-09-stepper-reset-1024x768")
    for k in range(_views(page).count()):  # the loops' counters sit on their own boxes
        v = _views(page).nth(k)
        if not v.is_visible():
            continue
        v.scroll_into_view_if_needed()
        assert v.evaluate(OVER_JS)["hits"] == [], (k, v.evaluate(OVER_JS))


def test_a_failed_run_leaves_no_op_pending(standin_page):
    page = standin_page
    g = fb.Graph()
    with g.as_default():
        x = fb.constant([1.0, 2.0], name="x")
        v = fb.Variable([3.0, 4.0], name="v")
        y = fb.multiply(x, v, name="y")
        z = fb.add(y, 1.0, name="z")
        fb.reduce_sum(z, name="total")

    def run(s):
        with pytest.raises(fb.errors.FailedPreconditionError):
            s.run(g.get_tensor_by_name("total:0"))

    state = live_states(g, run)
    assert state["run"]["phase"] == "error"
    show(page, state)
    page.locator('.fb-node[data-status="error"]').first.wait_for(timeout=20_000)
    statuses = page.evaluate(
        "() => Object.fromEntries([...document.querySelectorAll('.fb-node')]"
        ".map(n => [n.dataset.name, n.dataset.status]))"
    )
    assert "pending" not in statuses.values(), statuses
    failed = state["run"]["error"]["node"]
    assert statuses[failed] == "error", statuses
    for name in ("z", "total"):  # never reached: idle again
        assert statuses[name] == "idle", statuses
    message = state["run"]["error"]["message"]
    strip = page.locator(".fb-error-strip")  # the whole error, beside the graph
    assert strip.is_visible() and strip.get_attribute("data-node") == failed
    assert strip.locator(".fb-error-strip-text").text_content() == message
    assert page.locator(".fb-errmsg").count() == 0  # no label over the boxes
    page.locator(f'.fb-node[data-name="{failed}"]').hover()
    tip = page.locator(".fb-tip-error")
    tip.wait_for(timeout=5_000)
    assert tip.text_content() == message
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "counters-failed-run.png"))


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["1024x768", "1600x1000"])
def test_overlays_sit_beside_the_graph_in_05(lab, page_at, size):
    page = page_at(size)
    nb = open_tutorial(lab, page, "05_debugging_and_timing.ipynb", f"overlays{size[0]}")
    run_all(nb, timeout_s=400)
    view = page.locator(
        ".jp-OutputArea .flowbook-graph", has=page.locator(".fb-rw-pane:not([hidden])")
    ).first
    view.wait_for(timeout=20_000)
    view.scroll_into_view_if_needed()
    page.wait_for_timeout(500)
    found = view.evaluate(OVER_JS)
    shot(page, f"counters-05-optimiser-{size[0]}x{size[1]}")
    assert found["nodes"] > 0 and found["overlays"] > 0, found
    assert found["hits"] == [], found
    views = _views(page)
    for k in range(views.count()):
        v = views.nth(k)
        if not v.is_visible():
            continue
        v.scroll_into_view_if_needed()
        assert v.evaluate(OVER_JS)["hits"] == [], (k, v.evaluate(OVER_JS))
