"""Segment reductions: rows of ``data`` reduced into segments by id.

Two families, TensorFlow's:

* the *sorted* ops ``SegmentSum/Mean/Max/Min/Prod(data, segment_ids)``:
  ``segment_ids`` is a vector, one id per row of ``data``, sorted and
  non-negative (InvalidArgumentError naming the op otherwise, at build time
  when the ids are constants); the output has ``max(id) + 1`` rows and an
  empty segment gives 0 (1 for the product);
* the *unsorted* ops ``UnsortedSegmentMax/Min/Prod(data, segment_ids,
  num_segments)`` (``UnsortedSegmentSum`` lives in ``selection_ops``: it is
  gather's gradient): ids in any order, of any shape that is a prefix of
  ``data``'s, negative ids dropped; ``num_segments`` rows, an empty segment
  gives the reduction's identity (the lowest value for max, 1 for the
  product).  ``unsorted_segment_mean`` is no op of its own: as in TF it is
  the segment sum over the segment count.

One kernel body does all of them: ``out`` starts at the identity and
``xp.<ufunc>.at`` folds the rows in (numpy and CuPy both have ``add``,
``maximum`` and ``minimum.at``; CuPy has no ``multiply.at``, so the product
ops are ``host_only``).  Gradients: the sum gathers the gradient back at each
id, the mean divides it by the count first, max/min share it among the
elements equal to the result (ties split it), the product gives each element
the product of the others in its segment (exact when a segment holds zeros).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.segment_max([1, 5, 2, 7], [0, 0, 1, 1])).tolist()
    [5, 7]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowbook.framework.errors import InvalidArgumentError
from flowbook.framework.graph import name_scope
from flowbook.framework.registry import OpDef, Out, op
from flowbook.framework.tensor import Operation, Tensor
from flowbook.framework.tensor_shape import fmt
from flowbook.ops._builder import make1
from flowbook.ops._shape_inputs import check_int, const_int, const_ints, int_input
from flowbook.ops.array.cast_ops import cast
from flowbook.ops.array.constant_op import convert_to_tensor
from flowbook.ops.array.fill_ops import ones_like, zeros_like
from flowbook.ops.array.selection_ops import gather, unsorted_segment_sum, where
from flowbook.ops.array.shape_ops import reshape, shape
from flowbook.ops.math.elementwise import NUMBER, REAL, check_dtype
from flowbook.ops.math.elementwise_ops import equal, greater_equal, maximum, multiply, realdiv

__all__ = [
    "segment_max",
    "segment_mean",
    "segment_min",
    "segment_prod",
    "segment_sum",
    "unsorted_segment_max",
    "unsorted_segment_mean",
    "unsorted_segment_min",
    "unsorted_segment_prod",
]

_HOW = {"Sum": "add", "Mean": "add", "Max": "maximum", "Min": "minimum", "Prod": "multiply"}


def _identity(how: str, dtype: Any) -> Any:
    """The value an empty unsorted segment holds (TF: lowest for max, highest for min)."""
    if how in ("add", "multiply"):
        return 0 if how == "add" else 1
    if dtype.kind == "f":
        return -np.inf if how == "maximum" else np.inf
    info = np.iinfo(dtype)
    return info.min if how == "maximum" else info.max


def reduce_segments(xp: Any, data: Any, ids: Any, n: int, kind: str, sorted_ids: bool) -> Any:
    """``out[ids[i]] = <kind>(out[ids[i]], data[i])`` over ``n`` segments (kind: Sum, Max...)."""
    how, flat = _HOW[kind], ids.ravel().astype(np.int64)
    inner = data.shape[ids.ndim :]
    rows = data.reshape((flat.size, *inner))
    if flat.size and int(flat.max()) >= n:
        raise InvalidArgumentError(None, None, f"segment id {int(flat.max())} is not < {n}")
    keep = flat >= 0
    flat, rows = flat[keep], rows[keep]
    out = xp.full((n, *inner), _identity(how, data.dtype), dtype=data.dtype)
    getattr(xp, how).at(out, flat, rows)
    if kind == "Mean" or (sorted_ids and kind != "Sum"):
        count = xp.bincount(flat, minlength=n).reshape((n,) + (1,) * len(inner))
        if kind == "Mean":
            out = (out / xp.maximum(count, 1)).astype(data.dtype)
        elif kind != "Prod":
            out = xp.where(count > 0, out, xp.zeros_like(out))  # sorted: an empty segment is 0
    return out


# ------------------------------------------------------------ sorted segments
def _sorted_ids_error(ids: list[int]) -> str | None:
    if any(i < 0 for i in ids):
        return f"segment ids must be >= 0, got {min(ids)}"
    bad = next((k for k in range(1, len(ids)) if ids[k] < ids[k - 1]), None)
    if bad is not None:
        return f"segment ids are not increasing: ids[{bad - 1}] = {ids[bad - 1]} > ids[{bad}] = {ids[bad]}"
    return None


def _sorted_infer(kind: str) -> Any:
    op_type = f"Segment{kind}"

    def infer(data: Tensor, segment_ids: Tensor) -> Out:
        check_dtype(data.dtype, REAL if kind in ("Max", "Min") else NUMBER, "data")
        check_int(op_type, "segment_ids", segment_ids)
        d, i = data._shape, segment_ids._shape
        if i is not None and len(i) != 1:
            raise ValueError(f"segment_ids must be a vector, got shape {fmt(i)}")
        if d is not None and not d:
            raise ValueError("data must have rank >= 1, got a scalar")
        if d is not None and i is not None and None not in (d[0], i[0]) and d[0] != i[0]:
            raise ValueError(
                f"segment_ids has {i[0]} ids but data has {d[0]} rows: data{fmt(d)}, ids{fmt(i)}"
            )
        ids = const_ints(segment_ids)
        problem = None if ids is None else _sorted_ids_error(ids)
        if problem:
            raise ValueError(problem)
        rows = None if not ids else max(ids) + 1
        return Out(data.dtype, None if d is None else (rows if ids else None, *d[1:]))

    return infer


def _sorted_kernel(kind: str) -> Any:
    def kernel(xp: Any, data: Any, segment_ids: Any) -> Any:
        ids = segment_ids.ravel().astype(np.int64)
        if ids.size != data.shape[0]:
            raise InvalidArgumentError(
                None, None, f"segment_ids has {ids.size} ids but data has {data.shape[0]} rows"
            )
        host = ids.tolist()
        problem = _sorted_ids_error(host)
        if problem:
            raise InvalidArgumentError(None, None, problem)
        n = host[-1] + 1 if host else 0
        return reduce_segments(xp, data, ids, n, kind, sorted_ids=True)

    return kernel


# ---------------------------------------------------------- unsorted segments
def _unsorted_infer(kind: str) -> Any:
    op_type = f"UnsortedSegment{kind}"

    def infer(data: Tensor, segment_ids: Tensor, num_segments: Tensor) -> Out:
        check_dtype(data.dtype, REAL if kind in ("Max", "Min") else NUMBER, "data")
        check_int(op_type, "segment_ids", segment_ids)
        check_int(op_type, "num_segments", num_segments)
        d, i, n = data._shape, segment_ids._shape, const_int(num_segments)
        if d is None or i is None:
            return Out(data.dtype, None)
        if len(i) > len(d) or any(a is not None and b is not None and a != b for a, b in zip(i, d)):
            raise ValueError(
                f"segment_ids of shape {fmt(i)} must be a prefix of the data shape {fmt(d)}"
            )
        return Out(data.dtype, (n, *d[len(i) :]))

    return infer


def _unsorted_kernel(kind: str) -> Any:
    def kernel(xp: Any, data: Any, segment_ids: Any, num_segments: Any) -> Any:
        return reduce_segments(xp, data, segment_ids, int(num_segments), kind, sorted_ids=False)

    return kernel


# ------------------------------------------------------------------ gradients
def _ids_and_n(op: Operation) -> tuple[Tensor, list[Tensor]]:
    """The op's ids and the extra inputs (num_segments) a re-built segment op needs."""
    return op.inputs[1], list(op.inputs[2:])


