"""fb.train optimizers against numpy re-implementations of TensorFlow's kernels, step by step."""

from __future__ import annotations

import numpy as np
import pytest

import flowbook as fb
from flowbook import train

F = np.float32


# ------------------------------------------------------- numpy references
# Each reference holds its state and applies one step in float32, in the order
# TF's kernels compute (training_ops.cc), so results agree to round-off.
class RefGD:
    def __init__(self, lr: float) -> None:
        self.lr = F(lr)

    def step(self, w: np.ndarray, g: np.ndarray) -> np.ndarray:
        return w - g * self.lr


class RefMomentum:
    def __init__(self, lr: float, momentum: float, use_nesterov: bool = False) -> None:
        self.lr, self.mom, self.nesterov = F(lr), F(momentum), use_nesterov
        self.accum: np.ndarray | None = None

    def step(self, w: np.ndarray, g: np.ndarray) -> np.ndarray:
        if self.accum is None:
            self.accum = np.zeros_like(w)
        self.accum = self.accum * self.mom + g
        if self.nesterov:
            return w - (g * self.lr + self.accum * self.mom * self.lr)
        return w - self.accum * self.lr


class RefAdam:
    def __init__(self, lr=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8) -> None:
        self.lr, self.b1, self.b2, self.eps = F(lr), F(beta1), F(beta2), F(epsilon)
        self.b1p, self.b2p = F(beta1), F(beta2)
        self.m: np.ndarray | None = None
        self.v: np.ndarray | None = None

    def step(self, w: np.ndarray, g: np.ndarray) -> np.ndarray:
        if self.m is None:
            self.m, self.v = np.zeros_like(w), np.zeros_like(w)
        alpha = self.lr * np.sqrt(F(1) - self.b2p) / (F(1) - self.b1p)
        self.m = self.m + (g - self.m) * (F(1) - self.b1)
        self.v = self.v + (g * g - self.v) * (F(1) - self.b2)
        w = w - (self.m * alpha) / (np.sqrt(self.v) + self.eps)
        self.b1p, self.b2p = self.b1p * self.b1, self.b2p * self.b2
        return w


class RefAdagrad:
    def __init__(self, lr: float, initial_accumulator_value: float = 0.1) -> None:
        self.lr, self.init = F(lr), F(initial_accumulator_value)
        self.accum: np.ndarray | None = None

    def step(self, w: np.ndarray, g: np.ndarray) -> np.ndarray:
        if self.accum is None:
            self.accum = np.full_like(w, self.init)
        self.accum = self.accum + g * g
        return w - g * self.lr * (F(1) / np.sqrt(self.accum))


class RefRMSProp:
    def __init__(self, lr, decay=0.9, momentum=0.0, epsilon=1e-10, centered=False) -> None:
        self.lr, self.rho, self.momentum, self.eps = F(lr), F(decay), F(momentum), F(epsilon)
        self.centered = centered
        self.ms = self.mg = self.mom = None

    def step(self, w: np.ndarray, g: np.ndarray) -> np.ndarray:
        if self.ms is None:
            self.ms, self.mg, self.mom = np.ones_like(w), np.zeros_like(w), np.zeros_like(w)
        self.ms = self.ms + (g * g - self.ms) * (F(1) - self.rho)
        if self.centered:
            self.mg = self.mg + (g - self.mg) * (F(1) - self.rho)
            denom = (self.ms - self.mg * self.mg) + self.eps
        else:
            denom = self.ms + self.eps
        self.mom = self.mom * self.momentum + (g * self.lr) / np.sqrt(denom)
        return w - self.mom


