"""ExponentialMovingAverage against the numpy recurrence, its names, and restoring averages."""

from __future__ import annotations

import os

import numpy as np
import pytest

import flowbook as fb
from flowbook import train

F = np.float32
VALUES = [2.0, -1.0, 4.0, 0.5, 3.0]


@pytest.mark.parametrize(
    "decay, num_updates",
    [(0.9, None), (0.5, None), (0.99, 0), (0.99, 5), (0.3, 100)],
)
def test_average_follows_the_recurrence(decay, num_updates):
    with fb.Graph().as_default():
        w = fb.Variable(np.array([1.0, -2.0], F), name="w")
        ema = train.ExponentialMovingAverage(decay, num_updates=num_updates)
        op = ema.apply([w])
        x = fb.placeholder(fb.float32, [2])
        set_w = fb.assign(w, x)
        d = decay if num_updates is None else min(decay, (1 + num_updates) / (10 + num_updates))
        shadow = np.array([1.0, -2.0], F)
        with fb.Session() as s:
            s.run(fb.global_variables_initializer())
            np.testing.assert_allclose(s.run(ema.average(w)), shadow)  # starts at w's init
            for k, val in enumerate(VALUES):
                value = np.array([val, val * k], F)
                s.run(set_w, {x: value})
                s.run(op)
                shadow = shadow - (shadow - value) * F(1 - d)
                np.testing.assert_allclose(s.run(ema.average(w)), shadow, rtol=1e-5)


def test_zero_debiased_average_of_a_tensor():
    with fb.Graph().as_default():
        x = fb.placeholder(fb.float32, [], name="x")
        t = fb.identity(x, name="loss")
        ema = train.ExponentialMovingAverage(0.9, zero_debias=True)
        op = ema.apply([t])
        avg = ema.average(t)
        assert avg.op.name == "loss/ExponentialMovingAverage"
        assert avg not in fb.trainable_variables()
        biased = 0.0
        with fb.Session() as s:
            s.run(fb.global_variables_initializer())
            assert s.run(avg) == 0.0
            for k, val in enumerate(VALUES, start=1):
                s.run(op, {x: val})
                biased = biased - (biased - val) * 0.1
                assert s.run(avg) == pytest.approx(biased / (1 - 0.9**k), rel=1e-5)
            # the first debiased average equals the first value (a biased one would be 0.2)
    with fb.Graph().as_default():
        x = fb.placeholder(fb.float32, [])
        ema = train.ExponentialMovingAverage(0.9)
        t = x * 1.0
        op = ema.apply([t])
        with fb.Session() as s:
            s.run(fb.global_variables_initializer())
            s.run(op, {x: 2.0})
            assert s.run(ema.average(t)) == pytest.approx(0.2)  # no debiasing by default


def test_names_collections_and_apply_twice():
    with fb.Graph().as_default():
        with fb.name_scope("layer"):
            w = fb.Variable(1.0, name="w")
        b = fb.Variable(0.0, name="b")
        ema = train.ExponentialMovingAverage(0.9, name="EMA")
        ema.apply()  # default: trainable variables
        ema.apply([w])  # no second shadow
        assert ema.average_name(w) == "layer/w/EMA"
        assert ema.average(w).op.name == "layer/w/EMA"
        assert ema.average(b).op.name == "b/EMA"
        assert ema.name == "EMA"
        assert fb.get_collection(fb.GraphKeys.MOVING_AVERAGE_VARIABLES) == [w, b]
        assert sorted(v.op.name for v in fb.global_variables()) == [
            "b",
            "b/EMA",
            "layer/w",
            "layer/w/EMA",
        ]
        n = fb.Variable(1, name="n")
        with pytest.raises(TypeError):
            ema.apply([n])


def test_variables_to_restore_loads_averages_into_the_model(tmp_path):
    path = os.path.join(tmp_path, "model.ckpt")
    with fb.Graph().as_default():
        w = fb.Variable(0.0, name="w")
        step = train.get_or_create_global_step()
        ema = train.ExponentialMovingAverage(0.5)
        op = ema.apply([w])
        with fb.Session() as s:
            s.run(fb.global_variables_initializer())
            for val in (4.0, 8.0):
                s.run(fb.assign(w, val))
                s.run(op)
            assert s.run(ema.average(w)) == pytest.approx(5.0)  # 0 -> 2 -> 5
            train.Saver().save(s, path)
    with fb.Graph().as_default():
        w = fb.Variable(0.0, name="w")
        step = train.get_or_create_global_step()
        ema = train.ExponentialMovingAverage(0.5)
        names = ema.variables_to_restore()
        assert names == {"w/ExponentialMovingAverage": w, "global_step": step}
        with fb.Session() as s:
            train.Saver(names).restore(s, path)
            assert s.run(w) == pytest.approx(5.0)
