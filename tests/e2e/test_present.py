"""Presenting in a real JupyterLab at 1024x768: present mode, refits, the side panel.

- Present mode (``tf.show(present=True)``, or the toolbar's Present button):
  on tutorial 03's graph every label (names, op types, shapes on edges, scope
  titles, the run's time pills) is drawn at 16 px or more, no two overlap, no label sticks out of its box, a shortened name keeps the
  whole one for the hover tooltip, and dimmed ops stay readable.
- A graph that the user has not panned or zoomed refits when its container
  resizes: the in-cell widget and the side panel, when the panel opens.
- The side panel opens by itself with the Flowbook kernel (not with another
  kernel, nor when the setting says no) and keeps the ops of the cell run in
  frame (centred, where the graph is too big to read whole).

Sizes and places are read from the page: each text's font size times its
on-screen scale (``getScreenCTM``) and its bounding rectangle.  Screenshots
land in ``test-output/browser/``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import nbformat
import pytest

from conftest import OUTSIDE_JS

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
TUTORIAL = ROOT / "tutorials" / "03_digits_softmax.ipynb"
SMALL = (1024, 768)  # the window a projector shows
PANEL = "#flowbook-graph-panel"

# every label of one view: its screen size (px), rectangle, box and the full name kept
MEASURE_JS = """(root) => {
  const rect = r => ({ x: r.left, y: r.top, r: r.right, b: r.bottom });
  const texts = ".fb-label, .fb-sub, .fb-edge-label, .fb-cluster-label, .fb-time, .fb-errmsg,"
    + " .fb-stale-badge text, .fb-device-pill text";
  return [...root.querySelectorAll(texts)].filter(t => t.textContent && t.getBoundingClientRect().width > 0).map(t => {
    const m = t.getScreenCTM();
    const shape = t.matches('.fb-label, .fb-sub') ? t.closest('.fb-node').querySelector('.fb-shape') : null;
    const frame = t.closest('.fb-cluster-head')
      ? root.querySelector(`.fb-cluster[data-name="${t.closest('.fb-cluster-head').dataset.name}"] .fb-cluster-frame`)
      : null;
    let opacity = 1;
    for (let e = t; e && e !== root; e = e.parentElement) {
      opacity *= Number(getComputedStyle(e).opacity);
    }
    return {
      cls: t.getAttribute('class') || t.parentElement.getAttribute('class'), text: t.textContent, full: t.dataset.full || '',
      node: t.closest('.fb-node')?.dataset.name || '', dim: !!t.closest('.fb-dim'),
      px: parseFloat(getComputedStyle(t).fontSize) * Math.hypot(m.a, m.b),
      rect: rect(t.getBoundingClientRect()),
      box: shape ? rect(shape.getBoundingClientRect()) : frame ? rect(frame.getBoundingClientRect()) : null,
      fill: getComputedStyle(t).fill, opacity,
    };
  });
}"""

# where a view's layout is on screen: its gaps to the viewport's edges (left, right, top, bottom)
FIT_JS = """(root) => {
  const vp = root.querySelector('.fb-viewport');
  const scene = root.querySelector('.fb-scene');
  const t = scene.getAttribute('transform') || '';
  const [tx, ty, k] = (t.match(/-?[\\d.]+/g) || ['0', '0', '1']).map(Number);
  const w = Number(scene.getAttribute('data-width')) * k;
  const h = Number(scene.getAttribute('data-height')) * k;
  const vw = vp.clientWidth, vh = vp.clientHeight;
  return { vw, gaps: [tx, vw - tx - w, ty, vh - ty - h], transform: t };
}"""


def tutorial_cells() -> list[str]:
    """The code cells of tutorial 03, as written."""
    nb = nbformat.read(TUTORIAL, as_version=4)
    return [c.source for c in nb.cells if c.cell_type == "code"]


def overlapping(a: dict, b: dict, slack: float = 0.5) -> bool:
    ra, rb = a["rect"], b["rect"]
    return (
        ra["x"] < rb["r"] - slack
        and rb["x"] < ra["r"] - slack
        and ra["y"] < rb["b"] - slack
        and rb["y"] < ra["b"] - slack
    )


def inside(r: dict, box: dict, slack: float = 1.0) -> bool:
    return (
        r["x"] >= box["x"] - slack
        and r["r"] <= box["r"] + slack
        and r["y"] >= box["y"] - slack
        and r["b"] <= box["b"] + slack
    )


def luminance(css: str) -> float:
    """Relative luminance of an ``rgb(r, g, b)`` colour (WCAG)."""
    parts = [float(v) / 255 for v in css[css.index("(") + 1 : css.index(")")].split(",")[:3]]
    lin = [v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4 for v in parts]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def check_labels(labels: list[dict], where: str) -> None:
    """At least 16 px, none overlapping another, none outside its box, cut names kept whole."""
    assert labels, f"{where}: no labels drawn"
    small = [
        (lb["text"], round(lb["px"], 1)) for lb in labels if lb["px"] < 16 - 0.01
    ]  # 0.01: rounding
    assert not small, f"{where}: labels under 16 px: {small[:8]}"
    pairs = [
        (a["text"], b["text"])
        for i, a in enumerate(labels)
        for b in labels[i + 1 :]
        if overlapping(a, b)
    ]
    assert not pairs, f"{where}: overlapping labels: {pairs[:8]}"
    cut = [lb["text"] for lb in labels if lb["box"] and not inside(lb["rect"], lb["box"])]
    assert not cut, f"{where}: labels sticking out of their boxes: {cut[:8]}"
    shortened = [lb for lb in labels if "\u2026" in lb["text"] and lb["cls"] == "fb-label"]
    lost = [  # a line of code's box ("#<cell>:<line>") keeps its whole line in its hover title
        lb["text"]
        for lb in shortened
        if not lb["node"].startswith("#")
        and (not lb["full"] or not lb["node"].endswith(lb["full"]))
    ]
    assert not lost, f"{where}: shortened names without the whole name kept: {lost}"


def check_dimmed(labels: list[dict], where: str) -> int:
    """Dimmed ops' names: drawn opaque, dark enough on the light canvas (contrast >= 7:1)."""
    dim = [lb for lb in labels if lb["dim"] and lb["cls"] == "fb-label"]
    for lb in dim:
        assert lb["opacity"] >= 0.99, f"{where}: dimmed label {lb['text']} faded: {lb['opacity']}"
        contrast = (1.0 + 0.05) / (luminance(lb["fill"]) + 0.05)  # against a white canvas
        assert contrast >= 7, f"{where}: dimmed label {lb['text']} contrast {contrast:.1f}"
    return len(dim)


