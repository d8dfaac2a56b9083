"""The optimiser's fusion pass: chains of written ops become one fused op with one kernel.

A training step's plan is full of short chains whose links have one reader
each: ``MatMul -> Add(bias) -> Relu`` in the forward pass, the cross-entropy's
backprop ``-> Mul(the mean's scale)`` and ``ReluGrad -> Sum`` in the
backward pass (a broadcast gradient's ``Sum`` over no axes is already gone:
``remove_identities`` drops it as the copy it is).  Each link costs a kernel call and a fresh
array.  :func:`fuse` finds them after the other passes (on the plan as
folded, merged and stripped of identities) and records, in the shared
:class:`flowbook.runtime.optimize.layout.Rewrite`, one fused op of
``flowbook.ops.nn.fused_ops`` in the place of the chain's last op:

- a **head**: a ``MatMul`` (``_FusedMatMul``), a ``Conv2D``
  (``_FusedConv2D``: a CNN's bias and ReLU written into the GEMM's output),
  a ``MaxPoolGrad`` whose one reader is the ``ReluGrad`` masking by the
  pool's own ``orig_input`` (``_FusedMaxPoolGrad``: TF's ReLU mask applied per
  window before the gradient is placed, that ReluGrad bit for bit; when the
  plan's MaxPool of that input made its ``orig_output``, the window maxima
  are read from it, ``pooled``, not found again; the
  proof is that both read the same slot of this plan, so nothing can change
  the tensor between them), a
  ``SparseSoftmaxCrossEntropyWithLogits`` followed from its backprop output
  (``_FusedSparseSoftmaxCrossEntropyWithLogits``; if nothing reads its loss,
  the loss is not computed), or an element-wise op with no attrs
  (``_FusedElementwise``);
- then as many **tail steps** as follow one another:
  an op whose only reader is the next, taking the chain's value as one
  operand (on the left for ``Sub`` and ``RealDiv``), of the value's shape and
  dtype, so the step can write into the value's buffer.  ``Sum`` qualifies
  when its axes are a folded empty list (only when ``optimize`` runs this
  pass without ``identity``, which would have removed it).

Which ops head or step is no table of names here: each op's row says it
(``OpDef.fusion``, a :class:`flowbook.framework.registry.Fusion`: the fused
op type a chain it heads becomes, the output it follows, the xp function it
is as a step and a binary step's operand order).

The links must be kept ops on the CPU, not stateful, not fetched, with no
other op waiting for them (data or control); the fused op reads the
variables among its inputs when it runs, as the written ops did, and waits
for everything its members waited for.  Every step is the numpy call the
written kernel makes, on the same values in the same order, so results stay
bit for bit those of the written plan (``tests/runtime/test_optimize_fuse.py``).

What it did is kept twice: a sentence per written op in the notes ("Relu
'Relu': fused into _FusedMatMul 'Relu' (MatMul 'MatMul', Add 'add', Relu
'Relu': one kernel)."), and
``Rewrite.fused`` (fused op name -> the written op names it stands for),
which ``Optimized.origin`` and ``changes`` (``flowbook.runtime.optimize.optimizer``) read.  TensorFlow 1 has no switch for one fusion;
``OptimizerOptions(opt_level=L0)`` turns this pass off with the others.

    >>> import numpy as np, flowbook as fb
    >>> from flowbook.runtime.optimize.optimizer import optimize, PASSES
    >>> from flowbook.runtime.plan import build_plan
    >>> with fb.Graph().as_default() as g:
    ...     x = fb.placeholder(fb.float32, [2, 3], name="x")
    ...     y = fb.nn.relu(fb.matmul(x, fb.ones([3, 4])) + fb.ones([4]), name="y")
    ...     plan = build_plan(g, [y], [], [x], bind=lambda op: op._opdef.bound_kernel(np, op.attrs))
    >>> opt = optimize(plan, ((2, 3),), PASSES)
    >>> [op.type for op in opt.plan.ops], opt.origin["y"]
    (['_FusedMatMul'], ('MatMul', 'add', 'y'))
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowbook.framework.devices import CPU
from flowbook.framework.registry import OPS
from flowbook.framework.tensor import Operation, Tensor
from flowbook.ops.math.elementwise import FUSED
from flowbook.ops.nn.fused_ops import CONV_ATTRS, POOL_ATTRS
from flowbook.runtime.optimize.layout import Fused, Rewrite, drop_dead, waits_of
from flowbook.runtime.placement import CopyOp
from flowbook.runtime.plan import DISCARD, Plan, _reading_variables

__all__ = ["fuse"]


def fuse(plan: Plan, rw: Rewrite) -> None:
    """Replace each chain of fusable ops by one fused op.  See the module docstring."""
    drop_dead(plan, rw)  # readers that will not run do not count
    readers = _readers(plan, rw)
    waits = waits_of(plan, rw)[0]
    waiters: list[set[int]] = [set() for _ in plan.ops]
    for i, ws in enumerate(waits):
        for j in ws:
            waiters[j].add(i)
    fetched = {rw.resolve(s) for s in plan.fetch_slots if s is not None}
    taken: set[int] = set()
    for i, op in enumerate(plan.ops):
        if i in rw.removed or i in taken or not _fusable(plan, i, op):
            continue
        head = _head(op)
        kind = op._opdef.fusion.head if head is not None else None
        if head is None or (kind == "_FusedSum" and _sum_axes(plan, rw, i) is None):
            continue
        value = rw.resolve(plan.outputs[i][head])
        members, steps, operands = [i], [], []
        if kind == "_FusedMaxPoolGrad":  # its one step, the ReLU's gradient of its orig_input
            j = _relu_grad_of_pool(plan, rw, i, value, readers, fetched)
            if j is None or j in taken:
                continue
            members.append(j)
            steps.append("ReluGrad")
            value = rw.resolve(plan.outputs[j][0])
        while value not in fetched and len(readers.get(value, ())) == 1:
            j, k = readers[value][0]
            if j in taken or (len(members) > 1 and waiters[members[-1]] != {j}):
                break
            step = _step(plan, rw, j, k, value)
            if step is None:
                break
            members.append(j)
            steps.append(plan.ops[j].type)
            operands.extend(step)
            value = rw.resolve(plan.outputs[j][0])
        if len(members) == 1 and kind != "_FusedSum":
            continue
        place = _place(members, waits, waiters)
        if place is not None:
            taken.update(members)
            _record(plan, rw, members, place, steps, operands, readers, fetched)


def _place(members: list[int], waits: list[set[int]], waiters: list[set[int]]) -> int | None:
    """Where the fused op can run: the last member's place if what else waits for the head
    (its other outputs' readers) comes after it, else the head's if all the members wait
    for comes before it; None if neither."""
    inside = set(members)
    head, last = members[0], members[-1]
    if all(w > last for w in waiters[head] - inside):
        return last
    if all(p < head for m in members for p in waits[m] - inside):
        return head
    return None


def _fusable(plan: Plan, i: int, op: Operation) -> bool:
    if type(op) is CopyOp or plan.devices[i] is not CPU:
        return False
    opdef = op._opdef
    return not (opdef.stateful or opdef.resource or opdef.blocking)


def _head(op: Operation) -> int | None:
    """Which output of ``op`` a chain follows, if ``op`` can head one (its row's ``fusion``);
    an element-wise head with attrs is not the plain call its fused op makes."""
    fusion = op._opdef.fusion
    if fusion is None or fusion.head is None or (fusion.head == FUSED and op.attrs):
        return None
    return fusion.follows


def _step(plan: Plan, rw: Rewrite, j: int, k: int, value: int) -> list[tuple[int, Tensor]] | None:
    """Whether op j, reading the chain's ``value`` as input k, is a tail step: its other
    operand as (slot, tensor), none (a unary step), or None (not a step)."""
    op = plan.ops[j]
    fusion = op._opdef.fusion
    if fusion is None or fusion.step is None:
        return None
    if not _fusable(plan, j, op) or op.control_inputs:
        return None
    out = rw.resolve(plan.outputs[j][0])
    shape = rw.shape(value)
    if shape is None or shape != rw.shape(out) or (k != 0 and fusion.order in ("left", "bias")):
        return None
    if op.outputs[0].dtype is not op.inputs[k].dtype:
        return None
    if fusion.step == "sum":  # only a sum over no axes (a broadcast gradient's, nothing broadcast)
        axes = rw.consts.get(rw.resolve(plan.inputs[j][1]))
        return [] if axes is not None and axes.size == 0 else None
    if fusion.order is None:
        return []
    if fusion.order == "bias":
        if op.attrs.get("data_format", "NHWC") != "NHWC":
            return None
    elif op._opdef.bound_kernel(np, op.attrs) is not getattr(np, fusion.step):
        return None  # not the plain ufunc call the step makes
    return [(rw.resolve(plan.inputs[j][1 - k]), op.inputs[1 - k])]


def _record(
    plan: Plan,
    rw: Rewrite,
    members: list[int],
    place: int,
    steps: list[str],
    operands: list[tuple[int, Tensor]],
    readers: dict[int, list[tuple[int, int]]],
    fetched: set[int],
) -> None:
    """Put the fused op for ``members`` in the rewrite, at ``place``; the others no longer run."""
    head, last = plan.ops[members[0]], plan.ops[members[-1]]
    inputs = [rw.resolve(s) for s in plan.inputs[members[0]]] + [s for s, _ in operands]
    tensors = (*head.inputs, *(t for _, t in operands))  # tensors: for reading variables
    outputs: tuple[int, ...] = (rw.resolve(plan.outputs[members[-1]][0]),)
    like: list[Tensor] = [last.outputs[0]]
    kind = head._opdef.fusion.head
    if kind == "_FusedMatMul":
        attrs: dict[str, Any] = {
            "transpose_a": bool(head.attrs.get("transpose_a", False)),
            "transpose_b": bool(head.attrs.get("transpose_b", False)),
        }
    elif kind in ("_FusedConv2D", "_FusedMaxPoolGrad"):
        names = CONV_ATTRS if kind == "_FusedConv2D" else POOL_ATTRS
        attrs = {a: head.attrs[a] for a in names if a in head.attrs}
        if kind == "_FusedMaxPoolGrad":
            attrs["pooled"] = _pooled_here(plan, rw, members[0])
    elif kind == "_FusedSparseSoftmaxCrossEntropyWithLogits":
        loss = rw.resolve(plan.outputs[members[0]][0])
        with_loss = loss != DISCARD and (loss in fetched or bool(readers.get(loss)))
        attrs = {"with_loss": with_loss}
        outputs = (loss if with_loss else DISCARD, *outputs)
        like = [head.outputs[0], *like]
    elif kind == "_FusedSum":
        attrs = {
            "axes": _sum_axes(plan, rw, members[0]),
            "keep_dims": bool(head.attrs["keep_dims"]),
        }
        inputs, tensors = inputs[:1] + inputs[2:], tensors[:1] + tensors[2:]  # the axes: an attr
    else:
        attrs = {"head": head.type}
    attrs["fused_ops"] = list(steps)
    op = _fused_op(kind, last, tensors, attrs, like)
    fn = _reading_variables(op, op._opdef.bound_kernel(np, attrs), op.inputs)
    rw.fusions[place] = Fused(op, fn, tuple(inputs), outputs, tuple(members))
    rw.fused[op.name] = tuple(plan.ops[m].name for m in members)
    for m in members:
        if m != place:
            rw.remove(m, "fused", (place,))
    names = ", ".join(f"{plan.ops[m].type} '{plan.ops[m].name}'" for m in members)
    for m in members:  # a sentence per written op, as for every rewrite
        rw.note(plan.ops[m], f"fused into {kind} '{op.name}' ({names}: one kernel)")
    if attrs.get("pooled"):
        rw.note(head, "each window's maximum read from its MaxPool's output, not found again")


def _relu_grad_of_pool(
    plan: Plan,
    rw: Rewrite,
    i: int,
    value: int,
    readers: dict[int, list[tuple[int, int]]],
    fetched: set[int],
) -> int | None:
    """The ReluGrad that is the only reader of MaxPoolGrad i's output, as its gradient, and
    masks by the pool's own ``orig_input`` (the ReLU's output), if there is one: then both
    are one ``_FusedMaxPoolGrad`` (``pool_kernels.max_pool_grad(relu=True)``)."""
    if value in fetched or len(readers.get(value, ())) != 1:
        return None
    j, k = readers[value][0]
    op = plan.ops[j]
    if k != 0 or op.type != "ReluGrad" or not _fusable(plan, j, op) or op.control_inputs:
        return None
    if rw.resolve(plan.inputs[j][1]) != rw.resolve(plan.inputs[i][0]):
        return None  # masked by another tensor than the one pooled
    if op.outputs[0].dtype is not plan.ops[i].outputs[0].dtype:
        return None
    return j


def _pooled_here(plan: Plan, rw: Rewrite, i: int) -> bool:
    """Whether MaxPoolGrad i's ``orig_output`` is made in this plan by a MaxPool of its
    ``orig_input`` with its window (not fed): then each window's maximum is known, and its
    first maximum is the first cell equal to it (``pool_kernels.max_pool_grad(y=...)``)."""
    x, y = rw.resolve(plan.inputs[i][0]), rw.resolve(plan.inputs[i][1])
    grad = plan.ops[i]
    if grad.attrs.get("data_format", "NHWC") != "NHWC":
        return False
    for j, outs in enumerate(plan.outputs):
        if y in outs and j not in rw.removed:
            pool = plan.ops[j]
            return (
                pool.type == "MaxPool"
                and outs[0] == y
                and rw.resolve(plan.inputs[j][0]) == x
                and all(pool.attrs.get(a) == grad.attrs.get(a) for a in POOL_ATTRS)
            )
    return False


def _sum_axes(plan: Plan, rw: Rewrite, i: int) -> list[int] | None:
    """The axes of Sum i as its kernel normalises them, if folded and its input's rank known."""
    axes = rw.consts.get(rw.resolve(plan.inputs[i][1]))
    shape = rw.shape(rw.resolve(plan.inputs[i][0]))
    if axes is None or shape is None or axes.dtype.kind not in "iu" or axes.ndim > 1:
        return None
    n = max(len(shape), 1)
    if any(not -n <= a < n for a in axes.ravel().tolist()):
        return None  # left to fail in the run, naming the op
    return sorted({a % n for a in axes.ravel().tolist()})


def _fused_op(
    kind: str, last: Operation, inputs: tuple[Tensor, ...], attrs: dict[str, Any], like: list[Any]
) -> Operation:
    """The fused op: named, placed and sited as ``last``, its outputs shaped as ``like``."""
    op = Operation(
        last.graph, OPS[kind], last.name, inputs, attrs, [], last.device, last.site, last._id
    )
    op.outputs = tuple(Tensor(op, k, t.dtype, t._shape) for k, t in enumerate(like))
    return op


def _readers(plan: Plan, rw: Rewrite) -> dict[int, list[tuple[int, int]]]:
    """Slot -> (op, input position) of each kept op reading it, after the rewrites."""
    readers: dict[int, list[tuple[int, int]]] = {}
    for i, ins in enumerate(plan.inputs):
        if i not in rw.removed:
            for k, s in enumerate(ins):
                readers.setdefault(rw.resolve(s), []).append((i, k))
    return readers
