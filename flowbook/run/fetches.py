"""Fetches: what ``Session.run`` is asked for, and the values it hands back.

``flatten`` turns a nest of fetches (tensors, ops, names like ``"c:0"``,
variables, in lists, tuples, namedtuples and dicts) into unique graph
elements and a structure of indices; ``rebuild`` puts the fetched values
back into that structure.  ``to_numpy`` is what a fetched value looks like
to the user (a numpy array or scalar, never a device array or a variable's
state); ``host_value`` is the same as a copy, for values a run still holds.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default() as g:
    ...     a = tf.constant(1.0, name="a")
    ...     elements, structure = flatten(g, {"x": a, "pair": (a, "a:0")})
    >>> [e.name for e in elements], rebuild(structure, [5])
    (['a:0'], {'x': 5, 'pair': (5, 5)})
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowbook.devices import to_host
from flowbook.graph import Graph
from flowbook.tensor import Operation, Tensor
from flowbook.var_state import VarState


def flatten(graph: Graph, fetches: Any) -> tuple[list[Any], Any]:
    """Unique graph elements of a nested fetch, and a structure of indices into them."""
    elements: list[Any] = []
    position: dict[Any, int] = {}

    def walk(f: Any) -> Any:
        if isinstance(f, list):
            return [walk(x) for x in f]
        if isinstance(f, tuple) and not hasattr(f, "_fields"):
            return tuple(walk(x) for x in f)
        if hasattr(f, "_fields"):  # namedtuple
            return type(f)(*[walk(x) for x in f])
        if isinstance(f, dict):
            return type(f)((k, walk(v)) for k, v in f.items())
        if f is None:
            raise TypeError("Fetch argument None has invalid type <class 'NoneType'>")
        element = fetch_element(graph, f)
        i = position.get(element)
        if i is None:
            i = position[element] = len(elements)
            elements.append(element)
        return _Leaf(i)

    return elements, walk(fetches)


class _Leaf:
    __slots__ = ("i",)

    def __init__(self, i: int) -> None:
        self.i = i


def rebuild(structure: Any, values: list[Any]) -> Any:
    if isinstance(structure, _Leaf):
        return values[structure.i]
    if isinstance(structure, list):
        return [rebuild(s, values) for s in structure]
    if hasattr(structure, "_fields"):
        return type(structure)(*[rebuild(s, values) for s in structure])
    if isinstance(structure, tuple):
        return tuple(rebuild(s, values) for s in structure)
    return type(structure)((k, rebuild(v, values)) for k, v in structure.items())


def fetch_element(graph: Graph, f: Any) -> Tensor | Operation:
    try:
        element = graph.as_graph_element(f, allow_tensor=True, allow_operation=True)
    except TypeError as e:
        raise TypeError(
            f"Fetch argument {f!r} has invalid type {type(f)}, must be a string or Tensor. ({e})"
        ) from None
    except KeyError as e:
        raise KeyError(
            f"Fetch argument {f!r} cannot be interpreted as a Tensor. ({e.args[0]})"
        ) from None
    except ValueError as e:
        raise ValueError(f"Fetch argument {f!r} cannot be interpreted as a Tensor. ({e})") from None
    return element


def to_numpy(value: Any) -> Any:
    t = type(value)
    if t is np.ndarray:
        if value.ndim == 0:
            return value[()]
        return value if value.flags.writeable else value.copy()
    if isinstance(value, np.generic):
        return value
    if t is VarState:  # a fetch of a variable's own output ("W:0") gives its value
        return to_numpy(value.read())
    return np.asarray(value)


def host_value(value: Any) -> Any:
    """A value as ``Session.run`` returns it, never sharing memory with the run's buffers.

    >>> host_value(np.arange(3)).tolist()
    [0, 1, 2]
    """
    if type(value) is VarState:
        value = value.read()
    v = to_numpy(to_host(value))  # a value on a GPU is copied to the host
    return v.copy() if isinstance(v, np.ndarray) else v
