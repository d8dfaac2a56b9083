"""Einstein summation: the Einsum op, and ``tensordot`` written as one.

``Einsum(inputs...)`` takes a variadic list of tensors (counted by ``N``)
and the ``equation`` attr, ``"ij,jk->ik"``: one subscript letter per
dimension of each input, the output's letters after ``->`` (without an arrow,
the letters that appear once, in alphabetical order, as numpy and TF do).
``infer`` parses the equation once, checks each input's rank against its
subscripts and that every letter has one size, and gives the output's static
shape; the kernel is ``xp.einsum``.  Ellipses (``...``) are refused at build
time: flowbook does not support them yet.

The gradient of input ``i`` is one more einsum: the output gradient and the
other inputs contracted to ``i``'s subscripts.  A letter only input ``i``
has (summed away, seen by no other operand) is contracted out and broadcast
back.  A letter repeated within one input (a diagonal, ``"ii->"``) has no
gradient here; ``gradients`` raises naming the op.

``tensordot(a, b, axes)`` builds the equation of TF's contraction from the
ranks, which must be known when the graph is built.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     s.run(fb.einsum("ij,j->i", [[1, 2], [3, 4]], [1, 10])).tolist()
    [21, 43]
"""

from __future__ import annotations

import string
from typing import Any

from flowbook.framework.graph import name_scope
from flowbook.framework.registry import Out, op
from flowbook.framework.tensor import Operation, Tensor
from flowbook.framework.tensor_shape import fmt
from flowbook.ops._builder import make1, same_dtype
from flowbook.ops.array.constant_op import convert_to_tensor
from flowbook.ops.array.fill_ops import ones_like
from flowbook.ops.array.shape_ops import expand_dims
from flowbook.ops.math.elementwise import NUMBER, check_dtype
from flowbook.ops.math.elementwise_ops import multiply

__all__ = ["einsum", "tensordot"]


def parse(equation: str, n_inputs: int) -> tuple[list[str], str]:
    """The subscripts of each input and of the output; ValueError naming what is wrong.

    >>> parse("ij,jk", 2)
    (['ij', 'jk'], 'ik')
    """
    eq = equation.replace(" ", "")
    if "." in eq:
        raise ValueError(f"einsum equation {equation!r}: ellipses ('...') are not supported")
    lhs, arrow, rhs = eq.partition("->")
    ins = lhs.split(",")
    if len(ins) != n_inputs:
        raise ValueError(
            f"einsum equation {equation!r} has {len(ins)} operands, {n_inputs} inputs given"
        )
    letters = "".join(ins) + rhs
    if any(c not in string.ascii_letters for c in letters):
        raise ValueError(f"einsum equation {equation!r}: subscripts must be letters")
    if not arrow:
        rhs = "".join(sorted(c for c in set(lhs) if lhs.count(c) == 1 and c != ","))
    if len(set(rhs)) != len(rhs) or any(c not in lhs for c in rhs):
        raise ValueError(
            f"einsum equation {equation!r}: output subscripts must be distinct input subscripts"
        )
    return ins, rhs


def _einsum_infer(*inputs: Tensor, equation: str, N: int | None = None) -> Out:
    names = tuple(f"inputs[{i}]" for i in range(len(inputs)))
    dtype = same_dtype("Einsum", names, *inputs)
    check_dtype(dtype, NUMBER, "inputs")
    ins, rhs = parse(equation, len(inputs))
    sizes: dict[str, int | None] = {}
    for i, (subs, t) in enumerate(zip(ins, inputs)):
        if t._shape is None:
            continue
        if len(subs) != len(t._shape):
            raise ValueError(
                f"einsum {equation!r}: inputs[{i}] has shape {fmt(t._shape)}, "
                f"its subscripts {subs!r} say rank {len(subs)}"
            )
        for c, d in zip(subs, t._shape):
            if d is not None and sizes.get(c) not in (None, d):
                raise ValueError(
                    f"einsum {equation!r}: subscript {c!r} is {sizes[c]} and {d} "
                    f"(inputs[{i}] has shape {fmt(t._shape)})"
                )
            sizes[c] = d if d is not None else sizes.get(c)
    if any(t._shape is None for t in inputs) and any(c not in sizes for c in rhs):
        return Out(dtype, (None,) * len(rhs))
    return Out(dtype, tuple(sizes.get(c) for c in rhs))


