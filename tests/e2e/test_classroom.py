"""A teacher projecting the tutorials: real JupyterLab at 1024x768 and 1600x1000.

- The side panel follows the notebook in front: after tutorial 01 and then
  03 have run, it shows 03's default graph (its op count is that of 03's
  graph), and 01's again when 01's tab is picked.
- Always in frame: after Run All of 01, 09 and 11, every box drawn in the
  side panel and in the notebook's last graph widget lies inside its
  viewport, at 1600x1000 and after the window shrinks to 1024 wide.
- Projector layout: at 1024x768 the panel opening beside a notebook leaves
  the notebook column at least 500 px wide (the file browser collapses) and
  a widget's toolbar takes at most two rows.
- Tutorial 04 shows its models' graphs; JupyterLab's news toast stays away
  (the settings override the package installs).

Screenshots land in ``test-output/browser/`` (``classroom-*``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import flowbook as fb
from conftest import OUTSIDE_JS, SHOTS, Notebook

from standin_states import live_states, show

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
TUTORIALS = ROOT / "tutorials"
SMALL = (1024, 768)  # a projector
LARGE = (1600, 1000)
PANEL = "#flowbook-graph-panel"
PANEL_VIEW = f"{PANEL} .flowbook-graph"

# the boxes drawn in one view that stick out of its viewport (and how many were drawn)
# how many rows a toolbar's parts take (a part starts a row when it is below the row so far)
ROWS_JS = """(bar) => {
  const rects = [...bar.children].filter(c => c.offsetParent !== null && !c.matches('.fb-more-menu'))
    .map(c => c.getBoundingClientRect()).filter(r => r.height > 0).sort((a, b) => a.top - b.top);
  let rows = 0, bottom = -Infinity;
  for (const r of rects) {
    if (r.top >= bottom - 2) { rows++; bottom = r.bottom; } else { bottom = Math.max(bottom, r.bottom); }
  }
  return rows;
}"""


def open_tutorial(lab, page, tutorial: str, tag: str) -> Notebook:
    """Copy ``tutorial`` (and the data it reads) to the server's root as ``<tag>-<tutorial>``
    (a fresh notebook and kernel for each test) and open it in ``page``."""
    if not (lab.root / "data").exists():
        shutil.copytree(TUTORIALS / "data", lab.root / "data")
    name = f"{tag}-{tutorial}"
    shutil.copy(TUTORIALS / tutorial, lab.root / name)
    if page.url.startswith(lab.url):  # a page showing JupyterLab already: open it there
        page.evaluate(
            "async (path) => { await window.jupyterapp.commands.execute('docmanager:open', { path }); }",
            name,
        )
    else:
        page.goto(f"{lab.url}/lab/workspaces/{Path(name).stem}/tree/{name}?token={lab.token}")
    nb = Notebook(page, name)
    nb.wait_kernel_idle()
    return nb


def run_all(nb: Notebook, timeout_s: float = 300) -> None:
    """Run All, and wait until every code cell ran and the kernel is idle."""
    nb.page.evaluate(
        "async () => {"
        + nb._panel_js()
        + """
            app.shell.activateById(panel.id);
            await app.commands.execute('notebook:run-all-cells');
        }"""
    )
    nb.page.wait_for_function(
        "() => {"
        + nb._panel_js()
        + """
            const cells = panel.content.widgets.filter(c => c.model.type === 'code');
            return cells.every(c => c.model.executionCount !== null);
        }""",
        timeout=timeout_s * 1000,
    )
    nb.wait_kernel_idle(timeout_s)


def activate(nb: Notebook) -> None:
    nb.page.evaluate("() => {" + nb._panel_js() + "app.shell.activateById(panel.id); }")


def open_panel(page) -> None:
    page.evaluate(
        "async () => { await window.jupyterapp.commands.execute('flowbook:open-graph-panel'); }"
    )
    page.locator(PANEL).wait_for(state="visible", timeout=30_000)


def panel_ops(page) -> int:
    return int(page.locator(PANEL_VIEW).get_attribute("data-flowbook-ops") or "0")


def last_widget(nb: Notebook):
    """The last graph widget in the notebook in front."""
    return nb.page.locator(
        ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea .flowbook-graph"
    ).last


def wait_ops(page, selector_js: str, n: int, timeout_s: float = 30) -> None:
    page.wait_for_function(
        "([js, n]) => { const r = eval(js); return !!r && r.dataset.flowbookOps === String(n); }",
        arg=[selector_js, n],
        timeout=timeout_s * 1000,
    )


def in_frame(page, locator, what: str, timeout_s: float = 20, cell_ok: bool = False) -> dict:
    """Wait until every box drawn in the view lies inside its viewport (``cell_ok``: or the
    view frames the ops of the cell run last, the graph being too big to read whole)."""
    deadline = page.evaluate("() => performance.now()") + timeout_s * 1000
    state = locator.evaluate(OUTSIDE_JS)
    while (
        state["drawn"] == 0
        or min(state["vp"]) < 50
        or (state["out"] and not (cell_ok and state["framed"].startswith("cell")))
    ):
        if page.evaluate("() => performance.now()") > deadline:
            raise AssertionError(f"{what}: boxes out of frame: {state}")
        page.wait_for_timeout(200)
        state = locator.evaluate(OUTSIDE_JS)
    return state


def shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"classroom-{name}.png"))


@pytest.fixture
def page_at(request, lab, browser):
    pages = []

    def new(size: tuple[int, int]):
        page = browser.new_page(viewport={"width": size[0], "height": size[1]})
        pages.append(page)
        return page

    yield new
    for k, page in enumerate(pages):
        if getattr(request.node, "failed_call", False):
            SHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SHOTS / f"FAILED-{request.node.name}-{k}.png"))
        page.close()


def test_the_panel_follows_the_notebook_in_front(lab, page_at):
    page = page_at(LARGE)
    first = open_tutorial(lab, page, "01_graphs_and_sessions.ipynb", "follow")
    run_all(first)
    open_panel(page)
    widget_js = (
        "document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)')"
        ".querySelectorAll('.jp-OutputArea .flowbook-graph')"
    )
    last_js = f"[...{widget_js}].pop()"
    n01 = int(page.evaluate(f"() => {last_js}.dataset.flowbookOps"))
    wait_ops(page, f"document.querySelector({json.dumps(PANEL_VIEW)})", n01)

    third = open_tutorial(lab, page, "03_digits_softmax.ipynb", "follow")
    wait_ops(page, f"document.querySelector({json.dumps(PANEL_VIEW)})", 0)  # nothing of 01's
    run_all(third)
    n03 = int(page.evaluate(f"() => {last_js}.dataset.flowbookOps"))
    assert n03 != n01
    wait_ops(page, f"document.querySelector({json.dumps(PANEL_VIEW)})", n03)
    assert "follow-03_digits_softmax" in page.locator(f"{PANEL} .fb-panel-status").inner_text()
    shot(page, "panel-follows-03-1600x1000")

    activate(first)
    wait_ops(page, f"document.querySelector({json.dumps(PANEL_VIEW)})", n01)
    assert "follow-01_graphs_and_sessions" in page.locator(f"{PANEL} .fb-panel-status").inner_text()
    activate(third)
    wait_ops(page, f"document.querySelector({json.dumps(PANEL_VIEW)})", n03)


@pytest.mark.parametrize(
    "name", ["01_graphs_and_sessions.ipynb", "09_loops_and_recurrent_nets.ipynb"]
)
def test_graphs_stay_in_frame_after_run_all_and_a_resize(lab, page_at, name):
    page = page_at(LARGE)
    nb = open_tutorial(lab, page, name, "frame")
    run_all(nb)
    open_panel(page)
    stem = name[:2]
    side = page.locator(PANEL_VIEW)
    in_frame(page, side, "side panel")
    w = last_widget(nb)
    w.scroll_into_view_if_needed()
    in_frame(page, w, "last widget")
    before = [side.evaluate(OUTSIDE_JS), w.evaluate(OUTSIDE_JS)]
    shot(page, f"{stem}-in-frame-1600x1000")

    # the window shrinks: both views frame again (the whole graph, or the cell just run)
    page.set_viewport_size({"width": SMALL[0], "height": SMALL[1]})
    w.scroll_into_view_if_needed()
    after = [
        in_frame(page, side, "side panel at 1024x768", cell_ok=True),
        in_frame(page, w, "last widget at 1024x768", cell_ok=True),
    ]
    for b, a in zip(before, after):
        if a["vp"] != b["vp"]:
            assert a["transform"] != b["transform"], (b, a)
    shot(page, f"{stem}-in-frame-1024x768")


def test_projector_layout_leaves_the_notebook_room(lab, page_at):
    page = page_at(SMALL)
    nb = open_tutorial(lab, page, "11_distributed.ipynb", "room")
    run_all(nb)
    # the file browser open, the panel closed: then the panel opens
    page.evaluate(
        "() => { window.jupyterapp.shell.collapseRight(); window.jupyterapp.shell.expandLeft(); }"
    )
    page.wait_for_function(f"() => !document.querySelector({json.dumps(PANEL)}).checkVisibility()")
    open_panel(page)
    page.wait_for_timeout(500)
    width = page.evaluate(
        "() => document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)').getBoundingClientRect().width"
    )
    panel = page.evaluate(
        f"() => document.querySelector({json.dumps(PANEL)}).getBoundingClientRect().width"
    )
    assert width >= 500, (width, panel)
    assert panel <= 0.4 * SMALL[0] + 1
    w = last_widget(nb)
    w.scroll_into_view_if_needed()
    bar = w.locator(".fb-toolbar")
    rows = bar.evaluate(ROWS_JS)
    shot(page, "11-projector-1024x768")
    assert rows <= 2
    in_frame(page, w, "last widget", cell_ok=True)
    in_frame(page, page.locator(PANEL_VIEW), "side panel", cell_ok=True)


def test_tutorial_04_shows_its_graphs_and_no_news_toast(lab, page_at):
    page = page_at(SMALL)
    nb = open_tutorial(lab, page, "04_digits_deep.ipynb", "graphs")
    run_all(nb, timeout_s=500)
    widgets = page.locator(".jp-OutputArea .flowbook-graph")
    assert widgets.count() >= 3
    for k in range(widgets.count()):
        assert int(widgets.nth(k).get_attribute("data-flowbook-ops") or "0") > 0
    widgets.nth(1).scroll_into_view_if_needed()
    shot(page, "04-graphs-1024x768")
    assert page.locator(".Toastify__toast").count() == 0


def test_a_narrow_toolbar_keeps_two_rows_and_a_more_menu(standin_page):
    page = standin_page
    g = fb.Graph()
    with g.as_default():
        a = fb.constant(2.0, name="a")
        fb.multiply(a, 3.0, name="b")
    show(page, live_states(g, lambda s: s.run(g.get_tensor_by_name("b:0"))))
    page.locator('.fb-node[data-name="b"]').wait_for(timeout=20_000)
    bar = page.locator(".fb-toolbar")
    assert page.locator(".fb-more").is_hidden()  # wide: every button in the bar
    page.set_viewport_size({"width": 260, "height": 700})
    page.wait_for_function("() => !document.querySelector('.fb-more').hidden")
    page.wait_for_timeout(100)
    assert bar.evaluate(ROWS_JS) <= 2
    shot(page, "toolbar-more-menu-closed")
    page.locator(".fb-more").click()
    menu = page.locator(".fb-more-menu")
    menu.wait_for(state="visible")
    assert menu.locator(".fb-collapse-all").count() == 1  # the first to go
    shot(page, "toolbar-more-menu-open")
    menu.locator(".fb-collapse-all").click()  # a button in the menu works, and closes it
    menu.wait_for(state="hidden")
    page.set_viewport_size({"width": 1200, "height": 700})  # wide again: all back in the bar
    page.wait_for_function("() => document.querySelector('.fb-more').hidden")
    assert bar.locator(".fb-collapse-all").is_visible()
