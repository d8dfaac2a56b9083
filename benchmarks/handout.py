"""What a notebook a teacher hands out costs: the pictures drawn after each cell, and its size.

Two measurements, in one process, figures and ratios against a baseline
measured in the same run:

- **picture**: the kernel's side of a shown graph's static picture
  (``flowbook.notebook.picture``: layout and SVG) for scoped graphs of 100,
  1,000 and 10,000 ops and an unscoped graph of 1,000, best of a few
  rounds, beside the graph state the live widget is sent anyway
  (``snapshot.graph_state`` and its JSON) as the baseline; and the
  picture's bytes.
- **notebook**: tutorial 01 executed with nbclient on the Flowbook kernel and
  saved, as shipped (the widget's loader and a picture per shown graph) and
  with ``FLOWBOOK_EMBED_WIDGET=1`` (the whole view in every widget, as
  before the loader): bytes of each, and the ratio.

Usage: ``python benchmarks/handout.py [--quick] [--out FILE]``; writes
``benchmarks/results/handout.json`` by default.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import nbformat
from _common import print_table, write_json
from nbclient import NotebookClient
from widget import scoped_graph, unscoped_graph

from flowbook.notebook.picture import picture_bundle
from flowbook.notebook.snapshot import graph_state

ROOT = Path(__file__).resolve().parent.parent
TUTORIAL = ROOT / "tutorials" / "01_graphs_and_sessions.ipynb"


def _best(fn: Any, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def bench_picture(rounds: int) -> dict[str, Any]:
    out = {}
    cases = {f"scoped {n}": scoped_graph(n) for n in (100, 1_000, 10_000)}
    cases["unscoped 1000"] = unscoped_graph(1_000)
    for name, g in cases.items():
        state = graph_state(g)
        base = _best(lambda g=g: json.dumps(graph_state(g)), rounds)
        pic = _best(lambda state=state: picture_bundle(state, None, title="graph"), rounds)
        size = len(picture_bundle(state, None, title="graph")["image/svg+xml"])
        out[name] = {"picture_s": pic, "state_json_s": base, "ratio": pic / base, "svg_bytes": size}
    return out


def _executed_size(env: dict[str, str]) -> int:
    with tempfile.TemporaryDirectory() as d:
        shutil.copytree(TUTORIAL.parent / "data", Path(d) / "data")
        nb = nbformat.read(TUTORIAL, as_version=4)
        old = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            NotebookClient(
                nb, timeout=300, kernel_name="flowbook", resources={"metadata": {"path": d}}
            ).execute()
        finally:
            for k, v in old.items():
                os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
        path = Path(d) / "01.ipynb"
        nbformat.write(nb, path)
        return path.stat().st_size


def bench_notebook() -> dict[str, Any]:
    shipped = _executed_size({"FLOWBOOK_EMBED_WIDGET": "0"})
    embedded = _executed_size({"FLOWBOOK_EMBED_WIDGET": "1"})
    return {"shipped_bytes": shipped, "embedded_bytes": embedded, "ratio": embedded / shipped}


def _row(name: str, v: dict[str, Any]) -> list[str]:
    ms = f"{v['picture_s'] * 1e3:.1f} ms", f"{v['state_json_s'] * 1e3:.1f} ms"
    return [name, *ms, f"{v['ratio']:.2f}x", f"{v['svg_bytes'] / 1024:.0f} KB"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "handout.json"))
    args = parser.parse_args()
    rounds = 2 if args.quick else 5
    pictures = bench_picture(rounds)
    rows = [_row(k, v) for k, v in pictures.items()]
    print_table(["graph", "picture", "state + JSON", "ratio", "SVG"], rows)
    notebook = bench_notebook()
    print(
        f"\ntutorial 01 executed and saved: {notebook['shipped_bytes'] / 1024:.0f} KB; "
        f"with the whole view in each widget: {notebook['embedded_bytes'] / 1024:.0f} KB "
        f"({notebook['ratio']:.1f}x)"
    )
    write_json(
        args.out,
        {
            "machine": platform.platform(),
            "cpus": os.cpu_count(),
            "date": time.strftime("%Y-%m-%d"),
            "picture": pictures,
            "notebook": notebook,
        },
    )


if __name__ == "__main__":
    main()
