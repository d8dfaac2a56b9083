"""Functional control flow lowered to the whitepaper's primitives, before a GraphDef imports.

TensorFlow 2 writes a loop as one ``While``/``StatelessWhile`` node and a cond
as one ``If``/``StatelessIf`` node whose bodies are FunctionDefs in the
GraphDef's ``library``; a call of a ``tf.function`` is a
``PartitionedCall``/``StatefulPartitionedCall``.  flowbook's executor runs
TensorFlow 1's form (Enter/Merge/Switch/LoopCond/NextIteration/Exit frames,
``flowbook.runtime.frames``), so :func:`lower_functions` rewrites such a
GraphDef into that form, node for node, before the importer sees it:

- a **call** inlines its function's body, its nodes named ``call/<node>``;
- an **If** switches each input on the predicate, inlines ``then_branch``
  on the true side and ``else_branch`` on the false side, and merges each
  pair of outputs (``If/merge_<j>``);
- a **While** enters each loop variable into the frame named after the node,
  merges it with its NextIteration, inlines ``cond`` on the merges (its result
  feeds ``LoopCond``), switches every variable on it, inlines ``body`` on the
  true sides and sends its results to NextIteration; the false sides Exit.

A body node without inputs (a Const) gets a control input from the pivot of
the branch or frame it belongs to, so it lives there.  A body's
``control_ret`` nodes become control inputs of what ends the body (the
NextIterations, or the branch's done marker).  The lowered functional node
leaves behind a ``NoOp`` of its own name that waits for its outputs (so
``^node`` control inputs still mean "after it"), and every ``node:k`` input
in the graph is renamed to the tensor that now holds output ``k``.  Nested
functional nodes (a loop in a loop's body) lower the same way, recursively.

FunctionDef inputs name an output by its OpDef arg (``"mul:z:0"``): every op
whose outputs are one arg (most) needs no table; the few with several
(``Switch``, ``Unique``...) are in :data:`OUTPUT_ARGS`.

    >>> from tensorboard.compat.proto import graph_pb2
    >>> gd = graph_pb2.GraphDef()
    >>> _ = gd.node.add(name="c", op="Const")
    >>> lower_functions(gd) is gd   # nothing functional: the GraphDef as it was
    True
"""

from __future__ import annotations

from typing import Any

WHILE_OPS = frozenset({"While", "StatelessWhile"})
IF_OPS = frozenset({"If", "StatelessIf"})
CALL_OPS = frozenset({"PartitionedCall", "StatefulPartitionedCall"})
FUNCTIONAL = WHILE_OPS | IF_OPS | CALL_OPS
MAX_DEPTH = 64  # functions inlined inside functions: deeper is taken for recursion

# TensorFlow's output arg names of ops with several output args (each one tensor)
OUTPUT_ARGS: dict[str, tuple[str, ...]] = {
    "Switch": ("output_false", "output_true"),
    "RefSwitch": ("output_false", "output_true"),
    "Merge": ("output", "value_index"),
    "RefMerge": ("output", "value_index"),
    "Unique": ("y", "idx"),
    "UniqueV2": ("y", "idx"),
    "UniqueWithCounts": ("y", "idx", "count"),
    "TopKV2": ("values", "indices"),
    "BroadcastGradientArgs": ("r0", "r1"),
    "SoftmaxCrossEntropyWithLogits": ("loss", "backprop"),
    "SparseSoftmaxCrossEntropyWithLogits": ("loss", "backprop"),
    "FusedBatchNorm": ("y", "batch_mean", "batch_variance", "reserve_space_1", "reserve_space_2"),
    "FusedBatchNormV3": (
        "y", "batch_mean", "batch_variance", "reserve_space_1", "reserve_space_2",
        "reserve_space_3",
    ),
    "MaxPoolWithArgmax": ("output", "argmax"),
    "Qr": ("q", "r"),
    "Svd": ("s", "u", "v"),
    "SelfAdjointEigV2": ("e", "v"),
}  # fmt: skip


def lower_functions(graph_def: Any) -> Any:
    """``graph_def`` with every functional node lowered (itself when it has none).

    Raises ValueError naming the node for a function the library lacks, a
    predicate that is not bool, or functions nested past :data:`MAX_DEPTH`.
    """
    if not any(n.op in FUNCTIONAL for n in graph_def.node):
        return graph_def
    out = type(graph_def)()
    out.versions.CopyFrom(graph_def.versions)
    lowering = _Lowering({f.signature.name: f for f in graph_def.library.function}, out)
    lowering.add(list(graph_def.node), 0)
    lowering.rename_inputs()
    return out


def _split(text: str) -> tuple[str, int]:
    """``"a:1"`` -> ("a", 1); ``"a"`` -> ("a", 0)."""
    name, sep, idx = text.rpartition(":")
    return (name, int(idx)) if sep and idx.isdigit() else (text, 0)