def all_in_frame(page, locator, where: str, timeout_s: float = 20, cell_ok: bool = False) -> None:
    """Wait until every box drawn in the view lies inside its viewport (``cell_ok``: or the
    view frames the ops of the cell run last, the whole being too big at 16 px)."""
    deadline = time.monotonic() + timeout_s
    state = locator.evaluate(OUTSIDE_JS)
    while state["drawn"] == 0 or (
        state["out"] and not (cell_ok and state["framed"].startswith("cell"))
    ):
        if time.monotonic() > deadline:
            raise AssertionError(f"{where}: boxes out of frame in present mode: {state}")
        page.wait_for_timeout(200)
        state = locator.evaluate(OUTSIDE_JS)


def measure(locator) -> list[dict]:
    return locator.evaluate(MEASURE_JS)


def wait_layouts(page, root_sel: str, more_than: int, timeout_s: float = 30) -> None:
    page.wait_for_function(
        "([sel, n]) => { const r = document.querySelector(sel);"
        " return !!r && Number(r.dataset.flowbookLayouts || 0) > n; }",
        arg=[root_sel, more_than],
        timeout=timeout_s * 1000,
    )


def layouts_of(locator) -> int:
    return int(locator.evaluate("r => r.dataset.flowbookLayouts || '0'"))


def fitted(state: dict, tol: float = 1.0) -> bool:
    """Where a fit leaves a layout: centred where it fits, else from the padded edge (24 px)."""
    left, right, top, bottom = state["gaps"]

    def axis(a: float, b: float) -> bool:
        return (a >= 0 and b >= 0 and abs(a - b) <= tol) or (abs(a - 24) <= tol and b < 24)

    return axis(left, right) and axis(top, bottom)


