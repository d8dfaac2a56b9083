"""Copy nodes and device placement in the widget, on a simulated GPU, in headless Chromium.

The states come from flowbook itself (a LiveGraph watching runs on
``simulate_gpu()``); the page is the stand-in one (``standin_page``), so no
JupyterLab is needed.  Screenshots land in ``test-output/browser/``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import flowbook as fb
from flowbook.runtime.gpu_sim import simulate_gpu

from standin_states import layouts, live_states, set_trait, show

pytestmark = pytest.mark.browser

SHOTS = Path(__file__).resolve().parents[2] / "test-output" / "browser"


def _copy_names(page) -> list[str]:
    return page.locator('.fb-node[data-kind="copy"]').evaluate_all(
        "els => els.map(e => e.dataset.name)"
    )


def _mlp_on_gpu(build):
    """The mixed-device model (``mixed_devices``) and a function running its init, then it."""
    g, x, total, loss = build()
    with g.as_default():
        init = fb.global_variables_initializer()

    def run(s):
        s.run(init)
        s.run([total, loss], {x: np.ones((2, 3), np.float32)})

    return g, run


def test_copy_nodes_sit_on_the_edges_they_split_and_ops_show_their_device(
    standin_page, mixed_devices
):
    page = standin_page
    with simulate_gpu():
        g, run = _mlp_on_gpu(mixed_devices)
        state = live_states(g, run)
    copies = {c["name"]: c for c in state["run"]["copies"]}
    assert set(copies) == {"x/_copy_to_GPU_0", "layer/h/_copy_to_CPU_0", "loss/_copy_to_CPU_0"}
    show(page, state)
    page.wait_for_selector('.fb-node[data-kind="copy"]')
    assert sorted(_copy_names(page)) == sorted(copies)
    for name in copies:  # the run overlay reaches copy nodes: done, with a time
        node = page.locator(f'.fb-node[data-name="{name}"]')
        assert node.get_attribute("data-status") == "done"
        assert node.locator(".fb-time").count() == 1
    label = page.locator('.fb-node[data-name="x/_copy_to_GPU_0"] .fb-label').text_content()
    assert label == "copy \u2192 GPU:0"
    # x -> copy -> MatMul, not x -> MatMul; the fetch copy hangs off loss alone
    assert page.locator('.fb-edge[data-from="x"][data-to="layer/MatMul"]').count() == 0
    assert page.locator('.fb-edge-copy[data-from="x"][data-to="x/_copy_to_GPU_0"]').count() == 1
    assert (
        page.locator('.fb-edge-copy[data-from="x/_copy_to_GPU_0"][data-to="layer/MatMul"]').count()
        == 1
    )
    assert page.locator('.fb-edge-copy[data-from="loss/_copy_to_CPU_0"]').count() == 0
    # device badges: the GPU ops and the CPU reduction
    badge = '.fb-node[data-name="{}"] .fb-device-badge text'
    assert page.locator(badge.format("layer/MatMul")).text_content() == "GPU:0"
    assert page.locator(badge.format("total")).text_content() == "CPU:0"
    assert page.locator(badge.format("x/_copy_to_GPU_0")).count() == 0  # says it in its label
    # details of a copy: type, devices, value, who reads it
    page.locator('.fb-node[data-name="x/_copy_to_GPU_0"]').click()
    details = page.locator(".fb-details")
    details.wait_for()
    text = details.inner_text()
    for part in ("_CopyHostToDevice", "CPU:0", "GPU:0", "layer/MatMul", "float32 (2, 3)", "time"):
        assert part in text, (part, text)
    assert page.evaluate("() => window.flowbookPage.get('selected')") == "x/_copy_to_GPU_0"
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "12-copy-nodes.png"))
    # an op's details say where it ran
    page.locator('.fb-node[data-name="total"]').click()
    page.wait_for_function(
        "() => document.querySelector('.fb-details').innerText.includes('ran on')"
    )
    assert "CPU:0" in details.inner_text()

    # the same copies in the next run: no new layout; a CPU-only run takes them away
    before = layouts(page)
    set_trait(page, "run", {**state["run"], "seq": state["run"]["seq"] + 1})
    page.wait_for_timeout(300)
    assert layouts(page) == before and len(_copy_names(page)) == 3
    set_trait(page, "run", {**state["run"], "seq": 99, "placement": {}, "copies": []})
    page.wait_for_function(
        "n => Number(document.querySelector('[data-flowbook-nodes]').dataset.flowbookLayouts) > n",
        arg=before,
    )
    assert _copy_names(page) == []
    assert page.locator(".fb-device-badge").count() == 0


def test_collapsed_scopes_keep_copies_between_their_boxes(standin_page):
    page = standin_page
    with simulate_gpu():
        g = fb.Graph()
        with g.as_default():
            x = fb.placeholder(fb.float32, [None], name="x")
            with fb.name_scope("prep"), fb.device("/cpu:0"):
                v = x
                for _ in range(30):
                    v = v + 1.0
            with fb.name_scope("net"):
                for _ in range(30):
                    v = v * 1.5
            with fb.name_scope("mixed"):  # a copy inside one scope: hidden while collapsed
                with fb.device("/cpu:0"):
                    c = fb.add(v, 1.0, name="on_cpu")
                out = fb.multiply(c, 2.0, name="on_gpu")

        state = live_states(g, lambda s: s.run(out, {x: np.ones(4, np.float32)}))
    names = {c["name"] for c in state["run"]["copies"]}
    internal = "mixed/on_cpu/_copy_to_GPU_0"
    assert internal in names and len(names) == 4  # prep up, net down, on_cpu up, on_gpu down
    show(page, state)
    page.wait_for_selector('.fb-node[data-kind="copy"]')
    shown = set(_copy_names(page))
    assert internal not in shown and shown == names - {internal}
    up = next(n for n in shown if n.startswith("prep/"))  # prep (CPU) -> copy -> net (GPU)
    assert page.locator(f'.fb-edge-copy[data-from="prep"][data-to="{up}"]').count() == 1
    assert page.locator(f'.fb-edge-copy[data-from="{up}"][data-to="net"]').count() == 1
    assert page.locator('.fb-edge[data-from="prep"][data-to="net"]').count() == 0
    down = next(n for n in shown if n.startswith("net/"))  # net -> copy -> mixed (on_cpu)
    assert page.locator(f'.fb-edge-copy[data-from="{down}"][data-to="mixed"]').count() == 1
    badge = page.locator('.fb-node[data-name="mixed"] .fb-device-badge text').text_content()
    assert badge == "mixed"
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "13-copy-nodes-collapsed.png"))
    search = page.locator(".fb-search")
    search.fill("_copy_to_")  # search finds copy nodes too, drawn or hidden
    page.wait_for_function("() => document.querySelector('.fb-search-count').textContent === '1/4'")
    search.fill("on_cpu/_copy")  # the hidden one: its scope opens, the copy is marked
    page.wait_for_selector(f'.fb-node.fb-match-current[data-name="{internal}"]')
    assert page.locator('.fb-node[data-name="mixed"]').count() == 0  # opened
    assert page.locator(f'.fb-edge-copy[data-from="mixed/on_cpu"][data-to="{internal}"]').count()


def test_copies_that_fold_onto_the_same_boxes_share_one(standin_page):
    page = standin_page
    with simulate_gpu():
        g = fb.Graph()
        with g.as_default():
            x = fb.placeholder(fb.float32, [None], name="x")
            with fb.name_scope("net"):
                v, outs = x, []
                for k in range(40):
                    v = v * 1.5
                    if k % 15 == 0:
                        outs.append(v)
        state = live_states(g, lambda s: s.run(outs, {x: np.ones(4, np.float32)}))
    fetched = sorted(c["name"] for c in state["run"]["copies"] if c["fetch"])
    assert len(fetched) == 3
    show(page, state)
    page.wait_for_selector('.fb-node[data-kind="copy"]')
    boxes = _copy_names(page)
    merged = next(b for b in boxes if b.startswith(fetched[0].split("/_copy")[0]) and "(+" in b)
    label = page.locator(f'.fb-node[data-name="{merged}"] .fb-label').text_content()
    assert label == "3 copies \u2192 CPU:0"
    page.locator(f'.fb-node[data-name="{merged}"]').click()
    details = page.locator(".fb-details")
    details.wait_for()
    assert all(name in details.inner_text() for name in fetched)
    details.locator(".fb-link", has_text=fetched[1]).click()  # one of them: its own details
    page.wait_for_function(
        "n => document.querySelector('.fb-details-name').textContent === n", arg=fetched[1]
    )
    assert "_CopyDeviceToHost" in details.inner_text()
    page.screenshot(path=str(SHOTS / "14-copy-nodes-merged.png"))