def flat_index(op_type: str, arg: str, index: int) -> int:
    """The position among an op's outputs of output ``index`` of its output arg ``arg``.

    >>> flat_index("Mul", "z", 0), flat_index("Switch", "output_true", 0)
    (0, 1)
    """
    names = OUTPUT_ARGS.get(op_type)
    if names is None:
        return index  # one output arg (possibly a list): its position is the index
    if arg not in names:
        raise ValueError(f"{op_type} has no output arg '{arg}' (it has {list(names)})")
    return names.index(arg) + index


class _Lowering:
    """One GraphDef's lowering: the nodes written so far and the renamed outputs."""

    def __init__(self, functions: dict[str, Any], out: Any) -> None:
        self.functions = functions
        self.out = out
        self.outputs: dict[str, list[str]] = {}  # lowered node -> the tensors of its outputs

    # ------------------------------------------------------------ plumbing
    def node(self, name: str, op: str, inputs: list[str], **attrs: Any) -> Any:
        """Append a NodeDef (attrs: str -> s, bool -> b, int -> i, ("type", enum) -> type)."""
        node = self.out.node.add(name=name, op=op)
        node.input.extend(inputs)
        for key, value in attrs.items():
            if isinstance(value, tuple):
                node.attr[key].type = value[1]
            elif isinstance(value, bool):
                node.attr[key].b = value
            elif isinstance(value, int):
                node.attr[key].i = value
            else:
                node.attr[key].s = value.encode()
        return node

    def add(self, nodes: list[Any], depth: int) -> None:
        """Write ``nodes``, lowering the functional ones."""
        for node in nodes:
            if node.op not in FUNCTIONAL:
                self.out.node.add().CopyFrom(node)
            elif depth >= MAX_DEPTH:
                raise ValueError(
                    f"node '{node.name}' ({node.op}): functions nested deeper than {MAX_DEPTH} "
                    "(a recursive function?)"
                )
            elif node.op in WHILE_OPS:
                self.lower_while(node, depth)
            elif node.op in IF_OPS:
                self.lower_if(node, depth)
            else:
                self.lower_call(node, depth)

    def function(self, node: Any, attr: str) -> Any:
        name = node.attr[attr].func.name
        fn = self.functions.get(name)
        if fn is None:
            raise ValueError(
                f"node '{node.name}' ({node.op}): function '{name}' ({attr}) is not in the "
                "GraphDef's library"
            )
        return fn

    def finish(self, node: Any, outputs: list[str], after: list[str]) -> None:
        """Record ``node``'s outputs and leave a NoOp of its name that waits for ``after``."""
        self.outputs[node.name] = outputs
        self.node(node.name, "NoOp", [f"^{_split(t)[0]}" for t in after])

    def rename_inputs(self) -> None:
        """Point every ``node:k`` input at the tensor now holding that output."""
        for node in self.out.node:
            for k, text in enumerate(node.input):
                if not text.startswith("^"):
                    node.input[k] = self.resolve(text)

    def resolve(self, text: str) -> str:
        seen = 0
        name, idx = _split(text)
        while name in self.outputs and seen <= len(self.outputs):
            text = self.outputs[name][idx]
            name, idx = _split(text)
            seen += 1
        return text

    # ------------------------------------------------------------ inlining
    def inline(
        self, fn: Any, prefix: str, args: list[str], pivot: str | None, depth: int
    ) -> tuple[list[str], list[str]]:
        """Write ``fn``'s body under ``prefix`` on the tensors ``args``: (outputs, control rets)."""
        sig = fn.signature
        if len(args) != len(sig.input_arg):
            raise ValueError(
                f"function '{sig.name}' takes {len(sig.input_arg)} inputs, given {len(args)}"
            )
        arg_map = {a.name: t for a, t in zip(sig.input_arg, args)}
        types = {n.name: n.op for n in fn.node_def}
        body = []
        for src in fn.node_def:
            node = type(src)()
            node.CopyFrom(src)
            node.name = prefix + src.name
            del node.input[:]
            node.input.extend(_body_input(text, prefix, arg_map, types) for text in src.input)
            if not node.input and pivot is not None:
                node.input.append(f"^{pivot}")
            body.append(node)
        self.add(body, depth + 1)
        outs = [_body_input(fn.ret[a.name], prefix, arg_map, types) for a in sig.output_arg]
        controls = [prefix + fn.control_ret[a] for a in sig.control_output if a in fn.control_ret]
        return outs, controls

    # ------------------------------------------------------------ the ops
    def lower_call(self, node: Any, depth: int) -> None:
        fn = self.function(node, "f")
        data = [t for t in node.input if not t.startswith("^")]
        controls = [t for t in node.input if t.startswith("^")]
        args = data
        if controls:  # the body's reads wait for the call's control inputs
            args = [
                self.node(f"{node.name}/input_{k}", "Identity", [t, *controls]).name
                for k, t in enumerate(data)
            ]
        pivot = None  # what the body's input-less nodes wait for: in the call's frame
        if controls or data:
            kind, ins = ("NoOp", controls) if controls else ("Identity", data[:1])
            pivot = self.node(f"{node.name}/pivot", kind, ins).name
        outs, rets = self.inline(fn, f"{node.name}/", args, pivot, depth)
        self.finish(node, outs, outs + rets)

    def lower_if(self, node: Any, depth: int) -> None:
        then_fn, else_fn = self.function(node, "then_branch"), self.function(node, "else_branch")
        if "Tcond" in node.attr and node.attr["Tcond"].type != 10:
            raise ValueError(f"node '{node.name}' ({node.op}): the predicate must be bool")
        data = [t for t in node.input if not t.startswith("^")]
        controls = [t for t in node.input if t.startswith("^")]
        pred, args = data[0], data[1:]
        x = node.name
        self.node(f"{x}/switch_pred", "Switch", [pred, pred, *controls], T=("type", 10))
        pivot_f = self.node(f"{x}/pivot_f", "Identity", [f"{x}/switch_pred"], T=("type", 10))
        pivot_t = self.node(f"{x}/pivot_t", "Identity", [f"{x}/switch_pred:1"], T=("type", 10))
        switched = [
            self.node(f"{x}/switch_{k}", "Switch", [t, pred, *controls]).name
            for k, t in enumerate(args)
        ]
        then_outs, then_rets = self.inline(
            then_fn, f"{x}/then/", [f"{s}:1" for s in switched], pivot_t.name, depth
        )
        else_outs, else_rets = self.inline(
            else_fn, f"{x}/else/", [f"{s}:0" for s in switched], pivot_f.name, depth
        )
        done_t = self.node(
            f"{x}/then_done", "Identity", [pivot_t.name] + [f"^{r}" for r in then_rets]
        )
        done_f = self.node(
            f"{x}/else_done", "Identity", [pivot_f.name] + [f"^{r}" for r in else_rets]
        )
        done = self.node(f"{x}/branch_executed", "Merge", [done_f.name, done_t.name], N=2)
        merges = [
            self.node(f"{x}/merge_{j}", "Merge", [f, t], N=2).name
            for j, (f, t) in enumerate(zip(else_outs, then_outs))
        ]
        self.finish(node, [f"{m}:0" for m in merges], [*merges, done.name])

    def lower_while(self, node: Any, depth: int) -> None:
        cond_fn, body_fn = self.function(node, "cond"), self.function(node, "body")
        data = [t for t in node.input if not t.startswith("^")]
        controls = [t for t in node.input if t.startswith("^")]
        x = node.name
        parallel = node.attr["parallel_iterations"].i if "parallel_iterations" in node.attr else 10
        enters = [
            self.node(
                f"{x}/enter_{k}",
                "Enter",
                [t, *controls],
                frame_name=x,
                is_constant=False,
                parallel_iterations=parallel or 10,
            ).name
            for k, t in enumerate(data)
        ]
        merges = [
            self.node(f"{x}/merge_{k}", "Merge", [e, f"{x}/next_{k}"], N=2).name
            for k, e in enumerate(enters)
        ]
        (pred, *_), _ = self.inline(cond_fn, f"{x}/cond/", merges, merges[0], depth)
        cond = self.node(f"{x}/loop_cond", "LoopCond", [pred]).name
        switches = [
            self.node(f"{x}/switch_{k}", "Switch", [m, cond]).name for k, m in enumerate(merges)
        ]
        exits = [self.node(f"{x}/exit_{k}", "Exit", [s]).name for k, s in enumerate(switches)]
        idents = [
            self.node(f"{x}/body_in_{k}", "Identity", [f"{s}:1"]).name
            for k, s in enumerate(switches)
        ]
        outs, rets = self.inline(body_fn, f"{x}/body/", idents, idents[0], depth)
        for k, t in enumerate(outs):
            self.node(f"{x}/next_{k}", "NextIteration", [t] + [f"^{r}" for r in rets])
        self.finish(node, exits, exits)


def _body_input(text: str, prefix: str, arg_map: dict[str, str], types: dict[str, str]) -> str:
    """A FunctionDef input (``"^n"``, ``"arg"``, ``"n:out_arg:k"``) as a GraphDef input."""
    if text.startswith("^"):
        return f"^{prefix}{text[1:]}"
    parts = text.split(":")
    if parts[0] in arg_map and len(parts) <= 2:
        return arg_map[parts[0]]
    if len(parts) == 3 and parts[0] in types:
        return f"{prefix}{parts[0]}:{flat_index(types[parts[0]], parts[1], int(parts[2]))}"
    if len(parts) == 1 and parts[0] in types:
        return prefix + parts[0]
    raise ValueError(f"a function body's input '{text}' names neither an argument nor a node")
