"""The live graph in a real JupyterLab: what a newcomer sees, cell by cell.

Each test opens a notebook with the Flowbook kernel, runs its cells through
JupyterLab's own run command, and asserts on the rendered widget and the
side panel.  Screenshots of every step land in ``test-output/browser/``.
The render times measured here are recorded (``test-output/browser/
widget_browser.json``; the README's figures are a copy of one such run kept in
``benchmarks/results/``), not asserted: timing goals live in benchmarks.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "test-output" / "browser"

BUILD = [
    "import numpy as np\nimport flowbook as tf\ntf.show()",
    'x = tf.placeholder(tf.float32, [None, 3], name="x")\n'
    'W = tf.Variable(np.ones((3, 2), np.float32), name="W")\n'
    'y = tf.matmul(x, W, name="y")',
    'with tf.name_scope("loss"):\n    loss = tf.reduce_sum(y * y, name="total")',
    "sess = tf.Session()\nsess.run(tf.global_variables_initializer())\n"
    "print(sess.run(loss, {x: np.ones((4, 3), np.float32)}))",  # 4 rows x 2 columns of 3*3 = 72
]


def nodes_of(locator) -> list[str]:
    return locator.locator(".fb-node").evaluate_all("els => els.map(e => e.dataset.name)")


def wait_nodes(nb, widget, pred, timeout_s: float = 30) -> list[str]:
    """Wait until the widget's node names satisfy ``pred``; return them."""
    deadline = time.monotonic() + timeout_s
    names: list[str] = []
    while time.monotonic() < deadline:
        names = nodes_of(widget)
        if pred(names):
            return names
        nb.page.wait_for_timeout(100)
    raise AssertionError(f"widget nodes never satisfied the check: {names}")


def status_of(widget, name: str) -> str | None:
    node = widget.locator(f'.fb-node[data-name="{name}"]')
    return node.get_attribute("data-status") if node.count() else None


def test_graph_builds_cell_by_cell_reruns_replace_and_a_run_lights_it_up(open_notebook):
    nb = open_notebook("build.ipynb", BUILD)
    nb.run(0)
    w = nb.widget(0)
    w.wait_for(timeout=60_000)
    assert nodes_of(w) == []
    nb.shot("01-empty")

    nb.run(1)
    first = wait_nodes(nb, w, lambda n: "y" in n and "x" in n)
    nb.shot("02-after-cell-1")
    nb.run(1)  # the same cell again: replaced, not duplicated
    nb.page.wait_for_timeout(500)
    again = wait_nodes(nb, w, lambda n: "y" in n)
    assert sorted(again) == sorted(first)
    assert not [n for n in again if n.endswith("_1")]

    nb.run(2)
    grown = wait_nodes(nb, w, lambda n: len(n) > len(first))
    assert any(n == "loss" or n.startswith("loss/") for n in grown)
    nb.shot("03-after-cell-2")

    nb.run(3)
    nb.page.wait_for_function(
        """() => [...document.querySelectorAll('.jp-OutputArea .fb-node[data-name="y"]')]
                 .some(e => e.dataset.status === 'done')""",
        timeout=30_000,
    )
    assert w.locator(".fb-time").count() > 0
    assert "72" in nb.cell(3).locator(".jp-OutputArea-output").last.inner_text()
    nb.shot("04-after-run")


SCOPED = """g = tf.Graph()
with g.as_default():
    v = tf.constant(1.0, name="v")
    for s in range(6):
        with tf.name_scope(f"block{s}"):
            for k in range(15):
                v = v + 1.0
tf.show(g)"""


def test_a_collapsed_scope_expands_on_click(open_notebook):
    nb = open_notebook("scopes.ipynb", ["import flowbook as tf", SCOPED])
    nb.run(0)
    nb.run(1)
    w = nb.widget(1)
    names = wait_nodes(nb, w, lambda n: "block0" in n)
    assert len(names) < 20  # 6 scopes of 30 ops, collapsed
    nb.shot("05-collapsed")
    w.locator('.fb-node[data-name="block2"]').click()
    expanded = wait_nodes(nb, w, lambda n: any(x.startswith("block2/") for x in n))
    assert "block2" not in expanded  # the scope opened: its members stand in its place
    nb.shot("06-expanded")
    series = [x for x in expanded if x.startswith("block2/") and x.endswith("*")]
    if series:  # 15 unnamed adds in a row fold into one series node; it opens too
        w.locator(f'.fb-node[data-name="{series[0]}"]').click()
        opened = wait_nodes(nb, w, lambda n: len(n) > len(expanded))
        assert sum(x.startswith("block2/add") for x in opened) >= 15
        nb.shot("06b-series-expanded")


