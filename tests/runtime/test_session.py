"""Session.run: fetch structures, feeds, pruning, plan caching, variables and errors."""

from __future__ import annotations

import collections

import numpy as np
import pytest

import flowbook as fb
from flowbook.runtime import plan as plan_module


class Recorder(fb.Observer):
    """Records the ops a run executes."""

    def __init__(self) -> None:
        self.ran: list[str] = []

    def before_op(self, op) -> None:
        self.ran.append(op.name)


def test_hello_world_multiply_two_numbers():
    a = fb.placeholder(fb.float32)
    b = fb.placeholder(fb.float32)
    y = fb.multiply(a, b)
    with fb.Session() as sess:
        assert sess.run(y, feed_dict={a: 3, b: 3}) == 9.0
        assert isinstance(sess.run(y, {a: 2, b: 4}), np.float32)


def test_fetch_structures():
    a = fb.constant(1.0, name="a")
    b = fb.constant([2, 3], name="b")
    Pair = collections.namedtuple("Pair", "x y")
    with fb.Session() as s:
        assert s.run(a) == 1.0
        assert s.run("a:0") == 1.0
        assert s.run("a") is None  # an op fetch
        assert s.run(a.op) is None
        r = s.run([a, (b, "a:0"), {"k": [b]}, Pair(a, b)])
        assert r[0] == 1.0 and r[1][0].tolist() == [2, 3] and r[1][1] == 1.0
        assert r[2]["k"][0].tolist() == [2, 3]
        assert isinstance(r[3], Pair) and r[3].x == 1.0
        assert isinstance(s.run(b), np.ndarray)
        assert s.run([]) == []


def test_unknown_fetches_are_clear_errors():
    fb.constant(1.0, name="a")
    with fb.Session() as s:
        with pytest.raises(ValueError, match="'nope:0' cannot be interpreted as a Tensor"):
            s.run("nope:0")  # ValueError, as in TensorFlow
        with pytest.raises(TypeError, match="invalid type"):
            s.run(3.5)
        with pytest.raises(TypeError, match="None"):
            s.run([None])
        other = fb.Graph()
        with other.as_default():
            c = fb.constant(1.0)
        with pytest.raises(ValueError, match="not an element of this graph"):
            s.run(c)


def test_feed_any_tensor_partial_execution():
    x = fb.placeholder(fb.float32, [None], name="x")
    h = fb.multiply(x, 2.0, name="h")
    y = fb.add(h, 1.0, name="y")
    rec = Recorder()
    with fb.Session() as s, fb.observe(rec):
        out = s.run(y, {h: [10.0, 20.0]})  # x need not be fed: h is
        assert out.tolist() == [11.0, 21.0]
        assert "h" not in rec.ran and "x" not in rec.ran
        assert s.run(y, {"x:0": [1.0]}).tolist() == [3.0]  # feed by name
        assert s.run(h, {h: [5.0]}).tolist() == [5.0]  # a fed fetch returns the feed


def test_pruning_runs_only_what_fetches_need():
    a = fb.constant(1.0, name="a")
    b = fb.constant(2.0, name="b")
    fb.add(a, b, name="unused")
    c = fb.multiply(a, 3.0, name="c")
    rec = Recorder()
    with fb.Session() as s, fb.observe(rec):
        s.run(c)
    assert "a" in rec.ran and "c" in rec.ran
    assert "b" not in rec.ran and "unused" not in rec.ran and len(rec.ran) == 3


def test_missing_feed_is_invalid_argument_naming_placeholder_and_site():
    x = fb.placeholder(fb.float32, [None, 3], name="x")
    y = fb.reduce_sum(x)
    with fb.Session() as s, pytest.raises(fb.errors.InvalidArgumentError) as info:
        s.run(y)
    msg = str(info.value)
    assert "'x'" in msg and "float32" in msg and "[?,3]" in msg and "test_session.py" in msg
    assert info.value.op is x.op


def test_feed_shape_and_dtype_checks():
    x = fb.placeholder(fb.float32, [None, 2], name="x")
    n = fb.placeholder(fb.int32, [], name="n")
    with fb.Session() as s:
        with pytest.raises(ValueError, match=r"Cannot feed value of shape \[3\] for Tensor 'x:0'"):
            s.run(x, {x: [1.0, 2.0, 3.0]})
        with pytest.raises(TypeError, match="non-integer"):
            s.run(n, {n: 1.5})
        assert s.run(n, {n: 2.0}) == 2
        assert s.run(x, {x: np.ones((1, 2), np.float64)}).dtype == np.float32
        with pytest.raises(TypeError, match="symbolic tensor"):
            s.run(x, {x: fb.ones([1, 2])})
        with pytest.raises(TypeError, match="feed_dict key"):
            s.run(x, {"nope:0": 1})


