"""make_tensor_proto / make_ndarray against numpy, and against TensorFlow's own message."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tensorboard")

from tensorboard.compat.proto import tensor_pb2

import flowbook as tf

CASES = [
    (
        np.arange(6, dtype=np.int32).reshape(2, 3),
        None,
        None,
        np.arange(6, dtype=np.int32).reshape(2, 3),
    ),
    ([1.5, 2.5], None, None, np.array([1.5, 2.5], np.float32)),
    ([1, 2], tf.float64, None, np.array([1.0, 2.0])),
    (5, tf.int64, [2, 2], np.full((2, 2), 5, np.int64)),
    ([1, 2, 3, 4], None, [2, 2], np.array([[1, 2], [3, 4]], np.int64)),
    ([True, False], None, None, np.array([True, False])),
    (["a", "bc"], tf.string, None, np.array([b"a", b"bc"], object)),  # bytes, as TF gives them
]


@pytest.mark.parametrize("values,dtype,shape,want", CASES)
def test_round_trip_matches_numpy(values, dtype, shape, want):
    proto = tf.make_tensor_proto(values, dtype, shape)
    assert isinstance(proto, tensor_pb2.TensorProto)
    again = tensor_pb2.TensorProto.FromString(proto.SerializeToString())
    got = tf.make_ndarray(again)
    assert got.shape == want.shape
    assert got.tolist() == want.tolist()
    if want.dtype != object:
        assert got.dtype == want.dtype


def test_shape_errors():
    with pytest.raises(ValueError, match="Too many elements"):
        tf.make_tensor_proto([1, 2, 3], shape=[2])
    with pytest.raises(TypeError, match="Expected Tensor's shape"):
        tf.make_tensor_proto([1, 2], shape=[1, 2], verify_shape=True)


def test_a_const_built_from_the_ndarray_computes_it():
    arr = tf.make_ndarray(tf.make_tensor_proto([[1.0, 2.0]], tf.float32))
    with tf.Graph().as_default(), tf.Session() as s:
        assert s.run(tf.constant(arr) * 2).tolist() == [[2.0, 4.0]]