def _gather_ids(t: Tensor, ids: Tensor, like: Tensor) -> Tensor:
    """``t`` gathered at each id, shaped ``like`` the data; a negative (dropped) id gets zeros."""
    flat = reshape(ids, [-1])
    rows = gather(t, maximum(flat, 0))
    rows = where(greater_equal(flat, 0), rows, zeros_like(rows))
    return reshape(rows, shape(like))


def _segment(op: Operation, kind: str, data: Tensor) -> Tensor:
    """Another segment op of ``kind`` over ``data`` with ``op``'s ids (and num_segments)."""
    ids, n = _ids_and_n(op)
    prefix = "UnsortedSegment" if n else "Segment"
    return make1(f"{prefix}{kind}", [data, ids, *n])


def _sum_grad(op: Operation, g: Tensor) -> list[Tensor | None]:
    return [_gather_ids(g, op.inputs[1], op.inputs[0]), *[None] * (len(op.inputs) - 1)]


def _mean_grad(op: Operation, g: Tensor) -> list[Tensor | None]:
    count = _segment(op, "Sum", ones_like(op.inputs[0]))
    return [_gather_ids(realdiv(g, maximum(count, 1)), op.inputs[1], op.inputs[0]), None]


def _min_max_grad(op: Operation, g: Tensor) -> list[Tensor | None]:
    """The gradient goes to the elements equal to their segment's result, split among ties."""
    data, ids = op.inputs[0], op.inputs[1]
    chosen = cast(equal(data, _gather_ids(op.outputs[0], ids, data)), data.dtype)
    ties = _segment(op, "Sum", chosen)
    share = _gather_ids(realdiv(g, maximum(ties, 1)), ids, data)
    return [multiply(chosen, share), *[None] * (len(op.inputs) - 1)]