# (id, flowbook optimizer factory, reference factory)
CASES = [
    ("sgd", lambda: train.GradientDescentOptimizer(0.1), lambda: RefGD(0.1)),
    ("momentum", lambda: train.MomentumOptimizer(0.05, 0.9), lambda: RefMomentum(0.05, 0.9)),
    (
        "nesterov",
        lambda: train.MomentumOptimizer(0.05, 0.9, use_nesterov=True),
        lambda: RefMomentum(0.05, 0.9, use_nesterov=True),
    ),
    ("adam", lambda: train.AdamOptimizer(0.1), lambda: RefAdam(0.1)),
    (
        "adam-custom",
        lambda: train.AdamOptimizer(0.02, beta1=0.8, beta2=0.99, epsilon=1e-3),
        lambda: RefAdam(0.02, 0.8, 0.99, 1e-3),
    ),
    ("adagrad", lambda: train.AdagradOptimizer(0.3), lambda: RefAdagrad(0.3)),
    (
        "adagrad-init",
        lambda: train.AdagradOptimizer(0.3, initial_accumulator_value=2.5),
        lambda: RefAdagrad(0.3, 2.5),
    ),
    ("rmsprop", lambda: train.RMSPropOptimizer(0.01), lambda: RefRMSProp(0.01)),
    (
        "rmsprop-momentum",
        lambda: train.RMSPropOptimizer(0.01, decay=0.8, momentum=0.5, epsilon=1e-6),
        lambda: RefRMSProp(0.01, 0.8, 0.5, 1e-6),
    ),
    (
        "rmsprop-centered",
        lambda: train.RMSPropOptimizer(0.01, momentum=0.3, centered=True),
        lambda: RefRMSProp(0.01, momentum=0.3, centered=True),
    ),
]
IDS = [c[0] for c in CASES]
STEPS = 6


@pytest.mark.parametrize(("name", "make_opt", "make_ref"), CASES, ids=IDS)
def test_apply_gradients_matches_tf_formulas(name, make_opt, make_ref):
    """Fed gradients: every step's variable values equal the numpy reference."""
    rng = np.random.RandomState(0)
    w0 = rng.randn(3, 2).astype(F)
    b0 = rng.randn(2).astype(F)
    w = fb.Variable(w0, name="W")
    b = fb.Variable(b0, name="b")
    gw = fb.placeholder(fb.float32, [3, 2])
    gb = fb.placeholder(fb.float32, [2])
    op = make_opt().apply_gradients([(gw, w), (gb, b)])
    ref_w, ref_b = make_ref(), make_ref()
    want_w, want_b = w0, b0
    with fb.Session() as sess:
        sess.run(fb.global_variables_initializer())
        for _ in range(STEPS):
            g1, g2 = rng.randn(3, 2).astype(F), rng.randn(2).astype(F)
            sess.run(op, {gw: g1, gb: g2})
            want_w, want_b = ref_w.step(want_w, g1), ref_b.step(want_b, g2)
            got_w, got_b = sess.run([w, b])
            np.testing.assert_allclose(got_w, want_w, rtol=1e-6, atol=1e-7)
            np.testing.assert_allclose(got_b, want_b, rtol=1e-6, atol=1e-7)
            assert got_w.dtype == np.float32


@pytest.mark.parametrize(("name", "make_opt", "make_ref"), CASES, ids=IDS)
def test_minimize_quadratic_matches_tf_formulas(name, make_opt, make_ref):
    """minimize(sum((w - t)**2)): gradient 2 (w - t), then the optimizer's step."""
    target = np.array([1.0, -2.0, 0.5, 3.0], F)
    w0 = np.array([0.0, 0.5, -1.0, 2.0], F)
    w = fb.Variable(w0, name="w")
    loss = fb.reduce_sum(fb.square(w - target))
    op = make_opt().minimize(loss)
    ref, want = make_ref(), w0
    with fb.Session() as sess:
        sess.run(fb.global_variables_initializer())
        for _ in range(STEPS):
            grad = F(2) * (want - target)
            sess.run(op)
            want = ref.step(want, grad)
            np.testing.assert_allclose(sess.run(w), want, rtol=1e-5, atol=1e-6)


