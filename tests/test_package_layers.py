"""flowbook's packages form layers, and each imports only downward.

Every module of the package is parsed with ``ast`` (nothing is imported)
and its imports of other flowbook modules are collected, those run when the
module loads (module level, class bodies included; ``if TYPE_CHECKING:``
blocks left out) apart from those inside functions.  The rules:

(a) the module-level import graph has no cycle;
(b) an import of a flowbook module inside a function is listed in
    :data:`LAZY_IMPORTS`, with its reason; an upward reach goes through
    ``flowbook.framework.hooks`` instead;
(c) a module imports only from its package's layer or lower ones (:data:`LAYERS`,
    one row of packages per layer, lowest first).

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

# Lowest first: each row is a layer of packages (and the package root's modules); a package
# may import its own layer and those listed before it.
LAYERS: tuple[tuple[str, set[str]], ...] = (
    # the graph and what it is made of: dtypes, shapes, errors, names, the op registry
    ("framework", {"framework"}),
    # files, logging, flags, the app runner
    ("platform", {"platform"}),
    # pure array kernels: gemm, Philox, windows, patches, special functions
    ("kernels", {"kernels"}),
    # GraphDefs, tensor protos, record files
    ("graph_io", {"graph_io"}),
    # what one session holds: variables' values, queues, iterators, resources, pending results
    ("state", {"state"}),
    # the op library: each family's ops, gradients and TF1 wrappers
    ("ops", {"ops"}),
    ("variables", {"variables"}),
    # Session.run: placement, plans, the scheduler, code generators, the optimiser
    ("runtime", {"runtime"}),
    # observers built from RunOptions: step stats, traces, profiles
    ("profiling", {"profiling"}),
    ("autodiff", {"autodiff"}),
    # layers, recurrent nets, losses
    ("nets", {"nets"}),
    # TF1's namespaces (tf.nn, tf.math, ...): names only
    ("api", {"api"}),
    ("data", {"data"}),
    ("distributed", {"distributed"}),
    ("summary", {"summary"}),
    ("train", {"train"}),
    ("debug", {"debug"}),
    # the notebook, the widget, the package's front door, tf.test and the TF1 alias on top
    ("notebook", {"notebook", "", "test_util", "tf1"}),
)
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
    ("flowbook", "flowbook.notebook.widget"): "anywidget is slow to import; fb.show() needs it",
    ("flowbook", "flowbook.notebook"): "the widget's package, loaded with it by fb.show()",
    ("flowbook.notebook.extension", "flowbook.notebook.live"): (
        "the live graph (and its watcher) load only when the extension does, in a notebook"
    ),
    ("flowbook.notebook.extension", "flowbook.notebook.panel"): "as above: notebook only",
    ("flowbook.graph_io.graph_def", "flowbook.graph_io.tf_control_flow"): (
        "TensorFlow's form of control-flow nodes, used by the export; it imports graph_def"
    ),
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
    assert "flowbook.framework.tensor_shape" in IMPORTS["flowbook.framework.tensor"][0]
    assert "flowbook.ops" in IMPORTS["flowbook.variables.variables"][0]  # via flowbook.ops._builder
    assert "flowbook.ops" not in IMPORTS["flowbook.ops.math.math_ops"][0]  # inside its own package


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
        "reach up through flowbook.framework.hooks instead"
    )


@pytest.mark.parametrize("module", MODULES)
def test_function_level_imports_are_listed(module):
    unlisted = sorted(
        f"{t} (line {line})" for t, line in IMPORTS[module][1] if (module, t) not in LAZY_IMPORTS
    )
    assert not unlisted, (
        f"{module} imports inside functions: {unlisted}; import at the top, reach up "
        "through flowbook.framework.hooks, or list it in LAZY_IMPORTS with the reason"
    )


def test_lazy_imports_listed_still_exist():
    present = {(m, t) for m, (_, lazy) in IMPORTS.items() for t, _ in lazy}
    stale = sorted(set(LAZY_IMPORTS) - present)
    assert not stale, f"LAZY_IMPORTS entries no longer in the code: {stale}"
