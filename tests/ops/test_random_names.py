"""tf.random's stateless functions against TensorFlow 2's values, and the other new names.

The reference values are tests/fixtures/tf_linalg_random/tf_values.npz (make_fixture.py
there writes them).
"""

from pathlib import Path

import numpy as np
import pytest

import flowbook as tf

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "tf_linalg_random" / "tf_values.npz"
r = tf.random


def _draws():
    return {
        "uniform": r.stateless_uniform([5], [1, 2]),
        "uniform64": r.stateless_uniform([3], [-5, 2**40], dtype=tf.float64),
        "uniform16": r.stateless_uniform([6], [9, 9], dtype=tf.float16),
        "normal": r.stateless_normal([3], [1, 2], dtype=tf.float64),
        "normal32": r.stateless_normal([7], [11, 12], mean=2.0, stddev=3.0),
        "truncated": r.stateless_truncated_normal([5], [3, 4]),
        "int32": r.stateless_uniform([6], [7, 0], 0, 10, tf.int32),
        "int64": r.stateless_uniform([5], [7, 1], -(2**40), 2**40, tf.int64),
        "full_int32": r.stateless_uniform([5], [4, 4], None, None, tf.int32),
        "split": r.split(tf.constant([1, 2], tf.int64), 3),
        "fold_in": r.fold_in(tf.constant([1, 2], tf.int64), tf.constant(5, tf.int64)),
        "split32": r.split([1, 2], 2),
    }


def test_values_match_tensorflow():
    ref = np.load(FIXTURE)
    with tf.Graph().as_default(), tf.Session() as s:
        got = s.run(_draws())
    for k, v in got.items():
        want = ref[f"random/{k}"]
        assert v.dtype == want.dtype, k
        if want.dtype.kind == "f":  # float32 normals: TF's logf may differ in the last bit
            np.testing.assert_allclose(v, want, rtol=1e-6, err_msg=k)
        else:
            np.testing.assert_array_equal(v, want, err_msg=k)


def test_a_seed_gives_the_same_values_every_run_and_session():
    def build():
        seed = tf.placeholder(tf.int32, [2])
        return (
            seed,
            r.stateless_normal([4], seed),
            r.stateless_categorical([[0.0, 1.0, 2.0]], 20, seed),
        )

    with tf.Graph().as_default():
        seed, normal, cat = build()
        with tf.Session() as s:
            a = s.run([normal, cat], {seed: [3, 4]})
            b = s.run([normal, cat], {seed: [3, 4]})
            c = s.run(normal, {seed: [3, 5]})
    with tf.Graph().as_default():
        seed, normal, cat = build()
        with tf.Session() as s:
            d = s.run([normal, cat], {seed: [3, 4]})
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    for x, y in zip(a, d):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(a[0], c)
    assert a[1].shape == (1, 20) and set(a[1].ravel()) <= {0, 1, 2}


def test_bad_seed_shape_and_integer_bounds():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="seed"):
            r.stateless_uniform([2], [1, 2, 3])
        with pytest.raises(ValueError, match="maxval"):
            r.stateless_uniform([2], [1, 2], minval=0, dtype=tf.int32)


def test_seed_helpers():
    with tf.Graph().as_default():
        assert r.get_seed(7) == (87654321, 7)
        ms = r.stateless_multinomial([[0.0, 0.0]], 3, [1, 1], output_dtype=tf.int32)
        assert ms.dtype == tf.int32
    assert r.create_rng_state(2**70 + 3, r.Algorithm.PHILOX).tolist() == [3, 64, 0]
    assert r.create_rng_state(5, "threefry").tolist() == [5, 0]
    assert r.experimental.stateless_split is r.split


def test_parameterized_truncated_normal_and_all_candidate_sampler():
    with tf.Graph().as_default(), tf.Session() as s:
        x = r.stateless_parameterized_truncated_normal([4000], [1, 2], 1.0, 2.0, 0.0, 3.0)
        again = r.stateless_parameterized_truncated_normal([4000], [1, 2], 1.0, 2.0, 0.0, 3.0)
        sampled, true_count, sampled_count = r.all_candidate_sampler([[1, 2]], 2, 4, True)
        xv, av, sv, tv, cv = s.run([x, again, sampled, true_count, sampled_count])
    np.testing.assert_array_equal(xv, av)
    assert xv.min() >= 0.0 and xv.max() <= 3.0
    assert abs(xv.mean() - 1.413) < 0.05  # the mean of N(1, 2) truncated to [0, 3]: 1.4133
    assert sv.tolist() == [0, 1, 2, 3] and sv.dtype == np.int64  # TF's values
    assert tv.tolist() == [[1.0, 1.0]] and tv.dtype == np.float32
    assert cv.tolist() == [1.0] * 4
