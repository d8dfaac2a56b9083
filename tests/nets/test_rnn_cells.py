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
from flowbook.autodiff.gradient_checker import compute_gradient_error

FIXTURES = Path(__file__).parent.parent / "fixtures"
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
        outs, fw, bw = tf.nn.static_bidirectional_rnn(
            made[0], made[1], inputs, dtype=x.dtype, sequence_length=SEQ_LEN
        )
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
                err = compute_gradient_error(
                    v,
                    shape,
                    loss,
                    [],
                    w[v.op.name].astype(np.float64),
                    extra_feed_dict=feed,
                    session=s,
                )
                assert err < 1e-6, (v.op.name, err)


def test_dynamic_rnn_fixture_equals_static_rnn():
    """tf_rnn.pb's numbers (dynamic_rnn, for the while-loop work) are static_rnn's too."""
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2, 4, 3], name="x")
        cell = tf.nn.rnn_cell.BasicLSTMCell(5)
        outs, state = tf.nn.static_rnn(
            cell, tf.unstack(x, axis=1), dtype=tf.float32, sequence_length=TF["sequence_length"]
        )
        outputs = tf.stack(outs, axis=1)
        variables = tf.global_variables()
        grads = tf.gradients(tf.reduce_sum(tf.square(outputs)), [*variables, x])
        with tf.Session() as s:
            for v in variables:
                v.load(TF[v.op.name], s)
            got = s.run([outputs, state.c, state.h, grads], {x: X})
    assert [[v.op.name, v.shape.as_list()] for v in variables] == LISTING["dynamic_rnn"]
    for value, key in zip(got[:3], ["outputs", "final_c", "final_h"], strict=True):
        np.testing.assert_allclose(value, TF[key], atol=2e-6)
    for v, g in zip([*variables, x], got[3], strict=True):
        np.testing.assert_allclose(g, TF["grad/" + v.op.name], rtol=1e-4, atol=1e-5)


def test_while_fixture_holds_the_power_series():
    """tf_while.npz (for the control-flow import tests) says what numpy says."""
    w = np.load(FIXTURES / "tf_while.npz")
    x, n = w["x"].astype(np.float64), int(w["n"])
    fact = np.cumprod([1, *range(1, n)])
    np.testing.assert_allclose(w["exp_series_0"], sum(x**k / fact[k] for k in range(n)), rtol=1e-5)
    np.testing.assert_allclose(w["nested_0"], 4 * x)  # sum over i < 3 of sum over j <= i of j
    np.testing.assert_allclose(w["cond_out_0"], 2 * x)  # sum(x) > 0
    np.testing.assert_allclose(w["cond_out_0__x2"], x + 1)  # -x fed: the false branch, -(-x) + 1
    np.testing.assert_allclose(
        w["grad_exp_series_x"], sum(x**k / fact[k] for k in range(n - 1)), rtol=1e-5
    )


# ------------------------------------------------------------------- reuse
def test_a_cell_called_twice_shares_its_variables():
    with tf.Graph().as_default():
        cell = tf.nn.rnn_cell.GRUCell(3)
        state = cell.zero_state(2, tf.float32)
        out1, state = cell(tf.ones([2, 4]), state)
        out2, _ = cell(tf.ones([2, 4]), state)
        assert len(tf.global_variables()) == 4
        assert out1.op.name.startswith("gru_cell/") and out2.op.name.startswith("gru_cell/")


def test_static_rnn_makes_one_set_of_variables_for_all_steps():
    with tf.Graph().as_default():
        cell = tf.nn.rnn_cell.BasicLSTMCell(4)
        tf.nn.static_rnn(cell, [tf.ones([1, 2])] * 6, dtype=tf.float32)
        assert [v.op.name for v in tf.global_variables()] == [
            "rnn/basic_lstm_cell/kernel",
            "rnn/basic_lstm_cell/bias",
        ]


def test_second_static_rnn_in_the_same_scope_needs_reuse():
    with tf.Graph().as_default():
        xs = [tf.ones([1, 2])] * 2
        tf.nn.static_rnn(tf.nn.rnn_cell.BasicRNNCell(3), xs, dtype=tf.float32)
        with pytest.raises(ValueError, match="rnn/basic_rnn_cell/kernel already exists"):
            tf.nn.static_rnn(tf.nn.rnn_cell.BasicRNNCell(3), xs, dtype=tf.float32)
    with tf.Graph().as_default():
        xs = [tf.ones([1, 2])] * 2
        tf.nn.static_rnn(tf.nn.rnn_cell.BasicRNNCell(3), xs, dtype=tf.float32)
        with tf.variable_scope(tf.get_variable_scope(), reuse=True):
            tf.nn.static_rnn(tf.nn.rnn_cell.BasicRNNCell(3), xs, dtype=tf.float32)
        assert len(tf.global_variables()) == 2