BAD_FEEDS = [
    # (dtype, shape, value, error, message): refused as TensorFlow refuses them
    (fb.int32, [None], [2**40], ValueError, r"'n:0' does not fit int32: 1099511627776 is outside"),
    (fb.int32, [None], [-(2**31) - 1], ValueError, "does not fit int32"),
    (fb.uint8, [None], [256], ValueError, "does not fit uint8"),
    (fb.int64, [None], [2**70], ValueError, "does not fit int64"),
    (fb.int32, [None], np.array([2**40]), ValueError, "does not fit int32"),
    (fb.int32, [None, None], [[1], [1, 2]], ValueError, "ragged value to 'n:0'"),
    (fb.int32, [None], ["a"], TypeError, "Cannot feed strings to 'n:0', which is int32"),
    (fb.float32, [None], ["1.5"], TypeError, "Cannot feed strings to 'n:0'"),
    (fb.int32, [None], [1, None], TypeError, "NoneType"),
    (fb.int32, [None], [1.5], TypeError, "non-integer values"),
    (fb.int32, [None], [float("inf")], TypeError, "non-integer values"),
    (fb.int64, [None], np.array([np.nan]), TypeError, "non-integer values"),
    (fb.float32, [None], [1e300], ValueError, "does not fit float32: 1e\\+300"),
    (fb.float32, [None], [1 + 2j], TypeError, "complex values to 'n:0'.*imaginary part"),
    (fb.string, [None], [1, 2], TypeError, "Cannot feed int64 values to 'n:0', which is string"),
]  # fmt: skip


@pytest.mark.parametrize("dtype,shape,value,error,message", BAD_FEEDS)
def test_feeds_are_checked_as_tensorflow_checks_them(dtype, shape, value, error, message):
    n = fb.placeholder(dtype, shape, name="n")
    with fb.Session() as s, pytest.raises(error, match=message) as info:
        s.run(fb.identity(n), {n: value})
    assert "test_session.py" in str(info.value)  # the placeholder's line


def test_feeding_a_variable_feeds_its_readers_and_leaves_it_alone():
    w = fb.Variable([1.0, 2.0], name="W")
    doubled = w.value() * 2
    with fb.Session() as s:
        s.run(fb.global_variables_initializer())
        assert s.run(w.read_value(), {w: [0.0, 0.0]}).tolist() == [0.0, 0.0]
        assert s.run(doubled, {w: [3.0, 4.0]}).tolist() == [6.0, 8.0]
        assert s.run(fb.assign_add(w, [1.0, 1.0]), {w: [0.0, 0.0]}).tolist() == [1.0, 1.0]
        assert s.run(w).tolist() == [1.0, 2.0]  # the stored value is untouched
        with pytest.raises(ValueError, match="Cannot feed value of shape"):
            s.run(doubled, {w: [1.0, 2.0, 3.0]})


def test_shapes_too_big_for_int32_and_memory():
    with pytest.raises(ValueError, match="Cannot convert 1099511627776 to a int32 tensor"):
        fb.constant(2**40, fb.int32)
    z = fb.zeros([2**40, 2**40])  # int64 dims, as TensorFlow converts them
    with fb.Session() as s, pytest.raises(fb.errors.ResourceExhaustedError) as info:
        s.run(z)
    assert "Fill 'zeros'" in str(info.value) and "test_session.py" in str(info.value)


def test_counter_variable():
    state = fb.Variable(0, name="counter")
    one = fb.constant(1)
    new_value = fb.add(state, one)
    update = fb.assign(state, new_value)
    init = fb.global_variables_initializer()
    with fb.Session() as sess:
        sess.run(init)
        assert sess.run(state) == 0
        seen = []
        for _ in range(3):
            sess.run(update)
            seen.append(int(sess.run(state)))
    assert seen == [1, 2, 3]
    assert [op.name for op in state.graph.get_operations()][:4] == [
        "counter/initial_value",
        "counter",
        "counter/Assign",
        "counter/read",
    ]


