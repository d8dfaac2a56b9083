"""The live widget's costs: sending a graph update, drawing it, and watching a run.

Three measurements, all in one process, reported as figures and ratios:

- **update**: the kernel's side of a graph update for scoped graphs of 100,
  1,000 and 10,000 ops: building the widget's ``graph`` state
  (``snapshot.graph_state``) and its JSON (what ipywidgets sends).
- **frame**: the browser's side, when Debian's Chromium and the built front
  end are there: the widget's ES module loaded in a page with a stand-in
  anywidget model, fed the same states; the time from setting ``graph``
  to the rendered frame (layout with Graphviz included), for the same sizes
  with scopes collapsed, and expanding one scope.  Skipped (and said) without
  Chromium.
- **run**: the slowdown of runs with a live GraphWidget attached (the real
  widget and its trait serialisation; no browser needed) against the same
  runs without, interleaved round-robin, medians: the 2000-op add chain
  (compiled straight-line plan), one SGD step of the MLP 64-128-10, and
  runs with loops: a ``while_loop`` of 1,000 trivial iterations,
  a training step of a ``dynamic_rnn`` (an LSTM over 28 steps), and a loop
  of 40,000 small matmuls, long enough to be shown as it goes (its counter
  sent at the views' push rate).

Goals: first render of 1,000 ops < 2 s, of 10,000 ops with scopes
collapsed < 3 s, a scope expanded < 0.5 s, a run with the widget ≤ 1.05x.

Usage: ``python benchmarks/widget.py [--quick] [--no-browser]``; writes
``benchmarks/results/widget.json``.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import os
import platform
import statistics
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
from _common import CHAIN, add_chain, print_table, write_json
from trace_overhead import interleaved
from train import batches, flowbook_step

import flowbook as fb
from flowbook.notebook import live
from flowbook.notebook.snapshot import graph_state

SIZES = (100, 1000, 10000)
GOALS = {"frame_1000_s": 2.0, "frame_10000_s": 3.0, "expand_s": 0.5, "run_ratio": 1.05}
ROOT = Path(__file__).resolve().parent.parent
PAGE = "labextension/standin.html"  # the built widget with a stand-in model


def scoped_graph(n: int, per_scope: int = 50) -> fb.Graph:
    """``n`` ops: a chain of adds in scopes of ``per_scope`` ops (consts included)."""
    g = fb.Graph()
    with g.as_default():
        v = fb.constant(1.0, name="v")
        for s in range(max(1, n // per_scope)):
            with fb.name_scope(f"layer{s}"):
                for _ in range(per_scope // 2):
                    v = v + 1.0
    return g


def unscoped_graph(n: int) -> fb.Graph:
    """``n`` ops at the top level with names that form no series: nothing to collapse."""
    g = fb.Graph()
    with g.as_default():
        xs = [fb.constant(float(i), name=f"c{i}x") for i in range(n // 4)]
        for i in range(n - len(xs)):
            a, b = xs[i % len(xs)], xs[(i * 7 + 3) % len(xs)]
            xs.append(fb.add(a, b, name=f"add{i}x"))
    return g


def bench_update(rounds: int) -> dict[str, Any]:
    out = {}
    for n in SIZES:
        g = scoped_graph(n)
        build, dump = [], []
        for _ in range(rounds):
            t0 = time.perf_counter()
            state = graph_state(g)
            t1 = time.perf_counter()
            text = json.dumps(state)
            t2 = time.perf_counter()
            build.append(t1 - t0)
            dump.append(t2 - t1)
        out[str(n)] = {
            "ops": len(g.get_operations()),
            "state_ms": statistics.median(build) * 1e3,
            "json_ms": statistics.median(dump) * 1e3,
            "bytes": len(text),
        }
    return out


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass


def bench_frame(quick: bool) -> dict[str, Any] | str:
    """Update-to-frame times in headless Chromium, or why they were not measured."""
    if not os.path.exists("/usr/bin/chromium"):
        return "skipped: /usr/bin/chromium is missing"
    if not (Path(fb.__file__).parent / "static" / "graph-widget.js").exists():
        return "skipped: the widget front end is not built (pip install -e .)"
    from playwright.sync_api import sync_playwright

    states = {str(n): graph_state(scoped_graph(n)) for n in SIZES}
    states["1000 unscoped"] = graph_state(unscoped_graph(1000))
    handler = functools.partial(_Quiet, directory=str(ROOT))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/{PAGE}?height=800"
    args = [
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ]
    out: dict[str, Any] = {}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=args)
            for n in (*SIZES, "1000 unscoped"):
                samples, visible = [], 0
                for _ in range(1 if quick else 3):
                    page = browser.new_page(viewport={"width": 1400, "height": 900})
                    page.goto(url)
                    page.wait_for_function("() => window.flowbookPage !== undefined")
                    r = page.evaluate("s => window.flowbookPage.render(s)", states[str(n)])
                    samples.append(r["ms"] / 1000)
                    visible = r["nodes"]
                    if n == SIZES[-1]:  # the 10,000 ops, collapsed: open one group
                        out["expand_scope"] = _expand(page, visible)
                    page.close()
                out[str(n)] = {
                    "first_frame_s": statistics.median(samples),
                    "visible_nodes": visible,
                }
            browser.close()
    finally:
        server.shutdown()
    return out


def _expand(page: Any, before: int) -> dict[str, Any]:
    """Click the first collapsed group (a scope or a series); time until its frame."""
    group = page.locator('.fb-node[data-kind="scope"], .fb-node[data-kind="series"]').first
    t0 = time.perf_counter()
    group.click()
    page.wait_for_function(
        "n => Number(document.querySelector('[data-flowbook-nodes]').dataset.flowbookNodes) !== n",
        arg=before,
    )
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)))")
    wall = time.perf_counter() - t0
    root = page.locator("[data-flowbook-nodes]").first
    return {
        "s": wall,
        "layout_render_ms": float(root.get_attribute("data-flowbook-layout-ms") or "nan"),
        "nodes_after": int(root.get_attribute("data-flowbook-nodes") or 0),
    }


def bench_run(rounds: int, quick: bool) -> dict[str, Any]:
    from flowbook.notebook.widget import GraphWidget

    results = {}
    # the chain: compiled straight-line plan
    g, x, y = add_chain(CHAIN)
    sess = fb.Session(graph=g)
    feed = {x: np.float32(1.0)}
    block = 2 if quick else 5

    def chain() -> None:
        for _ in range(block):
            sess.run(y, feed)

    results["chain"] = _ratio(chain, g, rounds, GraphWidget, block)
    sess.close()

    digits = fb.datasets.load_digits()
    nb = 20 if quick else 50
    data = batches(digits.train.images, digits.train.labels, nb)
    msess, _ = flowbook_step(128)
    mg = msess.graph
    train = mg.get_operation_by_name("GradientDescent")
    mx, my = mg.get_tensor_by_name("x:0"), mg.get_tensor_by_name("y:0")

    def mlp() -> None:
        for bx, by in data:
            msess.run(train, {mx: bx, my: by})

    results["mlp"] = _ratio(mlp, mg, rounds, GraphWidget, nb)
    msess.close()
    results.update(bench_loops(rounds, quick, GraphWidget))
    return results


def bench_loops(rounds: int, quick: bool, widget_cls: Any) -> dict[str, Any]:
    """Runs with loops: a while_loop of 1,000 trivial iterations, a dynamic_rnn step, and a
    loop long enough (40,000 iterations of a small matmul, over 0.1 s) to be shown as it goes."""
    out = {}
    g = fb.Graph()
    with g.as_default():
        _, acc = fb.while_loop(lambda i, a: i < 1000, lambda i, a: (i + 1, a + 1.0), [0, 0.0])
    sess = fb.Session(graph=g)
    block = 2 if quick else 5

    def loop() -> None:
        for _ in range(block):
            sess.run(acc)

    out["while_loop_1000"] = _ratio(loop, g, rounds, widget_cls, block)
    sess.close()

    g = fb.Graph()
    with g.as_default():
        x = fb.placeholder(fb.float32, [32, 28, 28], name="x")
        cell = fb.nn.rnn_cell.BasicLSTMCell(64)
        y, _ = fb.nn.dynamic_rnn(cell, x, dtype=fb.float32)
        step = fb.train.GradientDescentOptimizer(0.1).minimize(fb.reduce_mean(y * y))
        init = fb.global_variables_initializer()
    sess = fb.Session(graph=g)
    sess.run(init)
    feed = {x: np.random.default_rng(0).random((32, 28, 28), np.float32)}

    def rnn() -> None:
        for _ in range(block):
            sess.run(step, feed)

    out["dynamic_rnn_step"] = _ratio(rnn, g, rounds, widget_cls, block)
    sess.close()

    g = fb.Graph()
    with g.as_default():
        w = fb.constant(np.eye(16, dtype=np.float32) * 0.5)
        _, h = fb.while_loop(
            lambda i, h: i < 40_000,
            lambda i, h: (i + 1, fb.matmul(h, w) + 1.0),
            [0, fb.ones([16, 16])],
        )
    sess = fb.Session(graph=g)

    def long_loop() -> None:
        sess.run(h)

    out["while_loop_live"] = _ratio(long_loop, g, max(5, rounds // 3), widget_cls, 1)
    sess.close()
    return out


def _ratio(fn: Any, graph: fb.Graph, rounds: int, widget_cls: Any, per: int) -> dict[str, Any]:
    """Median time of ``fn`` with and without a live widget on ``graph``, interleaved.

    The widget stays shown throughout; "without" unhooks the run watcher (what
    a run pays when no view exists), "with_widget" hooks it back.
    """
    fn()
    fn()
    w = widget_cls(graph)

    def attached() -> None:
        live.WATCHER.attach()
        fn()

    def detached() -> None:
        live.WATCHER.detach()
        fn()

    t = interleaved({"without": detached, "with_widget": attached}, rounds)
    live.FLUSHER.flush_now()
    w.close()
    return {
        "us_per_run": {k: v / per * 1e6 for k, v in t.items()},
        "with_vs_without": t["with_widget"] / t["without"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (CI smoke runs)")
    parser.add_argument("--no-browser", action="store_true", help="skip the Chromium frame times")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "widget.json"))
    args = parser.parse_args()
    rounds = 7 if args.quick else 31
    results: dict[str, Any] = {
        "update": bench_update(3 if args.quick else 9),
        "frame": "skipped: --no-browser" if args.no_browser else bench_frame(args.quick),
        "run": bench_run(rounds, args.quick),
        "goals": GOALS,
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
    }
    print("graph update, kernel side (state + JSON):")
    print_table(
        ("ops", "state ms", "json ms", "KB"),
        [
            (r["ops"], f"{r['state_ms']:.1f}", f"{r['json_ms']:.1f}", f"{r['bytes'] / 1024:.0f}")
            for r in results["update"].values()
        ],
    )
    frame = results["frame"]
    print("\nupdate to rendered frame, headless Chromium:")
    if isinstance(frame, str):
        print(f"  {frame}")
    else:
        rows = [
            (n, f"{frame[n]['first_frame_s']:.2f}", frame[n]["visible_nodes"])
            for n in [*map(str, SIZES), "1000 unscoped"]
        ]
        print_table(("ops", "first frame s", "visible nodes"), rows)
        if "expand_scope" in frame:
            print(
                f"  expanding one scope of the 10,000-op graph: {frame['expand_scope']['s']:.3f} s"
            )
    print("\nruns with a live GraphWidget attached vs without:")
    print_table(
        ("workload", "without µs", "with widget µs", "ratio", "goal"),
        [
            (
                k,
                f"{r['us_per_run']['without']:.0f}",
                f"{r['us_per_run']['with_widget']:.0f}",
                f"{r['with_vs_without']:.3f}x",
                f"≤ {GOALS['run_ratio']}x",
            )
            for k, r in results["run"].items()
        ],
    )
    write_json(args.out, results)


if __name__ == "__main__":
    main()