def test_two_cells_in_one_scope_are_numbered_and_scope_argument_names_them():
    with tf.Graph().as_default():
        with tf.variable_scope("m"):
            for _ in range(2):
                tf.nn.rnn_cell.BasicRNNCell(2)(tf.ones([1, 2]), tf.zeros([1, 2]))
        tf.nn.rnn_cell.BasicRNNCell(2)(tf.ones([1, 2]), tf.zeros([1, 2]), scope="mine")
        assert [v.op.name for v in tf.global_variables()] == [
            "m/basic_rnn_cell/kernel",
            "m/basic_rnn_cell/bias",
            "m/basic_rnn_cell_1/kernel",
            "m/basic_rnn_cell_1/bias",
            "mine/kernel",
            "mine/bias",
        ]


# ------------------------------------------------- state_is_tuple=False, errors
@pytest.mark.parametrize(
    "make",
    [
        lambda t: tf.nn.rnn_cell.BasicLSTMCell(3, state_is_tuple=t),
        lambda t: tf.nn.rnn_cell.LSTMCell(3, num_proj=2, use_peepholes=True, state_is_tuple=t),
        lambda t: tf.nn.rnn_cell.MultiRNNCell(
            [tf.nn.rnn_cell.GRUCell(3), tf.nn.rnn_cell.BasicRNNCell(2)], state_is_tuple=t
        ),
    ],
    ids=["basic_lstm", "lstm", "multi"],
)
def test_concatenated_state_computes_what_the_tuple_state_does(make):
    results = []
    for as_tuple in (True, False):
        with tf.Graph().as_default():
            x = tf.constant(X)
            outs, state = tf.nn.static_rnn(
                make(as_tuple), tf.unstack(x, axis=1), dtype=tf.float32, sequence_length=SEQ_LEN
            )
            flat = tf.nest.flatten(state)
            with tf.Session() as s:
                for i, v in enumerate(tf.global_variables()):  # the same weights both times
                    rng = np.random.default_rng(i)
                    v.load(rng.standard_normal(v.shape.as_list()).astype(np.float32), s)
                got = s.run([tf.stack(outs), flat])
            results.append((got[0], np.concatenate(got[1], 1)))
    np.testing.assert_allclose(results[0][0], results[1][0], atol=1e-6)
    np.testing.assert_allclose(results[0][1], results[1][1], atol=1e-6)


def test_static_rnn_errors():
    with tf.Graph().as_default():
        cell = tf.nn.rnn_cell.BasicRNNCell(2)
        with pytest.raises(ValueError, match="dtype must be specified"):
            tf.nn.static_rnn(cell, [tf.ones([1, 2])])
        with pytest.raises(ValueError, match="inputs must not be empty"):
            tf.nn.static_rnn(cell, [], dtype=tf.float32)
        with pytest.raises(TypeError, match="inputs must be a sequence"):
            tf.nn.static_rnn(cell, tf.ones([2, 1, 2]), dtype=tf.float32)
        with pytest.raises(ValueError, match="depth of inputs"):
            tf.nn.static_rnn(cell, [tf.placeholder(tf.float32, [1, None])], dtype=tf.float32)


def test_unknown_batch_size_uses_the_dynamic_shape():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 4, 3])
        outs, _state = tf.nn.static_rnn(
            tf.nn.rnn_cell.BasicLSTMCell(5),
            tf.unstack(x, axis=1),
            dtype=tf.float32,
            sequence_length=[4, 2],
        )
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            out = s.run(tf.stack(outs), {x: X})
        assert out.shape == (4, 2, 5) and not out[2:, 1].any() and out[:, 0].all()


# ------------------------------------------------------------------ dropout
def _dropout_run(seed, **keep):
    with tf.Graph().as_default():
        tf.set_random_seed(5)
        cell = tf.nn.rnn_cell.DropoutWrapper(tf.nn.rnn_cell.BasicLSTMCell(6), seed=seed, **keep)
        plain = tf.nn.rnn_cell.BasicLSTMCell(6, reuse=True)  # the wrapped cell's weights
        x = tf.constant(np.ones((3, 4), np.float32))
        zero = cell.zero_state(3, tf.float32)
        out, state = cell(x, zero)
        with tf.variable_scope("", reuse=True):
            ref, ref_state = plain(x, zero)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            return s.run([out, state, ref, ref_state])


