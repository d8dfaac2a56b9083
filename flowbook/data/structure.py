"""The nesting of a dataset's elements: flatten, pack, and the element spec.

An element is a tensor, or a tuple (namedtuple included) or dict of
elements, as in TF's ``tf.nest`` (a list is a value, converted to one
tensor, as ``from_tensor_slices`` does).  Datasets move elements as flat
lists of components (numpy arrays, dict entries in sorted key order) and
keep the nesting once, as a ``Spec``: the template plus each component's
dtype and static shape, from which ``output_types``, ``output_shapes`` and
``element_spec`` are rebuilt.

    >>> flatten({"b": 1, "a": (2, 3)})
    [2, 3, 1]
    >>> pack({"b": 0, "a": (0, 0)}, [2, 3, 1])
    {'a': (2, 3), 'b': 1}
"""

from __future__ import annotations

from typing import Any, NamedTuple

from flowbook.framework import dtypes
from flowbook.framework.tensor_shape import Shape, TensorShape


def is_nested(value: Any) -> bool:
    """Whether ``value`` is a structure (tuple or dict) rather than one component."""
    return isinstance(value, tuple | dict)


def flatten(structure: Any) -> list[Any]:
    """The components of ``structure``, depth first, dict keys sorted.

    >>> flatten(((1, 2), 3))
    [1, 2, 3]
    """
    if isinstance(structure, dict):
        return [c for k in sorted(structure) for c in flatten(structure[k])]
    if isinstance(structure, tuple):
        return [c for s in structure for c in flatten(s)]
    return [structure]


def pack(template: Any, flat: list[Any]) -> Any:
    """``flat`` rebuilt in the nesting of ``template`` (the inverse of :func:`flatten`).

    >>> pack((0, (0, 0)), [1, 2, 3])
    (1, (2, 3))
    """
    items = iter(flat)
    out = _pack(template, items)
    if next(items, _END) is not _END:
        raise ValueError("pack: more values than the structure has components")
    return out


_END = object()


def _pack(template: Any, items: Any) -> Any:
    if isinstance(template, dict):
        return {k: _pack(template[k], items) for k in sorted(template)}
    if isinstance(template, tuple):
        parts = [_pack(t, items) for t in template]
        return type(template)(*parts) if hasattr(template, "_fields") else tuple(parts)
    value = next(items, _END)
    if value is _END:
        raise ValueError("pack: fewer values than the structure has components")
    return value


def map_structure(fn: Any, structure: Any) -> Any:
    """``fn`` applied to every component, the nesting kept.

    >>> map_structure(lambda x: x * 2, {"a": (1, 2)})
    {'a': (2, 4)}
    """
    return pack(structure, [fn(c) for c in flatten(structure)])


class Spec(NamedTuple):
    """A dataset's element: its nesting, and each component's dtype and static shape.

    >>> s = Spec((0, 0), [dtypes.float32, dtypes.int64], [(2,), ()])
    >>> s.output_types, s.output_shapes
    ((tf.float32, tf.int64), (TensorShape([Dimension(2)]), TensorShape([])))
    """

    template: Any  # the nesting, components replaced by anything (only the shape counts)
    types: list[dtypes.DType]  # per component, in flatten order
    shapes: list[Shape]  # per component: a tuple of int/None, or None (unknown rank)

    @property
    def output_types(self) -> Any:
        return pack(self.template, list(self.types))

    @property
    def output_shapes(self) -> Any:
        return pack(self.template, [TensorShape(s) for s in self.shapes])

    @property
    def element_spec(self) -> Any:
        return pack(
            self.template, [TensorSpec(TensorShape(s), t) for s, t in zip(self.shapes, self.types)]
        )

    def with_shapes(self, shapes: list[Shape]) -> Spec:
        return Spec(self.template, self.types, shapes)


class TensorSpec(NamedTuple):
    """One component of ``element_spec`` (TF's ``tf.TensorSpec``: shape and dtype).

    >>> TensorSpec(TensorShape([3]), dtypes.float32).dtype
    tf.float32
    """

    shape: TensorShape
    dtype: dtypes.DType
    name: str | None = None


def batched(shape: Shape, n: int | None) -> Shape:
    """``shape`` with a leading batch dimension ``n`` (None: unknown)."""
    return None if shape is None else (n, *shape)


def unbatched(shape: Shape) -> Shape:
    """``shape`` without its leading dimension (a slice of it)."""
    if shape is None:
        return None
    if not shape:
        raise ValueError("Unbatching a dataset is only supported for rank >= 1")
    return tuple(shape[1:])
