"""The tutorials in Jupyter Notebook 7, the same front end in Notebook's own shell.

Tutorials 01 and 03 run all their cells in ``jupyter notebook`` (Notebook 7,
the app exposed to the page like JupyterLab's); then the last in-cell graph
widget draws its ops inside its frame, the side panel opens in Notebook's
right side bar with its graph in frame and the op count of the notebook's
graph, and the page logs no JavaScript error.  Screenshots land in
``test-output/browser/screens/nb7-<tutorial>-1600x1000.png``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from test_classroom import (
    LARGE,
    PANEL,
    PANEL_VIEW,
    TUTORIALS,
    in_frame,
    last_widget,
    open_panel,
    run_all,
    wait_ops,
)
from test_screens import console_errors, screen, settle, shut_down, tracebacks

from conftest import SHOTS, Lab, Notebook, _missing

pytestmark = pytest.mark.browser

# Notebook 7.6's own, on every page (its file browser too, flowbook's extension disabled):
# its keyboard-shortcuts plugin reads the schema of a plugin that the settings registry has
# not loaded when another plugin's settings change
NOTEBOOK7_OWN = ("uncaught: Cannot read properties of undefined (reading 'schema')",)


@pytest.fixture(scope="module")
def nb7():
    """A Jupyter Notebook 7 server, set up like the ``lab`` fixture's JupyterLab."""
    reason = _missing()
    if reason:
        pytest.skip(reason)
    pytest.importorskip("notebook", minversion="7.4")
    server = Lab(app="notebook")
    yield server
    server.stop()


@pytest.fixture
def nb7_page(request, nb7, chromium):
    pages = []

    def new(size: tuple[int, int]):
        page = chromium.new_page(viewport={"width": size[0], "height": size[1]})
        pages.append(page)
        return page

    yield new
    for k, page in enumerate(pages):
        if getattr(request.node, "failed_call", False):
            SHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SHOTS / f"FAILED-{request.node.name}-{k}.png"))
        page.close()


def open_in_notebook7(server: Lab, page, tutorial: str) -> Notebook:
    """Copy ``tutorial`` (and the data it reads) to the server's root and open it in ``page``."""
    if not (server.root / "data").exists():
        shutil.copytree(TUTORIALS / "data", server.root / "data")
    name = f"nb7-{tutorial}"
    shutil.copy(TUTORIALS / tutorial, server.root / name)
    page.goto(f"{server.url}/notebooks/{name}?token={server.token}")
    page.wait_for_function("() => !!window.jupyterapp", timeout=60_000)
    nb = Notebook(page, name)
    nb.wait_kernel_idle()
    return nb


@pytest.mark.parametrize("name", ["01_graphs_and_sessions.ipynb", "03_digits_softmax.ipynb"])
def test_tutorial_runs_in_notebook7_with_the_panel_in_frame(nb7, nb7_page, name):
    page = nb7_page(LARGE)
    errors = console_errors(page)
    nb = open_in_notebook7(nb7, page, name)
    try:
        run_all(nb)
        assert not tracebacks(nb), tracebacks(nb)
        w = last_widget(nb)
        w.scroll_into_view_if_needed()
        in_frame(page, w, "last widget", cell_ok=True)

        open_panel(page)
        side = page.locator(PANEL_VIEW)
        ops = int(w.get_attribute("data-flowbook-ops") or "0")
        assert ops > 0
        wait_ops(page, f"document.querySelector({json.dumps(PANEL_VIEW)})", ops)
        panel_box = page.locator(PANEL).bounding_box()
        assert panel_box and panel_box["width"] >= 240, panel_box
        assert panel_box["x"] + panel_box["width"] <= LARGE[0] + 1, panel_box
        in_frame(page, side, "side panel", cell_ok=True)
        settle(page, side)
        w.scroll_into_view_if_needed()
        screen(page, f"nb7-{Path(name).stem}-{LARGE[0]}x{LARGE[1]}")
        errors = [e for e in errors if e not in NOTEBOOK7_OWN]
        assert not errors, errors
    finally:
        shut_down(nb)
