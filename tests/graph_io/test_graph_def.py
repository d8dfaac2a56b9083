"""GraphDef export/import: round trips, TensorFlow's own frozen graphs, bad input."""

from __future__ import annotations

import os
import time
import tracemalloc

import numpy as np
import pytest

pytest.importorskip("tensorboard")

import flowbook as tf
from flowbook.framework.registry import OPS
from flowbook.graph_io import graph_def as gdef

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures")
RNG = np.random.default_rng(0)


def _figure1(g):
    b = tf.constant([0.1, 0.2, 0.3], name="b")
    W = tf.constant(RNG.standard_normal((4, 3)).astype(np.float32), name="W")
    x = tf.placeholder(tf.float32, [None, 4], name="x")
    relu = tf.nn.relu(tf.matmul(x, W) + b, name="relu")
    tf.reduce_sum(relu, name="C")
    return {"x:0": RNG.standard_normal((2, 4)).astype(np.float32)}, ["relu:0", "C:0"]


def _counter(g):
    one = tf.constant(1, name="one")
    start = tf.placeholder(tf.int32, [], name="start")
    with tf.control_dependencies([tf.no_op(name="tick")]):
        nxt = tf.add(start, one, name="next")
    tf.identity(nxt * 2, name="doubled")
    return {"start:0": np.int32(5)}, ["next:0", "doubled:0"]


def _mlp(g):
    x = tf.placeholder(tf.float32, [None, 6], name="x")
    h = tf.nn.relu(tf.matmul(x, tf.constant(RNG.standard_normal((6, 8)), tf.float32)))
    logits = tf.nn.bias_add(tf.matmul(h, tf.constant(np.ones((8, 3)), tf.float32)), [1.0, 2, 3])
    tf.nn.softmax(logits, name="probs")
    tf.reduce_mean(logits, 1, keep_dims=True, name="m")
    return {"x:0": RNG.standard_normal((5, 6)).astype(np.float32)}, ["probs:0", "m:0"]


