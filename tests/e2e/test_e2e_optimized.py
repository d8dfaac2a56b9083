"""The live graph as written and as optimised, in headless Chromium on the stand-in page.

An MLP training step's rewrite (``tf.optimized_plan``) is sent as the widget's
``optimized`` trait: the toggle appears, "As optimised" redraws the graph
(folded values as constant boxes, the variables' ``read`` snapshots gone, the
sentences listed), present mode keeps the sentences and the new boxes'
labels at 16 px or more, and "As written" brings the graph back.
Screenshots land in ``test-output/browser/``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import flowbook as fb

from standin_states import live_states, set_trait, show

pytestmark = pytest.mark.browser

SHOTS = Path(__file__).resolve().parents[2] / "test-output" / "browser"


def _mlp_step():
    g = fb.Graph()
    with g.as_default():
        x = fb.placeholder(fb.float32, [None, 4], name="x")
        y = fb.placeholder(fb.float32, [None, 3], name="y")
        w = fb.Variable(fb.ones([4, 3]) * 0.1, name="W")
        h = fb.nn.relu(fb.matmul(x, w))
        loss = fb.reduce_mean(fb.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=h))
        step = fb.train.GradientDescentOptimizer(0.1).minimize(loss)
        init = fb.global_variables_initializer()
    feed = {"x:0": np.ones((5, 4), np.float32), "y:0": np.eye(3, dtype=np.float32)[[0, 1, 2, 0, 1]]}
    return g, init, step, feed


def _nodes(page) -> set[str]:
    return set(page.eval_on_selector_all(".fb-node", "els => els.map(e => e.dataset.name)"))


def _wait_layout(page, before: int) -> None:
    page.wait_for_function(
        "n => Number(document.querySelector('[data-flowbook-nodes]').dataset.flowbookLayouts) > n",
        arg=before,
    )


def _layouts(page) -> int:
    return int(
        page.evaluate(
            "() => document.querySelector('[data-flowbook-nodes]').dataset.flowbookLayouts || '0'"
        )
    )


def test_toggle_draws_the_optimised_plan_and_lists_the_rewrites(standin_page):
    page = standin_page
    g, init, step, feed = _mlp_step()
    rewrite = {}

    def run(s):
        s.run(init)
        s.run(step, feed)
        rewrite["diff"] = fb.optimized_plan(step, feed, session=s).diff()

    state = live_states(g, run)
    show(page, state)
    assert page.locator(".fb-rw-toggle").is_hidden()  # no rewrite sent yet
    diff = json.loads(json.dumps(rewrite["diff"]))
    set_trait(page, "optimized", {**diff, "show": False})
    page.wait_for_selector(".fb-rw-toggle:not([hidden])")
    assert page.locator(".fb-rw-pane").is_hidden()
    written = _nodes(page)
    before = _layouts(page)
    page.locator(".fb-rw-optimised").click()
    _wait_layout(page, before)
    page.wait_for_selector('.fb-node[data-rw="const"]')
    optimised = _nodes(page)
    assert optimised != written
    consts = page.eval_on_selector_all(
        '.fb-node[data-rw="const"] .fb-label', "els => els.map(e => e.textContent)"
    )
    assert any(" = " in c for c in consts)  # "Shape = [5, 3]": the value it folded to
    notes = page.locator(".fb-rw-notes li")
    assert notes.count() == len(diff["notes"]) > 0
    assert page.locator(".fb-rw-summary").text_content() == diff["summary"]
    # present mode: the sentences and the new boxes' labels stay readable on a projector
    set_trait(page, "present", True)  # collapses the scopes; switching opens the new boxes'
    page.locator(".fb-rw-written").click()
    before = _layouts(page)
    page.locator(".fb-rw-optimised").click()
    _wait_layout(page, before)
    page.wait_for_selector('.fb-node[data-rw="const"]')
    page.wait_for_timeout(500)
    px = page.evaluate("""() => {
      const pane = parseFloat(getComputedStyle(document.querySelector('.fb-rw-notes li')).fontSize);
      const labels = [...document.querySelectorAll('.fb-node[data-rw="const"] .fb-label')].map(t => {
        const m = t.getScreenCTM();
        return parseFloat(getComputedStyle(t).fontSize) * Math.hypot(m.a, m.b);
      });
      return { pane, labels };
    }""")
    assert px["pane"] >= 16 and px["labels"] and min(px["labels"]) >= 16, px
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "60-as-optimised.png"))
    before = _layouts(page)
    page.locator(".fb-rw-written").click()
    _wait_layout(page, before)
    assert page.locator(".fb-rw-pane").is_hidden()
    assert page.locator(".fb-node[data-rw]").count() == 0
