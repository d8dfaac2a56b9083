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