def wait_fitted(page, locator, timeout_s: float = 20) -> dict:
    """Wait until the view's drawing is fitted to its viewport; its geometry."""
    deadline = time.monotonic() + timeout_s
    state = locator.evaluate(FIT_JS)
    while not fitted(state):
        if time.monotonic() > deadline:
            raise AssertionError(f"the view never refitted: {state}")
        page.wait_for_timeout(100)
        state = locator.evaluate(FIT_JS)
    return state


def open_panel(nb) -> None:
    nb.page.evaluate("() => window.jupyterapp.commands.execute('flowbook:open-graph-panel')")
    nb.page.locator(PANEL).wait_for(timeout=30_000)


def test_present_mode_labels_are_big_and_apart_on_tutorial_03(open_notebook):
    # the tutorial up to its evaluation run (not the replay, nor the last cell: it closes the session)
    cells = [c for c in tutorial_cells()[:-1] if "replay(" not in c]
    show = next(i for i, c in enumerate(cells) if "tf.show()" in c)
    cells[show] = cells[show].replace("tf.show()", "tf.show(present=True)")
    nb = open_notebook("present03.ipynb", cells, size=SMALL)
    for i in range(len(cells)):
        nb.run(i)
    w = nb.widget(show)
    w.wait_for(timeout=60_000)
    nb.page.wait_for_function(  # the evaluation run is drawn: the training ops dimmed
        "() => document.querySelectorAll('.jp-OutputArea .fb-node.fb-dim').length > 0",
        timeout=30_000,
    )
    assert w.get_attribute("data-flowbook-present") == "true"
    assert w.locator(".fb-present-toggle").get_attribute("aria-pressed") == "true"
    w.scroll_into_view_if_needed()
    labels = measure(w)
    check_labels(labels, "in-cell widget")
    assert check_dimmed(labels, "in-cell widget") > 0
    all_in_frame(nb.page, w, "in-cell widget")
    nb.shot("30-present-in-cell-1024x768")

    # the side panel, switched with its toolbar's button
    open_panel(nb)
    side = nb.page.locator(f"{PANEL} .flowbook-graph")
    side.locator('.fb-node[data-name="W"]').wait_for(timeout=30_000)
    before = layouts_of(side)
    normal = measure(side)
    side.locator(".fb-present-toggle").click()
    wait_layouts(nb.page, f"{PANEL} .flowbook-graph", before)
    assert side.get_attribute("data-flowbook-present") == "true"
    big = measure(side)
    assert min(lb["px"] for lb in normal) < 16 <= min(lb["px"] for lb in big)
    check_labels(big, "side panel")
    check_dimmed(big, "side panel")
    # 357 px wide, the panel cannot hold the lesson's eleven boxes at 16 px: it frames the
    # ops of the cell run last instead, at that size
    all_in_frame(nb.page, side, "side panel", cell_ok=True)
    nb.shot("31-present-side-panel-1024x768")

    # too big to show whole at 16 px, the graph is drawn by line of code: a box's hover
    # title is its whole line
    lines = w.locator('.fb-node[data-name^="#"]')
    assert lines.count() >= 3
    box = next(
        lines.nth(k) for k in range(lines.count()) if "cross_entropy" in lines.nth(k).text_content()
    )
    w.scroll_into_view_if_needed()
    box.locator(".fb-shape").hover()
    tip = w.locator(".fb-tooltip")
    tip.wait_for(timeout=10_000)
    assert "cross_entropy = " in tip.inner_text() and "one line of code" in tip.inner_text()
    nb.shot("32-present-hover-whole-line")