def _prod_grad(op: Operation, g: Tensor) -> list[Tensor | None]:
    """Each element gets the product of the others in its segment (exact at zeros)."""
    data, ids = op.inputs[0], op.inputs[1]
    is_zero = equal(data, 0)
    zeros = _segment(op, "Sum", cast(is_zero, data.dtype))
    safe = where(is_zero, ones_like(data), data)
    nonzero_prod = _segment(op, "Prod", safe)
    lone_zero = multiply(nonzero_prod, cast(equal(zeros, 1), data.dtype))
    others = where(
        is_zero,
        _gather_ids(lone_zero, ids, data),
        realdiv(_gather_ids(op.outputs[0], ids, data), safe),
    )
    return [multiply(others, _gather_ids(g, ids, data)), *[None] * (len(op.inputs) - 1)]


def sorted_segment(kind: str, grad: Any, **fields: Any) -> OpDef:
    """Declare ``Segment<kind>``: rows of ``data`` reduced by sorted segment ids."""
    infer, kernel = _sorted_infer(kind), _sorted_kernel(kind)
    type_attrs = {"T": 0, "Tindices": 1}
    inputs = ("data", "segment_ids")
    return op(
        f"Segment{kind}", inputs, (), infer, kernel, grad=grad, type_attrs=type_attrs, **fields
    )


def unsorted_segment(kind: str, grad: Any, **fields: Any) -> OpDef:
    """Declare ``UnsortedSegment<kind>``: rows reduced by any ids, into ``num_segments``."""
    infer, kernel = _unsorted_infer(kind), _unsorted_kernel(kind)
    type_attrs = {"T": 0, "Tindices": 1, "Tnumsegments": 2}
    inputs = ("data", "segment_ids", "num_segments")
    return op(
        f"UnsortedSegment{kind}",
        inputs,
        (),
        infer,
        kernel,
        host_inputs=(2,),
        grad=grad,
        type_attrs=type_attrs,
        **fields,
    )


sorted_segment("Sum", _sum_grad)
sorted_segment("Mean", _mean_grad)
sorted_segment("Max", _min_max_grad)
sorted_segment("Min", _min_max_grad)
sorted_segment("Prod", _prod_grad, host_only=True)
unsorted_segment("Max", _min_max_grad)
unsorted_segment("Min", _min_max_grad)
unsorted_segment("Prod", _prod_grad, host_only=True)


# ------------------------------------------------------------------- wrappers
def _sorted(kind: str, data: Any, segment_ids: Any, name: str | None) -> Tensor:
    with name_scope(name, f"Segment{kind}") as scope:
        x = convert_to_tensor(data, name="data")
        return make1(f"Segment{kind}", [x, int_input(segment_ids, "segment_ids")], name=scope)