def test_dropout_wrapper_keeps_everything_at_probability_one():
    out, state, ref, ref_state = _dropout_run(1)
    np.testing.assert_allclose(out, ref)
    np.testing.assert_allclose(state.h, ref_state.h)


def test_dropout_wrapper_drops_output_and_state_h_but_not_c():
    out, state, ref, ref_state = _dropout_run(1, output_keep_prob=0.5, state_keep_prob=0.5)
    for got, want in ((out, ref), (state.h, ref_state.h)):
        kept = got != 0
        assert 0 < kept.sum() < got.size
        np.testing.assert_allclose(got[kept], 2 * want[kept], rtol=1e-6)
    np.testing.assert_allclose(state.c, ref_state.c)
    again = _dropout_run(1, output_keep_prob=0.5, state_keep_prob=0.5)
    np.testing.assert_array_equal(out, again[0])  # seeded: the same masks


def test_variational_dropout_uses_one_mask_for_every_step():
    with tf.Graph().as_default():
        cell = tf.nn.rnn_cell.DropoutWrapper(
            tf.nn.rnn_cell.BasicRNNCell(8, activation=tf.identity),
            input_keep_prob=0.5,
            variational_recurrent=True,
            seed=2,
        )
        inputs = [tf.ones([3, 8])] * 3
        outs, _ = tf.nn.static_rnn(cell, inputs, dtype=tf.float32)
        with tf.variable_scope("rnn", reuse=True):
            kernel = tf.get_variable("basic_rnn_cell/kernel")
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            s.run(kernel.assign(np.vstack([np.eye(8), np.zeros((8, 8))]).astype(np.float32)))
            got = s.run(outs)
    masks = [o != 0 for o in got]
    assert (masks[0] == masks[1]).all() and (masks[1] == masks[2]).all()
    assert (masks[0] == masks[0][:1]).all()  # one mask over the batch, as TF's [1, depth] noise
    assert 0 < masks[0].sum() < masks[0].size


def test_dropout_wrapper_rejects_bad_probabilities():
    with pytest.raises(ValueError, match="input_keep_prob must be between 0 and 1"):
        tf.nn.rnn_cell.DropoutWrapper(tf.nn.rnn_cell.GRUCell(2), input_keep_prob=1.5)


# ----------------------------------------------------- state saving, names
def test_static_state_saving_rnn_saves_the_final_state():
    class Saver:
        def __init__(self):
            self.v = {n: tf.Variable(tf.zeros([2, 3]), name=n) for n in ("c", "h")}

        def state(self, name):
            return self.v[name].value()

        def save_state(self, name, value):
            return tf.assign(self.v[name], value)

    with tf.Graph().as_default():
        saver = Saver()
        cell = tf.nn.rnn_cell.BasicLSTMCell(3)
        x = tf.constant(X)
        outs, state = tf.nn.static_state_saving_rnn(cell, tf.unstack(x, axis=1), saver, ("c", "h"))
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            last, h = s.run([outs[-1], state.h])
            np.testing.assert_allclose(s.run(saver.v["h"]), h)
            np.testing.assert_allclose(last, h)
        with pytest.raises(ValueError, match=r"same type as cell\.state_size"):
            tf.nn.static_state_saving_rnn(cell, [x[:, 0]], saver, "h")


def test_every_rnn_name_of_tf1_is_there():
    for name in (
        "BasicLSTMCell",
        "BasicRNNCell",
        "DeviceWrapper",
        "DropoutWrapper",
        "GRUCell",
        "LSTMCell",
        "LSTMStateTuple",
        "MultiRNNCell",
        "RNNCell",
        "ResidualWrapper",
    ):
        assert getattr(tf.nn.rnn_cell, name) is getattr(tf.contrib.rnn, name)
        assert getattr(tf.compat.v1.nn.rnn_cell, name) is getattr(tf.nn.rnn_cell, name)
    for name in ("static_rnn", "static_bidirectional_rnn", "static_state_saving_rnn"):
        assert getattr(tf.nn, name) is getattr(tf.contrib.rnn, name)
    assert tf.nest.flatten((1, (2, 3))) == [1, 2, 3]
