"""What a run is asked for, read once: fetches flattened, feeds checked, the last run remembered.

``Session.run(fetches, feed_dict)`` first turns its arguments into graph
elements and checked arrays.  The general path (``flowbook.runtime.values``:
``flatten``, ``feed_items``) handles every nesting and key a user may pass;
:func:`fetch_elements` takes the common shapes (one tensor, one op, a flat
tuple or list of distinct tensors and ops) without walking them, and
:func:`feeds` checks each entry.

**The last run.**  A training loop runs the same fetches with the same feed
keys thousands of times.  :class:`LastRun` remembers such a run (fetches
that are tensors or ops, compared by identity; feed keys that are the
graph's tensors, in the same order) with what the general path worked out
for it: elements, structure, fed tensors, plan-cache key, plan and path.
:meth:`LastRun.values` answers the next run's feeds when its signature is
the same and its plan is still the session's last (``PlanCache.last``: a
dropped or evicted plan is never ``last``; the session checks the graph's
edit log first).  Each fed value is accepted as is when it is an array of
the tensor's dtype and of a shape already accepted for it (under the
tensor's static shape of that moment); an ``int64`` array fed to an
``int32`` tensor is cast with numpy's ``same_value`` casting, which refuses
what would change a value.  Anything else (another dtype or shape, a Python
list, a value the cast refuses) goes through ``feed_value`` as before, so
errors and conversions stay exactly the general path's.  A fed variable,
a string key or a SparseTensor key is never remembered.

    >>> import numpy as np, flowbook as tf
    >>> with tf.Graph().as_default() as g:
    ...     x = tf.placeholder(tf.int32, [None], name="x"); y = x + 1
    ...     with tf.Session() as s:
    ...         _ = s.run(y, {x: np.arange(3)})
    ...         s._last.values(y, {x: np.arange(3)})[0].dtype
    dtype('int32')
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowbook.framework.graph import Graph
from flowbook.framework.tensor import Operation, Tensor
from flowbook.runtime.values import (
    SAME_VALUE,
    feed_items,
    feed_value,
    flatten,
    rebuild,
    to_numpy,
)

__all__ = ["LastRun", "feeds", "fetch_elements", "unpack"]

ONE = 0  # structure: a single tensor or op fetched
FLAT = 1  # structure: a flat tuple of distinct elements
_ELEMENT = (Tensor, Operation)


_INT64, _INT32 = np.dtype(np.int64), np.dtype(np.int32)


def fetch_elements(graph: Graph, fetches: Any) -> tuple[list[Any], Any]:
    """``(elements, structure)`` of ``fetches``: the common shapes fast, the rest by ``flatten``.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default() as g:
    ...     a = tf.constant(1.0, name="a")
    ...     fetch_elements(g, a)[1], fetch_elements(g, (a, a.op))[1]
    (0, 1)
    """
    t = type(fetches)
    if (t is Tensor or t is Operation) and fetches.graph is graph:
        return [fetches], ONE
    if t is tuple and _flat(graph, fetches):
        return list(fetches), FLAT
    return flatten(graph, fetches)


def _flat(graph: Graph, fetches: tuple | list) -> bool:
    """Whether ``fetches`` holds distinct tensors and ops of ``graph`` only (nothing nested)."""
    for f in fetches:
        if type(f) not in _ELEMENT or f.graph is not graph:
            return False
    return len(set(fetches)) == len(fetches)


def unpack(structure: Any, values: list[Any]) -> Any:
    """The fetched ``values`` as the user gets them, in the fetches' structure."""
    if structure == ONE:
        v = values[0]
        return None if v is None else to_numpy(v)
    if structure == FLAT:
        return tuple([None if v is None else to_numpy(v) for v in values])
    return rebuild(structure, [None if v is None else to_numpy(v) for v in values])