def test_side_panel_click_highlights_the_creating_cell(open_notebook):
    nb = open_notebook("panel.ipynb", BUILD[:3])
    for i in range(3):
        nb.run(i)
    panel = nb.page.locator("#flowbook-graph-panel")
    if not panel.is_visible():
        nb.page.evaluate("() => window.jupyterapp.commands.execute('flowbook:open-graph-panel')")
    panel.wait_for(timeout=30_000)
    wait_nodes(nb, panel, lambda n: "y" in n)
    panel.locator('.fb-node[data-name="y"]').click()
    nb.page.wait_for_function(
        """() => { const c = document.querySelectorAll('.jp-Notebook .jp-Cell');
                   return c[1] && c[1].classList.contains('flowbook-highlighted-cell'); }""",
        timeout=10_000,
    )
    highlighted = nb.page.locator(".flowbook-highlighted-cell")
    assert highlighted.count() == 1
    nb.shot("07-panel-highlight")


BAD = [
    "import flowbook as tf\ntf.show()",
    # op names cannot carry markup (TensorFlow's name rule); values and source lines can
    'a = tf.constant("<img src=x onerror=window.__pwned=1>", name="payload")\n'
    'b = tf.identity(a, name="payload_read")  # <script>window.__pwned=2</script>\n'
    "tf.Session().run(b)",
    'half = tf.constant(2.0, name="half_built")\nraise ValueError("boom halfway")',
    "c = tf.constant(0.0)\nfor i in range(3000):\n    c = tf.add(c, 1.0)",
    "print(len(tf.get_default_graph().get_operations()))",
]


def test_bad_input_stays_text_and_the_kernel_keeps_working(open_notebook):
    nb = open_notebook("bad.ipynb", BAD)
    nb.run(0)
    w = nb.widget(0)
    nb.run(1)
    wait_nodes(nb, w, lambda n: "payload_read" in n)
    assert nb.page.evaluate("() => window.__pwned") is None
    assert w.locator("img").count() == 0 and w.locator("script").count() == 0
    nb.run(2)  # raises halfway through building
    wait_nodes(nb, w, lambda n: "half_built" in n)
    nb.run(3)  # 3,000 unnamed ops: grouped, still drawn
    many = wait_nodes(nb, w, lambda n: len(n) >= 4 and "half_built" in n, timeout_s=60)
    assert len(many) < 500
    nb.run(4)
    # 2 names + half_built + c + 3,000 x (an Add and its constant 1.0)
    assert "6004" in nb.cell(4).locator(".jp-OutputArea-output").last.inner_text()
    assert nb.page.evaluate("() => window.__pwned") is None
    nb.shot("08-bad-input")


STEP = [
    BUILD[0],
    BUILD[1] + "\n" + BUILD[2].replace("\n", "\n"),
    "sess = tf.Session()\nsess.run(tf.global_variables_initializer())\n"
    "st = tf.debug.Stepper(sess, loss, {x: np.ones((4, 3), np.float32)})\ntf.show(st)",
]


def test_stepper_buttons_step_and_continue(open_notebook):
    nb = open_notebook("stepper.ipynb", STEP)
    for i in range(3):
        nb.run(i)
    w = nb.widget(2)
    wait_nodes(nb, w, lambda n: "y" in n)
    step = w.locator("button.fb-step")
    step.click()
    nb.page.wait_for_function(
        """() => document.querySelectorAll('.jp-Cell')[2]
                 .querySelector('.fb-node[data-step="current"]')""",
        timeout=10_000,
    )
    w.locator("button.fb-cont").click()
    nb.page.wait_for_function(
        """() => { const w = document.querySelectorAll('.jp-Cell')[2];
                   const y = w.querySelector('.fb-node[data-name="y"]');
                   return y && (y.dataset.status === 'done' || y.dataset.step === 'done'); }""",
        timeout=10_000,
    )
    nb.shot("09-stepper")


RENDER = """import time
g{n} = tf.Graph()
with g{n}.as_default():
    v = tf.constant(1.0, name="v")
    for s in range({n} // 50):
        with tf.name_scope(f"layer{{s}}"):
            for k in range(50):
                v = v + 1.0
t_sent = time.time()
tf.show(g{n})"""


