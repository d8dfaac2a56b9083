"""flowbook.debug: the Stepper (against sess.run), the NaN guard, check_numerics, Print."""

from __future__ import annotations

import time

import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flowbook as fb
from flowbook import debug
from flowbook.debug.stepper import DONE, READY
from flowbook.runtime import executor
from tests.interrupts import CtrlC
from tests.runtime.test_executor import build, random_dag

X = np.array([0.5, -1.0, 2.0])
Y = np.array([1.5, 0.25, -3.0])


def case_graph(spec, fetch, fed):
    """Build a random DAG; returns (fetches, feeds) for it."""
    nodes = build(spec)
    feeds = {nodes[0]: X, nodes[1]: Y}
    for i in fed:
        feeds[nodes[i]] = np.array([1.0, 2.0, 3.0])
    return nodes, [nodes[i] for i in fetch], feeds


def plan_dag(plan, fed):
    """The plan's dependency graph (data and control inputs), as networkx."""
    dag = nx.DiGraph()
    in_plan = set(plan.ops)
    for op in plan.ops:
        dag.add_node(op)
        for t in op.inputs:
            if t not in fed and t.op in in_plan:
                dag.add_edge(t.op, op)
        for c in op.control_inputs:
            dag.add_edge(c, op)
    return dag


def assert_same(a, b):
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            assert_same(a[k], b[k])
    elif isinstance(a, list | tuple):
        assert type(a) is type(b) and len(a) == len(b)
        for u, v in zip(a, b):
            assert_same(u, v)
    elif a is None:
        assert b is None
    else:
        assert type(a) is type(b)
        np.testing.assert_array_equal(a, b)


def check_consistent(stepper):
    """The stepper's bookkeeping agrees with what has run."""
    ran = set(stepper.executed)
    assert len(ran) == len(stepper.executed)
    for i, op in enumerate(stepper.plan.ops):
        deps = stepper.plan.producers[i]
        waiting = sum(stepper._state[d] != DONE for d in deps)
        if op in ran:
            assert stepper._state[i] == DONE
        else:
            assert stepper._state[i] != DONE
            assert stepper._sched.pending[i] == waiting
            assert (stepper._state[i] == READY) == (waiting == 0)
    ready = stepper.ready()
    assert len(ready) == len(set(ready))
    assert set(ready) == {op for i, op in enumerate(stepper.plan.ops) if stepper._state[i] == READY}


# ---------------------------------------------------------------- the Stepper
@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_dag(), st.data())
def test_random_stepping_orders_give_the_same_fetches_as_run(case, data):
    spec, fetch, fed = case
    with fb.Graph().as_default() as g:
        _, fetches, feeds = case_graph(spec, fetch, fed)
        with fb.Session(graph=g) as s:
            expected = s.run(fetches, feeds)
            stepper = debug.Stepper(s, fetches, feeds)
            while not stepper.done:
                how = data.draw(st.sampled_from(["fifo", "pick", "run_to"]))
                if how == "fifo":
                    stepper.step()
                elif how == "pick":
                    stepper.step(data.draw(st.sampled_from(stepper.ready())))
                else:
                    stepper.run_to(data.draw(st.sampled_from(stepper.remaining())))
                check_consistent(stepper)
            assert_same(stepper.cont(), expected)
            assert len(stepper.executed) == len(stepper.plan.ops)
            stepper.reset()
            assert not stepper.executed
            assert_same(stepper.cont(), expected)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_dag(), st.data())
def test_run_to_runs_exactly_the_missing_ancestors(case, data):
    spec, fetch, fed = case
    with fb.Graph().as_default() as g:
        _, fetches, feeds = case_graph(spec, fetch, fed)
        with fb.Session(graph=g) as s:
            stepper = debug.Stepper(s, fetches, feeds)
            if not stepper.plan.ops:
                return
            for _ in range(data.draw(st.integers(0, len(stepper.plan.ops)))):
                stepper.step(data.draw(st.sampled_from(stepper.ready())))
            dag = plan_dag(stepper.plan, set(feeds))
            target = data.draw(st.sampled_from(stepper.plan.ops))
            before = list(stepper.executed)
            stepper.run_to(target.name)
            newly = stepper.executed[len(before) :]
            expected = (nx.ancestors(dag, target) | {target}) - set(before)
            assert set(newly) == expected
            assert len(newly) == len(expected)
            check_consistent(stepper)


