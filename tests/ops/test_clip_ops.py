"""Clipping: values against numpy written from TF1's documented formulas, gradients by differences.

The references below follow TF's docs: ``t * clip_norm / max(l2norm, clip_norm)``,
``global_norm = sqrt(sum ||t||^2)``, ``t_i * clip_norm / max(global_norm, clip_norm)``.
"""

from __future__ import annotations

import numpy as np
import pytest

import flowbook as fb
from flowbook.autodiff.gradient_checker import compute_gradient_error

RNG = np.random.default_rng(5)


def run(t, feed=None):
    with fb.Session() as s:
        return s.run(t, feed)


def np_clip_by_norm(t, c, axes=None):
    norm = np.sqrt((t.astype(np.float64) ** 2).sum(axis=axes, keepdims=True))
    return t * c / np.maximum(norm, c)


@pytest.mark.parametrize(
    "lo,hi", [(-1.0, 1.0), (0.0, 0.5), (-5.0, 5.0), (np.full(4, -0.5), np.full(4, 0.2))]
)
def test_clip_by_value(lo, hi):
    t = RNG.uniform(-2, 2, (3, 4)).astype(np.float32)
    got = run(fb.clip_by_value(t, lo, hi))
    np.testing.assert_array_equal(got, np.clip(t, np.float32(lo), np.float32(hi)))


@pytest.mark.parametrize("c", [0.1, 1.0, 100.0])
@pytest.mark.parametrize("axes", [None, [0], [1], (0, 1)])
def test_clip_by_norm(c, axes):
    t = RNG.standard_normal((3, 4)).astype(np.float32)
    ax = tuple(axes) if axes is not None else None
    got = run(fb.clip_by_norm(t, c, axes=axes))
    np.testing.assert_allclose(got, np_clip_by_norm(t, c, ax), rtol=1e-5, atol=1e-7)


def test_clip_by_norm_of_zeros_has_finite_gradient():
    x = fb.constant(np.zeros((2, 3), np.float32))
    y = fb.clip_by_norm(x, 1.0)
    (g,) = fb.gradients(fb.reduce_sum(y), [x])
    got_y, got_g = run([y, g])
    assert not got_y.any() and np.isfinite(got_g).all()


def test_global_norm_and_clip_by_global_norm_with_none_entries():
    ts = [
        RNG.standard_normal((3, 4)).astype(np.float32),
        None,
        RNG.standard_normal(5).astype(np.float32),
    ]
    want_norm = np.sqrt(sum((t.astype(np.float64) ** 2).sum() for t in ts if t is not None))
    assert run(fb.global_norm(ts)) == pytest.approx(want_norm, rel=1e-6)
    for c in (0.5 * want_norm, 2 * want_norm):
        clipped, norm = fb.clip_by_global_norm(ts, c)
        assert clipped[1] is None and len(clipped) == 3
        got = run([clipped[0], clipped[2], norm])
        scale = c / max(want_norm, c)
        np.testing.assert_allclose(got[0], ts[0] * scale, rtol=1e-5)
        np.testing.assert_allclose(got[1], ts[2] * scale, rtol=1e-5)
        assert got[2] == pytest.approx(want_norm, rel=1e-6)


def test_clip_by_global_norm_use_norm_and_infinite_norm():
    ts = [np.array([3.0, 4.0], np.float32)]
    clipped, norm = fb.clip_by_global_norm(ts, 1.0, use_norm=10.0)
    assert run(clipped[0]).tolist() == pytest.approx([0.3, 0.4])
    assert run(norm) == 10.0
    bad, _ = fb.clip_by_global_norm([np.array([np.inf, 1.0], np.float32)], 1.0)
    assert np.isnan(run(bad[0])).all()  # TF: an inf or NaN norm makes every value NaN
    with pytest.raises(TypeError, match="sequence"):
        fb.clip_by_global_norm(fb.constant([1.0]), 1.0)
    assert run(fb.global_norm([None])) == 0.0


@pytest.mark.parametrize("c", [0.05, 1.0, 10.0])
def test_clip_by_average_norm(c):
    t = RNG.standard_normal((3, 4)).astype(np.float32)
    norm = np.sqrt((t.astype(np.float64) ** 2).sum())
    want = t * c / np.maximum(norm / t.size, c)
    np.testing.assert_allclose(run(fb.clip_by_average_norm(t, c)), want, rtol=1e-5)


def _clipped0(x):
    clipped, _ = fb.clip_by_global_norm([x, None, fb.constant(np.ones(2))], 1.5)
    return clipped[0]


GRADIENT_CASES = {
    "clip_by_value": (lambda x: fb.clip_by_value(x, -0.5, 0.7), (3, 4)),
    "clip_by_norm/clipped": (lambda x: fb.clip_by_norm(x, 0.5), (3, 4)),
    "clip_by_norm/axes": (lambda x: fb.clip_by_norm(x, 1.0, axes=[1]), (3, 4)),
    "global_norm": (lambda x: fb.global_norm([x, None, x * 2.0]), (3, 4)),
    "clip_by_global_norm": (_clipped0, (3, 4)),
    "clip_by_average_norm": (lambda x: fb.clip_by_average_norm(x, 0.1), (3, 4)),
}


@pytest.mark.parametrize("case", GRADIENT_CASES, ids=str)
def test_gradient_matches_finite_differences(case):
    fn, shape = GRADIENT_CASES[case]
    x0 = RNG.standard_normal(shape)
    x0 = np.where(np.abs(np.abs(x0) - 0.6) < 0.1, x0 * 1.5, x0)  # away from the clip kinks
    x = fb.placeholder(fb.float64, shape)
    y = fn(x)
    out = run(y, {x: x0}).shape
    err = compute_gradient_error(x, shape, y, out, x_init_value=x0)
    assert err < 1e-6, f"{case}: {err}"
