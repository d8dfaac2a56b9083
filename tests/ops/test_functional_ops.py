"""map_fn, scan, foldl, foldr: values vs numpy, gradients, TensorFlow's numbers and graph."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flowbook as tf

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures")
X = np.arange(12, dtype=np.float32).reshape(4, 3) / 5 - 1


def _scan(f, xs, a=None, reverse=False):
    """numpy's reference scan: every accumulator, stacked (``a`` None: the first element)."""
    order = list(range(len(xs)))[::-1] if reverse else list(range(len(xs)))
    out = [None] * len(xs)
    if a is None:
        a, out[order[0]], order = xs[order[0]], xs[order[0]], order[1:]
    for i in order:
        a = out[i] = f(a, xs[i])
    return np.stack(out)


# (id, build(x) -> fetches, numpy reference(x) -> the same structure)
CASES = [
    ("map", lambda x: tf.map_fn(lambda r: r * r + 1.0, x), lambda x: x * x + 1),
    ("map-nested-in", lambda x: tf.map_fn(lambda ab: ab[0] - ab[1], (x, x * 2.0), dtype=tf.float32),
     lambda x: -x),
    ("map-nested-out", lambda x: tf.map_fn(lambda r: {"s": tf.reduce_sum(r), "m": r * 2.0},
                                           x, dtype={"s": tf.float32, "m": tf.float32}),
     lambda x: {"m": x * 2, "s": x.sum(1)}),
    ("map-dtype-change", lambda x: tf.map_fn(lambda r: tf.argmax(r, output_type=tf.int32), x,
                                             dtype=tf.int32),
     lambda x: x.argmax(1).astype(np.int32)),
    ("map-scalar-elements", lambda x: tf.map_fn(lambda v: v * 3.0, x[:, 0]), lambda x: x[:, 0] * 3),
    ("scan", lambda x: tf.scan(lambda a, r: a * 0.5 + r, x), lambda x: _scan(lambda a, r: a * .5 + r, x)),
    ("scan-init", lambda x: tf.scan(lambda a, r: a + tf.reduce_sum(r), x, initializer=1.0),
     lambda x: _scan(lambda a, r: a + r.sum(), x, np.float32(1))),
    ("scan-reverse", lambda x: tf.scan(lambda a, r: a * r, x, reverse=True),
     lambda x: _scan(lambda a, r: a * r, x, reverse=True)),
    ("scan-reverse-init", lambda x: tf.scan(lambda a, r: a - r, x, initializer=tf.ones([3]),
                                            reverse=True),
     lambda x: _scan(lambda a, r: a - r, x, np.ones(3, np.float32), reverse=True)),
    ("scan-nested", lambda x: tf.scan(lambda a, r: (a[0] + r[0], a[1] * r[1]), (x, x)),
     lambda x: (_scan(lambda a, r: a + r, x), _scan(lambda a, r: a * r, x))),
    ("scan-nested-init", lambda x: tf.scan(lambda a, r: (a[0] + tf.reduce_sum(r), a[1] + r), x,
                                           initializer=(0.0, tf.zeros([3])))[0],
     lambda x: np.cumsum(x.sum(1))),
    ("foldl", lambda x: tf.foldl(lambda a, r: a * 2.0 + r, x),
     lambda x: x[0] * 8 + x[1] * 4 + x[2] * 2 + x[3]),
    ("foldr", lambda x: tf.foldr(lambda a, r: a * 2.0 + r, x),
     lambda x: x[3] * 8 + x[2] * 4 + x[1] * 2 + x[0]),
    ("foldl-init", lambda x: tf.foldl(lambda a, r: a - tf.reduce_max(r), x, initializer=10.0),
     lambda x: np.float32(10 - x.max(1).sum())),
    ("foldr-init-nested", lambda x: tf.foldr(lambda a, e: (a[0] + e[0], a[1] * e[1]), (x, x + 2.0),
                                             initializer=(tf.zeros([3]), tf.ones([3]))),
     lambda x: (x.sum(0), np.prod(x + 2, 0))),
]  # fmt: skip