def test_value_of_intermediates_equals_a_run_of_that_tensor():
    x = fb.placeholder(fb.float32, [None, 3], name="x")
    w = fb.constant(np.arange(9, dtype=np.float32).reshape(3, 3), name="w")
    h = fb.tanh(fb.matmul(x, w, name="mm"), name="h")
    loss = fb.reduce_mean(fb.square(h), name="loss")
    feeds = {x: np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)}
    with fb.Session() as s:
        stepper = debug.Stepper(s, loss, feeds)
        with pytest.raises(debug.StepperError, match="'mm:0' has not been computed yet"):
            stepper.value("mm:0")
        stepper.run_to(h)
        for t in (w, "mm:0", h):
            np.testing.assert_array_equal(stepper.value(t), s.run(t, feeds))
        np.testing.assert_array_equal(stepper.value(x), feeds[x])  # a fed value
        v = stepper.value(h)
        v[...] = 0  # a copy: the stepper keeps its own
        assert np.any(stepper.value(h) != 0)
        assert stepper.cont() == s.run(loss, feeds)
        np.testing.assert_array_equal(stepper.value("mm:0"), s.run("mm:0", feeds))  # kept
        other = fb.negative(x, name="unrelated")
        with pytest.raises(debug.StepperError, match="'unrelated:0' is not computed by this run"):
            stepper.value(other)


def test_cont_matches_run_for_nested_fetches_names_and_ops():
    a = fb.constant([1.0, 2.0], name="a")
    b = fb.multiply(a, 3.0, name="b")
    c = fb.reduce_sum(b, name="c")
    fetches = {"b": b, "pair": (c, "a:0"), "list": [b.op, "c"], "same": b}
    with fb.Session() as s:
        assert_same(debug.Stepper(s, fetches).cont(), s.run(fetches))
        assert_same(debug.Stepper(s, c).cont(), s.run(c))
        assert_same(debug.Stepper(s, [b, c]).cont(), s.run([b, c]))


def test_breakpoints_by_name_and_by_type():
    x = fb.placeholder(fb.float32, [], name="x")
    a = fb.add(x, 1.0, name="a")
    m1 = fb.multiply(a, 2.0, name="m1")
    m2 = fb.multiply(m1, 3.0, name="m2")
    out = fb.subtract(m2, 1.0, name="out")
    with fb.Session() as s:
        expected = s.run(out, {x: 1.0})
        stepper = debug.Stepper(s, out, {x: 1.0})
        stepper.break_at("a")
        stepper.break_at("Mul")
        assert stepper.cont() is None and stepper.stopped_at is a.op
        assert a.op not in stepper.executed
        assert "stopped at Add 'a'" in repr(stepper)
        assert stepper.cont() is None and stepper.stopped_at is m1.op
        assert float(stepper.value(a)) == 2.0  # the stopped op's inputs are there
        assert stepper.cont() is None and stepper.stopped_at is m2.op
        assert stepper.cont() == expected and stepper.stopped_at is None
        stepper.reset()
        stepper.clear_breakpoints()
        stepper.break_at(m2)  # by tensor
        assert stepper.cont() is None and stepper.stopped_at is m2.op
        stepper.step(m2.op)  # stepping the op the breakpoint stopped at clears the stop
        assert stepper.stopped_at is None
        assert stepper.cont() == expected
        with pytest.raises(debug.StepperError, match="not part of this Stepper's run"):
            stepper.break_at(fb.negative(x, name="elsewhere"))


def test_step_rules_and_repr():
    x = fb.placeholder(fb.float32, [], name="x")
    y = fb.square(x, name="y")
    z = fb.add(y, 1.0, name="z")
    with fb.Session() as s:
        stepper = debug.Stepper(s, z, {x: 3.0})
        assert repr(stepper).startswith("<Stepper 0/3 ops run, 2 ready, next: Square 'y'")
        with pytest.raises(
            debug.StepperError,
            match=r"Add 'z' .* is not ready: it waits for 2 op\(s\) \('y', 'Const'\)",
        ):
            stepper.step("z")
        assert stepper.step().name == "y"
        with pytest.raises(debug.StepperError, match="has already run"):
            stepper.step(y)
        assert [op.name for op in stepper.remaining()] == ["Const", "z"]
        assert stepper.cont() == 10.0 and stepper.done
        with pytest.raises(debug.StepperError, match="All 3 ops have run"):
            stepper.step()
        assert repr(stepper) == "<Stepper 3/3 ops run, 0 ready, done>"
    with pytest.raises(RuntimeError, match="closed Session"):
        stepper.reset() or stepper.step()


