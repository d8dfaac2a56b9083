"""Finding one's way around the widget, in headless Chromium on the stand-in page.

Search (typing, Enter and Shift+Enter through the matches, Escape), panning
by dragging (which must not select), clicking (which must), and zooming
with the wheel about the pointer.  Screenshots land in ``test-output/browser/``.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import flowbook as fb

from standin_states import live_states, show

pytestmark = pytest.mark.browser

SHOTS = Path(__file__).resolve().parents[2] / "test-output" / "browser"


def _scoped_graph() -> fb.Graph:
    """Three scopes of 30 ops each (collapsed: 90 ops is past the small-graph limit)."""
    g = fb.Graph()
    with g.as_default():
        x = fb.placeholder(fb.float32, [None], name="x")
        v = x
        for scope in ("enc", "mid", "dec"):
            with fb.name_scope(scope):
                for k in range(30):
                    v = fb.add(v, float(k), name=f"step{k}")
    return g


def _transform(page) -> tuple[float, float, float]:
    """(tx, ty, k) of the scene's transform."""
    t = page.locator(".fb-scene").get_attribute("transform")
    tx, ty, k = map(float, re.findall(r"-?[\d.]+", t))
    return tx, ty, k


def _count(page) -> str:
    return page.locator(".fb-search-count").text_content()


def test_search_steps_through_matches_and_opens_their_scopes(standin_page):
    page = standin_page
    g = _scoped_graph()
    state = live_states(g, lambda s: s.run(g.get_tensor_by_name("dec/step29:0"), {"x:0": [1.0]}))
    show(page, state)
    assert page.locator('.fb-node[data-name="enc"]').count() == 1  # collapsed
    search = page.locator(".fb-search")
    search.fill("step7")  # enc/step7, mid/step7, dec/step7
    page.wait_for_function("() => document.querySelector('.fb-search-count').textContent === '1/3'")
    page.wait_for_selector('.fb-node.fb-match-current[data-name="enc/step7"]')
    assert page.locator('.fb-node[data-name="enc"]').count() == 0  # its scope opened
    assert page.locator(".fb-node.fb-match").count() == 2  # the other two, marked
    search.press("Enter")
    page.wait_for_selector('.fb-node.fb-match-current[data-name="mid/step7"]')
    assert _count(page) == "2/3"
    search.press("Enter")
    search.press("Enter")  # wraps round to the first
    page.wait_for_selector('.fb-node.fb-match-current[data-name="enc/step7"]')
    search.press("Shift+Enter")  # backwards: the last
    page.wait_for_selector('.fb-node.fb-match-current[data-name="dec/step7"]')
    assert _count(page) == "3/3"
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "20-search-steps.png"))
    search.press("Escape")  # clears the box and the marks
    page.wait_for_function("() => document.querySelector('.fb-search-count').textContent === ''")
    assert page.locator(".fb-match, .fb-match-current").count() == 0
    search.fill("no such op")
    page.wait_for_function("() => document.querySelector('.fb-search-count').textContent === '0/0'")


def test_drag_pans_without_selecting_click_selects_and_the_wheel_zooms_about_the_pointer(
    standin_page,
):
    page = standin_page
    g = fb.Graph()
    with g.as_default():
        a = fb.constant(np.ones(3, np.float32), name="a")
        fb.multiply(a + 1.0, 2.0, name="out")
    show(page, live_states(g, lambda s: None))
    node = page.locator('.fb-node[data-name="out"]')
    box = node.bounding_box()
    cx, cy = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    tx, ty, k = _transform(page)

    page.mouse.move(cx, cy)  # a press on the node that moves is a drag: it pans
    page.mouse.down()
    page.mouse.move(cx + 40, cy + 25, steps=5)
    page.mouse.up()
    tx2, ty2, k2 = _transform(page)
    assert abs(tx2 - tx - 40) < 0.2 and abs(ty2 - ty - 25) < 0.2 and k2 == k  # 0.1 px written
    assert page.locator(".fb-details").is_hidden()  # nothing selected
    assert page.locator(".fb-node.fb-selected").count() == 0

    box = node.bounding_box()  # a press that stays put is a click: it selects
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.wait_for_selector('.fb-node.fb-selected[data-name="out"]')
    assert "out" in page.locator(".fb-details").text_content()

    before = node.bounding_box()
    px, py = before["x"] + 5, before["y"] + 5  # a point on the node stays under the pointer
    page.mouse.move(px, py)
    page.mouse.wheel(0, -200)  # wheel up: zoom in
    page.wait_for_function(
        f"() => !document.querySelector('.fb-scene')"
        f".getAttribute('transform').endsWith('scale({k2:.4f})')"
    )
    after = node.bounding_box()
    assert after["width"] > before["width"] * 1.2
    scale = after["width"] / before["width"]
    assert abs((px - after["x"]) - (px - before["x"]) * scale) < 1.5
    assert abs((py - after["y"]) - (py - before["y"]) * scale) < 1.5
    page.keyboard.press("Escape")  # Escape outside the search box clears the selection
    page.wait_for_function("() => !document.querySelector('.fb-node.fb-selected')")