def _unsorted(kind: str, data: Any, ids: Any, num_segments: Any, name: str | None) -> Tensor:
    with name_scope(name, f"UnsortedSegment{kind}") as scope:
        x = convert_to_tensor(data, name="data")
        inputs = [x, int_input(ids, "segment_ids"), int_input(num_segments, "num_segments")]
        return make1(f"UnsortedSegment{kind}", inputs, name=scope)


def segment_sum(data: Any, segment_ids: Any, name: str | None = None) -> Tensor:
    """The sum of the rows of ``data`` in each segment (ids sorted, one per row).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.segment_sum([1, 2, 3, 4], [0, 0, 2, 2])).tolist()
    [3, 0, 7]
    """
    return _sorted("Sum", data, segment_ids, name)


def segment_mean(data: Any, segment_ids: Any, name: str | None = None) -> Tensor:
    """The mean of the rows of ``data`` in each segment (an empty segment is 0).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.segment_mean([1.0, 2.0, 6.0], [0, 0, 1])).tolist()
    [1.5, 6.0]
    """
    return _sorted("Mean", data, segment_ids, name)


def segment_max(data: Any, segment_ids: Any, name: str | None = None) -> Tensor:
    """The largest row of ``data`` in each segment (an empty segment is 0).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.segment_max([3, 1, 2], [0, 0, 2])).tolist()
    [3, 0, 2]
    """
    return _sorted("Max", data, segment_ids, name)


def segment_min(data: Any, segment_ids: Any, name: str | None = None) -> Tensor:
    """The smallest row of ``data`` in each segment (an empty segment is 0).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.segment_min([3, 1, 2], [0, 0, 1])).tolist()
    [1, 2]
    """
    return _sorted("Min", data, segment_ids, name)


def segment_prod(data: Any, segment_ids: Any, name: str | None = None) -> Tensor:
    """The product of the rows of ``data`` in each segment (an empty segment is 1).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.segment_prod([3, 1, 2], [0, 0, 2])).tolist()
    [3, 1, 2]
    """
    return _sorted("Prod", data, segment_ids, name)


def unsorted_segment_max(
    data: Any, segment_ids: Any, num_segments: Any, name: str | None = None
) -> Tensor:
    """The largest row per segment, ids in any order (an empty segment: the lowest value).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.unsorted_segment_max([1.0, 5.0, 2.0], [1, 0, 1], 3)).tolist()
    [5.0, 2.0, -inf]
    """
    return _unsorted("Max", data, segment_ids, num_segments, name)


def unsorted_segment_min(
    data: Any, segment_ids: Any, num_segments: Any, name: str | None = None
) -> Tensor:
    """The smallest row per segment, ids in any order (an empty segment: the highest value).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.unsorted_segment_min([1, 5, 2], [1, 0, 1], 2)).tolist()
    [5, 1]
    """
    return _unsorted("Min", data, segment_ids, num_segments, name)


def unsorted_segment_prod(
    data: Any, segment_ids: Any, num_segments: Any, name: str | None = None
) -> Tensor:
    """The product of the rows per segment, ids in any order (an empty segment is 1).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.unsorted_segment_prod([2, 5, 3], [1, 0, 1], 3)).tolist()
    [5, 6, 1]
    """
    return _unsorted("Prod", data, segment_ids, num_segments, name)


def unsorted_segment_mean(
    data: Any, segment_ids: Any, num_segments: Any, name: str | None = None
) -> Tensor:
    """The mean of the rows per segment: their sum over their count (an empty segment is 0).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.unsorted_segment_mean([2.0, 5.0, 3.0], [1, 0, 1], 3)).tolist()
    [5.0, 2.5, 0.0]
    """
    with name_scope(name, "UnsortedSegmentMean"):
        x = convert_to_tensor(data, name="data")
        ids = int_input(segment_ids, "segment_ids")
        n = int_input(num_segments, "num_segments")
        total = unsorted_segment_sum(x, ids, n)
        count = unsorted_segment_sum(ones_like(x), ids, n)
        return realdiv(total, maximum(count, 1))