def test_uninitialized_variable_is_failed_precondition_naming_variable_and_site():
    w = fb.Variable(fb.zeros([2]), name="W")
    with fb.Session() as s, pytest.raises(fb.errors.FailedPreconditionError) as info:
        s.run(w + 1.0)
    msg = str(info.value)
    assert "uninitialized value W" in msg and "VariableV2 'W'" in msg and "test_session.py" in msg
    assert info.value.op is w.op


def test_variables_are_per_session_and_fetches_are_copies():
    v = fb.Variable([1.0, 2.0], name="v")
    s1, s2 = fb.Session(), fb.Session()
    s1.run(v.initializer)
    s2.run(v.initializer)
    s1.run(v.assign([5.0, 5.0]))
    assert s1.run(v).tolist() == [5.0, 5.0] and s2.run(v).tolist() == [1.0, 2.0]
    got = s1.run(v)
    got[0] = 100.0  # mutating a fetched value does not touch the variable
    assert s1.run(v).tolist() == [5.0, 5.0]
    s1.close()
    s2.close()


def test_assign_add_sub_and_read_value_with_control_dependencies():
    v = fb.Variable(10.0)
    inc = v.assign_add(5.0)
    dec = v.assign_sub(1.0)
    with fb.control_dependencies([inc]):
        after = v.read_value()
    with fb.Session() as s:
        s.run(fb.global_variables_initializer())
        assert s.run(after) == 15.0
        assert s.run(dec) == 14.0
        v.load(2.0, s)
        assert s.run(v) == 2.0


def test_assign_shape_is_checked():
    v = fb.Variable([1.0, 2.0])
    with pytest.raises(ValueError, match="Assign"):
        v.assign([1.0, 2.0, 3.0])
    p = fb.placeholder(fb.float32)
    a = v.assign(p)
    with fb.Session() as s:
        s.run(v.initializer)
        with pytest.raises(fb.errors.InvalidArgumentError, match="shapes of both tensors"):
            s.run(a, {p: [1.0, 2.0, 3.0]})
        assert s.run(v).tolist() == [1.0, 2.0]  # left as it was


def test_group_and_control_dependencies_order_updates():
    a = fb.Variable(0, name="a")
    b = fb.Variable(0, name="b")
    inc_a = a.assign_add(1)
    with fb.control_dependencies([inc_a]):
        copy_b = b.assign(a.read_value())
    step = fb.group(inc_a, copy_b, name="step")
    with fb.Session() as s:
        s.run(fb.initialize_all_variables())
        for _ in range(3):
            assert s.run(step) is None
        assert s.run([a, b]) == [3, 3]


def test_tuple_gates_outputs():
    x = fb.Variable(1)
    y = fb.Variable(2)
    a, _ = fb.tuple([x.assign_add(1), y.assign_add(1)])
    with fb.Session() as s:
        s.run(fb.global_variables_initializer())
        assert s.run(a) == 2
        assert s.run(y) == 3  # fetching a ran b's op too


def test_whitepaper_figure_1():
    x = fb.placeholder(fb.float32, [None, 4], name="x")
    W = fb.Variable(fb.random_uniform([4, 3], -1, 1, seed=1), name="W")
    b = fb.Variable(fb.zeros([3]), name="b")
    relu = fb.nn.relu(fb.matmul(x, W) + b)
    cost = fb.reduce_sum(relu)
    feed = np.arange(8, dtype=np.float32).reshape(2, 4)
    with fb.Session() as s:
        s.run(fb.global_variables_initializer())
        w = s.run(W)
        got = s.run(cost, {x: feed})
    assert np.isclose(got, np.maximum(feed @ w, 0).sum(), rtol=1e-5)


def test_eval_run_and_default_sessions():
    c = fb.constant(3.0)
    op = fb.no_op()
    with pytest.raises(ValueError, match="No default session"):
        c.eval()
    with fb.Session() as s:
        assert c.eval() == 3.0
        op.run()
        assert s is fb.get_default_session()
    g = fb.Graph()
    with g.as_default():
        d = fb.constant(1)
    s2 = fb.Session(graph=g)
    with s2.as_default():
        assert d.eval() == 1
        with pytest.raises(ValueError, match="different"):
            c.eval()
    assert d.eval(session=s2) == 1
    s2.close()
    sess = fb.InteractiveSession()
    assert c.eval() == 3.0
    sess.close()
    assert fb.get_default_session() is None


def test_session_context_makes_its_graph_default():
    g = fb.Graph()
    with fb.Session(graph=g) as s:
        assert fb.get_default_graph() is g
        c = fb.constant(2)
        assert s.run(c) == 2


