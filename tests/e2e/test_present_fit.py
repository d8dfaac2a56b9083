"""Present mode frames the whole graph, big: tutorials 03 and 09 at 1024x768.

After Run All, present mode is turned on in the side panel and in the
notebook's last graph widget (the toolbar's Present button).  In each view:

- every box drawn lies inside the viewport (scopes close, outermost first,
  until the graph fits at a scale where text is 16 px or more);
- every label's font size times the view's scale is at least 16 px;
- no edge label's rectangle meets a node's box.

The same holds at 1600x1000.  Screenshots land in ``test-output/browser/``
(``present-fit-*``).
"""

from __future__ import annotations

import pytest
from test_classroom import PANEL_VIEW, last_widget, open_panel, open_tutorial, run_all

from conftest import SHOTS

pytestmark = pytest.mark.browser

SMALL = (1024, 768)
LARGE = (1600, 1000)

# one view's boxes, labels and edge labels on screen, and its viewport
STATE_JS = """(root) => {
  const rect = r => ({ x: r.left, y: r.top, r: r.right, b: r.bottom });
  const vp = rect(root.querySelector('.fb-viewport').getBoundingClientRect());
  const nodes = [...root.querySelectorAll('.fb-scene .fb-node')].map(n => {
    const s = n.querySelector('.fb-shape') || n;
    return { name: n.dataset.name, rect: rect(s.getBoundingClientRect()) };
  });
  const texts = ".fb-label, .fb-sub, .fb-edge-label, .fb-cluster-label, .fb-time, .fb-errmsg,"
    + " .fb-stale-badge text, .fb-device-pill text";
  const labels = [...root.querySelectorAll('.fb-scene ' + texts.split(', ').join(', .fb-scene '))]
    .filter(t => t.textContent && t.getBoundingClientRect().width > 0).map(t => {
      const m = t.getScreenCTM();
      return { text: t.textContent, edge: t.classList.contains('fb-edge-label'),
               px: parseFloat(getComputedStyle(t).fontSize) * Math.hypot(m.a, m.b),
               rect: rect(t.getBoundingClientRect()) };
    });
  return { vp, nodes, labels, present: root.dataset.flowbookPresent,
           layouts: Number(root.dataset.flowbookLayouts || 0) };
}"""


def meets(a: dict, b: dict, slack: float = 0.5) -> bool:
    return (
        a["x"] < b["r"] - slack
        and b["x"] < a["r"] - slack
        and a["y"] < b["b"] - slack
        and b["y"] < a["b"] - slack
    )


def problems(state: dict) -> list[str]:
    """What is wrong with one view in present mode (empty: framed whole, big, edge labels clear)."""
    vp, out = state["vp"], []
    if state["present"] != "true":
        out.append("not in present mode")
    if not state["nodes"]:
        out.append("no boxes drawn")
    for n in state["nodes"]:
        r = n["rect"]
        if (
            r["x"] < vp["x"] - 1
            or r["r"] > vp["r"] + 1
            or r["y"] < vp["y"] - 1
            or r["b"] > vp["b"] + 1
        ):
            out.append(f"box {n['name']} out of the view")
    out += [
        f"label {lb['text']!r} at {lb['px']:.1f} px"
        for lb in state["labels"]
        if lb["px"] < 16 - 0.01
    ]
    for lb in state["labels"]:
        if lb["edge"]:
            out += [
                f"edge label {lb['text']!r} over {n['name']}"
                for n in state["nodes"]
                if meets(lb["rect"], n["rect"])
            ]
    return out


def wait_presented(page, locator, what: str, timeout_s: float = 30) -> dict:
    """Wait until the view is framed whole and big in present mode; its state."""
    deadline = page.evaluate("() => performance.now()") + timeout_s * 1000
    state = locator.evaluate(STATE_JS)
    while problems(state):
        if page.evaluate("() => performance.now()") > deadline:
            raise AssertionError(f"{what}: {problems(state)[:10]}")
        page.wait_for_timeout(200)
        state = locator.evaluate(STATE_JS)
    return state


def shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"present-fit-{name}.png"))


@pytest.fixture
def page_small(request, browser):
    page = browser.new_page(viewport={"width": SMALL[0], "height": SMALL[1]})
    yield page
    if getattr(request.node, "failed_call", False):
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"FAILED-{request.node.name}.png"))
    page.close()


@pytest.mark.parametrize("name", ["03_digits_softmax.ipynb", "09_loops_and_recurrent_nets.ipynb"])
def test_present_mode_frames_the_whole_graph_big(lab, page_small, name):
    page = page_small
    nb = open_tutorial(lab, page, name, "present")
    run_all(nb)
    open_panel(page)
    stem = name[:2]
    side = page.locator(PANEL_VIEW)
    side.locator(".fb-scene .fb-node").first.wait_for(timeout=30_000)
    side.locator(".fb-present-toggle").click()
    wait_presented(page, side, f"{stem} side panel")
    w = last_widget(nb)
    w.scroll_into_view_if_needed()
    if w.get_attribute("data-flowbook-present") != "true":
        w.locator(".fb-present-toggle").click()
    w.scroll_into_view_if_needed()
    wait_presented(page, w, f"{stem} last widget")
    shot(page, f"{stem}-1024x768")

    # a bigger window: both views frame the graph again, still whole and big
    page.set_viewport_size({"width": LARGE[0], "height": LARGE[1]})
    w.scroll_into_view_if_needed()
    wait_presented(page, side, f"{stem} side panel at 1600x1000")
    wait_presented(page, w, f"{stem} last widget at 1600x1000")
    shot(page, f"{stem}-1600x1000")