def test_stepping_an_assign_changes_the_session_variable_and_reset_keeps_it():
    v = fb.Variable(1.0, name="v")
    inc = v.assign_add(2.0)
    with fb.Session() as s:
        s.run(v.initializer)
        stepper = debug.Stepper(s, inc)
        assert stepper.cont() == 3.0
        assert s.run(v) == 3.0  # as TF's debugger does: the session's variable changed
        stepper.reset()  # not rolled back
        assert stepper.cont() == 5.0 and s.run(v) == 5.0
        assert stepper.value(v) == 5.0


def test_a_kernel_error_names_the_op_and_leaves_the_stepper_usable():
    x = fb.placeholder(fb.float32, [None], name="x")
    doubled = fb.multiply(x, 2.0, name="doubled")
    r = fb.reshape(doubled, [2, 2], name="r")
    line = r.op.site.line
    with fb.Session() as s:
        stepper = debug.Stepper(s, r, {x: [1.0, 2.0, 3.0]})
        with pytest.raises(fb.errors.InvalidArgumentError) as info:
            stepper.cont()
        assert info.value.op is r.op
        assert str(info.value).startswith(
            f"Reshape 'r' (tests/debug/test_stepper.py:{line}): Input to reshape"
        )
        assert r.op in stepper.ready() and r.op not in stepper.executed
        np.testing.assert_array_equal(stepper.value(doubled), [2.0, 4.0, 6.0])
        check_consistent(stepper)
        with pytest.raises(fb.errors.InvalidArgumentError):
            stepper.step(r.op)  # fails again, the same way
        stepper.reset()
        assert stepper.executed == [] and len(stepper.ready()) == 2


def test_an_uninitialised_variable_fails_then_steps_once_initialised():
    v = fb.Variable(2.0, name="v")
    y = fb.multiply(v, 3.0, name="y")
    with fb.Session() as s:
        stepper = debug.Stepper(s, y)
        with pytest.raises(fb.errors.FailedPreconditionError, match="uninitialized value v"):
            stepper.cont()
        read = stepper.ready()[0]  # y reads v when it runs (W/read passes the variable on)
        assert read.name == "y" and read not in stepper.executed
        s.run(v.initializer)
        assert stepper.cont() == 6.0
        stepper.reset()
        assert stepper.cont() == 6.0


def test_an_interrupted_kernel_is_not_marked_done_and_everything_stays_usable():
    x = fb.placeholder(fb.float32, [], name="x")
    a = fb.add(x, 1.0, name="a")
    slow = fb.multiply(a, 2.0, name="slow")
    out = fb.add(slow, 1.0, name="out")
    with fb.Session() as s:
        stepper = debug.Stepper(s, out, {x: 1.0})
        i = stepper.plan.ops.index(slow.op)
        real = stepper.plan.fns[i]

        def sleepy(*args):
            press.reached.set()  # the kernel runs: press from now on
            while press.pressing():  # interruptible: the interrupt lands between sleeps
                time.sleep(0.001)
            return real(*args)  # no interrupt landed: cont() ends, and the block fails

        press = CtrlC(inside=[sleepy])  # it lands in the kernel, nowhere else
        stepper.plan.fns[i] = sleepy
        try:
            with press:
                stepper.cont()
        finally:
            stepper.plan.fns[i] = real
        assert slow.op in stepper.ready() and slow.op not in stepper.executed
        assert a.op in stepper.executed
        check_consistent(stepper)
        assert stepper.cont() == 5.0
        assert s.run(out, {x: 1.0}) == 5.0


def test_interrupts_anywhere_in_cont_leave_the_stepper_consistent():
    x = fb.placeholder(fb.float64, [], name="x")
    y = x
    for _ in range(3000):
        y = fb.add(y, 1.0)
    with fb.Session() as s:
        expected = s.run(y, {x: 0.0})
        for k in range(8):
            stepper = debug.Stepper(s, y, {x: 0.0})
            fns = stepper.plan.fns
            # presses start at an op k/8 of the way along; the last op waits for the
            # interrupt, so it lands somewhere in between: in a kernel or in the bookkeeping
            first, last = k * len(fns) // 8, stepper.plan.ops.index(y.op)
            real_first, real_last = fns[first], fns[last]
            press = CtrlC(inside=[debug.Stepper.cont])

            def reaching(*args, real=real_first, press=press):
                press.reached.set()
                return real(*args)

            def holding(*args, real=real_last, press=press):
                while press.pressing():
                    time.sleep(0.001)
                return real(*args)

            fns[first], fns[last] = reaching, holding
            try:
                with press:
                    stepper.cont()
            finally:
                fns[first], fns[last] = real_first, real_last
            assert y.op not in stepper.executed  # cut short
            check_consistent(stepper)
            assert stepper.cont() == expected
        assert s.run(y, {x: 0.0}) == expected