def test_closed_session_refuses_to_run():
    c = fb.constant(1.0)
    s = fb.Session()
    s.close()
    with pytest.raises(RuntimeError, match="closed Session"):
        s.run(c)


def test_repeated_run_does_no_graph_work(monkeypatch):
    x = fb.placeholder(fb.float32)
    y = x * 2.0
    calls = []
    real = plan_module.build_plan
    monkeypatch.setattr(
        "flowbook.runtime.session.build_plan", lambda *a, **k: calls.append(1) or real(*a, **k)
    )
    with fb.Session() as s:
        for i in range(5):
            assert s.run(y, {x: float(i)}) == 2.0 * i
        assert len(calls) == 1
        fb.constant(0.0)  # a new op changes no plan: the plan is kept
        s.run(y, {x: 1.0})
        assert len(calls) == 1
        y.op._update_input(1, fb.constant(3.0))  # an edit of one of its ops: rebuilt once
        assert s.run(y, {x: 1.0}) == 3.0 and s.run(y, {x: 1.0}) == 3.0
        assert len(calls) == 2


def test_deadline_exceeded():
    x = fb.placeholder(fb.float32, [2000, 2000])
    y = fb.matmul(fb.matmul(fb.matmul(x, x), x), x)
    opts = fb.RunOptions(timeout_in_ms=1)
    with fb.Session() as s, pytest.raises(fb.errors.DeadlineExceededError):
        s.run(y, {x: np.ones((2000, 2000), np.float32)}, options=opts)


def test_kernel_errors_become_op_errors_naming_the_op():
    m = fb.placeholder(fb.float64, [2, 2], name="m")
    inv = fb.matrix_inverse(m, name="inv")
    with fb.Session() as s:
        with pytest.raises(fb.errors.InvalidArgumentError) as info:
            s.run(inv, {m: np.zeros((2, 2))})
        assert "MatrixInverse 'inv'" in str(info.value) and info.value.op is inv.op
        for _ in range(3):  # the compiled path reports the same
            with pytest.raises(fb.errors.InvalidArgumentError, match="MatrixInverse 'inv'"):
                s.run(inv, {m: np.zeros((2, 2))})
        assert np.allclose(s.run(inv, {m: np.eye(2) * 2}), np.eye(2) / 2)


def test_division_by_zero_is_inf_without_warnings():
    x = fb.placeholder(fb.float32)
    with fb.Session() as s, np.testing.assert_no_warnings():
        assert np.isinf(s.run(1.0 / x, {x: 0.0}))


def test_session_state_of_ops_that_left_the_graph_is_released():
    import gc
    import weakref

    g = fb.get_default_graph()
    v = fb.Variable(1.0, name="v")
    with fb.Session() as s:
        s.run(v.initializer)
        assert len(s._variables) == 1
        op = weakref.ref(v.op)
        g._remove_ops(list(g.get_operations()))
        s.run(fb.constant(0.0))  # a new graph version drops the cached plans
        del v
        gc.collect()
        assert op() is None and len(s._variables) == 0


def test_a_read_after_an_update_by_control_dependency_sees_it():
    """TF1's idiom: ``identity(v)`` under ``control_dependencies([inc])`` reads after ``inc``."""
    v = fb.Variable(0.0, name="v")
    inc = fb.assign_add(v, 1.0)
    with fb.control_dependencies([inc]):
        r = fb.identity(v)
        doubled = v * 2.0
    before = fb.identity(v)  # no dependency: reads whenever it runs (here: nothing updates)
    with fb.Session() as s:
        s.run(fb.global_variables_initializer())
        assert s.run(r) == 1.0 and s.run(r) == 2.0
        assert s.run(doubled) == 6.0
        assert s.run(before) == 3.0
        rv = v.read_value()  # read_value reads when it runs, before a later update
        with fb.control_dependencies([rv]):
            inc2 = fb.assign_add(v, 10.0)
        assert s.run([rv, inc2]) == [3.0, 13.0]


def test_strings_come_back_as_bytes_as_in_tensorflow():
    with fb.Session() as s:
        assert s.run(fb.constant("abc")) == b"abc"
        got = s.run(fb.constant(["a", "é"]))
        assert got.dtype == object and got.tolist() == [b"a", "é".encode()]
        p = fb.placeholder(fb.string, [None])
        assert s.run(fb.identity(p), {p: ["x", "y"]}).tolist() == [b"x", b"y"]
