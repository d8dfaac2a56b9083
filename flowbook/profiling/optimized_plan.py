"""What the graph optimiser does to a run: ``optimized_plan(fetches, feed_dict)``.

TensorFlow 1 rewrites a graph before it runs (Grappler) and never shows the
result; flowbook shows it, for teaching.  ``optimized_plan`` builds the plan
that ``Session.run(fetches, feed_dict)`` would build, hands it to the
optimiser (:func:`flowbook.runtime.optimize.optimizer.optimize`, with the session's passes
and the fed values' shapes, as the second run of that signature does) and
returns a :class:`PlanRewrite`: the ops as written and as run, what became of
each written op that does not run as written (``changes``: folded to a
constant, merged with a duplicate, removed identity, fused, dropped), one
sentence per rewrite (``notes``) and, per executed op, the written ops it
stands for (``origin``).  Nothing runs but the folded ops' kernels, once.

``tf.show(rewrite)`` draws it in the live graph with a toggle "as written /
as optimised" (:mod:`flowbook.notebook.rewrites` sends :meth:`PlanRewrite.diff`);
``tf.profile(optimized=True)`` times what actually runs
(:mod:`flowbook.profiling.tracing`).

    >>> import numpy as np, flowbook as tf
    >>> with tf.Graph().as_default():
    ...     x = tf.placeholder(tf.float32, [None, 3], name="x")
    ...     y = tf.reshape(tf.identity(x) * 2.0, tf.shape(x), name="y")
    ...     with tf.Session() as sess:
    ...         rw = optimized_plan(y, {x: np.ones((4, 3))})
    >>> rw.summary()
    '5 ops as written, 1 run: 2 folded, 2 removed'
    >>> rw.notes[0]
    "Const 'mul/y': folded to 2.0."
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from flowbook.profiling.timeline import ProfileTable
from flowbook.runtime.codegen.compile import feed_shapes
from flowbook.runtime.optimize.optimizer import Change, Optimized, optimize
from flowbook.runtime.session import BaseSession, get_default_session

__all__ = ["PlanRewrite", "optimized_plan"]

KINDS = ("folded", "merged", "removed", "fused", "dropped")  # Change.kind, in the order shown


class PlanRewrite:
    """A run's plan as written and as the optimiser rewrote it.  See the module docstring.

    >>> PlanRewrite.__name__
    'PlanRewrite'
    """

    def __init__(self, graph: Any, written: list[Any], opt: Optimized | None, fetches: list[str]):
        self.graph = graph  # the graph the plan runs
        self.fetches = fetches  # names of what the run computes
        self.written = [op.name for op in written]  # the plan's ops as written, in order
        self.written_types = {op.name: op.type for op in written}  # written op -> its type
        self.optimized = opt  # the optimiser's record (None: it left the plan as written)
        ran = opt.plan.ops if opt is not None else written
        self.executed = [op.name for op in ran]  # the ops that run, in order
        self.executed_types = {op.name: op.type for op in ran}  # executed op -> its type
        self.changes: list[Change] = list(opt.changes) if opt is not None else []
        self.notes: list[str] = list(opt.notes) if opt is not None else []
        # executed op -> the written ops it stands for
        self.origin: dict[str, tuple[str, ...]] = (
            dict(opt.origin) if opt is not None else {n: (n,) for n in self.executed}
        )
        self._ran = ran

    def counts(self) -> dict[str, int]:
        """How many written ops each kind of change touched (kinds with none left out)."""
        got = Counter(c.kind for c in self.changes)
        return {k: got[k] for k in KINDS if got[k]}

    def summary(self) -> str:
        """One line: ops as written, ops run, and the changes by kind."""
        head = f"{len(self.written)} ops as written, {len(self.executed)} run"
        if not self.changes:
            return head + ": the optimiser left this plan as written"
        return head + ": " + ", ".join(f"{n} {k}" for k, n in self.counts().items())

    def by_type(self) -> ProfileTable:
        """Ops per type as written and as run: where the optimiser took ops away.

        >>> import numpy as np, flowbook as tf
        >>> with tf.Graph().as_default():
        ...     x = tf.placeholder(tf.float32, [None], name="x")
        ...     with tf.Session() as sess:
        ...         t = optimized_plan(tf.identity(x) + tf.identity(x), {x: np.ones(2)}).by_type()
        >>> [(r["type"], r["written"], r["run"]) for r in t.rows]
        [('Identity', 2, 0), ('Add', 1, 1)]
        """
        written = Counter(self.written_types.values())
        ran = Counter(self.executed_types.values())
        rows = [
            {"type": t, "written": written[t], "run": ran[t]}
            for t in sorted(set(written) | set(ran), key=lambda t: (ran[t] - written[t], t))
        ]
        return ProfileTable(rows, self.summary())

    def diff(self) -> dict[str, Any]:
        """The rewrite as the live graph's ``optimized`` state (JSON): what to draw differently.

        ``written``/``executed``: op names; ``changes``: ``{kind, op, into, text}``
        per written op not run as written; ``fused``: the executed ops that are
        not in the graph, ``{name, op, inputs, replaces}``; ``notes``: the sentences.
        """
        names = set(self.written)
        fused = [
            {
                "name": op.name,
                "op": op.type,
                "inputs": [t.name for t in op.inputs],
                "replaces": list(self.origin.get(op.name, ())),
            }
            for op in self._ran
            if op.name not in names
        ]
        return {
            "graph_version": self.graph._version,
            "fetches": list(self.fetches),
            "summary": self.summary(),
            "written": list(self.written),
            "executed": list(self.executed),
            "changes": [c._asdict() for c in self.changes],
            "fused": fused,
            "notes": list(self.notes),
        }

    def __repr__(self) -> str:
        lines = [self.summary(), *(f"  {n}" for n in self.notes[:12])]
        if len(self.notes) > 12:
            lines.append(f"  ... {len(self.notes) - 12} more in .notes")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        items = "".join(f"<li>{_escape(n)}</li>" for n in self.notes)
        return f"<p><b>{_escape(self.summary())}</b></p><ol>{items}</ol>"


def optimized_plan(
    fetches: Any, feed_dict: dict | None = None, session: BaseSession | None = None
) -> PlanRewrite:
    """What the optimiser makes of ``session.run(fetches, feed_dict)`` (default session).

    Uses the session's passes (its ``ConfigProto``'s optimizer options) and
    the fed values' shapes, as the session's own runs do from the second run
    of a feed-shape signature on.  Nothing is run but the folded ops.
    """
    sess = session if session is not None else get_default_session()
    if sess is None:
        raise ValueError(
            "optimized_plan needs a session: call it inside `with tf.Session() as sess:` "
            "or pass session=sess"
        )
    prepared = sess.prepare(fetches, feed_dict)
    plan = prepared.plan
    opt = optimize(plan, feed_shapes(prepared.feeds), sess._passes)
    fetched = {s for s in plan.fetch_slots if s is not None}
    names = [  # what the run computes: fetched values and ops nothing waits for (targets)
        op.name
        for i, op in enumerate(plan.ops)
        if fetched.intersection(plan.outputs[i]) or not plan.consumers[i]
    ]
    return PlanRewrite(sess.graph, list(plan.ops), opt, names)


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