def test_minimize_linear_model_reduces_loss():
    rng = np.random.RandomState(1)
    xs = rng.randn(32, 3).astype(F)
    ys = xs @ np.array([[1.0], [-2.0], [0.5]], F) + F(0.3)
    x = fb.placeholder(fb.float32, [None, 3])
    y = fb.placeholder(fb.float32, [None, 1])
    w = fb.Variable(np.zeros((3, 1), F), name="w")
    b = fb.Variable(np.zeros(1, F), name="b")
    loss = fb.reduce_mean(fb.square(fb.matmul(x, w) + b - y))
    step = train.GradientDescentOptimizer(0.1).minimize(loss)
    with fb.Session() as sess:
        sess.run(fb.global_variables_initializer())
        first = sess.run(loss, {x: xs, y: ys})
        for _ in range(200):
            sess.run(step, {x: xs, y: ys})
        assert sess.run(loss, {x: xs, y: ys}) < 1e-3 * first
        np.testing.assert_allclose(sess.run(b), [0.3], atol=1e-2)


# ------------------------------------------------------------------ slots
def test_slot_variables_named_like_tf_and_initialised():
    w = fb.Variable(np.ones((2, 2), F), name="W")
    opt = train.AdamOptimizer(0.1)
    opt.apply_gradients([(fb.constant(np.ones((2, 2), F)), w)])
    m, v = opt.get_slot(w, "m"), opt.get_slot(w, "v")
    assert (m.op.name, v.op.name) == ("W/Adam", "W/Adam_1")
    assert opt.get_slot_names() == ["m", "v"]
    assert opt.get_slot(w, "nope") is None
    names = [x.op.name for x in opt.variables()]
    assert names == ["W/Adam", "W/Adam_1", "beta1_power", "beta2_power"]
    for var in opt.variables():
        assert not var.trainable
        assert var in fb.global_variables()
        assert var not in fb.trainable_variables()
    assert fb.trainable_variables() == [w]
    with fb.Session() as sess:
        sess.run(fb.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(m), np.zeros((2, 2)))
        np.testing.assert_array_equal(sess.run(v), np.zeros((2, 2)))
        b1p, b2p = [opt._get_non_slot_variable(n, w.graph) for n in ("beta1_power", "beta2_power")]
        assert sess.run([b1p, b2p]) == [F(0.9), F(0.999)]


@pytest.mark.parametrize(
    ("make_opt", "slots"),
    [
        (lambda: train.MomentumOptimizer(0.1, 0.9), {"momentum": ("W/Momentum", 0.0)}),
        (lambda: train.AdagradOptimizer(0.1, 0.7), {"accumulator": ("W/Adagrad", 0.7)}),
        (
            lambda: train.RMSPropOptimizer(0.1),
            {"rms": ("W/RMSProp", 1.0), "momentum": ("W/RMSProp_1", 0.0)},
        ),
        (
            lambda: train.RMSPropOptimizer(0.1, centered=True),
            {
                "rms": ("W/RMSProp", 1.0),
                "mg": ("W/RMSProp_1", 0.0),
                "momentum": ("W/RMSProp_2", 0.0),
            },
        ),
        (lambda: train.GradientDescentOptimizer(0.1), {}),
    ],
)
def test_slot_names_and_initial_values(make_opt, slots):
    w = fb.Variable(np.ones(3, F), name="W")
    opt = make_opt()
    opt.apply_gradients([(fb.constant(np.ones(3, F)), w)])
    assert opt.get_slot_names() == sorted(slots)
    with fb.Session() as sess:
        sess.run(fb.global_variables_initializer())
        for slot, (var_name, fill) in slots.items():
            s = opt.get_slot(w, slot)
            assert s.op.name == var_name
            assert s.dtype == fb.float32 and s.get_shape().as_list() == [3]
            np.testing.assert_array_equal(sess.run(s), np.full(3, fill, F))


def test_slots_created_outside_control_dependencies_and_name_scopes():
    w = fb.Variable(np.ones(2, F), name="W")
    with fb.name_scope("outer"), fb.control_dependencies([fb.no_op(name="gate")]):
        opt = train.MomentumOptimizer(0.1, 0.9)
        opt.apply_gradients([(fb.constant(np.ones(2, F)), w)])
    slot = opt.get_slot(w, "momentum")
    assert slot.op.name == "W/Momentum"
    assert slot.initializer.control_inputs == []
    assert slot.op.control_inputs == []


