"""flowbook's modules form layers, and each imports only downward (DESIGN.md, "Layers").

Every module of the package is parsed with ``ast`` (nothing is imported)
and its imports of other flowbook modules are collected, those run when the
module loads (module level, class bodies included; ``if TYPE_CHECKING:``
blocks left out) apart from those inside functions.  The rules:

(a) the module-level import graph has no cycle;
(b) an import of a flowbook module inside a function is listed in
    :data:`LAZY_IMPORTS`, with its reason; an upward reach goes through
    ``flowbook.hooks`` instead;
(c) a module imports only from its own layer or lower ones (:data:`LAYERS`).

A module holds one concept however long that takes: no line count is checked.

Importing ``flowbook.ops.x`` from outside ``flowbook.ops`` also runs
``flowbook/ops/__init__.py``, so it counts as importing that package too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "flowbook"

# Lowest first.  A module may import its own layer and those listed before it.
LAYERS: tuple[tuple[str, set[str]], ...] = (
    # values, shapes, errors, and small helpers that import no other layer
    ("base", {"dtypes", "gemm", "tensor_shape", "errors", "hooks", "source", "config", "step_stats",
              "graph_keys", "limits", "names", "files", "gfile", "tf_logging", "flags", "compat",
              "tfrecord", "nest", "pending", "queue_state", "resources", "record_files",
              "version", "philox", "philox_sampling"}),
    # the graph and what it is made of
    ("graph", {"tensor", "graph", "graph_edit", "registry", "devices", "grad_overrides"}),
    # the op library, and what builds or reads graphs with it
    ("ops", {"ops", "var_state", "variables", "nn", "math", "debugging", "losses", "graph_def",
             "graph_def_import", "io", "random", "initializers", "variable_store",
             "variable_scope", "layers", "contrib", "loss_reduction",
             "regression_losses", "custom_gradient", "tensor_protos", "iterator_state",
             "rnn_cell", "rnn_cell_impl", "rnn_cell_wrappers", "rnn", "rnn_dynamic",
             "functional_ops", "queues", "accumulators", "tf_names", "spectral", "strings", "sparse", "linalg",
             "manip"}),
    # the run core (the flowbook/run/ folder: placement, plan, compile, executor,
    # observers, timings, fetches, the CuPy device) and the simulated GPU on top of it
    ("run", {"run", "gpu_sim"}),
    ("session", {"session"}),
    # running on a Dask cluster: partitions, Send/Recv, task servers, the cluster session
    ("distributed", {"distributed"}),
    # tf.data: datasets, their traced functions (run on the executor), the iterator ops
    ("data", {"data"}),
    # training: gradients, optimizers, checkpoints, summaries
    ("train", {"gradients", "control_flow_grad", "gradient_checker", "train", "summary", "live_plots", "datasets",
               "input_data"}),
    # observers built from RunOptions/ConfigProto
    ("debug", {"debug", "profiling", "profile_table", "timeline", "rewrites"}),
    # tf.test: TestCase's sessions and assertions
    ("testing", {"test_util"}),
    # the notebook, the widget, the package's front door, and the TF1 alias on top of it
    ("notebook", {"notebook", "widget", "app", "", "tf1"}),
)  # fmt: skip
LAYER_OF: dict[str, int] = {
    ("flowbook." + name).rstrip("."): rank
    for rank, (_, names) in enumerate(LAYERS)
    for name in names
}

# (module, imported module) -> why it is imported inside a function; keep it short
LAZY_IMPORTS: dict[tuple[str, str], str] = {
    ("flowbook.distributed", "flowbook.distributed.session"): (
        "a Session with a cluster target loads the cluster machinery; import flowbook does not"
    ),
    ("flowbook", "flowbook.widget"): "anywidget is slow to import; fb.show() needs it",
    ("flowbook.notebook.extension", "flowbook.notebook.live"): (
        "the live graph (and its watcher) load only when the extension does, in a notebook"
    ),
    ("flowbook.notebook.extension", "flowbook.notebook.panel"): "as above: notebook only",
    ("flowbook.notebook.extension", "flowbook.tf1"): (
        "%flowbook_as_tensorflow: flowbook.tf1 imports the flowbook package, which imports us"
    ),
}


# --------------------------------------------------------------- the graph
def _name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


FILES: dict[str, Path] = {_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _known(name: str) -> str | None:
    """The longest prefix of ``name`` that is a flowbook module."""
    while name:
        if name in FILES:
            return name
        name = name.rpartition(".")[0]
    return None


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> set[str]:
    """The flowbook modules an import statement loads, the packages run on the way included."""
    if isinstance(node, ast.Import):
        wanted = [a.name for a in node.names]
    else:
        base = node.module or ""
        if node.level:  # relative: from the module's package, one level up per extra dot
            package = module if FILES[module].name == "__init__.py" else module.rpartition(".")[0]
            for _ in range(node.level - 1):
                package = package.rpartition(".")[0]
            base = f"{package}.{base}" if base else package
        wanted = [f"{base}.{a.name}" if f"{base}.{a.name}" in FILES else base for a in node.names]
    found: set[str] = set()
    for target in filter(None, map(_known, wanted)):
        found.add(target)
        parent = target.rpartition(".")[0]
        while parent not in ("", "flowbook") and not (module + ".").startswith(parent + "."):
            found.add(parent)  # its __init__ runs first (unless we are inside that package)
            parent = parent.rpartition(".")[0]
    found.discard(module)
    return found


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _collect(module: str) -> tuple[set[str], list[tuple[str, int]]]:
    """(modules imported at module level, [(module imported in a function, line)])."""
    top: set[str] = set()
    lazy: list[tuple[str, int]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom):
                for target in _targets(module, child):
                    if in_function:
                        lazy.append((target, child.lineno))
                    else:
                        top.add(target)
            elif _is_type_checking(child):
                continue
            visit(child, in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef))

    visit(ast.parse(FILES[module].read_text()), False)
    return top, lazy


IMPORTS = {m: _collect(m) for m in FILES}
GRAPH = nx.DiGraph()
GRAPH.add_nodes_from(FILES)
GRAPH.add_edges_from((m, t) for m, (top, _) in IMPORTS.items() for t in top)


def _layer(module: str) -> int | None:
    if module == "flowbook":
        return LAYER_OF["flowbook"]
    while module != "flowbook":
        if module in LAYER_OF:
            return LAYER_OF[module]
        module = module.rpartition(".")[0]
    return None


MODULES = sorted(FILES)


def _cycles(graph: nx.DiGraph) -> list[list[str]]:
    """One cycle of each strongly connected component with more than one module."""
    found = []
    for component in nx.strongly_connected_components(graph):
        if len(component) > 1:
            found.append(next(nx.simple_cycles(graph.subgraph(component))))
    return found


def _describe(cycles: list[list[str]]) -> str:
    return "; ".join(" -> ".join([*c, c[0]]) for c in cycles)


# ----------------------------------------------------------------- checks
def test_the_parser_sees_known_edges():
    assert "flowbook.tensor_shape" in IMPORTS["flowbook.tensor"][0]
    assert "flowbook.ops" in IMPORTS["flowbook.variables"][0]  # via flowbook.ops._builder
    assert "flowbook.ops" not in IMPORTS["flowbook.ops.math_ops"][0]  # inside its own package


def test_every_module_has_a_layer():
    missing = sorted(m for m in FILES if _layer(m) is None)
    assert not missing, f"modules without a layer (add them to LAYERS): {missing}"


def test_no_import_cycle():
    cycles = _cycles(GRAPH)
    assert not cycles, f"module-level import cycles: {_describe(cycles)}"


@pytest.mark.parametrize("module", MODULES)
def test_imports_go_downward(module):
    rank = _layer(module)
    top, lazy = IMPORTS[module]
    upward = sorted(
        f"{t} ({LAYERS[_layer(t)][0]})"
        for t in top | {t for t, _ in lazy}
        if _layer(t) is not None and rank is not None and _layer(t) > rank
    )
    assert not upward, (
        f"{module} (layer {LAYERS[rank][0]}) imports upward: {upward}; "
        "reach up through flowbook.hooks instead"
    )


@pytest.mark.parametrize("module", MODULES)
def test_function_level_imports_are_listed(module):
    unlisted = sorted(
        f"{t} (line {line})" for t, line in IMPORTS[module][1] if (module, t) not in LAZY_IMPORTS
    )
    assert not unlisted, (
        f"{module} imports inside functions: {unlisted}; import at the top, reach up "
        "through flowbook.hooks, or list it in LAZY_IMPORTS with the reason"
    )


def test_lazy_imports_listed_still_exist():
    present = {(m, t) for m, (_, lazy) in IMPORTS.items() for t, _ in lazy}
    stale = sorted(set(LAZY_IMPORTS) - present)
    assert not stale, f"LAZY_IMPORTS entries no longer in the code: {stale}"
