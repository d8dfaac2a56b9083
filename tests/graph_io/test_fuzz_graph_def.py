"""Fuzzing ``import_graph_def``: every input ends in an imported graph or a ValueError.

Two kinds of input: the bytes of real GraphDefs (the round-trip graphs of
``test_graph_def``) with bytes flipped, cut or inserted, and GraphDefs built
node by node from random ops, names, inputs and attrs of every kind, tensor
protos with random dtypes, shapes and values included.  Each import runs
under a small claims budget and must stay within the memory and time bounds
of ``fuzzing.bounded``; the graph it imports into must be left as it was
when it fails.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tensorboard.compat.proto import graph_pb2

import flowbook as tf
from flowbook.framework.limits import claim_limit
from flowbook.framework.registry import OPS
from flowbook.graph_io import graph_def as gdef
from tests.fuzzing import FUZZ, bounded, corpus

pytestmark = pytest.mark.fuzz

BUDGET = 16 << 20  # the claims budget while fuzzing: everything a file may ask for is small


def _seeds() -> list[bytes]:
    from tests.graph_io.test_graph_def import GRAPHS, _build

    return [gdef.to_graph_def(_build(name)[0]).SerializeToString() for name in GRAPHS]


SEEDS = _seeds()


def _import(data: bytes | graph_pb2.GraphDef) -> None:
    """Import ``data``; only ValueError may come out, and a failure leaves the graph as it was."""
    g = tf.Graph()
    with g.as_default():
        tf.constant(1.0, name="existing")
        before = [op.name for op in g.get_operations()]
        with claim_limit(BUDGET), bounded("import_graph_def"):
            try:
                gdef.import_graph_def(data, name="")
            except ValueError:
                assert [op.name for op in g.get_operations()] == before
                return


# ------------------------------------------------------------- mutated bytes
@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    data = bytearray(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["flip", "cut", "insert", "varint"]))
        at = draw(st.integers(0, max(0, len(data) - 1)))
        if kind == "flip" and data:
            data[at] = draw(st.integers(0, 255))
        elif kind == "cut":
            del data[at : at + draw(st.integers(1, 16))]
        elif kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        else:  # a long varint: the encoding of huge sizes and counts
            data[at:at] = bytes([0xFF] * draw(st.integers(1, 9)) + [0x01])
    return bytes(data)


@FUZZ
@given(mutated())
def test_mutated_graph_defs(data):
    _import(data)


# ------------------------------------------------------------- built nodes
NAMES = st.sampled_from(["a", "b", "c", "a/b", "^a", "a:0", "", "x y", "n" * 300])
DIMS = st.lists(st.sampled_from([-5, -1, 0, 1, 2, 3, 1000, 20000, 2**31, 2**40, 2**62]), max_size=4)
DTYPES = st.sampled_from([0, 1, 2, 3, 4, 6, 7, 9, 10, 19, 101, 999])


def _tensor(draw: st.DrawFn, proto, dtype: int | None = None) -> None:
    proto.dtype = draw(DTYPES) if dtype is None else dtype
    if draw(st.booleans()):
        proto.tensor_shape.unknown_rank = True
    for d in draw(DIMS):
        proto.tensor_shape.dim.add(size=d)
    field = draw(
        st.sampled_from(
            [
                "float_val",
                "int_val",
                "int64_val",
                "string_val",
                "bool_val",
                "half_val",
                "dcomplex_val",
                "content",
                "none",
            ]
        )
    )
    if field == "content":
        proto.tensor_content = draw(st.binary(max_size=64))
    elif field == "string_val":
        proto.string_val.extend(draw(st.lists(st.binary(max_size=8), max_size=4)))
    elif field == "bool_val":
        proto.bool_val.extend(draw(st.lists(st.booleans(), max_size=4)))
    elif field in ("float_val", "dcomplex_val"):
        getattr(proto, field).extend(draw(st.lists(st.floats(width=32), max_size=5)))
    elif field != "none":
        getattr(proto, field).extend(draw(st.lists(st.integers(0, 2**31 - 1), max_size=5)))


def _attr(draw: st.DrawFn, attr) -> None:
    kind = draw(st.sampled_from(["i", "f", "b", "s", "type", "shape", "tensor", "list", "none"]))
    if kind == "i":
        attr.i = draw(st.integers(-(2**63), 2**63 - 1))
    elif kind == "f":
        attr.f = draw(st.floats(width=32))
    elif kind == "b":
        attr.b = draw(st.booleans())
    elif kind == "s":
        attr.s = draw(st.binary(max_size=12))
    elif kind == "type":
        attr.type = draw(DTYPES)
    elif kind == "shape":
        for d in draw(DIMS):
            attr.shape.dim.add(size=d)
    elif kind == "tensor":
        _tensor(draw, attr.tensor)
    elif kind == "list":
        _list_attr(draw, attr.list)


def _list_attr(draw: st.DrawFn, lst) -> None:
    which = draw(st.sampled_from(["i", "f", "s", "type", "shape"]))
    for _ in range(draw(st.integers(0, 4))):
        if which == "i":
            lst.i.append(draw(st.integers(-(2**31), 2**31)))
        elif which == "f":
            lst.f.append(draw(st.floats(width=32)))
        elif which == "s":
            lst.s.append(draw(st.binary(max_size=6)))
        elif which == "type":
            lst.type.append(draw(DTYPES))
        else:
            for d in draw(DIMS):
                lst.shape.add().dim.add(size=d)


@st.composite
def built(draw: st.DrawFn) -> graph_pb2.GraphDef:
    gd = graph_pb2.GraphDef()
    names = draw(st.lists(NAMES, min_size=1, max_size=6))
    for name in names:
        if draw(st.integers(0, 3)) == 0:  # a well-formed Const: its value is what is fuzzed
            node = gd.node.add(name=name, op="Const")
            dtype = draw(st.sampled_from([1, 2, 3, 7, 9, 10, 19]))
            node.attr["dtype"].type = dtype
            _tensor(draw, node.attr["value"].tensor, dtype)
            continue
        op = draw(st.sampled_from([*sorted(OPS), "NotAnOp"]))
        node = gd.node.add(name=name, op=op)
        for _ in range(draw(st.integers(0, 3))):
            src = draw(st.sampled_from([*names, "missing"]))
            node.input.append(src + draw(st.sampled_from(["", ":0", ":1", ":7", ":x"])))
            if draw(st.booleans()):
                node.input[-1] = "^" + src
        keys = list(OPS[op].attrs) if op in OPS else []
        for key in draw(st.lists(st.sampled_from([*keys, "T", "bogus", "_class"]), max_size=4)):
            _attr(draw, node.attr[key])
    return gd


@FUZZ
@given(built())
def test_built_graph_defs(gd):
    _import(gd)


@pytest.mark.parametrize("path", corpus("graph_def"), ids=lambda p: p.name)
def test_kept_inputs(path):
    _import(path.read_bytes())
