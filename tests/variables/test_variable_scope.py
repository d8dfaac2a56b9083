"""tf.variable_scope / tf.get_variable: names, reuse, inherited defaults, errors, as TF1 gives them."""

from __future__ import annotations

import math
import threading

import numpy as np
import pytest

import flowbook as tf
from flowbook.framework.graph import GraphKeys


def _run(*fetches):
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        return s.run(list(fetches))


# ----------------------------------------------------------------- names
def _nested():
    with tf.variable_scope("model"), tf.variable_scope("l1"):
        return [tf.get_variable("w", [2, 3]).name, tf.constant(1.0).name]


def _reentered_string():
    with tf.variable_scope("model"):
        tf.get_variable("w", [1])
    with tf.variable_scope("model", reuse=True):
        return [tf.get_variable("w").name, tf.constant(1.0).name, tf.get_variable_scope().name]


def _reentered_object():
    with tf.variable_scope("model") as scope:
        tf.get_variable("w", [1])
    with tf.name_scope("outer"), tf.variable_scope(scope, reuse=True) as again:
        return [tf.get_variable("w").name, tf.constant(1.0).name, again.original_name_scope]


def _object_inside_other_scope():
    with tf.variable_scope("a") as a:
        pass
    with tf.variable_scope("b"), tf.variable_scope(a):
        return [tf.get_variable("v", [1]).name, tf.get_variable_scope().name]


def _default_names():
    names = []
    for _ in range(2):
        with tf.variable_scope(None, default_name="dense"):
            names.append(tf.get_variable("kernel", [1]).name)
    with tf.variable_scope("outer"), tf.variable_scope(None, default_name="dense"):
        names.append(tf.get_variable("kernel", [1]).name)
    # the counts under outer/ were forgotten when it closed
    with tf.variable_scope("outer", reuse=True), tf.variable_scope(None, default_name="dense"):
        names.append(tf.get_variable("kernel", [1]).name)
    return names


def _default_after_named():
    with tf.variable_scope("dense"):
        pass
    with tf.variable_scope(None, default_name="dense") as s:
        return [s.name, s.original_name_scope]


def _variable_ignores_name_scope():
    with tf.name_scope("ns"), tf.variable_scope("vs"):
        v = tf.get_variable("v", [1])
        return [v.name, v.initializer.name, tf.constant(0.0).name]


def _auxiliary_off():
    with tf.name_scope("ns"), tf.variable_scope("vs", auxiliary_name_scope=False) as s:
        return [tf.get_variable("v", [1]).name, tf.constant(0.0).name, s.original_name_scope]


NAMES = [
    ("nested", _nested, ["model/l1/w:0", "model/l1/Const:0"]),
    ("reentered_string", _reentered_string, ["model/w:0", "model_1/Const:0", "model"]),
    ("reentered_object", _reentered_object, ["model/w:0", "outer/model/Const:0", "model/"]),
    ("object_keeps_its_full_name", _object_inside_other_scope, ["a/v:0", "a"]),
    ("default_name", _default_names,
     ["dense/kernel:0", "dense_1/kernel:0", "outer/dense/kernel:0", "outer/dense/kernel:0"]),
    ("default_after_named", _default_after_named, ["dense_1", "dense_1/"]),
    ("name_scope_not_in_var_name", _variable_ignores_name_scope,
     ["vs/v:0", "vs/v/Assign", "ns/vs/Const:0"]),
    ("auxiliary_name_scope_false", _auxiliary_off, ["vs/v:0", "ns/Const:0", "ns/"]),
]  # fmt: skip


@pytest.mark.parametrize("build,expected", [r[1:] for r in NAMES], ids=[r[0] for r in NAMES])
def test_names_as_tensorflow_gives_them(build, expected):
    assert build() == expected


