"""RNN cells and static RNNs against numpy references and TensorFlow's own numbers.

``tests/fixtures/tf_rnn.npz`` and ``tf_rnn.json`` were written by real
TensorFlow (``tests/fixtures/make_tf_control_fixtures.py``): for each cell
type, the variables' names and shapes, fixed weights, and what
``static_rnn`` (``static_bidirectional_rnn``) computed with them for a fixed
input with ``sequence_length=[4, 2]``, plus the gradients of
``sum(outputs ** 2)``.  Each cell here must match the numpy reference below
and TensorFlow's numbers; gradients are also checked by finite differences.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import flowbook as tf
from flowbook.gradient_checker import compute_gradient_error

FIXTURES = Path(__file__).parent / "fixtures"
TF = np.load(FIXTURES / "tf_rnn.npz")
LISTING = json.loads((FIXTURES / "tf_rnn.json").read_text())
KINDS = [k for k in LISTING if k != "dynamic_rnn"]
X, SEQ_LEN = TF["x"], TF["sequence_length"]


# --------------------------------------------------------- numpy references
def sigmoid(z):
    return 1 / (1 + np.exp(-z))


def np_basic_rnn(w, p, x, h):
    h = np.tanh(np.concatenate([x, h], 1) @ w[p + "kernel"] + w[p + "bias"])
    return h, h


def np_lstm(w, p, x, state, forget_bias=1.0, peep=False, cell_clip=None, proj_clip=None):
    c, h = state
    i, j, f, o = np.split(np.concatenate([x, h], 1) @ w[p + "kernel"] + w[p + "bias"], 4, 1)
    if peep:
        c = sigmoid(f + forget_bias + w[p + "w_f_diag"] * c) * c + sigmoid(
            i + w[p + "w_i_diag"] * c
        ) * np.tanh(j)
    else:
        c = sigmoid(f + forget_bias) * c + sigmoid(i) * np.tanh(j)
    if cell_clip is not None:
        c = np.clip(c, -cell_clip, cell_clip)
    h = (sigmoid(o + w[p + "w_o_diag"] * c) if peep else sigmoid(o)) * np.tanh(c)
    if p + "projection/kernel" in w:
        h = h @ w[p + "projection/kernel"]
        if proj_clip is not None:
            h = np.clip(h, -proj_clip, proj_clip)
    return h, (c, h)


def np_gru(w, p, x, h):
    r, u = np.split(
        sigmoid(np.concatenate([x, h], 1) @ w[p + "gates/kernel"] + w[p + "gates/bias"]), 2, 1
    )
    cand = np.tanh(
        np.concatenate([x, r * h], 1) @ w[p + "candidate/kernel"] + w[p + "candidate/bias"]
    )
    h = u * h + (1 - u) * cand
    return h, h


def np_static(step, x, state, out_size, seq_len=SEQ_LEN):
    """static_rnn with sequence_length: zero outputs and frozen state past each row's end."""
    outs = []
    for t in range(x.shape[1]):
        out, new = step(x[:, t], state)
        done = (t >= seq_len)[:, None]
        outs.append(np.where(done, 0.0, out))
        state = _map(lambda o, n, d=done: np.where(d, o, n), state, new)
    return np.stack(outs), state


def _map(fn, a, b):
    if isinstance(a, tuple):
        return tuple(_map(fn, x, y) for x, y in zip(a, b, strict=True))
    return fn(a, b)


def _flat(s):
    return [leaf for part in s for leaf in _flat(part)] if isinstance(s, tuple) else [s]


def _reverse(x, seq_len):
    out = x.copy()
    for b, n in enumerate(seq_len):
        out[b, :n] = x[b, :n][::-1]
    return out


def numpy_reference(kind, w, x=X):
    """(outputs [time, batch, units], flat final state) of TF's cell ``kind`` in numpy."""
    z = lambda n: np.zeros((x.shape[0], n))
    pre = "rnn/"
    if kind == "basic_rnn":
        return np_static(lambda a, s: np_basic_rnn(w, pre + "basic_rnn_cell/", a, s), x, z(5), 5)
    if kind == "basic_lstm":
        step = lambda a, s: np_lstm(w, pre + "basic_lstm_cell/", a, s, forget_bias=0.5)
        return np_static(step, x, (z(5), z(5)), 5)
    if kind == "lstm":
        step = lambda a, s: np_lstm(
            w, pre + "lstm_cell/", a, s, peep=True, cell_clip=0.6, proj_clip=0.5
        )
        return np_static(step, x, (z(5), z(4)), 4)
    if kind == "lstm_plain":
        return np_static(lambda a, s: np_lstm(w, pre + "lstm_cell/", a, s), x, (z(5), z(5)), 5)
    if kind == "gru":
        return np_static(lambda a, s: np_gru(w, pre + "gru_cell/", a, s), x, z(5), 5)
    if kind == "residual":

        def step(a, s):
            out, new = np_gru(w, pre + "gru_cell/", a, s)
            return out + a, new

        return np_static(step, x, z(3), 3)
    if kind == "multi":

        def step(a, s):
            m = pre + "multi_rnn_cell/"
            h0, s0 = np_lstm(w, m + "cell_0/basic_lstm_cell/", a, s[0])
            h1, s1 = np_gru(w, m + "cell_1/gru_cell/", h0, s[1])
            return h1, (s0, s1)

        return np_static(step, x, ((z(5), z(5)), z(4)), 4)
    assert kind == "bidirectional"
    b = "bidirectional_rnn/"
    fw_out, fw_state = np_static(
        lambda a, s: np_lstm(w, b + "fw/basic_lstm_cell/", a, s), x, (z(5), z(5)), 5
    )
    bw_out, bw_state = np_static(
        lambda a, s: np_gru(w, b + "bw/gru_cell/", a, s), _reverse(x, SEQ_LEN), z(4), 4
    )
    bw_out = _reverse(bw_out.transpose(1, 0, 2), SEQ_LEN).transpose(1, 0, 2)
    return np.concatenate([fw_out, bw_out], 2), (fw_state, bw_state)


