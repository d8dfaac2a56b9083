"""Debugging ops: CheckNumerics, Print (``tf.Print``) and PrintV2 (``tf.print``).

- **CheckNumerics** passes its input through and fails the run with TF's
  ``InvalidArgumentError("<message> : Tensor had NaN values")`` when it holds
  NaN or Inf; its gradient is the incoming gradient.  ``add_check_numerics_ops``
  puts one after every float output of the graph, chained by control edges
  as TF1 does, so the first failing check is the first bad tensor in
  creation order.
- **Print** (TF1's ``tf.Print``) is an identity on ``input_`` that, when it
  runs, writes ``message`` and the ``data`` values to ``sys.stdout``, looked
  up when the kernel runs: in Jupyter that is the output of the cell that
  called ``run``, even from pool threads under ipykernel.  ``first_n``
  counts in the bound kernel's closure, which ``OpDef.bind`` creates once per
  plan per session: it counts per plan (a run signature), and a plan rebuilt
  after the graph changes, or a Stepper's own plan, starts again at 0.
- **PrintV2** (``tf.print``) has no output: run it, or make it a control
  dependency.  Tensors print numpy-style, other arguments as ``str``.

Both print ops are ``stateful=True`` so constant folding never runs them at
build time and the plan never treats them as pure.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     x = Print(fb.constant([1.0, 2.0]), [fb.constant(7)], message="x: ")
    ...     s.run(x).tolist()
    x: [7]
    [1.0, 2.0]
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from flowbook.framework.errors import InvalidArgumentError
from flowbook.framework.graph import get_default_graph
from flowbook.framework.registry import NOT_DIFFERENTIABLE, Out, op
from flowbook.framework.tensor import Operation, Tensor
from flowbook.ops._builder import make, make1, tensor
from flowbook.ops.control_flow.control_flow_ops import group

__all__ = ["Print", "add_check_numerics_ops", "check_numerics", "print", "print_v2"]

_FLOATS = ("float16", "float32", "float64")


# ------------------------------------------------------------- CheckNumerics
def _check_numerics_infer(tensor: Tensor, message: str) -> Out:
    if not tensor.dtype.is_floating:
        raise TypeError(
            f"CheckNumerics needs a float tensor; '{tensor.name}' is {tensor.dtype.name}"
        )
    return Out(tensor.dtype, tensor._shape)


def _check_numerics_kernel(xp: Any, x: Any, message: str) -> Any:
    if xp.isfinite(x).all():
        return x
    nan, inf = bool(xp.isnan(x).any()), bool(xp.isinf(x).any())
    what = "Inf and NaN" if nan and inf else ("NaN" if nan else "Inf")
    raise InvalidArgumentError(None, None, f"{message} : Tensor had {what} values")


op(
    "CheckNumerics",
    ("tensor",),
    infer=_check_numerics_infer,
    attrs=("message",),
    kernel=_check_numerics_kernel,
    grad=lambda op, grad: grad,
)


def check_numerics(tensor_: Any, message: str, name: str | None = None) -> Tensor:
    """``tensor_`` unchanged; the run fails naming ``message`` if it holds NaN or Inf.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:  # doctest: +ELLIPSIS
    ...     s.run(check_numerics(fb.log(fb.constant(-1.0)), "log"))
    Traceback (most recent call last):
    ...
    flowbook.framework.errors.InvalidArgumentError: CheckNumerics 'CheckNumerics' (...): log : Tensor had NaN values
    """
    x = tensor(tensor_)
    return make1("CheckNumerics", [x], {"message": str(message)}, name=name or "CheckNumerics")


def add_check_numerics_ops() -> Operation:
    """One CheckNumerics per float output of the default graph, grouped (TF1).

    Each check waits for the previous one (control edges, as in TF1), so a
    run of the returned op reports the first bad tensor in creation order.
    Variables' own outputs (TF1's refs) are skipped; their reads are checked.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     y = fb.sqrt(fb.constant(4.0), name="y")
    ...     check = add_check_numerics_ops()
    ...     [op.type for op in fb.get_default_graph().get_operations()][-2:]
    ['CheckNumerics', 'NoOp']
    """
    graph = get_default_graph()
    checks: list[Tensor] = []
    for node in graph.get_operations():
        if node.type in ("CheckNumerics", "VariableV2"):
            continue
        for out in node.outputs:
            if out.dtype.name not in _FLOATS:
                continue
            with graph.control_dependencies(checks):
                checks = [check_numerics(out, f"{node.name}:{out.value_index}")]
    return group(*checks, name="CheckNumerics_group")


# --------------------------------------------------------------------- Print
def _host(value: Any) -> np.ndarray:
    """A value as a numpy array (a CuPy array is copied to the host)."""
    if type(value).__module__.split(".")[0] == "cupy":
        value = value.get()
    return np.asarray(value)


def summarize(value: Any, limit: int = 3) -> str:
    """TF1's ``tf.Print`` text for one value: at most ``limit`` elements (-1: all).

    >>> summarize(np.arange(5)), summarize(np.float32(2.5)), summarize(np.eye(2), -1)
    ('[0 1 2...]', '[2.5]', '[[1.0 0.0] [0.0 1.0]]')
    """
    a = _host(value)
    if a.ndim == 0:
        return f"[{a[()]}]"
    budget = [a.size if limit is None or limit < 0 else limit]

    def rec(x: Any) -> str:
        if x.ndim == 0:
            budget[0] -= 1
            return str(x[()])
        parts: list[str] = []
        cut = False
        for k in range(x.shape[0]):
            if budget[0] <= 0:
                cut = True
                break
            parts.append(rec(x[k]))
        return "[" + " ".join(parts) + ("..." if cut else "") + "]"

    return rec(a)


def _print_infer(input_: Tensor, *data: Tensor, **_: Any) -> Out:
    return Out(input_.dtype, input_._shape)


def _print_bind(xp: Any, message: str, first_n: int, summarize: int) -> Any:
    printed = [0]  # times this bound kernel has printed: per plan, per session

    def run(x: Any, *data: Any) -> Any:
        if first_n < 0 or printed[0] < first_n:
            printed[0] += 1
            text = message + "".join(_summarize(d, summarize) for d in data)
            sys.stdout.write(text + "\n")
        return x

    return run


_summarize = summarize


def _print_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    return [grad] + [None] * (len(op.inputs) - 1)


op(
    "Print",
    ("input", "*data"),
    ("message", "first_n", "summarize"),
    _print_infer,
    kernel=None,
    bind=_print_bind,
    stateful=True,
    host_only=True,
    count_attr="N",
    grad=_print_grad,
    doc="input_ unchanged; writes message and data to sys.stdout when it runs.",
)


def Print(  # TF1's spelling
    input_: Any,
    data: Any,
    message: str | None = None,
    first_n: int | None = None,
    summarize: int | None = None,
    name: str | None = None,
) -> Tensor:
    """``input_`` unchanged; when it runs, ``message`` and ``data`` go to ``sys.stdout``.

    ``first_n``: print only the first n runs (per plan: see the module
    docstring); ``summarize``: elements per value (default 3, -1: all).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     y = Print(fb.constant(1.0), [fb.constant([1, 2, 3, 4])], "v=", summarize=2)
    ...     float(s.run(y))
    v=[1 2...]
    1.0
    """
    x = tensor(input_)
    items = [tensor(d) for d in (data if isinstance(data, list | tuple) else [data])]
    attrs = {
        "message": "" if message is None else str(message),
        "first_n": -1 if first_n is None else int(first_n),
        "summarize": 3 if summarize is None else int(summarize),
    }
    return make1("Print", [x, *items], attrs, name=name or "Print")


# ------------------------------------------------------------------- PrintV2
def _stream(output_stream: Any) -> Any:
    """Where PrintV2 writes: the name of a sys stream (resolved when it runs) or an object."""
    if output_stream is None or output_stream is sys.stdout or output_stream is sys.__stdout__:
        return "stdout"
    if output_stream is sys.stderr or output_stream is sys.__stderr__:
        return "stderr"
    if isinstance(output_stream, str) and not output_stream.startswith("file://"):
        raise ValueError(
            f"output_stream must be sys.stdout, sys.stderr, 'file://<path>', a writable or a "
            f"callable; got {output_stream!r}"
        )
    return output_stream


def _write(stream: Any, text: str) -> None:
    if stream == "stdout":
        sys.stdout.write(text)
    elif stream == "stderr":
        sys.stderr.write(text)
    elif isinstance(stream, str):
        with open(stream[len("file://") :], "a") as f:
            f.write(text)
    elif hasattr(stream, "write"):
        stream.write(text)
    else:
        stream(text.rstrip("\n"))  # a logging function, as tf.compat.v1.logging.info


def _format(value: Any, summarize: int) -> str:
    a = _host(value)
    if a.ndim == 0:
        return str(a[()])
    if summarize is None or summarize < 0:
        return np.array2string(a, threshold=sys.maxsize)
    return np.array2string(a, threshold=2 * summarize, edgeitems=summarize)


def _print_v2_bind(
    xp: Any, template: str, placeholder: str, output_stream: Any, end: str, summarize: int
) -> Any:
    parts = template.split(placeholder)

    def run(*values: Any) -> tuple:
        out = [parts[0]]
        for value, text in zip(values, parts[1:]):
            out += (_format(value, summarize), text)
        _write(output_stream, "".join(out) + end)
        return ()

    return run


def _print_v2_infer(*inputs: Tensor, template: str, placeholder: str, **attrs: Any) -> list:
    n = template.count(placeholder) if placeholder else -1
    if n != len(inputs):
        raise ValueError(
            f"template {template!r} has {n} placeholders {placeholder!r} for {len(inputs)} inputs"
        )
    return []


def _placeholder(texts: list[str]) -> str:
    """``"{}"``, or a longer ``"{{}}"``... that none of ``texts`` contains (as TF does)."""
    mark = "{}"
    while any(mark in t for t in texts):
        mark = "{" + mark + "}"
    return mark


op(
    "PrintV2",
    ("*inputs",),
    ("template", "placeholder", "output_stream", "end", "summarize"),
    _print_v2_infer,
    kernel=None,
    bind=_print_v2_bind,
    stateful=True,
    host_only=True,
    count_attr="N",
    grad=NOT_DIFFERENTIABLE,
    doc="Writes its inputs to output_stream when it runs (tf.print); no outputs.",
    type_attrs={},
)


def print_v2(
    *inputs: Any,
    output_stream: Any = None,
    sep: str = " ",
    end: str = "\n",
    summarize: int = 3,
    name: str | None = None,
) -> Operation:
    """``tf.print``: an op that prints ``inputs`` when it runs; returns the op.

    Tensors (and variables) print numpy-style with ``summarize`` items at
    each end of a dimension; anything else prints as ``str``.
    ``output_stream``: ``sys.stdout`` (None, the default) or ``sys.stderr``,
    looked up when the op runs; ``"file://<path>"`` (appended to); any
    object with ``write``; or a function taking the line (a logger).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(print_v2("loss:", fb.constant([0.5, 0.25]), sep=" "))
    loss: [0.5  0.25]
    """
    tensors: list[Tensor] = []
    texts: list[str | None] = []  # None where a tensor goes
    for x in inputs:
        if isinstance(x, Tensor) or hasattr(x, "_as_tensor"):
            texts.append(None)
            tensors.append(tensor(x))
        else:
            texts.append(str(x))
    mark = _placeholder([t for t in texts if t is not None] + [sep])
    attrs = {
        "template": sep.join(mark if t is None else t for t in texts),
        "placeholder": mark,
        "output_stream": _stream(output_stream),
        "end": end,
        "summarize": summarize,
    }
    return make("PrintV2", tensors, attrs, name=name or "PrintV2")


print = print_v2  # TF's name: tf.print
