"""Nested structures of tensors: TF's ``nest`` for tuples, lists, namedtuples and dicts.

An RNN cell's state may be a tensor, an ``LSTMStateTuple`` (a namedtuple),
or a tuple of those (``MultiRNNCell``); code that handles states works on
the flat list of leaves and packs results back into the same structure.
A *sequence* is a tuple, list or dict (dict leaves in sorted-key order, as
TF orders them); anything else, ``None`` included, is a leaf.

    >>> from collections import namedtuple
    >>> Pair = namedtuple("Pair", "c h")
    >>> s = (Pair(1, 2), 3)
    >>> flatten(s)
    [1, 2, 3]
    >>> pack_sequence_as(s, [10, 20, 30])
    (Pair(c=10, h=20), 30)
    >>> map_structure(lambda a, b: a + b, s, s)
    (Pair(c=2, h=4), 6)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = [
    "assert_same_structure",
    "flatten",
    "is_sequence",
    "map_structure",
    "pack_sequence_as",
    "sequence_like",
]


def is_sequence(value: Any) -> bool:
    """Whether ``value`` is a tuple, list or dict (a structure, not a leaf).

    >>> is_sequence((1,)), is_sequence("ab"), is_sequence(None)
    (True, False, False)
    """
    return isinstance(value, tuple | list | dict)


def _children(value: Any) -> list[Any]:
    return [value[k] for k in sorted(value)] if isinstance(value, dict) else list(value)


def flatten(structure: Any) -> list[Any]:
    """The leaves of ``structure``, depth first; a leaf gives ``[leaf]``.

    >>> flatten([1, (2, {"b": 4, "a": 3})])
    [1, 2, 3, 4]
    """
    if not is_sequence(structure):
        return [structure]
    return [leaf for child in _children(structure) for leaf in flatten(child)]


def sequence_like(structure: Any, children: list[Any]) -> Any:
    """A sequence of ``structure``'s kind (tuple, list, namedtuple, dict) holding ``children``.

    >>> sequence_like({"b": 0, "a": 0}, [1, 2])
    {'a': 1, 'b': 2}
    """
    if isinstance(structure, dict):
        return type(structure)(zip(sorted(structure), children, strict=True))
    if isinstance(structure, tuple) and hasattr(structure, "_fields"):  # a namedtuple
        return type(structure)(*children)
    return type(structure)(children)


def pack_sequence_as(structure: Any, flat_sequence: Any) -> Any:
    """``flat_sequence`` put into the shape of ``structure`` (the inverse of :func:`flatten`).

    >>> pack_sequence_as([0, (0, 0)], ["a", "b", "c"])
    ['a', ('b', 'c')]
    """
    flat = list(flat_sequence)
    if len(flat) != len(flatten(structure)):
        raise ValueError(
            f"Could not pack sequence. Structure had {len(flatten(structure))} elements, but "
            f"flat_sequence had {len(flat)} elements.  Structure: {structure!r}"
        )
    leaves = iter(flat)

    def build(node: Any) -> Any:
        if not is_sequence(node):
            return next(leaves)
        return sequence_like(node, [build(child) for child in _children(node)])

    return build(structure)


def assert_same_structure(first: Any, second: Any) -> None:
    """Raise ``ValueError`` unless both nest the same way (same kinds, same lengths).

    >>> assert_same_structure((1, [2]), ("a", ["b"]))
    >>> assert_same_structure((1, 2), (1,))
    Traceback (most recent call last):
    ...
    ValueError: The two structures don't have the same nested structure: (1, 2) and (1,)
    """

    def same(a: Any, b: Any) -> bool:
        if is_sequence(a) != is_sequence(b):
            return False
        if not is_sequence(a):
            return True
        plain = type(a) in (tuple, list) and type(b) in (tuple, list)
        if type(a) is not type(b) and not plain:
            return False
        ca, cb = _children(a), _children(b)
        return len(ca) == len(cb) and all(same(x, y) for x, y in zip(ca, cb, strict=True))

    if not same(first, second):
        raise ValueError(
            f"The two structures don't have the same nested structure: {first!r} and {second!r}"
        )


def map_structure(func: Callable[..., Any], *structures: Any) -> Any:
    """``func`` applied leaf by leaf across ``structures`` (all nested alike).

    >>> map_structure(lambda x: x * 2, {"a": 1, "b": (2, 3)})
    {'a': 2, 'b': (4, 6)}
    """
    if not structures:
        raise ValueError("map_structure needs at least one structure")
    for other in structures[1:]:
        assert_same_structure(structures[0], other)
    flats = [flatten(s) for s in structures]
    return pack_sequence_as(structures[0], [func(*leaves) for leaves in zip(*flats, strict=True)])