def _conv(g):
    x = tf.placeholder(tf.float32, [None, 8, 8, 1], name="x")
    k = tf.constant(RNG.standard_normal((3, 3, 1, 2)), tf.float32)
    c = tf.nn.conv2d(x, k, [1, 1, 1, 1], "SAME")
    p = tf.nn.max_pool(tf.nn.relu(c), [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
    flat = tf.reshape(p, [-1, 32])
    out = tf.matmul(flat, tf.constant(RNG.standard_normal((32, 3)), tf.float32), name="out")
    tf.concat([out, tf.cast(tf.shape(out), tf.float32)[None, :2] * 0.0 + out[:, :2]], 1, name="cat")
    tf.stack([tf.squeeze(out[:, :1], [1])] * 2, name="st")
    return {"x:0": RNG.standard_normal((1, 8, 8, 1)).astype(np.float32)}, ["out:0", "cat:0", "st:0"]


GRAPHS = {"figure1": _figure1, "counter": _counter, "mlp": _mlp, "conv": _conv}


def _build(name):
    g = tf.Graph()
    with g.as_default():
        feed, fetches = GRAPHS[name](g)
    return g, feed, fetches


def _run(g, fetches, feed):
    with tf.Session(graph=g) as sess:
        return sess.run(fetches, feed)


@pytest.mark.parametrize("name", list(GRAPHS))
def test_round_trip(name):
    g, feed, fetches = _build(name)
    want = _run(g, fetches, feed)
    g2 = tf.Graph()
    with g2.as_default():
        got_t = gdef.import_graph_def(gdef.to_graph_def(g), return_elements=fetches)
    got = _run(g2, got_t, {f"import/{k}": v for k, v in feed.items()})
    for w, r in zip(want, got, strict=True):
        np.testing.assert_allclose(r, w, rtol=1e-6)
    assert {op.name for op in g2.get_operations()} == {
        f"import/{op.name}" for op in g.get_operations()
    }


def test_control_inputs_and_input_map():
    g, _, _ = _build("counter")
    gd = gdef.to_graph_def(g)
    assert "^tick" in list(next(n for n in gd.node if n.name == "next").input)
    g2 = tf.Graph()
    with g2.as_default():
        seven = tf.constant(7, name="seven")
        (d, nxt_op) = gdef.import_graph_def(
            gd, input_map={"start:0": seven}, return_elements=["doubled:0", "next"], name="c"
        )
    assert nxt_op.name == "c/next" and [o.name for o in nxt_op.control_inputs] == ["c/tick"]
    assert _run(g2, d, None) == 16


@pytest.mark.parametrize("as_text", [True, False])
def test_write_and_read(tmp_path, as_text):
    g = _build("mlp")[0]
    path = gdef.write_graph(g, str(tmp_path), "g.pbtxt" if as_text else "g.pb", as_text=as_text)
    gd = gdef.read_graph_def(path)
    assert gd == gdef.to_graph_def(g)
    if not as_text:
        with open(path, "rb") as f:
            assert gdef.parse_graph_def(f.read()) == gd


@pytest.mark.parametrize("name", ["tf_mlp", "tf_cnn", "tf_shapes"])
def test_tensorflow_fixture(name):
    with open(os.path.join(FIXTURES, f"{name}.pb"), "rb") as f:
        data = f.read()
    want = np.load(os.path.join(FIXTURES, f"{name}.npz"))
    keys = [k for k in want.files if k != "x"]
    g = tf.Graph()
    with g.as_default():
        names = [k[: k.rindex("_")] + ":0" for k in keys]
        outs = gdef.import_graph_def(data, return_elements=names)
    got = _run(g, outs, {"import/x:0": want["x"]})
    for k, r in zip(keys, got, strict=True):
        np.testing.assert_allclose(r, want[k], rtol=1e-5, atol=1e-6, err_msg=k)


def _node(gd, name, op, inputs=(), **attrs):
    n = gd.node.add(name=name, op=op)
    n.input.extend(inputs)
    for k, v in attrs.items():
        gdef._set_attr(n.attr[k], v)
    return n


def _const(gd, name, value):
    n = gd.node.add(name=name, op="Const")
    gdef._tensor_proto(np.asarray(value, np.float32), n.attr["value"].tensor)
    n.attr["dtype"].type = gdef.DT_ENUM["float32"]


def _bad_graph_defs():
    from tensorboard.compat.proto import graph_pb2

    cases = {}
    gd = graph_pb2.GraphDef()
    _const(gd, "a", 1.0)
    _node(gd, "weird", "FancyOp", ["a"])
    cases["unknown op"] = (gd, "weird")
    gd = graph_pb2.GraphDef()
    _node(gd, "p", "Identity", ["q"])
    _node(gd, "q", "Identity", ["p"])
    cases["cycle"] = (gd, "'")
    gd = graph_pb2.GraphDef()
    _node(gd, "lonely", "Identity", ["nowhere:0"])
    cases["missing input"] = (gd, "lonely")
    gd = graph_pb2.GraphDef()
    _const(gd, "a", [[1.0, 2.0]])
    _node(gd, "mm", "MatMul", ["a", "a"], bogus=3)
    cases["unknown attr"] = (gd, "mm")
    gd = graph_pb2.GraphDef()
    _const(gd, "a", [[1.0, 2.0]])
    _node(gd, "mm", "MatMul", ["a", "a"])
    cases["shape error"] = (gd, "mm")
    gd = graph_pb2.GraphDef()
    n = gd.node.add(name="broken", op="Const")
    n.attr["value"].tensor.dtype = gdef.DT_ENUM["float32"]
    n.attr["value"].tensor.tensor_shape.dim.add(size=4)
    n.attr["value"].tensor.tensor_content = b"\x00" * 5
    n.attr["dtype"].type = gdef.DT_ENUM["float32"]
    cases["bad tensor"] = (gd, "broken")
    gd = graph_pb2.GraphDef()
    _node(gd, "mm", "MatMul")
    cases["no inputs"] = (gd, "'mm' \\(MatMul\\): takes 2 inputs \\(a, b\\), the GraphDef gives 0")
    gd = graph_pb2.GraphDef()
    n = _node(gd, "p", "Placeholder", dtype=tf.float32)
    n.attr["shape"].shape.dim.add(size=-5)
    cases["dim -5"] = (gd, "'p'.*dimension below -1")
    gd = graph_pb2.GraphDef()
    _node(gd, "p", "Placeholder", dtype=tf.float32, shape=["a", "b"])
    cases["shape of strings"] = (gd, "'p'.*attr 'shape' must be a shape")
    for label, dims, field, dtype in [
        ("1.6 GB splat", [20000, 20000], "float_val", "float32"),
        ("int64-wrapping claim", [2**32 + 1, 2**32 + 1], "float_val", "float32"),
        ("10^9 strings", [10**9], "string_val", "string"),
    ]:
        gd = graph_pb2.GraphDef()
        n = gd.node.add(name="c", op="Const")
        n.attr["dtype"].type = gdef.DT_ENUM[dtype]
        t = n.attr["value"].tensor
        t.dtype = gdef.DT_ENUM[dtype]
        for d in dims:
            t.tensor_shape.dim.add(size=d)
        getattr(t, field).append(b"x" if dtype == "string" else 1.0)
        cases[label] = (gd, "'c' \\(Const\\) claims a .* tensor of shape")
    good = gdef.to_graph_def(_build("mlp")[0]).SerializeToString()
    cases["truncated"] = (good[: len(good) // 2 + 3], "Invalid GraphDef")
    cases["random bytes"] = (
        bytes(np.random.default_rng(1).integers(0, 256, 300, np.uint8)),
        "Invalid GraphDef",
    )
    return cases


@pytest.mark.parametrize("case", list(_bad_graph_defs()))
def test_bad_input_leaves_graph_untouched(case):
    data, node = _bad_graph_defs()[case]
    g = tf.Graph()
    with g.as_default():
        tf.constant(1.0, name="existing")
        before = ([op.name for op in g.get_operations()], g.version)
        with pytest.raises(ValueError, match=node):
            gdef.import_graph_def(data)
    assert ([op.name for op in g.get_operations()], g.version) == before
    with g.as_default():  # the name scope "import" is still free
        gdef.import_graph_def(gdef.to_graph_def(_build("counter")[0]))
    assert "import/next" in g


def test_mid_build_failure_rolls_back(monkeypatch):
    from flowbook.graph_io import graph_def_import

    g = tf.Graph()
    gd = gdef.to_graph_def(_build("mlp")[0])
    calls = []
    real = graph_def_import._build

    def flaky(graph, order, imap, prefix):
        calls.append(graph)
        if graph is g:
            real(graph, order[:3], imap, prefix)
            raise ValueError("node 'x': simulated failure")
        return real(graph, order, imap, prefix)

    monkeypatch.setattr(graph_def_import, "_build", flaky)
    with g.as_default():
        tf.constant(1.0, name="existing")
        before = ([op.name for op in g.get_operations()], g.version)
        with pytest.raises(ValueError, match="simulated"):
            gdef.import_graph_def(gd)
    assert ([op.name for op in g.get_operations()], g.version) == before


@pytest.mark.parametrize("op_type", sorted(OPS), ids=str)
def test_op_def_protos(op_type):
    proto = gdef.op_def(op_type)
    assert proto.name == op_type
    assert [a.name for a in proto.input_arg] == [i.lstrip("*") for i in OPS[op_type].inputs]
    assert proto.is_stateful == OPS[op_type].stateful
    assert {a.name for a in proto.attr} >= set(OPS[op_type].attrs)


def _splat(dims, value=1.0):
    from tensorboard.compat.proto import graph_pb2

    gd = graph_pb2.GraphDef()
    n = gd.node.add(name="c", op="Const")
    n.attr["dtype"].type = gdef.DT_ENUM["float32"]
    t = n.attr["value"].tensor
    t.dtype = gdef.DT_ENUM["float32"]
    for d in dims:
        t.tensor_shape.dim.add(size=d)
    t.float_val.append(value)
    return gd


def test_a_1gb_claim_in_100_bytes_is_refused_at_once():
    gd = _splat([16384, 16384])  # 1 GiB of float32
    assert len(gd.SerializeToString()) < 100
    tracemalloc.start()  # numpy reports its allocations to tracemalloc
    try:
        with tf.Graph().as_default(), pytest.raises(ValueError, match=r"1\.0 GiB"):
            gdef.import_graph_def(gd)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 50 << 20  # refused before any of the 1 GiB was allocated or filled
    # and before any work in proportion to the claim: 16 TiB is refused as fast as 1 GiB
    # (each claim's best of interleaved rounds: load only ever slows a round)
    best = {}
    for _ in range(9):
        for dims in ([16384, 16384], [16384, 16384, 16384]):
            claim = _splat(dims)
            t0 = time.perf_counter()
            with tf.Graph().as_default(), pytest.raises(ValueError, match="claims"):
                gdef.import_graph_def(claim)
            took = time.perf_counter() - t0
            best[len(dims)] = min(best.get(len(dims), took), took)
    assert best[3] < 10 * best[2]


def test_a_splat_within_the_budget_stays_a_broadcast_and_round_trips():
    gd = _splat([8192, 8192], 2.5)  # 256 MiB if it were allocated
    g = tf.Graph()
    with g.as_default():
        c = gdef.import_graph_def(gd, return_elements=["c:0"], name="")[0]
        value = c.op.get_attr("value")
        assert value.shape == (8192, 8192) and value.strides == (0, 0)  # nothing allocated
        with tf.Session() as s:
            assert s.run(tf.reduce_sum(c[:2, :3])) == 15.0
    (node,) = [n for n in gdef.to_graph_def(g).node if n.name == "c"]
    assert node.ByteSize() < 100  # exported in TF's compact form again


def test_the_claims_budget_is_configurable():
    from flowbook.framework.limits import claim_limit

    with tf.Graph().as_default():
        with claim_limit(100), pytest.raises(ValueError, match="over the 100 B"):
            gdef.import_graph_def(_splat([5, 6]))  # 120 bytes
        gdef.import_graph_def(_splat([5, 6]))  # the default budget takes it
