"""The graph as the live widget sees it: plain JSON-able dicts, and short value previews.

The front end (``labextension/src``) draws from three state objects; this
module builds the first, and the value previews the other two carry:

- ``graph``: ``{"id", "version", "nodes": [node, ...]}``, one node per op in
  creation order::

      {"name": "layer1/MatMul", "op": "MatMul", "kind": "op", "device": "",
       "inputs": ["x:0", "layer1/w:0"], "control": [], "outputs": [["float32", "(?, 10)"]],
       "cell": "<front-end cell id>", "count": 4, "line": 2, "code": "y = tf.matmul(x, w)",
       "stmt": 2, "stmt_code": null, "stale": false}

  ``stmt`` is the first line of the statement that made the op (a call
  spread over lines is one statement), ``stmt_code`` its text where that is
  not ``line``; present mode groups ops by statement.

  Node ids are op names: a re-run notebook cell recreates the same names, so
  the front end keeps its layout and what the user expanded.
- ``run`` and ``stepper`` (built in :mod:`flowbook.notebook.live`) name ops
  the same way and carry :func:`preview` strings of values.

Names and code are data, never markup: the front end sets them as text.

    >>> import flowbook as fb
    >>> g = fb.Graph()
    >>> with g.as_default():
    ...     x = fb.placeholder(fb.float32, [None, 3], name="x"); y = fb.identity(x, name="y")
    >>> [(n["name"], n["kind"], n["inputs"], n["outputs"]) for n in graph_state(g)["nodes"]]
    [('x', 'placeholder', [], [['float32', '(?, 3)']]), ('y', 'op', ['x:0'], [['float32', '(?, 3)']])]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowbook.framework.tensor import Operation
from flowbook.notebook.loops import frames_state

KINDS = {  # op type -> how the front end draws it (anything else: "op")
    "VariableV2": "variable",
    "Variable": "variable",
    "VarHandleOp": "variable",
    "Placeholder": "placeholder",
    "PlaceholderWithDefault": "placeholder",
    "Const": "constant",
}
PREVIEW_VALUES = 6  # arrays this small are shown whole; larger ones as min/mean/max


def graph_id(graph: Any) -> str:
    """A stable id for ``graph`` in this process (the front end keys its state by it)."""
    return f"g{id(graph):x}"


def graph_state(graph: Any) -> dict[str, Any]:
    """Every op of ``graph`` as the widget's ``graph`` state (see the module doc).

    >>> import flowbook as fb
    >>> graph_state(fb.Graph())["nodes"]
    []
    """
    with graph._lock:
        ops = list(graph._ops.values())
        version = graph._version
        stale = set(graph._stale)
    return {
        "id": graph_id(graph),
        "version": version,
        "nodes": [node(op, op in stale) for op in ops],
        "control_flow": frames_state(ops),  # loop frames and conds (loops.py)
    }


def node(op: Operation, stale: bool = False) -> dict[str, Any]:
    """One op as a widget node."""
    site = op.site
    cell = site.cell
    stmt, stmt_code = site.statement() if cell is not None and site.line else (None, "")
    return {
        "name": op.name,
        "op": op.type,
        "kind": KINDS.get(op.type, "op"),
        "device": op.device,
        "inputs": [t.name for t in op.inputs],
        "control": [c.name for c in op.control_inputs],
        "outputs": [[t.dtype.name, str(t.shape)] for t in op.outputs],
        "cell": None if cell is None else cell.id,
        "count": None if cell is None else cell.execution_count,
        "line": site.line or None,
        "code": site.source_line() or None if site.line else None,
        "stmt": stmt,  # the first line of the statement holding `line` (a call over lines)
        "stmt_code": stmt_code if stmt != site.line else None,  # its text, when another line
        "stale": stale,
    }


def preview(value: Any) -> str:
    """A one-line summary of a value: dtype, shape and a few numbers.

    >>> preview(np.array([1.0, 2.0], np.float32))
    'float32 (2,) [1. 2.]'
    >>> preview(np.arange(100.0))
    'float64 (100,) min 0 mean 49.5 max 99'
    >>> preview(np.array([1.0, np.nan]))
    'float64 (2,) [ 1. nan]'
    """
    if value is None:
        return "None"
    get = getattr(value, "get", None)  # a CuPy array: summarise a host copy
    if get is not None and not isinstance(value, dict | np.ndarray):
        value = get()
    if not isinstance(value, np.ndarray | np.generic):
        text = repr(value)
        return text if len(text) <= 80 else text[:77] + "..."
    a = np.asarray(value)
    head = f"{a.dtype.name} {tuple(a.shape)}"
    if a.size <= PREVIEW_VALUES:
        body = np.array2string(a, precision=4, separator=" ", threshold=PREVIEW_VALUES)
        return f"{head} {' '.join(body.split())}"
    if a.dtype.kind in "biuf":
        with np.errstate(all="ignore"):
            f = a.astype(np.float64, copy=False)
            finite = np.isfinite(f)
            bad = a.size - int(finite.sum())
            ok = f[finite] if bad else f
            if ok.size == 0:
                return f"{head} all NaN/Inf"
            stats = f"min {ok.min():.4g} mean {ok.mean():.4g} max {ok.max():.4g}"
        return f"{head} {stats}" + (f" ({bad} NaN/Inf)" if bad else "")
    return f"{head} {np.array2string(a.ravel()[:PREVIEW_VALUES], threshold=PREVIEW_VALUES)}..."