def _einsum_kernel(xp: Any, *arrays: Any, equation: str, N: int | None = None) -> Any:
    return xp.einsum(equation, *arrays)


def _einsum_grad(op: Operation, g: Tensor) -> list[Tensor | None]:
    """For each input: the gradient and the other inputs contracted to its subscripts."""
    inputs = list(op.inputs)
    ins, rhs = parse(op.attrs["equation"], len(inputs))
    grads: list[Tensor | None] = []
    for i, subs in enumerate(ins):
        if len(set(subs)) != len(subs):
            raise LookupError(
                f"Einsum '{op.name}': no gradient for the repeated subscript in {subs!r}"
            )
        seen = rhs + "".join(s for j, s in enumerate(ins) if j != i)
        kept = "".join(c for c in subs if c in seen)
        others = [(s, t) for j, (s, t) in enumerate(zip(ins, inputs)) if j != i]
        eq = ",".join([rhs, *(s for s, _ in others)]) + "->" + kept
        grad = einsum(eq, g, *(t for _, t in others))
        if kept != subs:  # letters only this input has: broadcast back along them
            for axis, c in enumerate(subs):
                if c not in seen:
                    grad = expand_dims(grad, axis)
            grad = multiply(grad, ones_like(inputs[i]))
        grads.append(grad)
    return grads


op("Einsum", ("*inputs",), ("equation", "N"), _einsum_infer, _einsum_kernel, grad=_einsum_grad)


def einsum(equation: str, *inputs: Any, name: str | None = None) -> Tensor:
    """A sum of products over subscripts, numpy's ``einsum`` (no ellipses).

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.einsum("bij,bjk->bik", fb.zeros([5, 2, 3]), fb.zeros([5, 3, 4])).shape.as_list()
    [5, 2, 4]
    """
    with name_scope(name, "Einsum") as scope:
        tensors = [convert_to_tensor(x, name=f"input_{i}") for i, x in enumerate(inputs)]
        attrs = {"equation": equation.replace(" ", ""), "N": len(tensors)}
        return make1("Einsum", tensors, attrs, name=scope)


def _tensordot_axes(axes: Any, rank_a: int) -> tuple[list[int], list[int]]:
    if isinstance(axes, int):
        if axes < 0 or axes > rank_a:
            raise ValueError(f"axes must be in [0, {rank_a}], got {axes}")
        return list(range(rank_a - axes, rank_a)), list(range(axes))
    a_axes, b_axes = axes
    a_axes = [a_axes] if isinstance(a_axes, int) else list(a_axes)
    b_axes = [b_axes] if isinstance(b_axes, int) else list(b_axes)
    if len(a_axes) != len(b_axes):
        raise ValueError(f"axes {axes!r}: both sides must list as many axes")
    return a_axes, b_axes


def tensordot(a: Any, b: Any, axes: Any, name: str | None = None) -> Tensor:
    """Contract ``axes`` of ``a`` with those of ``b`` (an int: the last/first ``axes``).

    Both ranks must be known when the graph is built.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.tensordot(fb.zeros([2, 3, 4]), fb.zeros([4, 3, 5]), [[1, 2], [1, 0]]).shape.as_list()
    [2, 5]
    """
    with name_scope(name, "Tensordot"):
        ta, tb = convert_to_tensor(a, name="a"), convert_to_tensor(b, name="b")
        if ta._shape is None or tb._shape is None:
            raise ValueError("tensordot needs inputs of known rank")
        ra, rb = len(ta._shape), len(tb._shape)
        if ra + rb > len(string.ascii_letters):
            raise ValueError(f"tensordot of ranks {ra} and {rb} is too large")
        a_axes, b_axes = _tensordot_axes(axes, ra)
        a_axes = [x % ra if -ra <= x < ra else _bad_axis(x, ra) for x in a_axes]
        b_axes = [x % rb if -rb <= x < rb else _bad_axis(x, rb) for x in b_axes]
        sa = list(string.ascii_letters[:ra])
        sb = list(string.ascii_letters[ra : ra + rb])
        for i, j in zip(a_axes, b_axes):
            sb[j] = sa[i]
        out = [c for k, c in enumerate(sa) if k not in a_axes]
        out += [c for k, c in enumerate(sb) if k not in b_axes]
        return einsum(f"{''.join(sa)},{''.join(sb)}->{''.join(out)}", ta, tb)


def _bad_axis(axis: int, rank: int) -> int:
    raise ValueError(f"axis {axis} is out of range for a tensor of rank {rank}")
