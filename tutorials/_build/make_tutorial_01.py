"""Writes tutorial 01 (run by a developer, then `ruff format tutorials`; the notebook is committed)."""

from _notebook import code, md, write

cells = [
md("""# 1. Graphs and sessions

A **dataflow graph** describes a computation before it happens: each *node* is an operation
(add, multiply, matrix multiply...), each *edge* carries a tensor (an n-dimensional array)
from the op that produces it to the ops that consume it. You first **build** the graph, then a
**session** **runs** the parts of it you ask for.

flowbook speaks TensorFlow 1's language, so the classic examples run as they are written:
we import it under the name `tf`."""),
code("import numpy as np\n\nimport flowbook as tf"),
md("""## Watch the graph grow

`tf.show()` draws the graph, live: run the cells below and watch their ops appear. Hover over a
node for its type, shape and the line that made it; click it for details. Run a cell twice and
nothing is duplicated: the cell's ops are *replaced*. The **flowbook graph** side panel (right-hand
bar of JupyterLab) shows the same graph while you scroll, and clicking a node there jumps to the
cell that created it.

(This notebook uses the **Flowbook (Python 3)** kernel, which loads flowbook's notebook extension;
with another kernel, run `%load_ext flowbook` first.)"""),
code("tf.show()"),
md("""## Hello world: multiply two numbers

`tf.placeholder` is an input whose value we give at run time; `tf.multiply` adds a `Mul` node.
Nothing is computed yet: `y` is a *symbolic* tensor, a promise of a value."""),
code("""a = tf.placeholder(tf.float32, name="a")
b = tf.placeholder(tf.float32, name="b")
y = tf.multiply(a, b, name="y")
print(y)"""),
md("`sess.run(fetches, feed_dict)` computes what you fetch, using the values you feed:"),
code("""with tf.Session() as sess:
    print(sess.run(y, feed_dict={a: 3, b: 3}))
    print(sess.run(y, feed_dict={a: [1, 2, 3], b: 2}))  # numpy broadcasting"""),
md("""## The graph is data you can look at

Every op has a unique name, a type, inputs and outputs, and remembers the line that created it.
Tensors are named `op_name:output_index`."""),
code("""graph = tf.get_default_graph()
for op in graph.get_operations():
    print(f"{op.name:4} {op.type:12} inputs={[t.name for t in op.inputs]}  created at {op.site.describe()}")
print(graph.get_tensor_by_name("y:0") is y)"""),
md("""## Placeholders with shapes, and `feed_dict`

A placeholder can promise a shape; `None` means "any size" (typically the batch).
Feeding the wrong shape fails with a message that names the tensor."""),
code("""x = tf.placeholder(tf.float32, shape=[None, 3], name="x")
row_sums = tf.reduce_sum(x, axis=1, name="row_sums")
with tf.Session() as sess:
    print(sess.run(row_sums, {x: np.arange(6).reshape(2, 3)}))
    try:
        sess.run(row_sums, {x: [1.0, 2.0]})
    except ValueError as e:
        print("ValueError:", e)"""),
md("""## A counter: Variable, Const, Add, Assign

A `Variable` keeps its value between runs (inside one session). It must be initialised first.
The update is an `Assign` op; running it three times counts to three."""),
code("""state = tf.Variable(0, name="counter")
one = tf.constant(1)
new_value = tf.add(state, one)
update = tf.assign(state, new_value)

init_op = tf.global_variables_initializer()

with tf.Session() as sess:
    sess.run(init_op)
    print(sess.run(state))
    for _ in range(3):
        sess.run(update)
        print(sess.run(state))"""),
md("Forgetting the initializer is a classic mistake. The error says which variable, and where it was made:"),
code("""with tf.Session() as sess:
    try:
        sess.run(update)
    except tf.errors.FailedPreconditionError as e:
        print(type(e).__name__ + ":", e)"""),
md("""## Partial execution

`run` only executes the **subgraph the fetches need**. You can fetch several tensors at once,
fetch an intermediate result, and even *feed* an intermediate tensor: then nothing upstream of
it runs (placeholders upstream need no value)."""),
code("""tf.reset_default_graph()
x = tf.placeholder(tf.float32, name="x")
with tf.name_scope("model"):
    h = tf.multiply(x, 2.0, name="h")
    out = tf.add(h, 1.0, name="out")

with tf.Session() as sess:
    h_value, out_value = sess.run([h, out], {x: 3.0})   # both, in one run
    print(h_value, out_value)
    print(sess.run(out, {h: 100.0}))       # feed the intermediate: x is not needed
    print(sess.run("model/out:0", {"x:0": 1.0}))  # fetch and feed by name"""),
md("""## Name scopes, control dependencies and `group`

Name scopes group ops under a prefix (`model/h`), as folders do for files. A **control
dependency** says "run this only after that", for ops with side effects; `tf.group` makes one op
that runs several."""),
code("""tf.reset_default_graph()
a = tf.Variable(0, name="a")
b = tf.Variable(0, name="b")
inc_a = tf.assign_add(a, 1)
with tf.control_dependencies([inc_a]):
    copy_to_b = tf.assign(b, a.read_value())   # reads a after the increment
step = tf.group(inc_a, copy_to_b, name="step")

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for _ in range(3):
        sess.run(step)
    values = sess.run({"a": a, "b": b})
    print(f"a = {values['a']}, b = {values['b']}")"""),
md("""## The whitepaper's Figure 1

`relu(matmul(x, W) + b)` with a cost, fetched while feeding a batch of `x`. This is the shape of
every neural-network layer in the notebooks that follow."""),
code("""tf.reset_default_graph()
x = tf.placeholder(tf.float32, [None, 784], name="x")
W = tf.Variable(tf.random_uniform([784, 100], -1, 1, seed=0), name="W")
b = tf.Variable(tf.zeros([100]), name="b")
relu = tf.nn.relu(tf.matmul(x, W) + b)
C = tf.reduce_sum(relu, name="C")

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    batch = np.random.default_rng(0).random((32, 784), dtype=np.float32)
    print("cost:", sess.run(C, {x: batch}))
    print("output shape:", relu.get_shape().as_list())"""),
md("""Show the graph again here, then run the next cell: the nodes light up as they run, with the
time each took, and the ones this fetch did not need stay dimmed — that is partial execution,
seen. Click the `W` node and then `C`: the details show their last values."""),
code("""view = tf.show()
view"""),
code("""with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    print("cost:", sess.run(C, {x: batch}))"""),
md("The same fetch with twice the batch, in a cell of its own:"),
code("""with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    print("cost of twice the batch:", sess.run(C, {x: 2 * batch}))"""),
md("""## Watch a run again

Those runs took a fraction of a millisecond each: too fast to see. The widget keeps the last
runs of its graph (the first run of each fetch in each cell with every op's value and time). In the **Runs** row above the graph, pick one to show it again (the ops it ran
lit, with their times, the rest dimmed: the initializer's run and the cost's light up different
parts), press **▶ Replay** to play it back op by op in the order the ops ran, slowly enough to
follow, and choose another run under **compare** to outline the ops whose value or time differs
(the two cost runs: everything downstream of `x`).

From Python, `view.runs` lists the kept runs and `view.replay(run)` plays one in the graph above:"""),
code("""for run in view.runs:
    print(f"run {run['seq']}: fetched {', '.join(run['fetches'])}; ran {' -> '.join(run['order'])}")
view.replay(-1)  # the last run, op by op, in about two seconds"""),
md("""## Where next

- Build a graph with a shape mistake (say `tf.matmul(x, tf.zeros([10, 3]))`) and read the error:
  it names the op, the cell and the line.
- Try `sess.run` with different fetches and feeds and predict which ops must run."""),
]
write("01_graphs_and_sessions.ipynb", cells)
