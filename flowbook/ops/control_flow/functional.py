"""``tf.map_fn``, ``tf.scan``, ``tf.foldl`` and ``tf.foldr``: a ``while_loop`` over TensorArrays.

Built as TensorFlow 1 builds them, so their graphs (and GraphDefs) look
alike and their gradients come from the loop's: the elements (each tensor
of a nested ``elems``, split along its first axis) are unstacked into one
TensorArray each outside the loop; the loop reads element ``i`` of each,
calls ``fn``, and (``map_fn``, ``scan``) writes each result into an output
TensorArray carried as a loop variable, stacked after the loop.  ``scan``
and the folds carry the accumulator as loop variables too, so ``fn`` must
keep its shape and dtype.  ``n``, the number of elements, is static when
the first element's first dimension is, and read at run time otherwise;
it is also the loop's ``maximum_iterations``, as in TF.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     x = fb.constant([1.0, 2.0, 3.0])
    ...     r = s.run([fb.map_fn(lambda v: v * v, x), fb.scan(lambda a, v: a + v, x),
    ...                fb.foldr(lambda a, v: a - v, x, 0.0)])
    >>> [v.tolist() for v in r]
    [[1.0, 4.0, 9.0], [1.0, 3.0, 6.0], -6.0]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flowbook.framework import nest
from flowbook.framework.graph import get_default_graph
from flowbook.framework.tensor import Tensor
from flowbook.ops._builder import tensor
from flowbook.ops.array.shape_ops import shape
from flowbook.ops.control_flow.control_flow import while_loop
from flowbook.ops.control_flow.tensor_array import TensorArray

__all__ = ["foldl", "foldr", "map_fn", "scan"]


def _flat_elems(elems: Any, what: str) -> tuple[list[Tensor], Any]:
    """The flat list of ``elems`` as tensors, and ``n`` (an int when static, else a tensor)."""
    flat = [tensor(e, name="elem") for e in nest.flatten(elems)]
    if not flat:
        raise ValueError(f"{what}: elems must hold at least one tensor")
    for e in flat:
        if e._shape is not None and len(e._shape) < 1:
            raise ValueError(
                "elems must be a 1+ dimensional Tensor, not a scalar"
                if len(flat) == 1
                else "elements in elems must be 1+ dimensional Tensors, not scalars"
            )
    statics = {e._shape[0] for e in flat if e._shape is not None and e._shape[0] is not None}
    if len(statics) > 1:
        raise ValueError(
            f"{what}: the elements of elems differ in their first dimension: {sorted(statics)}"
        )
    n = statics.pop() if statics else shape(flat[0])[0]
    return flat, n


def _unstacked(flat: list[Tensor], n: Any) -> list[TensorArray]:
    """One TensorArray per element tensor, holding its slices along the first axis."""
    arrays = []
    for e in flat:
        rest = None if e._shape is None else e._shape[1:]
        ta = TensorArray(e.dtype, size=n, dynamic_size=False, infer_shape=True, element_shape=rest)
        arrays.append(ta.unstack(e))
    return arrays


def _stacked(arrays: list[TensorArray], n: Any) -> list[Tensor]:
    out = []
    for ta in arrays:
        r = ta.stack()
        if r._shape is not None and len(r._shape) >= 1:
            r.set_shape((n if isinstance(n, int) else None, *r._shape[1:]))
        out.append(r)
    return out


def map_fn(
    fn: Callable[[Any], Any],
    elems: Any,
    dtype: Any = None,
    parallel_iterations: int | None = None,
    back_prop: bool = True,
    swap_memory: bool = False,
    infer_shape: bool = True,
    name: str | None = None,
) -> Any:
    """``fn`` applied to each slice of ``elems`` along its first axis; the results stacked.

    ``elems`` may be a nested structure of tensors with the same first
    dimension (``fn`` gets the same structure of slices); ``dtype`` gives the
    structure and dtypes of ``fn``'s result when it differs from ``elems``'.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     a, b = fb.constant([1, 2]), fb.constant([10, 20])
    ...     s.run(fb.map_fn(lambda ab: (ab[0] + ab[1], ab[0] * ab[1]), (a, b))[1])
    array([10, 40], dtype=int32)
    """
    in_seq = nest.is_sequence(elems)
    out_struct = elems if dtype is None else dtype
    out_seq = nest.is_sequence(out_struct)

    def pack_in(flat: list) -> Any:
        return nest.pack_sequence_as(elems, flat) if in_seq else flat[0]

    graph = get_default_graph()
    with graph.name_scope(name or "map"):
        flat, n = _flat_elems(elems, "map_fn")
        dtype_flat = [e.dtype for e in flat] if dtype is None else nest.flatten(dtype)
        elems_ta = _unstacked(flat, n)
        accs = [
            TensorArray(dt, size=n, dynamic_size=False, infer_shape=infer_shape)
            for dt in dtype_flat
        ]

        def compute(i: Tensor, tas: list[TensorArray]) -> Any:
            out = fn(pack_in([ta.read(i) for ta in elems_ta]))
            _same_structure("map_fn", out_struct, out, "dtype" if dtype is not None else "elems")
            values = nest.flatten(out) if out_seq else [out]
            return i + 1, [ta.write(i, v) for ta, v in zip(tas, values)]

        _, results = while_loop(
            lambda i, _: i < n,
            compute,
            (tensor(0), accs),
            maximum_iterations=n,
            parallel_iterations=parallel_iterations or 10,
            back_prop=back_prop,
            swap_memory=swap_memory,
        )
        out = _stacked(results, n)
    return nest.pack_sequence_as(out_struct, out) if out_seq else out[0]


def _same_structure(what: str, want: Any, got: Any, named: str) -> None:
    try:
        nest.assert_same_structure(want, got)
    except ValueError as e:
        raise ValueError(f"{what}: fn must return the structure of {named}: {e}") from None


def scan(
    fn: Callable[[Any, Any], Any],
    elems: Any,
    initializer: Any = None,
    parallel_iterations: int = 10,
    back_prop: bool = True,
    swap_memory: bool = False,
    infer_shape: bool = True,
    reverse: bool = False,
    name: str | None = None,
) -> Any:
    """Every accumulator of ``a = fn(a, x)`` over the slices ``x`` of ``elems``, stacked.

    Without ``initializer`` the first slice (the last one when ``reverse``) is
    the first accumulator, and ``fn``'s result has the structure of ``elems``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     x = fb.constant([1.0, 2.0, 3.0])
    ...     s.run(fb.scan(lambda a, v: a * v, x, initializer=2.0, reverse=True))
    array([12., 12.,  6.], dtype=float32)
    """
    in_seq = nest.is_sequence(elems)
    out_struct = elems if initializer is None else initializer
    out_seq = nest.is_sequence(out_struct)

    def pack_in(flat: list) -> Any:
        return nest.pack_sequence_as(elems, flat) if in_seq else flat[0]

    def pack_out(flat: list) -> Any:
        return nest.pack_sequence_as(out_struct, flat) if out_seq else flat[0]

    graph = get_default_graph()
    with graph.name_scope(name or "scan"):
        flat, n = _flat_elems(elems, "scan")
        elems_ta = _unstacked(flat, n)
        last = n - 1
        if initializer is None:
            a_flat = [ta.read(last if reverse else 0) for ta in elems_ta]
            start = 1
        else:
            a_flat = [tensor(v) for v in nest.flatten(initializer)]
            start = 0
        accs = [
            TensorArray(
                a.dtype,
                size=n,
                dynamic_size=False,
                infer_shape=infer_shape,
                element_shape=a._shape if infer_shape else None,
            )
            for a in a_flat
        ]
        if initializer is None:
            accs = [ta.write(last if reverse else 0, a) for ta, a in zip(accs, a_flat)]

        def compute(i: Tensor, a: list[Tensor], tas: list[TensorArray]) -> Any:
            out = fn(pack_out(a), pack_in([ta.read(i) for ta in elems_ta]))
            named = "elems" if initializer is None else "initializer"
            _same_structure("scan", out_struct, out, named)
            values = nest.flatten(out) if out_seq else [out]
            tas = [ta.write(i, v) for ta, v in zip(tas, values)]
            return (i - 1 if reverse else i + 1), values, tas

        if reverse:
            i0, cond = tensor(last - start), (lambda i, _a, _t: i >= 0)
        else:
            i0, cond = tensor(start), (lambda i, _a, _t: i < n)
        _, _, results = while_loop(
            cond,
            compute,
            (i0, a_flat, accs),
            maximum_iterations=n,
            parallel_iterations=parallel_iterations,
            back_prop=back_prop,
            swap_memory=swap_memory,
        )
        return pack_out(_stacked(results, n))


def _fold(
    fn: Callable,
    elems: Any,
    initializer: Any,
    parallel_iterations: int,
    back_prop: bool,
    swap_memory: bool,
    name: str,
    right: bool,
) -> Any:
    graph = get_default_graph()
    with graph.name_scope(name):
        flat, n = _flat_elems(elems, name)
        arrays = nest.pack_sequence_as(elems, _unstacked(flat, n))
        last = n - 1
        if initializer is None:
            a = nest.map_structure(lambda ta: ta.read(last if right else 0), arrays)
            i0 = tensor(last - 1 if right else 1)
        else:
            a = initializer
            i0 = tensor(last if right else 0)

        def compute(i: Tensor, a: Any) -> Any:
            out = fn(a, nest.map_structure(lambda ta: ta.read(i), arrays))
            return [i - 1 if right else i + 1, out]

        cond = (lambda i, _: i >= 0) if right else (lambda i, _: i < n)
        _, result = while_loop(
            cond,
            compute,
            [i0, a],
            maximum_iterations=n,
            parallel_iterations=parallel_iterations,
            back_prop=back_prop,
            swap_memory=swap_memory,
        )
        return result


def foldl(
    fn: Callable[[Any, Any], Any],
    elems: Any,
    initializer: Any = None,
    parallel_iterations: int = 10,
    back_prop: bool = True,
    swap_memory: bool = False,
    name: str | None = None,
) -> Any:
    """``a = fn(a, x)`` over the slices ``x`` of ``elems``, first to last; the final ``a``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     float(s.run(fb.foldl(lambda a, v: a * 10.0 + v, fb.constant([1.0, 2.0, 3.0]))))
    123.0
    """
    return _fold(
        fn,
        elems,
        initializer,
        parallel_iterations,
        back_prop,
        swap_memory,
        name or "foldl",
        right=False,
    )


def foldr(
    fn: Callable[[Any, Any], Any],
    elems: Any,
    initializer: Any = None,
    parallel_iterations: int = 10,
    back_prop: bool = True,
    swap_memory: bool = False,
    name: str | None = None,
) -> Any:
    """``a = fn(a, x)`` over the slices ``x`` of ``elems``, last to first; the final ``a``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     float(s.run(fb.foldr(lambda a, v: a * 10.0 + v, fb.constant([1.0, 2.0, 3.0]))))
    321.0
    """
    return _fold(
        fn,
        elems,
        initializer,
        parallel_iterations,
        back_prop,
        swap_memory,
        name or "foldr",
        right=True,
    )
