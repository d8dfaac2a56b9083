"""The graph optimiser (flowbook/runtime/optimize/optimizer.py): what it rewrites, what it must never touch,
and differential tests: an optimised run gives bit for bit what the written plan gives."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flowbook as tf
from flowbook.debug import Stepper
from flowbook.profiling.tracing import profile
from flowbook.runtime.executor import run_serial, run_threaded
from flowbook.runtime.optimize.optimizer import PASSES, optimize, passes_for
from flowbook.runtime.plan import carries_variable


def config(**options: object) -> tf.ConfigProto:
    opts = tf.OptimizerOptions(**options)  # type: ignore[arg-type]
    return tf.ConfigProto(graph_options=tf.GraphOptions(optimizer_options=opts))


AS_WRITTEN = config(opt_level=tf.OptimizerOptions.L0)
THREADED = tf.RunOptions(timeout_in_ms=600_000)  # a deadline: the threaded scheduler runs it


def optimised_plans(sess: tf.Session) -> list:
    """The optimised plans a session's runs took."""
    return [e[0] for p in sess._paths.values() for e in p.optimized.values() if type(e) is tuple]


def same_bits(a: object, b: object) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


# ----------------------------------------------------------------- rewrites
def mlp_step(batch: int = 16) -> tuple[tf.Graph, dict, object, object]:
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 8], name="x")
        y = tf.placeholder(tf.int32, [None], name="y")
        w1 = tf.Variable(np.linspace(-1, 1, 8 * 16).reshape(8, 16).astype(np.float32), name="w1")
        b1 = tf.Variable(np.zeros(16, np.float32), name="b1")
        w2 = tf.Variable(np.linspace(1, -1, 16 * 4).reshape(16, 4).astype(np.float32), name="w2")
        logits = tf.matmul(tf.nn.relu(tf.matmul(x, w1) + b1), w2)
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
        )
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    rng = np.random.default_rng(0)
    feed = {x: rng.random((batch, 8), dtype=np.float32), y: rng.integers(0, 4, batch)}
    return g, feed, train, loss


def test_an_mlp_step_loses_its_shape_arithmetic_and_trains_bit_for_bit():
    g, feed, train, loss = mlp_step()
    with g.as_default():
        init = tf.global_variables_initializer()
        variables = tf.global_variables()
    with tf.Session(graph=g) as on, tf.Session(graph=g, config=AS_WRITTEN) as off:
        on.run(init), off.run(init)
        for _ in range(4):
            assert same_bits(on.run([train, loss], feed)[1], off.run([train, loss], feed)[1])
            assert same_bits(on.run(loss, feed), off.run(loss, feed))
        for v in variables:
            assert same_bits(on.run(v), off.run(v))
        ((written, plan),) = [
            (p, e[0])
            for p, path in on._paths.items()
            for e in path.optimized.values()
            if type(e) is tuple and any(op.type == "ApplyGradientDescent" for op in p.ops)
        ]
    kept = {op.type for op in plan.ops}
    assert not kept & {"Shape", "Size", "BroadcastGradientArgs", "Const", "NoOp", "Identity"}
    assert len(plan.ops) < len(written.ops) / 2
    assert {op for op in written.ops if op._opdef.stateful} <= set(plan.ops)


