"""fb.train's learning-rate schedules against numpy versions of TF1's formulas, over steps."""

from __future__ import annotations

import math

import numpy as np
import pytest

import flowbook as fb
from flowbook import train

STEPS = [0, 1, 3, 7, 10, 11, 15, 20, 29, 30, 31, 45, 70, 100, 150]


def ref_cosine_restarts(step, first, t_mul=2.0, m_mul=1.0, alpha=0.0, lr=1.0):
    done = step / first
    if t_mul == 1.0:
        i = math.floor(done)
        done -= i
    else:
        i = math.floor(math.log(1 - done * (1 - t_mul)) / math.log(t_mul))
        done = (done - (1 - t_mul**i) / (1 - t_mul)) / t_mul**i
    cosine = 0.5 * m_mul**i * (1 + math.cos(math.pi * done))
    return lr * ((1 - alpha) * cosine + alpha)


def ref_linear_cosine(step, ds, periods=0.5, alpha=0.0, beta=0.001, lr=1.0, noise=0.0):
    s = min(step, ds)
    linear = (ds - s) / ds + noise
    cosine = 0.5 * (1 + math.cos(math.pi * 2 * periods * s / ds))
    return lr * ((alpha + linear) * cosine + beta)


def ref_polynomial(step, ds, end=0.0001, power=1.0, cycle=False, lr=0.5):
    if cycle:
        ds = ds * (math.ceil(step / ds) if step else 1)
    else:
        step = min(step, ds)
    return (lr - end) * (1 - step / ds) ** power + end