def test_graphs_refit_when_the_side_panel_opens_but_not_after_a_pan(open_notebook):
    cells = [*tutorial_cells()[:2], "tf.show()"]
    nb = open_notebook("refit.ipynb", cells, size=SMALL)
    for i in range(len(cells)):
        nb.run(i)
    page = nb.page
    page.evaluate("() => window.jupyterapp.shell.collapseRight()")
    w = nb.widget(2)
    w.locator('.fb-node[data-name="W"]').wait_for(timeout=30_000)
    w.scroll_into_view_if_needed()
    wide = wait_fitted(page, w)
    nb.shot("33-refit-panel-closed")

    open_panel(nb)
    side = page.locator(f"{PANEL} .flowbook-graph")
    side.locator('.fb-node[data-name="W"]').wait_for(timeout=30_000)
    page.wait_for_function(  # the notebook got narrower
        "([el, vw]) => el.querySelector('.fb-viewport').clientWidth < vw - 50",
        arg=[w.element_handle(), wide["vw"]],
        timeout=10_000,
    )
    narrow = wait_fitted(page, w)
    assert narrow["transform"] != wide["transform"]
    wait_fitted(page, side)
    nb.shot("34-refit-panel-open")

    # panned by the user: the view stays where the user put it
    box = w.locator(".fb-viewport").bounding_box()
    x, y = box["x"] + box["width"] * 0.5, box["y"] + box["height"] * 0.7
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + 60, y - 40, steps=5)
    page.mouse.up()
    panned = w.evaluate(FIT_JS)["transform"]
    assert panned != narrow["transform"]
    page.evaluate("() => window.jupyterapp.shell.collapseRight()")
    page.wait_for_function(
        "([el, vw]) => el.querySelector('.fb-viewport').clientWidth > vw + 50",
        arg=[w.element_handle(), narrow["vw"]],
        timeout=10_000,
    )
    page.wait_for_timeout(300)  # a refit would follow the resize within a frame or two
    assert w.evaluate(FIT_JS)["transform"] == panned
    nb.shot("35-refit-kept-after-pan")


def test_side_panel_opens_by_itself_with_the_flowbook_kernel_and_follows_the_cell(
    open_notebook, lab
):
    nb = open_notebook("opens.ipynb", tutorial_cells()[:2], size=SMALL)
    panel = nb.page.locator(PANEL)
    panel.wait_for(state="visible", timeout=15_000)
    nb.shot("36-panel-opened-by-itself")

    # the panel keeps the ops of the cell being run in frame
    nb.run(0)
    nb.run(1)
    side = nb.page.locator(f"{PANEL} .flowbook-graph")
    side.locator('.fb-node[data-name="W"]').wait_for(timeout=30_000)
    nb.set_source(0, "shown = tf.identity(accuracy, name='shown')")
    nb.run(0)
    nb.page.wait_for_function(  # the op made by the cell just run, in the panel's frame
        """() => {
            const root = document.querySelector('#flowbook-graph-panel .flowbook-graph');
            const vp = root.querySelector('.fb-viewport').getBoundingClientRect();
            const box = root.querySelector('.fb-node[data-name="shown"] .fb-shape');
            if (!box) return false;
            const r = box.getBoundingClientRect();
            if (r.left < vp.left || r.right > vp.right || r.top < vp.top || r.bottom > vp.bottom) return false;
            if (root.dataset.flowbookFramed === 'whole') return true;
            // the graph too big to read whole: the cell's ops are what is framed, in the middle
            const dx = (r.left + r.right) / 2 - (vp.left + vp.right) / 2;
            const dy = (r.top + r.bottom) / 2 - (vp.top + vp.bottom) / 2;
            return Math.abs(dx) < 30 && Math.abs(dy) < 30;
        }""",
        timeout=30_000,
    )
    nb.shot("37-panel-follows-the-cell")

    # not with another kernel
    other = open_notebook("plain.ipynb", ["1 + 1"], kernel="python3", size=SMALL)
    other.page.wait_for_timeout(1500)  # what opens with the Flowbook kernel has opened by now
    assert not other.page.locator(PANEL).is_visible()

    # not when the setting says no
    settings = lab.root / ".settings" / "flowbook" / "plugin.jupyterlab-settings"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"openWithFlowbookKernel": False}))
    try:
        off = open_notebook("off.ipynb", ["1 + 1"], size=SMALL)
        off.page.wait_for_timeout(1500)
        assert not off.page.locator(PANEL).is_visible()
    finally:
        settings.unlink()
