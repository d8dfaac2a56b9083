"""Observers of runs with branches and loops: which iteration ops run in, how often each ran."""

from __future__ import annotations

import flowbook as tf


class Seen(tf.Observer):
    def __init__(self) -> None:
        self.wheres: list[tuple[tuple[str, int], ...]] = []
        self.runs: dict[str, int] = {}
        self.iterations: dict[str, int] = {}

    def on_iteration(self, where):
        self.wheres.append(where)

    def on_control_flow(self, plan, runs, iterations):
        self.runs = {op.name: n for op, n in zip(plan.ops, runs)}
        self.iterations = dict(iterations)


def test_iterations_and_run_counts_reach_the_observers():
    with tf.Graph().as_default(), tf.Session() as s:
        i = tf.while_loop(lambda i: i < 3, lambda i: i + 1, [tf.constant(0)], name="loop")
        yes = lambda: tf.constant(1.0, name="yes")
        no = lambda: tf.constant(2.0, name="no")
        c = tf.cond(tf.constant(True), yes, no)
        with tf.observe(Seen()) as seen:
            assert s.run([i, c]) == [3, 1.0]
    frame = "loop/while_context"
    assert seen.iterations == {frame: 3}
    assert seen.runs["loop/add"] == 3 and seen.runs["loop/Less"] == 4  # the last check fails
    assert seen.runs["cond/yes"] == 1 and seen.runs["cond/no"] == 0  # the untaken branch
    assert [w[0][1] for w in seen.wheres if w][-4:] == [0, 1, 2, 3]
    assert set(seen.wheres) == {(), *(((frame, k),) for k in range(4))}


def test_nested_loops_name_both_iterations():
    def outer(i, total):
        inner = tf.while_loop(
            lambda j, t: j < i, lambda j, t: (j + 1, t + 1), [0, total], name="in"
        )
        return i + 1, inner[1]

    with tf.Graph().as_default(), tf.Session() as s:
        _, total = tf.while_loop(lambda i, t: i < 3, outer, [0, 0], name="out")
        with tf.observe(Seen()) as seen:
            assert s.run(total) == 0 + 1 + 2
    assert seen.iterations == {"out/while_context": 3, "out/in/while_context": 3}
    deepest = [w for w in seen.wheres if len(w) == 2]
    assert (("out/while_context", 2), ("out/in/while_context", 1)) in deepest


# ------------------------------------------------------------ compiled loops
def _plan_and_path(s):
    plan = list(s._plans.values())[-1]
    return plan, s._paths[plan]


def test_an_innermost_loop_runs_compiled_and_agrees_with_the_scheduler():
    from flowbook.runtime.executor import run_frames

    def outer(i, total):
        inner = tf.while_loop(lambda j, t: j < i, lambda j, t: (j + 1, t * 1.5 + 1.0), [0, total])
        return i + 1, inner[1]

    with tf.Graph().as_default(), tf.Session() as s:
        _, total = tf.while_loop(lambda i, t: i < 5, outer, [0, 1.0], name="out")
        got = s.run(total)
        plan, path = _plan_and_path(s)
        assert sorted(path.layout.loops) == ["out/while/while_context"]  # the inner one
        (want,) = run_frames(plan, path, [], compiled=False)
    assert got == want


def test_a_compiled_loop_updates_a_variable_in_order():
    with tf.Graph().as_default(), tf.Session() as s:
        v = tf.Variable(0.0)

        def body(i, seen):
            up = tf.assign_add(v, 1.0)
            with tf.control_dependencies([up]):
                return i + 1, seen + tf.identity(v.read_value())

        _, seen = tf.while_loop(lambda i, seen: i < 4, body, [0, 0.0])
        s.run(tf.global_variables_initializer())
        assert s.run(seen) == 1.0 + 2.0 + 3.0 + 4.0
        assert _plan_and_path(s)[1].layout.loops
        assert s.run(v) == 4.0


def test_a_compiled_loop_counts_its_ops_as_the_scheduler_does():
    with tf.Graph().as_default(), tf.Session() as s:
        n = tf.placeholder(tf.int32, [])
        i = tf.while_loop(lambda i: i < n, lambda i: i + 1, [tf.constant(0)], name="loop")
        with tf.observe(Seen()) as watched:  # on_iteration: every op interpreted
            s.run(i, {n: 5})

        class Counts(tf.Observer):  # on_control_flow only: the loop runs compiled
            def on_control_flow(self, plan, runs, iterations):
                self.runs = {op.name: k for op, k in zip(plan.ops, runs)}
                self.iterations = iterations

        with tf.observe(Counts()) as counted:
            s.run(i, {n: 5})
    assert counted.runs == watched.runs and counted.iterations == {"loop/while_context": 5}


def test_a_loops_progress_can_be_read_while_it_runs_compiled_or_not():
    import threading
    import time

    class Progress(tf.Observer):
        def __init__(self):
            self.loops, self.seen = [], []

        def on_loop(self, name, progress):
            self.loops.append((name, progress))
            self.seen.append(progress())

    with tf.Graph().as_default(), tf.Session() as s:
        n = tf.placeholder(tf.int32, [])
        i = tf.while_loop(lambda i: i < n, lambda i: i + 1, [tf.constant(0)], name="loop")
        for watcher in (Progress(), Seen()):  # compiled, then interpreted (on_iteration)
            watcher.on_loop = Progress.on_loop.__get__(watcher)
            watcher.loops, watcher.seen = [], []
            sampled = []
            stop = threading.Event()

            def sample(w=watcher, stop=stop, sampled=sampled):
                while not stop.is_set():
                    if w.loops:
                        sampled.append(w.loops[0][1]())
                    time.sleep(0.001)

            t = threading.Thread(target=sample)
            t.start()
            with tf.observe(watcher):
                assert s.run(i, {n: 300_000 if isinstance(watcher, Progress) else 20_000}) > 0
            stop.set()
            t.join()
            ((name, progress),) = watcher.loops
            assert name == "loop/while_context" and watcher.seen == [0]
            assert progress() in (300_000, 20_000)
            assert any(0 < k < progress() for k in sampled), sampled[:5]  # it moved during the run


def test_full_trace_records_an_op_once_per_iteration():
    import json

    from flowbook.profiling.timeline import Timeline

    with tf.Graph().as_default(), tf.Session() as s:
        i = tf.while_loop(lambda i: i < 3, lambda i: i + 1, [tf.constant(0)], name="loop")
        md = tf.RunMetadata()
        opts = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
        assert s.run(i, options=opts, run_metadata=md) == 3
    adds = [n for n in md.step_stats.dev_stats[0].node_stats if n.node_name == "loop/add"]
    assert [(n.frame_name, n.iteration_id) for n in adds] == [
        ("loop/while_context", k) for k in range(3)
    ]
    assert adds[2].timeline_label.endswith("[loop 'loop/while_context' iteration 2]")
    trace = json.loads(Timeline(md.step_stats).generate_chrome_trace_format())
    events = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    assert sum(e["name"] == "loop/add" for e in events) == 3
    assert {e["args"]["op"] for e in events if e["name"] == "loop/add"} == {"Add"}