def test_float64_variables():
    w = fb.Variable(np.array([1.0, 2.0]), name="w")  # float64
    op = train.AdamOptimizer(0.1).apply_gradients([(fb.constant(np.array([0.5, -0.5])), w)])
    ref = RefAdam(0.1)
    ref.lr, ref.b1, ref.b2, ref.eps = (
        np.float32(x).astype(np.float64) for x in (0.1, 0.9, 0.999, 1e-8)
    )
    ref.b1p, ref.b2p = ref.b1, ref.b2
    with fb.Session() as sess:
        sess.run(fb.global_variables_initializer())
        sess.run(op)
        got = sess.run(w)
    assert got.dtype == np.float64
    np.testing.assert_allclose(
        got, ref.step(np.array([1.0, 2.0]), np.array([0.5, -0.5])), rtol=1e-12
    )


# ------------------------------------------------------------ global step
def test_global_step_created_once_and_incremented_after_updates():
    assert train.get_global_step() is None
    step = train.get_or_create_global_step()
    assert train.get_or_create_global_step() is step
    assert train.get_global_step() is step
    assert step.op.name == "global_step" and step.dtype == fb.int64 and not step.trainable
    assert step in fb.get_collection(fb.GraphKeys.GLOBAL_STEP)
    assert step in fb.global_variables()
    with pytest.raises(ValueError, match="already exists"):
        train.create_global_step()
    w = fb.Variable(1.0, name="w")
    op = train.GradientDescentOptimizer(0.5).apply_gradients([(fb.constant(1.0), w)], step)
    assert op in fb.get_collection(fb.GraphKeys.TRAIN_OP)
    with fb.Session() as sess:
        sess.run(fb.global_variables_initializer())
        assert sess.run(op) == 1  # as in TF: the train op's value is the new step
        sess.run(op)
        sess.run(op)
        assert train.global_step(sess, step) == 3
        assert sess.run(w) == pytest.approx(-0.5)


def test_minimize_with_global_step_variable():
    step = fb.Variable(0, trainable=False, name="step")
    w = fb.Variable(3.0, name="w")
    op = train.MomentumOptimizer(0.1, 0.5).minimize(fb.square(w), global_step=step)
    with fb.Session() as sess:
        sess.run(fb.global_variables_initializer())
        for _ in range(4):
            sess.run(op)
        assert sess.run(step) == 4


def test_get_global_step_finds_a_tensor_named_global_step():
    v = fb.Variable(0, name="global_step", trainable=False)
    assert train.get_global_step().name == "global_step:0"
    assert train.get_global_step() is v._variable


# ------------------------------------------------------- var_list, compute/apply
def test_minimize_var_list_updates_only_those_variables():
    a = fb.Variable(1.0, name="a")
    b = fb.Variable(1.0, name="b")
    loss = fb.square(a) + fb.square(b)
    op = train.GradientDescentOptimizer(0.25).minimize(loss, var_list=[a])
    with fb.Session() as sess:
        sess.run(fb.global_variables_initializer())
        sess.run(op)
        assert sess.run([a, b]) == [0.5, 1.0]


def test_compute_then_apply_gradients():
    a = fb.Variable(2.0, name="a")
    b = fb.Variable(5.0, name="b")
    c = fb.Variable(7.0, name="c", trainable=False)
    opt = train.GradientDescentOptimizer(0.1)
    grads_and_vars = opt.compute_gradients(fb.square(a) * 3.0 + c)
    assert [v for _, v in grads_and_vars] == [a, b]
    assert grads_and_vars[1][0] is None  # loss does not depend on b
    doubled = [(g * 2.0, v) for g, v in grads_and_vars if g is not None]
    op = opt.apply_gradients(doubled)
    with fb.Session() as sess:
        sess.run(fb.global_variables_initializer())
        assert sess.run(grads_and_vars[0][0]) == pytest.approx(12.0)
        sess.run(op)
        assert sess.run(a) == pytest.approx(2.0 - 0.1 * 24.0)