@pytest.mark.parametrize("build,ref", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_values_agree_with_numpy(build, ref):
    with tf.Graph().as_default(), tf.Session() as s:
        x = tf.placeholder(tf.float32, [None, 3])
        got = s.run(build(x), {x: X})
    want = ref(X)
    got_flat, want_flat = tf.nest.flatten(got), tf.nest.flatten(want)
    tf.nest.assert_same_structure(got, want)
    for g, w in zip(got_flat, want_flat):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_allclose(g, w, rtol=1e-6)


def test_static_shapes():
    with tf.Graph().as_default():
        x = tf.zeros([4, 3])
        assert tf.map_fn(lambda r: r[:2], x).shape.as_list() == [4, 2]
        assert tf.scan(lambda a, r: a + r, x).shape.as_list() == [4, 3]
        assert tf.foldl(lambda a, r: a + r, x).shape.as_list() == [3]
        y = tf.placeholder(tf.float32, [None, 3])
        assert tf.map_fn(lambda r: r, y).shape.as_list() == [None, 3]


def test_errors():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="elems must be a 1\\+ dimensional Tensor"):
            tf.map_fn(lambda v: v, tf.constant(1.0))
        with pytest.raises(ValueError, match="fn must return the structure of dtype"):
            tf.map_fn(lambda r: r, tf.zeros([2]), dtype=(tf.float32, tf.float32))
        with pytest.raises(ValueError, match="differ in their first dimension"):
            tf.map_fn(lambda ab: ab[0], (tf.zeros([2]), tf.zeros([3])))
        with pytest.raises(ValueError, match=r"Inconsistent shapes: saw \[6\] but expected \[3\]"):
            tf.scan(lambda a, r: tf.concat([a, r], 0), tf.zeros([2, 3]))


def test_no_elements_with_an_initializer_gives_an_empty_scan_and_the_initializer():
    with tf.Graph().as_default(), tf.Session() as s:
        x = tf.placeholder(tf.float32, [None, 3])
        out = tf.scan(lambda a, r: a + r, x, initializer=tf.zeros([3]))
        fold = tf.foldl(lambda a, r: a + r, x, initializer=tf.ones([3]))
        got, f = s.run([out, fold], {x: np.zeros((0, 3), np.float32)})
    assert got.shape == (0, 3) and f.tolist() == [1.0, 1.0, 1.0]


