"""The screenshot set: what a class sees of the tutorials, in a real JupyterLab.

For tutorials 01, 03, 04, 05, 09 and 11 at 1024x768 (a projector) and
1600x1000, one Run All each, then four screenshots in
``test-output/browser/screens/<tutorial>-<W>x<H>-<view>.png``:

- ``cell``: the notebook's last graph widget scrolled into view (the side
  panel closed);
- ``cell-present``: the same widget after its toolbar's Present button;
- ``panel``: the side panel open beside the notebook;
- ``panel-present``: the panel after its own Present button.

Each shot checks what a viewer sees: at least one drawn op lies wholly inside
the part of the view the window shows (the classroom tests' measure, each
box's rectangle against the view's viewport, clipped here by the window and
the scrolling notebook too), or, where the side panel has no graph to show
(tutorial 04 builds its models in graphs of their own), the panel says so; no
cell shows a traceback; and the page logs no JavaScript error.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import test_classroom
from test_classroom import (
    LARGE,
    PANEL,
    PANEL_VIEW,
    SMALL,
    last_widget,
    open_panel,
    open_tutorial,
    run_all,
)
from test_present import layouts_of

from conftest import SHOTS

pytestmark = pytest.mark.browser

page_at = test_classroom.page_at  # the fixture: a page at a window size

SCREENS = SHOTS / "screens"
TUTORIALS = [
    "01_graphs_and_sessions.ipynb",
    "03_digits_softmax.ipynb",
    "04_digits_deep.ipynb",
    "05_debugging_and_timing.ipynb",
    "09_loops_and_recurrent_nets.ipynb",
    "11_distributed.ipynb",
]
RUN_ALL_S = 500  # tutorial 04 trains three models
# the side panel shows the kernel's default graph; tutorial 04 builds each model in a graph
# of its own, so its default graph stays empty and the panel says so
EMPTY_PANEL = {"04_digits_deep.ipynb"}

# the ops drawn in one view, and those wholly inside what the page shows of its viewport:
# the viewport's rectangle, clipped by the window and by every ancestor that clips or scrolls
VISIBLE_JS = """(root) => {
  const vp = root.querySelector('.fb-viewport').getBoundingClientRect();
  let [l, t, r, b] = [Math.max(vp.left, 0), Math.max(vp.top, 0),
                      Math.min(vp.right, innerWidth), Math.min(vp.bottom, innerHeight)];
  for (let e = root.parentElement; e && e !== document.body; e = e.parentElement) {
    const s = getComputedStyle(e);
    if (/auto|scroll|hidden|clip/.test(s.overflowX + s.overflowY)) {
      const c = e.getBoundingClientRect();
      [l, t, r, b] = [Math.max(l, c.left), Math.max(t, c.top), Math.min(r, c.right), Math.min(b, c.bottom)];
    }
  }
  const nodes = [...root.querySelectorAll('.fb-scene .fb-node')];
  const seen = nodes.filter(n => {
    const q = n.getBoundingClientRect();
    return q.width > 0 && q.height > 0 && q.left >= l - 1 && q.right <= r + 1 && q.top >= t - 1 && q.bottom <= b + 1;
  }).map(n => n.dataset.name);
  return { drawn: nodes.length, seen: seen.length, some: seen.slice(0, 5),
           area: [l, t, r, b].map(Math.round), present: root.dataset.flowbookPresent || 'false',
           ops: root.dataset.flowbookOps };
}"""


def console_errors(page) -> list[str]:
    """The JavaScript errors ``page`` logs from now on (console errors and uncaught exceptions)."""
    errors: list[str] = []
    page.on("console", lambda m: errors.append(f"console: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"uncaught: {e}"))
    return errors


def tracebacks(nb) -> list[str]:
    """The errors the notebook's cells show: error outputs, and tracebacks written to stderr."""
    return nb.page.evaluate(
        "() => {"
        + nb._panel_js()
        + """
            const found = [];
            for (const cell of panel.content.widgets.filter(c => c.model.type === 'code')) {
                const outputs = cell.model.outputs;
                for (let i = 0; i < outputs.length; i++) {
                    const o = outputs.get(i).toJSON();
                    const text = [].concat(o.text || []).join('');
                    if (o.output_type === 'error') {
                        found.push(`${o.ename}: ${o.evalue}`);
                    } else if (o.output_type === 'stream' && o.name === 'stderr' && text.includes('Traceback')) {
                        found.push(text.trim().split('\\n').slice(-1)[0]);
                    }
                }
            }
            return found;
        }"""
    )


