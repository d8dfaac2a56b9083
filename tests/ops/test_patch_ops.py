"""extract_image_patches against a per-pixel numpy loop, and its checks."""

from __future__ import annotations

import numpy as np
import pytest

import flowbook as tf


def _reference(x, k, s, r, padding):
    n, h, w, c = x.shape
    eh, ew = (k[1] - 1) * r[1] + 1, (k[2] - 1) * r[2] + 1
    if padding == "VALID":
        oh, ow, top, left = (h - eh) // s[1] + 1, (w - ew) // s[2] + 1, 0, 0
    else:
        oh, ow = -(-h // s[1]), -(-w // s[2])
        top = max((oh - 1) * s[1] + eh - h, 0) // 2
        left = max((ow - 1) * s[2] + ew - w, 0) // 2
    out = np.zeros((n, oh, ow, k[1] * k[2] * c), x.dtype)
    for a in range(oh):
        for b in range(ow):
            cells = []
            for i in range(k[1]):
                for j in range(k[2]):
                    y, z = a * s[1] + i * r[1] - top, b * s[2] + j * r[2] - left
                    inside = 0 <= y < h and 0 <= z < w
                    cells.append(x[:, y, z, :] if inside else np.zeros((n, c), x.dtype))
            out[:, a, b, :] = np.concatenate(cells, -1)
    return out


X = np.random.default_rng(1).standard_normal((2, 7, 6, 3)).astype(np.float32)
CASES = [
    ([1, 2, 3, 1], [1, 2, 1, 1], [1, 1, 2, 1], "VALID"),
    ([1, 3, 2, 1], [1, 2, 3, 1], [1, 2, 1, 1], "SAME"),
    ([1, 1, 1, 1], [1, 1, 1, 1], [1, 1, 1, 1], "SAME"),
    ([1, 7, 6, 1], [1, 1, 1, 1], [1, 1, 1, 1], "VALID"),
    ([1, 2, 2, 1], [1, 3, 3, 1], [1, 3, 2, 1], "SAME"),
]


@pytest.mark.parametrize("k,s,r,padding", CASES)
def test_patches_match_the_loop(k, s, r, padding):
    with tf.Graph().as_default(), tf.Session() as sess:
        p = tf.extract_image_patches(X, k, s, r, padding)
        got = sess.run(p)
        unknown = tf.placeholder(tf.float32, [None, None, None, 3])
        fed = sess.run(tf.extract_image_patches(unknown, k, s, r, padding), {unknown: X})
    want = _reference(X, k, s, r, padding)
    assert p.shape.as_list() == list(want.shape)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(fed, want)


def test_bad_attrs_fail_where_built():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="Negative dimension"):
            tf.extract_image_patches(X, [1, 4, 4, 1], [1, 1, 1, 1], [1, 3, 1, 1], "VALID")
        with pytest.raises(ValueError, match="ksizes"):
            tf.extract_image_patches(X, [2, 2, 2, 1], [1, 1, 1, 1], [1, 1, 1, 1], "VALID")
        with pytest.raises(ValueError, match="padding"):
            tf.extract_image_patches(X, [1, 2, 2, 1], [1, 1, 1, 1], [1, 1, 1, 1], "FULL")


def test_a_window_larger_than_the_fed_image_names_the_op():
    with tf.Graph().as_default(), tf.Session() as sess:
        p = tf.placeholder(tf.float32, [1, None, None, 1])
        out = tf.extract_image_patches(p, [1, 3, 3, 1], [1] * 4, [1] * 4, "VALID", name="pt")
        with pytest.raises(tf.errors.InvalidArgumentError, match="ExtractImagePatches 'pt'"):
            sess.run(out, {p: np.zeros((1, 2, 2, 1))})