# --------------------------------------------------------------- gradients
def _numeric_grad(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[idx] = eps
        g[idx] = (f(x + d) - f(x - d)) / (2 * eps)
    return g


# (id, build(x, w) -> a scalar), x [4, 3] and w [3] float64
GRADS = {
    "map": lambda x, w: tf.reduce_sum(tf.map_fn(lambda r: tf.sin(r * w), x) ** 2),
    "map-nested": lambda x, w: tf.reduce_sum(
        tf.map_fn(lambda ab: ab[0] * ab[1] * w, (x, tf.exp(x)), dtype=tf.float64)
    ),
    "scan": lambda x, w: tf.reduce_sum(tf.scan(lambda a, r: tf.tanh(a * w + r), x) ** 2),
    "scan-reverse-init": lambda x, w: tf.reduce_sum(
        tf.scan(lambda a, r: a * r + w, x, initializer=w * w, reverse=True)
    ),
    "foldl": lambda x, w: tf.reduce_sum(tf.foldl(lambda a, r: a * w + r * r, x)),
    "nested": lambda x, w: tf.reduce_sum(
        tf.map_fn(lambda r: tf.foldl(lambda b, v: b * 0.5 + tf.sin(v), r * w), x)
        + tf.scan(
            lambda a, r: a + tf.reduce_sum(tf.map_fn(lambda v: v * v, r)),
            x[:, :2],
            initializer=tf.constant(0.0, tf.float64),
        )
    ),
    "foldr-init": lambda x, w: tf.reduce_sum(
        tf.foldr(lambda a, r: tf.sin(a) + r * w, x, initializer=tf.cos(w))
    ),
}


@pytest.mark.parametrize("name", sorted(GRADS))
def test_gradients_equal_finite_differences(name):
    rng = np.random.default_rng(7)
    xv, wv = rng.normal(size=(4, 3)), rng.uniform(0.2, 0.8, size=3)
    with tf.Graph().as_default(), tf.Session() as s:
        x, w = tf.placeholder(tf.float64, [4, 3]), tf.placeholder(tf.float64, [3])
        y = GRADS[name](x, w)
        gx, gw = s.run(tf.gradients(y, [x, w]), {x: xv, w: wv})
        np.testing.assert_allclose(
            gx, _numeric_grad(lambda v: s.run(y, {x: v, w: wv}), xv), rtol=1e-6, atol=1e-9
        )
        np.testing.assert_allclose(
            gw, _numeric_grad(lambda v: s.run(y, {x: xv, w: v}), wv), rtol=1e-6, atol=1e-9
        )


def test_scan_gradient_equals_the_unrolled_graph():
    with tf.Graph().as_default(), tf.Session() as s:
        x = tf.constant(np.linspace(-1, 1, 12).reshape(4, 3))
        w = tf.constant(np.linspace(0.1, 0.6, 9).reshape(3, 3))
        ys = tf.scan(lambda a, r: tf.tanh(tf.matmul(a[None], w)[0] + r), x)
        a, unrolled = x[0], [x[0]]
        for t in range(1, 4):
            a = tf.tanh(tf.matmul(a[None], w)[0] + x[t])
            unrolled.append(a)
        loss, loss_u = tf.reduce_sum(ys**3), tf.reduce_sum(tf.stack(unrolled) ** 3)
        got, want = s.run([tf.gradients(loss, [x, w]), tf.gradients(loss_u, [x, w])])
    for g, v in zip(got, want):
        np.testing.assert_allclose(g, v, rtol=1e-12)


# ----------------------------------------------------- TensorFlow's numbers
def _fixture():
    sys.path.insert(0, FIXTURES)
    try:
        import make_tf_functional_fixtures as fixture
    finally:
        sys.path.remove(FIXTURES)
    return fixture, np.load(os.path.join(FIXTURES, "tf_functional.npz"))


def test_values_and_gradients_equal_tensorflows():
    fixture, want = _fixture()
    with tf.Graph().as_default(), tf.Session() as s:
        x, w = tf.placeholder(tf.float32, [4, 3]), tf.placeholder(tf.float32, [3])
        outs = fixture.build(tf, x, w)
        feed = {x: want["x"], w: want["w"]}
        for name in fixture.OUTPUTS:
            grads = tf.gradients(tf.reduce_sum(tf.square(outs[name])), [x, w])
            got = s.run([outs[name], *[g for g in grads if g is not None]], feed)
            keys = [name] + [f"grad_{name}_{v}" for v, g in zip("xw", grads) if g is not None]
            assert set(keys[1:]) == {f"grad_{name}_{v}" for v in "xw"} & set(want.files)
            for key, value in zip(keys, got):
                np.testing.assert_allclose(value, want[key], rtol=2e-5, atol=1e-6, err_msg=key)


def test_tensorflows_graph_imports_and_computes_its_values():
    pytest.importorskip("tensorboard")
    from flowbook.graph_io import graph_def as gdef

    fixture, want = _fixture()
    with open(os.path.join(FIXTURES, "tf_functional.pb"), "rb") as f:
        data = f.read()
    with tf.Graph().as_default() as g, tf.Session() as s:
        gdef.import_graph_def(data, name="")
        assert {op.type for op in g.get_operations()} >= {
            "TensorArrayV3",
            "TensorArrayScatterV3",
            "TensorArrayReadV3",
            "TensorArrayWriteV3",
            "TensorArrayGatherV3",
            "TensorArrayConcatV3",
            "Enter",
            "Exit",
        }
        names = [f"out_{k}:0" for k in fixture.OUTPUTS]
        got = s.run(names, {"x:0": want["x"], "w:0": want["w"]})
    for name, value in zip(fixture.OUTPUTS, got):
        np.testing.assert_allclose(value, want[name], rtol=1e-5, atol=1e-6, err_msg=name)


# ------------------------------------------------------------ random scans
STEPS = {
    "add": lambda a, r: a + r,
    "mul": lambda a, r: a * r,
    "max": np.maximum,
    "mix": lambda a, r: a * 0.5 - r,
}
TF_STEPS = {
    "add": lambda a, r: a + r,
    "mul": lambda a, r: a * r,
    "max": tf.maximum,
    "mix": lambda a, r: a * 0.5 - r,
}


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(1, 6),
    width=st.integers(1, 3),
    step=st.sampled_from(sorted(STEPS)),
    reverse=st.booleans(),
    init=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_random_scans_agree_with_numpy(n, width, step, reverse, init, seed):
    xs = np.random.default_rng(seed).normal(size=(n, width))
    a0 = np.full(width, 0.25) if init else None
    with tf.Graph().as_default(), tf.Session() as s:
        x = tf.placeholder(tf.float64, [None, width])
        out = tf.scan(
            TF_STEPS[step], x, initializer=None if a0 is None else tf.constant(a0), reverse=reverse
        )
        got = s.run(out, {x: xs})
    np.testing.assert_allclose(got, _scan(STEPS[step], xs, a0, reverse), rtol=1e-12)