def test_gate_graph_and_grad_loss():
    w = fb.Variable(2.0, name="w")
    opt = train.GradientDescentOptimizer(1.0)
    gv = opt.compute_gradients(
        fb.square(w), gate_gradients=train.Optimizer.GATE_GRAPH, grad_loss=fb.constant(0.5)
    )
    with fb.Session() as sess:
        sess.run(w.initializer)
        assert sess.run(gv[0][0]) == pytest.approx(2.0)


def test_learning_rate_tensor_and_callable():
    lr = fb.placeholder(fb.float32, [])
    w = fb.Variable(1.0, name="w")
    op = train.GradientDescentOptimizer(lr).apply_gradients([(fb.constant(1.0), w)])
    v = fb.Variable(1.0, name="v")
    op2 = train.MomentumOptimizer(lambda: fb.constant(0.5), 0.0).apply_gradients(
        [(fb.constant(1.0), v)]
    )
    with fb.Session() as sess:
        sess.run(fb.global_variables_initializer())
        sess.run(op, {lr: 0.25})
        sess.run(op, {lr: 0.5})
        sess.run(op2)
        assert sess.run([w, v]) == [0.25, 0.5]


def test_exponential_decay_with_global_step():
    step = train.get_or_create_global_step()
    lr = train.exponential_decay(1.0, step, decay_steps=2, decay_rate=0.5)
    stair = train.exponential_decay(1.0, step, 2, 0.5, staircase=True)
    bump = fb.assign_add(step, 3)
    with fb.Session() as sess:
        sess.run(step.initializer)
        sess.run(bump)
        assert sess.run(lr) == pytest.approx(0.5**1.5)
        assert sess.run(stair) == pytest.approx(0.5)


# ------------------------------------------------------------------ errors
def test_no_variables_to_optimize():
    x = fb.constant(2.0)
    with pytest.raises(ValueError, match=r"No variables to optimize\."):
        train.GradientDescentOptimizer(0.1).minimize(x * x)


def test_no_gradients_names_the_variables():
    a = fb.Variable(1.0, name="alpha")
    fb.Variable(1.0, name="beta")
    with pytest.raises(ValueError, match="No gradients provided for any variable") as e:
        train.AdamOptimizer().minimize(fb.constant(3.0) * 2.0, var_list=[a])
    assert "alpha" in str(e.value)
    with pytest.raises(ValueError, match=r"No gradients provided for any variable.*beta"):
        train.AdamOptimizer().apply_gradients([(None, a), (None, fb.trainable_variables()[1])])
    with pytest.raises(ValueError, match=r"No variables provided\."):
        train.AdamOptimizer().apply_gradients([])


def test_bad_arguments():
    w = fb.Variable(1.0, name="w")
    opt = train.GradientDescentOptimizer(0.1)
    with pytest.raises(NotImplementedError, match="unsupported type"):
        opt.apply_gradients([(fb.constant(1.0), fb.constant(2.0))])
    with pytest.raises(NotImplementedError, match="unsupported type"):
        opt.minimize(fb.square(w), var_list=[fb.constant(1.0)])
    with pytest.raises(ValueError, match="gate_gradients"):
        opt.compute_gradients(fb.square(w), gate_gradients=7)
    with pytest.raises(ValueError, match="Invalid type"):
        opt.minimize(fb.constant(3))
    with pytest.raises(ValueError, match="initial_accumulator_value must be positive"):
        train.AdagradOptimizer(0.1, initial_accumulator_value=0.0)
    with pytest.raises(ValueError, match="Must specify the optimizer name"):
        train.Optimizer(False, "")
    with pytest.raises(TypeError, match="float64"):
        opt.apply_gradients([(fb.constant(1.0, dtype=fb.float64), w)])


def test_uninitialised_slot_is_reported():
    w = fb.Variable(1.0, name="w")
    op = train.AdamOptimizer().apply_gradients([(fb.constant(1.0), w)])
    with fb.Session() as sess:
        sess.run(w.initializer)
        with pytest.raises(fb.errors.FailedPreconditionError):
            sess.run(op)