def test_variable_ops_as_tensorflow_names_them():
    with tf.variable_scope("model"), tf.variable_scope("l1"):
        tf.get_variable("w", [2, 3])
    assert [op.name for op in tf.get_default_graph().get_operations()] == [
        "model/l1/w/Initializer/random_uniform/shape",
        "model/l1/w/Initializer/random_uniform/min",
        "model/l1/w/Initializer/random_uniform/max",
        "model/l1/w/Initializer/random_uniform/RandomUniform",
        "model/l1/w/Initializer/random_uniform/sub",
        "model/l1/w/Initializer/random_uniform/mul",
        "model/l1/w/Initializer/random_uniform",
        "model/l1/w",
        "model/l1/w/Assign",
        "model/l1/w/read",
    ]


# ----------------------------------------------------------------- reuse
def test_reuse_true_shares_and_sub_scopes_inherit_it():
    with tf.variable_scope("m"), tf.variable_scope("l"):
        w = tf.get_variable("w", [2])
    with tf.variable_scope("m", reuse=True), tf.variable_scope("l", reuse=False):
        assert tf.get_variable("w", [2]) is w
        assert tf.get_variable_scope().reuse is True


def test_auto_reuse_makes_then_finds():
    made = []
    for _ in range(3):
        with tf.variable_scope("shared", reuse=tf.AUTO_REUSE):
            made.append(tf.get_variable("w", [3]))
    assert made[0] is made[1] is made[2]
    assert len(tf.global_variables()) == 1
    assert repr(tf.AUTO_REUSE) == "_ReuseMode.AUTO_REUSE"


def test_reuse_variables_on_the_current_scope():
    with tf.variable_scope("m") as scope:
        w = tf.get_variable("w", [1])
        scope.reuse_variables()
        assert tf.get_variable("w") is w


def test_a_second_graph_has_its_own_variables():
    with tf.variable_scope("m"):
        w = tf.get_variable("w", [1])
    with tf.Graph().as_default(), tf.variable_scope("m"):
        assert tf.get_variable("w", [1]) is not w


def test_values_pick_the_graph():
    g = tf.Graph()
    with g.as_default():
        x = tf.constant(1.0)
    with tf.variable_scope("m", values=[x]):
        v = tf.get_variable("v", [1])
    assert v.graph is g and v.name == "m/v:0"


def test_scopes_are_per_thread():
    seen = {}
    with tf.variable_scope("main"):

        def other():
            seen["name"] = tf.get_variable_scope().name

        t = threading.Thread(target=other)
        t.start()
        t.join()
    assert seen["name"] == ""


def test_a_variable_removed_by_a_rerun_cell_is_made_again():
    g = tf.get_default_graph()
    with tf.variable_scope("m"):
        w = tf.get_variable("w", [1])
    g._remove_ops([op for op in g.get_operations() if op.name.startswith("m/w")])
    with tf.variable_scope("m"):
        w2 = tf.get_variable("w", [1])
    assert w2 is not w and w2.name == "m/w:0"


# ----------------------------------------------------------------- errors
def _exists():
    with tf.variable_scope("model"), tf.variable_scope("l1"):
        tf.get_variable("w", [1])
    with tf.variable_scope("model"), tf.variable_scope("l1"):
        tf.get_variable("w", [1])


def _missing():
    with tf.variable_scope("model", reuse=True):
        tf.get_variable("nope", [1])


def _shape_mismatch():
    with tf.variable_scope("m"):
        tf.get_variable("w", [2, 3])
    with tf.variable_scope("m", reuse=True):
        tf.get_variable("w", [3, 2])


def _dtype_mismatch():
    with tf.variable_scope("m"):
        tf.get_variable("w", [2])
    with tf.variable_scope("m", reuse=True):
        tf.get_variable("w", [2], tf.float64)


