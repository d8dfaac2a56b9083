"""Where an op was made: the statement holding its line, for calls spread over lines."""

from __future__ import annotations

import linecache

import pytest

import flowbook as tf
from flowbook.framework import source
from flowbook.notebook.snapshot import graph_state

CELL = """\
x = tf.placeholder(tf.float32, [None, 3], name="x")
loss = tf.reduce_mean(
    tf.square(x - 1.0, name="sq"), name="loss")
for k in range(2):
    y = tf.identity(x, name=f"y{k}")
"""


@pytest.fixture
def cell_file(monkeypatch):
    name = "<flowbook-test-cell>"
    linecache.cache[name] = (len(CELL), None, CELL.splitlines(True), name)
    monkeypatch.setattr(source, "current_cell", source.Cell("c1", 1))
    yield name
    linecache.cache.pop(name, None)


def test_ops_of_one_statement_over_lines_share_its_first_line(cell_file):
    g = tf.Graph()
    with g.as_default():
        exec(compile(CELL, cell_file, "exec"), {"tf": tf})
    nodes = {n["name"]: n for n in graph_state(g)["nodes"]}
    assert (nodes["sq"]["line"], nodes["sq"]["stmt"]) == (3, 2)
    assert nodes["sq"]["stmt_code"] == "loss = tf.reduce_mean("
    assert (nodes["loss"]["stmt"], nodes["loss"]["stmt_code"]) == (2, None)  # its own line
    # a loop's body statement, not the loop: each iteration's op says line 5
    assert [nodes[f"y{k}"]["stmt"] for k in range(2)] == [5, 5]
    assert nodes["x"]["stmt"] == 1


@pytest.mark.parametrize(
    ("text", "line", "start"),
    [
        ("a = f(1,\n      2)\n", 2, 1),
        ("if True:\n    b = g(\n        3)\n", 3, 2),
        ("not python (\n", 1, 1),  # unparsable: the line itself
    ],
)
def test_statement_starts(text, line, start):
    assert source._statement_starts(text).get(line, line) == start