def some_op_seen(page, locator, what: str, timeout_s: float = 20) -> dict:
    """Wait until at least one drawn op lies wholly inside what the page shows of the view."""
    deadline = page.evaluate("() => performance.now()") + timeout_s * 1000
    state = locator.evaluate(VISIBLE_JS)
    while (
        state["seen"] == 0
        or state["area"][2] - state["area"][0] < 50
        or state["area"][3] - state["area"][1] < 50
    ):
        if page.evaluate("() => performance.now()") > deadline:
            raise AssertionError(f"{what}: no op in sight: {state}")
        page.wait_for_timeout(200)
        state = locator.evaluate(VISIBLE_JS)
    return state


def press_present(page, view) -> None:
    """Switch the view's present mode on with its toolbar's Present button (in the "⋯" menu
    where the bar is too narrow for it), and wait until the view laid out again."""
    before = layouts_of(view)
    button = view.locator(".fb-toolbar .fb-present-toggle")
    if not button.is_visible():
        view.locator(".fb-toolbar .fb-more").click()
    button.click()
    assert view.get_attribute("data-flowbook-present") == "true"
    assert button.get_attribute("aria-pressed") == "true"
    handle = view.element_handle()
    page.wait_for_function(
        "([el, n]) => Number(el.dataset.flowbookLayouts || 0) > n",
        arg=[handle, before],
        timeout=30_000,
    )


def settle(page, view) -> None:
    """Let a replay end and the view's camera come to rest (a refit glides) before a shot."""
    handle = view.element_handle()
    page.wait_for_function(
        "(el) => el.dataset.flowbookReplay !== 'playing'", arg=handle, timeout=30_000
    )
    transform = "(el) => el.querySelector('.fb-scene').getAttribute('transform')"
    last, still = view.evaluate(transform), 0
    for _ in range(40):  # at most 10 s
        page.wait_for_timeout(250)
        now = view.evaluate(transform)
        still = still + 1 if now == last else 0
        if still >= 2:
            return
        last = now


def screen(page, name: str) -> None:
    SCREENS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENS / f"{name}.png"))


def shut_down(nb) -> None:
    """Shut the notebook's kernel down (the server outlives the test)."""
    nb.page.evaluate("async () => {" + nb._panel_js() + "await panel.sessionContext.shutdown(); }")


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("name", TUTORIALS, ids=lambda n: n[:2])
def test_screens(lab, page_at, name, size):
    page = page_at(size)
    errors = console_errors(page)
    stem = f"{Path(name).stem}-{size[0]}x{size[1]}"
    nb = open_tutorial(lab, page, name, f"screens-{size[0]}x{size[1]}")
    try:
        run_all(nb, timeout_s=RUN_ALL_S)
        assert not tracebacks(nb), tracebacks(nb)
        seen = {}

        # the last graph widget, the side panel closed
        page.evaluate("() => window.jupyterapp.shell.collapseRight()")
        page.wait_for_function(
            f"() => !document.querySelector({json.dumps(PANEL)})?.checkVisibility()"
        )
        w = last_widget(nb)
        w.scroll_into_view_if_needed()
        settle(page, w)
        screen(page, f"{stem}-cell")  # first: the shot is kept where the check fails
        seen["cell"] = some_op_seen(page, w, "last widget")

        press_present(page, w)
        w.scroll_into_view_if_needed()
        settle(page, w)
        screen(page, f"{stem}-cell-present")
        seen["cell-present"] = some_op_seen(page, w, "last widget, present")

        # the side panel, beside the notebook
        open_panel(page)
        side = page.locator(PANEL_VIEW)
        if name in EMPTY_PANEL:
            message = side.locator(".fb-message-title")
            message.wait_for(state="visible", timeout=20_000)
            assert "No ops yet" in message.inner_text()
            assert side.get_attribute("data-flowbook-ops") in (None, "0")
        settle(page, side)
        screen(page, f"{stem}-panel")
        if name not in EMPTY_PANEL:
            seen["panel"] = some_op_seen(page, side, "side panel")

        press_present(page, side)
        settle(page, side)
        screen(page, f"{stem}-panel-present")
        if name not in EMPTY_PANEL:
            seen["panel-present"] = some_op_seen(page, side, "side panel, present")

        assert all(s["present"] == str(v.endswith("present")).lower() for v, s in seen.items()), (
            seen
        )
        assert not errors, errors
    finally:
        shut_down(nb)
