"""Which of TensorFlow 1's public names flowbook has: the compatibility table.

    python benchmarks/tf1_compat.py                   # all modules; writes results/tf1_compat.json
    python benchmarks/tf1_compat.py --modules tf tf.nn tf.train tf.layers tf.losses tf.math

The names come from ``tf1_api_names.txt`` (TensorFlow's ``tf.compat.v1``
public API, one ``module name`` a line, e.g. ``tf.nn relu``), kept in the
project's ``shared/`` folder beside the repository (``--names`` to point
elsewhere); when the file is absent the script says so and exits 0.  A line
counts when the attribute chain exists on ``flowbook`` (module ``tf.nn`` ->
``flowbook.api.nn``, then ``getattr(..., "relu")``) and is not a stub: a
function whose body only raises ``NotImplementedError`` does not count.
The JSON holds, per module, the total, the count present and the missing names.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import json
import sys
import textwrap
from collections import defaultdict
from pathlib import Path
from typing import Any

import flowbook

HERE = Path(__file__).resolve().parent
DEFAULT_NAMES = HERE.parents[1] / "shared" / "tf1_api_names.txt"
DEFAULT_OUT = HERE / "results" / "tf1_compat.json"
README_MODULES = ("tf", "tf.nn", "tf.train", "tf.layers", "tf.losses", "tf.math")


def read_names(path: Path) -> dict[str, list[str]]:
    """``{module: [names]}`` from the ``module name`` lines (``#`` comments skipped), in order."""
    names: dict[str, list[str]] = defaultdict(list)
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        module, _, name = line.partition(" ")
        names[module].append(name.strip())
    return dict(names)


def resolve(module: str) -> Any:
    """The flowbook object standing for TF module ``module`` (``tf.nn`` -> ``flowbook.api.nn``), or None."""
    obj: Any = flowbook
    for part in module.split(".")[1:]:
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def is_stub(obj: Any) -> bool:
    """Whether ``obj`` is a function whose body (past its docstring) only raises NotImplementedError."""
    if not (inspect.isfunction(obj) or inspect.ismethod(obj)):
        return False
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(obj)))
    except (OSError, TypeError, SyntaxError):
        return False
    body = tree.body[0].body if tree.body and hasattr(tree.body[0], "body") else []
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    return (
        len(body) == 1
        and isinstance(body[0], ast.Raise)
        and "NotImplementedError" in ast.unparse(body[0].exc or ast.Constant(None))
    )


def check(names: dict[str, list[str]]) -> dict[str, dict[str, Any]]:
    """Per module: ``total``, ``present``, ``missing`` (names), ``stubs`` (present but stubs)."""
    table: dict[str, dict[str, Any]] = {}
    for module, wanted in names.items():
        holder = resolve(module)
        missing, stubs = [], []
        for name in wanted:
            obj = getattr(holder, name, None) if holder is not None else None
            if obj is None and not (holder is not None and hasattr(holder, name)):
                missing.append(name)
            elif is_stub(obj):
                stubs.append(name)
        absent = set(missing) | set(stubs)
        table[module] = {
            "total": len(wanted),
            "present": sum(1 for n in wanted if n not in absent),
            "missing": missing,
            "stubs": stubs,
        }
    return table


def markdown(table: dict[str, dict[str, Any]], modules: Any = None) -> str:
    """The table as markdown rows: module, TF1 names, in flowbook, share."""
    rows = ["| module | TF1 names | in flowbook | share |", "|---|---:|---:|---:|"]
    chosen = [m for m in (modules or table) if m in table]
    for module in chosen:
        t = table[module]
        share = 100.0 * t["present"] / t["total"] if t["total"] else 0.0
        rows.append(f"| `{module}` | {t['total']} | {t['present']} | {share:.0f}% |")
    total = sum(table[m]["total"] for m in chosen)
    present = sum(table[m]["present"] for m in chosen)
    if len(chosen) > 1:
        rows.append(
            f"| all of these | {total} | {present} | {100.0 * present / max(total, 1):.0f}% |"
        )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--names", type=Path, default=DEFAULT_NAMES, help="tf1_api_names.txt")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the JSON to write")
    parser.add_argument("--modules", nargs="*", help="modules for the printed table (default all)")
    args = parser.parse_args(argv)
    if not args.names.is_file():
        print(
            f"tf1_compat: no list of TF1 names at {args.names} (it lives in the project's shared/ "
            "folder beside the repository, or pass --names); nothing to check."
        )
        return 0
    table = check(read_names(args.names))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    result = {
        "source": args.names.name,
        "flowbook_version": flowbook.__version__,
        "modules": table,
        "readme_modules": list(README_MODULES),
    }
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(markdown(table, args.modules))
    print(f"\n(wrote {args.out})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