def test_render_times_are_recorded(open_notebook):
    sizes = (100, 1000, 10000)
    cells = ["import flowbook as tf"] + [RENDER.format(n=n // 2) for n in sizes]
    nb = open_notebook("render.ipynb", cells)
    nb.run(0)
    figures = {}
    for i, n in enumerate(sizes, start=1):
        t0 = time.perf_counter()
        nb.run(i, timeout_s=300)
        ran = time.perf_counter()
        w = nb.widget(i)
        w.wait_for(timeout=60_000)
        nb.page.wait_for_function(
            f"""() => {{ const e = document.querySelectorAll('.jp-Cell')[{i}]
                          .querySelector('[data-flowbook-nodes]');
                        return e && Number(e.dataset.flowbookNodes) > 0; }}""",
            timeout=120_000,
        )
        shown = time.perf_counter()
        layout_ms = float(w.get_attribute("data-flowbook-layout-ms") or "nan")
        figures[str(n)] = {
            "ops": n,
            "cell_s": round(ran - t0, 3),
            "update_to_frame_s": round(shown - ran, 3),
            "layout_render_ms": layout_ms,
            "visible_nodes": int(w.get_attribute("data-flowbook-nodes")),
        }
    big = nb.widget(3)
    big.scroll_into_view_if_needed()
    nb.shot("10-render-10k")
    # the 10,000 ops fold into one series of scopes (layer[0-99]); open it by a click
    group = big.locator('.fb-node[data-kind="series"], .fb-node[data-kind="scope"]').first
    before = big.get_attribute("data-flowbook-nodes")
    t0 = time.perf_counter()
    group.click()
    nb.page.wait_for_function(
        """([i, before]) => { const e = document.querySelectorAll('.jp-Cell')[i]
                               .querySelector('[data-flowbook-nodes]');
                              return e.dataset.flowbookNodes !== before; }""",
        arg=[3, before],
        timeout=30_000,
    )
    click_s = time.perf_counter() - t0
    expand_ms = float(big.get_attribute("data-flowbook-layout-ms") or "nan")
    figures["expand_group"] = {
        "layout_render_ms": expand_ms,
        "click_to_frame_s": round(click_s, 3),
        "visible_nodes": int(big.get_attribute("data-flowbook-nodes")),
    }
    nb.shot("11-render-10k-expanded")
    out = SHOTS / "widget_browser.json"  # tests write under test-output/ only
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(figures, indent=2) + "\n")
    print(json.dumps(figures, indent=2))
    assert all(figures[str(n)]["visible_nodes"] > 0 for n in sizes)


GPU = [
    "import numpy as np\nimport flowbook as tf\nfrom flowbook.runtime.gpu_sim import simulate_gpu\n"
    "gpu = simulate_gpu()\ngpu.__enter__()\ntf.show()",
    'x = tf.placeholder(tf.float32, [None, 3], name="x")\n'
    'W = tf.Variable(np.ones((3, 2), np.float32), name="W")\n'
    'y = tf.nn.relu(tf.matmul(x, W), name="y")\n'
    'with tf.device("/cpu:0"):\n    total = tf.reduce_sum(y, name="total")',
    "sess = tf.Session()\nsess.run(tf.global_variables_initializer())\n"
    "print(sess.run(total, {x: np.ones((4, 3), np.float32)}))",  # 4 rows x 2 columns of 3 = 24
]


def test_a_run_on_a_gpu_shows_its_copy_nodes_and_devices(open_notebook):
    nb = open_notebook("gpu.ipynb", GPU)
    for i in range(3):
        nb.run(i)
    w = nb.widget(0)
    nb.page.wait_for_function(
        """() => document.querySelectorAll('.jp-OutputArea .fb-node[data-kind="copy"]').length >= 2""",
        timeout=30_000,
    )
    copies = w.locator('.fb-node[data-kind="copy"]').evaluate_all(
        "els => els.map(e => e.dataset.name)"
    )
    assert {"x/_copy_to_GPU_0", "y/_copy_to_CPU_0"} <= set(copies)
    assert w.locator('.fb-node[data-name="y"] .fb-device-badge').count() == 1
    assert "24" in nb.cell(2).locator(".jp-OutputArea-output").last.inner_text()
    w.locator('.fb-node[data-name="x/_copy_to_GPU_0"]').click()
    assert "host to device" in w.locator(".fb-details").inner_text()
    nb.shot("15-gpu-copies-in-lab")


REPEAT = [
    "import numpy as np\nimport flowbook as tf\ntf.show()",
    'x = tf.placeholder(tf.float32, [None, 3], name="x")\n'
    'W = tf.Variable(np.ones((3, 2), np.float32), name="W")\n'
    'loss = tf.reduce_sum(tf.nn.relu(tf.matmul(x, W)), name="loss")\n'
    "sess = tf.Session()\nsess.run(tf.global_variables_initializer())",
    "print(sess.run(loss, {x: np.ones((4, 3), np.float32)}))",
]


def test_no_widget_is_left_running_after_its_cell_finished(open_notebook):
    """The same cell run 50 times: after each, the in-cell widget and the side panel both
    say that run is done (a late "running" update must never win over the final one)."""
    nb = open_notebook("repeat.ipynb", REPEAT)
    nb.run(0)
    nb.run(1)
    nb.page.evaluate("() => window.jupyterapp.commands.execute('flowbook:open-graph-panel')")
    nb.page.locator("#flowbook-graph-panel").wait_for(timeout=30_000)
    summaries = """(want) => {
        const cell = document.querySelectorAll('.jp-Notebook .jp-Cell')[0]
                             .querySelector('.fb-summary');
        const side = document.querySelector('#flowbook-graph-panel .fb-summary');
        return [cell, side].every(s => s && s.dataset.phase === 'done'
                                          && s.textContent.includes(`run ${want}:`));
    }"""
    first = None
    for k in range(50):
        nb.run(2)
        if first is None:  # the run number the views show for this graph's first run
            text = nb.cell(0).locator(".fb-summary").inner_text()
            first = int(text.split("run ")[1].split(":")[0]) if "run " in text else 1
        nb.page.wait_for_function(summaries, arg=first + k, timeout=10_000)
    nb.shot("16-fifty-runs-all-done")
    assert "24" in nb.cell(2).locator(".jp-OutputArea-output").last.inner_text()  # 4 x 2 of 3
