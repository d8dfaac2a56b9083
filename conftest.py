"""How ``python -m pytest`` chooses what to run: the quick set by default, everything with --all.

Three groups take minutes of their own and start other programs, so a plain
``python -m pytest`` (the README's test command) leaves them out and says so
at the end; ``python -m pytest --all`` runs them too, and CI always does:

- ``browser``: JupyterLab driven in Debian's Chromium (``tests/e2e``);
- ``cluster``: Dask clusters of worker processes (``tests/test_dist_*``);
- ``tutorials``: every notebook in ``tutorials/`` top to bottom.

A group named with ``-m``, or a test file named on the command line, runs
whatever its markers.  The fuzzers (marker ``fuzz``) run 150 inputs each in
the quick set and 4,000 with --all (``FLOWBOOK_FUZZ_EXAMPLES`` sets it).

Doctests come from the package's modules that hold an example (``>>>``):
this file collects them, so the test modules are not imported twice (once
as tests, once for doctests, as ``--doctest-modules`` does).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from _pytest.doctest import DoctestModule

SLOW_GROUPS = ("browser", "cluster", "tutorials")
LONG_FUZZ_EXAMPLES = "4000"
PACKAGE = Path(__file__).parent / "flowbook"
_LEFT_OUT = pytest.StashKey[int]()  # how many tests of the slow groups were left out


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--all",
        action="store_true",
        dest="run_all",
        help="also run the slow groups (" + ", ".join(SLOW_GROUPS) + ") and the long fuzzers",
    )


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("run_all"):
        os.environ.setdefault("FLOWBOOK_FUZZ_EXAMPLES", LONG_FUZZ_EXAMPLES)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """The package's modules with an example in a docstring, as doctest modules."""
    if parent.config.getoption("doctestmodules"):
        return None  # --doctest-modules given: pytest's own collector does it
    if file_path.suffix != ".py" or PACKAGE not in file_path.parents:
        return None
    if ">>>" not in file_path.read_text(encoding="utf-8"):
        return None
    return DoctestModule.from_parent(parent, path=file_path)


def _named_files(config: pytest.Config) -> bool:
    """Whether the command line names test files or tests, not only folders."""
    return any(Path(arg.split("::")[0]).is_file() for arg in config.args)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("run_all") or config.option.markexpr or _named_files(config):
        return
    slow = [item for item in items if any(item.get_closest_marker(g) for g in SLOW_GROUPS)]
    if slow:
        left_out = set(slow)
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if item not in left_out]
    config.stash[_LEFT_OUT] = len(slow)


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    left_out = config.stash.get(_LEFT_OUT, 0)
    if left_out:
        terminalreporter.write_line(
            f"{left_out} tests of the slow groups ({', '.join(SLOW_GROUPS)}) were left out: "
            "`python -m pytest --all` runs everything (CI does)."
        )