# ------------------------------------------------------------ flowbook side
def build(kind, x, cell_ns=None):
    """flowbook's static_rnn (or bidirectional) for ``kind``: (outputs list, flat states)."""
    made = eval(LISTING[kind]["cell"], {"rnn_cell": cell_ns or tf.nn.rnn_cell})
    inputs = tf.unstack(x, axis=1)
    if kind == "bidirectional":
        outs, fw, bw = tf.nn.static_bidirectional_rnn(made[0], made[1], inputs, dtype=x.dtype,
                                                       sequence_length=SEQ_LEN)  # fmt: skip
        return outs, tf.nest.flatten(fw) + tf.nest.flatten(bw)
    outs, state = tf.nn.static_rnn(made, inputs, dtype=x.dtype, sequence_length=SEQ_LEN)
    return outs, tf.nest.flatten(state)


def weights_of(kind):
    prefix = f"{kind}/w/"
    return {k[len(prefix) :]: TF[k] for k in TF.files if k.startswith(prefix)}


def run_kind(kind, dtype=tf.float32):
    with tf.Graph().as_default():
        x = tf.placeholder(dtype, [2, 4, 3], name="x")
        outs, states = build(kind, x)
        loss = tf.reduce_sum(tf.square(tf.stack(outs)))
        variables = tf.global_variables()
        grads = tf.gradients(loss, variables)
        w = weights_of(kind)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            for v in variables:
                v.load(w[v.op.name].astype(dtype.as_numpy_dtype), s)
            got = s.run([tf.stack(outs), states, grads], {x: X.astype(dtype.as_numpy_dtype)})
        names = [[v.op.name, v.shape.as_list()] for v in variables]
    return got, names


@pytest.mark.parametrize("kind", KINDS)
def test_variable_names_and_shapes_are_tensorflows(kind):
    _, names = run_kind(kind)
    assert names == LISTING[kind]["variables"]


@pytest.mark.parametrize("kind", KINDS)
def test_outputs_and_states_match_tensorflow_and_numpy(kind):
    (outs, states, _grads), _ = run_kind(kind)
    want_out, want_state = numpy_reference(kind, weights_of(kind))
    tf_states = [TF[f"{kind}/state/{i}"] for i in range(len(states))]
    np.testing.assert_allclose(want_out, TF[f"{kind}/outputs"], atol=2e-6)  # the reference is TF's
    np.testing.assert_allclose(outs, TF[f"{kind}/outputs"], atol=2e-6)
    np.testing.assert_allclose(outs, want_out, atol=2e-6)
    assert len(states) == len(_flat(want_state)) == len(tf_states)
    for got, ref, tf_value in zip(states, _flat(want_state), tf_states, strict=True):
        np.testing.assert_allclose(got, tf_value, atol=2e-6)
        np.testing.assert_allclose(got, ref, atol=2e-6)


@pytest.mark.parametrize("kind", KINDS)
def test_gradients_match_tensorflow(kind):
    (_, _, grads), names = run_kind(kind)
    for (name, _), g in zip(names, grads, strict=True):
        np.testing.assert_allclose(g, TF[f"{kind}/grad/{name}"], rtol=1e-4, atol=1e-5, err_msg=name)


@pytest.mark.parametrize("kind", KINDS)
def test_gradients_match_finite_differences(kind):
    """d sum(outputs^2) / d (input, first two variables), float64, against central differences."""
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, [2, 4, 3], name="x")
        outs, _ = build(kind, x)
        loss = tf.reduce_sum(tf.square(tf.stack(outs)))
        w = weights_of(kind)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            for v in tf.global_variables():
                v.load(w[v.op.name].astype(np.float64), s)
            feed = {x: X.astype(np.float64)}
            err = compute_gradient_error(x, [2, 4, 3], loss, [], X.astype(np.float64), session=s)
            assert err < 1e-6, ("x", err)
            for v in tf.global_variables()[:2]:
                shape = v.shape.as_list()
                err = compute_gradient_error(v, shape, loss, [], w[v.op.name].astype(np.float64),
                                             extra_feed_dict=feed, session=s)  # fmt: skip
                assert err < 1e-6, (v.op.name, err)
