"""Nested structures of values, as TensorFlow's ``nest``: flatten and pack them back.

A structure is a value, or a list, tuple, namedtuple or dict of structures
(``None`` is a leaf).  Dict entries go in sorted key order, as TensorFlow
orders them, so a loop's variables and an RNN's states flatten the same way
there and here.  Loop variables, cond results, ``map_fn`` elements and RNN
states all go through here.

    >>> flatten({"b": 1, "a": (2, 3)})
    [2, 3, 1]
    >>> pack_sequence_as({"b": 0, "a": (0, 0)}, [7, 8, 9])
    {'a': (7, 8), 'b': 9}
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["assert_same_structure", "flatten", "is_sequence", "map_structure", "pack_sequence_as"]


def is_sequence(x: Any) -> bool:
    """Whether ``x`` is a structure with parts (list, tuple, namedtuple, dict), not a leaf."""
    return isinstance(x, list | tuple | dict)


def _children(x: Any) -> list[Any]:
    if isinstance(x, dict):
        return [x[k] for k in sorted(x)]
    return list(x)


def flatten(structure: Any) -> list[Any]:
    """The leaves of ``structure``, depth first (dicts in sorted key order).

    >>> flatten([1, (2, [3])])
    [1, 2, 3]
    """
    if not is_sequence(structure):
        return [structure]
    out: list[Any] = []
    for child in _children(structure):
        out.extend(flatten(child))
    return out


def pack_sequence_as(structure: Any, flat: list[Any]) -> Any:
    """``flat`` put back into the shape of ``structure``.

    >>> pack_sequence_as([0, (0, 0)], ["a", "b", "c"])
    ['a', ('b', 'c')]
    """
    flat = list(flat)
    n = len(flatten(structure))
    if n != len(flat):
        raise ValueError(
            f"The structure has {n} leaves but {len(flat)} values were given to pack into it"
        )
    return _pack(structure, flat)[0]


def _pack(structure: Any, flat: list[Any]) -> tuple[Any, list[Any]]:
    if not is_sequence(structure):
        return flat[0], flat[1:]
    if isinstance(structure, dict):
        out = {}
        for k in sorted(structure):
            out[k], flat = _pack(structure[k], flat)
        return type(structure)((k, out[k]) for k in sorted(structure)), flat
    items = []
    for child in structure:
        item, flat = _pack(child, flat)
        items.append(item)
    if isinstance(structure, tuple) and hasattr(structure, "_fields"):  # a namedtuple
        return type(structure)(*items), flat
    return type(structure)(items), flat


def assert_same_structure(a: Any, b: Any, what: str = "the two structures") -> None:
    """Raise ValueError (saying ``what``) unless ``a`` and ``b`` nest the same way.

    >>> assert_same_structure([1, (2, 3)], [4, (5, 6)])
    """
    if is_sequence(a) != is_sequence(b):
        raise ValueError(f"{what} do not have the same nested structure: {a!r} and {b!r}")
    if not is_sequence(a):
        return
    if isinstance(a, dict) != isinstance(b, dict):
        raise ValueError(f"{what} do not have the same nested structure: {a!r} and {b!r}")
    if isinstance(a, dict) and sorted(a) != sorted(b):
        raise ValueError(f"{what} have different keys: {sorted(a)} and {sorted(b)}")
    ca, cb = _children(a), _children(b)
    if len(ca) != len(cb):
        raise ValueError(f"{what} do not have the same length: {len(ca)} and {len(cb)}")
    for x, y in zip(ca, cb):
        assert_same_structure(x, y, what)


def map_structure(fn: Callable[..., Any], *structures: Any) -> Any:
    """``fn`` applied leaf by leaf across ``structures`` (which must nest alike).

    >>> map_structure(lambda a, b: a + b, (1, [2]), (10, [20]))
    (11, [22])
    """
    for s in structures[1:]:
        assert_same_structure(structures[0], s)
    flats = [flatten(s) for s in structures]
    return pack_sequence_as(structures[0], [fn(*leaves) for leaves in zip(*flats)])