# ---------------------------------------------------------- end to end
def test_digits_softmax_regression_learns():
    from flowbook.data import datasets
    from flowbook.nets.losses import losses

    digits = datasets.load_digits(seed=0)
    x = fb.placeholder(fb.float32, [None, 64])
    y = fb.placeholder(fb.int64, [None])
    w = fb.Variable(np.zeros((64, 10), F), name="W")
    b = fb.Variable(np.zeros(10, F), name="b")
    logits = fb.matmul(x, w) + b
    loss = losses.sparse_softmax_cross_entropy(y, logits)
    step = train.AdamOptimizer(0.05).minimize(loss, global_step=train.get_or_create_global_step())
    correct = fb.equal(fb.argmax(logits, 1), y)
    accuracy = fb.reduce_mean(fb.cast(correct, fb.float32))
    with fb.Session() as sess:
        sess.run(fb.global_variables_initializer())
        for _ in range(150):
            xb, yb = digits.train.next_batch(100)
            sess.run(step, {x: xb, y: yb})
        acc = sess.run(accuracy, {x: digits.test.images, y: digits.test.labels})
    assert acc > 0.9


# ------------------------------------- helpers training scripts use: data, app.run
def test_load_digits_splits():
    from flowbook.data import datasets

    d = datasets.load_digits(test_fraction=0.25, seed=0)
    assert d.train.num_examples + d.test.num_examples == 1797
    assert abs(d.test.num_examples - 1797 * 0.25) < 10
    assert d.train.images.dtype == np.float32 and d.train.images.shape[1] == 64
    assert d.train.images.min() >= 0.0 and d.train.images.max() == 1.0
    assert set(np.unique(d.test.labels)) == set(range(10))
    again = datasets.load_digits(seed=0)
    np.testing.assert_array_equal(again.test.labels, d.test.labels)
    hot = datasets.load_digits(one_hot=True)
    assert hot.train.labels.shape == (d.train.num_examples, 10)
    np.testing.assert_array_equal(hot.train.labels.argmax(1), d.train.labels)
    np.testing.assert_array_equal(datasets.one_hot([2, 0], 3), [[0, 0, 1], [1, 0, 0]])


def test_batches_next_batch_covers_each_epoch():
    from flowbook.data.datasets import Batches

    b = Batches(np.arange(10), np.arange(10) * 10, seed=3)
    seen = np.concatenate([b.next_batch(4)[0] for _ in range(5)])  # 20 = two epochs
    assert sorted(seen[:10]) == list(range(10)) and sorted(seen[10:]) == list(range(10))
    assert b.epochs_completed == 1  # the 20th example ended epoch 2 exactly; it rolls over next
    x, y = b.next_batch(3)
    np.testing.assert_array_equal(y, x * 10)
    assert b.epochs_completed == 2
    epoch = list(Batches(np.arange(7), np.arange(7), batch_size=3))
    assert [len(x) for x, _ in epoch] == [3, 3, 1]
    with pytest.raises(ValueError, match="batch_size"):
        b.next_batch(11)


def test_app_run_exits_in_scripts_and_returns_in_notebooks(monkeypatch):
    import sys
    import types

    from flowbook.platform import app

    seen = []
    with pytest.raises(SystemExit) as e:
        app.run(lambda argv: seen.append(argv) or 3, argv=["prog", "--x"])
    assert e.value.code == 3 and seen == [["prog", "--x"]]
    monkeypatch.setattr(sys, "argv", ["script.py", "a"])
    monkeypatch.setattr(sys.modules["__main__"], "main", lambda argv: len(argv), raising=False)
    with pytest.raises(SystemExit) as e:
        app.run()
    assert e.value.code == 2
    fake = types.ModuleType("IPython")
    fake.get_ipython = lambda: object()  # what a Jupyter kernel answers
    monkeypatch.setitem(sys.modules, "IPython", fake)
    assert app.run(lambda argv: "done") == "done"
