"""Static shapes: known, partly known (``[None, 784]``) or of unknown rank.

Inside the engine a static shape is a plain tuple of ints and ``None`` (an
unknown dimension), or ``None`` for an unknown rank: shape inference runs on
every op a cell builds, so it works on tuples.  :class:`TensorShape` and
:class:`Dimension` are the public TF1 views over such a tuple.

    >>> TensorShape([None, 784]).as_list()
    [None, 784]
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator
from typing import Any

Shape = tuple[int | None, ...] | None  # the engine's form: None = unknown rank


class Dimension:
    """One dimension of a TensorShape, as TF1's: ``.value`` is an int or None.

    Arithmetic (``+ - * // %``) with ints or Dimensions gives a Dimension,
    unknown when either side is; comparisons give a bool, or None when
    either side is unknown (so ``if d == 3`` is falsy for an unknown ``d``).
    ``/`` is refused, as in TF, in favour of ``//``.

    >>> s = TensorShape([None, 7, 7, 64])
    >>> s[1] * s[2], s[0] * s[1], Dimension(3) < Dimension(None)
    (Dimension(49), Dimension(None), None)
    """

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        if isinstance(value, Dimension):
            value = value.value
        if value is not None:
            if isinstance(value, str | bytes | float):
                raise TypeError(_not_a_dimension(value))
            try:
                value = operator.index(value)
            except TypeError:
                raise TypeError(_not_a_dimension(value)) from None
            if value < 0:
                raise ValueError(f"Dimension {value} must be >= 0")
        self.value: int | None = value

    # ------------------------------------------------------------ conversions
    def __int__(self) -> int:
        if self.value is None:
            raise TypeError("Cannot convert an unknown Dimension to an int")
        return self.value

    __index__ = __int__

    def __bool__(self) -> bool:
        return bool(self.value)

    def __repr__(self) -> str:
        return f"Dimension({self.value})"

    def __str__(self) -> str:
        return "?" if self.value is None else str(self.value)

    def __hash__(self) -> int:
        return hash(self.value)

    # ---------------------------------------------------------- compatibility
    def is_compatible_with(self, other: Any) -> bool:
        other_value = as_dimension(other).value
        return self.value is None or other_value is None or self.value == other_value

    def assert_is_compatible_with(self, other: Any) -> None:
        if not self.is_compatible_with(other):
            raise ValueError(f"Dimensions {self} and {as_dimension(other)} are not compatible")

    def merge_with(self, other: Any) -> Dimension:
        """The known one of the two, or either when both agree; ValueError if they differ."""
        other = as_dimension(other)
        self.assert_is_compatible_with(other)
        return Dimension(self.value if self.value is not None else other.value)

    # -------------------------------------------------------------- arithmetic
    def _apply(self, other: Any, fn: Callable[[int, int], int], reverse: bool = False) -> Any:
        o = _or_none(other)
        if o is NotImplemented:
            return NotImplemented
        if self.value is None or o.value is None:
            return Dimension(None)
        return Dimension(fn(o.value, self.value) if reverse else fn(self.value, o.value))

    def __add__(self, other: Any) -> Any:
        return self._apply(other, operator.add)

    def __radd__(self, other: Any) -> Any:
        return self._apply(other, operator.add, True)

    def __sub__(self, other: Any) -> Any:
        return self._apply(other, operator.sub)

    def __rsub__(self, other: Any) -> Any:
        return self._apply(other, operator.sub, True)

    def __mul__(self, other: Any) -> Any:
        return self._apply(other, operator.mul)

    def __rmul__(self, other: Any) -> Any:
        return self._apply(other, operator.mul, True)

    def __floordiv__(self, other: Any) -> Any:
        return self._apply(other, operator.floordiv)

    def __rfloordiv__(self, other: Any) -> Any:
        return self._apply(other, operator.floordiv, True)

    def __mod__(self, other: Any) -> Any:
        return self._apply(other, operator.mod)

    def __rmod__(self, other: Any) -> Any:
        return self._apply(other, operator.mod, True)

    def __truediv__(self, other: Any) -> Any:
        raise TypeError(
            f"unsupported operand type(s) for /: 'Dimension' and '{type(other).__name__}', "
            "please use // instead"
        )

    def __rtruediv__(self, other: Any) -> Any:
        raise TypeError(
            f"unsupported operand type(s) for /: '{type(other).__name__}' and 'Dimension', "
            "please use // instead"
        )

    # ------------------------------------------------------------- comparisons
    def _compare(self, other: Any, fn: Callable[[int, int], bool]) -> Any:
        o = _or_none(other)
        if o is NotImplemented:
            return NotImplemented
        if self.value is None or o.value is None:
            return None
        return fn(self.value, o.value)

    def __eq__(self, other: object) -> Any:
        return self._compare(other, operator.eq)

    def __ne__(self, other: object) -> Any:
        return self._compare(other, operator.ne)

    def __lt__(self, other: Any) -> Any:
        return self._compare(other, operator.lt)

    def __le__(self, other: Any) -> Any:
        return self._compare(other, operator.le)

    def __gt__(self, other: Any) -> Any:
        return self._compare(other, operator.gt)

    def __ge__(self, other: Any) -> Any:
        return self._compare(other, operator.ge)


def _not_a_dimension(value: Any) -> str:
    return (
        "Dimension value must be integer or None or have an __index__ method, "
        f"got value '{value!r}' with type '{type(value)}'"
    )


def _or_none(value: Any) -> Any:
    """``value`` as a Dimension, or NotImplemented when it is not one (a float, a string)."""
    try:
        return as_dimension(value)
    except (TypeError, ValueError):
        return NotImplemented


def as_dimension(value: Any) -> Dimension:
    """``value`` itself if a Dimension, else ``Dimension(value)``.

    >>> as_dimension(3), as_dimension(None)
    (Dimension(3), Dimension(None))
    """
    return value if isinstance(value, Dimension) else Dimension(value)


def as_shape(value: Any) -> Shape:
    """Normalise a TensorShape, list, tuple or None into the engine's tuple form.

    >>> as_shape([2, None]), as_shape(None), as_shape(TensorShape([3]))
    ((2, None), None, (3,))
    """
    if value is None:
        return None
    if isinstance(value, TensorShape):
        return value._dims
    if isinstance(value, int):
        return (value,)
    dims: list[int | None] = []
    for d in value:
        if isinstance(d, Dimension):
            d = d.value
        if d is not None:
            d = int(d)
            if d < -1:
                raise ValueError(f"Dimension {d} must be >= 0 (or -1/None for unknown)")
            if d == -1:
                d = None
        dims.append(d)
    return tuple(dims)


def compatible(a: Shape, b: Shape) -> bool:
    """Whether two engine shapes could describe the same array.

    >>> compatible((None, 3), (5, 3)), compatible((2,), (2, 1))
    (True, False)
    """
    if a is None or b is None:
        return True
    if len(a) != len(b):
        return False
    return all(x is None or y is None or x == y for x, y in zip(a, b))


def merge(a: Shape, b: Shape) -> Shape:
    """The most specific shape compatible with both; raises ValueError if none."""
    if a is None:
        return b
    if b is None:
        return a
    if not compatible(a, b):
        raise ValueError(f"Shapes {fmt(a)} and {fmt(b)} are not compatible")
    return tuple(x if x is not None else y for x, y in zip(a, b))


def fmt(shape: Shape) -> str:
    """Print a shape as TensorFlow does in messages: ``[?,784]`` or ``<unknown>``."""
    if shape is None:
        return "<unknown>"
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


def num_elements(shape: Shape) -> int | None:
    """The element count, or None when any dimension is unknown."""
    if shape is None or None in shape:
        return None
    n = 1
    for d in shape:
        n *= d  # type: ignore[operator]
    return n


class TensorShape:
    """The static shape of a tensor, TF1 style.

    >>> s = TensorShape([None, 3]); s.ndims, s[1].value, s.is_fully_defined()
    (2, 3, False)
    """

    __slots__ = ("_dims",)

    def __init__(self, dims: Any) -> None:
        self._dims: Shape = as_shape(dims)  # tuple of int/None, or None for unknown rank

    @property
    def ndims(self) -> int | None:
        return None if self._dims is None else len(self._dims)

    rank = ndims

    @property
    def dims(self) -> list[Dimension] | None:
        return None if self._dims is None else [Dimension(d) for d in self._dims]

    def as_list(self) -> list[int | None]:
        """The dimensions as a list; raises ValueError for an unknown rank."""
        if self._dims is None:
            raise ValueError("as_list() is not defined on an unknown TensorShape.")
        return list(self._dims)

    def as_tuple(self) -> Shape:
        return self._dims

    def is_fully_defined(self) -> bool:
        return self._dims is not None and None not in self._dims

    def num_elements(self) -> int | None:
        return num_elements(self._dims)

    def is_compatible_with(self, other: Any) -> bool:
        return compatible(self._dims, as_shape(other))

    def assert_is_compatible_with(self, other: Any) -> None:
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {TensorShape(other)} are incompatible")

    def merge_with(self, other: Any) -> TensorShape:
        """The most specific shape compatible with both; ValueError if there is none."""
        other = as_tensor_shape(other)
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {other} are not compatible")
        return TensorShape(merge(self._dims, other._dims))

    def most_specific_compatible_shape(self, other: Any) -> TensorShape:
        """The most specific shape both are compatible with (unknown where they differ)."""
        o = as_shape(other)
        if self._dims is None or o is None or len(self._dims) != len(o):
            return TensorShape(None)
        return TensorShape([x if x == y else None for x, y in zip(self._dims, o)])

    def concatenate(self, other: Any) -> TensorShape:
        o = as_shape(other)
        if self._dims is None or o is None:
            return TensorShape(None)
        return TensorShape(self._dims + o)

    def __add__(self, other: Any) -> TensorShape:
        return self.concatenate(other)

    def __radd__(self, other: Any) -> TensorShape:
        return as_tensor_shape(other).concatenate(self)

    def assert_has_rank(self, rank: int) -> None:
        if self._dims is not None and len(self._dims) != rank:
            raise ValueError(f"Shape {self} must have rank {rank}")

    def assert_same_rank(self, other: Any) -> None:
        other = as_tensor_shape(other)
        if self.ndims is not None and other.ndims is not None and self.ndims != other.ndims:
            raise ValueError(f"Shapes {self} and {other} must have the same rank")

    def assert_is_fully_defined(self) -> None:
        if not self.is_fully_defined():
            raise ValueError(f"Shape {self} is not fully defined")

    def with_rank(self, rank: int) -> TensorShape:
        if self._dims is None:
            return TensorShape([None] * rank)
        if len(self._dims) != rank:
            raise ValueError(f"Shape {self} must have rank {rank}")
        return self

    def with_rank_at_least(self, rank: int) -> TensorShape:
        if self._dims is not None and len(self._dims) < rank:
            raise ValueError(f"Shape {self} must have rank at least {rank}")
        return self

    def with_rank_at_most(self, rank: int) -> TensorShape:
        if self._dims is not None and len(self._dims) > rank:
            raise ValueError(f"Shape {self} must have rank at most {rank}")
        return self

    def __bool__(self) -> bool:
        """False only for an unknown rank (a scalar's shape is truthy), as in TF."""
        return self._dims is not None

    def __len__(self) -> int:
        if self._dims is None:
            raise ValueError("Cannot take the length of a shape with unknown rank.")
        return len(self._dims)

    def __iter__(self) -> Iterator[Dimension]:
        if self._dims is None:
            raise ValueError("Cannot iterate over a shape with unknown rank.")
        return iter([Dimension(d) for d in self._dims])

    def __getitem__(self, key: Any) -> Any:
        if self._dims is None:
            return TensorShape(None) if isinstance(key, slice) else Dimension(None)
        if isinstance(key, slice):
            return TensorShape(self._dims[key])
        return Dimension(self._dims[key])

    def __eq__(self, other: object) -> bool:
        try:
            return self._dims == as_shape(other)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return NotImplemented

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self) -> int:
        return hash(self._dims)

    def __repr__(self) -> str:
        if self._dims is None:
            return "TensorShape(None)"
        return f"TensorShape({[Dimension(d) for d in self._dims]})"

    def __str__(self) -> str:
        if self._dims is None:
            return "<unknown>"
        inner = ", ".join("?" if d is None else str(d) for d in self._dims)
        return f"({inner},)" if len(self._dims) == 1 else f"({inner})"


def as_tensor_shape(value: Any) -> TensorShape:
    """``value`` itself if a TensorShape, else ``TensorShape(value)``."""
    return value if isinstance(value, TensorShape) else TensorShape(value)


def scalar() -> TensorShape:
    return TensorShape([])


def broadcast(a: Shape, b: Shape) -> Shape:
    """The static result shape of numpy broadcasting; ValueError if impossible.

    >>> broadcast((None, 3), (3,)), broadcast((2, 1), (1, 5))
    ((None, 3), (2, 5))
    """
    if a is None or b is None:
        return None
    n = max(len(a), len(b))
    a = (1,) * (n - len(a)) + a
    b = (1,) * (n - len(b)) + b
    out: list[int | None] = []
    for x, y in zip(a, b):
        if x == 1:
            out.append(y)
        elif y == 1 or x == y:
            out.append(x)
        elif x is None or y is None:
            out.append(x if y is None else y)
        else:
            raise ValueError(
                f"Dimensions must be equal or 1, but are {x} and {y} for shapes {fmt(a)} and {fmt(b)}"
            )
    return tuple(out)
