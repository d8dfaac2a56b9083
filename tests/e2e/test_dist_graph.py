"""A run on a Dask cluster in the widget, in headless Chromium: ops coloured by task, Send/Recv pairs.

The states come from flowbook itself: a LiveGraph watching a run of a
``DaskSession`` on an in-process ``LocalCluster`` of ps-0, worker-0 and
worker-1; the page is the stand-in one (``standin_page``).  The screenshot
lands in ``test-output/browser/``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import flowbook as tf
from flowbook.notebook import live

from standin_states import set_trait, show

pytestmark = pytest.mark.browser

distributed = pytest.importorskip("distributed")

SHOTS = Path(__file__).resolve().parents[2] / "test-output" / "browser"


class _View:
    def push(self, state: dict) -> None:
        self.state = json.loads(json.dumps(state))


def _cluster_states() -> dict:
    """Graph and run states of an MLP step split over ps-0, worker-0 and worker-1."""
    cluster = distributed.LocalCluster(
        n_workers=0, processes=False, threads_per_worker=1, dashboard_address=None
    )
    for name in ("ps-0", "worker-0", "worker-1"):
        cluster.worker_spec[name] = cluster.new_spec
    cluster.scale(3)
    client = distributed.Client(cluster, set_as_default=False)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [8, 4], name="x")
        with tf.device("/job:ps/task:0"):
            w1 = tf.Variable(tf.ones([4, 6]), name="w1")
            w2 = tf.Variable(tf.ones([6, 2]), name="w2")
        with tf.device("/job:worker/task:0"):
            hidden = tf.nn.relu(tf.matmul(x, w1), name="hidden")
        with tf.device("/job:worker/task:1"):
            logits = tf.matmul(hidden, w2, name="logits")
            loss = tf.reduce_mean(logits, name="loss")
        init = tf.global_variables_initializer()
    hub = live.live_graph(g)
    view = _View()
    hub.add_view(view)
    try:
        client.wait_for_workers(3, timeout=60)
        with tf.Session(client, graph=g) as s:
            s.run(init)
            s.run(loss, {x: np.ones((8, 4), np.float32)})
        live.FLUSHER.flush_now()
        return hub.state(("graph", "run"))
    finally:
        hub.remove_view(view)
        client.close()
        cluster.close()


def test_ops_are_coloured_by_task_and_pairs_sit_on_the_edges_they_split(standin_page):
    page = standin_page
    state = _cluster_states()
    pairs = {c["src"]: c for c in state["run"]["copies"]}
    assert set(pairs) == {"w1/read", "w2/read", "hidden"}
    show(page, state)
    page.wait_for_selector('.fb-node[data-kind="copy"]')
    # each op tinted and badged with its task
    for name, task in (("hidden", "worker:0"), ("logits", "worker:1"), ("loss", "worker:1")):
        node = page.locator(f'.fb-node[data-name="{name}"]')
        assert node.get_attribute("data-task") == task
        assert node.locator(".fb-device-badge text").text_content() == task
    fills = page.evaluate(
        "names => names.map(n => getComputedStyle(document.querySelector("
        '`.fb-node[data-name="${n}"] .fb-shape`)).fill)',
        ["hidden", "logits"],
    )
    assert fills[0] != fills[1] and all(f.startswith("rgb(") for f in fills)
    # hidden (worker:0) -> send -> logits (worker:1), not hidden -> logits
    pair = pairs["hidden"]["name"]
    label = page.locator(f'.fb-node[data-name="{pair}"] .fb-label').text_content()
    assert label == "send \u2192 worker:1"
    assert page.locator(f'.fb-edge-copy[data-from="hidden"][data-to="{pair}"]').count() == 1
    assert page.locator(f'.fb-edge-copy[data-from="{pair}"][data-to="logits"]').count() == 1
    assert page.locator('.fb-edge[data-from="hidden"][data-to="logits"]').count() == 0
    # the legend names the tasks, ps first, each on its colour, and the pairs
    legend = page.locator(".fb-legend-devices")
    assert legend.is_visible()
    chips = legend.locator(".fb-device-chip")
    assert chips.all_text_contents() == ["ps:0", "worker:0", "worker:1"]
    colours = chips.evaluate_all("els => els.map(e => getComputedStyle(e).backgroundColor)")
    assert colours[0] == "rgb(136, 34, 85)" and len(set(colours)) == 3
    assert "task" in legend.inner_text() and "send/recv" in legend.inner_text()
    summary = page.locator(".fb-summary").text_content()
    assert "3 Send/Recv pairs between tasks" in summary and "cop" not in summary
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "30-cluster-tasks.png"))
    set_trait(page, "present", True)  # on a projector: the same colours, 16 px labels
    page.wait_for_selector(".flowbook-graph.fb-present")
    page.wait_for_timeout(500)
    assert page.locator('.fb-node[data-name="hidden"]').get_attribute("data-task") == "worker:0"
    page.screenshot(path=str(SHOTS / "31-cluster-tasks-present.png"))