def feeds(graph: Graph, feed_dict: dict) -> tuple[tuple[Tensor, ...], tuple[Any, ...]]:
    """The fed tensors and their checked values, in ``feed_dict``'s order."""
    tensors: list[Tensor] = []
    values: list[Any] = []
    for key, value in feed_dict.items():
        for t, v in feed_items(graph, key, value):
            tensors.append(t)
            values.append(v)
    return tuple(tensors), tuple(values)


class LastRun:
    """One session's last run signature and what the general path made of it (module doc)."""

    __slots__ = (
        "elements",
        "fetches",
        "items",
        "key",
        "keys",
        "ok",
        "path",
        "plan",
        "static",
        "structure",
        "targets",
    )

    def __init__(
        self,
        fetches: Any,
        items: tuple | None,
        elements: list,
        structure: Any,
        tensors: tuple[Tensor, ...],
        key: tuple,
        plan: Any,
        path: Any,
    ) -> None:
        self.fetches = fetches  # the fetched tensor or op; for a list or tuple, its type
        self.items = items  # a list's or tuple's items (compared by identity), else None
        self.elements = elements  # as fetch_elements gave them
        self.structure = structure  # as fetch_elements gave it
        self.keys = tensors  # the feed_dict's keys: the fed tensors, in order
        self.key = key  # the plan cache's key
        self.plan = plan  # the plan the run ran (valid while it is PlanCache.last)
        self.path = path  # its RunPath
        self.static = tuple(t._shape for t in tensors)  # static shapes the checks were made under
        self.targets = tuple(t.dtype.np for t in tensors)  # each fed tensor's numpy dtype
        self.ok: tuple[set, ...] = tuple(set() for _ in tensors)  # accepted shapes per feed

    @classmethod
    def of(
        cls,
        graph: Graph,
        fetches: Any,
        feed_dict: dict | None,
        elements: list,
        structure: Any,
        tensors: tuple,
        key: tuple,
        plan: Any,
        path: Any,
    ) -> LastRun | None:
        """A LastRun for this run, or None when its signature is not one remembered."""
        t = type(fetches)
        if t is Tensor or t is Operation:
            items = None
        elif (t is list or t is tuple) and _flat(graph, fetches):
            items, fetches = tuple(fetches), t
        else:
            return None
        keys = tuple(feed_dict) if feed_dict else ()
        if len(keys) != len(tensors) or any(k is not t for k, t in zip(keys, tensors)):
            return None  # a string, variable or SparseTensor key
        if any(t.op.type == "VariableV2" for t in tensors):
            return None  # a fed variable gets a VarState of its own per run
        return cls(fetches, items, elements, structure, tensors, key, plan, path)

    def values(self, fetches: Any, feed_dict: dict | None) -> tuple[Any, ...] | None:
        """The checked feed values when ``fetches``/``feed_dict`` have this signature, else None."""
        items = self.items
        if items is None:
            if fetches is not self.fetches:
                return None
        elif type(fetches) is not self.fetches or len(fetches) != len(items):
            return None
        else:
            for a, b in zip(fetches, items):
                if a is not b:
                    return None
        keys = self.keys
        if not feed_dict:
            return () if not keys else None
        if len(feed_dict) != len(keys):
            return None
        out = []
        for (k, v), t, target, static, ok in zip(
            feed_dict.items(), keys, self.targets, self.static, self.ok
        ):
            if k is not t or t._shape is not static:
                return None
            if type(v) is np.ndarray and v.shape in ok:
                dtype = v.dtype
                if dtype is target:
                    out.append(v)
                    continue
                if SAME_VALUE and dtype is _INT64 and target is _INT32:
                    try:
                        out.append(v.astype(_INT32, casting="same_value"))
                        continue
                    except ValueError:
                        pass  # out of range: feed_value says so
            arr = feed_value(t, v)  # the general check: converts, or raises its error
            if type(arr) is np.ndarray and type(v) is np.ndarray:
                ok.add(v.shape)
            out.append(arr)
        return tuple(out)
