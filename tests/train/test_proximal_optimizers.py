"""Adadelta, Ftrl and the proximal optimizers against numpy re-implementations of TF's
kernel formulas (training_ops), step by step, in float32."""

from __future__ import annotations

import numpy as np
import pytest

import flowbook as fb
from flowbook import train

F = np.float32


def shrink(x, t):
    return np.sign(x) * np.maximum(np.abs(x) - t, F(0))


class RefAdadelta:
    def __init__(self, lr=0.001, rho=0.95, eps=1e-8):
        self.lr, self.rho, self.eps = F(lr), F(rho), F(eps)
        self.a = self.u = None

    def step(self, w, g):
        if self.a is None:
            self.a, self.u = np.zeros_like(w), np.zeros_like(w)
        self.a = self.a * self.rho + g * g * (1 - self.rho)
        upd = np.sqrt(self.u + self.eps) / np.sqrt(self.a + self.eps) * g
        self.u = self.u * self.rho + upd * upd * (1 - self.rho)
        return w - upd * self.lr


class RefFtrl:
    def __init__(self, lr, power=-0.5, init=0.1, l1=0.0, l2=0.0, shrinkage=0.0, beta=0.0):
        self.lr, self.p, self.init = F(lr), F(-power), F(init)
        self.l1, self.l2, self.sh = F(l1), F(l2 + beta / (2 * lr)), F(shrinkage)
        self.acc = self.lin = None

    def step(self, w, g):
        if self.acc is None:
            self.acc, self.lin = np.full_like(w, self.init), np.zeros_like(w)
        new = self.acc + g * g
        gs = g + 2 * self.sh * w
        self.lin = self.lin + gs - (new**self.p - self.acc**self.p) / self.lr * w
        quad = new**self.p / self.lr + 2 * self.l2
        w = np.where(np.abs(self.lin) > self.l1, (np.sign(self.lin) * self.l1 - self.lin) / quad, 0)
        self.acc = new
        return w.astype(F)


class RefProxGD:
    def __init__(self, lr, l1=0.0, l2=0.0):
        self.lr, self.l1, self.l2 = F(lr), F(l1), F(l2)

    def step(self, w, g):
        return shrink(w - g * self.lr, self.lr * self.l1) / (1 + self.lr * self.l2)


class RefProxAdagrad:
    def __init__(self, lr, init=0.1, l1=0.0, l2=0.0):
        self.lr, self.init, self.l1, self.l2 = F(lr), F(init), F(l1), F(l2)
        self.acc = None

    def step(self, w, g):
        if self.acc is None:
            self.acc = np.full_like(w, self.init)
        self.acc = self.acc + g * g
        a = self.lr / np.sqrt(self.acc)
        return shrink(w - g * a, a * self.l1) / (1 + a * self.l2)


class RefAdagradDA:
    """The global step is incremented after each update (minimize with global_step)."""

    def __init__(self, lr, init=0.1, l1=0.0, l2=0.0):
        self.lr, self.init, self.l1, self.l2 = F(lr), F(init), F(l1), F(l2)
        self.ga = self.gg = None
        self.t = 0

    def step(self, w, g):
        if self.ga is None:
            self.ga, self.gg = np.zeros_like(w), np.full_like(w, self.init)
        self.ga, self.gg = self.ga + g, self.gg + g * g
        t = F(self.t + 1)
        self.t += 1
        return -self.lr * shrink(self.ga, self.l1 * t) / (self.l2 * t * self.lr + np.sqrt(self.gg))


