"""TensorFlow-order random draws: Philox blocks, Fisher-Yates, word by word, normals.

What a seeded shuffle or random op costs in :mod:`flowbook.kernels.philox` and
:mod:`flowbook.kernels.philox_sampling`, each against what numpy does for the same
job with its own generator (``permutation``, ``integers``,
``standard_normal``), and, with ``--against REV``, against those two modules
as they were at git revision ``REV`` (loaded from ``git show``, run in this
process, interleaved with the current ones, so machine load hits both).
The sizes are the input pipeline benchmark's: the digits' 1,797 rows, so one
epoch's shuffle is 1,796 words (449 blocks).  Figures are the best of several
repeats of CPU time, in microseconds (lower is better); ratios are
``numpy / ours`` (higher is better) and ``before / now`` (speed-up).

Usage: ``python benchmarks/shuffle_draws.py [--quick] [--against REV]``;
writes ``benchmarks/results/shuffle_draws.json``.
"""

from __future__ import annotations

import argparse
import subprocess
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from _common import print_table, write_json

from flowbook.kernels import philox, philox_sampling

ROWS = 1797  # the digits
VALUES = 1_000_000  # normals and uniforms per draw


def best_us(fn: Callable[[], Any], number: int, repeat: int) -> float:
    """Microseconds of one call: the best of ``repeat`` CPU-time runs of ``number`` calls."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        for _ in range(number):
            fn()
        best = min(best, time.process_time() - start)
    return best / number * 1e6


def load_revision(rev: str) -> tuple[Any, Any]:
    """``flowbook/kernels/philox.py`` and ``philox_sampling.py`` as they were at ``rev``, as modules."""
    root = Path(__file__).resolve().parent.parent
    mods = []
    for name in ("philox", "philox_sampling"):
        source = subprocess.run(
            ["git", "-C", str(root), "show", f"{rev}:flowbook/{name}.py"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        mod = types.ModuleType(f"{name}_at_{rev}")
        exec(compile(source, mod.__name__, "exec"), mod.__dict__)  # its Philox is passed in
        mods.append(mod)
    return mods[0], mods[1]


def cases(px: Any, ps: Any) -> dict[str, Callable[[], Any]]:
    """The draws to time, against one version of the two modules."""
    f32 = np.dtype(np.float32)
    words = px.Words(px.Philox(1, 2))
    return {
        "philox_blocks_449": lambda: px.Philox(1, 2).blocks(449),
        "fisher_yates_1797": lambda: px.fisher_yates(ROWS, px.Words(px.Philox(1, 2))),
        "word_by_word": words,
        "uniform_f32_1e6": lambda: ps.uniform(px.Philox(1, 2), VALUES, f32),
        "normal_f32_1e6": lambda: ps.normal(px.Philox(1, 2), VALUES, f32),
    }


def numpy_cases() -> dict[str, Callable[[], Any]]:
    """numpy's own generator doing each job."""
    rng = np.random.default_rng(0)
    return {
        "philox_blocks_449": lambda: rng.integers(0, 2**32, (449, 4), np.uint32),
        "fisher_yates_1797": lambda: rng.permutation(ROWS),
        "word_by_word": lambda: int(rng.integers(0, 2**32)),
        "uniform_f32_1e6": lambda: rng.random(VALUES, np.float32),
        "normal_f32_1e6": lambda: rng.standard_normal(VALUES, np.float32),
    }


def main() -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats (a few seconds)")
    parser.add_argument("--against", metavar="REV", help="also time the modules at git REV")
    args = parser.parse_args()
    repeat = 3 if args.quick else 9
    versions = {"now": cases(philox, philox_sampling), "numpy": numpy_cases()}
    if args.against:
        versions["before"] = cases(*load_revision(args.against))
        for name in ("philox_blocks_449", "fisher_yates_1797"):  # same answers, or no figures
            got, was = versions["now"][name](), versions["before"][name]()
            assert np.array_equal(got, was), f"{name} differs from {args.against}'s"
    figures: dict[str, dict[str, float]] = {}
    for name in versions["now"]:
        number = 3 if name.endswith("1e6") else (20000 if name == "word_by_word" else 300)
        number = max(1, number // 3) if args.quick else number
        figures[name] = {v: 0.0 for v in versions}
        for _ in range(repeat):  # interleaved, so drifts in machine load hit all
            for v, c in versions.items():
                us = best_us(c[name], number, 1)
                figures[name][v] = min(figures[name][v] or us, us)
    rows, results = [], {}
    for name, f in figures.items():
        row = {f"{v}_us": round(us, 2) for v, us in f.items()}
        row["numpy_over_now"] = round(f["numpy"] / f["now"], 3)
        if "before" in f:
            row["speedup_over_before"] = round(f["before"] / f["now"], 2)
        results[name] = row
        rows.append(
            [name, f"{f['now']:.1f}", f"{f['numpy']:.1f}", f"{f['numpy'] / f['now']:.2f}x"]
            + ([f"{f['before']:.1f}", f"{f['before'] / f['now']:.2f}x"] if "before" in f else [])
        )
    header = ["draw", "now µs", "numpy µs", "numpy/now"]
    print_table(header + (["before µs", "speed-up"] if args.against else []), rows)
    out = {"figures": results, "against": args.against, "quick": args.quick, "repeats": repeat}
    write_json(str(Path(__file__).parent / "results" / "shuffle_draws.json"), out)
    return out


if __name__ == "__main__":
    main()
