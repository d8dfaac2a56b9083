"""dynamic_rnn and bidirectional_dynamic_rnn: TensorFlow's numbers, static_rnn's numbers, training."""

from __future__ import annotations

import os

import numpy as np
import pytest

import flowbook as tf

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures")
CELLS = {
    "basic_rnn": lambda: tf.nn.rnn_cell.BasicRNNCell(4),
    "basic_lstm": lambda: tf.nn.rnn_cell.BasicLSTMCell(4),
    "lstm_peepholes": lambda: tf.nn.rnn_cell.LSTMCell(4, use_peepholes=True, num_proj=3),
    "gru": lambda: tf.nn.rnn_cell.GRUCell(4),
    "multi": lambda: tf.nn.rnn_cell.MultiRNNCell(
        [tf.nn.rnn_cell.GRUCell(3), tf.nn.rnn_cell.BasicLSTMCell(4)]
    ),
}


def test_tensorflows_lstm_outputs_states_and_gradients():
    d = np.load(os.path.join(FIXTURES, "tf_rnn.npz"))
    with tf.Graph().as_default(), tf.Session() as s:
        x = tf.placeholder(tf.float32, [2, None, 3])
        cell = tf.nn.rnn_cell.BasicLSTMCell(5)
        out, st = tf.nn.dynamic_rnn(cell, x, sequence_length=d["sequence_length"], dtype=tf.float32)
        names = [v.op.name for v in tf.global_variables()]
        assert names == ["rnn/basic_lstm_cell/kernel", "rnn/basic_lstm_cell/bias"]
        s.run(tf.global_variables_initializer())
        for v in tf.global_variables():
            v.load(d[v.op.name], s)
        grads = tf.gradients(tf.reduce_sum(tf.square(out)), [*tf.global_variables(), x])
        o, c, h, *g = s.run([out, st.c, st.h, *grads], {x: d["x"]})
    np.testing.assert_allclose(o, d["outputs"], atol=1e-6)
    np.testing.assert_allclose(c, d["final_c"], atol=1e-6)
    np.testing.assert_allclose(h, d["final_h"], atol=1e-6)
    keys = ["grad/rnn/basic_lstm_cell/kernel", "grad/rnn/basic_lstm_cell/bias", "grad/x"]
    for key, got in zip(keys, g):
        np.testing.assert_allclose(got, d[key], atol=2e-6, err_msg=key)


@pytest.mark.parametrize("name", sorted(CELLS))
@pytest.mark.parametrize("lengths", [None, [5, 2, 0]])
def test_dynamic_rnn_equals_static_rnn(name, lengths):
    rng = np.random.default_rng(0)
    xv = rng.normal(size=(3, 5, 2)).astype(np.float32)
    results = []
    for dynamic in (True, False):
        with tf.Graph().as_default(), tf.Session() as s:
            tf.set_random_seed(7)
            x = tf.constant(xv)
            cell = CELLS[name]()
            if dynamic:
                out, state = tf.nn.dynamic_rnn(cell, x, lengths, dtype=tf.float32)
            else:
                outs, state = tf.nn.static_rnn(
                    cell, tf.unstack(x, axis=1), dtype=tf.float32, sequence_length=lengths
                )
                out = tf.stack(outs, axis=1)
            loss = tf.reduce_sum(out**2) + sum(tf.reduce_sum(t) for t in tf.nest.flatten(state))
            grads = tf.gradients(loss, tf.trainable_variables())
            s.run(tf.global_variables_initializer())
            for k, v in enumerate(tf.trainable_variables()):  # the same weights in both graphs
                shape = v.get_shape().as_list()
                v.load(np.sin(np.arange(np.prod(shape)) + k).reshape(shape) * 0.5, s)
            results.append(s.run([out, tf.nest.flatten(state), grads]))
    (o1, s1, g1), (o2, s2, g2) = results
    np.testing.assert_allclose(o1, o2, atol=1e-5)
    for a, b in zip(s1 + g1, s2 + g2):
        np.testing.assert_allclose(a, b, atol=1e-5)


def test_bidirectional_dynamic_rnn_equals_the_static_one():
    rng = np.random.default_rng(1)
    xv = rng.normal(size=(2, 4, 3)).astype(np.float32)
    got = []
    for dynamic in (True, False):
        with tf.Graph().as_default(), tf.Session() as s:
            tf.set_random_seed(3)
            fw, bw = tf.nn.rnn_cell.GRUCell(2), tf.nn.rnn_cell.BasicRNNCell(3)
            if dynamic:
                (a, b), _ = tf.nn.bidirectional_dynamic_rnn(
                    fw, bw, tf.constant(xv), sequence_length=[4, 3], dtype=tf.float32
                )
                out = tf.concat([a, b], 2)
            else:
                outs, _, _ = tf.nn.static_bidirectional_rnn(
                    fw,
                    bw,
                    tf.unstack(tf.constant(xv), axis=1),
                    dtype=tf.float32,
                    sequence_length=[4, 3],
                )
                out = tf.stack(outs, axis=1)
            s.run(tf.global_variables_initializer())
            for k, v in enumerate(tf.trainable_variables()):
                shape = v.get_shape().as_list()
                v.load(np.cos(np.arange(np.prod(shape)) + k).reshape(shape) * 0.5, s)
            got.append(s.run(out))
    np.testing.assert_allclose(got[0], got[1], atol=1e-5)


def test_an_lstm_learns_to_sum_a_sequence():
    rng = np.random.default_rng(2)
    xs = rng.uniform(-1, 1, size=(64, 6, 1)).astype(np.float32)
    ys = xs.sum(axis=(1, 2))[:, None]
    with tf.Graph().as_default(), tf.Session() as s:
        tf.set_random_seed(0)
        x = tf.placeholder(tf.float32, [None, None, 1])
        y = tf.placeholder(tf.float32, [None, 1])
        _, state = tf.nn.dynamic_rnn(tf.nn.rnn_cell.BasicLSTMCell(8), x, dtype=tf.float32)
        pred = tf.layers.dense(state.h, 1)
        loss = tf.reduce_mean(tf.square(pred - y))
        train = tf.train.AdamOptimizer(0.03).minimize(loss)
        s.run(tf.global_variables_initializer())
        first = s.run(loss, {x: xs, y: ys})
        for _ in range(60):
            s.run(train, {x: xs, y: ys})
        assert s.run(loss, {x: xs, y: ys}) < 0.2 * first