def test_folding_never_touches_fed_stateful_or_random_ops_nor_variable_reads():
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    c = tf.constant([[1.0, 2.0]], name="c")  # fed below: its value is the feed's
    v = tf.Variable([[3.0, 4.0]], name="v")
    noise = tf.random_uniform(tf.shape(x), seed=3, name="noise")
    bump = tf.assign_add(v, tf.ones_like(v), name="bump")
    with tf.control_dependencies([bump]):
        after = tf.identity(v.value(), name="after")  # a read of v placed after the update
    y = (x + c * 2.0) * noise + after + tf.cast(tf.shape(x)[0], tf.float32)
    with tf.Session() as s, tf.Session(config=AS_WRITTEN) as ref:
        s.run(v.initializer), ref.run(v.initializer)
        feed = {x: np.ones((3, 2), np.float32), c: np.full((1, 2), 5.0, np.float32)}
        for _ in range(3):
            assert same_bits(s.run(y, feed), ref.run(y, feed))
        written = s.prepare(y, feed).plan
    opt = optimize(written, ((3, 2), (1, 2)), PASSES)
    assert opt is not None
    kept = set(opt.plan.ops)
    for op in written.ops:
        if op._opdef.stateful and op.type != "VariableV2":
            assert op in kept, op.name
        reads = [t for t in op.inputs if carries_variable(t)]
        if reads and op.type not in ("Shape", "Size", "Rank", "ZerosLike", "OnesLike"):
            assert op in kept or op.type == "Identity", op.name  # only W/read may go
    assert "c" not in {op.name for op in written.ops}  # fed: not even in the plan
    folded = [n for n in opt.notes if "folded" in n]
    assert any(n.startswith("Shape ") for n in folded)
    assert not any(n.startswith(("Random", "AssignAdd", "VariableV2")) for n in opt.notes)
    assert {"RandomUniform", "AssignAdd", "VariableV2"} <= {op.type for op in kept}


def test_common_subexpressions_merge_and_identities_go():
    x = tf.placeholder(tf.float32, [None], name="x")
    a, b = tf.exp(x, name="a"), tf.exp(x, name="b")
    r = tf.reshape(tf.identity(a + b, name="i"), tf.shape(x), name="r")
    with tf.Session() as s:
        feed = {x: np.arange(3, dtype=np.float32)}
        for _ in range(3):
            out = s.run(r, feed)
        (plan,) = optimised_plans(s)
    np.testing.assert_array_equal(out, 2 * np.exp(np.arange(3, dtype=np.float32)))
    assert [op.name for op in plan.ops] == ["a", "add"]


@pytest.mark.parametrize(
    "options, gone, stays",
    [
        ({}, {"Const", "Shape", "Exp_1", "Identity"}, set()),
        ({"opt_level": -1}, set(), {"Const", "Shape", "Exp_1", "Identity"}),
        ({"do_constant_folding": False}, {"Exp_1", "Identity"}, {"Shape"}),
        ({"do_common_subexpression_elimination": False}, {"Shape", "Identity"}, {"Exp_1"}),
        ({"opt_level": -1, "do_constant_folding": True}, {"Shape"}, {"Exp_1", "Identity"}),
    ],
)
def test_optimizer_options_turn_passes_on_and_off(options, gone, stays):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None], name="x")
        y = tf.identity(tf.exp(x) + tf.exp(x), name="Identity")
        z = tf.reshape(y * 2.0, tf.shape(x), name="z")
        with tf.Session(config=config(**options)) as s:
            for _ in range(3):
                s.run(z, {x: np.ones(2, np.float32)})
            plans = optimised_plans(s)
            ran = (
                {op.name for op in plans[0].ops}
                if plans
                else {op.name for op in next(iter(s._paths)).ops}
            )
    names = {"Const": "mul/y", "Shape": "Shape", "Exp_1": "Exp_1", "Identity": "Identity"}
    assert not {names[k] for k in gone} & ran
    assert {names[k] for k in stays} <= ran


def test_each_feed_shape_gets_its_own_optimised_plan():
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    y = tf.reduce_sum(x * tf.cast(tf.size(x), tf.float32))
    with tf.Session() as s:
        for batch in [3, 4, 3, 4, 3, 4]:
            value = s.run(y, {x: np.ones((batch, 2), np.float32)})
            assert value == batch * 2 * batch * 2
        (path,) = s._paths.values()
        assert sorted(path.optimized) == [((3, 2),), ((4, 2),)]
        assert all(type(e) is tuple for e in path.optimized.values())


def test_kernels_that_fail_when_folded_fail_in_the_run_naming_their_op():
    x = tf.placeholder(tf.float32, [None], name="x")
    bad = tf.reshape(tf.range(tf.size(x)), [3], name="bad")  # the feed's size decides
    with tf.Session() as s:
        assert s.run(bad, {x: np.ones(3)}).tolist() == [0, 1, 2]
        for _ in range(3):
            with pytest.raises(tf.errors.InvalidArgumentError, match="bad"):
                s.run(bad + 1, {x: np.ones(4)})