CASES = {
    "exponential": (
        lambda g: train.exponential_decay(0.5, g, 10, 0.9),
        lambda s: 0.5 * 0.9 ** (s / 10),
    ),
    "exponential_staircase": (
        lambda g: train.exponential_decay(0.5, g, 10, 0.9, staircase=True),
        lambda s: 0.5 * 0.9 ** (s // 10),
    ),
    "natural_exp": (
        lambda g: train.natural_exp_decay(0.5, g, 10, 0.3),
        lambda s: 0.5 * math.exp(-0.3 * s / 10),
    ),
    "natural_exp_staircase": (
        lambda g: train.natural_exp_decay(0.5, g, 10, 0.3, staircase=True),
        lambda s: 0.5 * math.exp(-0.3 * (s // 10)),
    ),
    "inverse_time": (
        lambda g: train.inverse_time_decay(0.5, g, 10, 0.3),
        lambda s: 0.5 / (1 + 0.3 * s / 10),
    ),
    "inverse_time_staircase": (
        lambda g: train.inverse_time_decay(0.5, g, 10, 0.3, staircase=True),
        lambda s: 0.5 / (1 + 0.3 * (s // 10)),
    ),
    "piecewise_constant": (
        lambda g: train.piecewise_constant(g, [10, 30, 100], [1.0, 0.5, 0.25, 0.125]),
        lambda s: 1.0 if s <= 10 else 0.5 if s <= 30 else 0.25 if s <= 100 else 0.125,
    ),
    "piecewise_constant_decay": (
        lambda g: train.piecewise_constant_decay(g, [20], [0.3, 0.1]),
        lambda s: 0.3 if s <= 20 else 0.1,
    ),
    "polynomial": (lambda g: train.polynomial_decay(0.5, g, 40), lambda s: ref_polynomial(s, 40)),
    "polynomial_power": (
        lambda g: train.polynomial_decay(0.5, g, 40, 0.01, power=2.0),
        lambda s: ref_polynomial(s, 40, 0.01, 2.0),
    ),
    "polynomial_cycle": (
        lambda g: train.polynomial_decay(0.5, g, 20, 0.01, power=0.5, cycle=True),
        lambda s: ref_polynomial(s, 20, 0.01, 0.5, cycle=True),
    ),
    "cosine": (
        lambda g: train.cosine_decay(0.5, g, 40),
        lambda s: 0.5 * 0.5 * (1 + math.cos(math.pi * min(s, 40) / 40)),
    ),
    "cosine_alpha": (
        lambda g: train.cosine_decay(0.5, g, 40, alpha=0.2),
        lambda s: 0.5 * (0.8 * 0.5 * (1 + math.cos(math.pi * min(s, 40) / 40)) + 0.2),
    ),
    "cosine_restarts": (
        lambda g: train.cosine_decay_restarts(1.0, g, 10),
        lambda s: ref_cosine_restarts(s, 10),
    ),
    "cosine_restarts_m_mul_alpha": (
        lambda g: train.cosine_decay_restarts(0.5, g, 10, t_mul=1.5, m_mul=0.8, alpha=0.1),
        lambda s: ref_cosine_restarts(s, 10, 1.5, 0.8, 0.1, lr=0.5),
    ),
    "cosine_restarts_equal_periods": (
        lambda g: train.cosine_decay_restarts(1.0, g, 10, t_mul=1.0, m_mul=0.5),
        lambda s: ref_cosine_restarts(s, 10, 1.0, 0.5),
    ),
    "linear_cosine": (
        lambda g: train.linear_cosine_decay(0.5, g, 40),
        lambda s: ref_linear_cosine(s, 40, lr=0.5),
    ),
    "linear_cosine_periods": (
        lambda g: train.linear_cosine_decay(0.5, g, 40, num_periods=2.0, alpha=0.1, beta=0.01),
        lambda s: ref_linear_cosine(s, 40, 2.0, 0.1, 0.01, lr=0.5),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_schedule_follows_tf_formula_over_steps(name):
    build, ref = CASES[name]
    with fb.Graph().as_default():
        step = train.get_or_create_global_step()
        lr = build(step)
        assert lr.shape.as_list() == []
        assert lr.dtype == fb.float32
        with fb.Session() as s:
            s.run(step.initializer)
            got = []
            for k in STEPS:
                s.run(fb.assign(step, k))
                got.append(float(s.run(lr)))
    np.testing.assert_allclose(got, [ref(k) for k in STEPS], rtol=2e-5, atol=1e-6)


def test_schedule_drives_an_optimizer():
    with fb.Graph().as_default():
        w = fb.Variable(0.0, name="w")
        step = train.get_or_create_global_step()
        lr = train.piecewise_constant(step, [1], [1.0, 0.1])
        op = train.GradientDescentOptimizer(lr).minimize(-w, global_step=step)
        with fb.Session() as s:
            s.run(fb.global_variables_initializer())
            for _ in range(4):
                s.run(op)
            # steps 0 and 1 at rate 1.0, steps 2 and 3 at 0.1
            assert s.run(w) == pytest.approx(2.2)


def test_float64_learning_rate_and_python_step():
    with fb.Graph().as_default(), fb.Session() as s:
        lr = train.cosine_decay(fb.constant(0.5, fb.float64), 10, 40)
        assert lr.dtype == fb.float64
        assert s.run(lr) == pytest.approx(0.25 * (1 + math.cos(math.pi / 4)), rel=1e-12)


def _noise_tensor(graph):
    (op,) = [op for op in graph.get_operations() if "RandomStandardNormal" in op.type]
    return op.outputs[0]


def test_noisy_linear_cosine_decay_adds_noise_of_the_tf_variance():
    steps = [0, 5, 20, 50]
    with fb.Graph().as_default() as graph:
        fb.set_random_seed(3)
        step = train.get_or_create_global_step()
        lr = train.noisy_linear_cosine_decay(0.5, step, 40, initial_variance=0.5, alpha=0.1)
        noise = _noise_tensor(graph)
        draws = []
        with fb.Session() as s:
            s.run(step.initializer)
            for k in steps:
                s.run(fb.assign(step, k))
                got, z = s.run([lr, noise])
                std = math.sqrt(0.5 / (1 + min(k, 40)) ** 0.55)
                expect = ref_linear_cosine(k, 40, alpha=0.1, lr=0.5, noise=std * float(z))
                assert got == pytest.approx(expect, rel=1e-5, abs=1e-6)
                draws.append(float(s.run(lr)))
    assert len(set(draws)) == len(draws)  # noise changes every run


def test_noisy_linear_cosine_decay_is_seeded_by_the_graph_seed():
    def draws(seed):
        with fb.Graph().as_default():
            fb.set_random_seed(seed)
            lr = train.noisy_linear_cosine_decay(0.5, 3, 40)
            with fb.Session() as s:
                return [float(s.run(lr)) for _ in range(3)]

    assert draws(7) == draws(7)
    assert draws(7) != draws(8)


@pytest.mark.parametrize(
    "call",
    [
        lambda: train.exponential_decay(0.1, None, 10, 0.5),
        lambda: train.polynomial_decay(0.1, None, 10),
        lambda: train.cosine_decay(0.1, None, 10),
        lambda: train.piecewise_constant(1, [1, 2], [0.1, 0.2]),
        lambda: train.piecewise_constant(1, [1], [0.1, 2]),
    ],
)
def test_bad_arguments(call):
    with fb.Graph().as_default(), pytest.raises(ValueError):
        call()