ERRORS = [
    ("exists", _exists, ValueError,
     "Variable model/l1/w already exists, disallowed. Did you mean to set reuse=True or "
     "reuse=tf.AUTO_REUSE in VarScope? Originally defined at:"),
    ("missing", _missing, ValueError,
     "Variable model/nope does not exist, or was not created with tf.get_variable(). "
     "Did you mean to set reuse=tf.AUTO_REUSE in VarScope?"),
    ("shape", _shape_mismatch, ValueError,
     "Trying to share variable m/w, but specified shape [3,2] and found shape [2,3]."),
    ("dtype", _dtype_mismatch, ValueError,
     "Trying to share variable m/w, but specified dtype float64 and found dtype float32."),
    ("no_shape", lambda: tf.get_variable("w"), ValueError,
     "Shape of a new variable (w) must be fully defined, but instead was <unknown>."),
    ("constant_and_shape", lambda: tf.get_variable("w", [2], initializer=np.ones(2)), ValueError,
     "Variable w: If initializer is a constant, do not specify shape."),
    ("init_dtype", lambda: tf.get_variable("w", dtype=tf.int32, initializer=[1.0, 2.0]),
     ValueError, "Variable w: Initializer type 'float32' and explicit dtype 'int32' don't match."),
    ("no_name", lambda: tf.variable_scope(None), TypeError,
     "If default_name is None then name_or_scope is required"),
    ("bad_scope", lambda: tf.variable_scope(3), TypeError,
     "VariableScope: name_or_scope must be a string or VariableScope."),
    ("reuse_default", lambda: tf.variable_scope(None, "d", reuse=True), ValueError,
     "reuse=True cannot be used without a name_or_scope"),
    ("complex", lambda: tf.get_variable("c", [1], tf.complex64), ValueError,
     "An initializer for variable c of complex64 is required"),
]  # fmt: skip


@pytest.mark.parametrize("build,kind,message", [r[1:] for r in ERRORS], ids=[r[0] for r in ERRORS])
def test_tensorflow_errors(build, kind, message):
    with pytest.raises(kind) as info:
        build()
    assert str(info.value).startswith(message), str(info.value)


def test_exists_error_says_where_the_first_was_made():
    with pytest.raises(ValueError, match=r"test_variable_scope\.py:\d+: tf.get_variable\(\"w\""):
        _exists()


def test_a_failed_scope_leaves_the_scopes_as_they_were():
    with pytest.raises(ValueError):
        _missing()
    assert tf.get_variable_scope().name == ""
    assert tf.get_default_graph().get_name_scope() == ""


# ----------------------------------------------------------- inherited defaults
def test_default_initializers_glorot_uniform_for_floats_zeros_for_ints():
    w = tf.get_variable("w", [30, 20])
    n = tf.get_variable("n", [4], tf.int32)
    limit = math.sqrt(6.0 / (30 + 20))
    g = tf.get_default_graph()
    lo, hi = (g.get_tensor_by_name(f"w/Initializer/random_uniform/{k}:0") for k in ("min", "max"))
    w_v, n_v, lo_v, hi_v = _run(w, n, lo, hi)
    assert (lo_v, hi_v) == (np.float32(-limit), np.float32(limit))
    assert np.abs(w_v).max() <= limit and w_v.std() > limit / 3
    assert n_v.tolist() == [0, 0, 0, 0] and n.dtype == tf.int32


def test_initializer_dtype_and_regularizer_are_inherited_and_overridden():
    def reg(w):
        return tf.reduce_sum(w) * 0.5

    outer = tf.variable_scope("a", initializer=tf.constant_initializer(3.0), dtype=tf.float64)
    with outer, tf.variable_scope("b", regularizer=reg):
        inherited = tf.get_variable("x", [2])
        own = tf.get_variable("y", [2], initializer=tf.ones_initializer())
        none = tf.get_variable("z", [2], regularizer=tf.no_regularizer)
    assert inherited.dtype == own.dtype == none.dtype == tf.float64
    losses = tf.get_collection(GraphKeys.REGULARIZATION_LOSSES)
    assert len(losses) == 2 and losses[0].name.startswith("a/b/x/Regularizer/")
    x, y, total = _run(inherited, own, tf.losses.get_regularization_loss())
    assert x.tolist() == [3.0, 3.0] and y.tolist() == [1.0, 1.0]
    assert total == pytest.approx(0.5 * 6 + 0.5 * 2)
    assert tf.losses.get_regularization_losses(scope="a/b/y") == [losses[1]]