def _chain_stepper(n):
    g = fb.Graph()
    with g.as_default():
        x = fb.placeholder(fb.float32, [], name="x")
        y = x
        for _ in range(n):
            y = fb.add(y, 1.0)
    return debug.Stepper(fb.Session(graph=g), y, {x: 0.0})


def test_one_step_is_constant_time_on_a_long_chain():
    """A step in the middle of a chain 20x longer costs about the same: no step scans the
    plan (what has run or what remains).  Each chain's best of interleaved rounds: load
    only ever slows a round."""
    short, long = _chain_stepper(320), _chain_stepper(6400)
    best = {short: float("inf"), long: float("inf")}
    for _ in range(9):
        for stepper in (short, long):
            stepper.reset()
            for _ in range(len(stepper.plan.ops) // 2 - 50):
                stepper.step()
            t0 = time.perf_counter()
            for _ in range(100):
                stepper.step()
            best[stepper] = min(best[stepper], time.perf_counter() - t0)
    assert best[long] < 3 * best[short]
    while not long.done:
        long.step()
    assert long.cont() == 6400.0
    short.session.close()
    long.session.close()


# ------------------------------------------------------------- the NaN guard
def planted_nan_graph():
    x = fb.placeholder(fb.float32, [3], name="x")
    shifted = fb.subtract(x, 2.0, name="shifted")
    bad_log = fb.log(shifted, name="bad_log")  # log(-1): the first NaN
    sq = fb.sqrt(fb.subtract(bad_log, 5.0), name="bad_sqrt")  # sqrt(-1) downstream
    return x, fb.reduce_sum(sq, name="total"), bad_log


class Seen(executor.Observer):
    def __init__(self):
        self.names = []

    def before_op(self, op):
        self.names.append(op.name)


@pytest.mark.parametrize("how", ["options", "config", "observe", "stepper"])
def test_nan_guard_names_the_first_op_producing_nan_and_its_site(how):
    x, total, bad_log = planted_nan_graph()
    feeds = {x: [1.0, 3.0, 5.0]}
    config = fb.ConfigProto(check_numerics=how == "config")
    with fb.Session(config=config) as s, fb.observe(Seen()) as seen:
        assert np.isnan(s.run(total, feeds)) if how != "config" else True
        with pytest.raises(fb.errors.InvalidArgumentError) as info:
            if how == "options":
                s.run(total, feeds, options=fb.RunOptions(check_numerics=True))
            elif how == "config":
                s.run(total, feeds)
            elif how == "observe":
                with fb.observe(debug.NanGuard()):
                    s.run(total, feeds)
            else:
                debug.Stepper(s, total, feeds, observers=[debug.NanGuard()]).cont()
    message = str(info.value)
    assert info.value.op is bad_log.op and debug.NanGuard.last_bad_op is bad_log.op
    assert message.startswith(f"Log 'bad_log' ({bad_log.op.site.describe()}) produced NaN")
    assert "test_stepper.py:" in message
    assert "output bad_log:0: float32[3] nan=1 inf=0 min=0 max=1.099" in message
    assert "input shifted:0 from Sub 'shifted': float32[3] nan=0 inf=0 min=-1 max=3" in message
    if how != "stepper":
        assert "bad_sqrt" not in seen.names[-3:]  # the run stopped before anything downstream


def test_nan_guard_reports_inf_and_fed_inputs():
    x = fb.placeholder(fb.float32, [2], name="x")
    r = fb.reciprocal(x, name="r")
    with fb.Session() as s, pytest.raises(fb.errors.InvalidArgumentError) as info:
        s.run(r, {x: [0.0, 2.0]}, options=fb.RunOptions(check_numerics=True))
    assert "Reciprocal 'r'" in str(info.value) and "produced Inf" in str(info.value)
    assert "nan=0 inf=1 min=0.5 max=0.5" in str(info.value)
    assert "input x:0 from Placeholder 'x': fed" in str(info.value)


# -------------------------------------------------------------- debug ops
def test_check_numerics_raises_like_tf_and_passes_gradients():
    x = fb.placeholder(fb.float32, [2], name="x")
    checked = debug.check_numerics(fb.log(x), "log of x", name="checked")
    (dx,) = fb.gradients(fb.reduce_sum(debug.check_numerics(x * x, "sq")), [x])
    with fb.Session() as s:
        np.testing.assert_allclose(s.run(checked, {x: [1.0, 2.0]}), np.log([1.0, 2.0]))
        with pytest.raises(
            fb.errors.InvalidArgumentError, match="log of x : Tensor had NaN values"
        ):
            s.run(checked, {x: [-1.0, 2.0]})
        with pytest.raises(
            fb.errors.InvalidArgumentError, match=r"CheckNumerics 'checked'.*Inf values"
        ):
            s.run(checked, {x: [0.0, 2.0]})
        np.testing.assert_allclose(s.run(dx, {x: [1.0, 2.0]}), [2.0, 4.0])
    with pytest.raises(TypeError, match="float"):
        debug.check_numerics(fb.constant(1), "int")


def test_add_check_numerics_ops_reports_the_first_bad_tensor():
    x = fb.placeholder(fb.float32, [3], name="x")
    bad = fb.sqrt(x, name="root")
    fb.square(bad, name="after")
    check = debug.add_check_numerics_ops()
    with fb.Session() as s:
        s.run(check, {x: [1.0, 4.0, 9.0]})
        with pytest.raises(fb.errors.InvalidArgumentError, match="root:0 : Tensor had NaN values"):
            s.run(check, {x: [-1.0, 4.0, 9.0]})


def test_print_writes_to_stdout_counts_first_n_and_passes_gradients(capsys):
    x = fb.placeholder(fb.float32, [4], name="x")
    y = debug.Print(x, [x, fb.reduce_sum(x)], message="x and sum: ", first_n=2)
    (dx,) = fb.gradients(fb.reduce_sum(y * y), [x])
    value = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    with fb.Session() as s:
        for _ in range(3):
            np.testing.assert_array_equal(s.run(y, {x: value}), value)
        out = capsys.readouterr().out
        assert out == "x and sum: [1.0 2.0 3.0...][10.0]\n" * 2  # first_n=2, summarize=3
        with fb.observe(Seen()):  # the threaded executor runs the same plan: counted out
            s.run(y, {x: value * 0})
        assert capsys.readouterr().out == ""
        np.testing.assert_array_equal(s.run(dx, {x: value}), 2 * value)
        assert capsys.readouterr().out == "x and sum: [1.0 2.0 3.0...][10.0]\n"  # a new plan
        every = debug.Print(x, [x], summarize=-1, name="every")
        with fb.observe(Seen()):
            s.run(every, {x: value * 0})
        assert capsys.readouterr().out == "[0.0 0.0 0.0 0.0]\n"
        debug.Stepper(s, y, {x: value}).cont()  # a Stepper's plan counts on its own
        assert "x and sum: [1.0" in capsys.readouterr().out


def test_tf_print_is_a_stateful_op_that_prints_when_run(capsys):
    x = fb.constant([[1, 2], [3, 4]], name="x")
    op = debug.print("x =", x, 7, sep="|", end="!\n")
    assert op.type == "PrintV2" and op._opdef.stateful and debug.Print is not None
    with fb.Session() as s:
        assert s.run(op) is None
        assert capsys.readouterr().out == "x =|[[1 2]\n [3 4]]|7!\n"
        with fb.control_dependencies([debug.print("long", fb.range(100))]):
            z = fb.identity(x)
        s.run(z)
        assert capsys.readouterr().out == "long [ 0  1  2 ... 97 98 99]\n"


def test_value_takes_an_op_name_for_an_op_with_one_output():
    x = fb.constant(2.0, name="x")
    h = fb.multiply(x, 3.0, name="h")
    pair = fb.split(fb.constant([1.0, 2.0]), 2, name="pair")
    with fb.Session() as s:
        stepper = debug.Stepper(s, [h, *pair])
        stepper.cont()
        assert stepper.value("h") == 6.0 == stepper.value(h.op) == stepper.value("h:0")
        with pytest.raises(ValueError, match="has 2 outputs: name one, as 'pair:0'"):
            stepper.value("pair")
