"""``import flowbook`` leaves its seldom-used namespaces for first use, and nothing notices.

Each check runs in a fresh interpreter (``sys.modules`` of this one is full of
everything the other tests imported).  The lazy namespaces (``flowbook._LAZY``
and ``flowbook.distributed``'s cluster machinery) register no op, fill no hook
and no observer factory, so loading them changes none of those tables.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# modules (and third-party packages) import flowbook must not load
NOT_LOADED = [
    "flowbook.train",
    "flowbook.data",
    "flowbook.nets.contrib",
    "flowbook.platform.app",
    "flowbook.platform.flags",
    "flowbook.test_util",
    "flowbook.summary.writer",
    "flowbook.data.datasets",
    "flowbook.autodiff.gradient_checker",
    "flowbook.distributed.session",
    "flowbook.distributed.server_api",
    "absl",
    "asyncio",
    "unittest",
]


def _run(code: str) -> dict:
    """Run ``code`` in a fresh interpreter; it prints one JSON value, returned here."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_flowbook_leaves_the_lazy_namespaces_unloaded():
    loaded = _run(
        f"import json, sys, flowbook; print(json.dumps([m for m in {NOT_LOADED!r} if m in sys.modules]))"
    )
    assert loaded == []


def test_a_local_session_loads_no_cluster_machinery():
    loaded = _run(
        "import json, sys, flowbook as tf\n"
        "with tf.Session() as s: s.run(tf.constant(1.0) + 1.0)\n"
        f"print(json.dumps([m for m in {NOT_LOADED!r} if m in sys.modules]))"
    )
    assert loaded == []


def test_a_cluster_target_still_makes_a_cluster_session():
    name = _run(
        "import json, flowbook as tf\n"
        "from flowbook import hooks\n"
        "print(json.dumps(hooks.cluster_session(tf.Session, 'dask://h:1').__name__))"
    )
    assert name == "DaskSession"


def test_every_name_resolves_and_loading_them_changes_no_table():
    got = _run(
        "import json, flowbook as tf, types\n"
        "from flowbook.framework.registry import OPS\n"
        "from flowbook.runtime import observers\n"
        "def tables(): return [sorted(OPS), len(observers._FACTORIES),\n"
        "    [h.filled for h in vars(tf.hooks).values() if isinstance(h, tf.hooks.Hook)]]\n"
        "before = tables()\n"
        "names = [n for n in dir(tf) if not n.startswith('__')]\n"
        "missing = [n for n in names if not hasattr(tf, n)]\n"
        "ns = {}; exec('from flowbook import ' + ', '.join(names), ns)\n"
        "same = [n for n in names if ns[n] is getattr(tf, n)]\n"
        "kinds = {n: type(getattr(tf, n)).__name__ for n in tf._LAZY}\n"
        "print(json.dumps([before == tables(), missing, len(same) == len(names), kinds]))"
    )
    unchanged, missing, same, kinds = got
    assert unchanged, "a lazy namespace registers an op, fills a hook or an observer factory"
    assert missing == [] and same
    assert kinds["train"] == kinds["contrib"] == "module"
    assert kinds["scalar_summary"] == "function"


@pytest.mark.parametrize("path", ["flowbook.distributed.server", "flowbook.train.saver"])
def test_modules_load_by_path(path):
    """Dask workers and pickles import flowbook's modules by path, the lazy ones included."""
    assert (
        _run(
            f"import json, importlib; print(json.dumps(importlib.import_module({path!r}).__name__))"
        )
        == path
    )
