"""TF1's top-level identities, casts, repeat, against numpy."""

from __future__ import annotations

import numpy as np
import pytest

import flowbook as tf

X = np.arange(6.0, dtype=np.float32).reshape(2, 3)

REPEATS = [
    (X, 2, None),
    (X, [1, 0, 2], 1),
    (X, [3, 1], 0),
    (X, 2, -1),
    (np.array([5, 6, 7]), [0, 2, 1], None),
]


@pytest.mark.parametrize("x,repeats,axis", REPEATS)
def test_repeat_matches_numpy(x, repeats, axis):
    with tf.Graph().as_default(), tf.Session() as s:
        got = s.run(tf.repeat(x, repeats, axis=axis))
    np.testing.assert_array_equal(got, np.repeat(x, repeats, axis=axis))


BITCASTS = [
    (np.array([1.0, -2.5], np.float32), tf.int32),
    (np.array([1.0, -2.5], np.float64), tf.int16),
    (np.arange(8, dtype=np.uint8).reshape(2, 4), tf.float32),
    (np.array([[7, 9]], np.int32), tf.float64),
    (np.float32(1.0), tf.int32),
]


@pytest.mark.parametrize("x,dtype", BITCASTS)
def test_bitcast_matches_numpy_view(x, dtype):
    a, b = x.dtype.itemsize, dtype.np.itemsize
    if a > b:
        want = x.view(dtype.np).reshape(*x.shape, a // b)
    else:
        want = x.view(dtype.np).reshape(x.shape[:-1] if a < b else x.shape)
    with tf.Graph().as_default(), tf.Session() as s:
        t = tf.bitcast(x, dtype)
        got = s.run(t)
    assert t.shape.as_list() == list(want.shape)
    np.testing.assert_array_equal(got, want)


def test_bitcast_wrong_last_dim_fails_where_built():
    with tf.Graph().as_default(), pytest.raises(ValueError, match="last dimension"):
        tf.bitcast(np.zeros((2, 3), np.int32), tf.float64)


def test_ensure_shape_passes_and_merges():
    with tf.Graph().as_default(), tf.Session() as s:
        p = tf.placeholder(tf.float32, [None, None])
        e = tf.ensure_shape(p, [None, 3])
        assert e.shape.as_list() == [None, 3]
        np.testing.assert_array_equal(s.run(e, {p: X}), X)


def test_ensure_shape_error_names_op_and_line():
    with tf.Graph().as_default(), tf.Session() as s:
        p = tf.placeholder(tf.float32)
        e = tf.ensure_shape(p, [3, 2], name="checked")
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            s.run(e, {p: X})
    msg = str(info.value)
    assert (
        "EnsureShape 'checked'" in msg and "test_identities_and_casts.py" in msg and "[2,3]" in msg
    )


def test_ensure_shape_static_mismatch_fails_where_built():
    with tf.Graph().as_default(), pytest.raises(ValueError, match="not compatible"):
        tf.ensure_shape(tf.constant(X), [3, 2])


def test_identity_n_has_one_output_per_input():
    with tf.Graph().as_default(), tf.Session() as s:
        outs = tf.identity_n([X, [1, 2]])
        assert len(outs) == 2 and outs[0].op is outs[1].op
        assert [o.dtype for o in outs] == [tf.float32, tf.int32]
        got = s.run(outs)
    np.testing.assert_array_equal(got[0], X)
    assert got[1].tolist() == [1, 2]


@pytest.mark.parametrize(
    "fn,dtype", [(tf.to_complex64, np.complex64), (tf.to_complex128, np.complex128)]
)
def test_to_complex(fn, dtype):
    with tf.Graph().as_default(), tf.Session() as s:
        got = s.run(fn(X))
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, X.astype(dtype))


def test_identity_n_graph_def_declares_a_type_list_and_round_trips():
    pytest.importorskip("tensorboard")
    from flowbook.graph_io import graph_def as gdef

    proto = gdef.op_def("IdentityN")
    assert proto.output_arg[0].type_list_attr == "T" and proto.attr[0].type == "list(type)"
    assert gdef.op_attr_kind("Bitcast", "type") == "type"
    g = tf.Graph()
    with g.as_default():
        tf.identity_n([X, [1, 2], 3.0], name="ids")
    g2 = tf.Graph()
    with g2.as_default():
        tf.import_graph_def(gdef.to_graph_def(g), name="")
        outs = g2.get_operation_by_name("ids").outputs
        assert [o.dtype for o in outs] == [tf.float32, tf.int32, tf.float32]
        with tf.Session() as s:
            assert s.run(outs[1]).tolist() == [1, 2]
