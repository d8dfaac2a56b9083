"""How long ``import flowbook`` takes, and what its lazy namespaces cost on first use.

Each figure is a cold import in a fresh interpreter (``-X frozen_modules=off``,
as ``overhead.py``'s import row), the best of N runs (the least disturbed by
other processes on a loaded machine), against ``import numpy`` measured in the
same run, so the ratio travels between machines better than the seconds do.
Two settings, each with a bytecode cache of its own (``PYTHONPYCACHEPREFIX``):

- ``cached``: the ``.pyc`` files written by a first, untimed run, as an
  installed package has them;
- ``source``: flowbook's own modules compiled on every import (their
  ``.pyc`` removed from the cache, ``PYTHONDONTWRITEBYTECODE=1``), numpy and
  the rest from the cache: what a checkout measures in an environment that sets
  ``PYTHONDONTWRITEBYTECODE`` (this project's sessions, and the README's
  figures before the namespaces were lazy).

Rows: ``numpy``, the baseline; ``flowbook``; ``flowbook + lazy``, ``import
flowbook`` then every namespace it leaves for first use (``tf.train``,
``tf.data``, ``tf.contrib``, ``tf.app``...), about what the import cost when
they were eager; then each namespace's first use, timed after ``import
flowbook`` (what a cell touching ``tf.train`` first waits).

Usage: ``python benchmarks/import_time.py [--quick]``; writes
``benchmarks/results/import_time.json``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from _common import print_table, write_json

import flowbook as fb

GOAL_S = 0.5  # README's goal for import flowbook, on a quiet machine
# one name per lazy module (tf.test and tf.test_util are one module)
NAMESPACES = list({m: n for n, (m, a) in reversed(fb._LAZY.items()) if a is None}.values())[::-1]


def cold(code: str, env: dict[str, str], setup: str = "pass") -> float:
    """Seconds ``code`` (an import) takes in a fresh interpreter, after ``setup`` (untimed)."""
    timed = f"{setup}; import time; t = time.perf_counter(); {code}; print(time.perf_counter() - t)"
    out = subprocess.run(
        [sys.executable, "-X", "frozen_modules=off", "-c", timed],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    return float(out.stdout.strip().splitlines()[-1])


def measure(env: dict[str, str], n: int) -> dict[str, Any]:
    """The figures of one setting, each the best of ``n``."""

    def best(code: str, setup: str = "pass") -> float:
        return min(cold(code, env, setup) for _ in range(n))

    every = "; ".join(f"fb.{name}" for name in NAMESPACES)
    r: dict[str, Any] = {"numpy_s": best("import numpy"), "flowbook_s": best("import flowbook")}
    r["flowbook_and_lazy_s"] = best(f"import flowbook as fb; {every}")
    r["first_use_s"] = {n: best(f"fb.{n}", setup="import flowbook as fb") for n in NAMESPACES}
    r["ratio"] = r["flowbook_s"] / r["numpy_s"]
    r["ratio_with_lazy"] = r["flowbook_and_lazy_s"] / r["numpy_s"]
    return r


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats (for smoke runs)")
    parser.add_argument(
        "--out", default=str(Path(__file__).parent / "results" / "import_time.json")
    )
    args = parser.parse_args()
    n = 3 if args.quick else 9
    base = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    results: dict[str, Any] = {"repeats": n}
    every = "; ".join(f"fb.{x}" for x in NAMESPACES)
    with tempfile.TemporaryDirectory() as cached, tempfile.TemporaryDirectory() as source:
        for prefix in (cached, source):  # a first run writes the .pyc of every module
            cold(f"import numpy, flowbook as fb; {every}", {**base, "PYTHONPYCACHEPREFIX": prefix})
        package = Path(fb.__file__).resolve().parent  # the cache mirrors absolute paths
        shutil.rmtree(Path(source) / package.relative_to(package.anchor))
        results["cached"] = measure({**base, "PYTHONPYCACHEPREFIX": cached}, n)
        src = {**base, "PYTHONPYCACHEPREFIX": source, "PYTHONDONTWRITEBYTECODE": "1"}
        results["source"] = measure(src, n)
    rows = []
    for setting, r in results.items():
        if setting == "repeats":
            continue
        npt = r["numpy_s"]
        rows += [
            (setting, "import numpy", f"{npt:.3f} s", "1.0x", ""),
            (setting, "import flowbook", f"{r['flowbook_s']:.3f} s", f"{r['ratio']:.1f}x",
             f"< {GOAL_S} s"),
            (setting, "import flowbook + every lazy namespace", f"{r['flowbook_and_lazy_s']:.3f} s",
             f"{r['ratio_with_lazy']:.1f}x", ""),
        ]  # fmt: skip
        rows += [
            (setting, f"  first use of tf.{name}", f"+{s:.3f} s", f"+{s / npt:.2f}x", "")
            for name, s in sorted(r["first_use_s"].items(), key=lambda kv: -kv[1])
        ]
    print_table(("bytecode", "import", f"best of {n}", "vs numpy", "goal"), rows)
    write_json(args.out, results)


if __name__ == "__main__":
    main()