def test_nan_made_from_constants_still_trips_the_guard():
    x = tf.placeholder(tf.float32, [None], name="x")
    y = x + tf.log(tf.constant(-1.0), name="bad_log")
    with tf.Session(config=tf.ConfigProto(check_numerics=True)) as s:
        for _ in range(3):
            with pytest.raises(tf.errors.InvalidArgumentError, match="bad_log"):
                s.run(y, {x: np.ones(2, np.float32)})


def test_watched_runs_and_the_stepper_run_the_written_plan():
    g, feed, train, _ = mlp_step()
    with g.as_default(), tf.Session() as s:
        s.run(tf.global_variables_initializer())
        for _ in range(3):
            s.run(train, feed)
        (optimised,) = optimised_plans(s)
        with profile() as prof:
            for _ in range(2):
                s.run(train, feed)
        written = next(
            p for p in s._paths if any(op.type == "ApplyGradientDescent" for op in p.ops)
        )
        assert {r["op"] for r in prof.table(by="op").rows} == {op.name for op in written.ops}
        assert "gradients/Mean_grad/Shape" not in {op.name for op in optimised.ops}
        stepper = Stepper(s, train, feed)
        stepper.run_to("gradients/Mean_grad/Shape")
        assert stepper.value("gradients/Mean_grad/Shape:0").tolist() == [16]


# ------------------------------------------------- differential: generated graphs
LAYERS = [  # each maps a [batch, 3] float32 tensor (and the variable w) to another
    lambda t, w: t * 2.0,
    lambda t, w: t + tf.constant([1.0, -2.0, 3.0]),
    lambda t, w: tf.reshape(tf.reshape(t, [-1]), tf.shape(t)),
    lambda t, w: tf.nn.relu(t) - tf.reduce_mean(t, axis=0),
    lambda t, w: tf.identity(t) * tf.stop_gradient(t),
    lambda t, w: t * 3.0 + t * 3.0,
    lambda t, w: tf.matmul(t, w),
    lambda t, w: t * tf.random_uniform(tf.shape(t), seed=7),
    lambda t, w: tf.tile(t, [2, 1])[: tf.shape(t)[0]],
    lambda t, w: t / (1.0 + tf.cast(tf.size(t), tf.float32)),
    lambda t, w: tf.squeeze(tf.expand_dims(t, 0), 0) + tf.reduce_sum(tf.ones_like(t), 1, True),
    lambda t, w: tf.sqrt(t) + tf.zeros_like(t),
    lambda t, w: tf.nn.softmax(t) * tf.log(tf.constant(2.0)),
    lambda t, w: tf.concat([t, t * 0.5], 0)[::2] - tf.reduce_max(t, axis=1, keepdims=True),
    # chains the fusion pass fuses (optimize_fuse.py): matmul + bias + relu, element-wise
    lambda t, w: tf.nn.relu(tf.matmul(t, w) + tf.constant([0.5, -0.5, 0.0])),
    lambda t, w: tf.nn.bias_add(tf.maximum(t * 2.0 - 1.0, -1.5), tf.constant([1.0, 2.0, 3.0])),
    lambda t, w: t + tf.expand_dims(xent(t), 1),  # the xent's backprop times the mean's scale
]