def test_constant_value_initializer_gives_shape_and_dtype():
    v = tf.get_variable("v", initializer=np.arange(6, dtype=np.float64).reshape(2, 3))
    i = tf.get_variable("i", initializer=[1, 2])
    assert v.shape.as_list() == [2, 3] and v.dtype == tf.float64 and i.dtype == tf.int32
    assert _run(i)[0].tolist() == [1, 2]


def test_trainable_and_collections():
    a = tf.get_variable("a", [1], trainable=False)
    b = tf.get_variable("b", [1], collections=["mine", GraphKeys.GLOBAL_VARIABLES])
    c = tf.get_local_variable("c", [1])
    assert tf.trainable_variables() == [b]
    assert tf.get_collection("mine") == [b] and tf.global_variables() == [a, b]
    assert tf.local_variables() == [c]


def test_scope_variable_lists():
    with tf.variable_scope("m") as m:
        w = tf.get_variable("w", [1])
        tf.get_variable("u", [1], trainable=False)
    tf.get_variable("mw", [1])  # "mw" starts with "m" but is not in m/
    assert m.trainable_variables() == [w] and len(m.global_variables()) == 2


# ------------------------------------------------------------ custom getters
def test_custom_getter_sees_every_argument_and_can_change_them():
    calls = []

    def doubling(getter, name, *args, **kwargs):
        calls.append((name, kwargs["shape"], kwargs["trainable"]))
        kwargs["initializer"] = tf.constant_initializer(2.0)
        return getter(name, *args, **kwargs)

    with tf.variable_scope("m", custom_getter=doubling):
        v = tf.get_variable("v", [2])
    assert calls == [("m/v", [2], None)]
    assert _run(v)[0].tolist() == [2.0, 2.0]


def test_nested_custom_getters_run_inner_first():
    order = []

    def tagged(tag):
        def getter(getter, name, *args, **kwargs):
            order.append(tag)
            return getter(name, *args, **kwargs)

        return getter

    with (
        tf.variable_scope("o", custom_getter=tagged("outer")),
        tf.variable_scope("i", custom_getter=tagged("inner")),
    ):
        v = tf.get_variable("v", [1], custom_getter=tagged("call"))
    # a getter given to get_variable replaces the scope's (as in TF)
    assert order == ["call"] and v.name == "o/i/v:0"
    order.clear()
    with (
        tf.variable_scope("o", custom_getter=tagged("outer")),
        tf.variable_scope("i", custom_getter=tagged("inner")),
    ):
        tf.get_variable("w", [1])
    assert order == ["inner", "outer"]


def test_custom_getter_can_rename():
    def rename(getter, name, *args, **kwargs):
        return getter(name.replace("kernel", "weights"), *args, **kwargs)

    with tf.variable_scope("fc", custom_getter=rename):
        assert tf.get_variable("kernel", [1]).name == "fc/weights:0"


# ------------------------------------------------------------ training
def test_shared_variables_train_together():
    x = tf.placeholder(tf.float32, [None, 2])

    def tower(inp):
        with tf.variable_scope("tower", reuse=tf.AUTO_REUSE):
            w = tf.get_variable("w", [2, 1], initializer=tf.zeros_initializer())
            return tf.matmul(inp, w)

    loss = tf.reduce_mean(tf.square(tower(x) - 1.0)) + tf.reduce_mean(tf.square(tower(x) - 1.0))
    (grad,) = tf.gradients(loss, tf.trainable_variables())
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    feed = {x: np.ones((4, 2), np.float32)}
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        first = s.run(loss, feed)
        assert s.run(grad, feed).shape == (2, 1)
        for _ in range(20):
            s.run(train, feed)
        assert s.run(loss, feed) < first / 10