CASES = {
    "adadelta": (lambda s: train.AdadeltaOptimizer(1.0), lambda: RefAdadelta(1.0)),
    "adadelta_rho": (
        lambda s: train.AdadeltaOptimizer(0.5, rho=0.8, epsilon=1e-3),
        lambda: RefAdadelta(0.5, 0.8, 1e-3),
    ),
    "ftrl": (lambda s: train.FtrlOptimizer(0.3), lambda: RefFtrl(0.3)),
    "ftrl_l1_l2": (
        lambda s: train.FtrlOptimizer(
            0.3, l1_regularization_strength=0.05, l2_regularization_strength=0.2
        ),
        lambda: RefFtrl(0.3, l1=0.05, l2=0.2),
    ),
    "ftrl_power_shrinkage": (
        lambda s: train.FtrlOptimizer(
            0.2,
            learning_rate_power=-0.3,
            initial_accumulator_value=0.5,
            l1_regularization_strength=0.01,
            l2_shrinkage_regularization_strength=0.1,
        ),
        lambda: RefFtrl(0.2, power=-0.3, init=0.5, l1=0.01, shrinkage=0.1),
    ),
    "ftrl_beta": (
        lambda s: train.FtrlOptimizer(0.3, beta=0.4),
        lambda: RefFtrl(0.3, beta=0.4),
    ),
    "proximal_gd": (
        lambda s: train.ProximalGradientDescentOptimizer(0.1),
        lambda: RefProxGD(0.1),
    ),
    "proximal_gd_l1_l2": (
        lambda s: train.ProximalGradientDescentOptimizer(0.1, 0.3, 0.5),
        lambda: RefProxGD(0.1, 0.3, 0.5),
    ),
    "proximal_adagrad": (
        lambda s: train.ProximalAdagradOptimizer(0.2),
        lambda: RefProxAdagrad(0.2),
    ),
    "proximal_adagrad_l1_l2": (
        lambda s: train.ProximalAdagradOptimizer(0.2, 0.3, 0.1, 0.4),
        lambda: RefProxAdagrad(0.2, 0.3, 0.1, 0.4),
    ),
    "adagrad_da": (lambda s: train.AdagradDAOptimizer(0.3, s), lambda: RefAdagradDA(0.3)),
    "adagrad_da_l1_l2": (
        lambda s: train.AdagradDAOptimizer(0.3, s, 0.2, 0.05, 0.1),
        lambda: RefAdagradDA(0.3, 0.2, 0.05, 0.1),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_steps_match_tf_formulas(name):
    make_opt, make_ref = CASES[name]
    rng = np.random.default_rng(0)
    w0 = rng.normal(size=(3, 2)).astype(F)
    grads = [rng.normal(size=(3, 2)).astype(F) for _ in range(5)]
    with fb.Graph().as_default():
        w = fb.Variable(w0, name="w")
        g = fb.placeholder(fb.float32, [3, 2])
        step = train.get_or_create_global_step()
        op = make_opt(step).apply_gradients([(g, w)], global_step=step)
        ref, expect = make_ref(), w0
        with fb.Session() as s:
            s.run(fb.global_variables_initializer())
            for gv in grads:
                s.run(op, {g: gv})
                expect = ref.step(expect, gv)
                np.testing.assert_allclose(s.run(w), expect, rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize(
    "make_opt, slots",
    [
        (
            lambda s: train.AdadeltaOptimizer(),
            {"accum": ("w/Adadelta", 0.0), "accum_update": ("w/Adadelta_1", 0.0)},
        ),
        (
            lambda s: train.FtrlOptimizer(0.1),
            {"accum": ("w/Ftrl", 0.1), "linear": ("w/Ftrl_1", 0.0)},
        ),
        (
            lambda s: train.FtrlOptimizer(0.1, initial_accumulator_value=0.0, accum_name="a"),
            {"accum": ("w/a", 0.0), "linear": ("w/Ftrl", 0.0)},
        ),
        (lambda s: train.ProximalGradientDescentOptimizer(0.1), {}),
        (
            lambda s: train.ProximalAdagradOptimizer(0.1, 0.25),
            {"accumulator": ("w/ProximalAdagrad", 0.25)},
        ),
        (
            lambda s: train.AdagradDAOptimizer(0.1, s),
            {
                "gradient_accumulator": ("w/AdagradDA", 0.0),
                "gradient_squared_accumulator": ("w/AdagradDA_1", 0.1),
            },
        ),
    ],
)
def test_slots_named_like_tf(make_opt, slots):
    with fb.Graph().as_default():
        w = fb.Variable([1.0, 2.0], name="w")
        step = train.get_or_create_global_step()
        opt = make_opt(step)
        opt.minimize(fb.reduce_sum(w * w))
        assert opt.get_slot_names() == sorted(slots)
        with fb.Session() as s:
            s.run(fb.global_variables_initializer())
            for slot, (var_name, fill) in slots.items():
                v = opt.get_slot(w, slot)
                assert v.op.name == var_name
                assert v not in fb.trainable_variables()
                np.testing.assert_allclose(s.run(v), [fill, fill])


def test_l1_makes_weights_exactly_zero():
    with fb.Graph().as_default():
        w = fb.Variable([0.5, -0.02, 0.01], name="w")
        op = train.ProximalGradientDescentOptimizer(0.1, l1_regularization_strength=0.5).minimize(
            fb.constant(0.0) * fb.reduce_sum(w)
        )
        with fb.Session() as s:
            s.run(w.initializer)
            s.run(op)
            np.testing.assert_allclose(s.run(w), [0.45, 0.0, 0.0], atol=1e-7)


def test_ftrl_learns_a_linear_model():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(64, 3)).astype(F)
    y = x @ np.array([[1.0], [-2.0], [0.0]], F)
    with fb.Graph().as_default():
        w = fb.Variable(np.zeros((3, 1), F), name="w")
        loss = fb.reduce_mean(fb.square(fb.matmul(x, w) - y))
        op = train.FtrlOptimizer(1.0).minimize(loss)
        with fb.Session() as s:
            s.run(fb.global_variables_initializer())
            first = s.run(loss)
            for _ in range(100):
                s.run(op)
            assert s.run(loss) < 0.05 * first


@pytest.mark.parametrize(
    "make",
    [
        lambda: train.FtrlOptimizer(0.1, learning_rate_power=0.5),
        lambda: train.FtrlOptimizer(0.1, initial_accumulator_value=-1.0),
        lambda: train.FtrlOptimizer(0.1, l1_regularization_strength=-1.0),
        lambda: train.FtrlOptimizer(0.1, l2_shrinkage_regularization_strength=-1.0),
        lambda: train.ProximalAdagradOptimizer(0.1, initial_accumulator_value=0.0),
        lambda: train.AdagradDAOptimizer(0.1, 0, initial_gradient_squared_accumulator_value=0.0),
    ],
)
def test_bad_hyper_parameters(make):
    with pytest.raises(ValueError):
        make()