def xent(t: tf.Tensor) -> tf.Tensor:
    labels = tf.cast(t[:, 0] > 0.0, tf.int32)  # 0 or 1, from the data (NaN: 0, a valid label)
    return tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=t)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.integers(0, len(LAYERS) - 1), min_size=1, max_size=6),
    st.lists(st.integers(1, 5), min_size=1, max_size=3),
    st.integers(0, 2**16),
)
def test_optimised_runs_equal_the_written_plan_bit_for_bit(layers, batches, seed):
    """Optimised = as written = the serial reference, gradients and updates included, on
    the straight line, the threaded scheduler and the serial executor."""
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        w = tf.Variable(np.linspace(-1, 1, 9).reshape(3, 3).astype(np.float32), name="w")
        t = x
        for k in layers:
            t = LAYERS[k](t, w)
        loss = tf.reduce_sum(t)
        gx, gw = tf.gradients(loss, [x, w])
        gx = tf.zeros_like(x) if gx is None else gx
        fetches = [t, gx, tf.range(tf.shape(t)[0])]
        if gw is not None:
            with tf.control_dependencies(fetches):  # updates after every read of w
                fetches.append(tf.assign_sub(w, 0.01 * gw))
        rng = np.random.default_rng(seed)
        with tf.Session() as on, tf.Session(config=AS_WRITTEN) as off:
            on.run(w.initializer), off.run(w.initializer)
            for batch in batches:
                feed = {x: rng.standard_normal((batch, 3)).astype(np.float32)}
                for options in (None, None, None, THREADED):
                    got = on.run(fetches, feed, options=options)
                    want = off.run(fetches, feed, options=options)
                    for a, b in zip(got, want):
                        assert same_bits(a, b)
                assert_serial_agrees(on.prepare(fetches[:3], feed))
            assert optimised_plans(on)


def assert_serial_agrees(prepared) -> None:
    """The optimised plan on the serial and threaded executors = the serial reference."""
    plan, feeds = prepared.plan, list(prepared.feeds)
    if any(op._opdef.stateful and op.type != "VariableV2" for op in plan.ops):
        return  # random ops: each run draws new numbers
    shapes = tuple(np.shape(v) for v in feeds)
    opt = optimize(plan, shapes, PASSES)
    if opt is None:
        return
    with np.errstate(all="ignore"):  # as every run: 1/0 is inf, silently
        reference = run_serial(plan, feeds)
        runs = [run_serial(opt.plan, feeds), run_threaded(opt.plan, feeds)]
    for got in runs:
        for a, b in zip(got, reference):
            if b is not None:
                assert same_bits(a, b)


def test_passes_for_reads_tensorflow_names():
    assert passes_for(tf.ConfigProto()) == PASSES
    assert passes_for(AS_WRITTEN) == frozenset()


def test_readers_of_a_removed_identity_still_wait_for_its_control_inputs():
    x = tf.placeholder(tf.float32, [], name="x")
    v, five = tf.Variable(0, name="v"), tf.constant(5.0)
    with tf.control_dependencies([tf.count_up_to(v, 2)]):  # as limit_epochs builds it
        y = tf.identity(five, name="y")
    z = tf.multiply(y, x, name="z")
    with tf.Session() as s:
        s.run(v.initializer)
        assert [s.run(z, {x: 2.0}) for _ in range(2)] == [10.0, 10.0]
        for _ in range(2):
            with pytest.raises(tf.errors.OutOfRangeError):
                s.run(z, {x: 2.0}, options=THREADED)
        (plan,) = optimised_plans(s)
    names = [op.name for op in plan.ops]
    assert "y" not in names
    assert names.index("CountUpTo") in plan.producers[names.index("z")]


def test_runs_watched_whole_take_the_optimised_plan_and_the_watcher_sees_the_written_one():
    class Whole(tf.Observer):
        def __init__(self):
            self.plans = []

        def for_run(self, plan):
            return None  # only on_start/on_finish: the run keeps its fast path

        def on_start(self, plan):
            self.plans.append(plan)

    with tf.Graph().as_default(), tf.Session() as s:
        x = tf.placeholder(tf.float32, [None, 3])
        y = tf.reduce_sum(tf.identity(x * tf.ones([3])) + 0.0 * tf.cast(tf.size(x), tf.float32))
        with tf.observe(Whole()) as whole:
            for _ in range(3):
                assert s.run(y, {x: np.ones((2, 3), np.float32)}) == 6.0
        (written,) = set(whole.plans)
        path = s._paths[written]
        (entry,) = path.optimized.values()
        assert type(entry) is tuple and len(entry[0].ops) < len(written.ops)
        assert entry[1].compiled is not None  # the optimised plan ran, on its straight line
