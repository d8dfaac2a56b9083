"""Writes tutorial 09 (run by a developer, then `ruff format tutorials`; the notebook is committed)."""

from _notebook import code, md, write

cells = [
    md("""# 9. Loops and recurrent nets: control flow is dataflow too

A graph has no `for` and no `if`. Yet TensorFlow 1 runs loops and branches *inside* the graph,
with a handful of small ops (the whitepaper's section 4.4):

- `Switch` sends a value to one of two outputs; the other output is **dead**, and an op that
  gets a dead input does not run. That makes `tf.cond`.
- `Merge` passes on whichever input arrives alive.
- `Enter` / `Exit` move values into and out of a loop's **frame**; `NextIteration` hands a value
  to the next **iteration**. With a `LoopCond` they make `tf.while_loop`.

The executor tags every value with the frame and iteration it belongs to, so one op of the graph
runs many times: once per iteration. Gradients are graph too: the backward pass of a loop is
another loop that runs the iterations in reverse."""),
    code("""import numpy as np

import flowbook as tf

view = tf.show()
view"""),
    md("""## A loop: the power series of exp(x)

`exp(x) = 1 + x + x²/2! + x³/3! + ...` — add terms until one is smaller than `1e-7`. The
condition and the body are ordinary Python functions that **build** graph ops, once; the loop
runs them as many times as it needs."""),
    code("""x = tf.placeholder(tf.float32, [], name="x")


def keep_going(k, term, total):
    return tf.abs(term) > 1e-7


def add_a_term(k, term, total):
    k = k + 1.0
    term = term * x / k
    return k, term, total + term


_, _, series = tf.while_loop(keep_going, add_a_term, [0.0, 1.0, 1.0], name="series")
sess = tf.Session()
print(sess.run(series, {x: 1.0}), "vs numpy", np.exp(1.0))"""),
    md("""In the graph above, the loop is one box, **series**, like a name scope. Inside are the
primitives: the `Merge` that takes the first value from `Enter` and later ones from
`NextIteration`, the `LoopCond`, the `Switch` that sends the loop variables back into the body or
out through `Exit`.

The loop is a graph like any other, so `tf.gradients` differentiates through it. The derivative
of exp is exp:"""),
    code("""(d_series,) = tf.gradients(series, x)
for v in (-1.0, 0.5, 2.0):
    value, slope = sess.run([series, d_series], {x: v})
    print(f"x = {v:4}: series {value:.6f}  slope {slope:.6f}  numpy exp {np.exp(v):.6f}")"""),
    md("""## A branch: `tf.cond`

Both branches are in the graph; only one runs. On the graph, the branch that did not run stays
dimmed."""),
    code("""y = tf.cond(x > 0.0, lambda: tf.sqrt(x, name="root"), lambda: tf.square(x, name="square"))
print(sess.run(y, {x: 9.0}), sess.run(y, {x: -3.0}))"""),
    md("""## Step through two iterations

The stepper (tutorial 5) steps through loops too: one op **in one iteration** at a time.
`run_to(op, iteration=k)` runs until that op has run in iteration k; `where` tells which
iteration the last op ran in, and `value` shows what it computed there."""),
    code("""st = tf.debug.Stepper(sess, series, {x: 3.0})
for k in (0, 1):
    st.run_to("series/truediv", iteration=k)
    print(st.where, "term:", st.value("series/truediv"))
tf.show(st)"""),
    md("""Press **Step** on the graph (or call `st.step()`) to go on op by op. `cont()` finishes the
run and gives exactly what `sess.run` gives:"""),
    code("""print(st.cont(), sess.run(series, {x: 3.0}), "iterations:", st.iterations)"""),
    md("""## A recurrent net: reading digits row by row

An LSTM reads a sequence one step at a time, carrying a state. `tf.nn.dynamic_rnn` is a
`while_loop` over the time steps. Each 8x8 digit becomes a **sequence of 8 rows** of 8 pixels:
the net sees the rows one after another and must say which digit it was."""),
    code("""from flowbook.data.datasets import load_digits

digits = load_digits()
rows = tf.placeholder(tf.float32, [None, 8, 8], name="rows")  # batch, time, pixels
labels = tf.placeholder(tf.int64, [None], name="labels")

cell = tf.nn.rnn_cell.BasicLSTMCell(32)
outputs, state = tf.nn.dynamic_rnn(cell, rows, dtype=tf.float32)
last = outputs[:, -1]  # the output after the last row
logits = tf.layers.dense(last, 10, name="readout")
loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
train_step = tf.train.AdamOptimizer(0.01).minimize(loss)
accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), labels), tf.float32))

print([v.name for v in tf.trainable_variables()])"""),
    md("""The variable names are TensorFlow's (`rnn/basic_lstm_cell/kernel`), so checkpoints and
GraphDefs line up with TensorFlow 1's. Now train:"""),
    code("""sess.run(tf.global_variables_initializer())
test = {rows: digits.test.images.reshape(-1, 8, 8), labels: digits.test.labels}
for step in range(301):
    batch_x, batch_y = digits.train.next_batch(100)
    _, train_loss = sess.run([train_step, loss], {rows: batch_x.reshape(-1, 8, 8), labels: batch_y})
    if step % 100 == 0:
        print(f"step {step:3}: loss {train_loss:.3f}  test accuracy {sess.run(accuracy, test):.1%}")"""),
    md("""## Where the time goes in a loop

A traced run logs an op **once per iteration**, with its loop and iteration: the profile table
counts the runs (8 time steps forward, 8 backward)."""),
    code("""with tf.profile() as prof:
    sess.run(train_step, {rows: batch_x.reshape(-1, 8, 8), labels: batch_y})
prof.table(by="type")"""),
    md("""Untraced, nobody watches op by op, so each innermost loop runs as one compiled Python loop:
a trivial iteration costs about what the same Python loop over numpy does (see the README's
benchmarks), and the widget still counts the iterations."""),
    code("""sess.close()"""),
]

write("09_loops_and_recurrent_nets.ipynb", cells)
