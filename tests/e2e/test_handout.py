"""A notebook a teacher can hand out: executed and saved, small, and its graphs visible anywhere.

A shown graph is stored as the live widget (a loader of about a kilobyte; the
view's code is the extension's) followed by a static picture of its last
state (HTML and SVG).  Executed with nbclient and exported with nbconvert,
tutorial 01 must stay small and its HTML, opened in Chromium with no
network, must show every graph; in JupyterLab the picture hides behind the
live view.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import nbformat
import pytest
from nbclient import NotebookClient
from test_classroom import LARGE, TUTORIALS, last_widget, open_tutorial, run_all

from conftest import SHOTS

pytestmark = pytest.mark.browser

WIDGET = "application/vnd.jupyter.widget-view+json"
HANDOUT_MAX_BYTES = 1_000_000


def shows(nb) -> list[tuple[dict, dict]]:
    """Each widget output of ``nb`` with the output after it (its picture)."""
    out = []
    for cell in nb.cells:
        outputs = cell.get("outputs", [])
        for i, o in enumerate(outputs):
            if WIDGET in o.get("data", {}):
                out.append((o, outputs[i + 1] if i + 1 < len(outputs) else {}))
    return out


def test_tutorial_01_executed_is_small_and_its_html_shows_each_graph_offline(tmp_path, chromium):
    shutil.copytree(TUTORIALS / "data", tmp_path / "data")
    nb = nbformat.read(TUTORIALS / "01_graphs_and_sessions.ipynb", as_version=4)
    NotebookClient(
        nb, timeout=300, kernel_name="flowbook", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    saved = tmp_path / "01.ipynb"
    nbformat.write(nb, saved)
    assert saved.stat().st_size < HANDOUT_MAX_BYTES, saved.stat().st_size

    shown = shows(nb)
    assert len(shown) >= 2
    for widget, picture in shown:
        data = picture.get("data", {})
        assert "<svg" in data.get("image/svg+xml", ""), picture
        assert 'class="flowbook-picture"' in data.get("text/html", "")
        # the picture shows the graph's last state: the tutorial's last run, done
        assert "run 4: done" in data["text/plain"], data["text/plain"]
        assert "GraphWidget object at" not in widget["data"]["text/plain"]
    state = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    modules = [m["state"].get("_esm", "") for m in state.values() if "_esm" in m["state"]]
    assert modules and max(len(m) for m in modules) < 4096  # the loader, never the whole view

    subprocess.run(
        [sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", str(saved)],
        check=True,
        capture_output=True,
    )
    page = chromium.new_page(viewport={"width": 1024, "height": 768})
    try:
        asked: list[str] = []
        page.route("http*://**", lambda route: (asked.append(route.request.url), route.abort()))
        page.goto((tmp_path / "01.html").as_uri())
        pictures = page.locator(".flowbook-picture svg")
        assert pictures.count() == len(shown)
        for k in range(pictures.count()):
            pic = pictures.nth(k)
            pic.scroll_into_view_if_needed()
            box = pic.bounding_box()
            assert box and box["width"] > 200 and box["height"] > 200, box
            assert pic.locator("text", has_text="MatMul").count() > 0
        pictures.first.scroll_into_view_if_needed()
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / "handout-01-html-offline.png"))
    finally:
        page.close()


def test_the_picture_hides_behind_the_live_view_in_jupyterlab(lab, chromium):
    page = chromium.new_page(viewport={"width": LARGE[0], "height": LARGE[1]})
    try:
        nb = open_tutorial(lab, page, "01_graphs_and_sessions.ipynb", "handout")
        run_all(nb)
        w = last_widget(nb)
        w.scroll_into_view_if_needed()
        w.locator(".fb-node").first.wait_for(timeout=30_000)
        pictures = page.locator(".jp-OutputArea .flowbook-picture")
        assert pictures.count() >= 2
        visible = pictures.evaluate_all("(els) => els.filter(e => e.offsetParent !== null).length")
        assert visible == 0, json.dumps(visible)
    finally:
        page.close()
